//! `granary bench --backend vulkan`: granary's schedule and the report's workaround with every
//! pipeline created on a real driver, at one thread count, with each worker thread's load.
//!
//! Each pass gets a fresh backend from the caller (a new device: its own shader modules,
//! layouts and pipeline cache), so neither pass inherits the other's driver state. A driver's
//! own on-disk shader cache would still hand the second pass the first one's compiles: the
//! report records the variables that turn the known ones off (`__GL_SHADER_DISK_CACHE=0` for
//! NVIDIA, `MESA_SHADER_CACHE_DISABLE=true` for Mesa); with `repeat` above 1 the passes also
//! alternate which goes first.

use super::passes::{granary_on, vertex_runs, workaround_on, Pass, Timing};
use super::stats::{Spread, Versus};
use super::{load_average, versus, BenchError};
use crate::workload::{seed_scale, SeedScaleOptions};
use granary::backend::{Backend, BackendReport};
use granary::capture::{Capture, CaptureMode};
use granary::descriptor::PipelineDescriptor;
use granary::measure::peak_rss_bytes;
use granary::script::Script;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The environment variables that turn drivers' on-disk shader caches off, as the report
/// records them.
pub const DISK_CACHE_VARIABLES: [&str; 2] = ["__GL_SHADER_DISK_CACHE", "MESA_SHADER_CACHE_DISABLE"];

/// Options for [`run_device`].
#[derive(Debug, Clone)]
pub struct DeviceBenchOptions {
    /// Generated workload.
    pub workload: SeedScaleOptions,
    /// Worker threads of both passes.
    pub threads: usize,
    /// Runs of each pass (alternating which goes first); the median-wall run is reported.
    pub repeat: usize,
}

impl DeviceBenchOptions {
    /// The default device workload: the seed's shape at 2,000 pipelines (970 vertex functions,
    /// runs up to 250), as `scripts/bench-vulkan.sh` harvests.
    pub fn default_workload() -> SeedScaleOptions {
        SeedScaleOptions { pipelines: 2000, vertex_functions: 970, max_run: 250, seed: 1 }
    }
}

/// How evenly a pass kept its worker threads busy.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Imbalance {
    /// Worker threads.
    pub threads: usize,
    /// The wall time the threads had (the worker phase of the pass).
    pub wall_seconds: f64,
    /// Each thread's busy time: the sum of its task durations (a wait inside a task counts).
    pub busy_seconds: Vec<f64>,
    /// The busiest thread's busy time.
    pub busy_max_seconds: f64,
    /// Mean busy time over the threads.
    pub busy_mean_seconds: f64,
    /// The least busy thread's busy time.
    pub busy_min_seconds: f64,
    /// Busiest / mean (1.0: perfectly even; 0 when nothing ran).
    pub max_over_mean: f64,
    /// 1 − Σ busy / (threads × wall): the share of the threads' time spent with no task.
    pub idle_fraction: f64,
}

/// The load imbalance of threads with busy times `busy` over `wall` (all zero for no thread or
/// no time).
pub fn imbalance(busy: &[Duration], wall: Duration) -> Imbalance {
    let secs: Vec<f64> = busy.iter().map(Duration::as_secs_f64).collect();
    let threads = secs.len();
    let sum: f64 = secs.iter().sum();
    let max = secs.iter().copied().fold(0.0, f64::max);
    let min = if threads == 0 { 0.0 } else { secs.iter().copied().fold(f64::INFINITY, f64::min) };
    let mean = if threads == 0 { 0.0 } else { sum / threads as f64 };
    let wall_s = wall.as_secs_f64();
    Imbalance {
        threads,
        wall_seconds: wall_s,
        busy_max_seconds: max,
        busy_mean_seconds: mean,
        busy_min_seconds: min,
        max_over_mean: if mean > 0.0 { max / mean } else { 0.0 },
        idle_fraction: if threads > 0 && wall_s > 0.0 { 1.0 - sum / (threads as f64 * wall_s) } else { 0.0 },
        busy_seconds: secs,
    }
}

