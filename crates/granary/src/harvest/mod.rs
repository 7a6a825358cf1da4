//! Layer 8 — offline orchestration: script → task plan → N worker threads → capture → archive,
//! with periodic flushes, resume and a summary.
//!
//! Invariants:
//! - The archive written is a function of the script's successful pipelines only: thread
//!   count, scheduling, flushes and `--resume` do not change a byte. A resumed harvest keeps
//!   exactly the old entries whose keys the current script produces, labelled as the current
//!   script labels them, so it equals a fresh harvest of the script as it is now. With a
//!   device backend, an old entry counts only where it has a binary set for this very device;
//!   the others are compiled on it and keep their other devices' sets (a fresh harvest here,
//!   merged with the old archive's entries the script produces).
//! - Intermediate flushes append the entries captured since the previous flush to the
//!   archive's journal (`OUT.journal`, one fsynced record each) while workers keep compiling;
//!   the archive itself is replaced only by the final write (durably, whole), after which the
//!   journal is deleted. `--resume` replays the archive, then the journal's intact records.
//! - A failing pipeline is reported and the rest still land in the archive. When every
//!   pipeline failed (none compiled, none resumed), an existing output file is left alone.
//!
//! Modules: `select` (which pipelines: [`Selection`]), `shard` (the split into N shards),
//! `resume` (`--resume`), `plan` (task order), `inprocess` (the threads' schedule, also timed
//! by granary-lab's benchmark), `isolate` (worker-process scheduling) over `process` (the
//! worker processes, [`WorkerCommand`]), `wire` (the protocol and answer checks) and `intern`
//! (answer blobs kept once), `worker` (the worker's side), `sink` (where outcomes land),
//! `flush` (journal flushes), `prune`, `report` (the summary), `trace` (`--trace`), `preflight`
//! (every output checked before anything compiles), `interrupt` (Ctrl-C: journal what landed),
//! `early` (the front end started while the device opens, [`EarlyFrontEnd`]).

mod early;
mod flush;
mod inprocess;
mod intern;
mod interrupt;
mod isolate;
mod plan;
mod preflight;
mod process;
mod prune;
mod report;
mod resume;
mod select;
pub mod shard;
mod sink;
mod trace;
mod wire;
mod worker;

pub use early::{Early, EarlyFrontEnd};
#[doc(hidden)]
pub use inprocess::{run_plan, ThreadShare};
pub use interrupt::{Answer, Interrupt, InterruptReport};
pub use isolate::IsolateOptions;
pub use plan::{plan, spread, Plan, Task, WAVE};
pub use preflight::writable;
pub use process::WorkerCommand;
pub use prune::{prune, PruneReport};
pub use report::{Failure, HarvestSummary, Phases, ShardSummary, TargetCount};
pub use select::{Expand, Selection, Split};
pub use worker::worker_main;

use crate::archive::journal::remove_journal;
use crate::archive::{Archive, ArchiveError};
use crate::capture::{Capture, CaptureMode, WriteReport};
use crate::compiler::{Compiler, CompilerOptions};
use crate::descriptor::TargetSet;
use crate::measure::process_cpu_time;
use crate::script::{Script, ScriptError};
use crate::sync::lock_std;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

