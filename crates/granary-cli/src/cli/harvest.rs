//! `granary harvest`.

use anyhow::Context as _;
use granary::descriptor::TargetSet;
use granary::frontend::Profile;
use granary::harvest::shard::ShardSpec;
use granary::harvest::{harvest_shard, HarvestOptions, IsolateOptions, Progress, WorkerCommand};
use granary_archive::vulkan::validation::{Severity, ValidationLog, ValidationMessage, LAYER};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    #[command(flatten)]
    validate: ValidateArgs,
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

/// A backend (`None`: `none`) and, when validated, the layer's log.
pub type Opened = (Option<Arc<dyn granary::backend::Backend>>, Option<Arc<ValidationLog>>);

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
        Ok(self.open_validated(targets, share_identical, false)?.0)
    }

    /// [`DeviceArgs::open`], with the Vulkan backend under the validation layer when
    /// `validate` (ignored for `--backend none`, which opens no device): also returns the
    /// layer's log.
    pub fn open_validated(&self, targets: TargetSet, share_identical: bool, validate: bool) -> anyhow::Result<Opened> {
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
                Ok((None, None))
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
                    validate,
                })
                .context("cannot open the Vulkan device")?;
                let log = b.validation().cloned();
                Ok((Some(Arc::new(b)), log))
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
    #[command(flatten)]
    validate: ValidateArgs,
    /// With validation: append each message, as one JSON line, to DIR/worker-PID.jsonl as it
    /// arrives, for the harvesting parent to count (without: print them on stderr).
    #[arg(long, value_name = "DIR")]
    validation_log: Option<PathBuf>,
}

pub fn worker(a: WorkerArgs) -> anyhow::Result<i32> {
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
    Ok(granary::harvest::worker_main(&a.script, a.targets, a.profile, a.parent_pid, backend))
}

/// `--validate`, shared by `harvest`, `stress`, `warm` and the worker.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ValidateArgs {
    /// Run the Vulkan work under the Khronos validation layer (VK_LAYER_KHRONOS_validation;
    /// Debian: apt-get install vulkan-validationlayers; without it the command refuses to run).
    /// Each WARNING or ERROR message is printed once on stderr with the pipeline it belongs to
    /// (identical ones grouped), counted in --json output (validation_messages, and per
    /// message id under validation), and any ERROR makes the exit status 1: a pipeline the
    /// layer calls invalid is not a success. GRANARY_VALIDATE=1 in the environment does the
    /// same for every command that opens a Vulkan device, and then WARNINGs fail too;
    /// GRANARY_VALIDATE_EXPECT=ID,ID names message ids that are expected (counted, printed,
    /// never a failure). harvest and stress: with --backend vulkan.
    #[arg(long)]
    pub validate: bool,
}

/// Whether and how strictly to validate: `--validate`, `GRANARY_VALIDATE`,
/// `GRANARY_VALIDATE_EXPECT`.
pub struct Validation {
    /// The layer is on.
    pub on: bool,
    /// `--validate` itself was given (an error where nothing opens a Vulkan device).
    pub flag: bool,
    /// `GRANARY_VALIDATE=1`: WARNING messages fail as well.
    pub strict: bool,
    /// Message ids that are expected, never failures.
    pub expected: BTreeSet<String>,
}

/// What the layer said, for `--json` and the exit status.
pub struct ValidationReport {
    /// Every message (expected ones included).
    pub messages: u64,
    /// The breakdown: counts by severity and by message id.
    pub json: serde_json::Value,
    /// An unexpected ERROR (or, strict, WARNING) was seen.
    pub failed: bool,
}

impl ValidationReport {
    /// Adds `validation_messages` and `validation` to a JSON object.
    pub fn add_to(&self, v: &mut serde_json::Value) {
        if let Some(o) = v.as_object_mut() {
            o.insert("validation_messages".into(), self.messages.into());
            o.insert("validation".into(), self.json.clone());
        }
    }
}

