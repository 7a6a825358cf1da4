//! The `granary` command-line tool: a thin layer over the library.

#![forbid(unsafe_code)]

mod cli;

fn main() {
    // Before any thread exists (setting the environment is not thread-safe).
    if let Some((name, value)) = cli::library_backtraces(|k| std::env::var_os(k)) {
        std::env::set_var(name, value);
    }
    std::process::exit(cli::main());
}
