//! The parent side of `harvest --isolate`: compiles run in `granary worker` processes. A worker
//! that crashes or exceeds the timeout on a pipeline is killed and replaced, and that pipeline
//! alone is recorded as failed; workers are also recycled after a number of pipelines or above
//! a memory limit. The parent alone owns the capture.
//!
//! The parent trusts nothing a worker says (the protocol is in `worker.rs`):
//! - Workers compile from the bytes the parent read: the script text at start, each library's
//!   bytes before the first request that needs it.
//! - One request is in flight per worker. Before sending it the parent sets the largest answer
//!   that request can produce ([`answer_cap`]); the frame reader refuses a longer announced
//!   length before reading any of it, and never allocates from an announced length.
//! - An answer must be for the pipeline asked: same index, a one-entry archive that passes the
//!   archive reader's checks, with the expected key context, targets, pipeline key, kind,
//!   stage keys, an output for every target of every stage except exactly the targets the
//!   answer declares lost for that stage (tag 2), and exactly the pipeline's label;
//!   a failure answer must name the same index and pipeline. Anything else fails that pipeline
//!   with phase `protocol` and the worker is killed.
//! - Retiring a worker closes its input and waits at most [`RETIRE_GRACE`], then kills it.
//! - Workers die with the parent (`worker.rs`, Linux `PR_SET_PDEATHSIG`). Linux delivers that
//!   signal when the *thread* that spawned the worker exits, so a worker is only ever spawned
//!   by a slot thread of [`run`], and each slot thread retires (or kills) its worker before it
//!   returns: the spawning thread outlives its worker.

use super::sink::{process_failure, Sink};
use super::worker::{encode_library, message_header, FRAME_HEADER, MSG_COMPILE, MSG_LIBRARY, MSG_SCRIPT};
use super::Failure;
use crate::archive::{Archive, WriteEntry};
use crate::descriptor::{stage_key, Blob, KeyContext, PipelineDescriptor, TargetSet};
use crate::frontend::Profile;
use crate::script::Script;
use crate::sync::lock_std;
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Options for isolated compilation.
#[derive(Clone, Debug)]
pub struct IsolateOptions {
    /// The `granary` executable to run as `granary worker`.
    pub worker_exe: PathBuf,
    /// Longest time one pipeline may take before its worker is killed.
    pub timeout: Option<Duration>,
    /// Replace a worker after it compiled this many pipelines (0 = never).
    pub recycle_after: usize,
    /// Replace a worker whose resident memory exceeds this many bytes.
    pub memory_limit: Option<u64>,
    /// Extra arguments for `granary worker` selecting its backend (each worker opens its own
    /// device, e.g. `--backend=vulkan --device=0`); empty for the `none` backend.
    pub worker_args: Vec<String>,
    /// The device the workers' binaries must be for (the identity the parent read from the
    /// same device); `None` for the `none` backend, whose answers must carry no binaries.
    pub device: Option<Arc<granary_archive::DeviceIdentity>>,
}

/// What the isolated runner did, for the summary.
pub(crate) struct IsolateStats {
    /// Worker processes started (first starts, replacements and recycles).
    pub workers_started: usize,
    /// Pipeline-cache data received from retiring workers and kept (device backends without
    /// pipeline binaries).
    pub worker_caches: usize,
}

/// How long a retiring worker may take to exit after its input closed before it is killed.
pub const RETIRE_GRACE: Duration = Duration::from_secs(5);

