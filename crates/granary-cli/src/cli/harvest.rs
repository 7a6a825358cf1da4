//! `granary harvest`.

use super::device_args::{BackendKind, DeviceArgs};
use super::output::print_json;
use super::validation::{ValidateArgs, WorkerLogs};
use anyhow::Context as _;
use granary::descriptor::TargetSet;
use granary::frontend::{CheckOutputs, Profile};
use granary::harvest::shard::ShardSpec;
use granary::harvest::{
    harvest_shard, EarlyFrontEnd, HarvestOptions, Interrupt, IsolateOptions, Progress, WorkerCommand,
};
use std::ffi::OsString;
use std::io::IsTerminal as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct HarvestArgs {
    /// The pipelines script (JSON; see docs/FORMAT.md).
    script: PathBuf,
    /// The archive to write (replaced atomically; its journal is OUTPUT.journal beside it).
    /// Checked before anything compiles: its folder must take a new file, and an existing file
    /// there must be a granary archive (or give --force).
    #[arg(short, long)]
    output: PathBuf,
    /// Replace the output even when the file there is not a granary archive.
    #[arg(long)]
    force: bool,
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
    /// continues (a kill loses at most 2N landed pipelines plus one per thread: compiling
    /// waits when the journal falls further behind; --resume replays the journal).
    #[arg(long, value_name = "N")]
    flush_every: Option<usize>,
    /// Keep the pipelines of an existing (verified) output archive and its journal that the
    /// script still produces; compile only the rest.
    #[arg(long)]
    resume: bool,
    /// Also harvest the script's expand_unspecialized variants (one whole pipeline per format
    /// combination, labelled LABEL@FORMAT[+FORMAT...]) beside the pipelines with unspecialized
    /// colour output they come from. On a device with graphics pipeline libraries the loader
    /// then creates the whole, optimized variant from its own binaries when it links with
    /// those formats, instead of fast-linking the library (which can cost GPU time every draw,
    /// and on NVIDIA with the dictionary binary compiles the library part). Costs a harvest
    /// and archive bytes per variant. A device without libraries harvests only the variants
    /// either way.
    #[arg(long)]
    whole_variants: bool,
    /// With --capture auto: pipelines in the calibration sample, about (the first of
    /// ceil(script / N) shards). Larger samples predict large scripts better (a driver's
    /// shared compile work and NVIDIA's dictionary binary only show past a few hundred
    /// pipelines; docs/BENCHMARKS.md) and cost more: both captures of the sample are harvested.
    #[arg(long, value_name = "N", default_value_t = super::capture::SAMPLE, value_parser = clap::value_parser!(u64).range(1..))]
    calibrate_pipelines: u64,
    /// With --capture auto: measure both captures even when the output archive's section for
    /// this device and driver, or this machine's record of earlier calibrations
    /// ($GRANARY_CACHE_DIR, else $XDG_CACHE_HOME/granary, else ~/.cache/granary:
    /// capture-choices.json), holds a decision; the new one replaces the record's. Not with
    /// --resume, which keeps the kind the archive holds.
    #[arg(long)]
    recalibrate: bool,
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
    /// With --isolate: the most resident memory a worker may hold, in mebibytes. A worker that
    /// passes it while compiling is killed at once and that pipeline fails (phase `memory`; on
    /// Linux the parent samples each busy worker every 10 ms, elsewhere it checks only between
    /// pipelines); a worker above it after a pipeline is replaced.
    #[arg(long, value_name = "MIB", requires = "isolate")]
    worker_memory_limit: Option<u64>,
    /// The largest shader library compiled in this process, in bytes (or with a KiB, MiB or
    /// GiB suffix; 0: no limit) [default: 2 MiB]. The pipelines that use a larger library fail
    /// (naming it) and the others land: naga's time and memory grow about with the square of a
    /// library's size (2 MB can take two minutes) and nothing stops a compile in process once
    /// it runs. With
    /// --isolate there is no limit unless this is given: --timeout and --worker-memory-limit
    /// stop a worker that runs away, and it costs only its pipeline.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    max_library_bytes: Option<u64>,
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
    /// Check every stage output with its target's own validator before it is archived:
    /// SPIR-V with SPIRV-Tools (in the profile's environment; linked in when the build found
    /// Debian's spirv-tools, else its spirv-val program), GLSL with glslang (built in); an
    /// output a validator rejects is a lost target (phase `target`), never archived, and the
    /// pipeline lands with its other targets. `auto` checks SPIR-V when a validator is found
    /// (GRANARY_SPIRV_VAL, else linked in, else spirv-val on PATH) and says when none is;
    /// `require` refuses to start without it (use it for release builds); `off` checks
    /// nothing. MSL and HLSL are never checked (no Metal or DirectX compiler runs here).
    #[arg(long, value_name = "MODE", default_value = "auto")]
    check_outputs: CheckOutputs,
    /// Before harvesting, merge these use records (written by a game's
    /// granary_archive::record::Recorder, docs/FORMAT.md §6) into SCRIPT, rewriting it: each
    /// pipeline the game used or missed that the script produces is added again under a label
    /// `recorded/NNNNNN` numbered in first-use order (it shares its archive entry; a warm-up of
    /// the prefix `recorded/` follows that order), and each create info the archive lacked that
    /// the record describes in full is added as a native Vulkan pipeline with its SPIR-V
    /// inline. Records in the order given, each pipeline once; merging the same records again
    /// adds nothing. What cannot be added (a key missed without a description) is listed. The
    /// script's own text is kept; entries are appended. Not with --shard.
    #[arg(long, value_name = "RECORD", num_args = 1.., conflicts_with_all = ["shard", "shards"])]
    add_recorded: Vec<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    validate: ValidateArgs,
}

