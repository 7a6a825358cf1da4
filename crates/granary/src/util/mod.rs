//! Small process-level measurements: thread, process and child CPU time, resident memory.
//! Used for reports and benchmarks only; on platforms without an implementation they read
//! zero.

use std::time::Duration;

pub mod panic;

#[cfg(unix)]
#[allow(unsafe_code)] // process control: fork/exec helpers, rlimits, signals
mod unix;
#[cfg(unix)]
use unix as platform;

#[cfg(not(unix))]
mod platform {
    use std::time::Duration;
    pub fn thread_cpu_time() -> Duration {
        Duration::ZERO
    }
    pub fn process_cpu_time() -> Duration {
        Duration::ZERO
    }
    pub fn children_cpu_time() -> Duration {
        Duration::ZERO
    }
    pub fn peak_rss_bytes() -> u64 {
        0
    }
    pub fn current_rss_bytes() -> u64 {
        0
    }
    pub fn process_rss_bytes(_pid: u32) -> Option<u64> {
        None
    }
    pub fn die_with_parent(_parent: u32) -> bool {
        true
    }
}

/// CPU time consumed by the calling thread so far.
pub fn thread_cpu_time() -> Duration {
    platform::thread_cpu_time()
}

/// CPU time (user + system) consumed by the whole process so far.
pub fn process_cpu_time() -> Duration {
    platform::process_cpu_time()
}

/// CPU time (user + system) of all child processes that have been waited for.
pub fn children_cpu_time() -> Duration {
    platform::children_cpu_time()
}

/// Peak resident set size of the process in bytes.
pub fn peak_rss_bytes() -> u64 {
    platform::peak_rss_bytes()
}

/// Current resident set size of the process in bytes (Linux: from /proc; other Unixes: the
/// peak).
pub fn current_rss_bytes() -> u64 {
    platform::current_rss_bytes()
}

/// Current resident set size of another process (Linux: from /proc; elsewhere `None`).
pub fn process_rss_bytes(pid: u32) -> Option<u64> {
    platform::process_rss_bytes(pid)
}

/// For a worker process: have the operating system kill this process when its parent dies
/// (Linux: `PR_SET_PDEATHSIG` with SIGKILL), then check that the parent is still the process
/// `parent`. Returns false when it is already gone (the caller should exit). Where no such
/// facility exists it only checks the parent (Unix) or returns true.
///
/// Linux sends the signal when the *thread* that spawned this process exits, so the spawning
/// thread must outlive the worker.
pub fn die_with_parent(parent: u32) -> bool {
    platform::die_with_parent(parent)
}

/// The protocol input and output of a worker process whose standard input and output carry a
/// protocol, as `(input, output)`.
///
/// On Unix both move to private descriptors: fd 0 then reads `/dev/null` and fd 1 writes to
/// the standard error, so nothing else in the process (a driver's `printf`, a stray
/// `println!`) can read the protocol input or write into the protocol output. Elsewhere they
/// are the standard streams themselves. Call once, before anything else reads or writes them.
pub fn private_stdio() -> std::io::Result<(Box<dyn std::io::Read + Send>, Box<dyn std::io::Write + Send>)> {
    #[cfg(unix)]
    {
        let (input, output) = unix::private_stdio()?;
        Ok((Box::new(input), Box::new(output)))
    }
    #[cfg(not(unix))]
    {
        Ok((Box::new(std::io::stdin()), Box::new(std::io::stdout())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance_with_work() {
        let t0 = thread_cpu_time();
        let p0 = process_cpu_time();
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_time() > t0);
        assert!(process_cpu_time() > p0);
        assert!(peak_rss_bytes() > 1 << 20);
        assert!(current_rss_bytes() > 1 << 20);
    }
}