/// The largest pipeline-cache payload a retiring worker may send.
pub const CACHE_CAP: u64 = 256 << 20;
/// The largest failure answer (JSON) accepted.
pub const FAILURE_CAP: u64 = 1 << 20;
/// Fixed allowance of an answer archive: header, sections, label, entry-point names.
pub const ANSWER_OVERHEAD: u64 = 1 << 20;
/// Allowance per stage and target besides the source-proportional part (helper functions a
/// writer adds whatever the source size).
pub const STAGE_TARGET_OVERHEAD: u64 = 256 << 10;
/// Allowance for a pipeline's driver binaries in a worker's answer (a device backend only):
/// NVIDIA's sets measure 8–200 KB (a dictionary binary included); this is far above that.
pub const BINARY_ALLOWANCE: u64 = 32 << 20;
/// Output bytes allowed per source byte of a stage's library, per target. Writers emit one
/// entry point of the library, so its output is bounded by a small multiple of the source; 64
/// is far above anything measured (at most 1.6 output bytes per source byte for any stage and
/// target of the bundled example; tests/isolate.rs harvests it for every target under the
/// cap).
pub const OUTPUT_FACTOR: u64 = 64;

/// The largest compiled answer pipeline `desc` can produce for `targets`:
/// [`ANSWER_OVERHEAD`] + Σ over its stages of (library source bytes × [`OUTPUT_FACTOR`] +
/// [`STAGE_TARGET_OVERHEAD`]) × number of targets.
pub fn answer_cap(desc: &PipelineDescriptor, targets: TargetSet) -> u64 {
    let n = targets.iter().count() as u64;
    desc.stages().iter().fold(ANSWER_OVERHEAD, |cap, (_, f)| {
        let source = f.base().0.source().len() as u64;
        cap.saturating_add(source.saturating_mul(OUTPUT_FACTOR).saturating_add(STAGE_TARGET_OVERHEAD).saturating_mul(n))
    })
}

struct Frame {
    tag: u8,
    index: u64,
    rss: u64,
    payload: Vec<u8>,
}

/// Bytes for the writer thread.
enum Out {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
}

struct Worker {
    child: Child,
    /// To the thread writing the worker's input; dropping it closes the input.
    input: Option<mpsc::Sender<Out>>,
    frames: mpsc::Receiver<Result<Frame, String>>,
    /// The largest payload the request in flight may answer with; 0 when none is in flight.
    cap: Arc<AtomicU64>,
    stderr: Arc<Mutex<String>>,
    /// Libraries (by name) this worker was sent.
    libraries: HashSet<String>,
    done: usize,
}

impl Worker {
    fn send(&self, header: Vec<u8>, body: Out) {
        if let Some(tx) = &self.input {
            // A worker that died is noticed through its answer stream.
            let _ = tx.send(Out::Owned(header));
            let _ = tx.send(body);
        }
    }
}

