//! The worker side of `harvest --isolate`: `granary worker SCRIPT --targets T --parent-pid P`
//! compiles the pipelines its parent names, from bytes the parent sends, and answers with one
//! frame each.
//!
//! # Start
//!
//! The worker first moves its standard input and output to private descriptors
//! ([`crate::util::private_stdio`]): fd 1 then writes to the standard error (which the parent
//! collects for messages) and fd 0 reads `/dev/null`, so nothing the worker's code or
//! libraries print can land in the answer stream. On Linux it then asks for SIGKILL when its
//! parent dies and exits at once if the parent `P` is already gone
//! ([`crate::util::die_with_parent`]).
//!
//! # Parent → worker messages (the worker's standard input)
//!
//! Each message is a 16-byte header — `b"GP"`, tag `u8`, `u8` 0, `u32` 0, payload length
//! `u64` LE — and the payload:
//! - tag 0, *script*: the script text as the parent read it (UTF-8). Sent once, first.
//!   `SCRIPT` on the command line only names it in messages; the worker reads no file.
//! - tag 1, *library*: one library the next request needs, sent once per worker before the
//!   first request that uses it: `u8` kind (0 WGSL, 1 GLSL, 2 SPIR-V), `u8` GLSL stage
//!   (0 vertex, 1 fragment, 2 compute, 255 none), `u32` LE name length, the name (UTF-8),
//!   `u32` LE origin length, the origin path (UTF-8; empty: none), then the source bytes to
//!   the end of the payload. These are the bytes the parent read, so the worker compiles
//!   exactly what the parent planned, whatever happens to the files meanwhile.
//! - tag 2, *compile*: `u64` LE pipeline index into the script's `pipelines`.
//!
//! End of input ends the worker. With a device backend that keeps pipeline-cache data, the
//! worker first sends one frame with tag 3 (index 0) whose payload is that data, so a retired
//! worker's cache reaches the archive.
//!
//! # Worker → parent frames (the private output)
//!
//! One frame answers each compile request, before the next request is sent: a 32-byte header
//! — `b"GW"`, tag `u8` (0 compiled, 1 failed, 2 compiled with lost targets), `u8` 0, `u32` 0,
//! then `u64` LE each: the pipeline index answered, the worker's resident memory in bytes, the
//! payload length — and the payload. A compiled pipeline's payload is a one-entry archive (the
//! parent reads it with the bounds-checked archive reader); a failure's payload is a
//! [`Failure`] as JSON. Tag 2 answers a pipeline that landed without some requested targets:
//! `u64` LE archive length, the one-entry archive, then the stage functions' target failures
//! as a JSON array of `{stage, function, target, kind, file, line, column, message}`; the
//! parent accepts a stage without an output for exactly the targets declared lost for it.
//!
//! The parent trusts none of it: it caps each payload length by what the request can produce
//! before reading it (a tag-3 cache only between requests, at most 256 MiB, kept only if its
//! header names the harvest's device), checks that the answer is for the pipeline asked (index, key, stage
//! keys, labels, targets), and kills a worker that breaks the protocol (see `isolate.rs`).

use super::sink::{compile_failure, process_failure, script_failure};
use super::Failure;
use crate::archive::{encode, ArchiveMeta, WriteEntry};
use crate::compiler::{Compiler, CompilerOptions, LostTarget};
use crate::descriptor::{Library, ShaderStage, SourceKind, TargetSet};
use crate::fault::Action;
use crate::frontend::Profile;
use crate::frontend::{ShaderError, ShaderErrorKind};
use crate::script::LazyScript;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One lost target as a tag-2 answer carries it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct WireLost {
    stage: u32,
    function: String,
    target: String,
    kind: ShaderErrorKind,
    file: String,
    line: Option<u32>,
    column: Option<u32>,
    message: String,
}