/// `--add-recorded`: the records merged into the script, which is rewritten (atomically) when
/// anything was added. Checked before anything compiles; the merged text must parse.
fn add_recorded(a: &HarvestArgs) -> anyhow::Result<granary::script::recorded::RecordedMerge> {
    use granary::script::{recorded::merge_recorded, Script};
    let text = std::fs::read_to_string(&a.script).with_context(|| format!("cannot read {}", a.script.display()))?;
    let base = a.script.parent().unwrap_or(std::path::Path::new(""));
    let script = Script::parse(&text, &a.script, base)?;
    let ctx = granary::descriptor::KeyContext {
        target_options: granary::frontend::targets::target_options_fingerprint(a.profile, a.targets),
    };
    let records =
        a.add_recorded.iter().map(|p| granary_archive::record::read_record(p)).collect::<Result<Vec<_>, _>>()?;
    let merged = merge_recorded(&text, &script, ctx, &records)?;
    if merged.changed() {
        let again = Script::parse(&merged.text, &a.script, base)
            .context("the script with the recorded pipelines added does not parse (nothing was written)")?;
        let expected = script.pipelines.len() + merged.labelled + merged.described;
        anyhow::ensure!(
            again.pipelines.len() == expected,
            "the script with the recorded pipelines added has {} pipelines, not {expected} (nothing was written)",
            again.pipelines.len()
        );
        granary_archive::write_atomic(&a.script, merged.text.as_bytes())
            .with_context(|| format!("cannot rewrite {}", a.script.display()))?;
    }
    if !a.json {
        eprintln!(
            "granary: {} record(s) merged into {}: {} pipeline(s) labelled recorded/…, {} added from create infos \
             ({} SPIR-V libraries), {} already there, {} not added",
            records.len(),
            a.script.display(),
            merged.labelled,
            merged.described,
            merged.libraries,
            merged.already,
            merged.not_added.len()
        );
        for d in &merged.damaged {
            eprintln!("granary: warning: {d}");
        }
        for n in merged.not_added.iter().take(20) {
            let what = n.label.as_deref().map(|l| format!("label '{l}'")).or(n.key.clone().map(|k| format!("key {k}")));
            eprintln!("granary: not added ({}): {}: {}", n.record, what.unwrap_or_default(), n.why);
        }
        if merged.not_added.len() > 20 {
            eprintln!("granary: … and {} more not added (--json lists all)", merged.not_added.len() - 20);
        }
    }
    Ok(merged)
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

fn parse_targets(s: &str) -> Result<TargetSet, String> {
    TargetSet::parse(s)
}

fn parse_profile(s: &str) -> Result<&'static Profile, String> {
    Profile::named(s)
}

