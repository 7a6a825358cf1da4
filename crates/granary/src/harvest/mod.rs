//! Layer 8 — offline orchestration: script → task plan → N worker threads → capture → archive,
//! with periodic flushes, resume and a summary.
//!
//! Invariants:
//! - The archive written is a function of the script's successful pipelines only: thread
//!   count, scheduling, flushes and `--resume` do not change a byte. A resumed harvest keeps
//!   exactly the old entries whose keys the current script produces, labelled as the current
//!   script labels them, so it equals a fresh harvest of the script as it is now.
//! - Intermediate flushes append the entries captured since the previous flush to the
//!   archive's journal (`OUT.journal`, one fsynced record each) while workers keep compiling;
//!   the archive itself is replaced only by the final write (durably, whole), after which the
//!   journal is deleted. `--resume` replays the archive, then the journal's intact records.
//! - A failing pipeline is reported and the rest still land in the archive. When every
//!   pipeline failed (none compiled, none resumed), an existing output file is left alone.

mod flush;
mod inprocess;
mod isolate;
mod plan;
mod prune;
mod report;
pub mod shard;
mod sink;
mod trace;
mod worker;

pub use isolate::IsolateOptions;
pub use plan::{plan, Plan, Task};
pub use prune::{prune, PruneReport};
pub use report::{Failure, HarvestSummary, Phases, ShardSummary, TargetCount};
pub use worker::worker_main;

use crate::archive::journal::{journal_path, remove_journal, replay_journal, JournalReplay};
use crate::archive::WriteEntry;
use crate::archive::{Archive, ArchiveError};
use crate::capture::{Capture, CaptureMode, WriteReport};
use crate::compiler::{Compiler, CompilerOptions};
use crate::descriptor::{PipelineDescriptor, TargetSet};
use crate::measure::process_cpu_time;
use crate::script::{Script, ScriptError};
use crate::sync::lock_std;
use std::collections::{HashMap, HashSet};
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
    /// script still produces, and compile only what is missing.
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
}

/// Progress events, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// The plan is ready: this many tasks will run.
    Planned {
        /// Total tasks.
        tasks: usize,
    },
    /// One more task finished.
    TaskDone,
    /// An intermediate flush (a journal record) finished.
    Flushed,
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
    /// [`prune`] refused an archive.
    #[error("cannot prune {path}: {why}")]
    Prune {
        /// The archive.
        path: String,
        /// Why.
        why: String,
    },
}

/// What `--resume` found and kept.
#[derive(Default)]
struct Resumed {
    /// Script pipelines whose entry was kept (not recompiled).
    pipelines: usize,
    /// Old entries (archive and journal, distinct keys) the script no longer produces.
    dropped: usize,
    /// Intact journal records replayed.
    journal_records: usize,
    /// What replay ignored at the journal's end, in words.
    journal_damage: Option<String>,
    /// The existing journal's replay (its entries taken out), to continue it; `None`: start
    /// a new journal at the first flush.
    reopen: Option<JournalReplay>,
    /// Keys of the kept entries (already durable in the archive or the journal).
    kept: HashSet<u128>,
    /// The targets of each kept script pipeline.
    targets: Vec<(usize, TargetSet)>,
}