/// Options for [`harvest`].
#[derive(Clone, Debug)]
pub struct HarvestOptions {
    /// The pipelines script.
    pub script: PathBuf,
    /// The archive to write.
    pub output: PathBuf,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Output targets.
    pub targets: TargetSet,
    /// Device profile (language versions and validation capabilities per target; part of
    /// every stage key and of the archive's writer options).
    pub profile: &'static crate::frontend::Profile,
    /// Every this many compiled pipelines, append what is new to the archive's journal
    /// (`OUTPUT.journal`); the final write folds it into the archive.
    pub flush_every: Option<usize>,
    /// Keep the entries of an existing, valid output archive and of its journal that the
    /// script still produces, and compile only what is missing. With a device backend an
    /// entry is kept only if it has binaries (or a pipeline-cache record) for the backend's
    /// device; the others are compiled on it, keeping their other devices' binaries.
    pub resume: bool,
    /// Compile in worker processes instead of threads (`--isolate`).
    pub isolate: Option<IsolateOptions>,
    /// All or nothing per pipeline (`--require-all-targets`): a pipeline that lost any
    /// requested target fails instead of landing with the targets left.
    pub require_all_targets: bool,
    /// The backend (`None`: `none`, the front end's translations only). A device backend
    /// (`granary-vulkan`) creates every pipeline on its driver and adds the driver's binaries
    /// to the archive; it needs the SPIR-V target.
    pub backend: Option<Arc<dyn crate::backend::Backend>>,
    /// Write a timeline of the harvest to this file (Chrome JSON trace events; opens in
    /// Perfetto's UI and `chrome://tracing`).
    pub trace: Option<PathBuf>,
    /// In process, the largest library the front end parses, in bytes (`--max-library-bytes`;
    /// the CLI's default is [`crate::frontend::MAX_LIBRARY_BYTES`]; `None`: no limit): the
    /// pipelines using a larger library fail (phase `shader`, kind `too-large`) and the others
    /// land. Under `--isolate` the parent parses no library and this is not read: the worker
    /// command carries the workers' own limit (the CLI's: none unless given, since the
    /// timeout and the memory watchdog contain a worker).
    pub max_library_bytes: Option<u64>,
    /// How stage outputs are checked by their targets' validators (`--check-outputs`;
    /// [`crate::frontend::check`]): an output a validator rejects is a lost target, never
    /// archived. Under `--isolate` the workers check (the CLI passes the mode on).
    pub check_outputs: crate::frontend::CheckOutputs,
    /// Replace an existing output file even when it is not a granary archive (`--force`);
    /// by default the harvest refuses before compiling.
    pub force: bool,
    /// How the harvest is interrupted ([`Interrupt`]; the CLI's Ctrl-C): once requested,
    /// every pipeline that has landed is journaled while compiles are still in flight, the
    /// requester is answered, no new task starts in process, and the harvest ends without
    /// replacing the archive (`HarvestSummary::interrupted`). `None`: not interruptible.
    pub interrupt: Option<Arc<Interrupt>>,
    /// Also harvest the script's `expand_unspecialized` variants beside the pipelines they
    /// come from (`--whole-variants`), where the backend leaves colour output open (a device
    /// with graphics pipeline libraries, the `none` backend): each variant is a whole pipeline
    /// with its own binaries, labelled `LABEL@FORMAT[+FORMAT…]`, which the loader creates in
    /// place of fast-linking the library when it links with those formats. A backend without
    /// libraries replaces such pipelines by their variants either way.
    pub whole_variants: bool,
    /// The front end started while the device opened ([`EarlyFrontEnd`], made from these same
    /// options): the harvest's compiler is made on it, so what it did ([`Early::tasks`]) is
    /// cache hits. Ignored under `--resume` and `--isolate`. `None`: the front end starts with
    /// the harvest.
    pub early: Option<Early>,
}

impl HarvestOptions {
    /// `script` harvested into `output` with the CLI's defaults: one thread per core, the
    /// SPIR-V target, the default profile, the default library size limit and output checks;
    /// no journal flushes, no resume, threads not processes, no device backend, no trace, no
    /// interrupt, no whole variants. Set the fields to change any of it.
    pub fn new(script: impl Into<PathBuf>, output: impl Into<PathBuf>) -> Self {
        HarvestOptions {
            script: script.into(),
            output: output.into(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            targets: TargetSet::SPIRV,
            profile: crate::frontend::Profile::default_profile(),
            flush_every: None,
            resume: false,
            isolate: None,
            require_all_targets: false,
            backend: None,
            trace: None,
            max_library_bytes: Some(crate::frontend::MAX_LIBRARY_BYTES),
            check_outputs: Default::default(),
            force: false,
            interrupt: None,
            whole_variants: false,
            early: None,
        }
    }
}

/// Progress events, for a progress bar. Before [`Progress::Planned`] the harvest is loading
/// (reading the script and its libraries, and with `--resume` verifying the existing archive
/// and replaying its journal).
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// Compiling starts: this many pipelines will be compiled now (resumed ones not counted),
    /// after and among this many library parses and stage functions (0 under `--isolate`,
    /// where workers compile a pipeline's functions with it).
    Planned {
        /// Pipelines to compile.
        pipelines: usize,
        /// Library parses and stage functions compiled as tasks of their own.
        functions: usize,
    },
    /// One library parse or stage function finished.
    FunctionDone,
    /// One pipeline finished: landed or failed.
    PipelineDone,
    /// An intermediate flush (a journal record) finished.
    Flushed,
    /// Compiling is over; the final archive is being written.
    Writing,
}

