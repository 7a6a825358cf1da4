//! The worker processes of `harvest --isolate`: starting one from a complete
//! [`WorkerCommand`], the threads that feed its input, read its answer frames and keep the
//! tail of its standard error, and ending it (killed, with how it ended described).
//!
//! Invariants: the library runs exactly the command it is given (program, arguments,
//! environment) with piped standard streams and adds nothing of its own; writes to a worker
//! go through a thread, so a worker that stops reading cannot block the parent past the
//! timeout; a worker is killed and waited for before it is dropped (no zombie).

use super::wire::{message_header, read_frames, Frame, MSG_SCRIPT};
use crate::sync::lock_std;
use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// The complete command that starts one `--isolate` worker (`granary worker …` for the CLI):
/// the library runs exactly this, with piped standard streams, and adds no argument or
/// variable of its own. The worker must speak the protocol of `harvest/wire.rs` on its
/// standard input and output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments, complete.
    pub args: Vec<OsString>,
    /// Variables set in its environment, on top of the parent's.
    pub env: Vec<(OsString, OsString)>,
}

/// How long a retiring worker may take to exit after its input closed before it is killed.
pub const RETIRE_GRACE: Duration = Duration::from_secs(5);

/// Bytes for the writer thread.
pub(crate) enum Out {
    /// Bytes owned by this message.
    Owned(Vec<u8>),
    /// Bytes shared by every worker (the script text).
    Shared(Arc<[u8]>),
}

/// One running worker process and its channels.
pub(crate) struct Worker {
    /// The process.
    pub child: Child,
    /// To the thread writing the worker's input; dropping it closes the input.
    pub input: Option<mpsc::Sender<Out>>,
    /// Its answer frames, or why the stream broke.
    pub frames: mpsc::Receiver<Result<Frame, String>>,
    /// The largest payload the request in flight may answer with; 0 when none is in flight.
    pub cap: Arc<AtomicU64>,
    /// The tail of its standard error.
    pub stderr: Arc<Mutex<String>>,
    /// Libraries (by name) this worker was sent.
    pub libraries: HashSet<String>,
    /// Pipelines it answered.
    pub done: usize,
}

impl Worker {
    /// Queues one message (header and payload) for the worker's input.
    pub fn send(&self, header: Vec<u8>, body: Out) {
        if let Some(tx) = &self.input {
            // A worker that died is noticed through its answer stream.
            let _ = tx.send(Out::Owned(header));
            let _ = tx.send(body);
        }
    }
}

/// Starts `command` and sends it the script `text` (the first message).
pub(crate) fn spawn(command: &WorkerCommand, text: &Arc<[u8]>) -> std::io::Result<Worker> {
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
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

/// Waits for `child` and says how it ended (a signal by name).
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

/// Kills a worker (if still running) and describes how it ended, with its last stderr line.
pub(crate) fn kill(mut w: Worker) -> String {
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