/// `--resume`: verifies the existing output archive, replays its journal, keeps exactly the
/// entries whose keys the current script produces — labelled as the current script labels
/// them — puts them into `capture`, and removes the pipelines they cover from `valid`.
fn resume(
    opts: &HarvestOptions,
    ctx: &crate::descriptor::KeyContext,
    capture: &Capture,
    valid: &mut Vec<(usize, &PipelineDescriptor)>,
) -> Result<Resumed, HarvestError> {
    // A harvest that was killed mid-write left its temporary file; nothing reads it.
    crate::archive::remove_stale_temporaries(&opts.output);
    let resume_err = |why: String| HarvestError::Resume { path: opts.output.display().to_string(), why };
    let mut out = Resumed::default();
    // Every old entry, archive first, then the journal's records in order.
    // Driver binaries come along: an entry's binary sets from the archive and the journal are
    // combined (one per device, the smaller set hash), as a merge would.
    let mut old: HashMap<u128, WriteEntry> = HashMap::new();
    if opts.output.exists() {
        let archive = Archive::read(&opts.output)?;
        archive.verify().map_err(|e| {
            resume_err(format!(
                "{e}; recover its intact part with `granary salvage`, or delete it, or run without --resume"
            ))
        })?;
        if archive.key_context() != *ctx {
            return Err(resume_err(format!(
                "it was built with writer options '{}' but this granary writes '{}' (another granary or naga \
                 version): harvest afresh without --resume",
                archive.target_options_text(),
                crate::frontend::targets::target_options_text(opts.profile, opts.targets)
            )));
        }
        // The requested targets are part of the writer options (checked above): an archive
        // whose pipelines lost a target everywhere is still this harvest's archive.
        old.extend(archive.entries()?.into_iter().map(|w| (w.entry.key.0, w)));
        capture.insert_device_caches(archive.meta()?.device_caches);
    }
    let journal = journal_path(&opts.output);
    let replay = replay_journal(&opts.output).map_err(|e| {
        resume_err(format!("its journal cannot be read: {e}; delete {} or run without --resume", journal.display()))
    })?;
    if let Some(mut r) = replay {
        if let Some(jctx) = r.key_context {
            if jctx != *ctx {
                return Err(resume_err(format!(
                    "its journal {} was written with different writer options (another granary version); delete the journal or run without --resume",
                    journal.display()
                )));
            }
        }
        capture.insert_device_caches(std::mem::take(&mut r.device_caches));
        for w in std::mem::take(&mut r.entries) {
            match old.entry(w.entry.key.0) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(w);
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    if *o.get().entry != *w.entry {
                        return Err(resume_err(format!(
                            "the archive and its journal {} hold different bytes for pipeline {:032x}; delete the journal or run without --resume",
                            journal.display(),
                            w.entry.key.0
                        )));
                    }
                    o.get_mut().binaries.extend(w.binaries);
                }
            }
        }
        out.journal_records = r.records;
        out.journal_damage = r.damaged_tail.as_ref().map(|t| format!("{}: {t}", journal.display()));
        if r.key_context.is_some() {
            out.reopen = Some(r);
        }
    }
    if old.is_empty() {
        return Ok(out);
    }
    // The keys the script produces now, each with every label the script gives it.
    let keys: Vec<u128> = valid.iter().map(|(_, d)| d.key(ctx).0).collect();
    let labels = prune::labels_by_key(keys.iter().copied().zip(valid.iter().map(|(_, d)| *d)));
    let (kept, dropped) = prune::keep_scripted(old.into_values(), &labels);
    out.dropped += dropped;
    let kept_targets: HashMap<u128, TargetSet> =
        kept.iter().map(|w| (w.entry.key.0, crate::compiler::entry_targets(&w.entry, opts.targets))).collect();
    out.kept = kept.iter().map(|w| w.entry.key.0).collect();
    capture.insert_archived(kept);
    let before = valid.len();
    let mut i = 0;
    valid.retain(|(index, _)| {
        let keep = !out.kept.contains(&keys[i]);
        if let Some(t) = kept_targets.get(&keys[i]).filter(|_| !keep) {
            out.targets.push((*index, *t));
        }
        i += 1;
        keep
    });
    out.pipelines = before - valid.len();
    Ok(out)
}

/// Runs a harvest. `on_progress` is called from worker threads.
pub fn harvest(opts: &HarvestOptions, on_progress: &(dyn Fn(Progress) + Sync)) -> Result<HarvestSummary, HarvestError> {
    harvest_shard(opts, None, on_progress)
}