impl WireLost {
    pub(crate) fn from_lost(l: &LostTarget) -> Self {
        WireLost {
            stage: l.stage as u32,
            function: l.function.clone(),
            target: l.error.target.map_or("", |t| t.name()).to_string(),
            kind: l.error.kind,
            file: l.error.file.clone(),
            line: l.error.line,
            column: l.error.column,
            message: l.error.message.clone(),
        }
    }
    /// `None` for an unknown stage or target.
    pub(crate) fn into_lost(self) -> Option<LostTarget> {
        let target = crate::descriptor::Target::from_name(&self.target)?;
        Some(LostTarget {
            stage: ShaderStage::from_u32(self.stage)?,
            function: self.function,
            error: ShaderError {
                file: self.file,
                line: self.line,
                column: self.column,
                kind: self.kind,
                message: self.message,
                target: Some(target),
            },
        })
    }
}

/// The payload of a tag-2 answer.
pub(crate) fn encode_lost_answer(archive: &[u8], lost: &[LostTarget]) -> Vec<u8> {
    let wire: Vec<WireLost> = lost.iter().map(WireLost::from_lost).collect();
    let json = serde_json::to_vec(&wire).unwrap_or_else(|_| b"[]".to_vec());
    let mut out = Vec::with_capacity(8 + archive.len() + json.len());
    out.extend_from_slice(&(archive.len() as u64).to_le_bytes());
    out.extend_from_slice(archive);
    out.extend_from_slice(&json);
    out
}

/// Splits a tag-2 payload into the archive bytes and the lost targets; `None` if malformed.
pub(crate) fn decode_lost_answer(p: &[u8]) -> Option<(&[u8], Vec<LostTarget>)> {
    let n = usize::try_from(u64::from_le_bytes(p.get(..8)?.try_into().ok()?)).ok()?;
    let archive = p.get(8..8usize.checked_add(n)?)?;
    let wire: Vec<WireLost> = serde_json::from_slice(p.get(8 + n..)?).ok()?;
    let lost = wire.into_iter().map(WireLost::into_lost).collect::<Option<Vec<_>>>()?;
    Some((archive, lost))
}

/// Answer frame header size.
pub(crate) const FRAME_HEADER: usize = 32;
/// Request message header size.
pub(crate) const MESSAGE_HEADER: usize = 16;
/// Message tags.
pub(crate) const MSG_SCRIPT: u8 = 0;
pub(crate) const MSG_LIBRARY: u8 = 1;
pub(crate) const MSG_COMPILE: u8 = 2;

/// A parent → worker message: header and payload.
pub(crate) fn message_header(tag: u8, len: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(MESSAGE_HEADER);
    h.extend_from_slice(b"GP");
    h.push(tag);
    h.push(0);
    h.extend_from_slice(&[0; 4]);
    h.extend_from_slice(&(len as u64).to_le_bytes());
    h
}

/// The payload of a library message.
pub(crate) fn encode_library(lib: &Library) -> Vec<u8> {
    let name = lib.name().as_bytes();
    let origin = lib.origin().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    let mut out = Vec::with_capacity(10 + name.len() + origin.len() + lib.source().len());
    out.push(match lib.kind() {
        SourceKind::Wgsl => 0,
        SourceKind::Glsl => 1,
        SourceKind::Spirv => 2,
    });
    out.push(match lib.glsl_stage() {
        Some(ShaderStage::Vertex) => 0,
        Some(ShaderStage::Fragment) => 1,
        Some(ShaderStage::Compute) => 2,
        None => 255,
    });
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name);
    out.extend_from_slice(&(origin.len() as u32).to_le_bytes());
    out.extend_from_slice(origin.as_bytes());
    out.extend_from_slice(lib.source());
    out
}

/// Reads a library message's payload back; `None` when it is malformed.
pub(crate) fn decode_library(p: &[u8]) -> Option<Arc<Library>> {
    let kind = match p.first()? {
        0 => SourceKind::Wgsl,
        1 => SourceKind::Glsl,
        2 => SourceKind::Spirv,
        _ => return None,
    };
    let stage = match p.get(1)? {
        0 => Some(ShaderStage::Vertex),
        1 => Some(ShaderStage::Fragment),
        2 => Some(ShaderStage::Compute),
        255 => None,
        _ => return None,
    };
    let mut at = 2usize;
    let mut field = || -> Option<&[u8]> {
        let len = u32::from_le_bytes(p.get(at..at + 4)?.try_into().ok()?) as usize;
        let bytes = p.get(at + 4..(at + 4).checked_add(len)?)?;
        at += 4 + len;
        Some(bytes)
    };
    let name = std::str::from_utf8(field()?).ok()?.to_string();
    let origin = std::str::from_utf8(field()?).ok()?;
    let origin = (!origin.is_empty()).then(|| PathBuf::from(origin));
    let source = p.get(at..)?.to_vec();
    Some(Library::new(name, kind, stage, source, origin))
}

