//! Use records: what an application's pipelines were at run time, so the next harvest can add
//! what the archive missed and warm up in the order the game first used them (docs/FORMAT.md
//! §6). A [`Recorder`] is what the game leaves on; [`read_record`] is what
//! `granary harvest --add-recorded` reads.
//!
//! The file: a 32-byte header (magic, version, header length, checksum) written once, then
//! frames back to back, each `payload length u32 | kind u8 | 3 zero bytes | xxh3-64 of the
//! payload u64 | payload`. The events ([`Event`]): a pipeline created from the archive
//! (`Used`), one requested that the archive does not hold (`Missed`), an application create
//! info the archive does not hold, described in full (`Described`, with the SPIR-V of its
//! modules in `Module` frames written before it).
//!
//! Invariants:
//! - The calling thread only encodes and queues (the queue's mutex taken briefly twice: a
//!   hash-set check, then the insert and a copy into a buffer; a repeat stops after the check); a background thread appends the queue to the file and `fdatasync`s it every
//!   [`RecorderOptions::flush_interval`], on [`Recorder::flush`] and on drop. A crash loses at
//!   most what was queued since the last flush.
//! - An event is recorded once per recorder: a key used a thousand times is one `Used` frame
//!   (a key both missed and later described keeps both); a module once per content hash.
//! - Reading stops at the first frame that is cut short or fails its checksum (a process
//!   killed mid-append): everything before it is returned, the rest is reported
//!   ([`RecordRead::damaged_tail`]). Opening an existing record to append cuts it back to its
//!   last intact frame first, so new frames never follow a damaged tail.
//! - Frames of a kind this build does not know are skipped and counted (a newer writer), never
//!   an error; a file whose magic or version differs is an error, and is never appended to.

use crate::key::{checksum64, ContentHash, PipelineKey};
use crate::native::spirv_library_hash;
use crate::native::{NativePipeline, Specialization};
use crate::types::ShaderStage;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Record file magic.
pub const RECORD_MAGIC: [u8; 8] = *b"GRNRECD\0";
/// Record format version this build writes and reads.
pub const RECORD_VERSION: u32 = 1;
/// Bytes of the record header.
pub const RECORD_HEADER_LEN: usize = 32;
/// Bytes of a frame before its payload.
pub const RECORD_FRAME_LEN: usize = 16;
/// The largest payload a frame may say it has (a SPIR-V module larger than this is not
/// recorded): a damaged length never makes the reader allocate more.
pub const MAX_RECORD_PAYLOAD: u32 = 256 << 20;

const KIND_USED: u8 = 1;
const KIND_MISSED: u8 = 2;
const KIND_MODULE: u8 = 3;
const KIND_DESCRIBED: u8 = 4;

/// One stage of a [`Event::Described`] pipeline: the SPIR-V library (by content hash, whose
/// bytes a `Module` frame carries), entry point and specialization, as in the application's
/// `VkPipelineShaderStageCreateInfo`.
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedStage {
    /// The stage.
    pub stage: ShaderStage,
    /// [`spirv_library_hash`] of its SPIR-V.
    pub library: ContentHash,
    /// `pName`.
    pub entry: String,
    /// `pSpecializationInfo`, by value.
    pub specialization: Option<Specialization>,
}

