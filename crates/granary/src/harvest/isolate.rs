//! The parent side of `harvest --isolate`: compiles run in `granary worker` processes. A worker
//! that crashes, exceeds the timeout or passes the memory limit on a pipeline is killed and
//! replaced, and that pipeline alone is recorded as failed; workers are also recycled after a
//! number of pipelines or above the memory limit between pipelines. The parent alone owns the
//! capture.
//!
//! The memory watchdog: while a request is in flight and a memory limit is set, the slot
//! thread waiting for the answer wakes every [`MEMORY_SAMPLE_INTERVAL`] and reads the worker's
//! resident memory from the kernel (`/proc/PID/statm`, `measure::process_rss_bytes`); a
//! worker above the limit is killed at once and its pipeline fails with phase `memory`. So a
//! compile that grows without end (naga on a huge library) costs that pipeline, not the
//! harvest, and the parent measures the worker itself rather than believe it. Where the
//! platform cannot read another process's resident memory (everything but Linux), there is no
//! watchdog: the limit is checked only between pipelines, on the worker's own report, and
//! `--timeout` is what ends a runaway compile.
//!
//! The parent trusts nothing a worker says (the protocol and the answer checks are in
//! `wire.rs`, the processes in `process.rs`, the interning of answers in `intern.rs`):
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

use super::intern::BlobTable;
use super::process::{kill, spawn, Out, Worker, WorkerCommand, RETIRE_GRACE};
use super::sink::{process_failure, Sink};
use super::wire::{
    answer_cap, cache_header_matches, check_answer, encode_library, message_header, CheckedAnswer, Frame, ANSWER_CACHE,
    BINARY_ALLOWANCE, MSG_COMPILE, MSG_LIBRARY,
};
use crate::descriptor::{Blob, KeyContext, PipelineDescriptor, TargetSet};
use crate::script::{Expanded, Script};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How often the memory watchdog reads a busy worker's resident memory (10 ms: a read of
/// `/proc/PID/statm` costs microseconds, and a worker growing at a few GB/s passes the limit
/// by at most some tens of MiB before it is killed).
pub const MEMORY_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// Options for isolated compilation.
#[derive(Clone, Debug)]
pub struct IsolateOptions {
    /// The command that starts one worker, complete (`granary worker SCRIPT --targets …
    /// --profile … --parent-pid …` and the backend's arguments, from the CLI); run as is.
    pub worker: WorkerCommand,
    /// Longest time one pipeline may take before its worker is killed.
    pub timeout: Option<Duration>,
    /// Replace a worker after it compiled this many pipelines (0 = never).
    pub recycle_after: usize,
    /// The most resident memory a worker may hold, in bytes: a worker above it while compiling
    /// is killed and its pipeline fails with phase `memory` (Linux, sampled every
    /// [`MEMORY_SAMPLE_INTERVAL`]; see the module documentation for other platforms); a worker
    /// above it after an answer is retired and replaced.
    pub memory_limit: Option<u64>,
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

/// Compiles `pipelines` (the selection's `(index, descriptor)`, in its order: script
/// pipelines, then the variants of `expansion`) in worker processes, `slots` at a time.
/// Contiguous chunks go to one worker so runs sharing a vertex function stay warm. `text` is
/// the script text `script` was parsed from; `ctx` the key context of a compiler for
/// `targets`. A variant is asked for by its origin's script index and its place among that
/// pipeline's variants; the worker expands the pipeline itself with the script's
/// `expand_unspecialized`, and the answer is checked against the parent's variant.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    script: &Script,
    expansion: &Expanded,
    text: &str,
    ctx: &KeyContext,
    pipelines: &[(usize, &PipelineDescriptor)],
    targets: TargetSet,
    slots: usize,
    opts: &IsolateOptions,
    sink: &Sink<'_>,
    tracer: Option<&super::trace::Tracer>,
) -> IsolateStats {
    let chunk = (pipelines.len() / (slots * 8)).clamp(1, 64);
    let chunks: Vec<&[(usize, &PipelineDescriptor)]> = pipelines.chunks(chunk).collect();
    let mut variants = HashMap::new();
    let mut seen: HashMap<usize, usize> = HashMap::new();
    for (index, origin, _) in &expansion.variants {
        let k = seen.entry(*origin).or_default();
        variants.insert(*index, (*origin, *k));
        *k += 1;
    }
    let next = AtomicUsize::new(0);
    let started = AtomicUsize::new(0);
    let worker_caches = AtomicUsize::new(0);
    let blobs = BlobTable::default();
    let text: Arc<[u8]> = Arc::from(text.as_bytes());
    let dispatcher = Dispatcher {
        script,
        variants,
        text: &text,
        ctx,
        targets,
        opts,
        sink,
        blobs: &blobs,
        started: &started,
        worker_caches: &worker_caches,
    };
    std::thread::scope(|s| {
        for slot in 0..slots {
            let (dispatcher, chunks, next) = (&dispatcher, &chunks, &next);
            // A slot thread spawns its workers and retires them before it returns (see the
            // module doc: PR_SET_PDEATHSIG follows the spawning thread).
            s.spawn(move || {
                let mut worker: Option<Worker> = None;
                while let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    for &(index, desc) in *chunk {
                        let t0 = std::time::Instant::now();
                        dispatcher.compile_one(index, desc, &mut worker);
                        if let Some(t) = tracer {
                            let pid = worker.as_ref().map(|w| w.child.id());
                            let args = serde_json::json!({
                                "pipeline": dispatcher.name_of(index, desc),
                                "index": index,
                                "worker_pid": pid,
                            });
                            t.slice(super::trace::WORKER0 + slot, "pipeline", t0, std::time::Instant::now(), args);
                        }
                        sink.progress(true);
                    }
                }
                if let Some(w) = worker.take() {
                    retire(w, dispatcher);
                }
            });
        }
    });
    IsolateStats { workers_started: started.into_inner(), worker_caches: worker_caches.into_inner() }
}

