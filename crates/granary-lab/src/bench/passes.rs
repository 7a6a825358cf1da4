//! Timed compile passes: granary's scheduler and the report's workaround (the rayon + DashMap
//! baseline is in `baseline.rs`).

use granary::capture::Capture;
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{PipelineDescriptor, StageKey, TargetSet};
use granary::harvest::{plan, Task};
use granary::util::thread_cpu_time;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Wall and summed thread CPU time of a pass.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    /// Wall time.
    pub wall: Duration,
    /// Sum of the worker threads' CPU time.
    pub cpu: Duration,
}

pub(crate) fn compiler(threads: usize, capture: Option<Arc<Capture>>) -> Compiler {
    Compiler::new(CompilerOptions {
        targets: TargetSet::SPIRV,
        max_concurrent_tasks: Some(threads),
        capture,
        cache_functions: true,
        ..Default::default()
    })
}

/// Runs `work(i)` for i in 0..n on `threads` threads pulling from one cursor.
pub(crate) fn parallel(n: usize, threads: usize, work: impl Fn(usize) + Sync) -> Timing {
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    let cpu = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let c0 = thread_cpu_time();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        work(i);
                    }
                    thread_cpu_time() - c0
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_default()).sum()
    });
    Timing { wall: t0.elapsed(), cpu }
}

/// Granary's harvest schedule (libraries, then unique stage functions, then pipelines) with
/// a fresh compiler recording into `capture`. The timing includes planning (its stage keys
/// computed on `threads` threads), since a baseline without granary has no such step.
pub fn granary(pipelines: &[PipelineDescriptor], threads: usize, capture: Option<Arc<Capture>>) -> Timing {
    let c = compiler(threads, capture);
    let t0 = Instant::now();
    // Planning runs on `threads` threads of its own: count the whole process's CPU (nothing
    // else runs during it).
    let c0 = granary::util::process_cpu_time();
    let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let p = plan(&indexed, &c.key_context(), threads);
    let plan_cpu = granary::util::process_cpu_time().saturating_sub(c0);
    let t = parallel(p.tasks.len(), threads, |i| match &p.tasks[i] {
        Task::Library(l) => {
            let _ = c.frontend().library(l);
        }
        Task::Function(f, stage) => {
            let _ = c.frontend().function(f, *stage);
        }
        Task::Pipeline(k) => {
            let _ = c.compile(&pipelines[*k]);
        }
    });
    Timing { wall: t0.elapsed(), cpu: t.cpu + plan_cpu }
}

/// The report's workaround: a lock per stage function held around each capture compile, and
/// each run of pipelines sharing a vertex function pinned to one thread.
pub fn workaround(pipelines: &[PipelineDescriptor], threads: usize) -> Timing {
    let capture = Arc::new(Capture::new(granary::capture::CaptureMode::Outputs));
    let c = compiler(threads, Some(capture));
    let ctx = c.key_context();
    let keys: Vec<Vec<StageKey>> = pipelines
        .iter()
        .map(|p| {
            let mut k: Vec<StageKey> =
                p.stages().iter().map(|(s, f)| granary::descriptor::stage_key(f, *s, &ctx)).collect();
            k.sort();
            k.dedup();
            k
        })
        .collect();
    let locks: HashMap<StageKey, Mutex<()>> = keys.iter().flatten().map(|k| (*k, Mutex::new(()))).collect();
    // Runs: consecutive pipelines with the same first (vertex) stage key.
    let first = |i: usize| pipelines[i].stages().first().map(|(s, f)| granary::descriptor::stage_key(f, *s, &ctx));
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for i in 0..pipelines.len() {
        match runs.last_mut() {
            Some((start, end)) if first(*start) == first(i) => *end = i + 1,
            _ => runs.push((i, i + 1)),
        }
    }
    parallel(runs.len(), threads, |r| {
        let (start, end) = runs[r];
        for i in start..end {
            let guards: Vec<_> = keys[i]
                .iter()
                .filter_map(|k| locks.get(k))
                .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
                .collect();
            let _ = c.compile(&pipelines[i]);
            drop(guards);
        }
    })
}
