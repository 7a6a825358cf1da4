//! The hidden `granary worker` subcommand: one `harvest --isolate` worker process, started by
//! the parent with the complete command `harvest` builds.

use super::device_args::DeviceArgs;
use super::validation::{message_json, ValidateArgs};
use anyhow::Context as _;
use granary::descriptor::TargetSet;
use granary::frontend::Profile;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The pipelines script.
    script: PathBuf,
    /// Output targets.
    #[arg(long, default_value = "spirv", value_parser = TargetSet::parse)]
    targets: TargetSet,
    /// Device profile.
    #[arg(long, value_name = "NAME", default_value = "default", value_parser = Profile::named)]
    profile: &'static Profile,
    /// The harvesting parent's process id: the worker exits if it is gone (and, on Linux, is
    /// killed when it dies).
    #[arg(long, value_name = "PID")]
    parent_pid: Option<u32>,
    /// How outputs are checked (`harvest --check-outputs`).
    #[arg(long, value_name = "MODE", default_value = "auto")]
    check_outputs: granary::frontend::CheckOutputs,
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    validate: ValidateArgs,
    /// With validation: append each message, as one JSON line, to DIR/worker-PID.jsonl as it
    /// arrives, for the harvesting parent to count (without: print them on stderr).
    #[arg(long, value_name = "DIR")]
    validation_log: Option<PathBuf>,
    /// The largest library the worker parses, in bytes (default: no limit; the parent's
    /// timeout and memory watchdog contain the worker).
    #[arg(long, value_name = "BYTES")]
    max_library_bytes: Option<u64>,
}

/// Runs the worker loop with the backend and validation sink its arguments select; returns its exit status.
pub fn run(a: WorkerArgs) -> anyhow::Result<i32> {
    let validation = a.validate.policy();
    let (backend, log) = a.device.open_validated(a.targets, true, validation.on)?;
    if let Some(log) = &log {
        match &a.validation_log {
            Some(dir) => {
                let path = dir.join(format!("worker-{}.jsonl", std::process::id()));
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("cannot open the validation log {}", path.display()))?;
                let file = std::sync::Mutex::new(file);
                log.set_sink(move |m| {
                    use std::io::Write as _;
                    let mut line = message_json(m).to_string();
                    line.push('\n');
                    // One write per line on an append-only file: a killed worker leaves whole
                    // lines (a cut one is counted as an error by the parent).
                    let _ = file.lock().unwrap_or_else(|p| p.into_inner()).write_all(line.as_bytes());
                });
            }
            None => log.set_sink(|m| {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "granary worker: validation {}", message_json(m));
            }),
        }
    }
    Ok(granary::harvest::worker_main(
        &a.script,
        a.targets,
        a.profile,
        a.check_outputs,
        a.parent_pid,
        backend,
        a.max_library_bytes,
    ))
}
