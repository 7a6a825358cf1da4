//! Where compile outcomes go, whichever runner produced them: the capture, the failure list,
//! the flush trigger and the progress callback.

use super::report::Failure;
use super::Progress;
use crate::capture::Capture;
use crate::compiler::{CompileError, LostTarget};
use crate::descriptor::TargetSet;
use crate::script::ScriptError;
use crate::sync::lock_std;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

/// Shared by all workers of one harvest.
pub(crate) struct Sink<'a> {
    pub capture: &'a Capture,
    pub compiled: AtomicUsize,
    pub failures: Mutex<Vec<Failure>>,
    pub flush_every: Option<usize>,
    pub flush_tx: Mutex<Option<mpsc::Sender<()>>>,
    pub on_progress: &'a (dyn Fn(Progress) + Sync),
    /// The targets of each compiled pipeline, by script index.
    pub targets: Mutex<Vec<(usize, TargetSet)>>,
    /// Lost targets, one row per (function, stage, target), with the pipelines affected.
    pub lost: Mutex<BTreeMap<(String, u8, u8), Failure>>,
    /// `--require-all-targets` (the isolate parent enforces it on workers' answers).
    pub require_all_targets: bool,
    /// The harvest's interrupt, if it can be interrupted: once requested, the in-process
    /// schedule takes no new task.
    pub interrupt: Option<&'a super::interrupt::Interrupt>,
    /// With `--flush-every N`: holds a landing pipeline back while more than `2N` landed
    /// pipelines are not yet journaled, so a kill loses at most that many (plus one landing
    /// per thread).
    pub gate: Option<JournalGate>,
}

/// Back-pressure from the journal onto compiling: the bound behind "a kill loses at most 2N
/// pipelines". The flush thread reports how many landed pipelines its last flush made
/// durable ([`JournalGate::advance`]); a thread whose pipeline lands while more than
/// `limit` landed pipelines are not yet durable waits for the next flush to finish. A flush
/// that fails, or an interrupt, opens the gate for good, so no thread ever waits for a
/// journal that will not be written.
///
/// Thread-safe: any number of compile threads wait, one flush thread advances.
pub(crate) struct JournalGate {
    limit: usize,
    state: Mutex<GateState>,
    cv: Condvar,
}

struct GateState {
    /// Landed pipelines (by the harvest's landing count) whose entries are durable.
    journaled: usize,
    /// Nobody waits any more (a flush failed, the harvest was interrupted).
    open: bool,
}

impl JournalGate {
    /// A gate that lets at most `limit` landed pipelines wait for the journal.
    pub fn new(limit: usize) -> Self {
        JournalGate { limit, state: Mutex::new(GateState { journaled: 0, open: false }), cv: Condvar::new() }
    }

