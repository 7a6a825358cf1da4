//! [`RetireQueue`]: destroy what the GPU may still use only after the frame that used it.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Values (pipelines, `Arc<Loaded>`, `Retained`, a replaced loader) kept until the frame
/// that last used them has completed on the GPU, then dropped — the frame-fenced deferred
/// destruction an engine needs, because dropping a [`Pipeline`](super::Pipeline) destroys it
/// at once.
///
/// The engine numbers its frames: [`retire`](Self::retire)`(value, frame)` when it stops
/// using `value` after recording `frame`, and [`collect`](Self::collect)`(completed)` once
/// its fence says every frame up to `completed` has finished; only then is `value` dropped.
/// Frames need not be retired in order.
///
/// Thread safety: `Send + Sync` for `T: Send`; every method takes `&self` (one short lock).
/// Dropping the queue drops what it holds: do that only after the device is idle.
pub struct RetireQueue<T> {
    queue: Mutex<VecDeque<(u64, T)>>,
}

impl<T> Default for RetireQueue<T> {
    fn default() -> Self {
        RetireQueue { queue: Mutex::new(VecDeque::new()) }
    }
}

impl<T> RetireQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `value` until frame `last_used` has completed.
    pub fn retire(&self, value: T, last_used: u64) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        // Kept sorted by frame; retiring is nearly always in order, so this is a push.
        let at = q.iter().rposition(|(f, _)| *f <= last_used).map_or(0, |i| i + 1);
        q.insert(at, (last_used, value));
    }

    /// Drops every value whose frame is at most `completed`; returns how many. The values
    /// are dropped after the lock is released (a pipeline's destructor calls the driver).
    pub fn collect(&self, completed: u64) -> usize {
        let done: Vec<(u64, T)> = {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let n = q.iter().position(|(f, _)| *f > completed).unwrap_or(q.len());
            q.drain(..n).collect()
        };
        done.len()
    }

    /// How many values wait.
    pub fn len(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_value_is_dropped_only_once_its_frame_has_completed_in_any_retire_order() {
        let q = RetireQueue::new();
        let values: Vec<Arc<u64>> = (0..4).map(Arc::new).collect();
        // Retired out of order: frames 5, 3, 7, 5.
        for (v, frame) in values.iter().zip([5, 3, 7, 5]) {
            q.retire(v.clone(), frame);
        }
        let alive = |v: &Vec<Arc<u64>>| v.iter().map(|a| Arc::strong_count(a) > 1).collect::<Vec<_>>();
        assert_eq!(q.collect(2), 0);
        assert_eq!(alive(&values), [true, true, true, true]);
        assert_eq!(q.collect(3), 1);
        assert_eq!(alive(&values), [true, false, true, true]);
        assert_eq!(q.collect(6), 2);
        assert_eq!(alive(&values), [false, false, true, false]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.collect(100), 1);
        assert!(q.is_empty());
        assert_eq!(alive(&values), [false; 4]);
    }
}
