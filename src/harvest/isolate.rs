//! The parent side of `harvest --isolate`: compiles run in `granary worker` processes. A worker
//! that crashes or exceeds the timeout on a pipeline is killed and replaced, and that pipeline
//! alone is recorded as failed; workers are also recycled after a number of pipelines or above
//! a memory limit. The parent alone owns the capture, and reads every worker answer through
//! the bounds-checked archive reader.

use super::sink::{process_failure, Sink};
use super::worker::{FRAME_HEADER, MAX_PAYLOAD};
use super::Failure;
use crate::archive::{Archive, WriteEntry};
use crate::descriptor::Blob;
use std::collections::HashMap;
use crate::descriptor::TargetSet;
use crate::script::Script;
use crate::sync::lock_std;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

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
}

struct Frame {
    ok: bool,
    rss: u64,
    libraries: u64,
    functions: u64,
    payload: Vec<u8>,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    frames: mpsc::Receiver<Result<Frame, String>>,
    stderr: Arc<Mutex<String>>,
    done: usize,
    last_counts: (u64, u64),
}

fn read_frames(mut out: impl Read, tx: mpsc::Sender<Result<Frame, String>>) {
    loop {
        let mut h = [0u8; FRAME_HEADER];
        if out.read_exact(&mut h).is_err() {
            return; // EOF: the worker exited or died
        }
        let word = |i: usize| u64::from_le_bytes(h[4 + 8 * i..12 + 8 * i].try_into().unwrap_or([0; 8]));
        if &h[..2] != b"GW" || h[2] > 1 || word(3) > MAX_PAYLOAD {
            let _ = tx.send(Err("worker sent a malformed frame".into()));
            return;
        }
        let mut payload = vec![0u8; word(3) as usize];
        if out.read_exact(&mut payload).is_err() {
            return;
        }
        let f = Frame { ok: h[2] == 0, rss: word(0), libraries: word(1), functions: word(2), payload };
        if tx.send(Ok(f)).is_err() {
            return;
        }
    }
}

fn spawn(exe: &Path, script: &Path, targets: TargetSet) -> std::io::Result<Worker> {
    let mut child = Command::new(exe)
        .arg("worker")
        .arg(script)
        .arg("--targets")
        .arg(targets.names())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
    let stderr_pipe = child.stderr.take().ok_or_else(|| std::io::Error::other("no stderr"))?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || read_frames(stdout, tx));
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
    Ok(Worker { child, stdin, frames: rx, stderr, done: 0, last_counts: (0, 0) })
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
pub(crate) fn run(script: &Script, pipelines: &[usize], targets: TargetSet, slots: usize, opts: &IsolateOptions, sink: &Sink<'_>) {
    let chunk = (pipelines.len() / (slots * 8)).clamp(1, 64);
    let chunks: Vec<&[usize]> = pipelines.chunks(chunk).collect();
    let next = AtomicUsize::new(0);
    let blobs = BlobTable::default();
    std::thread::scope(|s| {
        for _ in 0..slots {
            s.spawn(|| {
                let mut worker: Option<Worker> = None;
                while let Some(chunk) = chunks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    for &index in *chunk {
                        compile_one(script, index, targets, opts, sink, &blobs, &mut worker);
                        sink.progress();
                    }
                }
                if let Some(w) = worker.take() {
                    retire(w, sink);
                }
            });
        }
    });
}

fn retire(mut w: Worker, sink: &Sink<'_>) {
    drop(w.stdin);
    let _ = w.child.wait();
    sink.libraries_parsed.fetch_add(w.last_counts.0, Ordering::Relaxed);
    sink.functions_compiled.fetch_add(w.last_counts.1, Ordering::Relaxed);
}

/// Stage outputs received so far, by content: answers for pipelines that share a stage
/// function carry the same bytes, which the parent keeps once.
#[derive(Default)]
struct BlobTable(Mutex<HashMap<u128, Arc<Blob>>>);

impl BlobTable {
    fn intern(&self, entries: Vec<WriteEntry>) -> Vec<WriteEntry> {
        let mut table = lock_std(&self.0);
        entries
            .into_iter()
            .map(|w| {
                let mut e = (*w.entry).clone();
                for s in &mut e.stages {
                    for b in s.outputs.0.iter_mut().flatten() {
                        *b = table.entry(b.hash().0).or_insert_with(|| b.clone()).clone();
                    }
                }
                WriteEntry { entry: Arc::new(e), labels: w.labels }
            })
            .collect()
    }
}

