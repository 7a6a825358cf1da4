//! The worker side of `harvest --isolate`: `granary worker SCRIPT --targets T --parent-pid P`
//! compiles the pipelines its parent names, from bytes the parent sends, and answers with one
//! frame each.
//!
//! # Start
//!
//! The worker first moves its standard input and output to private descriptors
//! (`crate::os::private_stdio`): fd 1 then writes to the standard error (which the parent
//! collects for messages) and fd 0 reads `/dev/null`, so nothing the worker's code or
//! libraries print can land in the answer stream. On Linux it then asks for SIGKILL when its
//! parent dies and exits at once if the parent `P` is already gone
//! (`crate::os::die_with_parent`).
//!
//! The protocol (messages, frames, payloads) is in `wire.rs`.

use super::report::Failure;
use super::sink::{compile_failure, process_failure, script_failure};
use super::wire::{
    compiled_answer, decode_library, frame_header, read_message, ANSWER_CACHE, ANSWER_COMPILED, ANSWER_FAILED,
    MSG_COMPILE, MSG_LIBRARY, MSG_SCRIPT,
};
use crate::archive::{encode, ArchiveMeta, WriteEntry};
use crate::compiler::{Compiler, CompilerOptions};
use crate::descriptor::PipelineDescriptor;
use crate::descriptor::TargetSet;
use crate::fault::Action;
use crate::frontend::Profile;
use crate::script::LazyScript;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Runs the worker loop on the standard input and output. `script` names the script in
/// messages; `check_outputs` is the harvest's `--check-outputs`; `parent` is the parent's
/// process id (the worker exits if it is gone); `max_library_bytes` the largest library it
/// parses (`None`: no limit, as the parent's timeout and memory watchdog contain the worker).
/// Returns the process exit status.
pub fn worker_main(
    script: &Path,
    targets: TargetSet,
    profile: &'static Profile,
    check_outputs: crate::frontend::CheckOutputs,
    parent: Option<u32>,
    backend: Option<Arc<dyn crate::backend::Backend>>,
    max_library_bytes: Option<u64>,
) -> i32 {
    let (mut input, mut out) = match crate::os::private_stdio() {
        Ok(io) => io,
        Err(e) => {
            eprintln!("granary worker: cannot set up private channels: {e}");
            return 2;
        }
    };
    if let Some(p) = parent {
        if !crate::os::die_with_parent(p) {
            eprintln!("granary worker: parent {p} is gone");
            return 2;
        }
    }
    let text = match read_message(&mut input) {
        Ok(Some((MSG_SCRIPT, text))) => match String::from_utf8(text) {
            Ok(t) => t,
            Err(_) => {
                eprintln!("granary worker: the script text is not UTF-8");
                return 2;
            }
        },
        Ok(None) => return 0,
        _ => {
            eprintln!("granary worker: expected the script text first");
            return 2;
        }
    };
    let script = match LazyScript::from_text(text, script) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("granary worker: {e}");
            return 2;
        }
    };
    let options = CompilerOptions {
        targets,
        profile,
        max_concurrent_tasks: Some(1),
        max_library_bytes,
        check_outputs,
        ..Default::default()
    };
    let compiler = match backend {
        Some(b) => Compiler::with_backend(options, b),
        None => Compiler::new(options),
    };
    let meta = crate::archive::portable_meta_for(profile, targets);
    loop {
        let (tag, payload) = match read_message(&mut input) {
            Ok(Some(m)) => m,
            Ok(None) => {
                // The end of the input: hand the device's pipeline-cache data to the parent
                // (frame tag 3), where the device keeps one instead of binaries.
                // A failed read sends nothing: the parent then has no cache data from this
                // worker, which its report shows (the worker's stderr carries the reason).
                let caches = compiler.backend().device_caches().unwrap_or_else(|e| {
                    eprintln!("granary worker: reading the device's pipeline cache failed: {e}");
                    Vec::new()
                });
                if let Some(cache) = caches.into_iter().next() {
                    let bytes = cache.data.bytes();
                    let mut f = frame_header(ANSWER_CACHE, 0, bytes.len() as u64);
                    f.extend_from_slice(bytes);
                    let _ = out.write_all(&f).and_then(|_| out.flush());
                }
                break;
            }
            Err(e) => {
                eprintln!("granary worker: bad request: {e}");
                return 2;
            }
        };
        match tag {
            MSG_LIBRARY => match decode_library(&payload) {
                Some(lib) => script.supply_library(lib),
                None => {
                    eprintln!("granary worker: malformed library message");
                    return 2;
                }
            },
            MSG_COMPILE => {
                let word = |i: usize| {
                    payload
                        .get(i * 8..i * 8 + 8)
                        .and_then(|b| b.try_into().ok())
                        .map(|b| u64::from_le_bytes(b) as usize)
                };
                // `index`, or `index, origin, place` for a variant of an expanded pipeline.
                let (index, variant) = match (payload.len(), word(0), word(1), word(2)) {
                    (8, Some(i), _, _) => (i, None),
                    (24, Some(i), Some(o), Some(k)) => (i, Some((o, k))),
                    _ => {
                        eprintln!("granary worker: malformed compile request");
                        return 2;
                    }
                };
                let (tag, payload) = match answer(&script, &compiler, &meta, index, variant) {
                    Answer::Frame(tag, payload) => (tag, payload),
                    Answer::HugeFrame => {
                        // The fault: announce an absurd payload and send nothing more.
                        let _ = out.write_all(&frame_header(ANSWER_COMPILED, index, 1 << 40)).and_then(|_| out.flush());
                        continue;
                    }
                };
                let mut f = frame_header(tag, index, payload.len() as u64);
                f.extend_from_slice(&payload);
                if out.write_all(&f).and_then(|_| out.flush()).is_err() {
                    return 2;
                }
            }
            _ => {
                eprintln!("granary worker: unknown message tag {tag}");
                return 2;
            }
        }
    }
    if crate::fault::hang_on_exit() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    0
}

