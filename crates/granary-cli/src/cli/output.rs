//! Standard output for every subcommand: `outln!`, [`print_json`] and, for a document written
//! in pieces, [`Stdout`].
//!
//! When the reader of a pipe goes away (`granary ls --json | head`), the command stops
//! quietly with status 141, as a Unix tool killed by SIGPIPE does, instead of panicking.
//! (SIGPIPE itself stays ignored: `harvest --isolate` must survive writing to a worker that
//! died.)

use std::io::Write as _;

/// `println!` that stops the process quietly when standard output is a closed pipe.
macro_rules! outln {
    ($($t:tt)*) => { $crate::cli::output::write_stdout(format_args!($($t)*)) };
}

/// The version of the `--json` vocabulary (docs/JSON.md), in every `--json` output as
/// `schema_version`: raised when a field changes its meaning or goes away (fields are only
/// ever added within one version).
pub(crate) const SCHEMA_VERSION: u64 = 1;

/// The subcommand running, for `command` in its JSON; set once by `main`.
static COMMAND: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Records the subcommand that runs (its name as typed: `harvest`, `import-foz`).
pub(crate) fn set_command(name: String) {
    let _ = COMMAND.set(name);
}

/// `value` (a JSON object) with `schema_version` and `command` added: the document every
/// `--json` output is. A value that is not an object goes under `result`.
pub(crate) fn envelope(value: serde_json::Value) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert("schema_version".into(), SCHEMA_VERSION.into());
    doc.insert("command".into(), COMMAND.get().map_or("granary", String::as_str).into());
    match value {
        serde_json::Value::Object(fields) => doc.extend(fields),
        other => {
            doc.insert("result".into(), other);
        }
    }
    serde_json::Value::Object(doc)
}

/// Prints `value` as pretty JSON on stdout, in the [`envelope`].
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(&envelope(serde_json::to_value(value)?))?);
    Ok(())
}

/// The `--json` document of a command that could not run or was stopped: `error` with its
/// `message` and the process's `exit_status`, so a script reading stdout always gets JSON.
pub(crate) fn print_json_error(message: &str, exit_status: i32) {
    let error = serde_json::json!({"error": {"message": message, "exit_status": exit_status}});
    outln!("{}", serde_json::to_string_pretty(&envelope(error)).unwrap_or_default());
}

/// Status of a command whose standard output was closed by its reader (128 + SIGPIPE).
const BROKEN_PIPE_STATUS: i32 = 141;

/// Ends the process after a failed write to standard output: quietly with status 141 for a
/// closed pipe, with a message and status 2 for anything else.
fn stop(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(BROKEN_PIPE_STATUS);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(2);
}

/// Writes one line to standard output; a closed pipe ends the process quietly (see the
/// module doc), any other write error too, with a message.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|_| out.write_all(b"\n")) {
        stop(e);
    }
}

/// Standard output as a buffered [`std::io::Write`] for output produced in pieces (`ls --json`
/// streams its document through it), with `outln!`'s rule: a closed pipe ends the process
/// quietly with status 141, any other write error with a message and status 2. So no write
/// through it returns an error (except `Interrupted`, which `write_all` retries). Call
/// [`finish_line`](Self::finish_line) at the end: dropping it flushes without that check.
pub(crate) struct Stdout(std::io::BufWriter<std::io::StdoutLock<'static>>);

impl Stdout {
    /// Locks standard output for the writer's lifetime.
    pub(crate) fn new() -> Self {
        Stdout(std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()))
    }

    /// Ends the output with a newline (as `outln!` ends each line) and flushes it.
    pub(crate) fn finish_line(mut self) {
        if let Err(e) = self.0.write_all(b"\n").and_then(|_| self.0.flush()) {
            stop(e);
        }
    }
}

/// Passes `Interrupted` through (the caller retries it) and ends the process on any other error.
fn checked<T>(r: std::io::Result<T>) -> std::io::Result<T> {
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::Interrupted => stop(e),
        r => r,
    }
}

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        checked(self.0.write(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        checked(self.0.flush())
    }
}