/// The pipelines a harvest of `script` compiles, `(index, descriptor)`: its valid pipelines,
/// with those `expansion` replaced by their variants; and a failure for each pipeline that is
/// not valid or could not be expanded. `granary plan` splits exactly this set.
pub fn pipelines_to_harvest<'a>(
    script: &'a Script,
    expansion: &'a crate::script::Expanded,
) -> (Vec<(usize, &'a PipelineDescriptor)>, Vec<Failure>) {
    let mut failures = Vec::new();
    for (index, name, message) in &expansion.errors {
        failures.push(sink::process_failure(*index, name.clone(), "script", message.clone()));
    }
    let mut valid: Vec<(usize, &PipelineDescriptor)> = Vec::new();
    for p in &script.pipelines {
        match &p.descriptor {
            Ok(d) if !expansion.replaced.contains(&p.index) => valid.push((p.index, d)),
            Ok(_) => {}
            Err(e) => failures.push(sink::script_failure(p.index, p.display_name(), e)),
        }
    }
    valid.extend(expansion.variants.iter().map(|(i, _, d)| (*i, d)));
    (valid, failures)
}

/// [`harvest`] of one shard (`--shard I/N`, [`shard`]): compiles only the pipelines
/// [`shard::assign`] gives shard I, and records in the archive which shard of which script it
/// is, so that `granary merge` of all N shard archives gives the bytes of an unsharded
/// harvest. With `None`, exactly [`harvest`].
pub fn harvest_shard(
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
    let start = Instant::now();
    let cpu0 = process_cpu_time();
    let threads = opts.threads.max(1);
    // The text is kept: `--isolate` workers compile from these bytes, not from the file.
    let text = std::fs::read_to_string(&opts.script)
        .map_err(|e| ScriptError::at(&opts.script, "", format!("cannot read script: {e}")))?;
    let script = Script::parse(&text, &opts.script, opts.script.parent().unwrap_or(std::path::Path::new("")))?;

    let capture = Arc::new(Capture::for_profile(CaptureMode::Outputs, opts.profile, opts.targets));
    let backend: Arc<dyn crate::backend::Backend> =
        opts.backend.clone().unwrap_or_else(|| Arc::new(crate::backend::NoneBackend));
    let compiler = Compiler::with_backend(
        CompilerOptions {
            targets: opts.targets,
            profile: opts.profile,
            max_concurrent_tasks: Some(threads),
            capture: Some(capture.clone()),
            cache_functions: true,
            require_all_targets: opts.require_all_targets,
        },
        backend.clone(),
    );
    let ctx = compiler.key_context();

    let mut failures: Vec<Failure> = Vec::new();
    // `expand_unspecialized`, for a device backend that cannot leave colour output open.
    let expansion = match script.expand_unspecialized.as_ref().filter(|_| backend.expands_unspecialized()) {
        None => crate::script::Expanded::default(),
        Some(_) if opts.isolate.is_some() => {
            return Err(HarvestError::Unsupported(
                "the script's expand_unspecialized applies on this device (no graphics pipeline libraries), and \
                 --isolate cannot compile expanded variants yet: run without --isolate"
                    .into(),
            ))
        }
        Some(e) => e.apply(&script),
    };
    let (mut valid, script_failures) = pipelines_to_harvest(&script, &expansion);
    failures.extend(script_failures);
    // `--shard I/N`: keep shard I's pipelines. The assignment sees every valid pipeline of the
    // script, so every shard computes the same one.
    let shard_record = shard.map(|spec| {
        let (items, a) = shard::assign_descriptors(valid.iter().map(|(_, d)| *d), &ctx, spec.count);
        let mut i = 0;
        valid.retain(|_| {
            let keep = a.shard_of.get(&items[i].key) == Some(&spec.index);
            i += 1;
            keep
        });
        granary_archive::ShardRecord { index: spec.index, count: spec.count, script: a.script }
    });

    let mut resumed = if opts.resume { resume(opts, &ctx, &capture, &mut valid)? } else { Resumed::default() };

    let tracer = opts.trace.as_ref().map(|_| trace::Tracer::new(start));
    let tracer = tracer.as_ref();
    let loaded = start.elapsed();
    let plan = plan::plan(&valid, &ctx, threads);
    let planned = start.elapsed();
    let by_index: std::collections::HashMap<usize, &PipelineDescriptor> = valid.iter().copied().collect();
    let (flush_tx, flush_rx) = mpsc::channel::<()>();
    let sink = sink::Sink {
        capture: &capture,
        compiled: AtomicUsize::new(0),
        failures: Mutex::new(Vec::new()),
        flush_every: opts.flush_every,
        flush_tx: Mutex::new(Some(flush_tx)),
        on_progress,
        targets: Mutex::new(Vec::new()),
        lost: Mutex::new(std::collections::BTreeMap::new()),
        require_all_targets: opts.require_all_targets,
    };
    let flusher = Mutex::new(flush::Flusher::new(
        opts.output.clone(),
        crate::archive::portable_meta_for(opts.profile, opts.targets),
        resumed.reopen.take(),
        std::mem::take(&mut resumed.kept),
    ));
    let flush_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());

    let mut workers_started = 0;
    let mut worker_caches = 0;
    let task_cpu = std::thread::scope(|s| {
        // The flush writer: appends what is new to the journal whenever asked, while workers
        // keep compiling.
        let (capture, flusher, flush_errors) = (&capture, &flusher, &flush_errors);
        s.spawn(move || {
            while flush_rx.recv().is_ok() {
                while flush_rx.try_recv().is_ok() {} // coalesce queued requests
                let t0 = Instant::now();
                let result = lock_std(flusher).flush(capture);
                if let Some(t) = tracer {
                    let n = result.as_ref().map_or(0, |n| *n);
                    t.slice(trace::FLUSH, "journal flush", t0, Instant::now(), serde_json::json!({"entries": n}));
                }
                match result {
                    Ok(0) => {}
                    Ok(_) => on_progress(Progress::Flushed),
                    Err(e) => lock_std(flush_errors).push(e.to_string()),
                }
            }
        });
        let cpu = match &opts.isolate {
            None => {
                on_progress(Progress::Planned { tasks: plan.tasks.len() });
                inprocess::run(&plan, &script, &by_index, &compiler, threads, &sink, tracer)
            }
            Some(iso) => {
                let indices: Vec<usize> = valid.iter().map(|(i, _)| *i).collect();
                on_progress(Progress::Planned { tasks: indices.len() });
                let children0 = crate::measure::children_cpu_time();
                let iso_stats = isolate::run(
                    &script,
                    &text,
                    &ctx,
                    &indices,
                    opts.targets,
                    opts.profile,
                    threads,
                    iso,
                    &sink,
                    tracer,
                );
                workers_started = iso_stats.workers_started;
                worker_caches = iso_stats.worker_caches;
                crate::measure::children_cpu_time() - children0
            }
        };
        sink.close(); // ends the flush thread
        cpu
    });
    let compiled_at = start.elapsed();
    let compiled = sink.compiled.load(Ordering::Relaxed);
    failures.extend(sink.failures.into_inner().unwrap_or_else(|p| p.into_inner()));
    let mut pipeline_targets = sink.targets.into_inner().unwrap_or_else(|p| p.into_inner());
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
    let mut lost_targets: Vec<Failure> =
        sink.lost.into_inner().unwrap_or_else(|p| p.into_inner()).into_values().collect();
    lost_targets.sort_by(|a, b| (a.index, &a.function, &a.target).cmp(&(b.index, &b.function, &b.target)));
    failures.sort_by_key(|f| f.index);
    let flusher = flusher.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut flush_errors = flush_errors.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut bytes_written = flusher.bytes_written;
    // A harvest in which every pipeline failed has nothing to put in place of an existing
    // archive: replacing it with an empty one would only destroy a good file.
    let kept_existing_archive = compiled == 0
        && resumed.pipelines == 0
        && !failures.is_empty()
        && std::fs::symlink_metadata(&opts.output).is_ok();
    let report = if kept_existing_archive {
        Archive::open(&opts.output)
            .map(|a| WriteReport { pipelines: a.len(), bytes: a.size() })
            .unwrap_or(WriteReport { pipelines: 0, bytes: 0 })
    } else {
        let report = match &shard_record {
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
        bytes_written += report.bytes as u64;
        // Every journaled entry the script produces is in the archive now (the others were
        // dropped on purpose): the journal has nothing left to add.
        if let Err(e) = remove_journal(&opts.output) {
            flush_errors.push(format!("the archive was written but its journal could not be deleted: {e}"));
        }
        report
    };
    let written_at = start.elapsed();
    if !failures.is_empty() || !lost_targets.is_empty() {
        // Point each failure at its pipeline's entry in the script (the text that was read,
        // not the file, which may have changed since).
        let lines = crate::script::LineIndex::new(&text);
        for f in failures.iter_mut().chain(lost_targets.iter_mut()) {
            if let Some(p) = script.pipelines.get(expansion.origin(f.index)) {
                let (l, c) = lines.line_col(p.offset);
                f.script_position = Some(format!("{}:{l}:{c}", opts.script.display()));
            }
        }
    }
    let mut stats = compiler.stats();
    if opts.isolate.is_some() {
        // The same meaning as in-process: each unique library and stage function of the
        // harvested pipelines once (from the plan), however many workers parsed it again.
        stats.libraries_parsed = plan.libraries as u64;
        stats.functions_compiled = plan.functions as u64;
    }
    let mut trace_error = None;
    if let (Some(t), Some(path)) = (tracer, &opts.trace) {
        let at = |d: std::time::Duration| start + d;
        t.slice(
            trace::MAIN,
            "load script",
            start,
            at(loaded),
            serde_json::json!({"script": opts.script.display().to_string()}),
        );
        t.slice(trace::MAIN, "plan", at(loaded), at(planned), serde_json::json!({"tasks": plan.tasks.len()}));
        t.slice(
            trace::MAIN,
            "final write",
            at(compiled_at),
            at(written_at),
            serde_json::json!({"bytes": report.bytes}),
        );
        let meta = serde_json::json!({
            "script": opts.script.display().to_string(),
            "output": opts.output.display().to_string(),
            "threads": threads,
            "backend": backend.name(),
            "isolate": opts.isolate.is_some(),
        });
        if let Err(e) = t.write(path, threads, opts.isolate.is_some(), meta) {
            trace_error = Some(format!("cannot write the trace {}: {e}", path.display()));
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let task_cpu = task_cpu.as_secs_f64();
    let succeeded = compiled + resumed.pipelines;
    let stage_references: usize = valid.iter().map(|(_, d)| d.stages().len()).sum();
    Ok(HarvestSummary {
        output: opts.output.display().to_string(),
        shard: shard_record.map(|r| report::ShardSummary {
            index: r.index,
            count: r.count,
            script: format!("{:032x}", r.script),
            pipelines: valid.len() + resumed.pipelines,
        }),
        trace: if trace_error.is_none() { opts.trace.as_ref().map(|p| p.display().to_string()) } else { None },
        trace_error,
        expanded: expansion.replaced.len(),
        variants: expansion.variants.len(),
        backend: backend.name().to_string(),
        device: backend.report().map(|r| crate::backend::BackendReport { in_workers: opts.isolate.is_some(), ..r }),
        pipelines: script.pipelines.len() - expansion.replaced.len() + expansion.variants.len(),
        succeeded,
        failed: failures.len(),
        resumed: resumed.pipelines,
        dropped: resumed.dropped,
        journal_records: resumed.journal_records,
        journal_damage: resumed.journal_damage,
        kept_existing_archive,
        archive_pipelines: report.pipelines,
        libraries_parsed: stats.libraries_parsed,
        unique_stage_functions: stats.functions_compiled,
        stage_references,
        reuse_ratio: if stats.functions_compiled == 0 {
            0.0
        } else {
            stage_references as f64 / stats.functions_compiled as f64
        },
        threads,
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
        cpu_utilization: if wall > 0.0 { task_cpu / (wall * threads as f64) } else { 0.0 },
        flushes: flusher.flushes,
        flush_errors,
        archive_bytes: report.bytes,
        bytes_written,
        peak_rss_bytes: crate::measure::peak_rss_bytes(),
        workers_started,
        worker_caches,
        target_counts,
        lost_targets,
        failures,
    })
}