enum Answer {
    Frame(u8, Vec<u8>),
    HugeFrame,
}

/// The descriptor of harvest pipeline `index`: script pipeline `index`, or for `variant =
/// Some((origin, k))` the `k`-th variant of script pipeline `origin` under the script's
/// `expand_unspecialized` (exactly as the parent expanded it). `Err` is the failure answer.
fn descriptor(
    script: &LazyScript,
    index: usize,
    variant: Option<(usize, usize)>,
) -> Result<(String, PipelineDescriptor), Answer> {
    let origin = variant.map_or(index, |(o, _)| o);
    let protocol = |m: String| {
        let f = process_failure(index, format!("pipelines[{origin}]"), "protocol", m);
        Answer::Frame(ANSWER_FAILED, failure_json(&f))
    };
    let Some((label, descriptor)) = script.pipeline(origin) else {
        return Err(protocol(format!("the worker's script has no pipeline {origin}")));
    };
    let name = label.unwrap_or_else(|| format!("pipelines[{origin}]"));
    let desc = match descriptor {
        Ok(d) => d,
        Err(e) => return Err(Answer::Frame(ANSWER_FAILED, failure_json(&script_failure(index, name, &e)))),
    };
    let Some((_, k)) = variant else { return Ok((name, desc)) };
    let variants = script.expansion().and_then(|e| e.variants(&desc, &name));
    match variants {
        Some(Ok(mut v)) if k < v.len() => {
            let d = v.swap_remove(k);
            Ok((d.label().map_or(name, str::to_owned), d))
        }
        Some(Err(m)) => Err(protocol(m)),
        _ => Err(protocol(format!("pipeline '{name}' has no variant {k} under the script's expand_unspecialized"))),
    }
}

/// Compiles harvest pipeline `index` (see [`descriptor`]) and builds the answer. A panic
/// anywhere in the compile (the injected faults included) becomes a `panic` failure with its
/// message and location.
fn answer(
    script: &LazyScript,
    compiler: &Compiler,
    meta: &ArchiveMeta,
    index: usize,
    variant: Option<(usize, usize)>,
) -> Answer {
    let (name, desc) = match descriptor(script, index, variant) {
        Ok(d) => d,
        Err(a) => return a,
    };
    let action = crate::fault::action_for(desc.label());
    if action == Some(Action::HugeFrame) {
        return Answer::HugeFrame;
    }
    let mut desc = desc;
    if action == Some(Action::WrongAnswer) {
        // The fault: compile a neighbouring pipeline instead and send its entry.
        let others = (index + 1..script.len()).chain((0..index).rev());
        if let Some(other) = others.filter_map(|j| script.pipeline(j).and_then(|(_, d)| d.ok())).next() {
            desc = other;
        }
    }
    let outcome = crate::contain::catch(|| {
        match action {
            Some(Action::PrintStdout) => print_junk(),
            Some(a) => crate::fault::trigger(a),
            None => {}
        }
        compiler.compile_detailed(&desc)
    });
    match outcome {
        Ok(Ok(o)) => {
            let labels: Vec<String> = desc.label().map(str::to_owned).into_iter().collect();
            let binaries = o.binaries.into_iter().collect();
            let archive = encode(&[WriteEntry { entry: o.entry.clone(), labels: labels.into(), binaries }], meta);
            let (tag, payload) = compiled_answer(archive, &o.entry, &o.lost);
            Answer::Frame(tag, payload)
        }
        Ok(Err(e)) => Answer::Frame(ANSWER_FAILED, failure_json(&compile_failure(index, name, &e))),
        Err(report) => {
            let f = process_failure(index, name.clone(), "panic", format!("pipeline '{name}': {report}"));
            Answer::Frame(ANSWER_FAILED, failure_json(&f))
        }
    }
}

/// The `print-stdout` fault: junk on the standard output, through Rust and through libc (as a
/// driver's `printf` would), shaped like the start of an answer frame.
fn print_junk() {
    println!("GW\u{1}\u{0} junk printed on stdout by a chatty library");
    crate::os::write_stdout_fd(b"GW\x00\x00\xff\xff\xff\xff junk written to fd 1 by a driver\n");
}

fn failure_json(f: &Failure) -> Vec<u8> {
    serde_json::to_vec(f).unwrap_or_default()
}
