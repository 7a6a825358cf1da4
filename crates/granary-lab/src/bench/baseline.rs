//! The baseline a competent engineer writes without granary: rayon over the pipelines, and a
//! concurrent memo map so that each stage function is compiled once.
//!
//! Each pipeline is compiled on a rayon worker (`par_iter`) in script order. Its stage
//! functions are looked up in a `DashMap<StageKey, Arc<OnceLock<Result<…>>>>`: the first
//! thread to ask for a key compiles it inside the `OnceLock`, threads asking meanwhile block
//! on that cell until it is set, and everyone after shares the `Arc`. The cell is cloned out of
//! the map before computing, so no shard lock is held during a compile. Libraries are memoised
//! the same way, by the front end's library cache (see [`Baseline`] for why that is the same
//! thing). Pipelines are then linked by the same backend as granary's compiler and turned into
//! the same [`PipelineEntry`] values.
//!
//! What it lacks compared with granary's scheduler is only the schedule: no planning, so a
//! thread that needs a stage function another thread is compiling waits for it, and work is
//! split by rayon's stealing over the pipeline range rather than by unique work items.

use super::passes::Timing;
use dashmap::DashMap;
use granary::backend::{Backend, NoneBackend};
use granary::compiler::CompileError;
use granary::descriptor::{stage_key, KeyContext, PipelineDescriptor, PipelineEntry, StageKey, TargetSet};
use granary::frontend::{Frontend, FrontendStats, ShaderError, StageFunction};
use granary::measure::thread_cpu_time;
use granary::sync::TaskLimiter;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

type FunctionCell = Arc<OnceLock<Result<Arc<StageFunction>, ShaderError>>>;

/// The rayon + `DashMap` baseline compiler.
///
/// Stage functions are memoised in the baseline's own `DashMap`. Compiling one (specialize,
/// write each target, reflect the interface) goes through [`Frontend::function`] on a front end
/// built with `cache_functions = false`, because the specialization step is private to the
/// front end: with its function cache off that call is exactly one compile, with no memo of
/// its own, so the baseline's map is the only thing that makes a stage function compile once.
/// Parsing goes through the same front end, whose library cache is a concurrent map of
/// once-cells keyed by the library's content hash — what the engineer's second `DashMap` would
/// be — so it is used as is rather than duplicated.
pub struct Baseline {
    frontend: Frontend,
    ctx: KeyContext,
    functions: DashMap<StageKey, FunctionCell>,
    backend: NoneBackend,
}

/// The result of one baseline pass.
pub struct BaselineRun {
    /// Wall time, and the summed CPU time of the rayon workers.
    pub timing: Timing,
    /// One result per pipeline, in input order.
    pub results: Vec<Result<Arc<PipelineEntry>, CompileError>>,
    /// Front-end counters: `functions_compiled` counts the baseline's stage-function compiles.
    pub stats: FrontendStats,
}

impl Default for Baseline {
    fn default() -> Self {
        Self::new()
    }
}

impl Baseline {
    /// A baseline writing SPIR-V, like the benchmark's granary passes.
    pub fn new() -> Self {
        // The limiter never binds: the rayon pool has fewer threads than permits.
        // Unchecked outputs, like the granary passes (`spirv_options`).
        let frontend = Frontend::new(TargetSet::SPIRV, Arc::new(TaskLimiter::new(usize::MAX)), false)
            .with_output_checks(granary::frontend::CheckOutputs::Off);
        let ctx = frontend.key_context();
        Baseline { frontend, ctx, functions: DashMap::new(), backend: NoneBackend }
    }

    /// Front-end counters so far.
    pub fn stats(&self) -> FrontendStats {
        self.frontend.stats()
    }

    fn cell(&self, key: StageKey) -> FunctionCell {
        if let Some(c) = self.functions.get(&key) {
            return c.clone();
        }
        self.functions.entry(key).or_default().clone()
    }

    /// Compiles one pipeline: memoised stage functions, then the backend's link step.
    // Same signature as `Compiler::compile`, which this mirrors.
    #[allow(clippy::result_large_err)]
    pub fn compile(&self, desc: &PipelineDescriptor) -> Result<Arc<PipelineEntry>, CompileError> {
        let name = || desc.label().unwrap_or("<unlabeled>").to_string();
        let mut functions: Vec<Arc<StageFunction>> = Vec::with_capacity(2);
        for (stage, f) in desc.stages() {
            let cell = self.cell(stage_key(f, stage, &self.ctx));
            match cell.get_or_init(|| self.frontend.function(f, stage)) {
                Ok(func) => functions.push(func.clone()),
                Err(error) => {
                    return Err(CompileError::Shader {
                        pipeline: name(),
                        stage,
                        function: f.describe(),
                        error: error.clone(),
                    })
                }
            }
        }
        self.backend.link(desc, &functions).map_err(|message| CompileError::Link { pipeline: name(), message })?;
        let layout = granary::backend::merge_layout(desc, &functions)
            .map_err(|message| CompileError::Link { pipeline: name(), message })?;
        let entry = granary::compiler::pipeline_entry(desc, &functions, &layout)
            .map_err(|message| CompileError::Link { pipeline: name(), message })?;
        Ok(Arc::new(entry))
    }
}

/// Compiles every pipeline with a fresh [`Baseline`] on a rayon pool of `threads` threads.
/// The wall time covers the `par_iter` only (the pool is built before, as an application's
/// global pool would be); the CPU time is the sum over the pool's workers.
pub fn baseline(pipelines: &[PipelineDescriptor], threads: usize) -> Result<BaselineRun, rayon::ThreadPoolBuildError> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build()?;
    let b = Baseline::new();
    // Each worker's CPU clock before and after; broadcast runs once on every worker, in
    // worker-index order.
    let before = pool.broadcast(|_| thread_cpu_time());
    let t0 = Instant::now();
    #[allow(clippy::result_large_err)]
    let results: Vec<_> = pool.install(|| pipelines.par_iter().map(|p| b.compile(p)).collect());
    let wall = t0.elapsed();
    let after = pool.broadcast(|_| thread_cpu_time());
    let cpu = after.iter().zip(&before).map(|(a, b)| a.saturating_sub(*b)).sum();
    Ok(BaselineRun { timing: Timing { wall, cpu }, results, stats: b.stats() })
}