/// What a record holds, in the order it happened (first use only).
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // read once per record file, never stored in bulk
#[non_exhaustive] // a later format version may record more kinds
pub enum Event {
    /// A pipeline the application created from the archive: its key, and the label it asked
    /// for it by where it asked by label.
    Used {
        /// The archive's key of the pipeline.
        key: PipelineKey,
        /// The label asked for, if the request was by label.
        label: Option<String>,
    },
    /// A pipeline asked for that the archive does not hold (by key or by label).
    Missed {
        /// The key asked for, if the request was by key.
        key: Option<PipelineKey>,
        /// The label asked for, if the request was by label.
        label: Option<String>,
    },
    /// The SPIR-V of a module a later `Described` stage uses.
    Module {
        /// [`spirv_library_hash`] of `spirv` (checked when read).
        hash: ContentHash,
        /// The module's bytes, as the application gave them to Vulkan.
        spirv: Vec<u8>,
    },
    /// An application create info the archive does not hold, in granary's native form: enough
    /// for a harvest to add it (`granary harvest --add-recorded`).
    Described {
        /// Its key, under the archive's key context (what a harvest of it archives it under).
        key: PipelineKey,
        /// Its stages, in `pStages` order.
        stages: Vec<RecordedStage>,
        /// Everything else its create info says.
        state: NativePipeline,
    },
}

/// Why a record could not be read or appended to. (`Display` and `Error` by hand: this crate
/// keeps `thiserror` out of what a game links.)
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordError {
    /// The file could not be read or written.
    Io {
        /// The record file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not a granary record of this version (nothing read, never appended to).
    NotARecord {
        /// The record file.
        path: PathBuf,
        /// What is wrong with its header.
        why: String,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            RecordError::NotARecord { path, why } => {
                write!(f, "{}: not a granary use record (version {RECORD_VERSION}): {why}", path.display())
            }
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Io { source, .. } => Some(source),
            RecordError::NotARecord { .. } => None,
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io { path: path.to_path_buf(), source }
}

/// The part of a record that reading ignored.
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTail {
    /// Offset of the first byte ignored.
    pub offset: u64,
    /// Bytes ignored (to the end of the file).
    pub bytes: u64,
    /// What was wrong there.
    pub why: String,
}

impl std::fmt::Display for RecordTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ignored {} bytes from offset {:#x}: {}", self.bytes, self.offset, self.why)
    }
}

/// What [`read_record`] read.
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRead {
    /// The record file.
    pub path: PathBuf,
    /// The intact frames' events, in file order.
    pub events: Vec<Event>,
    /// Frames of kinds this build does not know, skipped.
    pub unknown_frames: usize,
    /// Length of the header and the intact frames: where the next append belongs.
    pub valid_len: u64,
    /// What was ignored after the intact frames, if anything.
    pub damaged_tail: Option<RecordTail>,
}

fn header() -> [u8; RECORD_HEADER_LEN] {
    let mut h = [0u8; RECORD_HEADER_LEN];
    h[..8].copy_from_slice(&RECORD_MAGIC);
    h[8..12].copy_from_slice(&RECORD_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(RECORD_HEADER_LEN as u32).to_le_bytes());
    let c = checksum64(&h[..24]);
    h[24..32].copy_from_slice(&c.to_le_bytes());
    h
}

/// Reads the record at `path`. A torn or damaged tail is not an error (see
/// [`RecordRead::damaged_tail`]); a file that is not a record of this version is.
pub fn read_record(path: &Path) -> Result<RecordRead, RecordError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    read_record_bytes(&bytes, path)
}

