//! A cell whose value is computed exactly once, by the first caller; concurrent callers wait.

use super::{lock, Condvar, Mutex};

enum State<T> {
    Empty,
    Running,
    Done(T),
}

/// A value computed once by whichever thread asks first; other threads asking at the same
/// time block until it is ready and then receive a clone.
///
/// This is the "compile once" cell of the thread-safety contract: pipelines sharing a stage
/// function all call [`ComputeOnce::get_or_compute`] on the same cell; exactly one runs the
/// compile, the rest wait for its result (no lock is held while it runs). If the computing
/// thread panics, the cell returns to empty and one waiter takes over, so a panic never leaves
/// waiters blocked forever.
///
/// Thread safety: `Send + Sync` when `T: Send`; every method may be called from any thread.
pub struct ComputeOnce<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T: Clone> Default for ComputeOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone> ComputeOnce<T> {
    /// An empty cell.
    pub fn new() -> Self {
        ComputeOnce { state: Mutex::new(State::Empty), ready: Condvar::new() }
    }

    /// The value if it has been computed.
    pub fn get(&self) -> Option<T> {
        match &*lock(&self.state) {
            State::Done(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// Returns the value, computing it with `f` if no thread has yet. The boolean is `true`
    /// when this call ran `f`.
    pub fn get_or_compute(&self, f: impl FnOnce() -> T) -> (T, bool) {
        {
            let mut state = lock(&self.state);
            loop {
                match &*state {
                    State::Done(v) => return (v.clone(), false),
                    State::Running => {
                        state = match self.ready.wait(state) {
                            Ok(g) => g,
                            Err(p) => p.into_inner(),
                        };
                    }
                    State::Empty => {
                        *state = State::Running;
                        break;
                    }
                }
            }
        }
        // We own the computation. If `f` panics, the guard puts the cell back to Empty and
        // wakes a waiter, which then computes it itself.
        let guard = ResetOnUnwind(self);
        let value = f();
        std::mem::forget(guard);
        *lock(&self.state) = State::Done(value.clone());
        self.ready.notify_all();
        (value, true)
    }
}

struct ResetOnUnwind<'a, T>(&'a ComputeOnce<T>);

impl<T> Drop for ResetOnUnwind<'_, T> {
    fn drop(&mut self) {
        *lock(&self.0.state) = State::Empty;
        self.0.ready.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn computes_once_under_contention() {
        let cell = Arc::new(ComputeOnce::<Arc<u32>>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cell, runs) = (cell.clone(), runs.clone());
                std::thread::spawn(move || {
                    cell.get_or_compute(|| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        Arc::new(7)
                    })
                    .0
                })
            })
            .collect();
        for t in threads {
            assert_eq!(*t.join().unwrap(), 7);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn panic_in_compute_lets_next_caller_compute() {
        let cell = Arc::new(ComputeOnce::<u32>::new());
        let c2 = cell.clone();
        let r = std::thread::spawn(move || c2.get_or_compute(|| panic!("boom"))).join();
        assert!(r.is_err());
        assert_eq!(cell.get_or_compute(|| 5), (5, true));
        assert_eq!(cell.get(), Some(5));
    }
}