/// Closes a worker's input and lets it exit (killed after [`RETIRE_GRACE`]). With a device
/// backend, a worker answers the end of its input with its `VkPipelineCache` data (frame tag
/// 3; empty where the device captures binaries instead), which is kept when its header names
/// the harvest's device — so the caches of workers that finish reach the archive. A worker
/// that crashed or was killed never gets here: its cache is lost with it.
fn retire(mut w: Worker, dispatcher: &Dispatcher<'_>) {
    w.input.take();
    let deadline = Instant::now() + RETIRE_GRACE;
    if let Some(device) = &dispatcher.opts.device {
        if let Ok(Ok(f)) = w.frames.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if f.tag == ANSWER_CACHE && cache_header_matches(&f.payload, device) {
                let data = Blob::new(f.payload);
                dispatcher
                    .sink
                    .capture
                    .insert_device_caches(vec![granary_archive::DeviceCache { device: device.clone(), data }]);
                dispatcher.worker_caches.fetch_add(1, Ordering::Relaxed);
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

/// What every slot thread of one isolated run shares: it sends each pipeline to a worker,
/// waits for the answer within the timeout and records it once checked.
struct Dispatcher<'a> {
    script: &'a Script,
    /// Each variant's `(origin script index, place among its variants)`, by harvest index.
    variants: HashMap<usize, (usize, usize)>,
    text: &'a Arc<[u8]>,
    ctx: &'a KeyContext,
    targets: TargetSet,
    opts: &'a IsolateOptions,
    sink: &'a Sink<'a>,
    blobs: &'a BlobTable,
    started: &'a AtomicUsize,
    worker_caches: &'a AtomicUsize,
}

/// How a request ended.
enum Outcome {
    Frame(Frame),
    Timeout,
    /// The watchdog saw the worker resident with this many bytes, over the limit.
    Memory(u64),
    Died(Option<String>),
    Protocol(String),
}

/// Waits for the answer to the request in flight on `w`: at most `timeout`, and with a
/// `memory_limit` on a platform that can read the worker's resident memory, sampling it every
/// [`MEMORY_SAMPLE_INTERVAL`] (an answer is taken as soon as it arrives, never delayed by the
/// sampling).
fn wait_for_answer(w: &Worker, timeout: Option<Duration>, memory_limit: Option<u64>) -> Outcome {
    let deadline = timeout.map(|t| Instant::now() + t);
    let pid = w.child.id();
    let rss = || crate::measure::process_rss_bytes(pid);
    // No watchdog where the platform cannot measure the worker (see the module doc).
    let watch = memory_limit.filter(|_| rss().is_some());
    // A worker already over the limit when the request goes out (a fresh worker larger than
    // the limit) is stopped at once, not after a compile that happened to finish between
    // samples: the same outcome however fast the compile.
    if let (Some(limit), Some(now)) = (watch, rss()) {
        if now > limit {
            return Outcome::Memory(now);
        }
    }
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let r = match (watch, left) {
            (Some(_), left) => {
                w.frames.recv_timeout(left.map_or(MEMORY_SAMPLE_INTERVAL, |l| l.min(MEMORY_SAMPLE_INTERVAL)))
            }
            (None, Some(left)) => w.frames.recv_timeout(left),
            (None, None) => w.frames.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match r {
            Ok(Ok(f)) => return Outcome::Frame(f),
            Ok(Err(m)) => return Outcome::Protocol(m),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Outcome::Died(None),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Outcome::Timeout;
                }
                if let (Some(limit), Some(now)) = (watch, rss()) {
                    if now > limit {
                        return Outcome::Memory(now);
                    }
                }
            }
        }
    }
}

