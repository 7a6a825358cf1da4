//! Concurrency primitives shared by the compiler caches and the capture.
//!
//! Everything here is built on [`Mutex`] and [`Condvar`] from `std`, or from `loom` when the
//! crate is compiled with `RUSTFLAGS="--cfg loom"`, so that the loom models in `tests/loom.rs`
//! check the exact code that ships.
//!
//! Invariants:
//! - No lock is held while user work (parsing, specializing, writing) runs.
//! - Values handed out are `Arc`s or clones: nothing is freed while a caller can still reach it.

mod limit;
mod once;
mod sharded;

pub use limit::{Permit, TaskLimiter};
pub use once::ComputeOnce;
pub use sharded::ShardedMap;

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks `m`, recovering the data if a previous holder panicked.
///
/// Every critical section in granary leaves its data consistent before any call that could
/// panic, so a poisoned lock carries no broken invariant and the data is safe to reuse.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Locks a `std` mutex used outside the loom-modelled core (harvest bookkeeping), recovering
/// the data if a previous holder panicked.
pub fn lock_std<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}