impl ValidateArgs {
    /// The flag with the environment.
    pub fn policy(&self) -> Validation {
        let strict = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1");
        let expected = std::env::var("GRANARY_VALIDATE_EXPECT")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        Validation { on: self.validate || strict, flag: self.validate, strict, expected }
    }
}

/// How many pipelines of one message id are printed before "N more like this".
const SHOWN_PER_ID: usize = 3;

impl Validation {
    /// The worker arguments that validate in each worker and report to `dir`.
    pub fn worker_args(&self, dir: &Path) -> Vec<String> {
        vec!["--validate".into(), format!("--validation-log={}", dir.display())]
    }

    /// Prints every message of `log` once on stderr (grouped by message id and pipeline;
    /// beyond a few pipelines per id, "N more like this") and says whether the command fails.
    /// Call it after every Vulkan object is destroyed, so destruction's messages are in.
    pub fn finish(&self, log: &ValidationLog) -> ValidationReport {
        let counts = log.counts();
        let messages = log.messages();
        let mut unexpected = 0u64;
        let mut failed = false;
        let mut by_id = serde_json::Map::new();
        for (id, c) in &counts {
            let expected = self.expected.contains(id);
            if !expected {
                unexpected += c.total();
                failed |= c.errors > 0 || (self.strict && c.warnings > 0);
            }
            by_id.insert(
                id.clone(),
                serde_json::json!({ "errors": c.errors, "warnings": c.warnings, "expected": expected }),
            );
        }
        let total = log.total();
        if total > 0 {
            eprintln!(
                "granary: {LAYER}: {total} messages ({} errors, {} warnings; {} expected by GRANARY_VALIDATE_EXPECT)",
                log.errors(),
                log.warnings(),
                total - unexpected
            );
        }
        // Per id (in order of first appearance), per pipeline: count and the first text.
        let mut order: Vec<&str> = Vec::new();
        let mut groups: BTreeMap<&str, Vec<(&str, usize, &ValidationMessage)>> = BTreeMap::new();
        for m in &messages {
            let g = groups.entry(&m.id).or_insert_with(|| {
                order.push(&m.id);
                Vec::new()
            });
            match g.iter_mut().find(|(p, _, _)| *p == m.pipeline) {
                Some(entry) => entry.1 += 1,
                None => g.push((&m.pipeline, 1, m)),
            }
        }
        for id in order {
            let g = &groups[id];
            let note = if self.expected.contains(id) { " (expected)" } else { "" };
            for (pipeline, n, m) in g.iter().take(SHOWN_PER_ID) {
                let times = if *n > 1 { format!(" ({n} messages; the first)") } else { String::new() };
                eprintln!(
                    "granary: validation {}{note}: {id} in pipeline '{pipeline}'{times}: {}",
                    m.severity.name(),
                    m.text
                );
            }
            if g.len() > SHOWN_PER_ID {
                let rest: usize = g[SHOWN_PER_ID..].iter().map(|(_, n, _)| n).sum();
                eprintln!(
                    "granary: validation: {rest} more like this ({id}) on {} more pipelines",
                    g.len() - SHOWN_PER_ID
                );
            }
        }
        if log.dropped() > 0 {
            eprintln!("granary: validation: {} more messages counted but not kept", log.dropped());
        }
        if failed {
            eprintln!(
                "granary: the validation layer reported {}: exit status 1",
                if self.strict { "unexpected errors or warnings" } else { "errors" }
            );
        }
        let json = serde_json::json!({
            "layer": LAYER,
            "errors": log.errors(),
            "warnings": log.warnings(),
            "unexpected": unexpected,
            "failed": failed,
            "warnings_fail": self.strict,
            "by_id": by_id,
        });
        ValidationReport { messages: total, json, failed }
    }
}

/// One message as a worker writes it and the parent reads it back.
fn message_json(m: &ValidationMessage) -> serde_json::Value {
    serde_json::json!({
        "severity": m.severity.name(),
        "types": m.types,
        "id": m.id,
        "id_number": m.id_number,
        "text": m.text,
        "pipeline": m.pipeline,
    })
}