/// One pass as reported: its median-wall run of `repeat`.
#[derive(Debug, Clone, Serialize)]
pub struct DevicePass {
    /// Wall seconds (granary's includes planning; the workaround's is its worker phase).
    pub wall_seconds: f64,
    /// Summed CPU seconds of its threads (granary's planning threads included).
    pub cpu_seconds: f64,
    /// Shortest and longest wall over the runs.
    pub wall_min_seconds: f64,
    /// Longest wall over the runs.
    pub wall_max_seconds: f64,
    /// Per-thread load of the worker phase.
    pub imbalance: Imbalance,
    /// Each worker thread's CPU seconds.
    pub worker_cpu_seconds: Vec<f64>,
    /// Tasks each worker ran (granary: libraries, stage functions and pipelines; the
    /// workaround: runs of pipelines sharing a vertex function).
    pub worker_tasks: Vec<usize>,
    /// Pipelines compiled.
    pub compiled: usize,
    /// Pipelines that failed.
    pub failed: usize,
    /// The first failure.
    pub first_error: Option<String>,
    /// Seconds the workaround's threads waited for stage-function locks, summed (0 for
    /// granary).
    pub lock_wait_seconds: f64,
    /// The backend's counters (driver seconds summed over threads, pipelines and modules).
    pub driver: Option<BackendReport>,
}

impl DevicePass {
    fn of(p: &Pass, walls: Spread) -> DevicePass {
        let busy: Vec<Duration> = p.workers.iter().map(|w| w.busy).collect();
        DevicePass {
            wall_seconds: p.timing.wall.as_secs_f64(),
            cpu_seconds: p.timing.cpu.as_secs_f64(),
            wall_min_seconds: walls.min,
            wall_max_seconds: walls.max,
            imbalance: imbalance(&busy, p.workers_wall),
            worker_cpu_seconds: p.workers.iter().map(|w| w.cpu.as_secs_f64()).collect(),
            worker_tasks: p.workers.iter().map(|w| w.tasks).collect(),
            compiled: p.compiled,
            failed: p.failed,
            first_error: p.first_error.clone(),
            lock_wait_seconds: p.lock_wait.as_secs_f64(),
            driver: p.backend.clone(),
        }
    }
}

/// What the device benchmark measured.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceBenchReport {
    /// The backend's name.
    pub backend: String,
    /// The device, in words.
    pub device: String,
    /// `pipeline-binaries` or `cache-data`.
    pub captures: String,
    /// The generated workload's options.
    pub workload_pipelines: usize,
    /// Vertex functions asked of the generator.
    pub workload_vertex_functions: usize,
    /// Longest run asked of the generator.
    pub workload_max_run: usize,
    /// Generator seed.
    pub workload_seed: u64,
    /// Pipelines that loaded.
    pub pipelines: usize,
    /// Unique stage functions.
    pub unique_stage_functions: u64,
    /// Runs of consecutive pipelines sharing a vertex function (the workaround's tasks).
    pub vertex_runs: usize,
    /// The longest such run.
    pub longest_vertex_run: usize,
    /// Worker threads of both passes.
    pub threads: usize,
    /// Runs of each pass.
    pub repeat: usize,
    /// The on-disk shader-cache variables as set during the benchmark (absent: unset).
    pub disk_cache_env: BTreeMap<String, Option<String>>,
    /// System load averages at the start.
    pub load_average_start: Option<[f64; 3]>,
    /// And at the end.
    pub load_average_end: Option<[f64; 3]>,
    /// Granary's schedule.
    pub granary: DevicePass,
    /// The report's workaround.
    pub workaround: DevicePass,
    /// Workaround over granary, run by run (above 1: granary is faster or cheaper).
    pub workaround_vs_granary: Versus,
    /// Peak resident memory of the process.
    pub peak_rss_bytes: u64,
}

