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

mod plan;
mod report;

pub use plan::{plan, Plan, Task};
pub use report::{Failure, HarvestSummary};

use crate::archive::{Archive, ArchiveError};
use crate::capture::{Capture, CaptureMode};
use crate::compiler::{CompileError, Compiler, CompilerOptions};
use crate::descriptor::{PipelineDescriptor, TargetSet};
use crate::script::{Script, ScriptError};
use crate::util::{process_cpu_time, thread_cpu_time};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

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

fn script_failure(index: usize, name: String, e: &ScriptError) -> Failure {
    Failure {
        index,
        pipeline: name,
        phase: "script",
        kind: None,
        file: Some(e.file.display().to_string()),
        line: e.line.map(|v| v as u64),
        column: e.column.map(|v| v as u64),
        json_path: Some(e.json_path.clone()),
        message: e.to_string(),
    }
}

fn compile_failure(index: usize, name: String, e: &CompileError) -> Failure {
    let mut f = Failure {
        index,
        pipeline: name,
        phase: "link",
        kind: None,
        file: None,
        line: None,
        column: None,
        json_path: None,
        message: e.to_string(),
    };
    if let CompileError::Shader { error, .. } = e {
        f.phase = "shader";
        f.kind = Some(error.kind);
        f.file = Some(error.file.clone());
        f.line = error.line.map(u64::from);
        f.column = error.column.map(u64::from);
    }
    f
}

/// Runs a harvest. `on_progress` is called from worker threads.
pub fn harvest(opts: &HarvestOptions, on_progress: &(dyn Fn(Progress) + Sync)) -> Result<HarvestSummary, HarvestError> {
    let start = Instant::now();
    let cpu0 = process_cpu_time();
    let threads = opts.threads.max(1);
    let script = Script::load(&opts.script)?;

    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::new(CompilerOptions {
        targets: opts.targets,
        max_concurrent_tasks: Some(threads),
        capture: Some(capture.clone()),
        cache: true,
    });
    let ctx = compiler.key_context();

    let mut failures: Vec<Failure> = Vec::new();
    let mut valid: Vec<(usize, &PipelineDescriptor)> = Vec::new();
    for p in &script.pipelines {
        match &p.descriptor {
            Ok(d) => valid.push((p.index, d)),
            Err(e) => failures.push(script_failure(p.index, p.display_name(), e)),
        }
    }

    // Resume: keep what the existing archive has.
    let mut resumed = 0;
    if opts.resume && opts.output.exists() {
        let resume_err = |why: String| HarvestError::Resume { path: opts.output.display().to_string(), why };
        let archive = Archive::read(&opts.output)?;
        archive.verify().map_err(|e| resume_err(format!("{e}; delete it or run without --resume")))?;
        if archive.key_context() != ctx {
            return Err(resume_err("it was built with different writer options (another granary version)".into()));
        }
        if !archive.is_empty() && archive.targets() != opts.targets {
            return Err(resume_err(format!(
                "it holds targets {} but this harvest asks for {}",
                archive.targets().names(),
                opts.targets.names()
            )));
        }
        let have: std::collections::HashSet<u128> = archive.iter().filter_map(|p| p.ok()).map(|p| p.key().0).collect();
        capture.insert_archived(archive.entries()?);
        valid.retain(|(_, d)| {
            let key = d.key(&ctx);
            if have.contains(&key.0) {
                resumed += 1;
                if let Some(l) = d.label() {
                    capture.add_label(key, l);
                }
                false
            } else {
                true
            }
        });
    }

    let plan = plan::plan(&valid, &ctx);
    on_progress(Progress::Planned { tasks: plan.tasks.len() });
    let by_index: std::collections::HashMap<usize, &PipelineDescriptor> = valid.iter().copied().collect();

    let next = AtomicUsize::new(0);
    let compiled = AtomicUsize::new(0);
    let compile_failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    let task_cpu: Mutex<Duration> = Mutex::new(Duration::ZERO);
    let flushes = AtomicUsize::new(0);
    let flush_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let (flush_tx, flush_rx) = mpsc::channel::<()>();

    std::thread::scope(|s| {
        // The flush writer: writes the archive whenever asked, while workers keep compiling.
        let (capture_ref, flushes_ref, flush_errors_ref) = (&capture, &flushes, &flush_errors);
        let writer = s.spawn(move || {
            while flush_rx.recv().is_ok() {
                while flush_rx.try_recv().is_ok() {} // coalesce queued requests
                match capture_ref.write_archive(&opts.output) {
                    Ok(_) => {
                        flushes_ref.fetch_add(1, Ordering::Relaxed);
                        on_progress(Progress::Flushed);
                    }
                    Err(e) => crate::sync::lock_std(flush_errors_ref).push(e.to_string()),
                }
            }
        });
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let flush_tx = flush_tx.clone();
                let (plan, next, compiled, compiler, by_index) = (&plan, &next, &compiled, &compiler, &by_index);
                let (compile_failures, task_cpu, script) = (&compile_failures, &task_cpu, &script);
                s.spawn(move || {
                    let cpu0 = thread_cpu_time();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(task) = plan.tasks.get(i) else { break };
                        match task {
                            // Errors of libraries and functions surface through the pipelines
                            // that use them, with the pipeline named.
                            Task::Library(l) => {
                                let _ = compiler.frontend().library(l);
                            }
                            Task::Function(f, stage) => {
                                let _ = compiler.frontend().function(f, *stage);
                            }
                            Task::Pipeline(p) => {
                                let Some(desc) = by_index.get(p) else { continue };
                                match compiler.compile(desc) {
                                    Ok(_) => {
                                        let n = compiled.fetch_add(1, Ordering::Relaxed) + 1;
                                        if opts.flush_every.is_some_and(|k| k > 0 && n % k == 0) {
                                            let _ = flush_tx.send(());
                                        }
                                    }
                                    Err(e) => {
                                        let name = script.pipelines[*p].display_name();
                                        crate::sync::lock_std(compile_failures).push(compile_failure(*p, name, &e));
                                    }
                                }
                            }
                        }
                        on_progress(Progress::TaskDone);
                    }
                    *crate::sync::lock_std(task_cpu) += thread_cpu_time() - cpu0;
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        drop(flush_tx);
        let _ = writer.join();
    });

    let report = capture.write_archive(&opts.output)?;
    failures.extend(compile_failures.into_inner().unwrap_or_else(|p| p.into_inner()));
    failures.sort_by_key(|f| f.index);
    let stats = compiler.stats();
    let wall = start.elapsed().as_secs_f64();
    let task_cpu = task_cpu.into_inner().unwrap_or_else(|p| p.into_inner()).as_secs_f64();
    let succeeded = compiled.load(Ordering::Relaxed) + resumed;
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
        task_cpu_seconds: task_cpu,
        process_cpu_seconds: (process_cpu_time() - cpu0).as_secs_f64(),
        parallel_efficiency: if wall > 0.0 { task_cpu / (wall * threads as f64) } else { 0.0 },
        flushes: flushes.load(Ordering::Relaxed),
        flush_errors: flush_errors.into_inner().unwrap_or_else(|p| p.into_inner()),
        archive_bytes: report.bytes,
        failures,
    })
}