fn message_from_json(line: &str) -> Option<ValidationMessage> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some(ValidationMessage {
        severity: Severity::parse(v["severity"].as_str()?)?,
        types: u32::try_from(v["types"].as_u64()?).ok()?,
        id: v["id"].as_str()?.to_string(),
        id_number: i32::try_from(v["id_number"].as_i64()?).ok()?,
        text: v["text"].as_str()?.to_string(),
        pipeline: v["pipeline"].as_str()?.to_string(),
    })
}

/// A folder for the workers' validation messages, removed when dropped.
struct WorkerLogs(PathBuf);

impl WorkerLogs {
    fn create() -> anyhow::Result<WorkerLogs> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("granary-validation-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(WorkerLogs(dir))
    }

    /// Records every worker's messages into `log`; a line that does not read back (a worker
    /// killed in the middle of one) is an error message of its own, never dropped silently.
    fn collect_into(&self, log: &ValidationLog) -> anyhow::Result<()> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.0)
            .with_context(|| format!("cannot read {}", self.0.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?;
            for line in String::from_utf8_lossy(&text).lines().filter(|l| !l.trim().is_empty()) {
                log.record(message_from_json(line).unwrap_or_else(|| ValidationMessage {
                    severity: Severity::Error,
                    types: 0,
                    id: "granary-unreadable-worker-message".into(),
                    id_number: 0,
                    text: format!("a worker's validation message did not read back: {line}"),
                    pipeline: granary_archive::vulkan::validation::DEVICE.into(),
                }));
            }
        }
        Ok(())
    }
}

impl Drop for WorkerLogs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn parse_targets(s: &str) -> Result<TargetSet, String> {
    TargetSet::parse(s)
}

fn parse_profile(s: &str) -> Result<&'static Profile, String> {
    Profile::named(s)
}

/// The complete command of one `--isolate` worker: `granary worker SCRIPT`, this harvest's
/// backend selection and `validation` arguments, its targets and profile, and this process as
/// the worker's parent. The library runs it as is.
fn worker_command(a: &HarvestArgs, validation: Vec<String>) -> anyhow::Result<WorkerCommand> {
    let program = std::env::current_exe().context("cannot find the granary executable to start workers")?;
    let mut args: Vec<OsString> = vec!["worker".into(), a.script.clone().into_os_string()];
    args.extend(a.device.worker_args().into_iter().chain(validation).map(OsString::from));
    args.extend(
        [
            "--targets".to_string(),
            a.targets.names(),
            "--profile".to_string(),
            a.profile.name.to_string(),
            "--parent-pid".to_string(),
            std::process::id().to_string(),
        ]
        .map(OsString::from),
    );
    Ok(WorkerCommand { program, args, env: Vec::new() })
}

