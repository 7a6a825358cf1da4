//! Layer 9 — argument parsing and output formatting only; all work is done by the library.
//! This module only dispatches: each subcommand is a module, standard output goes through
//! `output` (`outln!`, `print_json`), shared argument groups are `device_args` and
//! `validation`.
//!
//! Exit status: 0 success; 1 the command ran but found problems (a pipeline failed to
//! compile, an archive failed verification); 2 the command could not run (bad arguments,
//! unreadable script, unwritable output, an archive for another device); 130/143 `harvest`
//! interrupted by SIGINT/SIGTERM.

#[macro_use]
mod output;

mod bench;
mod capture;
mod device_args;
mod devices;
mod export_mtl4;
mod harvest;
mod import_foz;
mod inspect;
mod plan;
mod prune;
mod salvage;
mod sign;
mod stress;
mod validation;
mod warm;
mod worker;
mod workload;

use clap::{Parser, Subcommand};

/// Compile every GPU pipeline from all cores at once and capture the results into one archive.
#[derive(Parser)]
#[command(name = "granary", version, about, long_about = None, after_help = "\
Examples:
  granary harvest examples/renderer/pipelines.json -o renderer.granary
  granary harvest pipelines.json -o out.granary -j 16 --targets spirv,msl --flush-every 1000
  granary ls renderer.granary
  granary extract renderer.granary prepass/low/static/opaque --target spirv -o out/
  granary merge a.granary b.granary -o all.granary
  granary plan pipelines.json --shards 4
  granary harvest pipelines.json -o shard-2.granary --shard 2/4   # then merge all 4

Exit status: 0 success, 1 finished with failures (see the summary), 2 could not run (bad
arguments, unwritable output, an archive for another device), 130 and 143 interrupted by
Ctrl-C (SIGINT) and SIGTERM (harvest keeps what landed for --resume).")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile every pipeline of a pipelines script into an archive.
    Harvest(harvest::HarvestArgs),
    /// List the pipelines in an archive.
    Ls(inspect::LsArgs),
    /// Check every byte of one or more archives.
    Verify(inspect::VerifyArgs),
    /// Write one pipeline's stage outputs to files.
    Extract(inspect::ExtractArgs),
    /// Sign an archive with a private key (Ed25519, every byte), so a game that pins the
    /// public key refuses any archive someone else made or changed; `--generate-key NAME`
    /// makes the key pair. Check with `granary verify ARCHIVE --key NAME.pub`.
    Sign(sign::SignArgs),
    /// Combine archives into one (deterministic; duplicates stored once).
    Merge(inspect::MergeArgs),
    /// Write a synthetic workload (a pipelines script and its shaders) for benchmarks.
    Gen(workload::GenArgs),
    /// Copy every intact pipeline of a damaged archive into a new one and report what was lost
    /// (a shard archive stays that shard).
    Salvage(salvage::SalvageArgs),
    /// Show how `harvest --shard I/N` splits a script: per shard the pipelines, stage
    /// functions and estimated cost, the stage functions compiled in more than one shard, and
    /// the expected imbalance.
    Plan(plan::PlanArgs),
    /// Keep exactly the archived pipelines a script produces, labelled as the script labels them
    /// (no compiling); a shard archive stays that shard while the script's pipelines are unchanged.
    Prune(prune::PruneArgs),
    /// Run the bug report's race scenarios against the real compiler and capture, checking
    /// every invariant.
    Stress(stress::StressArgs),
    /// Measure scaling, baselines, write latency and lookups on a generated workload.
    Bench(bench::BenchArgs),
    /// List the Vulkan devices, with the identity that decides whether a binary is valid on
    /// each and what each supports.
    Devices(devices::DevicesArgs),
    /// Create every pipeline of an archive on the local Vulkan device from its driver
    /// binaries (or its SPIR-V) and report how each was made and how long it took.
    Warm(warm::WarmArgs),
    /// Turn Fossilize databases (.foz) into a pipelines script and the SPIR-V it names.
    ImportFoz(import_foz::ImportFozArgs),
    /// Write an archive's or a script's pipelines as a Metal 4 pipelines script for `metal-tt`.
    ExportMtl4(export_mtl4::ExportMtl4Args),
    /// Internal: compile pipelines for `harvest --isolate` (reads indices on stdin).
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
}

