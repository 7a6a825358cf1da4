//! The `--isolate` wire protocol, both directions, in one place: the parent's messages and
//! the worker's answer frames (layout and framing), the payload encodings (libraries, answers
//! with lost targets), the largest answer each request may produce, and the checks an answer
//! must pass before the parent records it.
//!
//! # Parent → worker messages (the worker's standard input)
//!
//! Each message is a 16-byte header — `b"GP"`, tag `u8`, `u8` 0, `u32` 0, payload length
//! `u64` LE — and the payload:
//! - tag 0, *script*: the script text as the parent read it (UTF-8). Sent once, first.
//!   `SCRIPT` on the command line only names it in messages; the worker reads no file.
//! - tag 1, *library*: one library the next request needs, sent once per worker before the
//!   first request that uses it: `u8` kind (0 WGSL, 1 GLSL, 2 SPIR-V), `u8` GLSL stage
//!   (the stage's stored number, `ShaderStage as u8`, or 255 none), `u32` LE name length, the name (UTF-8),
//!   `u32` LE origin length, the origin path (UTF-8; empty: none), then the source bytes to
//!   the end of the payload. These are the bytes the parent read, so the worker compiles
//!   exactly what the parent planned, whatever happens to the files meanwhile.
//! - tag 2, *compile*: `u64` LE pipeline index into the script's `pipelines`; for a variant of
//!   a pipeline the script's `expand_unspecialized` replaced, three `u64` LE: the variant's
//!   harvest index (numbered after the script's pipelines), the script index of the pipeline
//!   it came from, and its place among that pipeline's variants (the worker expands the
//!   pipeline itself; the answer is checked against the parent's variant).
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
//! Tag 4 answers a pipeline one of whose stages has a specialization (the
//! `VkSpecializationInfo` a SPIR-V output is created with): `u64` LE archive length, the
//! one-entry archive, `u32` LE stage count, per stage `u32` LE length and the encoded
//! `Specialization` (length 0: none), then the lost targets as in tag 2 (`[]` when none).
//! The blobs travel beside the archive so the answer does not depend on the archive's stage
//! records carrying them; where the archive's entry has one too, both must be equal. The
//! parent accepts exactly the specialization the request implies: a native stage's own
//! (byte for byte; none when it has no map entries), none for a stage without constants or
//! of a WGSL/GLSL library, and for constants on a SPIR-V library one entry per constant, 4
//! bytes each, inside the data, with each `@id` constant's own id and value.
//!
//! The parent trusts none of it: it caps each payload length by what the request can produce
//! before reading it (a tag-3 cache only between requests, at most 256 MiB, kept only if its
//! header names the harvest's device), checks that the answer is for the pipeline asked (index, key, stage
//! keys, labels, targets), and kills a worker that breaks the protocol (see `isolate.rs`).
//!
//! Invariants: no reader allocates from an announced length (payloads grow as bytes arrive);
//! an answer's length is checked against its cap before any payload byte is read; an answer
//! is accepted only for exactly the pipeline asked.

use super::report::Failure;
use crate::archive::{Archive, WriteEntry};
use crate::compiler::LostTarget;
use crate::descriptor::{
    Blob, ConstantId, KeyContext, Library, PipelineDescriptor, PipelineEntry, ShaderStage, SourceKind, TargetSet,
};
use crate::frontend::{ShaderError, ShaderErrorKind};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

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
/// Message tag: the script text.
pub(crate) const MSG_SCRIPT: u8 = 0;
/// Message tag: one library.
pub(crate) const MSG_LIBRARY: u8 = 1;
/// Message tag: compile one pipeline.
pub(crate) const MSG_COMPILE: u8 = 2;

/// Answer tag: compiled (a one-entry archive).
pub(crate) const ANSWER_COMPILED: u8 = 0;
/// Answer tag: failed (a [`Failure`] as JSON).
pub(crate) const ANSWER_FAILED: u8 = 1;
/// Answer tag: compiled with lost targets (archive length, archive, lost targets as JSON).
pub(crate) const ANSWER_LOST_TARGETS: u8 = 2;
/// Answer tag: a retiring worker's pipeline-cache data (only between requests).
pub(crate) const ANSWER_CACHE: u8 = 3;
/// Answer tag: compiled with stage specializations (archive, specializations, lost targets).
pub(crate) const ANSWER_SPECIALIZED: u8 = 4;

