//! Process-level measurements: thread, process and child CPU time, resident memory. Used
//! for harvest summaries, the `--isolate` parent's memory limit and granary-lab's benchmark;
//! on platforms without an implementation they read zero. The OS calls are in the private `os` module.

use std::time::Duration;

use crate::os as platform;

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