/// [`read_record`] of bytes already in memory (`path` names them in errors).
pub fn read_record_bytes(b: &[u8], path: &Path) -> Result<RecordRead, RecordError> {
    let not = |why: String| RecordError::NotARecord { path: path.to_path_buf(), why };
    let mut out = RecordRead {
        path: path.to_path_buf(),
        events: Vec::new(),
        unknown_frames: 0,
        valid_len: 0,
        damaged_tail: None,
    };
    let len = b.len() as u64;
    if b.len() >= 8 && b[..8] != RECORD_MAGIC {
        return Err(not("bad magic".into()));
    }
    if b.len() < RECORD_HEADER_LEN {
        out.damaged_tail = Some(RecordTail { offset: 0, bytes: len, why: "header cut short".into() });
        return Ok(out);
    }
    let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    if version != RECORD_VERSION {
        return Err(not(format!("format version {version}")));
    }
    if checksum64(&b[..24]).to_le_bytes() != b[24..32] {
        out.damaged_tail = Some(RecordTail { offset: 0, bytes: len, why: "header checksum mismatch".into() });
        return Ok(out);
    }
    let mut at = RECORD_HEADER_LEN;
    out.valid_len = at as u64;
    let tail = |at: usize, why: String| Some(RecordTail { offset: at as u64, bytes: len - at as u64, why });
    while at < b.len() {
        let Some(frame) = b.get(at..at + RECORD_FRAME_LEN) else {
            out.damaged_tail = tail(at, "frame cut short".into());
            break;
        };
        let payload_len = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let kind = frame[4];
        if frame[5..8] != [0, 0, 0] || payload_len > MAX_RECORD_PAYLOAD {
            out.damaged_tail = tail(at, "damaged frame".into());
            break;
        }
        let start = at + RECORD_FRAME_LEN;
        let Some(payload) = b.get(start..start + payload_len as usize) else {
            out.damaged_tail = tail(at, "payload cut short".into());
            break;
        };
        if checksum64(payload).to_le_bytes() != frame[8..16] {
            out.damaged_tail = tail(at, "payload checksum mismatch".into());
            break;
        }
        match decode(kind, payload) {
            Ok(Some(e)) => out.events.push(e),
            Ok(None) => out.unknown_frames += 1,
            Err(why) => {
                out.damaged_tail = tail(at, format!("frame of kind {kind}: {why}"));
                break;
            }
        }
        at = start + payload_len as usize;
        out.valid_len = at as u64;
    }
    Ok(out)
}

/// A cursor over a payload.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("payload too short".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u128(&mut self) -> Result<u128, String> {
        let mut a = [0u8; 16];
        a.copy_from_slice(self.take(16)?);
        Ok(u128::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
    }
    fn option<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<Option<T>, String> {
        match self.u8()? {
            0 => Ok(None),
            1 => f(self).map(Some),
            t => Err(format!("option tag {t}")),
        }
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    fn end(&self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes", self.0.len()))
        }
    }
}

fn decode(kind: u8, payload: &[u8]) -> Result<Option<Event>, String> {
    let mut c = Cursor(payload);
    let event = match kind {
        KIND_USED => {
            let key = PipelineKey(c.u128()?);
            let label = c.option(Cursor::string)?;
            Event::Used { key, label }
        }
        KIND_MISSED => {
            let key = c.option(|c| c.u128().map(PipelineKey))?;
            let label = c.option(Cursor::string)?;
            Event::Missed { key, label }
        }
        KIND_MODULE => {
            let hash = ContentHash(c.u128()?);
            let spirv = c.rest().to_vec();
            if spirv_library_hash(&spirv) != hash {
                return Err("the module's bytes do not have its content hash".into());
            }
            Event::Module { hash, spirv }
        }
        KIND_DESCRIBED => {
            let key = PipelineKey(c.u128()?);
            let count = c.u32()?;
            if count == 0 || count > crate::format::MAX_STAGES_PER_PIPELINE {
                return Err(format!("{count} stages"));
            }
            let mut stages = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let n = c.u32()?;
                let stage = ShaderStage::from_u32(n).ok_or_else(|| format!("stage {n}"))?;
                let library = ContentHash(c.u128()?);
                let entry = c.string()?;
                let specialization = c.option(|c| Specialization::decode(c.bytes()?).map_err(|e| e.to_string()))?;
                stages.push(RecordedStage { stage, library, entry, specialization });
            }
            let state = NativePipeline::decode(c.rest()).map_err(|e| e.to_string())?;
            Event::Described { key, stages, state }
        }
        _ => return Ok(None),
    };
    c.end()?;
    Ok(Some(event))
}

fn put_bytes(o: &mut Vec<u8>, b: &[u8]) {
    o.extend_from_slice(&(b.len() as u32).to_le_bytes());
    o.extend_from_slice(b);
}