/// A harvest that could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum HarvestError {
    /// The script could not be read or is not a script.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The output archive could not be written, or an existing one could not be resumed.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// `--resume` found an archive that cannot be continued.
    #[error("cannot resume {path}: {why}")]
    Resume {
        /// The archive.
        path: String,
        /// Why.
        why: String,
    },
    /// The options cannot be combined with this script.
    #[error("{0}")]
    Unsupported(String),
    /// An output (the archive, its journal's folder, the trace) cannot be written, or writing
    /// it would replace a file that is not a granary archive; found before anything compiles.
    #[error("{0}")]
    Output(String),
    /// `--check-outputs require` and a requested target's validator is missing (found before
    /// anything compiles).
    #[error("{0}")]
    MissingValidator(String),
    /// [`prune`] refused an archive.
    #[error("cannot prune {path}: {why}")]
    Prune {
        /// The archive.
        path: String,
        /// Why.
        why: String,
    },
}

/// Runs a harvest. `on_progress` is called from worker threads.
pub fn harvest(opts: &HarvestOptions, on_progress: &(dyn Fn(Progress) + Sync)) -> Result<HarvestSummary, HarvestError> {
    harvest_shard(opts, None, on_progress)
}

/// [`harvest`] of one shard (`--shard I/N`, [`shard`]): compiles only the pipelines
/// [`shard::assign`] gives shard I, and records in the archive which shard of which script it
/// is, so that `granary merge` of all N shard archives gives the bytes of an unsharded
/// harvest. With `None`, exactly [`harvest`].
///
/// The phases, in order: load the script; set up the capture, backend and compiler; select
/// the pipelines ([`Selection`], then shard I's share); `--resume`; plan; compile (with the
/// flush thread); collect the outcomes; the final write; point failures at the script; the
/// trace; the summary.
pub fn harvest_shard(
    opts: &HarvestOptions,
    shard: Option<shard::ShardSpec>,
    on_progress: &(dyn Fn(Progress) + Sync),
) -> Result<HarvestSummary, HarvestError> {
    let result = run_harvest(opts, shard, on_progress);
    // However it ended, an interrupt requested from now on is told there is nothing to
    // journal (and one already waiting stops waiting).
    if let Some(i) = &opts.interrupt {
        i.close();
    }
    result
}

