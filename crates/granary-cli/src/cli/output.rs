//! Standard output for every subcommand: `outln!` and [`print_json`].
//!
//! When the reader of a pipe goes away (`granary ls --json | head`), the command stops
//! quietly with status 141, as a Unix tool killed by SIGPIPE does, instead of panicking.
//! (SIGPIPE itself stays ignored: `harvest --isolate` must survive writing to a worker that
//! died.)

/// `println!` that stops the process quietly when standard output is a closed pipe.
macro_rules! outln {
    ($($t:tt)*) => { $crate::cli::output::write_stdout(format_args!($($t)*)) };
}

/// The version of the `--json` vocabulary (docs/JSON.md), in every `--json` output as
/// `schema_version`: raised when a field changes its meaning or goes away (fields are only
/// ever added within one version).
pub(crate) const SCHEMA_VERSION: u64 = 1;

/// The subcommand running, for `command` in its JSON; set once by `main`.
static COMMAND: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Records the subcommand that runs (its name as typed: `harvest`, `import-foz`).
pub(crate) fn set_command(name: &'static str) {
    let _ = COMMAND.set(name);
}

/// `value` (a JSON object) with `schema_version` and `command` added: the document every
/// `--json` output is. A value that is not an object goes under `result`.
pub(crate) fn envelope(value: serde_json::Value) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert("schema_version".into(), SCHEMA_VERSION.into());
    doc.insert("command".into(), (*COMMAND.get().unwrap_or(&"granary")).into());
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

/// Writes one line to standard output; a closed pipe ends the process quietly (see the
/// module doc), any other write error too, with a message.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|_| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(BROKEN_PIPE_STATUS);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(2);
    }
}
