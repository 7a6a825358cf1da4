//! A counting semaphore bounding how many compile tasks run at once.

use super::{lock, Condvar, Mutex};

/// Bounds the number of compile tasks (parse, specialize, link) running at the same moment,
/// like Metal's `maximumConcurrentCompilationTaskCount`. Threads beyond the bound wait.
/// Permits are taken around leaf work only (never while holding another permit), so the
/// limiter cannot deadlock.
///
/// Thread safety: `Send + Sync`; share it by reference or `Arc`.
pub struct TaskLimiter {
    max: usize,
    available: Mutex<usize>,
    freed: Condvar,
}

/// A held permit; released on drop.
pub struct Permit<'a>(&'a TaskLimiter);

impl TaskLimiter {
    /// A limiter allowing `max` tasks at once (at least one).
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        TaskLimiter { max, available: Mutex::new(max), freed: Condvar::new() }
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Waits for a free slot and takes it.
    pub fn acquire(&self) -> Permit<'_> {
        let mut n = lock(&self.available);
        while *n == 0 {
            n = match self.freed.wait(n) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        *n -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *lock(&self.0.available) += 1;
        self.0.freed.notify_one();
    }
}
