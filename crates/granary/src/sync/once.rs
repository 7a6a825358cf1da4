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

    /// Forced contention: 8 threads call at once (a barrier), and the one that computes does
    /// not finish until every thread has called; so 7 callers arrive while the value is being
    /// computed. Exactly one computes; each of the others called before the value existed,
    /// did not compute, and returned only after the computation had finished: it waited.
    #[test]
    fn computes_once_under_contention() {
        const THREADS: usize = 8;
        let cell = Arc::new(ComputeOnce::<Arc<u32>>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let arrived = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let start = Arc::new(std::sync::Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (cell, runs, arrived, finished, start) =
                    (cell.clone(), runs.clone(), arrived.clone(), finished.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let before = !finished.load(Ordering::SeqCst);
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let (v, computed) = cell.get_or_compute(|| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        // Every other caller has called (or is about to) before this ends.
                        while arrived.load(Ordering::SeqCst) < THREADS {
                            std::thread::yield_now();
                        }
                        finished.store(true, Ordering::SeqCst);
                        Arc::new(7)
                    });
                    (*v, computed, before, finished.load(Ordering::SeqCst))
                })
            })
            .collect();
        let results: Vec<(u32, bool, bool, bool)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(results.iter().filter(|r| r.1).count(), 1, "exactly one caller computed: {results:?}");
        for &(v, _, called_before_the_value, returned_after_it) in &results {
            assert_eq!(v, 7);
            assert!(called_before_the_value && returned_after_it, "{results:?}");
        }
        assert_eq!(cell.get().map(|v| *v), Some(7));
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