fn put_option<T>(o: &mut Vec<u8>, v: Option<T>, f: impl FnOnce(&mut Vec<u8>, T)) {
    match v {
        None => o.push(0),
        Some(v) => {
            o.push(1);
            f(o, v);
        }
    }
}

/// The payload of `event` and its frame kind.
fn encode(event: &Event) -> (u8, Vec<u8>) {
    let mut o = Vec::new();
    let kind = match event {
        Event::Used { key, label } => {
            o.extend_from_slice(&key.to_le_bytes());
            put_option(&mut o, label.as_deref(), |o, l| put_bytes(o, l.as_bytes()));
            KIND_USED
        }
        Event::Missed { key, label } => {
            put_option(&mut o, *key, |o, k| o.extend_from_slice(&k.to_le_bytes()));
            put_option(&mut o, label.as_deref(), |o, l| put_bytes(o, l.as_bytes()));
            KIND_MISSED
        }
        Event::Module { hash, spirv } => {
            o.extend_from_slice(&hash.to_le_bytes());
            o.extend_from_slice(spirv);
            KIND_MODULE
        }
        Event::Described { key, stages, state } => {
            o.extend_from_slice(&key.to_le_bytes());
            o.extend_from_slice(&(stages.len() as u32).to_le_bytes());
            for s in stages {
                o.extend_from_slice(&(s.stage as u32).to_le_bytes());
                o.extend_from_slice(&s.library.to_le_bytes());
                put_bytes(&mut o, s.entry.as_bytes());
                put_option(&mut o, s.specialization.as_ref(), |o, sp| put_bytes(o, &sp.encode()));
            }
            o.extend_from_slice(&state.encode());
            KIND_DESCRIBED
        }
    };
    (kind, o)
}

/// `event` as a whole frame, or `None` past [`MAX_RECORD_PAYLOAD`].
fn frame(event: &Event) -> Option<Vec<u8>> {
    let (kind, payload) = encode(event);
    let len = u32::try_from(payload.len()).ok().filter(|l| *l <= MAX_RECORD_PAYLOAD)?;
    let mut f = Vec::with_capacity(RECORD_FRAME_LEN + payload.len());
    f.extend_from_slice(&len.to_le_bytes());
    f.extend_from_slice(&[kind, 0, 0, 0]);
    f.extend_from_slice(&checksum64(&payload).to_le_bytes());
    f.extend_from_slice(&payload);
    Some(f)
}

/// How a [`Recorder`] writes.
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Debug)]
pub struct RecorderOptions {
    /// How often the background thread appends what was queued and syncs the file (default
    /// 100 ms). A crash loses at most this much.
    pub flush_interval: Duration,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions { flush_interval: Duration::from_millis(100) }
    }
}

/// What a [`Recorder`] has done (a snapshot).
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Events queued (after de-duplication).
    pub events: u64,
    /// Events not recorded because an identical one already was.
    pub repeats: u64,
    /// Bytes appended to the file (header excluded).
    pub bytes_written: u64,
    /// Events given up: a payload past [`MAX_RECORD_PAYLOAD`], or a write that failed (the
    /// file is then left at its last intact frame and nothing more is written).
    pub dropped: u64,
}

#[derive(Default)]
struct Queue {
    /// Frames not yet appended.
    pending: Vec<u8>,
    /// Events already recorded: `(kind, key or hash, label hash)`.
    seen: HashSet<(u8, u128, u64)>,
    stats: RecorderStats,
    /// Set by drop: the writer appends what is left and stops.
    closing: bool,
    /// The first write error; nothing is written after it.
    failed: Option<String>,
}