/// A size in bytes: a number, or one with a `KiB`, `MiB` or `GiB` suffix (`K`, `M`, `G` too).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim() {
        "" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        other => return Err(format!("unknown unit '{other}': give bytes, or KiB, MiB or GiB")),
    };
    let n: u64 =
        digits.parse().map_err(|_| format!("'{s}' is not a size (bytes, or a number with KiB, MiB or GiB)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("'{s}' is too large"))
}

/// The library size limit of this process's front end: `--max-library-bytes`, else
/// [`granary::frontend::MAX_LIBRARY_BYTES`]; 0 is no limit.
fn in_process_library_limit(given: Option<u64>) -> Option<u64> {
    Some(given.unwrap_or(granary::frontend::MAX_LIBRARY_BYTES)).filter(|l| *l > 0)
}

/// The complete command of one `--isolate` worker: `granary worker SCRIPT`, this harvest's
/// backend selection and `validation` arguments, its targets and profile, `--max-library-bytes`
/// where it was given (workers have no size limit otherwise), and this process as the worker's
/// parent. The library runs it as is.
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
            "--check-outputs".to_string(),
            a.check_outputs.name().to_string(),
            "--parent-pid".to_string(),
            std::process::id().to_string(),
        ]
        .map(OsString::from),
    );
    if let Some(limit) = a.max_library_bytes.filter(|l| *l > 0) {
        args.extend(["--max-library-bytes".into(), limit.to_string().into()]);
    }
    Ok(WorkerCommand { program, args, env: Vec::new() })
}

