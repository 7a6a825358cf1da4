//! Interrupting a running harvest (Ctrl-C, `SIGTERM`): what landed is journaled, the archive
//! is left alone, and the caller ends the process.
//!
//! A harvest cannot wait for its compiles to finish when interrupted: a compile may never
//! return (a hung driver, naga on a huge input), and the user asked to stop. Instead, the
//! capture's snapshot semantics do the work: while compiles are in flight, the harvest's
//! interrupt watcher appends every pipeline that has landed and is not on disk yet to the
//! journal (`OUT.journal`, the same records `--flush-every` writes), reports through the
//! [`Interrupt`], and the caller (the CLI's signal thread) prints what was kept and exits.
//! `--resume` continues from the archive and that journal. The archive itself is never
//! replaced by an interrupted harvest, so a complete archive from an earlier run survives.
//!
//! Thread safety: an [`Interrupt`] is shared (`Arc`) between the thread that requests it and
//! the harvest; every method may be called from any thread.

use crate::sync::lock_std;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// What an interrupted harvest kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptReport {
    /// The journal the pipelines are in (`OUT.journal`).
    pub journal: PathBuf,
    /// Pipelines appended to the journal at the interrupt.
    pub appended: usize,
    /// Pipelines on disk for `--resume` in all: those kept from the archive and the journal
    /// when this harvest resumed, those journaled by earlier flushes, and `appended`.
    pub on_disk: usize,
    /// Why the journal could not be written, when it could not (then only earlier flushes'
    /// records and the archive are on disk).
    pub error: Option<String>,
}

/// The harvest's answer to [`Interrupt::request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// What landed was journaled (or the journal write failed: see the report's `error`).
    Kept(InterruptReport),
    /// The compile phase was already over: the final write is under way; let it finish.
    Finished,
    /// No answer within the time given (the journal write is still running).
    TimedOut,
}

#[derive(Debug, Default)]
enum State {
    /// Nothing asked.
    #[default]
    Idle,
    /// Asked; the harvest has not answered yet.
    Requested,
    /// The harvest journaled what it had.
    Done(InterruptReport),
    /// The harvest's compile phase is over: what it compiled goes to the final write, and an
    /// interrupt now cannot be answered with a journal.
    Finished,
}

/// An interrupt request for a running harvest ([`super::HarvestOptions::interrupt`]).
#[derive(Debug, Default)]
pub struct Interrupt {
    state: Mutex<State>,
    changed: Condvar,
    /// Set once, when a request reaches a harvest still compiling (`Idle` → `Requested`):
    /// what the schedule reads before every task, without the lock.
    requested: AtomicBool,
}

impl Interrupt {
    /// A new, unrequested interrupt.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the harvest to journal what has landed and waits up to `timeout` for its answer.
    pub fn request(&self, timeout: Duration) -> Answer {
        let mut state = lock_std(&self.state);
        if matches!(*state, State::Idle) {
            *state = State::Requested;
            self.requested.store(true, Ordering::Release);
            self.changed.notify_all();
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match &*state {
                State::Done(r) => return Answer::Kept(r.clone()),
                State::Finished => return Answer::Finished,
                _ => {}
            }
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else {
                return Answer::TimedOut;
            };
            state = self.changed.wait_timeout(state, left).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Whether an interrupt was requested while the harvest was still compiling (one that
    /// came after, [`Answer::Finished`], does not count). Lock-free: read before every task.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// The harvest's watcher: blocks until an interrupt is requested (`true`) or the compile
    /// phase ends ([`Interrupt::finish`]: `false`).
    pub(crate) fn wait_requested(&self) -> bool {
        let mut state = lock_std(&self.state);
        loop {
            match &*state {
                State::Requested => return true,
                State::Finished | State::Done(_) => return false,
                State::Idle => {}
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The harvest's answer to a request.
    pub(crate) fn answer(&self, report: InterruptReport) {
        *lock_std(&self.state) = State::Done(report);
        self.changed.notify_all();
    }

    /// The compile phase is over: a watcher waiting stops, and a later request is told so.
    /// A request already made is left to the watcher answering it.
    pub(crate) fn finish(&self) {
        let mut state = lock_std(&self.state);
        if matches!(*state, State::Idle) {
            *state = State::Finished;
        }
        self.changed.notify_all();
    }

    /// The harvest has returned (its watcher, if any, has ended): a request nobody answered
    /// is told there is nothing to journal. An answered request stays answered.
    pub(crate) fn close(&self) {
        let mut state = lock_std(&self.state);
        if !matches!(*state, State::Done(_)) {
            *state = State::Finished;
        }
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_request_is_answered_once_and_a_finished_harvest_says_so() {
        let i = Arc::new(Interrupt::new());
        let watcher = {
            let i = i.clone();
            std::thread::spawn(move || {
                assert!(i.wait_requested());
                i.answer(InterruptReport { journal: "o.journal".into(), appended: 3, on_disk: 5, error: None });
            })
        };
        let Answer::Kept(r) = i.request(Duration::from_secs(60)) else { panic!("not answered") };
        assert_eq!((r.appended, r.on_disk), (3, 5));
        watcher.join().unwrap();
        i.close();
        assert!(matches!(i.request(Duration::ZERO), Answer::Kept(r) if r.appended == 3), "an answer stays");

        let late = Interrupt::new();
        late.finish();
        late.close();
        assert!(!late.wait_requested());
        assert_eq!(late.request(Duration::from_secs(60)), Answer::Finished);
        // Requested, never answered: the time runs out.
        assert_eq!(Interrupt::new().request(Duration::from_millis(1)), Answer::TimedOut);
    }
}