/// The tag and payload answering a compiled pipeline: `archive` is the one-entry archive of
/// `entry`, `lost` its lost targets. Tag 0 for the plain case, 2 with lost targets, 4 when a
/// stage has a specialization.
pub(crate) fn compiled_answer(archive: Vec<u8>, entry: &PipelineEntry, lost: &[LostTarget]) -> (u8, Vec<u8>) {
    if entry.stages.iter().all(|s| s.specialization.is_none()) {
        return if lost.is_empty() {
            (ANSWER_COMPILED, archive)
        } else {
            (ANSWER_LOST_TARGETS, encode_lost_answer(&archive, lost))
        };
    }
    let wire: Vec<WireLost> = lost.iter().map(WireLost::from_lost).collect();
    let json = serde_json::to_vec(&wire).unwrap_or_else(|_| b"[]".to_vec());
    let mut out = Vec::with_capacity(archive.len() + json.len() + 64);
    out.extend_from_slice(&(archive.len() as u64).to_le_bytes());
    out.extend_from_slice(&archive);
    out.extend_from_slice(&(entry.stages.len() as u32).to_le_bytes());
    for s in &entry.stages {
        let bytes = s.specialization.as_ref().map_or(&[][..], |b| b.bytes());
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&json);
    (ANSWER_SPECIALIZED, out)
}

/// The specialization blobs of an answer, per stage (`None`: none).
type WireSpecializations = Vec<Option<Vec<u8>>>;

/// Splits a tag-4 payload into the archive bytes, the stages' specializations and the lost
/// targets; `None` if malformed.
pub(crate) fn decode_specialized_answer(p: &[u8]) -> Option<(&[u8], WireSpecializations, Vec<LostTarget>)> {
    let n = usize::try_from(u64::from_le_bytes(p.get(..8)?.try_into().ok()?)).ok()?;
    let mut at = 8usize.checked_add(n)?;
    let archive = p.get(8..at)?;
    let word = |at: &mut usize| -> Option<usize> {
        let w = u32::from_le_bytes(p.get(*at..at.checked_add(4)?)?.try_into().ok()?) as usize;
        *at += 4;
        Some(w)
    };
    let stages = word(&mut at)?;
    // No allocation from the announced count: each stage takes at least 4 payload bytes.
    let mut specs = Vec::new();
    for _ in 0..stages {
        let len = word(&mut at)?;
        let bytes = p.get(at..at.checked_add(len)?)?;
        at += len;
        specs.push((len != 0).then(|| bytes.to_vec()));
    }
    let wire: Vec<WireLost> = serde_json::from_slice(p.get(at..)?).ok()?;
    let lost = wire.into_iter().map(WireLost::into_lost).collect::<Option<Vec<_>>>()?;
    Some((archive, specs, lost))
}

/// The first eight bytes both headers share: `magic`, `tag`, then zeros to an 8-byte
/// boundary; `capacity` is the whole header's size.
fn header_start(capacity: usize, magic: &[u8; 2], tag: u8) -> Vec<u8> {
    let mut h = Vec::with_capacity(capacity);
    h.extend_from_slice(magic);
    h.push(tag);
    h.push(0);
    h.extend_from_slice(&[0; 4]);
    h
}