pub fn run(mut a: HarvestArgs) -> anyhow::Result<i32> {
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    anyhow::ensure!(threads >= 1, "-j must be at least 1");
    anyhow::ensure!(
        a.flush_every != Some(0),
        "--flush-every must be at least 1 (it is the number of pipelines per journal record; leave it out for no periodic flushes)"
    );
    anyhow::ensure!(
        a.recycle_after >= 1,
        "--recycle-after must be at least 1 (pipelines per worker before it is replaced)"
    );
    // The report is written by this binary, after the harvest: check it before anything
    // compiles, like the archive and the trace (the library checks those).
    if let Some(report) = &a.report {
        granary::harvest::writable(report, "the report").map_err(anyhow::Error::msg)?;
        anyhow::ensure!(report != &a.output, "the report and the output archive are the same file");
    }
    let shard = shard_spec(a.shard.as_deref(), a.shards)?;
    let recorded = if a.add_recorded.is_empty() { None } else { Some(add_recorded(&a)?) };
    let validation = a.validate.policy();
    anyhow::ensure!(
        !validation.flag || a.device.backend == BackendKind::Vulkan,
        "--validate needs --backend vulkan (the none backend calls no driver)"
    );
    let sample = super::capture::Sample {
        script: &a.script.clone(),
        output: &a.output.clone(),
        resume: a.resume,
        threads,
        targets: a.targets.names(),
        profile: a.profile.name,
        announce: !a.quiet && !a.json,
        sample: a.calibrate_pipelines as usize,
        whole_variants: a.whole_variants,
        sharded: shard.as_ref().is_some_and(|s| s.count > 1),
        recalibrate: a.recalibrate,
    };
    let mut capture = super::capture::choose(&mut a.device, &sample)?;
    let interrupt = std::sync::Arc::new(Interrupt::new());
    let mut opts = HarvestOptions {
        script: a.script.clone(),
        output: a.output.clone(),
        threads,
        targets: a.targets,
        profile: a.profile,
        flush_every: a.flush_every,
        resume: a.resume,
        require_all_targets: a.require_all_targets,
        backend: None,
        trace: a.trace.clone(),
        max_library_bytes: in_process_library_limit(a.max_library_bytes),
        check_outputs: a.check_outputs,
        force: a.force,
        interrupt: Some(interrupt.clone()),
        whole_variants: a.whole_variants,
        isolate: None,
        early: None,
    };
    // The driver's start-up takes one thread (about 0.4 s on NVIDIA): the front end starts
    // meanwhile on the others (granary::harvest::EarlyFrontEnd says when it does not).
    let early = (a.device.backend == BackendKind::Vulkan && !a.isolate)
        .then(|| EarlyFrontEnd::start(&opts, shard.as_ref().is_some_and(|s| s.count > 1)))
        .flatten();
    let opening = std::time::Instant::now();
    let (backend, log) = a.device.open_validated(a.targets, true, validation.on)?;
    // What the driver's start-up and shutdown cost (outside the summary's `wall_seconds`).
    let opened = backend.is_some().then(|| opening.elapsed().as_secs_f64());
    opts.early = early.map(EarlyFrontEnd::finish);
    if let (Some(c), Some(b)) = (&mut capture, &backend) {
        c.settle(b.report().as_ref());
    }
    let worker_logs = match &log {
        Some(_) if a.isolate => Some(WorkerLogs::create()?),
        _ => None,
    };
    let validation_args = worker_logs.as_ref().map(|w| validation.worker_args(&w.0)).unwrap_or_default();
    if a.isolate {
        anyhow::ensure!(a.timeout > 0.0 && a.timeout.is_finite(), "--timeout must be a positive number of seconds");
        opts.isolate = Some(IsolateOptions {
            worker: worker_command(&a, validation_args)?,
            timeout: Some(std::time::Duration::from_secs_f64(a.timeout)),
            recycle_after: a.recycle_after,
            memory_limit: a.worker_memory_limit.map(|m| m << 20),
            device: backend.as_ref().and_then(|b| b.device()),
        });
    }
    opts.backend = backend;
    let early_report = opts.early.as_ref().map(|e| serde_json::json!({ "tasks": e.tasks, "seconds": e.seconds }));
    let view = (!a.quiet && std::io::stderr().is_terminal()).then(ProgressView::new);
    let bar = view.as_ref().map(|v| v.bar.clone());
    on_signals(&interrupt, bar.clone(), &a.output, a.json);
    let on_progress = |p: Progress| {
        if let Some(view) = &view {
            view.event(p);
        }
    };
    let summary = harvest_shard(&opts, shard, &on_progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // The device is destroyed here (the last reference to the backend), so the layer's
    // messages about destruction are in the report too.
    let closing = std::time::Instant::now();
    drop(opts);
    let closed = opened.map(|_| closing.elapsed().as_secs_f64());
    if let (Some(log), Some(w)) = (&log, &worker_logs) {
        w.collect_into(log)?;
    }
    let finish = || log.as_deref().map(|log| validation.finish(log));
    let summary = match summary {
        // Interrupted: the signal thread, whose request was answered before the harvest
        // returned, prints what was kept and exits 130 or 143; nothing is left to do here.
        Ok(s) if s.interrupted => loop {
            std::thread::park();
        },
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
    // What the loader will decline on NVIDIA 580: sets that carry the driver's dictionary.
    let shared = if capture.is_some() && !summary.kept_existing_archive {
        super::capture::shared_binaries(&a.output)
    } else {
        Vec::new()
    };
    let report = if a.json {
        let report = finish();
        let mut v = serde_json::to_value(&summary)?;
        super::validation::add_report(report.as_ref(), &mut v);
        if let Some(fields) = v.as_object_mut() {
            fields.insert("capture".into(), serde_json::to_value(&capture)?);
            fields.insert("shared_binaries".into(), serde_json::to_value(&shared)?);
            fields.insert("device_seconds".into(), serde_json::json!({ "open": opened, "close": closed }));
            fields.insert("early_front_end".into(), early_report.unwrap_or(serde_json::Value::Null));
            if let Some(r) = &recorded {
                fields.insert("recorded".into(), serde_json::to_value(r)?);
            }
        }
        print_json(&v)?;
        report
    } else {
        eprint!("{}", summary.to_text());
        if let Some(c) = &capture {
            eprint!("{}", c.text());
        }
        for s in &shared {
            eprint!("{}", s.text());
        }
        finish()
    };
    // Exit 1 when any pipeline failed, including a harvest in which every pipeline failed and
    // the existing archive was kept, or when a pipeline landed without a requested target, or
    // when the validation layer reported an error, or when the trace could not be written.
    let lost_any = summary.target_counts.iter().any(|t| t.pipelines_without > 0);
    let invalid = report.as_ref().is_some_and(|r| r.failed);
    let trace_failed = summary.trace_error.is_some();
    Ok(if summary.failed > 0 || summary.kept_existing_archive || lost_any || invalid || trace_failed { 1 } else { 0 })
}

/// The progress line of a harvest on a terminal: pipelines finished of those being compiled,
/// the phase by name (loading, stage functions, compiling, writing), and the time left once
/// there is a rate to estimate it from. Thread safety: `Sync`; events arrive from every worker
/// thread, the counters are atomics and the bar is indicatif's (internally locked).
struct ProgressView {
    bar: indicatif::ProgressBar,
    /// Library parses and stage functions planned as tasks of their own, and finished.
    functions: std::sync::atomic::AtomicUsize,
    functions_done: std::sync::atomic::AtomicUsize,
    /// When compiling started.
    planned_at: std::sync::OnceLock<std::time::Instant>,
}

impl ProgressView {
    fn new() -> Self {
        let bar = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} pipelines {msg}",
        ) {
            bar.set_style(style);
        }
        bar.set_message("loading the script");
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        ProgressView {
            bar,
            functions: Default::default(),
            functions_done: Default::default(),
            planned_at: std::sync::OnceLock::new(),
        }
    }

    fn event(&self, p: Progress) {
        use std::sync::atomic::Ordering::Relaxed;
        match p {
            Progress::Planned { pipelines, functions } => {
                self.planned_at.get_or_init(std::time::Instant::now);
                self.functions.store(functions, Relaxed);
                self.bar.set_length(pipelines as u64);
                self.bar.set_message(self.compiling());
            }
            Progress::FunctionDone => {
                self.functions_done.fetch_add(1, Relaxed);
                self.bar.set_message(self.compiling());
            }
            Progress::PipelineDone => {
                self.bar.inc(1);
                self.bar.set_message(self.compiling());
            }
            Progress::Flushed => {}
            Progress::Writing => self.bar.set_message("writing the archive"),
        }
    }

    /// The message while compiling: the stage functions still to compile, and the time left.
    fn compiling(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let (functions, functions_done) = (self.functions.load(Relaxed), self.functions_done.load(Relaxed));
        let (pipelines, done) = (self.bar.length().unwrap_or(0) as usize, self.bar.position() as usize);
        let phase = if functions_done < functions {
            format!("compiling (stage functions {functions_done}/{functions})")
        } else {
            "compiling".to_string()
        };
        let elapsed = self.planned_at.get().map_or(0.0, |t| t.elapsed().as_secs_f64());
        match eta_seconds(functions + pipelines, functions_done + done, elapsed) {
            Some(left) => format!("{phase}, about {} left", human_seconds(left)),
            None => phase,
        }
    }
}

