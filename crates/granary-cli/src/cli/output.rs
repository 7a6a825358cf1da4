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

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
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