/// A parent → worker message: header and payload.
pub(crate) fn message_header(tag: u8, len: usize) -> Vec<u8> {
    let mut h = header_start(MESSAGE_HEADER, b"GP", tag);
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
        Some(s) => s as u8,
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
        255 => None,
        &s => Some(ShaderStage::from_u32(u32::from(s))?),
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
pub(crate) fn read_message(input: &mut impl Read) -> std::io::Result<Option<(u8, Vec<u8>)>> {
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

/// The header of a worker → parent frame: `tag` answering pipeline `index`, this process's
/// resident memory, and a payload of `len` bytes.
pub(crate) fn frame_header(tag: u8, index: usize, len: u64) -> Vec<u8> {
    let mut f = header_start(FRAME_HEADER, b"GW", tag);
    f.extend_from_slice(&(index as u64).to_le_bytes());
    f.extend_from_slice(&crate::measure::current_rss_bytes().to_le_bytes());
    f.extend_from_slice(&len.to_le_bytes());
    f
}

/// The largest pipeline-cache payload a retiring worker may send.
pub const CACHE_CAP: u64 = 256 << 20;
/// The largest failure answer (JSON) accepted.
pub const FAILURE_CAP: u64 = 1 << 20;
/// Fixed allowance of an answer archive: header, sections, label, entry-point names.
pub const ANSWER_OVERHEAD: u64 = 1 << 20;
/// Allowance per stage and target besides the output itself (its entry-point name and record).
pub const STAGE_TARGET_OVERHEAD: u64 = 256 << 10;
/// Allowance for a pipeline's driver binaries in a worker's answer (a device backend only):
/// NVIDIA's sets measure 8–200 KB (a dictionary binary included); this is far above that.
pub const BINARY_ALLOWANCE: u64 = 32 << 20;

/// Allowance per stage for its specialization in a tag-4 answer, besides a native stage's
/// own bytes: a portable stage's has 16 bytes per constant plus its header.
pub const SPECIALIZATION_OVERHEAD: u64 = 64;

/// The largest compiled answer pipeline `desc` can produce for `targets`, derived from what an
/// honest worker may write, the limit the in-process harvest applies too: [`ANSWER_OVERHEAD`] +
/// Σ over its stages of (the larger of [`MAX_OUTPUT_BYTES`](crate::frontend::MAX_OUTPUT_BYTES)
/// and its library's source bytes — a SPIR-V library passes through whole — +
/// [`STAGE_TARGET_OVERHEAD`]) × number of targets + its specialization (a native stage's encoded
/// bytes, or 16 bytes per constant, plus [`SPECIALIZATION_OVERHEAD`]). The frame reader never
/// allocates from an announced length, so a large bound costs memory only as bytes arrive.
pub fn answer_cap(desc: &PipelineDescriptor, targets: TargetSet) -> u64 {
    let n = targets.iter().count() as u64;
    let stages = desc.stages();
    stages.iter().enumerate().fold(ANSWER_OVERHEAD, |cap, (i, (_, f))| {
        let source = f.base().0.source().len() as u64;
        let spec = match native_specialization(desc, i) {
            Some(s) => s.map_or(0, |s| s.encode().len() as u64),
            None => 16 * f.resolved_constants().len() as u64,
        };
        let output = source.max(crate::frontend::MAX_OUTPUT_BYTES);
        cap.saturating_add(output.saturating_add(STAGE_TARGET_OVERHEAD).saturating_mul(n))
            .saturating_add(spec + SPECIALIZATION_OVERHEAD)
    })
}

/// For a native pipeline, stage `i`'s specialization as the request gives it (`Some(None)`:
/// none); `None` for a portable pipeline.
fn native_specialization(
    desc: &PipelineDescriptor,
    i: usize,
) -> Option<Option<&granary_archive::native::Specialization>> {
    match desc {
        PipelineDescriptor::Native(n) => Some(n.stages.get(i).and_then(|s| s.specialization.as_deref())),
        _ => None,
    }
}

/// One worker → parent frame, as read (its payload within the cap the request set).
pub(crate) struct Frame {
    /// The answer tag.
    pub tag: u8,
    /// The pipeline index answered.
    pub index: u64,
    /// The worker's resident memory as it reports it.
    pub rss: u64,
    /// The payload.
    pub payload: Vec<u8>,
}

/// Reads frames from a worker's answer stream into `tx` until it ends or breaks the framing;
/// `cap` holds the largest payload the request in flight may answer with (0: none in flight).
pub(crate) fn read_frames(mut out: impl Read, cap: Arc<AtomicU64>, tx: mpsc::Sender<Result<Frame, String>>) {
    loop {
        let mut h = [0u8; FRAME_HEADER];
        if out.read_exact(&mut h).is_err() {
            return; // EOF: the worker exited or died
        }
        let word = |i: usize| u64::from_le_bytes(h[8 + 8 * i..16 + 8 * i].try_into().unwrap_or([0; 8]));
        if &h[..2] != b"GW" || h[2] > ANSWER_SPECIALIZED {
            let _ = tx.send(Err("worker sent a malformed frame header".into()));
            return;
        }
        let (tag, len) = (h[2], word(2));
        let in_flight = cap.load(Ordering::SeqCst);
        let limit = match tag {
            // A retiring worker's pipeline cache: only between requests.
            3 if in_flight == 0 => CACHE_CAP,
            _ if in_flight == 0 => 0,
            3 => 0,
            0 => in_flight,
            // The entry, its length and the lost targets' messages (and, for tag 4, the
            // specializations, which the request's cap includes).
            2 | 4 => in_flight.saturating_add(8 + FAILURE_CAP),
            _ => FAILURE_CAP,
        };
        if len > limit {
            let what = if in_flight == 0 {
                "no request was in flight".to_string()
            } else {
                format!("this request can produce at most {limit} bytes")
            };
            let _ = tx.send(Err(format!("worker announced a {len}-byte answer, but {what}")));
            return;
        }
        // No allocation from the announced length: the payload grows as bytes arrive.
        let mut payload = Vec::new();
        if (&mut out).take(len).read_to_end(&mut payload).is_err() || payload.len() as u64 != len {
            return;
        }
        let f = Frame { tag, index: word(0), rss: word(1), payload };
        if tx.send(Ok(f)).is_err() {
            return;
        }
    }
}

/// Whether `data` starts with a `VkPipelineCacheHeaderVersionOne` for `device`: header size
/// at least 32, version 1, and the device's vendor id, device id and `pipelineCacheUUID`.
pub(crate) fn cache_header_matches(data: &[u8], device: &granary_archive::DeviceIdentity) -> bool {
    let word = |i: usize| data.get(i..i + 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes);
    word(0).is_some_and(|n| n >= 32)
        && word(4) == Some(1)
        && word(8) == Some(device.vendor_id)
        && word(12) == Some(device.device_id)
        && data.get(16..32) == Some(&device.pipeline_cache_uuid[..])
}

/// An answer that passed [`check_answer`].
pub(crate) enum CheckedAnswer {
    /// The pipeline failed in the worker (phase and pipeline checked).
    Failed(Box<Failure>),
    /// The pipeline's one entry, the targets it has and the targets it lost.
    Compiled {
        /// The answer's entries (exactly one).
        entries: Vec<WriteEntry>,
        /// The targets the pipeline has (never empty).
        targets: TargetSet,
        /// The targets its stage functions lost.
        lost: Vec<LostTarget>,
    },
}

/// Checks an answer `frame` against the request for pipeline `index` (named `name`,
/// descriptor `desc`) under `ctx` and `targets`, with driver binaries for `device` (none for
/// the `none` backend); `Err` says how it is wrong.
pub(crate) fn check_answer(
    frame: Frame,
    index: usize,
    name: &str,
    desc: &PipelineDescriptor,
    ctx: &KeyContext,
    targets: TargetSet,
    device: Option<&granary_archive::DeviceIdentity>,
) -> Result<CheckedAnswer, String> {
    if frame.index != index as u64 {
        return Err(format!(
            "worker answered the request for pipeline {index} with an answer for pipeline {}",
            frame.index
        ));
    }
    if frame.tag == ANSWER_CACHE {
        return Err("worker sent its pipeline cache instead of an answer".into());
    }
    if frame.tag == ANSWER_FAILED {
        let f: Failure =
            serde_json::from_slice(&frame.payload).map_err(|e| format!("unreadable failure from worker: {e}"))?;
        if f.index != index || f.pipeline != name {
            return Err(format!("worker answered with a failure of pipeline {} '{}'", f.index, f.pipeline));
        }
        if !["shader", "link", "panic", "script", "targets", "device"].contains(&f.phase.as_str()) {
            return Err(format!("worker answered with a failure of unknown phase '{}'", f.phase));
        }
        return Ok(CheckedAnswer::Failed(Box::new(Failure { script_position: None, ..f })));
    }
    let (bytes, lost, specs) = if frame.tag == ANSWER_LOST_TARGETS {
        let (a, lost) =
            decode_lost_answer(&frame.payload).ok_or("worker answered with a malformed lost-target answer")?;
        if lost.is_empty() {
            return Err("worker answered with lost targets but named none".into());
        }
        (a.to_vec(), lost, None)
    } else if frame.tag == ANSWER_SPECIALIZED {
        let (a, specs, lost) =
            decode_specialized_answer(&frame.payload).ok_or("worker answered with a malformed specialized answer")?;
        if specs.iter().all(Option::is_none) {
            return Err("worker answered with specializations but gave none".into());
        }
        (a.to_vec(), lost, Some(specs))
    } else {
        (frame.payload, Vec::new(), None)
    };
    // What each stage may lack: exactly the targets declared lost for it.
    let lost_bits = |stage: crate::descriptor::ShaderStage| {
        lost.iter().filter(|l| l.stage == stage).filter_map(|l| l.error.target).fold(0u32, |b, t| b | 1 << t as u32)
    };
    let archive = Archive::from_bytes(bytes).map_err(|e| format!("worker answer is damaged: {e}"))?;
    archive.verify().map_err(|e| format!("worker answer is damaged: {e}"))?;
    if archive.key_context() != *ctx {
        return Err("worker answered under different writer options".into());
    }
    let all_lost = desc.stages().iter().fold(0u32, |b, (stage, _)| b | lost_bits(*stage));
    if archive.targets().0 & !targets.0 != 0 || archive.targets().0 | all_lost != targets.0 {
        return Err(format!(
            "worker answered with targets {} instead of {}",
            archive.targets().names(),
            targets.names()
        ));
    }
    let mut entries = archive.entries().map_err(|e| format!("worker answer is damaged: {e}"))?;
    let [entry] = &mut entries[..] else {
        return Err(format!("worker answered with {} entries instead of one", entries.len()));
    };
    if let Some(specs) = specs {
        entry.entry = Arc::new(with_specializations(&entry.entry, specs)?);
    }
    let expected_key = desc.key(ctx);
    let expected_labels: Vec<&str> = desc.label().into_iter().collect();
    let labels: Vec<&str> = entry.labels.iter().map(String::as_str).collect();
    if entry.entry.key != expected_key || labels != expected_labels {
        return Err(format!(
                "worker answered with another pipeline's entry (key {:032x}, labels {labels:?}; expected key {:032x}, labels {expected_labels:?})",
                entry.entry.key.0, expected_key.0
            ));
    }
    let has = check_stages(&entry.entry, desc, ctx, targets, &lost)?;
    check_specializations(&entry.entry, desc)?;
    check_binaries(&entry.binaries, device, desc)?;
    Ok(CheckedAnswer::Compiled { entries, targets: has, lost })
}

/// Checks an answered entry's driver binaries: exactly one set, for the parent's device, when
/// a device backend is in use (non-empty where the device has pipeline binaries, empty where
/// it keeps cache data only, marked as a library exactly when the pipeline needs one), none
/// otherwise. Sets of one pipeline differ from compile to compile, so the bytes themselves are
/// not compared with anything; the archive's checksums already covered them.
pub(crate) fn check_binaries(
    binaries: &[granary_archive::DeviceBinaries],
    device: Option<&granary_archive::DeviceIdentity>,
    desc: &PipelineDescriptor,
) -> Result<(), String> {
    match (device, binaries) {
        (None, []) => Ok(()),
        (None, _) => Err("worker answered with driver binaries, but no device backend is in use".into()),
        (Some(d), [b]) => {
            if *b.device != *d {
                let why = b.device.mismatch(d).unwrap_or_default();
                return Err(format!("worker answered with binaries for another device ({why})"));
            }
            b.set.check().map_err(|e| format!("worker answered with a malformed binary set: {e}"))?;
            let wants_binaries = !d.binary_global_key.is_empty();
            if wants_binaries == b.set.binaries.is_empty() {
                return Err(format!(
                    "worker answered with {} binaries on a device that {}",
                    b.set.binaries.len(),
                    if wants_binaries { "captures pipeline binaries" } else { "keeps pipeline-cache data only" }
                ));
            }
            let library = b.set.flags & granary_archive::BINARY_SET_LIBRARY != 0;
            if library != desc.needs_libraries() {
                return Err(format!(
                    "worker answered with a {} where the pipeline needs a {}",
                    if library { "pipeline library" } else { "whole pipeline" },
                    if library { "whole pipeline" } else { "pipeline library" }
                ));
            }
            Ok(())
        }
        (Some(_), _) => Err(format!("worker answered with {} binary sets instead of one", binaries.len())),
    }
}

/// Checks an answered entry's stages against the pipeline asked: same kind, stages and stage
/// keys, and an output for every requested target of every stage except exactly the targets
/// `lost` declares lost for any stage (each naming one of the pipeline's functions; a target
/// one stage lost is in no stage); returns the targets the pipeline has (never empty).
pub(crate) fn check_stages(
    entry: &crate::descriptor::PipelineEntry,
    desc: &PipelineDescriptor,
    ctx: &KeyContext,
    targets: TargetSet,
    lost: &[crate::compiler::LostTarget],
) -> Result<TargetSet, String> {
    // A target any stage lost is lost for the whole pipeline (no stage keeps it:
    // `compiler::pipeline_entry`); every other requested target is in every stage.
    let lost_bits = lost.iter().filter_map(|l| l.error.target).fold(0u32, |b, t| b | 1 << t as u32);
    let stages = desc.stages();
    let keys = desc.stage_keys(ctx);
    let shape_ok = entry.kind == desc.kind()
        && entry.stages.len() == stages.len()
        && entry.stages.iter().zip(&stages).zip(&keys).all(|((got, (stage, _)), key)| {
            got.stage == *stage
                && got.key == *key
                && targets.iter().all(|t| {
                    let declared_lost = lost_bits & (1 << t as u32) != 0;
                    got.outputs.0[t as usize].is_some() != declared_lost
                })
        });
    if !shape_ok {
        return Err("worker answered with an entry whose stages do not match the pipeline".into());
    }
    if lost.iter().any(|l| l.error.target.is_none_or(|t| !targets.contains(t))) {
        return Err("worker declared a lost target that was not requested".into());
    }
    if lost.iter().any(|l| !stages.iter().any(|(s, f)| *s == l.stage && f.describe() == l.function)) {
        return Err("worker declared a lost target for a function the pipeline does not have".into());
    }
    let has = crate::compiler::entry_targets(entry, targets);
    if has.0 == 0 {
        return Err("worker answered with an entry that has no target left".into());
    }
    Ok(has)
}

/// `entry` with each stage's specialization taken from a tag-4 answer's `specs` (one per
/// stage). A specialization the archive's entry holds itself must equal the answer's.
fn with_specializations(entry: &PipelineEntry, specs: WireSpecializations) -> Result<PipelineEntry, String> {
    if specs.len() != entry.stages.len() {
        return Err(format!("worker answered with {} specializations for {} stages", specs.len(), entry.stages.len()));
    }
    let mut out = entry.clone();
    for (i, (s, spec)) in out.stages.iter_mut().zip(specs).enumerate() {
        let spec = spec.map(Blob::new);
        if s.specialization.is_some()
            && s.specialization.as_ref().map(|b| b.bytes()) != spec.as_ref().map(|b| b.bytes())
        {
            return Err(format!("worker answered with stage {i}'s specialization differing from its archive entry's"));
        }
        s.specialization = spec;
    }
    Ok(out)
}

/// Checks each stage's specialization against the request (the module documentation's
/// rule): a native stage's exactly, none where nothing specializes the stage, and for
/// constants on a SPIR-V library one 4-byte entry per constant, inside the data, each `@id`
/// constant at its own id with its own value.
pub(crate) fn check_specializations(entry: &PipelineEntry, desc: &PipelineDescriptor) -> Result<(), String> {
    use granary_archive::native::Specialization;
    for (i, (got, (stage, f))) in entry.stages.iter().zip(desc.stages()).enumerate() {
        let got_bytes = got.specialization.as_ref().map(|b| b.bytes());
        let wrong =
            |why: &str| Err(format!("worker answered with a wrong specialization for the {stage} stage: {why}"));
        match native_specialization(desc, i) {
            Some(want) => {
                let want = want.filter(|s| !s.map_entries.is_empty()).map(Specialization::encode);
                if got_bytes != want.as_deref() {
                    return wrong("not the stage's own VkSpecializationInfo");
                }
            }
            None => {
                let constants = f.resolved_constants();
                let spirv = f.base().0.kind() == SourceKind::Spirv;
                let Some(bytes) = got_bytes else {
                    if spirv && !constants.is_empty() {
                        return wrong("none for constants on a SPIR-V library");
                    }
                    continue;
                };
                if !spirv || constants.is_empty() {
                    return wrong("one where nothing specializes the stage");
                }
                let s = Specialization::decode(bytes)
                    .map_err(|e| format!("worker answered with a damaged specialization: {e}"))?;
                s.check()
                    .map_err(|e| format!("worker answered with a specialization that does not fit its data: {e}"))?;
                if s.map_entries.len() != constants.len() || s.map_entries.iter().any(|m| m.size != 4) {
                    return wrong("not one 4-byte entry per constant");
                }
                let value_at = |id: u32| {
                    let m = s.map_entries.iter().find(|m| m.constant_id == id)?;
                    s.data.get(m.offset as usize..m.offset as usize + 4)
                };
                for c in &constants {
                    if let ConstantId::Id(id) = c.id {
                        let want = crate::frontend::spirv::specialize::value_bytes(c.value);
                        if value_at(u32::from(id)) != Some(&want[..]) {
                            return wrong(&format!("constant {} is not given its value", c.id));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::{ComputePipelineDescriptor, FunctionDescriptor, Library, Target};

    #[test]
    fn an_answer_may_lack_exactly_the_targets_it_declares_lost() {
        // MSL has 16-bit floats under the default profile, GLSL has not.
        let src = "enable f16;\n@group(0) @binding(0) var<storage, read_write> buf: array<f32>;\n\
            @compute @workgroup_size(1) fn main() { let h: f16 = f16(buf[0]); buf[0] = f32(h * 2.0h); }\n";
        let desc = PipelineDescriptor::Compute(ComputePipelineDescriptor {
            label: None,
            compute: FunctionDescriptor::library(Library::wgsl("half", src), "main"),
            layout: None,
        });
        let targets = TargetSet::parse("msl,glsl").unwrap();
        let c = crate::compiler::Compiler::new(crate::compiler::CompilerOptions { targets, ..Default::default() });
        let o = c.compile_detailed(&desc).unwrap();
        let ctx = c.key_context();
        assert_eq!(o.lost.len(), 1);
        let has = check_stages(&o.entry, &desc, &ctx, targets, &o.lost).unwrap();
        assert_eq!(has, TargetSet::parse("msl").unwrap());
        // Not declared: refused.
        assert!(check_stages(&o.entry, &desc, &ctx, targets, &[]).is_err());
        // Declared lost but present (MSL), not requested (HLSL), or for another function.
        let mut other = o.lost.clone();
        other[0].error.target = Some(Target::Msl);
        other.push(o.lost[0].clone());
        assert!(check_stages(&o.entry, &desc, &ctx, targets, &other).is_err());
        let mut hlsl = o.lost.clone();
        hlsl.push(o.lost[0].clone());
        hlsl[1].error.target = Some(Target::Hlsl);
        assert!(check_stages(&o.entry, &desc, &ctx, targets, &hlsl).is_err());
        let mut renamed = o.lost.clone();
        renamed[0].function = "other:main".into();
        assert!(check_stages(&o.entry, &desc, &ctx, targets, &renamed).is_err());
    }

    fn one_stage_entry(stage: ShaderStage, key: crate::descriptor::StageKey, spec: Option<Vec<u8>>) -> PipelineEntry {
        PipelineEntry {
            key: crate::descriptor::PipelineKey(1),
            kind: crate::descriptor::PipelineKind::Compute,
            stages: vec![crate::descriptor::StageEntry {
                key,
                stage,
                entry_point: "main".into(),
                outputs: Default::default(),
                specialization: spec.map(Blob::new),
            }],
            layout: None,
            state: None,
        }
    }

    #[test]
    fn specializations_must_be_exactly_what_the_request_implies() {
        use crate::descriptor::{Constant, ConstantValue, NativePipelineDescriptor, NativeStage};
        use granary_archive::native::{NativePipeline, Specialization, SpecializationMapEntry, StageState};
        let ctx = KeyContext { target_options: 7 };
        let lib = Library::spirv("s", vec![3, 2, 0x23, 7]);
        let given = Specialization {
            map_entries: vec![SpecializationMapEntry { constant_id: 4, offset: 0, size: 4 }],
            data: 9u32.to_le_bytes().to_vec(),
        };
        let native = |spec: Option<Specialization>| {
            PipelineDescriptor::Native(NativePipelineDescriptor {
                label: None,
                stages: vec![NativeStage {
                    stage: ShaderStage::Compute,
                    function: FunctionDescriptor::library(lib.clone(), "main"),
                    specialization: spec.map(Arc::new),
                }],
                state: std::sync::Arc::new(NativePipeline {
                    stages: vec![StageState::default()],
                    ..Default::default()
                }),
            })
        };
        let desc = native(Some(given.clone()));
        let key = desc.stage_keys(&ctx)[0];
        let ok = one_stage_entry(ShaderStage::Compute, key, Some(given.encode()));
        check_specializations(&ok, &desc).unwrap();
        // Missing, changed, or given where the request has none (or only an empty one).
        assert!(check_specializations(&one_stage_entry(ShaderStage::Compute, key, None), &desc).is_err());
        let mut other = given.clone();
        other.data = 8u32.to_le_bytes().to_vec();
        assert!(
            check_specializations(&one_stage_entry(ShaderStage::Compute, key, Some(other.encode())), &desc).is_err()
        );
        assert!(check_specializations(&ok, &native(None)).is_err());
        let empty = Specialization::default();
        assert!(check_specializations(&ok, &native(Some(empty.clone()))).is_err());
        check_specializations(&one_stage_entry(ShaderStage::Compute, key, None), &native(Some(empty))).unwrap();

        // Portable constants on a SPIR-V library: one 4-byte entry each, ids and values kept.
        let portable = |lib: Arc<Library>, value: i32| {
            PipelineDescriptor::Compute(ComputePipelineDescriptor {
                label: None,
                compute: FunctionDescriptor::library(lib, "main")
                    .specialized(vec![Constant { id: ConstantId::Id(4), value: ConstantValue::I32(value) }]),
                layout: None,
            })
        };
        let spec = |v: i32| Specialization {
            map_entries: vec![SpecializationMapEntry { constant_id: 4, offset: 0, size: 4 }],
            data: v.to_le_bytes().to_vec(),
        };
        let desc = portable(lib.clone(), -3);
        let key = desc.stage_keys(&ctx)[0];
        check_specializations(&one_stage_entry(ShaderStage::Compute, key, Some(spec(-3).encode())), &desc).unwrap();
        assert!(
            check_specializations(&one_stage_entry(ShaderStage::Compute, key, Some(spec(3).encode())), &desc).is_err()
        );
        assert!(check_specializations(&one_stage_entry(ShaderStage::Compute, key, None), &desc).is_err());
        assert!(check_specializations(&one_stage_entry(ShaderStage::Compute, key, Some(vec![1, 2, 3])), &desc).is_err());
        // naga applies a WGSL library's constants: no specialization.
        let wgsl = portable(Library::wgsl("w", "x"), -3);
        assert!(
            check_specializations(&one_stage_entry(ShaderStage::Compute, key, Some(spec(-3).encode())), &wgsl).is_err()
        );
        check_specializations(&one_stage_entry(ShaderStage::Compute, key, None), &wgsl).unwrap();
    }

    #[test]
    fn specialized_answers_round_trip_and_must_agree_with_the_archive() {
        let key = crate::descriptor::StageKey(5);
        let spec = vec![b'G', b'S', b'P', b'1', 0, 0, 0, 0];
        let entry = one_stage_entry(ShaderStage::Compute, key, Some(spec.clone()));
        let (tag, payload) = compiled_answer(b"ARCHIVE".to_vec(), &entry, &[]);
        assert_eq!(tag, ANSWER_SPECIALIZED);
        let (archive, specs, lost) = decode_specialized_answer(&payload).expect("round trip");
        assert_eq!((archive, &specs[..], lost.len()), (&b"ARCHIVE"[..], &[Some(spec.clone())][..], 0));
        assert!(decode_specialized_answer(&payload[..payload.len() - 1]).is_none());
        let mut long = payload.clone();
        long[15..19].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_specialized_answer(&long).is_none());
        // Without specializations the answer keeps its old tags.
        let plain = one_stage_entry(ShaderStage::Compute, key, None);
        assert_eq!(compiled_answer(b"A".to_vec(), &plain, &[]).0, ANSWER_COMPILED);
        // The answer's blobs fill the entry; one the archive holds must be the same.
        let filled = with_specializations(&plain, specs.clone()).unwrap();
        assert_eq!(filled.stages[0].specialization.as_ref().map(|b| b.bytes().to_vec()), Some(spec.clone()));
        with_specializations(&entry, specs).unwrap();
        assert!(with_specializations(&entry, vec![Some(vec![1])]).is_err());
        assert!(with_specializations(&plain, vec![]).is_err());
    }

    #[test]
    fn the_answer_cap_admits_every_output_the_in_process_harvest_keeps() {
        use crate::frontend::MAX_OUTPUT_BYTES;
        let desc = |source: String| {
            PipelineDescriptor::Compute(ComputePipelineDescriptor {
                label: None,
                compute: FunctionDescriptor::library(Library::wgsl("l", source), "main".to_string()),
                layout: None,
            })
        };
        let small = desc("x".repeat(1000));
        let one = answer_cap(&small, TargetSet::parse("spirv").unwrap());
        let all = answer_cap(&small, TargetSet::parse("spirv,msl,hlsl,glsl").unwrap());
        // Each stage also has room for its specialization (none here: no constants).
        assert_eq!(one, ANSWER_OVERHEAD + MAX_OUTPUT_BYTES + STAGE_TARGET_OVERHEAD + SPECIALIZATION_OVERHEAD);
        assert_eq!(all, ANSWER_OVERHEAD + 4 * (MAX_OUTPUT_BYTES + STAGE_TARGET_OVERHEAD) + SPECIALIZATION_OVERHEAD);
        // A source larger than the output limit (a SPIR-V library passes through whole).
        let huge = 300 << 20;
        let big = answer_cap(&desc("x".repeat(huge as usize)), TargetSet::parse("spirv").unwrap());
        assert_eq!(big, ANSWER_OVERHEAD + huge + STAGE_TARGET_OVERHEAD + SPECIALIZATION_OVERHEAD);
    }
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
