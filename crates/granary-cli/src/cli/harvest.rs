//! `granary harvest`.

use anyhow::Context as _;
use granary::descriptor::TargetSet;
use granary::frontend::Profile;
use granary::harvest::shard::ShardSpec;
use granary::harvest::{harvest_shard, HarvestOptions, IsolateOptions, Progress};
use std::io::IsTerminal as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct HarvestArgs {
    /// The pipelines script (JSON; see docs/FORMAT.md).
    script: PathBuf,
    /// The archive to write (replaced atomically).
    #[arg(short, long)]
    output: PathBuf,
    /// Worker threads [default: available cores].
    #[arg(short = 'j', long)]
    threads: Option<usize>,
    /// Output targets, comma-separated: spirv, msl, hlsl, glsl.
    #[arg(long, default_value = "spirv", value_parser = parse_targets)]
    targets: TargetSet,
    /// All or nothing per pipeline: a pipeline whose stage function could not be written for
    /// one of --targets fails (by default it lands with the targets left, and the lost target
    /// is reported).
    #[arg(long)]
    require_all_targets: bool,
    /// Device profile: the language version of each target and the capabilities a shader may
    /// use (default: SPIR-V 1.3 for Vulkan 1.1, MSL 2.4, HLSL SM 6.0, GLSL 450; vulkan1.1,
    /// vulkan1.3, metal3-apple, d3d12-sm6.0). Part of every key.
    #[arg(long, value_name = "NAME", default_value = "default", value_parser = parse_profile)]
    profile: &'static Profile,
    /// Every N compiled pipelines, append what is new to OUTPUT.journal while compiling
    /// continues (a kill loses at most N pipelines; --resume replays the journal).
    #[arg(long, value_name = "N")]
    flush_every: Option<usize>,
    /// Keep the pipelines of an existing (verified) output archive and its journal that the
    /// script still produces; compile only the rest.
    #[arg(long)]
    resume: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Write every failure, then every target lost by a stage function (phase `target`), as
    /// JSON to FILE.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    quiet: bool,
    /// Compile in worker processes: a worker that crashes or hangs costs one pipeline, not
    /// the harvest.
    #[arg(long)]
    isolate: bool,
    /// With --isolate: kill and replace a worker that spends longer than SECONDS on one
    /// pipeline.
    #[arg(long, value_name = "SECONDS", requires = "isolate", default_value_t = 300.0)]
    timeout: f64,
    /// With --isolate: replace each worker after N pipelines (drivers leak; each new worker
    /// re-parses the libraries and stage functions it needs).
    #[arg(long, value_name = "N", requires = "isolate", default_value_t = 10000)]
    recycle_after: usize,
    /// With --isolate: replace a worker whose resident memory exceeds MIB mebibytes.
    #[arg(long, value_name = "MIB", requires = "isolate")]
    worker_memory_limit: Option<u64>,
    /// Write a timeline of the harvest to FILE: Chrome JSON trace events, one track per worker
    /// thread (per worker process slot with --isolate), a slice per library parse, stage
    /// function, pipeline and driver compile, and the journal flushes. Open it in
    /// https://ui.perfetto.dev or chrome://tracing.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Compile only shard I of N (0 ≤ I < N): every shard reads the whole script and they agree
    /// on who compiles what (`granary plan SCRIPT --shards N` shows the split); `granary merge`
    /// of all N shard archives gives the bytes of an unsharded harvest. `/N` takes I from
    /// SLURM_ARRAY_TASK_ID (a Slurm job array) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job).
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    shard: Option<String>,
    /// The same as `--shard /N`: shard I of N, I from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "N")]
    shards: Option<u32>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// `--shard` / `--shards`, with the index taken from the environment where it is not given.
fn shard_spec(shard: Option<&str>, shards: Option<u32>) -> anyhow::Result<Option<ShardSpec>> {
    use granary::harvest::shard::index_from_env;
    let (index, count) = match (shard, shards) {
        (Some(text), _) => ShardSpec::parse(text).map_err(anyhow::Error::msg)?,
        (None, Some(n)) => {
            anyhow::ensure!(n >= 1, "--shards must be at least 1");
            (None, n)
        }
        (None, None) => return Ok(None),
    };
    let index = match index {
        Some(i) => i,
        None => index_from_env(count, |v| std::env::var(v).ok()).map_err(anyhow::Error::msg)?,
    };
    Ok(Some(ShardSpec { index, count }))
}

/// Backend and device selection, shared by `harvest` and `stress`.
#[derive(clap::Args, Clone, Debug)]
pub struct DeviceArgs {
    /// none: the front end's translations only. vulkan: also create every pipeline on a Vulkan
    /// driver from all threads and store the driver's binaries for that device
    /// (VK_KHR_pipeline_binary), or its VkPipelineCache data where the extension is missing.
    /// Needs the spirv target. See `granary devices`.
    #[arg(long, value_enum, default_value = "none")]
    pub backend: BackendKind,
    /// With --backend vulkan: the device, by index or part of its name (`granary devices`
    /// lists them) [default: 0].
    #[arg(long, value_name = "N|NAME")]
    pub device: Option<String>,
    /// With --backend vulkan: keep the driver's VkPipelineCache data even where
    /// VK_KHR_pipeline_binary exists.
    #[arg(long)]
    pub no_pipeline_binaries: bool,
    /// With --backend vulkan: do not use graphics pipeline libraries even where the device has
    /// them, as on a device without them (pipelines with unspecialized colour attachments then
    /// fail, saying so).
    #[arg(long)]
    pub no_pipeline_libraries: bool,
    /// With --backend vulkan: leave the driver's internal cache on while capturing binaries.
    /// By default granary switches it off where the driver allows, so every capture is a real
    /// compile; on NVIDIA the internal cache also shares compile work between pipelines
    /// (docs/BENCHMARKS.md measures both).
    #[arg(long)]
    pub driver_internal_cache: bool,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// Link checks only; the archive holds naga's translations.
    None,
    /// Real driver pipelines and their binaries.
    Vulkan,
}

impl DeviceArgs {
    /// The backend these arguments ask for (`None` for `none`). `share_identical`: create each
    /// driver-identical pipeline once (a harvest); off where a backend must create every
    /// pipeline every time (the race modes, the benchmark's passes).
    pub fn open(
        &self,
        targets: TargetSet,
        share_identical: bool,
    ) -> anyhow::Result<Option<std::sync::Arc<dyn granary::backend::Backend>>> {
        match self.backend {
            BackendKind::None => {
                anyhow::ensure!(
                    self.device.is_none()
                        && !self.no_pipeline_binaries
                        && !self.no_pipeline_libraries
                        && !self.driver_internal_cache,
                    "--device, --no-pipeline-binaries, --no-pipeline-libraries and --driver-internal-cache need \
                     --backend vulkan"
                );
                Ok(None)
            }
            BackendKind::Vulkan => {
                anyhow::ensure!(
                    targets.contains(granary::descriptor::Target::Spirv),
                    "--backend vulkan creates pipelines from SPIR-V: add spirv to --targets"
                );
                let b = granary_vulkan::VulkanBackend::open(&granary_vulkan::VulkanOptions {
                    device: self.device.clone(),
                    no_pipeline_binaries: self.no_pipeline_binaries,
                    no_libraries: self.no_pipeline_libraries,
                    driver_internal_cache: self.driver_internal_cache,
                    share_identical,
                })
                .context("cannot open the Vulkan device")?;
                Ok(Some(std::sync::Arc::new(b)))
            }
        }
    }

    /// The same selection as worker arguments.
    pub fn worker_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.backend == BackendKind::Vulkan {
            v.push("--backend=vulkan".to_string());
            if let Some(d) = &self.device {
                v.push(format!("--device={d}"));
            }
            if self.no_pipeline_binaries {
                v.push("--no-pipeline-binaries".into());
            }
            if self.no_pipeline_libraries {
                v.push("--no-pipeline-libraries".into());
            }
            if self.driver_internal_cache {
                v.push("--driver-internal-cache".into());
            }
        }
        v
    }
}