struct Shared {
    path: PathBuf,
    queue: Mutex<Queue>,
    wake: Condvar,
    /// The file and its length at the last intact frame; one writer at a time.
    file: Mutex<(File, u64)>,
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends what is queued and syncs; a failed write is cut back off and stops the recorder.
    fn flush(&self) -> Result<(), RecordError> {
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = {
            let mut q = self.queue();
            if let Some(why) = &q.failed {
                return Err(RecordError::Io { path: self.path.clone(), source: std::io::Error::other(why.clone()) });
            }
            std::mem::take(&mut q.pending)
        };
        if bytes.is_empty() {
            return Ok(());
        }
        let (f, len) = &mut *file;
        let written = f.write_all(&bytes).and_then(|()| f.sync_data());
        match written {
            Ok(()) => {
                *len += bytes.len() as u64;
                self.queue().stats.bytes_written += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut the partial append off, so the file ends at a frame boundary.
                let _ = f.set_len(*len).and_then(|()| f.seek(SeekFrom::Start(*len)).map(drop));
                let mut q = self.queue();
                q.failed = Some(e.to_string());
                q.stats.dropped += frames_in(&bytes);
                Err(RecordError::Io { path: self.path.clone(), source: e })
            }
        }
    }
}

/// How many frames `bytes` (whole frames back to back) hold.
fn frames_in(mut bytes: &[u8]) -> u64 {
    let mut n = 0;
    while bytes.len() >= RECORD_FRAME_LEN {
        let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        bytes = bytes.get(RECORD_FRAME_LEN + len..).unwrap_or_default();
        n += 1;
    }
    n
}

/// The recorder a game leaves on: appends each pipeline it creates from the archive, each one
/// it asked for that the archive lacks, and each create info the archive does not hold, to an
/// append-only record file (docs/FORMAT.md §6), once each. Hand it to the loader
/// (`LoaderOptions::recorder`, feature `vulkan`) or call it yourself.
///
/// Thread safety: `Send + Sync`; every method takes `&self` and may run on any number of
/// threads at once. A recording call locks one mutex briefly for a hash-set check and, for a
/// new event, again to insert it and copy its encoded bytes (encoded between the two, no I/O);
/// a repeat costs the check alone. The recorder's own thread
/// does the writing. One recorder per file: two processes appending to one record file
/// interleave frames and are not supported.
pub struct Recorder {
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("path", &self.shared.path).field("stats", &self.stats()).finish()
    }
}

impl Recorder {
    /// Opens the record at `path` for appending, creating it (and syncing its folder) when it
    /// does not exist, and starts the writer thread. An existing record is cut back to its last
    /// intact frame; a file that is not a record of this version is refused and left as it is.
    pub fn open(path: &Path, options: RecorderOptions) -> Result<Recorder, RecordError> {
        let exists = path.exists();
        let (file, len) = if exists {
            let read = read_record(path)?;
            let file = OpenOptions::new().read(true).write(true).open(path).map_err(io(path))?;
            let mut len = read.valid_len;
            if len < RECORD_HEADER_LEN as u64 {
                // Cut short while being created: write the header again.
                file.set_len(0).map_err(io(path))?;
                (&file).write_all(&header()).map_err(io(path))?;
                len = RECORD_HEADER_LEN as u64;
            }
            file.set_len(len).map_err(io(path))?;
            file.sync_data().map_err(io(path))?;
            (file, len)
        } else {
            let mut file = OpenOptions::new().read(true).write(true).create_new(true).open(path).map_err(io(path))?;
            file.write_all(&header()).and_then(|()| file.sync_all()).map_err(io(path))?;
            sync_parent(path).map_err(io(path))?;
            (file, RECORD_HEADER_LEN as u64)
        };
        let mut file = file;
        file.seek(SeekFrom::Start(len)).map_err(io(path))?;
        let shared = Arc::new(Shared {
            path: path.to_path_buf(),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            file: Mutex::new((file, len)),
        });
        let s = Arc::clone(&shared);
        let interval = options.flush_interval;
        let writer = std::thread::Builder::new()
            .name("granary-recorder".into())
            .spawn(move || loop {
                let closing = {
                    let q = s.queue();
                    let (q, _) =
                        s.wake.wait_timeout_while(q, interval, |q| !q.closing).unwrap_or_else(PoisonError::into_inner);
                    q.closing
                };
                let _ = s.flush();
                if closing {
                    break;
                }
            })
            .map_err(io(path))?;
        Ok(Recorder { shared, writer: Some(writer) })
    }