#[allow(clippy::too_many_arguments)]
fn compile_one(
    script: &Script,
    index: usize,
    targets: TargetSet,
    opts: &IsolateOptions,
    sink: &Sink<'_>,
    blobs: &BlobTable,
    slot: &mut Option<Worker>,
) {
    let name = script.pipelines[index].display_name();
    let fail = |phase: &str, msg: String| sink.failed(process_failure(index, name.clone(), phase, msg));
    if slot.is_none() {
        match spawn(&opts.worker_exe, &script.path, targets) {
            Ok(w) => *slot = Some(w),
            Err(e) => return fail("crash", format!("pipeline '{name}': cannot start worker {}: {e}", opts.worker_exe.display())),
        }
    }
    let Some(w) = slot.as_mut() else { return };
    let outcome = match writeln!(w.stdin, "{index}").and_then(|_| w.stdin.flush()) {
        Err(e) => Outcome::Died(Some(format!("request could not be sent: {e}"))),
        Ok(()) => {
            let r = match opts.timeout {
                Some(t) => w.frames.recv_timeout(t),
                None => w.frames.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            };
            match r {
                Ok(Ok(f)) => Outcome::Frame(f),
                Ok(Err(m)) => Outcome::Died(Some(m)),
                Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Timeout,
                Err(mpsc::RecvTimeoutError::Disconnected) => Outcome::Died(None),
            }
        }
    };
    let frame = match outcome {
        Outcome::Frame(f) => f,
        Outcome::Timeout => {
            if let Some(w) = slot.take() {
                kill(w, sink);
            }
            let secs = opts.timeout.map_or(0.0, |t| t.as_secs_f64());
            return fail("timeout", format!("pipeline '{name}': compile did not finish within {secs} s; worker killed and replaced"));
        }
        Outcome::Died(msg) => {
            let how = slot.take().map(|w| kill(w, sink)).unwrap_or_default();
            let detail = msg.map(|m| format!("; {m}")).unwrap_or_default();
            return fail("crash", format!("pipeline '{name}': worker crashed while compiling it ({how}){detail}"));
        }
    };
    w.done += 1;
    w.last_counts = (frame.libraries, frame.functions);
    if frame.ok {
        match Archive::from_bytes(frame.payload).and_then(|a| a.verify().and_then(|_| a.entries())) {
            Ok(entries) if entries.len() == 1 => {
                sink.capture.insert_archived(blobs.intern(entries));
                sink.compiled();
            }
            Ok(_) => fail("crash", format!("pipeline '{name}': worker answered with a malformed entry")),
            Err(e) => fail("crash", format!("pipeline '{name}': worker answer is damaged: {e}")),
        }
    } else {
        match serde_json::from_slice::<Failure>(&frame.payload) {
            Ok(f) => sink.failed(f),
            Err(e) => fail("crash", format!("pipeline '{name}': unreadable failure from worker: {e}")),
        }
    }
    let over_count = opts.recycle_after > 0 && w.done >= opts.recycle_after;
    let over_memory = opts.memory_limit.is_some_and(|m| frame.rss > m);
    if over_count || over_memory {
        if let Some(w) = slot.take() {
            retire(w, sink);
        }
    }
}

enum Outcome {
    Frame(Frame),
    Timeout,
    Died(Option<String>),
}

/// Kills a worker (if still running) and describes how it ended, with its last stderr line.
fn kill(mut w: Worker, sink: &Sink<'_>) -> String {
    let _ = w.child.kill();
    let how = describe_exit(&mut w.child);
    // Give the stderr reader a moment to collect the last words.
    std::thread::sleep(Duration::from_millis(20));
    let tail = lock_std(&w.stderr).trim().lines().last().unwrap_or("").to_string();
    sink.libraries_parsed.fetch_add(w.last_counts.0, Ordering::Relaxed);
    sink.functions_compiled.fetch_add(w.last_counts.1, Ordering::Relaxed);
    if tail.is_empty() {
        how
    } else {
        format!("{how}: {tail}")
    }
}