pub fn run(a: HarvestArgs) -> anyhow::Result<i32> {
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    anyhow::ensure!(threads >= 1, "-j must be at least 1");
    let shard = shard_spec(a.shard.as_deref(), a.shards)?;
    let validation = a.validate.policy();
    anyhow::ensure!(
        !validation.flag || a.device.backend == BackendKind::Vulkan,
        "--validate needs --backend vulkan (the none backend calls no driver)"
    );
    let (backend, log) = a.device.open_validated(a.targets, true, validation.on)?;
    let worker_logs = match &log {
        Some(_) if a.isolate => Some(WorkerLogs::create()?),
        _ => None,
    };
    let validation_args = worker_logs.as_ref().map(|w| validation.worker_args(&w.0)).unwrap_or_default();
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
                worker: worker_command(&a, validation_args)?,
                timeout: Some(std::time::Duration::from_secs_f64(a.timeout)),
                recycle_after: a.recycle_after,
                memory_limit: a.worker_memory_limit.map(|m| m << 20),
                device: backend.as_ref().and_then(|b| b.device()),
            })
        } else {
            None
        },
    };
    drop(backend);
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
    let summary = harvest_shard(&opts, shard, &on_progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // The device is destroyed here (the last reference to the backend), so the layer's
    // messages about destruction are in the report too.
    drop(opts);
    if let (Some(log), Some(w)) = (&log, &worker_logs) {
        w.collect_into(log)?;
    }
    let finish = || log.as_deref().map(|log| validation.finish(log));
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            finish();
            return Err(e).with_context(|| format!("harvest of {} failed", a.script.display()));
        }
    };
    if let Some(path) = &a.report {
        let records: Vec<_> = summary.failures.iter().chain(&summary.lost_targets).collect();
        let text = serde_json::to_string_pretty(&records)?;
        std::fs::write(path, text + "\n").with_context(|| format!("cannot write report {}", path.display()))?;
    }
    let report = if a.json {
        let report = finish();
        let mut v = serde_json::to_value(&summary)?;
        if let Some(r) = &report {
            r.add_to(&mut v);
        }
        super::print_json(&v)?;
        report
    } else {
        eprint!("{}", summary.to_text());
        finish()
    };
    // Exit 1 when any pipeline failed, including a harvest in which every pipeline failed and
    // the existing archive was kept, or when a pipeline landed without a requested target, or
    // when the validation layer reported an error.
    let lost_any = summary.target_counts.iter().any(|t| t.pipelines_without > 0);
    let invalid = report.as_ref().is_some_and(|r| r.failed);
    Ok(if summary.failed > 0 || summary.kept_existing_archive || lost_any || invalid { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_messages_read_back_exactly_and_a_cut_line_is_an_error_not_a_loss() {
        let m = ValidationMessage {
            severity: Severity::Warning,
            types: 4,
            id: "VUID-x".into(),
            id_number: -5,
            text: "a \"quoted\"\nmessage".into(),
            pipeline: "forward/high".into(),
        };
        assert_eq!(message_from_json(&message_json(&m).to_string()), Some(m.clone()));
        let logs = WorkerLogs::create().expect("folder");
        let whole = message_json(&m).to_string();
        std::fs::write(logs.0.join("worker-1.jsonl"), format!("{whole}\n{whole}\n")).unwrap();
        std::fs::write(logs.0.join("worker-2.jsonl"), format!("{whole}\n{}", &whole[..whole.len() / 2])).unwrap();
        let log = ValidationLog::new();
        logs.collect_into(&log).expect("collected");
        let counts = log.counts();
        assert_eq!(counts["VUID-x"].warnings, 3);
        assert_eq!(counts["granary-unreadable-worker-message"].errors, 1);
        let dir = logs.0.clone();
        drop(logs);
        assert!(!dir.exists(), "the folder is removed");
    }

    #[test]
    fn errors_fail_warnings_fail_only_under_the_environment_and_expected_ids_never() {
        let log = ValidationLog::new();
        let warn = |id: &str| ValidationMessage {
            severity: Severity::Warning,
            types: 0,
            id: id.into(),
            id_number: 0,
            text: String::new(),
            pipeline: "p".into(),
        };
        log.record(warn("W"));
        let policy = |strict, expected: &[&str]| Validation {
            on: true,
            flag: true,
            strict,
            expected: expected.iter().map(|s| s.to_string()).collect(),
        };
        assert!(!policy(false, &[]).finish(&log).failed);
        assert!(policy(true, &[]).finish(&log).failed);
        assert!(!policy(true, &["W"]).finish(&log).failed);
        log.record(ValidationMessage { severity: Severity::Error, ..warn("E") });
        let r = policy(false, &["W"]).finish(&log);
        assert!(r.failed);
        assert_eq!(r.messages, 2);
        assert_eq!(r.json["unexpected"], 1);
        assert_eq!(r.json["by_id"]["W"]["expected"], true);
        assert!(!policy(true, &["W", "E"]).finish(&log).failed);
        let mut v = serde_json::json!({ "succeeded": 1 });
        r.add_to(&mut v);
        assert_eq!(v["validation_messages"], 2);
    }
}