fn run_harvest(
    opts: &HarvestOptions,
    shard: Option<shard::ShardSpec>,
    on_progress: &(dyn Fn(Progress) + Sync),
) -> Result<HarvestSummary, HarvestError> {
    if let Some(s) = shard.filter(|s| s.count == 0 || s.index >= s.count) {
        return Err(HarvestError::Unsupported(format!(
            "shard {}/{} does not exist: a shard index is 0 ≤ I < N",
            s.index, s.count
        )));
    }
    preflight::check(opts)?;
    let start = Instant::now();
    let cpu0 = process_cpu_time();
    let threads = opts.threads.max(1);
    // The script the early front end loaded (the one its work was for), or loaded now.
    let loaded = match opts.early.as_ref().filter(|_| !opts.resume && opts.isolate.is_none()) {
        Some(Early { loaded: Some(l), .. }) => l.clone(),
        _ => Arc::new(load(opts)?),
    };
    let (text, script) = (loaded.0.as_str(), &loaded.1);
    let setup = Setup::new(opts, threads);
    setup.compiler.frontend().checker().require(opts.targets).map_err(HarvestError::MissingValidator)?;
    let expansion = expansion_for(script, &*setup.backend, opts.whole_variants);
    let mut selection = Selection::new(script, &expansion, setup.compiler.key_context());
    let shard_record = shard.map(|spec| select_shard(&mut selection, spec));
    let device = setup.backend.device();
    let mut resumed = if opts.resume {
        resume::resume(opts, &setup.capture, &mut selection, device.as_deref())?
    } else {
        resume::Resumed::default()
    };

    let tracer = opts.trace.as_ref().map(|_| trace::Tracer::new(start));
    let loaded = start.elapsed();
    let plan = plan::plan(&selection.pipelines, &selection.ctx, threads);
    let planned = start.elapsed();
    let run = compile(opts, &setup, &selection, text, &plan, threads, &mut resumed, tracer.as_ref(), on_progress);
    let compiled_at = start.elapsed();
    let mut outcome = collect(opts, run, std::mem::take(&mut selection.failures), &mut resumed);
    let interrupted = opts.interrupt.as_ref().is_some_and(|i| i.is_requested());
    let written = if interrupted {
        // What landed is in the journal (the interrupt's flush); the archive stays as it was.
        Written { report: WriteReport { pipelines: 0, bytes: 0 }, kept_existing_archive: false }
    } else {
        // Entries resumed without binaries for this device take their other devices' binary
        // sets back, beside the ones compiled now.
        resume::restore_elsewhere(opts, &setup.capture, &mut resumed)?;
        on_progress(Progress::Writing);
        write(opts, &setup.capture, shard_record.as_ref(), &mut outcome, &resumed)?
    };
    let written_at = start.elapsed();
    locate_failures(opts, text, &selection, &mut outcome);

    let mut stats = setup.compiler.stats();
    if opts.isolate.is_some() {
        // The same meaning as in-process: each unique library and stage function of the
        // harvested pipelines once (from the plan), however many workers parsed it again.
        stats.libraries_parsed = plan.libraries as u64;
        stats.functions_compiled = plan.functions as u64;
    }
    let times = PhaseTimes { start, loaded, planned, compiled_at, written_at };
    let trace_error = tracer.as_ref().and_then(|t| {
        write_trace(opts, t, &times, threads, plan.tasks.len(), written.report.bytes, setup.backend.name())
    });
    let stage_references: usize = selection.pipelines.iter().map(|(_, d)| d.stages().len()).sum();
    let wall = start.elapsed().as_secs_f64();
    let task_cpu = outcome.task_cpu.as_secs_f64();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(HarvestSummary {
        output: opts.output.display().to_string(),
        shard: shard_record.map(|r| report::ShardSummary {
            index: r.index,
            count: r.count,
            script: format!("{:032x}", r.script),
            pipelines: selection.pipelines.len() + resumed.pipelines,
        }),
        trace: if trace_error.is_none() { opts.trace.as_ref().map(|p| p.display().to_string()) } else { None },
        trace_error,
        expanded: expansion.replaced.len() - if expansion.beside { expansion.errors.len() } else { 0 },
        variants: expansion.variants.len(),
        backend: setup.backend.name().to_string(),
        device: setup
            .backend
            .report()
            .map(|r| crate::backend::BackendReport { in_workers: opts.isolate.is_some(), ..r }),
        pipelines: script.pipelines.len() - if expansion.beside { 0 } else { expansion.replaced.len() }
            + expansion.variants.len(),
        whole_variants: expansion.beside,
        succeeded: outcome.compiled + resumed.pipelines,
        failed: outcome.failures.len(),
        resumed: resumed.pipelines,
        resumed_from_journal: resumed.from_journal,
        recompiled_for_device: resumed.recompiled,
        dropped: resumed.dropped,
        journal_records: resumed.journal_records,
        journal_damage: resumed.journal_damage,
        kept_existing_archive: written.kept_existing_archive,
        interrupted,
        archive_pipelines: written.report.pipelines,
        libraries_parsed: stats.libraries_parsed,
        unique_stage_functions: stats.functions_compiled,
        stage_references,
        reuse_ratio: if stats.functions_compiled == 0 {
            0.0
        } else {
            stage_references as f64 / stats.functions_compiled as f64
        },
        threads,
        cores,
        targets: opts.targets.names(),
        profile: opts.profile.name.to_string(),
        wall_seconds: wall,
        phases: Phases {
            load_seconds: loaded.as_secs_f64(),
            plan_seconds: (planned - loaded).as_secs_f64(),
            compile_seconds: (compiled_at - planned).as_secs_f64(),
            write_seconds: (written_at - compiled_at).as_secs_f64(),
        },
        task_cpu_seconds: task_cpu,
        process_cpu_seconds: (process_cpu_time() - cpu0).as_secs_f64(),
        cpu_utilization: if wall > 0.0 { task_cpu / (wall * threads.min(cores) as f64) } else { 0.0 },
        flushes: outcome.flushes,
        flush_errors: outcome.flush_errors,
        archive_bytes: written.report.bytes,
        bytes_written: outcome.bytes_written,
        peak_rss_bytes: crate::measure::peak_rss_bytes(),
        workers_started: outcome.workers_started,
        worker_caches: outcome.worker_caches,
        output_checks: report::OutputChecksSummary::of(
            setup.compiler.frontend().checker(),
            opts.targets,
            opts.isolate.is_some(),
        ),
        target_counts: outcome.target_counts,
        lost_targets: outcome.lost_targets,
        failures: outcome.failures,
    })
}

