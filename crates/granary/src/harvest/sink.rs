//! Where compile outcomes go, whichever runner produced them: the capture, the failure list,
//! the flush trigger and the progress callback.

use super::{Failure, Progress};
use crate::capture::Capture;
use crate::compiler::CompileError;
use crate::script::ScriptError;
use crate::sync::lock_std;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

/// Shared by all workers of one harvest.
pub(crate) struct Sink<'a> {
    pub capture: &'a Capture,
    pub compiled: AtomicUsize,
    pub failures: Mutex<Vec<Failure>>,
    pub flush_every: Option<usize>,
    pub flush_tx: Mutex<Option<mpsc::Sender<()>>>,
    pub on_progress: &'a (dyn Fn(Progress) + Sync),
}

impl Sink<'_> {
    /// One pipeline landed in the capture.
    pub fn compiled(&self) {
        let n = self.compiled.fetch_add(1, Ordering::Relaxed) + 1;
        if self.flush_every.is_some_and(|k| k > 0 && n.is_multiple_of(k)) {
            if let Some(tx) = lock_std(&self.flush_tx).as_ref() {
                let _ = tx.send(());
            }
        }
    }
    /// No more flushes: lets the flush thread finish.
    pub fn close(&self) {
        lock_std(&self.flush_tx).take();
    }
    /// One pipeline failed.
    pub fn failed(&self, f: Failure) {
        lock_std(&self.failures).push(f);
    }
    /// One task finished.
    pub fn progress(&self) {
        (self.on_progress)(Progress::TaskDone);
    }
}

pub(crate) fn script_failure(index: usize, name: String, e: &ScriptError) -> Failure {
    Failure {
        index,
        pipeline: name,
        phase: "script".into(),
        kind: None,
        file: Some(e.file.display().to_string()),
        line: e.line.map(|v| v as u64),
        column: e.column.map(|v| v as u64),
        json_path: Some(e.json_path.clone()),
        script_position: None,
        message: e.to_string(),
    }
}

pub(crate) fn compile_failure(index: usize, name: String, e: &CompileError) -> Failure {
    let mut f = Failure {
        index,
        pipeline: name,
        phase: "link".into(),
        kind: None,
        file: None,
        line: None,
        column: None,
        json_path: None,
        script_position: None,
        message: e.to_string(),
    };
    if let CompileError::Panic { .. } = e {
        f.phase = "panic".into();
    }
    if let CompileError::Shader { error, .. } = e {
        f.phase = if error.kind == crate::frontend::ShaderErrorKind::Panic { "panic" } else { "shader" }.into();
        f.kind = Some(error.kind);
        f.file = Some(error.file.clone());
        f.line = error.line.map(u64::from);
        f.column = error.column.map(u64::from);
    }
    f
}

pub(crate) fn process_failure(index: usize, name: String, phase: &str, message: String) -> Failure {
    Failure {
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
    }
}
