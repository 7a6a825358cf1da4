//! The one test fault the file layer honours: `slow-write:MS` in `GRANARY_FAULT` (see the
//! `granary` crate's fault facility). Compiled in only with the `fault` cargo feature, which
//! `granary`'s own `fault` feature turns on for the test suite; without it nothing reads the
//! environment.

use std::time::Duration;

/// The mid-write delay for durable writes and journal appends, if the test fault is set.
#[cfg(feature = "fault")]
pub(crate) fn slow_write() -> Option<Duration> {
    static DELAY: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *DELAY.get_or_init(|| {
        let spec = std::env::var("GRANARY_FAULT").unwrap_or_default();
        spec.split(',').find_map(|item| item.strip_prefix("slow-write:")?.parse().ok().map(Duration::from_millis))
    })
}

/// The mid-write delay: never, without the `fault` feature.
#[cfg(not(feature = "fault"))]
#[inline(always)]
pub(crate) fn slow_write() -> Option<Duration> {
    None
}
