//! The Unix implementations, through libc: every `unsafe` block here carries its `// SAFETY:`
//! argument.

use std::time::Duration;

pub(crate) fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `clock_gettime` writes one `timespec` through the valid, exclusively borrowed
    // pointer we pass and reads nothing else; CLOCK_THREAD_CPUTIME_ID is supported on every
    // Linux and macOS version Rust targets. On failure it returns -1 and we report zero.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

pub(crate) fn process_cpu_time() -> Duration {
    rusage().map(|r| tv(r.ru_utime) + tv(r.ru_stime)).unwrap_or_default()
}

pub(crate) fn children_cpu_time() -> Duration {
    rusage_of(libc::RUSAGE_CHILDREN).map(|r| tv(r.ru_utime) + tv(r.ru_stime)).unwrap_or_default()
}

pub(crate) fn peak_rss_bytes() -> u64 {
    // Linux reports ru_maxrss in KiB, macOS in bytes.
    let scale = if cfg!(target_os = "macos") { 1 } else { 1024 };
    rusage().map(|r| (r.ru_maxrss.max(0) as u64) * scale).unwrap_or(0)
}

pub(crate) fn current_rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    // SAFETY: `sysconf` takes no pointers and only reads configuration.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    match statm.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()) {
        Some(pages) => pages * page,
        None => peak_rss_bytes(),
    }
}

fn tv(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.clamp(0, 999_999) as u32) * 1000)
}

fn rusage() -> Option<libc::rusage> {
    rusage_of(libc::RUSAGE_SELF)
}

fn rusage_of(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: an all-zero `rusage` is a valid value of that plain C struct; `getrusage` only
    // writes into the struct through the valid pointer we pass.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: see above; callers pass RUSAGE_SELF or RUSAGE_CHILDREN, both valid `who`s.
    let rc = unsafe { libc::getrusage(who, &mut r) };
    (rc == 0).then_some(r)
}

/// Moves the standard input and output to private descriptors and returns them; afterwards
/// fd 0 reads `/dev/null` and fd 1 writes wherever fd 2 does. Code running later in this
/// process (a library's `printf`, a stray `println!`) can then neither read the protocol
/// input nor write into the protocol output.
pub(crate) fn private_stdio() -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let dup = |fd: libc::c_int| {
        // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` takes no pointers; it only creates a new descriptor
        // (>= 3) referring to the same open file as `fd`, or fails with -1.
        let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
        if new < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `new` was just created by fcntl above and nothing else owns it.
        Ok(unsafe { std::fs::File::from_raw_fd(new) })
    };
    let input = dup(0)?;
    let output = dup(1)?;
    let null = std::fs::File::open("/dev/null")?;
    // SAFETY: `dup2` takes no pointers; both descriptors are open (fd 0 is the standard input
    // already copied above, `null` is alive for this call, fd 2 is the standard error).
    // Replacing fd 0 and fd 1 is what this function is for; the Rust standard streams keep
    // working, on the new files.
    unsafe {
        if libc::dup2(null.as_raw_fd(), 0) < 0 || libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((input, output))
}

/// Asks the kernel to SIGKILL this process when its parent dies (Linux), then checks that the
/// parent is still `parent`. Returns false when the parent is already gone.
pub(crate) fn die_with_parent(parent: u32) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_PDEATHSIG takes a signal number as its only argument (the rest are
    // unused); it changes nothing but this process's parent-death signal.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
    }
    // SAFETY: `getppid` takes no arguments and cannot fail. Called after prctl, so a parent
    // that died before the prctl shows here as a different parent (init or a subreaper).
    let now = unsafe { libc::getppid() };
    u32::try_from(now).is_ok_and(|p| p == parent)
}

/// Current resident set size of process `pid` in bytes (Linux: /proc; elsewhere unknown).
pub(crate) fn process_rss_bytes(pid: u32) -> Option<u64> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    // SAFETY: `sysconf` takes no pointers and only reads configuration.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    statm.split_whitespace().nth(1)?.parse::<u64>().ok().map(|p| p * page)
}

/// Writes `bytes` straight to file descriptor 1 with `write(2)`, bypassing Rust's standard
/// output (as a driver's `printf` would); errors are ignored. Used by the `print-stdout` test
/// fault to check that nothing written to fd 1 reaches a worker's answer stream.
pub(crate) fn write_stdout_fd(bytes: &[u8]) {
    // SAFETY: `write` reads `bytes.len()` bytes from a live, borrowed slice and takes no other
    // pointer; fd 1 is open (in a worker it points at the standard error, which is the point).
    unsafe {
        libc::write(1, bytes.as_ptr().cast(), bytes.len());
    }
}