/// `bytes` in MiB, for messages: whole where exact, else to one decimal.
fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    }
}

/// `bytes` in MiB to one decimal, rounded up: a size over a whole-MiB limit never reads as
/// the limit itself ("limit of 256 MiB (resident 256.1 MiB)", not "256.0").
fn mib_up(bytes: u64) -> String {
    format!("{:.1} MiB", (bytes as f64 * 10.0 / f64::from(1u32 << 20)).ceil() / 10.0)
}

impl Dispatcher<'_> {
    fn spawn(&self) -> std::io::Result<Worker> {
        let w = spawn(&self.opts.worker, self.text)?;
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(w)
    }

    /// The name a pipeline of the selection is reported under: the script's (a variant's
    /// label).
    fn name_of(&self, index: usize, desc: &PipelineDescriptor) -> String {
        match (self.script.pipelines.get(index), desc.label()) {
            (Some(sp), _) => sp.display_name(),
            (None, Some(l)) => l.to_string(),
            (None, None) => format!("variant {index}"),
        }
    }

    /// The compile request for `index`: its index, and for a variant its origin and place.
    fn request(&self, index: usize) -> Vec<u8> {
        let mut p = (index as u64).to_le_bytes().to_vec();
        if let Some((origin, k)) = self.variants.get(&index) {
            p.extend_from_slice(&(*origin as u64).to_le_bytes());
            p.extend_from_slice(&(*k as u64).to_le_bytes());
        }
        p
    }

    fn compile_one(&self, index: usize, desc: &PipelineDescriptor, slot: &mut Option<Worker>) {
        let (sink, opts) = (self.sink, self.opts);
        let name = self.name_of(index, desc);
        let fail = |phase: &str, msg: String| sink.failed(process_failure(index, name.clone(), phase, msg));
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
                        format!("pipeline '{name}': cannot start worker {}: {e}", opts.worker.program.display()),
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
        let request = self.request(index);
        w.send(message_header(MSG_COMPILE, request.len()), Out::Owned(request));
        let outcome = wait_for_answer(w, opts.timeout, opts.memory_limit);
        w.cap.store(0, Ordering::SeqCst);
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
            Outcome::Memory(rss) => {
                if let Some(w) = slot.take() {
                    kill(w);
                }
                let limit = opts.memory_limit.map(mib).unwrap_or_default();
                return fail(
                    "memory",
                    format!(
                        "pipeline '{name}': worker passed the memory limit of {limit} (resident {}) while compiling it; worker killed and replaced",
                        mib_up(rss)
                    ),
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
        let rss = crate::measure::process_rss_bytes(w.child.id()).unwrap_or(frame.rss);
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
        match check_answer(frame, index, name, desc, self.ctx, self.targets, self.opts.device.as_deref())? {
            CheckedAnswer::Failed(f) => self.sink.failed(*f),
            CheckedAnswer::Compiled { entries, targets, lost } => {
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
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_just_over_a_whole_mib_limit_reads_over_it() {
        assert_eq!(mib_up((256 << 20) + 1), "256.1 MiB");
        assert_eq!(mib_up((256 << 20) + (1 << 19)), "256.5 MiB");
        assert_eq!(mib_up(256 << 20), "256.0 MiB");
        assert_eq!(mib(256 << 20), "256 MiB");
    }
}
