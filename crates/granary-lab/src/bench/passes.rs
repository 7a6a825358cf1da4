//! Timed compile passes: granary's shipped schedule and the report's workaround (the rayon +
//! DashMap baseline is in `baseline.rs`).

use granary::backend::{Backend, BackendReport, NoneBackend};
use granary::capture::Capture;
use granary::compiler::{CompileError, Compiler};
use granary::descriptor::{KeyContext, PipelineDescriptor, StageKey};
use granary::harvest::{plan, run_plan};
use granary::measure::thread_cpu_time;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// One worker thread's share of a pass.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Worker {
    /// Sum of the wall durations of the tasks it ran (waits inside a task, for a lock or for
    /// another thread's compile, included).
    pub busy: Duration,
    /// Its CPU time.
    pub cpu: Duration,
    /// Tasks it ran.
    pub tasks: usize,
}

/// One timed pass with its per-thread figures and outcome.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// Wall and summed thread CPU time, as the scaling tables report them.
    pub timing: Timing,
    /// Wall time of the worker threads' phase alone (no planning, no key computation): the
    /// denominator of the idle fraction.
    pub workers_wall: Duration,
    /// Per worker thread, in spawn order.
    pub workers: Vec<Worker>,
    /// Pipelines compiled.
    pub compiled: usize,
    /// Pipelines that failed (a device that rejects a pipeline fails it quickly: compare the
    /// passes only when these agree).
    pub failed: usize,
    /// The first failure's message.
    pub first_error: Option<String>,
    /// Summed time the workaround's threads waited for its stage-function locks (zero for
    /// granary's schedule).
    pub lock_wait: Duration,
    /// The backend's counters after the pass (driver time, pipelines and modules created).
    pub backend: Option<BackendReport>,
}

/// Counts compile outcomes from many threads.
#[derive(Default)]
struct Outcomes {
    compiled: AtomicUsize,
    failed: AtomicUsize,
    first_error: Mutex<Option<String>>,
}

