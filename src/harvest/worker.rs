//! The worker side of `harvest --isolate`: `granary worker` compiles the pipelines its parent
//! names and answers with one frame each.
//!
//! Protocol. The parent writes one pipeline index per line on the worker's stdin; the worker
//! answers each with a frame on stdout:
//! `b"GW"`, tag `u8` (0 compiled, 1 failed), `u8` 0, then `u64` LE each: resident memory in
//! bytes, libraries parsed so far, stage functions compiled so far, payload length; then the
//! payload. A compiled pipeline's payload is a one-entry archive (so the parent reads it with
//! the bounds-checked archive reader); a failure's payload is a [`Failure`] as JSON. End of
//! stdin ends the worker.

use super::sink::{compile_failure, script_failure};
use super::Failure;
use crate::archive::{encode, ArchiveMeta, WriteEntry};
use crate::compiler::{Compiler, CompilerOptions};
use crate::descriptor::TargetSet;
use crate::script::LazyScript;
use std::io::{BufRead, Write};
use std::path::Path;

/// Frame header size.
pub(crate) const FRAME_HEADER: usize = 36;
/// Largest payload a parent accepts.
pub(crate) const MAX_PAYLOAD: u64 = 1 << 30;

/// Runs the worker loop on stdin/stdout. Returns the process exit status.
pub fn worker_main(script: &Path, targets: TargetSet) -> i32 {
    // Lazily: a worker compiles a slice of a possibly huge script, and is restarted often.
    let script = match LazyScript::load(script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("granary worker: {e}");
            return 2;
        }
    };
    let compiler = Compiler::new(CompilerOptions { targets, max_concurrent_tasks: Some(1), ..Default::default() });
    let meta = ArchiveMeta::portable();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return 2 };
        let Ok(index) = line.trim().parse::<usize>() else {
            eprintln!("granary worker: bad request {line:?}");
            return 2;
        };
        let Some((label, descriptor)) = script.pipeline(index) else {
            eprintln!("granary worker: no pipeline {index}");
            return 2;
        };
        let name = label.unwrap_or_else(|| format!("pipelines[{index}]"));
        let (tag, payload) = match &descriptor {
            Err(e) => (1u8, failure_json(&script_failure(index, name, e))),
            Ok(desc) => {
                if let Some(a) = crate::fault::action_for(desc.label()) {
                    crate::fault::trigger(a);
                }
                match compiler.compile(desc) {
                    Ok(entry) => {
                        let labels: Vec<String> = desc.label().map(str::to_owned).into_iter().collect();
                        (0u8, encode(&[WriteEntry { entry, labels: labels.into() }], &meta))
                    }
                    Err(e) => (1u8, failure_json(&compile_failure(index, name, &e))),
                }
            }
        };
        let stats = compiler.stats();
        let mut frame = Vec::with_capacity(FRAME_HEADER + payload.len());
        frame.extend_from_slice(b"GW");
        frame.push(tag);
        frame.push(0);
        frame.extend_from_slice(&crate::util::current_rss_bytes().to_le_bytes());
        frame.extend_from_slice(&stats.libraries_parsed.to_le_bytes());
        frame.extend_from_slice(&stats.functions_compiled.to_le_bytes());
        frame.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        frame.extend_from_slice(&payload);
        if out.write_all(&frame).and_then(|_| out.flush()).is_err() {
            return 2;
        }
    }
    0
}

fn failure_json(f: &Failure) -> Vec<u8> {
    serde_json::to_vec(f).unwrap_or_default()
}
