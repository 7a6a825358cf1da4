//! Layer 8 — offline orchestration: script → task plan → N worker threads → capture → archive,
//! with periodic flushes, resume and a summary.
//!
//! Invariants:
//! - The archive written is a function of the script's successful pipelines (and, with
//!   `resume`, the previous archive's entries) only: thread count and scheduling do not change
//!   a byte.
//! - Intermediate flushes go through `Capture::write_archive`, so they run while workers keep
//!   compiling and each file on disk is complete.
//! - A failing pipeline is reported and the rest still land in the archive.

mod inprocess;
mod isolate;
mod plan;
mod report;
mod sink;
mod worker;

pub use isolate::IsolateOptions;
pub use plan::{plan, Plan, Task};
pub use report::{Failure, HarvestSummary, Phases};
pub use worker::worker_main;

use crate::archive::{Archive, ArchiveError};
use crate::capture::{Capture, CaptureMode};
use crate::compiler::{Compiler, CompilerOptions};
use crate::descriptor::{PipelineDescriptor, TargetSet};
use crate::script::{Script, ScriptError};
use crate::util::process_cpu_time;
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
    /// Write the archive every this many compiled pipelines (besides the final write).
    pub flush_every: Option<usize>,
    /// Keep the entries of an existing, valid output archive and compile only what is missing.
    pub resume: bool,
    /// Compile in worker processes instead of threads (`--isolate`).
    pub isolate: Option<IsolateOptions>,
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
    /// An intermediate archive write finished.
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
}

/// `--resume`: verifies the existing output archive, puts its entries into `capture`, and
/// removes the pipelines it already holds from `valid`. Returns how many were removed.
fn resume(
    opts: &HarvestOptions,
    ctx: &crate::descriptor::KeyContext,
    capture: &Capture,
    valid: &mut Vec<(usize, &PipelineDescriptor)>,
) -> Result<usize, HarvestError> {
    // A harvest that was killed mid-write left its temporary file; nothing reads it.
    crate::archive::remove_stale_temporaries(&opts.output);
    if !opts.output.exists() {
        return Ok(0);
    }
    let resume_err = |why: String| HarvestError::Resume { path: opts.output.display().to_string(), why };
    let archive = Archive::read(&opts.output)?;
    archive.verify().map_err(|e| {
        resume_err(format!("{e}; recover its intact part with `granary salvage`, or delete it, or run without --resume"))
    })?;
    if archive.key_context() != *ctx {
        return Err(resume_err("it was built with different writer options (another granary version)".into()));
    }
    if !archive.is_empty() && archive.targets() != opts.targets {
        return Err(resume_err(format!(
            "it holds targets {} but this harvest asks for {}",
            archive.targets().names(),
            opts.targets.names()
        )));
    }
    let entries = archive.entries()?;
    let have: std::collections::HashSet<u128> = entries.iter().map(|w| w.entry.key.0).collect();
    capture.insert_archived(entries);
    let before = valid.len();
    valid.retain(|(_, d)| {
        let key = d.key(ctx);
        if !have.contains(&key.0) {
            return true;
        }
        if let Some(l) = d.label() {
            capture.add_label(key, l);
        }
        false
    });
    Ok(before - valid.len())
}