/// Load: the script text (kept: `--isolate` workers compile from these bytes, not from the
/// file) and the script parsed from it.
fn load(opts: &HarvestOptions) -> Result<(String, Script), HarvestError> {
    let text = std::fs::read_to_string(&opts.script)
        .map_err(|e| ScriptError::at(&opts.script, "", format!("cannot read script: {e}")))?;
    let script = Script::parse(&text, &opts.script, opts.script.parent().unwrap_or(std::path::Path::new("")))?;
    Ok((text, script))
}

/// What every phase after loading shares: the capture, the backend and a compiler on it.
struct Setup {
    capture: Arc<Capture>,
    backend: Arc<dyn crate::backend::Backend>,
    compiler: Compiler,
}

impl Setup {
    fn new(opts: &HarvestOptions, threads: usize) -> Setup {
        let capture = Arc::new(Capture::for_profile(CaptureMode::Outputs, opts.profile, opts.targets));
        let backend: Arc<dyn crate::backend::Backend> =
            opts.backend.clone().unwrap_or_else(|| Arc::new(crate::backend::NoneBackend));
        let options = CompilerOptions { capture: Some(capture.clone()), ..early::compiler_options(opts, threads) };
        let compiler = match opts.early.as_ref().filter(|_| !opts.resume && opts.isolate.is_none()) {
            Some(e) => Compiler::with_frontend(options, backend.clone(), e.frontend.clone()),
            None => Compiler::with_backend(options, backend.clone()),
        };
        Setup { capture, backend, compiler }
    }
}

/// Select, first step: the script's `expand_unspecialized`, replacing the pipelines it expands
/// for a device backend that cannot leave colour output open, beside them with `whole_variants`
/// elsewhere (in process and under `--isolate` alike: a worker expands the pipeline it is asked
/// for a variant of the same way).
fn expansion_for(
    script: &Script,
    backend: &dyn crate::backend::Backend,
    whole_variants: bool,
) -> crate::script::Expanded {
    let how = if backend.expands_unspecialized() {
        select::Expand::Replace
    } else if whole_variants {
        select::Expand::Beside
    } else {
        select::Expand::No
    };
    Selection::expansion(script, how)
}

/// Select, `--shard I/N`: keeps shard I's pipelines and returns the record the archive gets.
/// The assignment sees every selected pipeline of the script, so every shard computes the
/// same one.
fn select_shard(selection: &mut Selection<'_>, spec: shard::ShardSpec) -> granary_archive::ShardRecord {
    let split = selection.split(spec.count);
    selection.retain_shard(&split, spec.index);
    granary_archive::ShardRecord { index: spec.index, count: spec.count, script: split.assignment.script }
}

