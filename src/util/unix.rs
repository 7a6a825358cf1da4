//! The measurements on Unix, through libc.

use std::time::Duration;

pub fn thread_cpu_time() -> Duration {
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

pub fn process_cpu_time() -> Duration {
    rusage().map(|r| tv(r.ru_utime) + tv(r.ru_stime)).unwrap_or_default()
}

pub fn children_cpu_time() -> Duration {
    rusage_of(libc::RUSAGE_CHILDREN).map(|r| tv(r.ru_utime) + tv(r.ru_stime)).unwrap_or_default()
}

pub fn peak_rss_bytes() -> u64 {
    // Linux reports ru_maxrss in KiB, macOS in bytes.
    let scale = if cfg!(target_os = "macos") { 1 } else { 1024 };
    rusage().map(|r| (r.ru_maxrss.max(0) as u64) * scale).unwrap_or(0)
}

pub fn current_rss_bytes() -> u64 {
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