/// The time left at the rate so far, when there is one to go by: at least 1 % of the work
/// (library parses, stage functions and pipelines, counted alike) and 3 s done.
fn eta_seconds(work: usize, done: usize, elapsed: f64) -> Option<f64> {
    (work > 0 && done * 100 >= work && done < work && elapsed >= 3.0)
        .then(|| elapsed * (work - done) as f64 / done as f64)
}

/// `45s`, `3m 05s`, `2h 10m`.
fn human_seconds(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// Ctrl-C (`SIGINT`) and `SIGTERM`: the first asks the harvest to journal every pipeline that
/// has landed (while compiles are still in flight), says what was kept and how to continue,
/// and exits 130 (`SIGINT`) or 143 (`SIGTERM`) without replacing the archive; a second signal
/// exits at once. A signal after compiling, during the final write, lets the write finish.
#[cfg(unix)]
fn on_signals(
    interrupt: &std::sync::Arc<Interrupt>,
    bar: Option<indicatif::ProgressBar>,
    output: &std::path::Path,
    json: bool,
) {
    use granary::harvest::Answer;
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        // Without a handler the default disposition stays: a signal ends the process, as a
        // kill does, and --flush-every's journal is what survives.
        return;
    };
    let (interrupt, output) = (interrupt.clone(), output.to_path_buf());
    std::thread::spawn(move || {
        let mut first = None;
        for sig in signals.forever() {
            let code = 128 + sig;
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            if first.is_some() {
                eprintln!("granary: {name} again: stopping now");
                std::process::exit(code);
            }
            first = Some(sig);
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            eprintln!("granary: {name}: journaling what has compiled (send it again to stop at once)");
            let report = match interrupt.request(std::time::Duration::from_secs(600)) {
                Answer::Kept(report) => report,
                Answer::Finished => {
                    eprintln!("granary: compiling had finished; writing {} (send it again to stop)", output.display());
                    continue;
                }
                Answer::TimedOut => {
                    eprintln!("granary: the journal write has not finished in 10 minutes; send it again to stop now");
                    continue;
                }
            };
            let shown = report.journal.display();
            match &report.error {
                Some(e) => eprintln!("granary: interrupted; the journal could not be written ({e})"),
                None if report.on_disk == 0 => {
                    eprintln!("granary: interrupted before any pipeline was compiled; nothing to keep")
                }
                None => eprintln!(
                    "granary: interrupted; {} pipelines are kept in {shown} ({} written now), and {} was not replaced",
                    report.on_disk,
                    report.appended,
                    output.display()
                ),
            }
            if report.on_disk > 0 {
                eprintln!("granary: run the same command with --resume to compile only the rest");
            }
            if json {
                let message = match &report.error {
                    Some(e) => format!("interrupted by {name}; the journal could not be written ({e})"),
                    None => format!(
                        "interrupted by {name}; {} pipelines are kept in {shown} for --resume, and {} was not replaced",
                        report.on_disk,
                        output.display()
                    ),
                };
                super::output::print_json_error(&message, code);
            }
            std::process::exit(code);
        }
    });
}