impl Outcomes {
    fn note<T>(&self, r: Result<T, CompileError>) {
        match r {
            Ok(_) => {
                self.compiled.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }

    fn into_pass(self, timing: Timing, workers_wall: Duration, workers: Vec<Worker>, backend: &dyn Backend) -> Pass {
        Pass {
            timing,
            workers_wall,
            workers,
            compiled: self.compiled.into_inner(),
            failed: self.failed.into_inner(),
            first_error: self.first_error.into_inner().unwrap_or_else(|p| p.into_inner()),
            lock_wait: Duration::ZERO,
            backend: backend.report(),
        }
    }
}

pub(crate) fn compiler(threads: usize, capture: Option<Arc<Capture>>) -> Compiler {
    compiler_on(threads, capture, Arc::new(NoneBackend))
}

fn compiler_on(threads: usize, capture: Option<Arc<Capture>>, backend: Arc<dyn Backend>) -> Compiler {
    Compiler::with_backend(crate::spirv_options(threads, capture), backend)
}

/// Runs `work(i)` for i in 0..n on `threads` threads pulling from one cursor; the wall time
/// and the threads' summed CPU time.
pub fn parallel(n: usize, threads: usize, work: impl Fn(usize) + Sync) -> Timing {
    parallel_workers(n, threads, work).0
}

/// [`parallel`], also returning each worker thread's busy time, CPU time and task count.
pub(crate) fn parallel_workers(n: usize, threads: usize, work: impl Fn(usize) + Sync) -> (Timing, Vec<Worker>) {
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    let workers: Vec<Worker> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let c0 = thread_cpu_time();
                    let mut w = Worker::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let t = Instant::now();
                        work(i);
                        w.busy += t.elapsed();
                        w.tasks += 1;
                    }
                    w.cpu = thread_cpu_time() - c0;
                    w
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    (Timing { wall: t0.elapsed(), cpu: workers.iter().map(|w| w.cpu).sum() }, workers)
}

/// Granary's harvest schedule (libraries, then unique stage functions, then pipelines: the
/// harvest's own in-process runner, [`granary::harvest::run_plan`]) with a fresh compiler
/// recording into `capture`. The timing includes planning (its stage keys
/// computed on `threads` threads), since a baseline without granary has no such step.
pub fn granary(pipelines: &[PipelineDescriptor], threads: usize, capture: Option<Arc<Capture>>) -> Timing {
    granary_on(pipelines, threads, capture, Arc::new(NoneBackend)).timing
}

/// [`granary()`] with a compiler on `backend` (a device backend creates every pipeline on its
/// driver), with per-thread figures and outcomes.
pub fn granary_on(
    pipelines: &[PipelineDescriptor],
    threads: usize,
    capture: Option<Arc<Capture>>,
    backend: Arc<dyn Backend>,
) -> Pass {
    let c = compiler_on(threads, capture, backend.clone());
    let outcomes = Outcomes::default();
    let t0 = Instant::now();
    // Planning runs on `threads` threads of its own: count the whole process's CPU (nothing
    // else runs during it).
    let c0 = granary::measure::process_cpu_time();
    let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let p = plan(&indexed, &c.key_context(), threads);
    let plan_cpu = granary::measure::process_cpu_time().saturating_sub(c0);
    // The shipped schedule (the harvest's in-process runner), with a step that counts outcomes.
    let t1 = Instant::now();
    let shares = run_plan(&p, &c, threads, &|_, k| outcomes.note(c.compile(&pipelines[k])));
    let workers_wall = t1.elapsed();
    let workers: Vec<Worker> = shares.iter().map(|s| Worker { busy: s.busy, cpu: s.cpu, tasks: s.tasks }).collect();
    let cpu: Duration = workers.iter().map(|w| w.cpu).sum();
    outcomes.into_pass(Timing { wall: t0.elapsed(), cpu: cpu + plan_cpu }, workers_wall, workers, &*backend)
}

/// Runs of consecutive pipelines with the same first (vertex) stage key, as `(start, end)`
/// index ranges covering every pipeline in order.
pub fn vertex_runs(pipelines: &[PipelineDescriptor], ctx: &KeyContext) -> Vec<(usize, usize)> {
    let first = |i: usize| pipelines[i].stages().first().map(|(s, f)| granary::descriptor::stage_key(f, *s, ctx));
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut run_key = None;
    for i in 0..pipelines.len() {
        let k = first(i);
        match runs.last_mut() {
            Some((_, end)) if run_key == Some(k) => *end = i + 1,
            _ => {
                runs.push((i, i + 1));
                run_key = Some(k);
            }
        }
    }
    runs
}

/// The report's workaround: a lock per stage function held around each capture compile, and
/// each run of pipelines sharing a vertex function pinned to one thread.
pub fn workaround(pipelines: &[PipelineDescriptor], threads: usize) -> Timing {
    workaround_on(pipelines, threads, Arc::new(NoneBackend)).timing
}

/// [`workaround`] with a compiler on `backend`, with per-thread figures, outcomes and the
/// time spent waiting for the stage-function locks. The timing covers the worker phase (the
/// keys and runs are computed before it, as in [`workaround`]).
pub fn workaround_on(pipelines: &[PipelineDescriptor], threads: usize, backend: Arc<dyn Backend>) -> Pass {
    let capture = Arc::new(Capture::new(granary::capture::CaptureMode::Outputs));
    let c = compiler_on(threads, Some(capture), backend.clone());
    let outcomes = Outcomes::default();
    let lock_wait = AtomicU64::new(0);
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
    let runs = vertex_runs(pipelines, &ctx);
    let (timing, workers) = parallel_workers(runs.len(), threads, |r| {
        let (start, end) = runs[r];
        for i in start..end {
            let t = Instant::now();
            let guards: Vec<_> = keys[i]
                .iter()
                .filter_map(|k| locks.get(k))
                .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()))
                .collect();
            lock_wait.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            outcomes.note(c.compile(&pipelines[i]));
            drop(guards);
        }
    });
    let mut pass = outcomes.into_pass(timing, timing.wall, workers, &*backend);
    pass.lock_wait = Duration::from_nanos(lock_wait.into_inner());
    pass
}