#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The pipelines script.
    script: PathBuf,
    /// Output targets.
    #[arg(long, default_value = "spirv", value_parser = parse_targets)]
    targets: TargetSet,
    /// Device profile.
    #[arg(long, value_name = "NAME", default_value = "default", value_parser = parse_profile)]
    profile: &'static Profile,
    /// The harvesting parent's process id: the worker exits if it is gone (and, on Linux, is
    /// killed when it dies).
    #[arg(long, value_name = "PID")]
    parent_pid: Option<u32>,
    #[command(flatten)]
    device: DeviceArgs,
}

pub fn worker(a: WorkerArgs) -> anyhow::Result<i32> {
    let backend = a.device.open(a.targets, true)?;
    Ok(granary::harvest::worker_main(&a.script, a.targets, a.profile, a.parent_pid, backend))
}

fn parse_targets(s: &str) -> Result<TargetSet, String> {
    TargetSet::parse(s)
}

fn parse_profile(s: &str) -> Result<&'static Profile, String> {
    Profile::named(s)
}

pub fn run(a: HarvestArgs) -> anyhow::Result<i32> {
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    anyhow::ensure!(threads >= 1, "-j must be at least 1");
    let shard = shard_spec(a.shard.as_deref(), a.shards)?;
    let backend = a.device.open(a.targets, true)?;
    let opts = HarvestOptions {
        script: a.script.clone(),
        output: a.output.clone(),
        threads,
        targets: a.targets,
        profile: a.profile,
        flush_every: a.flush_every,
        resume: a.resume,
        require_all_targets: a.require_all_targets,
        backend: backend.clone(),
        trace: a.trace.clone(),
        isolate: if a.isolate {
            anyhow::ensure!(a.timeout > 0.0 && a.timeout.is_finite(), "--timeout must be a positive number of seconds");
            Some(IsolateOptions {
                worker_exe: std::env::current_exe().context("cannot find the granary executable to start workers")?,
                timeout: Some(std::time::Duration::from_secs_f64(a.timeout)),
                recycle_after: a.recycle_after,
                memory_limit: a.worker_memory_limit.map(|m| m << 20),
                worker_args: a.device.worker_args(),
                device: backend.as_ref().and_then(|b| b.device()),
            })
        } else {
            None
        },
    };
    let bar = if !a.quiet && std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} tasks, eta {eta} {msg}",
        ) {
            bar.set_style(style);
        }
        Some(bar)
    } else {
        None
    };
    let on_progress = |p: Progress| {
        if let Some(bar) = &bar {
            match p {
                Progress::Planned { tasks } => bar.set_length(tasks as u64),
                Progress::TaskDone => bar.inc(1),
                Progress::Flushed => bar.set_message("journal flushed"),
            }
        }
    };
    let summary = harvest_shard(&opts, shard, &on_progress)
        .with_context(|| format!("harvest of {} failed", a.script.display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if let Some(path) = &a.report {
        let records: Vec<_> = summary.failures.iter().chain(&summary.lost_targets).collect();
        let text = serde_json::to_string_pretty(&records)?;
        std::fs::write(path, text + "\n").with_context(|| format!("cannot write report {}", path.display()))?;
    }
    if a.json {
        super::print_json(&summary)?;
    } else {
        eprint!("{}", summary.to_text());
    }
    // Exit 1 when any pipeline failed, including a harvest in which every pipeline failed and
    // the existing archive was kept, or when a pipeline landed without a requested target.
    let lost_any = summary.target_counts.iter().any(|t| t.pipelines_without > 0);
    Ok(if summary.failed > 0 || summary.kept_existing_archive || lost_any { 1 } else { 0 })
}