/// No signal handling off Unix: Ctrl-C ends the process; --flush-every's journal survives.
#[cfg(not(unix))]
fn on_signals(_: &std::sync::Arc<Interrupt>, _: Option<indicatif::ProgressBar>, _: &std::path::Path, _: bool) {}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(super::parse_size("4096"), Ok(4096));
        assert_eq!(super::parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(super::parse_size("2 GiB"), Ok(2 << 30));
        assert_eq!(super::parse_size("512K"), Ok(512 << 10));
        assert!(super::parse_size("4 MB").is_err());
        assert!(super::parse_size("MiB").is_err());
        assert!(super::parse_size("-1").is_err());
        assert!(super::parse_size("99999999999999999999").is_err());
        assert!(super::parse_size("17179869184G").is_err());
        assert_eq!(super::in_process_library_limit(None), Some(granary::frontend::MAX_LIBRARY_BYTES));
        assert_eq!(super::in_process_library_limit(Some(0)), None);
        assert_eq!(super::in_process_library_limit(Some(10)), Some(10));
    }

    #[test]
    fn the_time_left_needs_a_rate_and_reads_as_minutes_and_hours() {
        assert_eq!(super::eta_seconds(1000, 5, 10.0), None, "under 1 % done");
        assert_eq!(super::eta_seconds(1000, 500, 2.0), None, "under 3 s");
        assert_eq!(super::eta_seconds(1000, 1000, 20.0), None, "finished");
        assert_eq!(super::eta_seconds(1000, 250, 10.0), Some(30.0));
        assert_eq!(super::human_seconds(44.6), "45s");
        assert_eq!(super::human_seconds(185.0), "3m 05s");
        assert_eq!(super::human_seconds(7800.0), "2h 10m");
    }
}