/// What the compile phase left behind: the sink's outcomes, the flusher's figures and the
/// runner's.
struct Compiled {
    task_cpu: std::time::Duration,
    compiled: usize,
    failures: Vec<Failure>,
    targets: Vec<(usize, TargetSet)>,
    lost: Vec<Failure>,
    flushes: usize,
    bytes_written: u64,
    flush_errors: Vec<String>,
    workers_started: usize,
    worker_caches: usize,
}

/// Compile: runs the plan in process or in workers, with the flush thread appending what is
/// new to the journal whenever the sink asks, while workers keep compiling.
#[allow(clippy::too_many_arguments)]
fn compile(
    opts: &HarvestOptions,
    setup: &Setup,
    selection: &Selection<'_>,
    text: &str,
    plan: &Plan,
    threads: usize,
    resumed: &mut resume::Resumed,
    tracer: Option<&trace::Tracer>,
    on_progress: &(dyn Fn(Progress) + Sync),
) -> Compiled {
    let by_index = selection.by_index();
    let (flush_tx, flush_rx) = mpsc::channel::<()>();
    let sink = sink::Sink {
        capture: &setup.capture,
        compiled: AtomicUsize::new(0),
        failures: Mutex::new(Vec::new()),
        flush_every: opts.flush_every,
        flush_tx: Mutex::new(Some(flush_tx)),
        on_progress,
        targets: Mutex::new(Vec::new()),
        lost: Mutex::new(std::collections::BTreeMap::new()),
        require_all_targets: opts.require_all_targets,
        interrupt: opts.interrupt.as_deref(),
        gate: opts.flush_every.filter(|k| *k > 0).map(|k| sink::JournalGate::new(2 * k)),
    };
    let flusher = Mutex::new(flush::Flusher::new(
        opts.output.clone(),
        crate::archive::portable_meta_for(opts.profile, opts.targets),
        resumed.reopen.take(),
        std::mem::take(&mut resumed.kept),
        opts.flush_every,
    ));
    let flush_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut workers_started = 0;
    let mut worker_caches = 0;
    let task_cpu = std::thread::scope(|s| {
        let (capture, flusher, flush_errors, sink) = (&*setup.capture, &flusher, &flush_errors, &sink);
        s.spawn(move || {
            while flush_rx.recv().is_ok() {
                while flush_rx.try_recv().is_ok() {} // coalesce queued requests
                let t0 = Instant::now();
                // Read before the snapshot: every pipeline this counts is in it.
                let landed = sink.compiled.load(Ordering::SeqCst);
                let (result, records) = {
                    let mut f = lock_std(flusher);
                    let before = f.flushes;
                    let r = f.flush(capture);
                    (r, f.flushes - before)
                };
                if let Some(t) = tracer {
                    let n = result.as_ref().map_or(0, |n| *n);
                    let args = serde_json::json!({"entries": n, "records": records});
                    t.slice(trace::FLUSH, "journal flush", t0, Instant::now(), args);
                }
                if let Some(g) = &sink.gate {
                    match &result {
                        Ok(_) => g.advance(landed),
                        Err(_) => g.open(),
                    }
                }
                match result {
                    Ok(0) => {}
                    Ok(_) => on_progress(Progress::Flushed),
                    Err(e) => lock_std(flush_errors).push(e.to_string()),
                }
            }
        });
        if let Some(int) = opts.interrupt.as_deref() {
            let output = &opts.output;
            s.spawn(move || {
                if !int.wait_requested() {
                    return;
                }
                let mut f = lock_std(flusher);
                let result = f.flush(capture);
                f.close();
                if let Some(g) = &sink.gate {
                    g.open();
                }
                int.answer(InterruptReport {
                    journal: crate::archive::journal::journal_path(output),
                    appended: *result.as_ref().unwrap_or(&0),
                    on_disk: f.on_disk(),
                    error: result.err().map(|e| e.to_string()),
                });
            });
        }
        let cpu = match &opts.isolate {
            None => {
                let pipelines = selection.pipelines.len();
                on_progress(Progress::Planned { pipelines, functions: plan.tasks.len().saturating_sub(pipelines) });
                inprocess::run(plan, selection.script, &by_index, &setup.compiler, threads, sink, tracer)
            }
            Some(iso) => {
                on_progress(Progress::Planned { pipelines: selection.pipelines.len(), functions: 0 });
                let children0 = crate::measure::children_cpu_time();
                let iso_stats = isolate::run(
                    selection.script,
                    selection.expansion,
                    text,
                    &selection.ctx,
                    &selection.pipelines,
                    opts.targets,
                    threads,
                    iso,
                    sink,
                    tracer,
                );
                workers_started = iso_stats.workers_started;
                worker_caches = iso_stats.worker_caches;
                crate::measure::children_cpu_time() - children0
            }
        };
        sink.close(); // ends the flush thread
        if let Some(int) = opts.interrupt.as_deref() {
            int.finish(); // ends the interrupt watcher, unless it is answering
        }
        cpu
    });
    let flusher = flusher.into_inner().unwrap_or_else(|p| p.into_inner());
    Compiled {
        task_cpu,
        compiled: sink.compiled.load(Ordering::Relaxed),
        failures: sink.failures.into_inner().unwrap_or_else(|p| p.into_inner()),
        targets: sink.targets.into_inner().unwrap_or_else(|p| p.into_inner()),
        lost: sink.lost.into_inner().unwrap_or_else(|p| p.into_inner()).into_values().collect(),
        flushes: flusher.flushes,
        bytes_written: flusher.bytes_written,
        flush_errors: flush_errors.into_inner().unwrap_or_else(|p| p.into_inner()),
        workers_started,
        worker_caches,
    }
}

