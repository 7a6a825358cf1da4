//! `granary stress`.

use super::device_args::{BackendKind, DeviceArgs};
use super::validation::ValidateArgs;
use granary::descriptor::TargetSet;
use granary_lab::stress::{run, Mode, StressOptions};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(after_help = "With --backend vulkan, every compiler of a run (the single-thread reference, each \
generation, each per-thread compiler) creates its pipelines on the one device, and the final archive's device \
section is checked as well: one binary set per pipeline for that device, the LIBRARY flag exactly on pipelines \
with an unspecialized colour format, blend or write mask, binaries present where the device captures them \
(VK_KHR_pipeline_binary) and empty where it keeps VkPipelineCache data, and each pipeline created on the \
driver once per iteration. Driver binaries are not reproducible, so then the final archive is compared with \
the reference without its device data; in cache-data mode (e.g. lavapipe) the whole archive must still be \
byte-identical.")]
pub struct StressArgs {
    /// Scenario: shared-vertex, flush-during-compile, rotate, per-thread, seed-mix, or all.
    #[arg(long, value_parser = parse_mode)]
    mode: Vec<ModeArg>,
    /// Compile threads [default: available cores].
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// Size of the generated seed-scale workload.
    #[arg(long, default_value_t = 2000)]
    pipelines: usize,
    /// Repeat each scenario until this many seconds have passed.
    #[arg(long)]
    seconds: Option<f64>,
    /// Use this pipelines script instead of a generated workload.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Generator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// rotate and seed-mix: start a fresh compiler and capture every K pipelines [default: a
    /// fifth of the workload].
    #[arg(long, value_name = "K")]
    rotate_every: Option<usize>,
    /// Print the reports as JSON.
    #[arg(long)]
    json: bool,
    // --backend, --device, --no-pipeline-binaries, --no-pipeline-libraries (shared with harvest).
    #[command(flatten)]
    device: DeviceArgs,
    // --validate (shared with harvest and warm): messages on stderr, exit status 1 on errors.
    #[command(flatten)]
    validate: ValidateArgs,
}

#[derive(Clone)]
pub struct ModeArg(Vec<Mode>);

fn parse_mode(s: &str) -> Result<ModeArg, String> {
    if s == "all" {
        return Ok(ModeArg(Mode::ALL.to_vec()));
    }
    Mode::parse(s).map(|m| ModeArg(vec![m])).ok_or_else(|| {
        format!(
            "unknown mode '{s}' (expected shared-vertex, flush-during-compile, rotate, per-thread, seed-mix or all)"
        )
    })
}

pub fn run_cli(a: StressArgs) -> anyhow::Result<i32> {
    let modes: Vec<Mode> =
        if a.mode.is_empty() { Mode::ALL.to_vec() } else { a.mode.into_iter().flat_map(|m| m.0).collect() };
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let validation = a.validate.policy();
    anyhow::ensure!(
        !validation.flag || a.device.backend == BackendKind::Vulkan,
        "--validate needs --backend vulkan (the none backend calls no driver)"
    );
    let (backend, log) = a.device.open_validated(TargetSet::SPIRV, false, validation.on)?;
    let mut failed = false;
    let mut reports = Vec::new();
    for mode in modes {
        let r = run(&StressOptions {
            mode,
            threads,
            script: a.script.clone(),
            pipelines: a.pipelines,
            seconds: a.seconds,
            seed: a.seed,
            rotate_every: a.rotate_every,
            work_dir: None,
            backend: backend.clone(),
        })?;
        failed |= !r.violations.is_empty();
        if !a.json {
            outln!(
                "{:<21} {} threads, {} pipelines x {} iterations, {} compiles, {} archive writes ({} checked), {:.2} s: {}",
                r.mode,
                r.threads,
                r.pipelines,
                r.iterations,
                r.compiles,
                r.writes,
                r.writes_checked,
                r.wall_seconds,
                if r.violations.is_empty() { "all invariants held".to_string() } else { format!("{} VIOLATIONS", r.violations.len()) }
            );
            if let Some(d) = &r.device {
                outln!(
                    "  backend {} on {d} ({}), {} pipelines created on the device",
                    r.backend,
                    r.captures.as_deref().unwrap_or("?"),
                    r.driver_creates
                );
            }
            if r.device_rejected.count > 0 {
                outln!(
                    "  left out: {} pipelines the device rejects on a single thread (first: {})",
                    r.device_rejected.count,
                    r.device_rejected.first.as_deref().unwrap_or("")
                );
            }
            for c in &r.checks {
                outln!("  checked: {c}");
            }
            for v in &r.violations {
                outln!("  violation: {v}");
            }
        }
        reports.push(r);
    }
    // The device is destroyed before the layer's messages are reported (its own are in).
    drop(backend);
    // The JSON is the reports, one per mode; the layer's messages go to stderr and the status.
    failed |= log.is_some_and(|log| validation.finish(&log).failed);
    if a.json {
        super::output::print_json(&serde_json::json!({"reports": reports}))?;
    }
    Ok(if failed { 1 } else { 0 })
}