    /// The record file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Queues `event` unless an identical one was recorded; whether it was queued.
    pub fn record(&self, event: &Event) -> bool {
        self.queue(identity(event), || frame(event))
    }

    /// Queues the frame `frame_of` encodes unless `id` was recorded: one lock to check, the
    /// event built and encoded outside it (a repeat costs only the check), one lock to queue.
    fn queue(&self, id: (u8, u128, u64), frame_of: impl FnOnce() -> Option<Vec<u8>>) -> bool {
        {
            let mut q = self.shared.queue();
            if q.seen.contains(&id) {
                q.stats.repeats += 1;
                return false;
            }
        }
        let Some(bytes) = frame_of() else {
            self.shared.queue().stats.dropped += 1;
            return false;
        };
        let mut q = self.shared.queue();
        if !q.seen.insert(id) {
            q.stats.repeats += 1;
            return false;
        }
        q.pending.extend_from_slice(&bytes);
        q.stats.events += 1;
        true
    }

    /// Records a pipeline created from the archive (`label`: the one asked for, if any).
    pub fn used(&self, key: PipelineKey, label: Option<&str>) -> bool {
        self.queue(used_id(key, label), || frame(&Event::Used { key, label: label.map(str::to_string) }))
    }

    /// Records a request the archive could not serve.
    pub fn missed(&self, key: Option<PipelineKey>, label: Option<&str>) -> bool {
        self.queue(missed_id(key, label), || frame(&Event::Missed { key, label: label.map(str::to_string) }))
    }

    /// Records a create info the archive does not hold: each stage's module (`spirv`, whose
    /// content hash is the stage's `library`) first, once per content hash, then the pipeline.
    /// `spirv` gives the bytes of each stage's module where known; a stage whose bytes are not
    /// given (and were not recorded before) leaves the pipeline undescribed, and a `Missed`
    /// by key is recorded instead. Whether anything new was queued.
    pub fn described(
        &self,
        key: PipelineKey,
        stages: Vec<RecordedStage>,
        state: NativePipeline,
        spirv: &[Option<&[u8]>],
    ) -> bool {
        if self.seen((KIND_DESCRIBED, key.0, 0)) {
            return false;
        }
        for (i, s) in stages.iter().enumerate() {
            let known = self.seen((KIND_MODULE, s.library.0, 0));
            match spirv.get(i).copied().flatten() {
                _ if known => {}
                Some(code) if spirv_library_hash(code) == s.library => {
                    let id = (KIND_MODULE, s.library.0, 0);
                    self.queue(id, || frame(&Event::Module { hash: s.library, spirv: code.to_vec() }));
                }
                _ => return self.missed(Some(key), None),
            }
        }
        self.record(&Event::Described { key, stages, state })
    }

    fn seen(&self, id: (u8, u128, u64)) -> bool {
        let mut q = self.shared.queue();
        let seen = q.seen.contains(&id);
        if seen && id.0 != KIND_MODULE {
            q.stats.repeats += 1;
        }
        seen
    }

    /// Appends everything queued and syncs the file now (the writer thread does this every
    /// [`RecorderOptions::flush_interval`]). After a failed write the recorder stops: this
    /// returns that error, and nothing more is written.
    pub fn flush(&self) -> Result<(), RecordError> {
        self.shared.flush()
    }

    /// What the recorder has done.
    pub fn stats(&self) -> RecorderStats {
        self.shared.queue().stats
    }
}