/// The outcomes, collected: every failure (the selection's, then the runners', by index),
/// the lost targets in order and the per-target counts (resumed pipelines included).
struct Outcome {
    task_cpu: std::time::Duration,
    compiled: usize,
    failures: Vec<Failure>,
    lost_targets: Vec<Failure>,
    target_counts: Vec<TargetCount>,
    flushes: usize,
    bytes_written: u64,
    flush_errors: Vec<String>,
    workers_started: usize,
    worker_caches: usize,
}

/// Collect: `selection_failures` (the script's invalid pipelines) first, then what the run
/// recorded.
fn collect(
    opts: &HarvestOptions,
    run: Compiled,
    selection_failures: Vec<Failure>,
    resumed: &mut resume::Resumed,
) -> Outcome {
    let mut failures = selection_failures;
    failures.extend(run.failures);
    let mut pipeline_targets = run.targets;
    pipeline_targets.append(&mut resumed.targets);
    let target_counts: Vec<TargetCount> = opts
        .targets
        .iter()
        .map(|t| {
            let with = pipeline_targets.iter().filter(|(_, set)| set.contains(t)).count();
            TargetCount {
                target: t.name().to_string(),
                pipelines_with: with,
                pipelines_without: pipeline_targets.len() - with,
            }
        })
        .collect();
    let mut lost_targets = run.lost;
    lost_targets.sort_by(|a, b| (a.index, &a.function, &a.target).cmp(&(b.index, &b.function, &b.target)));
    failures.sort_by_key(|f| f.index);
    Outcome {
        task_cpu: run.task_cpu,
        compiled: run.compiled,
        failures,
        lost_targets,
        target_counts,
        flushes: run.flushes,
        bytes_written: run.bytes_written,
        flush_errors: run.flush_errors,
        workers_started: run.workers_started,
        worker_caches: run.worker_caches,
    }
}

/// What the final write did.
struct Written {
    report: WriteReport,
    /// Every pipeline failed: the existing archive was left alone.
    kept_existing_archive: bool,
}