/// How many entries of a long list (missing pipelines, fields not carried) a text report
/// shows; `--json` has them all.
pub(crate) const LISTED: usize = 10;

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    // `--json` anywhere: a failure is reported as a JSON error object on stdout too.
    let json = std::env::args_os().skip(1).take_while(|a| a != "--").any(|a| a == "--json");
    // The subcommand as typed (no option of `granary` itself takes a value, so it is the first
    // argument that is no option), for `command` in the JSON, even of arguments that do not parse.
    if let Some(name) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        if <Cli as clap::CommandFactory>::command().find_subcommand(&name).is_some() {
            output::set_command(name);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            let shown = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || matches!(e.kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
            if json && !shown {
                let text = e.render().to_string();
                let message = text.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
                output::print_json_error(message, 2);
            }
            e.exit();
        }
    };
    let result = match cli.command {
        Command::Harvest(a) => harvest::run(a),
        Command::Warm(a) => warm::run(a),
        Command::Ls(a) => inspect::ls(a),
        Command::Verify(a) => inspect::verify(a),
        Command::Extract(a) => inspect::extract(a),
        Command::Sign(a) => sign::run(a),
        Command::Merge(a) => inspect::merge(a),
        Command::Gen(a) => workload::run(a),
        Command::Salvage(a) => salvage::run(a),
        Command::Prune(a) => prune::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Devices(a) => devices::run(a),
        Command::ExportMtl4(a) => export_mtl4::run(a),
        Command::Worker(a) => worker::run(a),
        Command::Stress(a) => stress::run_cli(a),
        Command::Bench(a) => bench::run_cli(a),
        Command::ImportFoz(a) => import_foz::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            let text = error_text(&e);
            eprintln!("error: {text}");
            if json {
                output::print_json_error(&text, 2);
            }
            2
        }
    }
}

/// What `main` sets in the environment before anything runs: `RUST_LIB_BACKTRACE=0` unless
/// it is set, so that `RUST_BACKTRACE=1` (common on developers' machines and in CI) keeps
/// panics' backtraces but does not make every library error capture one. granary prints errors
/// as text and never shows such a backtrace, and a dependency on the front end's hot path,
/// spirq's SPIR-V reflection, makes and drops errors while it succeeds: with the capture on, a
/// SPIR-V library's front end cost about 2.5× its CPU time (docs/BENCHMARKS.md). The setting reaches
/// the workers and calibration harvests this process starts. `RUST_LIB_BACKTRACE=1` turns the
/// capture back on.
pub fn library_backtraces(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<(&'static str, &'static str)> {
    var("RUST_LIB_BACKTRACE").is_none().then_some(("RUST_LIB_BACKTRACE", "0"))
}

/// An error and its causes on one line, `a: b: c`, each cause once: a library error that
/// already says its cause in its own message (`…: No such file or directory (os error 2)`) is
/// not followed by that cause again.
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text += ": ";
        }
        text += &part;
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn library_backtraces_are_off_unless_named() {
        let env =
            |v: Option<&'static str>| move |k: &str| (k == "RUST_LIB_BACKTRACE").then_some(v).flatten().map(Into::into);
        assert_eq!(super::library_backtraces(env(None)), Some(("RUST_LIB_BACKTRACE", "0")));
        assert_eq!(super::library_backtraces(env(Some("1"))), None, "an explicit setting is kept");
        assert_eq!(super::library_backtraces(env(Some("0"))), None);
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::from_raw_os_error(2);
        let inner = anyhow::Error::new(std::io::Error::new(io.kind(), format!("o.granary: {io}")));
        let e = anyhow::Error::from(granary_cause(io)).context("harvest of s.json failed");
        let text = super::error_text(&e);
        assert_eq!(text.matches("os error 2").count(), 1, "{text}");
        assert!(text.starts_with("harvest of s.json failed: o.granary: "), "{text}");
        assert_eq!(
            super::error_text(&inner.context("outer")),
            "outer: o.granary: No such file or directory (os error 2)"
        );
    }

    /// A library error as thiserror writes one that names its source in its message.
    fn granary_cause(io: std::io::Error) -> Wrapped {
        Wrapped(io)
    }

    #[derive(Debug)]
    struct Wrapped(std::io::Error);
    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "o.granary: {}", self.0)
        }
    }
    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
}