/// An event's de-duplication identity.
fn identity(event: &Event) -> (u8, u128, u64) {
    match event {
        Event::Used { key, label } => used_id(*key, label.as_deref()),
        Event::Missed { key, label } => missed_id(*key, label.as_deref()),
        Event::Module { hash, .. } => (KIND_MODULE, hash.0, 0),
        Event::Described { key, .. } => (KIND_DESCRIBED, key.0, 0),
    }
}

fn used_id(key: PipelineKey, label: Option<&str>) -> (u8, u128, u64) {
    (KIND_USED, key.0, label.map_or(0, label_hash))
}

fn missed_id(key: Option<PipelineKey>, label: Option<&str>) -> (u8, u128, u64) {
    (KIND_MISSED, key.map_or(0, |k| k.0), label.map_or(0, label_hash))
}

fn label_hash(label: &str) -> u64 {
    // Never 0 (0 is "no label").
    checksum64(label.as_bytes()) | 1
}

impl Drop for Recorder {
    /// Appends what is left and stops the writer thread.
    fn drop(&mut self) {
        self.shared.queue().closing = true;
        self.shared.wake.notify_all();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

#[cfg(unix)]
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_parent(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Specialization {
        Specialization {
            map_entries: vec![crate::native::SpecializationMapEntry { constant_id: 3, offset: 0, size: 4 }],
            data: vec![1, 2, 3, 4],
        }
    }

    fn events() -> Vec<Event> {
        let spirv = vec![0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0];
        let hash = spirv_library_hash(&spirv);
        vec![
            Event::Used { key: PipelineKey(7), label: Some("opaque/pbr".into()) },
            Event::Used { key: PipelineKey(8), label: None },
            Event::Missed { key: Some(PipelineKey(9)), label: None },
            Event::Missed { key: None, label: Some("ui/text".into()) },
            Event::Module { hash, spirv },
            Event::Described {
                key: PipelineKey(10),
                stages: vec![RecordedStage {
                    stage: ShaderStage::Compute,
                    library: hash,
                    entry: "main".into(),
                    specialization: Some(spec()),
                }],
                state: crate::native::NativePipeline::default(),
            },
        ]
    }

    fn file_of(events: &[Event]) -> Vec<u8> {
        let mut b = header().to_vec();
        for e in events {
            b.extend(frame(e).unwrap());
        }
        b
    }

    #[test]
    fn every_event_reads_back_as_written() {
        let b = file_of(&events());
        let r = read_record_bytes(&b, Path::new("r")).unwrap();
        assert_eq!(r.events, events());
        assert_eq!(r.damaged_tail, None);
        assert_eq!(r.valid_len, b.len() as u64);
    }

    #[test]
    fn a_cut_anywhere_keeps_every_whole_frame_before_it() {
        let all = events();
        let b = file_of(&all);
        let mut ends = vec![RECORD_HEADER_LEN];
        for e in &all {
            ends.push(ends.last().unwrap() + frame(e).unwrap().len());
        }
        for cut in 0..b.len() {
            let r = read_record_bytes(&b[..cut], Path::new("r")).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count().saturating_sub(1);
            assert_eq!(r.events, all[..whole], "cut at {cut}");
            assert_eq!(r.damaged_tail.is_some(), !ends.contains(&cut), "cut at {cut}");
        }
    }

    #[test]
    fn a_damaged_byte_stops_reading_at_its_frame() {
        let all = events();
        let mut b = file_of(&all);
        let second = RECORD_HEADER_LEN + frame(&all[0]).unwrap().len();
        b[second + RECORD_FRAME_LEN] ^= 0x40;
        let r = read_record_bytes(&b, Path::new("r")).unwrap();
        assert_eq!(r.events, all[..1]);
        let tail = r.damaged_tail.unwrap();
        assert_eq!(tail.offset, second as u64);
        assert!(tail.why.contains("checksum"), "{tail}");
    }

    #[test]
    fn unknown_kinds_are_skipped_and_other_files_refused() {
        let mut b = header().to_vec();
        let payload = b"from a newer granary";
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(&[200, 0, 0, 0]);
        b.extend_from_slice(&checksum64(payload).to_le_bytes());
        b.extend_from_slice(payload);
        b.extend(frame(&events()[0]).unwrap());
        let r = read_record_bytes(&b, Path::new("r")).unwrap();
        assert_eq!((r.unknown_frames, r.events.len()), (1, 1));
        assert!(matches!(read_record_bytes(b"GRNJRNL\0........", Path::new("j")), Err(RecordError::NotARecord { .. })));
        let mut v2 = header();
        v2[8] = 2;
        assert!(matches!(read_record_bytes(&v2, Path::new("v")), Err(RecordError::NotARecord { .. })));
    }

    #[test]
    fn a_module_whose_bytes_do_not_hash_to_its_hash_is_damage() {
        let mut b = header().to_vec();
        b.extend(frame(&Event::Module { hash: ContentHash(1), spirv: vec![1, 2, 3, 4] }).unwrap());
        let r = read_record_bytes(&b, Path::new("r")).unwrap();
        assert!(r.events.is_empty());
        assert!(r.damaged_tail.unwrap().why.contains("content hash"));
    }

    #[test]
    fn the_recorder_writes_each_event_once_and_appends_after_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("game.record");
        {
            let r = Recorder::open(&path, RecorderOptions::default()).unwrap();
            assert!(r.used(PipelineKey(1), Some("a")));
            assert!(!r.used(PipelineKey(1), Some("a")));
            assert!(!r.used(PipelineKey(1), Some("a")));
            assert!(r.used(PipelineKey(1), None), "by key is another event than by label");
            assert!(r.missed(None, Some("b")));
            let all = events();
            let Event::Described { key, stages, state } = all[5].clone() else { unreachable!() };
            let Event::Module { spirv, .. } = &all[4] else { unreachable!() };
            assert!(r.described(key, stages.clone(), state.clone(), &[None]), "no code: recorded as a miss");
            assert!(r.described(key, stages, state, &[Some(spirv)]));
            r.flush().unwrap();
            assert_eq!(r.stats().events, 6);
            assert_eq!(r.stats().repeats, 2);
        }
        let read = read_record(&path).unwrap();
        assert_eq!(read.events.len(), 6);
        assert!(matches!(read.events[3], Event::Missed { key: Some(PipelineKey(10)), label: None }));
        assert!(matches!(read.events[4], Event::Module { .. }));
        // A kill mid-append: half a frame at the end.
        let mut torn = std::fs::read(&path).unwrap();
        torn.extend_from_slice(&frame(&events()[0]).unwrap()[..10]);
        std::fs::write(&path, &torn).unwrap();
        assert!(read_record(&path).unwrap().damaged_tail.is_some());
        {
            let r = Recorder::open(&path, RecorderOptions::default()).unwrap();
            assert!(r.used(PipelineKey(2), None));
        }
        let read = read_record(&path).unwrap();
        assert_eq!(read.damaged_tail, None);
        assert_eq!(read.events.len(), 7);
        assert_eq!(read.events[6], Event::Used { key: PipelineKey(2), label: None });
    }

    #[test]
    fn the_recorder_refuses_a_file_that_is_not_a_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, b"my notes, not a record").unwrap();
        assert!(matches!(Recorder::open(&path, RecorderOptions::default()), Err(RecordError::NotARecord { .. })));
        assert_eq!(std::fs::read(&path).unwrap(), b"my notes, not a record");
    }

    #[test]
    fn the_writer_thread_flushes_without_being_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        let r = Recorder::open(&path, RecorderOptions { flush_interval: Duration::from_millis(5) }).unwrap();
        r.used(PipelineKey(3), None);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while read_record(&path).unwrap().events.is_empty() {
            assert!(std::time::Instant::now() < deadline, "nothing appended in 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(r);
    }
}