/// Write: the final archive (a shard archive with its record), then the journal is deleted;
/// or, when every pipeline failed, an existing archive is left alone (replacing it with an
/// empty one would only destroy a good file).
fn write(
    opts: &HarvestOptions,
    capture: &Capture,
    shard_record: Option<&granary_archive::ShardRecord>,
    outcome: &mut Outcome,
    resumed: &resume::Resumed,
) -> Result<Written, HarvestError> {
    let kept_existing_archive = outcome.compiled == 0
        && resumed.pipelines == 0
        && !outcome.failures.is_empty()
        && std::fs::symlink_metadata(&opts.output).is_ok();
    if kept_existing_archive {
        let report = Archive::open(&opts.output)
            .map(|a| WriteReport { pipelines: a.len(), bytes: a.size() })
            .unwrap_or(WriteReport { pipelines: 0, bytes: 0 });
        return Ok(Written { report, kept_existing_archive });
    }
    let report = match shard_record {
        None => capture.write_archive(&opts.output)?,
        Some(record) => {
            // The same entries and meta `write_archive` writes, plus the shard record.
            let snap = capture.snapshot();
            let mut meta = crate::archive::portable_meta_for(opts.profile, opts.targets);
            meta.device_caches = capture.device_caches()?;
            let bytes = granary_archive::write_shard_entries(&opts.output, &snap.entries, &meta, Some(record))?;
            WriteReport { pipelines: snap.entries.len(), bytes }
        }
    };
    outcome.bytes_written += report.bytes as u64;
    // Every journaled entry the script produces is in the archive now (the others were
    // dropped on purpose): the journal has nothing left to add.
    if let Err(e) = remove_journal(&opts.output) {
        outcome.flush_errors.push(format!("the archive was written but its journal could not be deleted: {e}"));
    }
    Ok(Written { report, kept_existing_archive })
}

/// Points each failure and lost target at its pipeline's entry in the script (the text that
/// was read, not the file, which may have changed since).
fn locate_failures(opts: &HarvestOptions, text: &str, selection: &Selection<'_>, outcome: &mut Outcome) {
    if outcome.failures.is_empty() && outcome.lost_targets.is_empty() {
        return;
    }
    let lines = crate::script::LineIndex::new(text);
    for f in outcome.failures.iter_mut().chain(outcome.lost_targets.iter_mut()) {
        if let Some(p) = selection.script.pipelines.get(selection.expansion.origin(f.index)) {
            let (l, c) = lines.line_col(p.offset);
            f.script_position = Some(format!("{}:{l}:{c}", opts.script.display()));
        }
    }
}

/// When each phase ended, from the harvest's start.
struct PhaseTimes {
    start: Instant,
    loaded: std::time::Duration,
    planned: std::time::Duration,
    compiled_at: std::time::Duration,
    written_at: std::time::Duration,
}

/// Trace: the main track's phases and the file; `Some(message)` when it could not be written
/// (reported in the summary, never fatal).
fn write_trace(
    opts: &HarvestOptions,
    t: &trace::Tracer,
    times: &PhaseTimes,
    threads: usize,
    tasks: usize,
    bytes: usize,
    backend: &str,
) -> Option<String> {
    let path = opts.trace.as_ref()?;
    let at = |d: std::time::Duration| times.start + d;
    t.slice(
        trace::MAIN,
        "load script",
        times.start,
        at(times.loaded),
        serde_json::json!({"script": opts.script.display().to_string()}),
    );
    t.slice(trace::MAIN, "plan", at(times.loaded), at(times.planned), serde_json::json!({"tasks": tasks}));
    t.slice(
        trace::MAIN,
        "final write",
        at(times.compiled_at),
        at(times.written_at),
        serde_json::json!({"bytes": bytes}),
    );
    let meta = serde_json::json!({
        "script": opts.script.display().to_string(),
        "output": opts.output.display().to_string(),
        "threads": threads,
        "backend": backend,
        "isolate": opts.isolate.is_some(),
    });
    t.write(path, threads, opts.isolate.is_some(), meta)
        .err()
        .map(|e| format!("cannot write the trace {}: {e}", path.display()))
}