fn read_frames(mut out: impl Read, cap: Arc<AtomicU64>, tx: mpsc::Sender<Result<Frame, String>>) {
    loop {
        let mut h = [0u8; FRAME_HEADER];
        if out.read_exact(&mut h).is_err() {
            return; // EOF: the worker exited or died
        }
        let word = |i: usize| u64::from_le_bytes(h[8 + 8 * i..16 + 8 * i].try_into().unwrap_or([0; 8]));
        if &h[..2] != b"GW" || h[2] > 3 {
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
            // The entry, its length and the lost targets' messages.
            2 => in_flight.saturating_add(8 + FAILURE_CAP),
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

fn spawn(
    exe: &Path,
    script: &Path,
    text: &Arc<[u8]>,
    targets: TargetSet,
    profile: &Profile,
    extra: &[String],
) -> std::io::Result<Worker> {
    let mut child = Command::new(exe)
        .arg("worker")
        .arg(script)
        .args(extra)
        .arg("--targets")
        .arg(targets.names())
        .arg("--profile")
        .arg(profile.name)
        .arg("--parent-pid")
        .arg(std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let (Some(stdin), Some(stdout), Some(stderr_pipe)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(std::io::Error::other("worker pipes missing"));
    };
    // Writes go through a thread, so a worker that stops reading cannot block the parent past
    // the timeout: killing the worker ends the write with an error.
    let (in_tx, in_rx) = mpsc::channel::<Out>();
    std::thread::spawn(move || {
        let mut stdin = stdin;
        for out in in_rx {
            let bytes: &[u8] = match &out {
                Out::Owned(v) => v,
                Out::Shared(a) => a,
            };
            if stdin.write_all(bytes).is_err() {
                return;
            }
        }
    });
    let cap = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let reader_cap = cap.clone();
    std::thread::spawn(move || read_frames(stdout, reader_cap, tx));
    let stderr = Arc::new(Mutex::new(String::new()));
    let tail = stderr.clone();
    std::thread::spawn(move || {
        let mut pipe = stderr_pipe;
        let mut buf = [0u8; 1024];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut t = lock_std(&tail);
            t.push_str(&String::from_utf8_lossy(&buf[..n]));
            if t.len() > 4096 {
                let cut = t.len() - 2048;
                let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(t.len());
                t.drain(..cut);
            }
        }
    });
    let w = Worker { child, input: Some(in_tx), frames: rx, cap, stderr, libraries: HashSet::new(), done: 0 };
    w.send(message_header(MSG_SCRIPT, text.len()), Out::Shared(text.clone()));
    Ok(w)
}

fn describe_exit(child: &mut Child) -> String {
    match child.wait() {
        Ok(status) => {
            #[cfg(unix)]
            {
                use std::os::unix::process::ExitStatusExt;
                if let Some(sig) = status.signal() {
                    let name = match sig {
                        libc::SIGABRT => "SIGABRT",
                        libc::SIGSEGV => "SIGSEGV",
                        libc::SIGBUS => "SIGBUS",
                        libc::SIGILL => "SIGILL",
                        libc::SIGKILL => "SIGKILL",
                        libc::SIGFPE => "SIGFPE",
                        _ => "signal",
                    };
                    return format!("killed by {name} ({sig})");
                }
            }
            format!("exited with {status}")
        }
        Err(e) => format!("could not be waited for: {e}"),
    }
}

/// Compiles `pipelines` (script indices, in script order) in worker processes, `slots` at a
/// time. Contiguous chunks go to one worker so runs sharing a vertex function stay warm.
/// `text` is the script text `script` was parsed from; `ctx` the key context of a compiler
/// for `targets`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    script: &Script,
    text: &str,
    ctx: &KeyContext,
    pipelines: &[usize],
    targets: TargetSet,
    profile: &'static Profile,
    slots: usize,
    opts: &IsolateOptions,
    sink: &Sink<'_>,
    tracer: Option<&super::trace::Tracer>,
) -> IsolateStats {
    let chunk = (pipelines.len() / (slots * 8)).clamp(1, 64);
    let chunks: Vec<&[usize]> = pipelines.chunks(chunk).collect();
    let next = AtomicUsize::new(0);
    let started = AtomicUsize::new(0);
    let worker_caches = AtomicUsize::new(0);
    let blobs = BlobTable::default();
    let text: Arc<[u8]> = Arc::from(text.as_bytes());
    let job = Job {
        script,
        text: &text,
        ctx,
        targets,
        profile,
        opts,
        sink,
        blobs: &blobs,
        started: &started,
        worker_caches: &worker_caches,
    };
    std::thread::scope(|s| {
        for slot in 0..slots {
            let (job, chunks, next) = (&job, &chunks, &next);
            // A slot thread spawns its workers and retires them before it returns (see the
            // module doc: PR_SET_PDEATHSIG follows the spawning thread).
            s.spawn(move || {
                let mut worker: Option<Worker> = None;
                while let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    for &index in *chunk {
                        let t0 = std::time::Instant::now();
                        job.compile_one(index, &mut worker);
                        if let Some(t) = tracer {
                            let pid = worker.as_ref().map(|w| w.child.id());
                            let args = serde_json::json!({
                                "pipeline": job.script.pipelines[index].display_name(),
                                "index": index,
                                "worker_pid": pid,
                            });
                            t.slice(super::trace::WORKER0 + slot, "pipeline", t0, std::time::Instant::now(), args);
                        }
                        sink.progress();
                    }
                }
                if let Some(w) = worker.take() {
                    retire(w, job);
                }
            });
        }
    });
    IsolateStats { workers_started: started.into_inner(), worker_caches: worker_caches.into_inner() }
}

/// Closes the worker's input and waits for it to exit, at most [`RETIRE_GRACE`]; then kills it.
/// Closes a worker's input and lets it exit (killed after [`RETIRE_GRACE`]). With a device
/// backend, a worker answers the end of its input with its `VkPipelineCache` data (frame tag
/// 3; empty where the device captures binaries instead), which is kept when its header names
/// the harvest's device — so the caches of workers that finish reach the archive. A worker
/// that crashed or was killed never gets here: its cache is lost with it.
fn retire(mut w: Worker, job: &Job<'_>) {
    w.input.take();
    let deadline = Instant::now() + RETIRE_GRACE;
    if let Some(device) = &job.opts.device {
        if let Ok(Ok(f)) = w.frames.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if f.tag == 3 && cache_header_matches(&f.payload, device) {
                let data = Blob::new(f.payload);
                job.sink
                    .capture
                    .insert_device_caches(vec![granary_archive::DeviceCache { device: device.clone(), data }]);
                job.worker_caches.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    while Instant::now() < deadline {
        match w.child.try_wait() {
            Ok(Some(_)) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break,
        }
    }
    let _ = w.child.kill();
    let _ = w.child.wait();
}

/// Whether `data` starts with a `VkPipelineCacheHeaderVersionOne` for `device`: header size
/// at least 32, version 1, and the device's vendor id, device id and `pipelineCacheUUID`.
fn cache_header_matches(data: &[u8], device: &granary_archive::DeviceIdentity) -> bool {
    let word = |i: usize| data.get(i..i + 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes);
    word(0).is_some_and(|n| n >= 32)
        && word(4) == Some(1)
        && word(8) == Some(device.vendor_id)
        && word(12) == Some(device.device_id)
        && data.get(16..32) == Some(&device.pipeline_cache_uuid[..])
}

/// Stage outputs received so far, by content: answers for pipelines that share a stage
/// function carry the same bytes, which the parent keeps once.
#[derive(Default)]
struct BlobTable(Mutex<HashMap<u128, Arc<Blob>>>);

impl BlobTable {
    /// `entries` with every stage output and driver binary replaced by the copy already held
    /// (NVIDIA repeats one large dictionary binary in every pipeline's set of a worker), and
    /// each binary set's device by `device`, the parent's identity (the answer was checked to
    /// be for it).
    fn intern(
        &self,
        entries: Vec<WriteEntry>,
        device: Option<&Arc<granary_archive::DeviceIdentity>>,
    ) -> Vec<WriteEntry> {
        let mut table = lock_std(&self.0);
        let mut intern = |b: &Arc<Blob>| table.entry(b.hash().0).or_insert_with(|| b.clone()).clone();
        entries
            .into_iter()
            .map(|w| {
                let mut e = (*w.entry).clone();
                for b in e.stages.iter_mut().flat_map(|s| s.outputs.0.iter_mut().flatten()) {
                    *b = intern(b);
                }
                let binaries = w
                    .binaries
                    .into_iter()
                    .map(|d| {
                        let binaries = d
                            .set
                            .binaries
                            .iter()
                            .map(|b| granary_archive::DeviceBinary { key: b.key.clone(), data: intern(&b.data) })
                            .collect();
                        granary_archive::DeviceBinaries {
                            device: device.cloned().unwrap_or(d.device),
                            set: Arc::new(granary_archive::BinarySet {
                                flags: d.set.flags,
                                pipeline_key: d.set.pipeline_key.clone(),
                                binaries,
                            }),
                        }
                    })
                    .collect();
                WriteEntry { entry: Arc::new(e), labels: w.labels, binaries }
            })
            .collect()
    }
}

struct Job<'a> {
    script: &'a Script,
    text: &'a Arc<[u8]>,
    ctx: &'a KeyContext,
    targets: TargetSet,
    profile: &'static Profile,
    opts: &'a IsolateOptions,
    sink: &'a Sink<'a>,
    blobs: &'a BlobTable,
    started: &'a AtomicUsize,
    worker_caches: &'a AtomicUsize,
}

enum Outcome {
    Frame(Frame),
    Timeout,
    Died(Option<String>),
    Protocol(String),
}

impl Job<'_> {
    fn spawn(&self) -> std::io::Result<Worker> {
        let w = spawn(
            &self.opts.worker_exe,
            &self.script.path,
            self.text,
            self.targets,
            self.profile,
            &self.opts.worker_args,
        )?;
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(w)
    }

    fn compile_one(&self, index: usize, slot: &mut Option<Worker>) {
        let (sink, opts) = (self.sink, self.opts);
        let name = self.script.pipelines[index].display_name();
        let fail = |phase: &str, msg: String| sink.failed(process_failure(index, name.clone(), phase, msg));
        let Ok(desc) = &self.script.pipelines[index].descriptor else {
            return fail("script", format!("pipeline '{name}': not a valid pipeline"));
        };
        // A worker that died or spoke out of turn since its last answer is replaced first.
        if let Some(w) = slot.as_ref() {
            if !matches!(w.frames.try_recv(), Err(mpsc::TryRecvError::Empty)) {
                if let Some(w) = slot.take() {
                    kill(w);
                }
            }
        }
        if slot.is_none() {
            match self.spawn() {
                Ok(w) => *slot = Some(w),
                Err(e) => {
                    return fail(
                        "crash",
                        format!("pipeline '{name}': cannot start worker {}: {e}", opts.worker_exe.display()),
                    )
                }
            }
        }
        let Some(w) = slot.as_mut() else { return };
        for (_, f) in desc.stages() {
            let lib = f.base().0;
            if w.libraries.insert(lib.name().to_string()) {
                let payload = encode_library(lib);
                w.send(message_header(MSG_LIBRARY, payload.len()), Out::Owned(payload));
            }
        }
        let cap = answer_cap(desc, self.targets).saturating_add(if self.opts.device.is_some() {
            BINARY_ALLOWANCE
        } else {
            0
        });
        w.cap.store(cap, Ordering::SeqCst);
        w.send(message_header(MSG_COMPILE, 8), Out::Owned((index as u64).to_le_bytes().to_vec()));
        let r = match opts.timeout {
            Some(t) => w.frames.recv_timeout(t),
            None => w.frames.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        w.cap.store(0, Ordering::SeqCst);
        let outcome = match r {
            Ok(Ok(f)) => Outcome::Frame(f),
            Ok(Err(m)) => Outcome::Protocol(m),
            Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Timeout,
            Err(mpsc::RecvTimeoutError::Disconnected) => Outcome::Died(None),
        };
        let frame = match outcome {
            Outcome::Frame(f) => f,
            Outcome::Timeout => {
                if let Some(w) = slot.take() {
                    kill(w);
                }
                let secs = opts.timeout.map_or(0.0, |t| t.as_secs_f64());
                return fail(
                    "timeout",
                    format!("pipeline '{name}': compile did not finish within {secs} s; worker killed and replaced"),
                );
            }
            Outcome::Protocol(m) => {
                if let Some(w) = slot.take() {
                    kill(w);
                }
                return fail("protocol", format!("pipeline '{name}': {m}; worker killed and replaced"));
            }
            Outcome::Died(msg) => {
                let how = slot.take().map(kill).unwrap_or_default();
                let detail = msg.map(|m| format!("; {m}")).unwrap_or_default();
                return fail("crash", format!("pipeline '{name}': worker crashed while compiling it ({how}){detail}"));
            }
        };
        w.done += 1;
        // The parent measures the worker itself where it can, rather than believe it.
        let rss = crate::util::process_rss_bytes(w.child.id()).unwrap_or(frame.rss);
        let over_count = opts.recycle_after > 0 && w.done >= opts.recycle_after;
        let over_memory = opts.memory_limit.is_some_and(|m| rss > m);
        match self.accept(index, &name, desc, frame) {
            Ok(()) => {}
            Err(m) => {
                // A worker that answers for something else cannot be trusted with more.
                if let Some(w) = slot.take() {
                    kill(w);
                }
                return fail("protocol", format!("pipeline '{name}': {m}; worker killed and replaced"));
            }
        }
        if over_count || over_memory {
            if let Some(w) = slot.take() {
                retire(w, self);
            }
        }
    }

    /// Checks an answer against what was asked and records it; `Err` says how it is wrong.
    fn accept(&self, index: usize, name: &str, desc: &PipelineDescriptor, frame: Frame) -> Result<(), String> {
        if frame.index != index as u64 {
            return Err(format!(
                "worker answered the request for pipeline {index} with an answer for pipeline {}",
                frame.index
            ));
        }
        if frame.tag == 3 {
            return Err("worker sent its pipeline cache instead of an answer".into());
        }
        if frame.tag == 1 {
            let f: Failure =
                serde_json::from_slice(&frame.payload).map_err(|e| format!("unreadable failure from worker: {e}"))?;
            if f.index != index || f.pipeline != name {
                return Err(format!("worker answered with a failure of pipeline {} '{}'", f.index, f.pipeline));
            }
            if !["shader", "link", "panic", "script", "targets", "device"].contains(&f.phase.as_str()) {
                return Err(format!("worker answered with a failure of unknown phase '{}'", f.phase));
            }
            self.sink.failed(Failure { script_position: None, ..f });
            return Ok(());
        }
        let (bytes, lost) = if frame.tag == 2 {
            let (a, lost) = super::worker::decode_lost_answer(&frame.payload)
                .ok_or("worker answered with a malformed lost-target answer")?;
            if lost.is_empty() {
                return Err("worker answered with lost targets but named none".into());
            }
            (a.to_vec(), lost)
        } else {
            (frame.payload, Vec::new())
        };
        // What each stage may lack: exactly the targets declared lost for it.
        let lost_bits = |stage: crate::descriptor::ShaderStage| {
            lost.iter().filter(|l| l.stage == stage).filter_map(|l| l.error.target).fold(0u32, |b, t| b | 1 << t as u32)
        };
        let archive = Archive::from_bytes(bytes).map_err(|e| format!("worker answer is damaged: {e}"))?;
        archive.verify().map_err(|e| format!("worker answer is damaged: {e}"))?;
        if archive.key_context() != *self.ctx {
            return Err("worker answered under different writer options".into());
        }
        let all_lost = desc.stages().iter().fold(0u32, |b, (stage, _)| b | lost_bits(*stage));
        if archive.targets().0 & !self.targets.0 != 0 || archive.targets().0 | all_lost != self.targets.0 {
            return Err(format!(
                "worker answered with targets {} instead of {}",
                archive.targets().names(),
                self.targets.names()
            ));
        }
        let entries = archive.entries().map_err(|e| format!("worker answer is damaged: {e}"))?;
        let [entry] = &entries[..] else {
            return Err(format!("worker answered with {} entries instead of one", entries.len()));
        };
        let expected_key = desc.key(self.ctx);
        let expected_labels: Vec<&str> = desc.label().into_iter().collect();
        let labels: Vec<&str> = entry.labels.iter().map(String::as_str).collect();
        if entry.entry.key != expected_key || labels != expected_labels {
            return Err(format!(
                "worker answered with another pipeline's entry (key {:032x}, labels {labels:?}; expected key {:032x}, labels {expected_labels:?})",
                entry.entry.key.0, expected_key.0
            ));
        }
        let targets = check_stages(&entry.entry, desc, self.ctx, self.targets, &lost)?;
        check_binaries(&entry.binaries, self.opts.device.as_deref(), desc)?;
        if self.sink.require_all_targets && !lost.is_empty() {
            // All or nothing: the same failure the in-process compiler records.
            let pipeline = desc.label().unwrap_or("<unlabeled>").to_string();
            let e = crate::compiler::CompileError::Targets { pipeline, lost };
            self.sink.failed(super::sink::compile_failure(index, name.to_string(), &e));
            return Ok(());
        }
        let entries = self.blobs.intern(entries, self.opts.device.as_ref());
        self.sink.capture.insert_archived(entries);
        self.sink.compiled_with(index, name, targets, &lost);
        Ok(())
    }
}

/// Checks an answered entry's driver binaries: exactly one set, for the parent's device, when
/// a device backend is in use (non-empty where the device has pipeline binaries, empty where
/// it keeps cache data only, marked as a library exactly when the pipeline needs one), none
/// otherwise. Sets of one pipeline differ from compile to compile, so the bytes themselves are
/// not compared with anything; the archive's checksums already covered them.
fn check_binaries(
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
/// `lost` declares lost for that stage (each naming one of the pipeline's functions); returns
/// the targets the pipeline has (never empty).
fn check_stages(
    entry: &crate::descriptor::PipelineEntry,
    desc: &PipelineDescriptor,
    ctx: &KeyContext,
    targets: TargetSet,
    lost: &[crate::compiler::LostTarget],
) -> Result<TargetSet, String> {
    let lost_bits = |stage: crate::descriptor::ShaderStage| {
        lost.iter().filter(|l| l.stage == stage).filter_map(|l| l.error.target).fold(0u32, |b, t| b | 1 << t as u32)
    };
    let stages = desc.stages();
    let shape_ok = entry.kind == desc.kind()
        && entry.stages.len() == stages.len()
        && entry.stages.iter().zip(&stages).all(|(got, (stage, f))| {
            got.stage == *stage
                && got.key == stage_key(f, *stage, ctx)
                && targets.iter().all(|t| {
                    let declared_lost = lost_bits(*stage) & (1 << t as u32) != 0;
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

/// Kills a worker (if still running) and describes how it ended, with its last stderr line.
fn kill(mut w: Worker) -> String {
    w.input.take();
    let _ = w.child.kill();
    let how = describe_exit(&mut w.child);
    // Give the stderr reader a moment to collect the last words.
    std::thread::sleep(Duration::from_millis(20));
    let tail = lock_std(&w.stderr).trim().lines().last().unwrap_or("").to_string();
    if tail.is_empty() {
        how
    } else {
        format!("{how}: {tail}")
    }
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

    #[test]
    fn the_answer_cap_grows_with_sources_and_targets() {
        let lib = Library::wgsl("l", "x".repeat(1000));
        let desc = PipelineDescriptor::Compute(ComputePipelineDescriptor {
            label: None,
            compute: FunctionDescriptor::library(lib, "main".to_string()),
            layout: None,
        });
        let one = answer_cap(&desc, TargetSet::parse("spirv").unwrap());
        let all = answer_cap(&desc, TargetSet::parse("spirv,msl,hlsl,glsl").unwrap());
        assert_eq!(one, ANSWER_OVERHEAD + 1000 * OUTPUT_FACTOR + STAGE_TARGET_OVERHEAD);
        assert_eq!(all, ANSWER_OVERHEAD + 4 * (1000 * OUTPUT_FACTOR + STAGE_TARGET_OVERHEAD));
        assert!(all < 1 << 30);
    }
}