    /// Waits while more than the limit of the first `landed` pipelines are not durable.
    pub fn wait(&self, landed: usize) {
        let mut st = lock_std(&self.state);
        while !st.open && landed.saturating_sub(st.journaled) > self.limit {
            st = self.cv.wait(st).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// The first `landed` pipelines are durable (a flush that began after they landed ended).
    pub fn advance(&self, landed: usize) {
        let mut st = lock_std(&self.state);
        st.journaled = st.journaled.max(landed);
        self.cv.notify_all();
    }

    /// Nobody waits for the journal again.
    pub fn open(&self) {
        lock_std(&self.state).open = true;
        self.cv.notify_all();
    }
}

impl Sink<'_> {
    /// Whether the harvest was interrupted (no new work should start).
    pub fn stopped(&self) -> bool {
        self.interrupt.is_some_and(|i| i.is_requested())
    }

    /// One pipeline landed in the capture (its entry is there: the flush thread reads this
    /// count before its snapshot, so a count it reads covers entries it will find).
    pub fn compiled(&self) {
        let n = self.compiled.fetch_add(1, Ordering::SeqCst) + 1;
        if self.flush_every.is_some_and(|k| k > 0 && n.is_multiple_of(k)) {
            if let Some(tx) = lock_std(&self.flush_tx).as_ref() {
                let _ = tx.send(());
            }
        }
        crate::fault::at_landed();
        if let Some(g) = &self.gate {
            g.wait(n);
        }
    }
    /// Pipeline `index` (named `name`) landed with `targets`, having lost `lost` (each stage
    /// function's target failures).
    pub fn compiled_with(&self, index: usize, name: &str, targets: TargetSet, lost: &[LostTarget]) {
        lock_std(&self.targets).push((index, targets));
        if !lost.is_empty() {
            let mut rows = lock_std(&self.lost);
            for l in lost {
                let Some(t) = l.error.target else { continue };
                let row = rows
                    .entry((l.function.clone(), l.stage as u8, t as u8))
                    .or_insert_with(|| lost_target_row(index, name.to_string(), l));
                let n = row.pipelines_affected.unwrap_or(0) + 1;
                row.pipelines_affected = Some(n);
                // The row names the first pipeline (by script order) that lacks the target.
                if index < row.index {
                    row.index = index;
                    row.pipeline = name.to_string();
                }
            }
        }
        self.compiled();
    }
    /// No more flushes: lets the flush thread finish.
    pub fn close(&self) {
        lock_std(&self.flush_tx).take();
    }
    /// One pipeline failed.
    pub fn failed(&self, f: Failure) {
        lock_std(&self.failures).push(f);
    }
    /// One task finished: a pipeline (landed or failed), or a library parse or stage function.
    pub fn progress(&self, pipeline: bool) {
        (self.on_progress)(if pipeline { Progress::PipelineDone } else { Progress::FunctionDone });
    }
}

pub(crate) fn script_failure(index: usize, name: String, e: &ScriptError) -> Failure {
    let mut f = process_failure(index, name, "script", e.to_string());
    f.cause = e.message.clone();
    f.file = Some(e.file.display().to_string());
    f.line = e.line.map(|v| v as u64);
    f.column = e.column.map(|v| v as u64);
    f.json_path = Some(e.json_path.clone());
    f
}

pub(crate) fn compile_failure(index: usize, name: String, e: &CompileError) -> Failure {
    let mut f = process_failure(index, name, "link", e.to_string());
    match e {
        CompileError::Panic { .. } => f.phase = "panic".into(),
        CompileError::Shader { error, .. } => {
            f.phase = if error.kind == crate::frontend::ShaderErrorKind::Panic { "panic" } else { "shader" }.into();
            f.kind = Some(error.kind);
            f.file = Some(error.file.clone());
            f.line = error.line.map(u64::from);
            f.column = error.column.map(u64::from);
        }
        CompileError::Targets { lost, .. } => {
            f.phase = "targets".into();
            if let Some(l) = lost.first() {
                f.kind = Some(l.error.kind);
                f.file = Some(l.error.file.clone());
                f.line = l.error.line.map(u64::from);
                f.column = l.error.column.map(u64::from);
            }
        }
        CompileError::Device { .. } => f.phase = "device".into(),
        CompileError::Link { .. } => {}
    }
    f
}

/// The record of one target lost by one stage function, first seen in pipeline `index`.
pub(crate) fn lost_target_row(index: usize, name: String, l: &LostTarget) -> Failure {
    let mut f = process_failure(index, name, "target", l.error.message.clone());
    f.kind = Some(l.error.kind);
    f.file = Some(l.error.file.clone());
    f.line = l.error.line.map(u64::from);
    f.column = l.error.column.map(u64::from);
    f.target = l.error.target.map(|t| t.name().to_string());
    f.function = Some(format!("{} {}", l.stage, l.function));
    f.pipelines_affected = Some(0);
    f
}

/// A failure of pipeline `index` (named `name`); its cause is `message` without the
/// `pipeline 'NAME': ` that compile errors begin with.
pub(crate) fn process_failure(index: usize, name: String, phase: &str, message: String) -> Failure {
    let cause = message.strip_prefix(&format!("pipeline '{name}': ")).unwrap_or(&message).to_string();
    Failure {
        cause,
        index,
        pipeline: name,
        phase: phase.into(),
        kind: None,
        file: None,
        line: None,
        column: None,
        json_path: None,
        script_position: None,
        message,
        target: None,
        function: None,
        pipelines_affected: None,
    }
}

#[cfg(test)]
mod tests {
    use super::JournalGate;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A landing beyond the limit waits until a flush covers enough of it; one within the
    /// limit does not wait; opening the gate releases every waiter for good.
    #[test]
    fn the_journal_gate_holds_back_only_beyond_its_limit() {
        let gate = JournalGate::new(4);
        gate.wait(4); // within the limit: returns at once
        let released = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                gate.wait(7);
                released.store(true, Ordering::SeqCst);
            });
            gate.advance(2); // 7 - 2 = 5 > 4: still held
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!released.load(Ordering::SeqCst), "released before the journal caught up");
            gate.advance(3); // 7 - 3 = 4: released
        });
        assert!(released.load(Ordering::SeqCst));
        gate.open();
        gate.wait(1_000_000); // open: never waits
    }
}