/// Runs a harvest. `on_progress` is called from worker threads.
pub fn harvest(opts: &HarvestOptions, on_progress: &(dyn Fn(Progress) + Sync)) -> Result<HarvestSummary, HarvestError> {
    let start = Instant::now();
    let cpu0 = process_cpu_time();
    let threads = opts.threads.max(1);
    // The text is kept: `--isolate` workers compile from these bytes, not from the file.
    let text = std::fs::read_to_string(&opts.script)
        .map_err(|e| ScriptError::at(&opts.script, "", format!("cannot read script: {e}")))?;
    let script = Script::parse(&text, &opts.script, opts.script.parent().unwrap_or(std::path::Path::new("")))?;

    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::new(CompilerOptions {
        targets: opts.targets,
        max_concurrent_tasks: Some(threads),
        capture: Some(capture.clone()),
        cache_functions: true,
    });
    let ctx = compiler.key_context();

    let mut failures: Vec<Failure> = Vec::new();
    let mut valid: Vec<(usize, &PipelineDescriptor)> = Vec::new();
    for p in &script.pipelines {
        match &p.descriptor {
            Ok(d) => valid.push((p.index, d)),
            Err(e) => failures.push(sink::script_failure(p.index, p.display_name(), e)),
        }
    }

    let resumed = if opts.resume { resume(opts, &ctx, &capture, &mut valid)? } else { 0 };

    let loaded = start.elapsed();
    let plan = plan::plan(&valid, &ctx);
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
    };
    let flushes = AtomicUsize::new(0);
    let flush_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());

    let mut workers_started = 0;
    let task_cpu = std::thread::scope(|s| {
        // The flush writer: writes the archive whenever asked, while workers keep compiling.
        let (capture, flushes, flush_errors) = (&capture, &flushes, &flush_errors);
        s.spawn(move || {
            while flush_rx.recv().is_ok() {
                while flush_rx.try_recv().is_ok() {} // coalesce queued requests
                match capture.write_archive(&opts.output) {
                    Ok(_) => {
                        flushes.fetch_add(1, Ordering::Relaxed);
                        on_progress(Progress::Flushed);
                    }
                    Err(e) => crate::sync::lock_std(flush_errors).push(e.to_string()),
                }
            }
        });
        let cpu = match &opts.isolate {
            None => {
                on_progress(Progress::Planned { tasks: plan.tasks.len() });
                inprocess::run(&plan, &script, &by_index, &compiler, threads, &sink)
            }
            Some(iso) => {
                let indices: Vec<usize> = valid.iter().map(|(i, _)| *i).collect();
                on_progress(Progress::Planned { tasks: indices.len() });
                let children0 = crate::util::children_cpu_time();
                let iso_stats = isolate::run(&script, &text, &ctx, &indices, opts.targets, threads, iso, &sink);
                workers_started = iso_stats.workers_started;
                crate::util::children_cpu_time() - children0
            }
        };
        sink.close(); // ends the flush thread
        cpu
    });
    let compiled_at = start.elapsed();
    let report = capture.write_archive(&opts.output)?;
    let written_at = start.elapsed();
    let compiled = sink.compiled.load(Ordering::Relaxed);
    failures.extend(sink.failures.into_inner().unwrap_or_else(|p| p.into_inner()));
    failures.sort_by_key(|f| f.index);
    if !failures.is_empty() {
        // Point each failure at its pipeline's entry in the script.
        if let Ok(text) = std::fs::read_to_string(&opts.script) {
            let lines = crate::script::LineIndex::new(&text);
            for f in &mut failures {
                if let Some(p) = script.pipelines.get(f.index) {
                    let (l, c) = lines.line_col(p.offset);
                    f.script_position = Some(format!("{}:{l}:{c}", opts.script.display()));
                }
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
    let wall = start.elapsed().as_secs_f64();
    let task_cpu = task_cpu.as_secs_f64();
    let succeeded = compiled + resumed;
    let stage_references: usize = valid.iter().map(|(_, d)| d.stages().len()).sum();
    Ok(HarvestSummary {
        output: opts.output.display().to_string(),
        pipelines: script.pipelines.len(),
        succeeded,
        failed: failures.len(),
        resumed,
        archive_pipelines: report.pipelines,
        libraries_parsed: stats.libraries_parsed,
        unique_stage_functions: stats.functions_compiled,
        stage_references,
        reuse_ratio: if stats.functions_compiled == 0 { 0.0 } else { stage_references as f64 / stats.functions_compiled as f64 },
        threads,
        targets: opts.targets.names(),
        wall_seconds: wall,
        phases: Phases {
            load_seconds: loaded.as_secs_f64(),
            plan_seconds: (planned - loaded).as_secs_f64(),
            compile_seconds: (compiled_at - planned).as_secs_f64(),
            write_seconds: (written_at - compiled_at).as_secs_f64(),
        },
        task_cpu_seconds: task_cpu,
        process_cpu_seconds: (process_cpu_time() - cpu0).as_secs_f64(),
        parallel_efficiency: if wall > 0.0 { task_cpu / (wall * threads as f64) } else { 0.0 },
        flushes: flushes.load(Ordering::Relaxed),
        flush_errors: flush_errors.into_inner().unwrap_or_else(|p| p.into_inner()),
        archive_bytes: report.bytes,
        peak_rss_bytes: crate::util::peak_rss_bytes(),
        workers_started,
        failures,
    })
}
