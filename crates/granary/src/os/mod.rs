//! The one place granary calls the operating system directly (libc): clocks and resource
//! usage for [`crate::measure`], and the worker-process plumbing of `harvest --isolate`
//! (private protocol descriptors, death with the parent, a raw write to fd 1 for a test
//! fault). Every `unsafe` block of the crate outside the fault facility's deliberate crashes
//! is in `unix.rs`, each with its `// SAFETY:` argument.
//!
//! On platforms without an implementation the measurements read zero, the worker keeps its
//! standard streams and only the parent check of [`die_with_parent`] is skipped.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::{
    children_cpu_time, current_rss_bytes, die_with_parent, peak_rss_bytes, process_cpu_time, process_rss_bytes,
    thread_cpu_time, write_stdout_fd,
};

#[cfg(unix)]
/// The protocol input and output of a worker process, as `(input, output)`: on Unix both
/// move to private descriptors (fd 0 then reads `/dev/null`, fd 1 writes to the standard
/// error).
pub(crate) fn private_stdio() -> std::io::Result<(Box<dyn std::io::Read + Send>, Box<dyn std::io::Write + Send>)> {
    let (input, output) = unix::private_stdio()?;
    Ok((Box::new(input), Box::new(output)))
}

#[cfg(not(unix))]
mod fallback {
    use std::time::Duration;
    pub(crate) fn thread_cpu_time() -> Duration {
        Duration::ZERO
    }
    pub(crate) fn process_cpu_time() -> Duration {
        Duration::ZERO
    }
    pub(crate) fn children_cpu_time() -> Duration {
        Duration::ZERO
    }
    pub(crate) fn peak_rss_bytes() -> u64 {
        0
    }
    pub(crate) fn current_rss_bytes() -> u64 {
        0
    }
    pub(crate) fn process_rss_bytes(_pid: u32) -> Option<u64> {
        None
    }
    pub(crate) fn die_with_parent(_parent: u32) -> bool {
        true
    }
    pub(crate) fn write_stdout_fd(_bytes: &[u8]) {}
    pub(crate) fn private_stdio() -> std::io::Result<(Box<dyn std::io::Read + Send>, Box<dyn std::io::Write + Send>)> {
        Ok((Box::new(std::io::stdin()), Box::new(std::io::stdout())))
    }
}
#[cfg(not(unix))]
pub(crate) use fallback::*;