/// Reads one message; `Ok(None)` at a clean end of input.
fn read_message(input: &mut impl Read) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut h = [0u8; MESSAGE_HEADER];
    let mut got = 0;
    while got < h.len() {
        match input.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if &h[..2] != b"GP" {
        return Err(std::io::Error::other("not a granary parent message"));
    }
    let len = u64::from_le_bytes(h[8..16].try_into().unwrap_or([0; 8]));
    // No allocation from the announced length: the payload grows as bytes arrive.
    let mut payload = Vec::new();
    input.take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(Some((h[2], payload)))
}

fn frame(tag: u8, index: usize, len: u64) -> Vec<u8> {
    let mut f = Vec::with_capacity(FRAME_HEADER);
    f.extend_from_slice(b"GW");
    f.push(tag);
    f.push(0);
    f.extend_from_slice(&[0; 4]);
    f.extend_from_slice(&(index as u64).to_le_bytes());
    f.extend_from_slice(&crate::util::current_rss_bytes().to_le_bytes());
    f.extend_from_slice(&len.to_le_bytes());
    f
}

/// Runs the worker loop on the standard input and output. `script` names the script in
/// messages; `parent` is the parent's process id (the worker exits if it is gone). Returns the
/// process exit status.
pub fn worker_main(
    script: &Path,
    targets: TargetSet,
    profile: &'static Profile,
    parent: Option<u32>,
    backend: Option<Arc<dyn crate::backend::Backend>>,
) -> i32 {
    let (mut input, mut out) = match crate::util::private_stdio() {
        Ok(io) => io,
        Err(e) => {
            eprintln!("granary worker: cannot set up private channels: {e}");
            return 2;
        }
    };
    if let Some(p) = parent {
        if !crate::util::die_with_parent(p) {
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
    let options = CompilerOptions { targets, profile, max_concurrent_tasks: Some(1), ..Default::default() };
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
                    let mut f = frame(3, 0, bytes.len() as u64);
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
                let Some(index) = payload.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes) else {
                    eprintln!("granary worker: malformed compile request");
                    return 2;
                };
                let index = index as usize;
                let (tag, payload) = match answer(&script, &compiler, &meta, index) {
                    Answer::Frame(tag, payload) => (tag, payload),
                    Answer::HugeFrame => {
                        // The fault: announce an absurd payload and send nothing more.
                        let _ = out.write_all(&frame(0, index, 1 << 40)).and_then(|_| out.flush());
                        continue;
                    }
                };
                let mut f = frame(tag, index, payload.len() as u64);
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

/// Compiles pipeline `index` and builds the answer. A panic anywhere in the compile (the
/// injected faults included) becomes a `panic` failure with its message and location.
fn answer(script: &LazyScript, compiler: &Compiler, meta: &ArchiveMeta, index: usize) -> Answer {
    let Some((label, descriptor)) = script.pipeline(index) else {
        let f = process_failure(
            index,
            format!("pipelines[{index}]"),
            "protocol",
            format!("the worker's script has no pipeline {index}"),
        );
        return Answer::Frame(1, failure_json(&f));
    };
    let name = label.unwrap_or_else(|| format!("pipelines[{index}]"));
    let desc = match descriptor {
        Ok(d) => d,
        Err(e) => return Answer::Frame(1, failure_json(&script_failure(index, name, &e))),
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
    let outcome = crate::util::panic::catch(|| {
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
            let archive = encode(&[WriteEntry { entry: o.entry, labels: labels.into(), binaries }], meta);
            if o.lost.is_empty() {
                Answer::Frame(0, archive)
            } else {
                Answer::Frame(2, encode_lost_answer(&archive, &o.lost))
            }
        }
        Ok(Err(e)) => Answer::Frame(1, failure_json(&compile_failure(index, name, &e))),
        Err(report) => {
            let f = process_failure(index, name.clone(), "panic", format!("pipeline '{name}': {report}"));
            Answer::Frame(1, failure_json(&f))
        }
    }
}

/// The `print-stdout` fault: junk on the standard output, through Rust and through libc (as a
/// driver's `printf` would), shaped like the start of an answer frame.
fn print_junk() {
    println!("GW\u{1}\u{0} junk printed on stdout by a chatty library");
    #[cfg(unix)]
    {
        let junk = b"GW\x00\x00\xff\xff\xff\xff junk written to fd 1 by a driver\n";
        // SAFETY: `write` reads `junk.len()` bytes from a live byte string; fd 1 is open (in a
        // worker it is the standard error, which is the point of the test).
        unsafe {
            libc::write(1, junk.as_ptr().cast(), junk.len());
        }
    }
}

fn failure_json(f: &Failure) -> Vec<u8> {
    serde_json::to_vec(f).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_target_answers_round_trip_and_refuse_damage() {
        let mut error = ShaderError::new("half", ShaderErrorKind::Validation, "glsl needs capability SHADER_FLOAT16");
        error.target = Some(crate::descriptor::Target::Glsl);
        error.line = Some(3);
        let lost = vec![LostTarget { stage: ShaderStage::Fragment, function: "half:fs".into(), error }];
        let p = encode_lost_answer(b"ARCHIVE", &lost);
        let (archive, back) = decode_lost_answer(&p).expect("round trip");
        assert_eq!(archive, b"ARCHIVE");
        let [l] = &back[..] else { panic!("{} lost", back.len()) };
        assert_eq!((l.stage, l.function.as_str()), (ShaderStage::Fragment, "half:fs"));
        assert_eq!(l.error.to_string(), lost[0].error.to_string());
        assert_eq!(l.error.target, Some(crate::descriptor::Target::Glsl));
        // Damage: a length past the end, a cut JSON, an unknown target.
        let mut long = p.clone();
        long[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_lost_answer(&long).is_none());
        assert!(decode_lost_answer(&p[..p.len() - 2]).is_none());
        assert!(decode_lost_answer(&p[..5]).is_none());
        let bad = String::from_utf8_lossy(&p[15..]).replace("\"glsl\"", "\"dxil\"");
        let mut unknown = p[..15].to_vec();
        unknown.extend_from_slice(bad.as_bytes());
        assert!(decode_lost_answer(&unknown).is_none());
    }

    #[test]
    fn library_messages_round_trip_to_the_same_identity() {
        for lib in [
            Library::new(
                "vs",
                SourceKind::Glsl,
                Some(ShaderStage::Vertex),
                b"void main(){}".to_vec(),
                Some("a/b.vert".into()),
            ),
            Library::wgsl("w", "@compute @workgroup_size(1) fn main() {}"),
            Library::spirv("s", vec![3, 2, 0x23, 7, 0, 0]),
        ] {
            let back = decode_library(&encode_library(&lib)).unwrap();
            assert_eq!(back.hash(), lib.hash());
            assert_eq!(back.name(), lib.name());
            assert_eq!(back.origin(), lib.origin());
            assert_eq!(back.source(), lib.source());
        }
        assert!(decode_library(&[0, 255, 9, 0, 0, 0]).is_none());
        assert!(decode_library(&[7]).is_none());
    }

    #[test]
    fn messages_are_read_back_and_end_cleanly() {
        let mut bytes = message_header(MSG_COMPILE, 8);
        bytes.extend_from_slice(&5u64.to_le_bytes());
        let mut r = &bytes[..];
        assert_eq!(read_message(&mut r).unwrap(), Some((MSG_COMPILE, 5u64.to_le_bytes().to_vec())));
        assert_eq!(read_message(&mut r).unwrap(), None);
        // A length that runs past the end is an error, not an allocation.
        let huge = message_header(MSG_SCRIPT, 1 << 40);
        assert!(read_message(&mut &huge[..]).is_err());
    }
}