/// Runs both passes at `opts.threads` threads, each on a fresh backend from `open`. `log`
/// receives a line per step.
pub fn run_device(
    opts: &DeviceBenchOptions,
    open: &dyn Fn() -> Result<Arc<dyn Backend>, String>,
    log: &dyn Fn(&str),
) -> Result<DeviceBenchReport, BenchError> {
    let load_average_start = load_average();
    let threads = opts.threads.max(1);
    let repeat = opts.repeat.max(1);
    let dir = tempfile::tempdir()?;
    log("generating the workload");
    let script_path = seed_scale(&opts.workload, &dir.path().join("w"))?.script;
    let script = Script::load(&script_path)?;
    let pipelines: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    if pipelines.is_empty() {
        return Err(BenchError::Workload("the workload has no pipeline that loads".into()));
    }
    let ctx = super::passes::compiler(1, None).key_context();
    let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let unique = granary::harvest::plan(&indexed, &ctx, 1).functions as u64;
    let runs = vertex_runs(&pipelines, &ctx);

    let open = || open().map_err(BenchError::Backend);
    let (mut gs, mut ws): (Vec<Pass>, Vec<Pass>) = (Vec::new(), Vec::new());
    let mut identity = None;
    for r in 0..repeat {
        let granary_first = r % 2 == 0;
        for first in [true, false] {
            let b = open()?;
            if identity.is_none() {
                identity = b.report();
            }
            let t0 = Instant::now();
            if first == granary_first {
                log(&format!(
                    "granary's schedule: {} pipelines on {threads} threads (run {} of {repeat})",
                    pipelines.len(),
                    r + 1
                ));
                let capture = Arc::new(Capture::new(CaptureMode::Outputs));
                gs.push(granary_on(&pipelines, threads, Some(capture), b));
            } else {
                log(&format!(
                    "the report's workaround: {} pipelines on {threads} threads (run {} of {repeat})",
                    pipelines.len(),
                    r + 1
                ));
                ws.push(workaround_on(&pipelines, threads, b));
            }
            log(&format!("  {:.2} s", t0.elapsed().as_secs_f64()));
        }
    }
    let timings = |v: &[Pass]| v.iter().map(|p| p.timing).collect::<Vec<Timing>>();
    let vs = versus(threads, &timings(&gs), &timings(&ws));
    let report = |v: Vec<Pass>| {
        let walls = Spread::of(v.iter().map(|p| p.timing.wall.as_secs_f64()).collect());
        DevicePass::of(&median_pass(v), walls)
    };
    let identity = identity.unwrap_or_default();
    Ok(DeviceBenchReport {
        backend: identity.backend,
        device: identity.device,
        captures: identity.captures,
        workload_pipelines: opts.workload.pipelines,
        workload_vertex_functions: opts.workload.vertex_functions,
        workload_max_run: opts.workload.max_run,
        workload_seed: opts.workload.seed,
        pipelines: pipelines.len(),
        unique_stage_functions: unique,
        vertex_runs: runs.len(),
        longest_vertex_run: runs.iter().map(|(a, b)| b - a).max().unwrap_or(0),
        threads,
        repeat,
        disk_cache_env: DISK_CACHE_VARIABLES.iter().map(|v| (v.to_string(), std::env::var(v).ok())).collect(),
        load_average_start,
        load_average_end: load_average(),
        granary: report(gs),
        workaround: report(ws),
        workaround_vs_granary: vs,
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// The pass with the median wall time (the upper median for an even count).
fn median_pass(v: Vec<Pass>) -> Pass {
    super::stats::upper_median_by(v, |p| p.timing.wall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use granary::backend::NoneBackend;

    /// Busy max/mean and the idle fraction 1 − Σ busy / (threads × wall), by hand.
    #[test]
    fn imbalance_is_computed_as_defined() {
        let s = Duration::from_secs_f64;
        // 4 threads over 10 s: busy 10, 5, 5, 0 → Σ 20 of 40: idle 0.5; mean 5, max/mean 2.
        let i = imbalance(&[s(10.0), s(5.0), s(5.0), s(0.0)], s(10.0));
        assert_eq!(i.threads, 4);
        assert_eq!(i.wall_seconds, 10.0);
        assert_eq!(i.busy_seconds, vec![10.0, 5.0, 5.0, 0.0]);
        assert_eq!((i.busy_max_seconds, i.busy_mean_seconds, i.busy_min_seconds), (10.0, 5.0, 0.0));
        assert_eq!(i.max_over_mean, 2.0);
        assert_eq!(i.idle_fraction, 0.5);
        // Perfectly even and always busy.
        let even = imbalance(&[s(2.0), s(2.0)], s(2.0));
        assert_eq!((even.max_over_mean, even.idle_fraction), (1.0, 0.0));
        // Even but half idle: balance and idleness are separate figures.
        let half = imbalance(&[s(1.0), s(1.0)], s(2.0));
        assert_eq!((half.max_over_mean, half.idle_fraction), (1.0, 0.5));
        // Degenerate inputs give zeros, not NaN.
        let none = imbalance(&[], s(1.0));
        assert_eq!((none.threads, none.max_over_mean, none.idle_fraction, none.busy_min_seconds), (0, 0.0, 0.0, 0.0));
        let idle = imbalance(&[Duration::ZERO; 3], Duration::ZERO);
        assert_eq!((idle.max_over_mean, idle.idle_fraction), (0.0, 0.0));
    }

    #[test]
    fn median_pass_picks_the_middle_wall() {
        let p = |ms: u64, compiled| Pass {
            timing: Timing { wall: Duration::from_millis(ms), cpu: Duration::ZERO },
            compiled,
            ..Pass::default()
        };
        assert_eq!(median_pass(vec![p(30, 3), p(10, 1), p(20, 2)]).compiled, 2);
        assert_eq!(median_pass(vec![p(10, 1), p(20, 2)]).compiled, 2);
        assert_eq!(median_pass(Vec::new()).compiled, 0);
    }

    /// The whole device benchmark on the `none` backend (no driver needed): both passes
    /// compile every pipeline, each worker's tasks add up to the pass's, and the figures are
    /// in range.
    #[test]
    fn device_bench_runs_on_the_none_backend() {
        let opts = DeviceBenchOptions {
            workload: SeedScaleOptions { pipelines: 120, vertex_functions: 40, max_run: 10, seed: 3 },
            threads: 3,
            repeat: 2,
        };
        let opened = std::sync::atomic::AtomicUsize::new(0);
        let open = || -> Result<Arc<dyn Backend>, String> {
            opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(Arc::new(NoneBackend))
        };
        let r = run_device(&opts, &open, &|_| {}).expect("bench");
        assert_eq!(opened.into_inner(), 4, "a fresh backend per pass and run");
        assert_eq!(r.pipelines, 120);
        assert_eq!((r.threads, r.repeat), (3, 2));
        assert!(
            r.vertex_runs >= 12 && r.longest_vertex_run <= 10,
            "{} runs, longest {}",
            r.vertex_runs,
            r.longest_vertex_run
        );
        assert!(r.unique_stage_functions > 40);
        for (name, p) in [("granary", &r.granary), ("workaround", &r.workaround)] {
            assert_eq!((p.compiled, p.failed), (120, 0), "{name}: {:?}", p.first_error);
            assert_eq!(p.imbalance.threads, 3, "{name}");
            assert_eq!(p.worker_tasks.len(), 3, "{name}");
            assert!((0.0..1.0).contains(&p.imbalance.idle_fraction), "{name}: {:?}", p.imbalance);
            // The reported figures are those of the reported busy times: each thread's busy
            // time lies within the worker phase, and max/mean and the idle share are computed
            // from them.
            let (i, b) = (&p.imbalance, &p.imbalance.busy_seconds);
            assert_eq!(b.len(), 3, "{name}");
            assert!(b.iter().all(|t| (0.0..=i.wall_seconds).contains(t)), "{name}: {i:?}");
            let (sum, max) = (b.iter().sum::<f64>(), b.iter().copied().fold(0.0, f64::max));
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * y.abs().max(1.0);
            assert!(close(i.busy_max_seconds, max) && close(i.busy_mean_seconds, sum / 3.0), "{name}: {i:?}");
            assert!(close(i.max_over_mean, max / (sum / 3.0)), "{name}: {i:?}");
            assert!(close(i.idle_fraction, 1.0 - sum / (3.0 * i.wall_seconds)), "{name}: {i:?}");
            assert!(p.wall_min_seconds <= p.wall_seconds && p.wall_seconds <= p.wall_max_seconds, "{name}");
            assert!(p.imbalance.wall_seconds <= p.wall_seconds, "{name}");
            assert!(p.driver.is_none(), "{name}: the none backend reports no driver");
        }
        assert_eq!(r.workaround.worker_tasks.iter().sum::<usize>(), r.vertex_runs);
        // Granary's tasks: the plan's libraries, stage functions and pipelines.
        let tasks = r.granary.worker_tasks.iter().sum::<usize>() as u64;
        assert!(tasks > 120 + r.unique_stage_functions, "{tasks} tasks");
        assert_eq!(r.granary.lock_wait_seconds, 0.0);
        assert_eq!(r.workaround_vs_granary.threads, 3);
    }
}
