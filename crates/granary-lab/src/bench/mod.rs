//! The macro benchmark (`granary bench seed-scale`): one run on the generated workload, every
//! figure printed as a ratio or a distribution measured within that run, because the machines
//! are shared and noisy.

mod baseline;
mod device;
mod passes;

pub use baseline::{baseline, Baseline, BaselineRun};
pub use device::{imbalance, run_device, DeviceBenchOptions, DeviceBenchReport, DevicePass, Imbalance};
pub use passes::{granary, granary_on, parallel, vertex_runs, workaround, workaround_on, Pass, Timing, Worker};

use crate::workload::{seed_scale, SeedScaleOptions};
use granary::archive::Archive;
use granary::capture::{Capture, CaptureMode};
use granary::descriptor::{PipelineDescriptor, PipelineKey, Target, TargetSet};
use granary::script::Script;
use granary::util::peak_rss_bytes;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options for [`run`].
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Generated workload.
    pub workload: SeedScaleOptions,
    /// Thread counts to measure scaling at (the largest is used for the other figures); 1 is
    /// always measured too, since speed-up is relative to it.
    pub threads: Vec<usize>,
    /// Times each scaling pass (granary and baseline, interleaved, alternating which goes
    /// first) is run; the pass with the median wall time is reported.
    pub repeat: usize,
    /// Random lookups to time.
    pub lookups: usize,
}

/// One row of a scaling table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Scaling {
    /// Threads.
    pub threads: usize,
    /// Wall seconds of the compile phase.
    pub wall_seconds: f64,
    /// Worker CPU seconds.
    pub cpu_seconds: f64,
    /// Wall time at 1 thread / wall time here ([`speedup`]).
    pub speedup: f64,
    /// Speed-up / threads ([`parallel_efficiency`]).
    pub parallel_efficiency: f64,
    /// Busy CPU / (wall × threads) ([`cpu_utilisation`]): how much of the threads' time was
    /// spent running, useful or not. Not an efficiency.
    pub cpu_utilisation: f64,
    /// Shortest wall time over the repeated runs (the row reports the median run).
    pub wall_min_seconds: f64,
    /// Longest wall time over the repeated runs.
    pub wall_max_seconds: f64,
    /// Speed-up from the shortest runs: shortest wall at 1 thread / shortest wall here. On a
    /// shared machine other processes only ever slow a run down, so the shortest run is the
    /// best estimate of an undisturbed one.
    pub speedup_best: f64,
    /// `speedup_best` / threads.
    pub parallel_efficiency_best: f64,
}

/// Speed-up at N threads: wall time at 1 thread / wall time at N threads (0 if `wall_n` is 0).
pub fn speedup(wall_1: f64, wall_n: f64) -> f64 {
    if wall_n > 0.0 {
        wall_1 / wall_n
    } else {
        0.0
    }
}

/// Parallel efficiency: speed-up / threads (1.0 is linear scaling).
pub fn parallel_efficiency(speedup: f64, threads: usize) -> f64 {
    speedup / threads.max(1) as f64
}

/// CPU utilisation: busy CPU / (wall × threads), the share of the threads' wall time they
/// spent on a CPU (0 if `wall` is 0).
pub fn cpu_utilisation(cpu: f64, wall: f64, threads: usize) -> f64 {
    if wall > 0.0 {
        cpu / (wall * threads.max(1) as f64)
    } else {
        0.0
    }
}

/// Scaling rows from `(threads, timing)` pairs; speed-up is relative to the 1-thread timing
/// (`None` if there is none).
pub fn scaling_rows(timings: &[(usize, Timing)]) -> Option<Vec<Scaling>> {
    let wall_1 = timings.iter().find(|(j, _)| *j == 1)?.1.wall.as_secs_f64();
    Some(
        timings
            .iter()
            .map(|(j, t)| {
                let (wall, cpu) = (t.wall.as_secs_f64(), t.cpu.as_secs_f64());
                let s = speedup(wall_1, wall);
                Scaling {
                    threads: *j,
                    wall_seconds: wall,
                    cpu_seconds: cpu,
                    speedup: s,
                    parallel_efficiency: parallel_efficiency(s, *j),
                    cpu_utilisation: cpu_utilisation(cpu, wall, *j),
                    wall_min_seconds: wall,
                    wall_max_seconds: wall,
                    speedup_best: s,
                    parallel_efficiency_best: parallel_efficiency(s, *j),
                }
            })
            .collect(),
    )
}

/// Median, smallest and largest of a few values.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Spread {
    /// Median (the upper one for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (all zero if empty).
    pub fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        match (v.first(), v.get(v.len() / 2), v.last()) {
            (Some(&min), Some(&median), Some(&max)) => Spread { median, min, max },
            _ => Spread::default(),
        }
    }
}

/// The baseline over granary at one thread count: ratios of each back-to-back pair of runs
/// (above 1: granary is faster or cheaper), so slow drifts of the machine's background load
/// cancel out.
#[derive(Debug, Clone, Serialize)]
pub struct Versus {
    /// Threads.
    pub threads: usize,
    /// Baseline wall / granary wall, over the pairs.
    pub wall_ratio: Spread,
    /// Baseline CPU / granary CPU, over the pairs.
    pub cpu_ratio: Spread,
}

/// Fills in each row's wall-time spread over its runs and the speed-up and efficiency of the
/// shortest runs. `spread[i]` belongs to `rows[i]`; the 1-thread row must come first.
fn with_spread(mut rows: Vec<Scaling>, spread: &[Spread]) -> Vec<Scaling> {
    let best_1 = spread.first().map_or(0.0, |s| s.min);
    for (row, s) in rows.iter_mut().zip(spread) {
        (row.wall_min_seconds, row.wall_max_seconds) = (s.min, s.max);
        row.speedup_best = speedup(best_1, s.min);
        row.parallel_efficiency_best = parallel_efficiency(row.speedup_best, row.threads);
    }
    rows
}

/// Paired ratios baseline / granary, run by run.
fn versus(threads: usize, granary: &[Timing], baseline: &[Timing]) -> Versus {
    let ratio = |f: fn(&Timing) -> f64| Spread::of(granary.iter().zip(baseline).map(|(g, b)| f(b) / f(g)).collect());
    Versus { threads, wall_ratio: ratio(|t| t.wall.as_secs_f64()), cpu_ratio: ratio(|t| t.cpu.as_secs_f64()) }
}

/// The system load averages (1, 5, 15 minutes) from `/proc/loadavg`, where there is one.
fn load_average() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Micros {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

fn micros(mut v: Vec<Duration>) -> Micros {
    if v.is_empty() {
        return Micros::default();
    }
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    Micros { p50: at(0.5), p99: at(0.99), max: at(1.0) }
}

/// Everything the benchmark measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Pipelines in the workload.
    pub pipelines: usize,
    /// Unique stage functions.
    pub unique_stage_functions: u64,
    /// Seconds to load and resolve the script (serial, before compiling).
    pub script_load_seconds: f64,
    /// Runs of each scaling pass (the median-wall one is reported).
    pub repeat: usize,
    /// System load averages (1, 5, 15 min) when the benchmark started: other processes
    /// competing for the cores, which the wall-time figures include.
    pub load_average_start: Option<[f64; 3]>,
    /// The same when it finished.
    pub load_average_end: Option<[f64; 3]>,
    /// Compile-phase scaling of granary's schedule (planning included).
    pub scaling: Vec<Scaling>,
    /// The same for the rayon + `DashMap` baseline.
    pub baseline_scaling: Vec<Scaling>,
    /// Baseline over granary at each thread count.
    pub baseline_vs_granary: Vec<Versus>,
    /// Stage functions the baseline compiled (equal to the unique count if it memoises).
    pub baseline_functions_compiled: u64,
    /// Threads for the workaround comparison.
    pub workaround_threads: usize,
    /// Workaround wall / granary wall at that thread count.
    pub workaround_wall_ratio: f64,
    /// Workaround CPU / granary CPU.
    pub workaround_cpu_ratio: f64,
    /// Archive size in bytes at full size.
    pub archive_bytes: usize,
    /// Seconds for one `write_archive` (encode, write, fsync, rename).
    pub write_archive_seconds: f64,
    /// `Capture::record` latency while no archive is written.
    pub record_idle_us: Micros,
    /// `Capture::record` latency while `write_archive` runs in a loop.
    pub record_during_writes_us: Micros,
    /// Whole compile-call latency without and with concurrent writes.
    pub compile_idle_us: Micros,
    /// Whole compile-call latency with `write_archive` looping.
    pub compile_during_writes_us: Micros,
    /// Archive writes completed during that pass.
    pub writes_during_compiles: usize,
    /// `Archive::open` (memory map + header checks).
    pub open_us: Micros,
    /// Lookup by key of a random archived pipeline, with its stage records checked
    /// (`Archive::get` + `stages()`).
    pub lookup_us: Micros,
    /// The same lookup followed by `output(Target::Spirv)` of every stage, which checks each
    /// blob against its content hash: what an application pays to get the bytes.
    pub lookup_output_us: Micros,
    /// Mean SPIR-V bytes fetched (and hashed) per lookup in that measurement.
    pub lookup_output_mean_bytes: f64,
    /// Lookup by label.
    pub label_lookup_us: Micros,
    /// Peak resident memory of the whole benchmark process.
    pub peak_rss_bytes: u64,
}

/// Benchmark failures.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Generating the workload failed.
    #[error(transparent)]
    Gen(#[from] crate::workload::GenError),
    /// Loading it failed.
    #[error(transparent)]
    Script(#[from] granary::script::ScriptError),
    /// Writing or reading the archive failed.
    #[error(transparent)]
    Archive(#[from] granary::archive::ArchiveError),
    /// Temporary files.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The baseline's rayon pool could not be built.
    #[error(transparent)]
    ThreadPool(#[from] rayon::ThreadPoolBuildError),
    /// The workload did not have the shape the benchmark needs.
    #[error("{0}")]
    Workload(String),
    /// The device backend could not be opened.
    #[error("cannot open the device backend: {0}")]
    Backend(String),
}

/// Runs the benchmark. `log` receives a line per step.
pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> Result<BenchReport, BenchError> {
    let load_average_start = load_average();
    let dir = tempfile::tempdir()?;
    log("generating the workload");
    let script_path: PathBuf = seed_scale(&opts.workload, &dir.path().join("w"))?.script;
    let t0 = Instant::now();
    let script = Script::load(&script_path)?;
    let pipelines: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    let script_load_seconds = t0.elapsed().as_secs_f64();
    let mut threads = opts.threads.clone();
    threads.push(1);
    threads.sort();
    threads.dedup();
    threads.retain(|j| *j >= 1);
    let max_threads = threads.last().copied().unwrap_or(1);
    if pipelines.is_empty() {
        return Err(BenchError::Workload("the workload has no pipeline that loads".into()));
    }

    // Warm-up (allocator, page cache, CPU clocks), so the first measured pass is not penalized.
    log("warm-up");
    let warm = &pipelines[..pipelines.len().min(2000)];
    granary(warm, max_threads, None);
    baseline(warm, max_threads)?;

    // Scaling: granary and the baseline interleaved, so both see the same background load.
    let repeat = opts.repeat.max(1);
    let mut g_timings: Vec<(usize, Timing)> = Vec::new();
    let mut b_timings: Vec<(usize, Timing)> = Vec::new();
    let mut g_spread = Vec::new();
    let mut b_spread = Vec::new();
    let mut baseline_vs_granary = Vec::new();
    let mut baseline_functions_compiled = 0;
    for &j in &threads {
        let (mut gs, mut bs) = (Vec::new(), Vec::new());
        for r in 0..repeat {
            // Alternate which goes first (g b, b g, g b, …), so neither always runs in the
            // other's wake (allocator and cache state, clock ramps).
            let granary_first = r % 2 == 0;
            log(&format!(
                "compiling {} pipelines on {j} threads: {} (run {} of {repeat})",
                pipelines.len(),
                if granary_first { "granary, then the baseline" } else { "the baseline, then granary" },
                r + 1
            ));
            if granary_first {
                gs.push(granary(&pipelines, j, None));
            }
            let b = baseline(&pipelines, j)?;
            baseline_functions_compiled = b.stats.functions_compiled;
            bs.push(b.timing);
            drop(b);
            if !granary_first {
                gs.push(granary(&pipelines, j, None));
            }
        }
        baseline_vs_granary.push(versus(j, &gs, &bs));
        let walls = |v: &[Timing]| Spread::of(v.iter().map(|t| t.wall.as_secs_f64()).collect());
        g_spread.push(walls(&gs));
        b_spread.push(walls(&bs));
        g_timings.push((j, median_wall(gs)));
        b_timings.push((j, median_wall(bs)));
    }
    let scaling = with_spread(scaling_rows(&g_timings).unwrap_or_default(), &g_spread);
    let baseline_scaling = with_spread(scaling_rows(&b_timings).unwrap_or_default(), &b_spread);
    let at_max = g_timings.last().map(|t| t.1).unwrap_or_default();

    let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let ctx = granary::descriptor::KeyContext {
        target_options: granary::frontend::targets::target_options_fingerprint(
            granary::frontend::Profile::default_profile(),
            TargetSet::SPIRV,
        ),
    };
    let unique = granary::harvest::plan(&indexed, &ctx, 1).functions as u64;

    log("the report's workaround");
    let g = at_max; // the scaling pass at the largest thread count
    let w = workaround(&pipelines, max_threads);

    log("record and compile latency without and with concurrent writes");
    let (record_idle, compile_idle, _, capture) = latency_pass(&pipelines, max_threads, None);
    let (record_busy, compile_busy, writes, _) =
        latency_pass(&pipelines, max_threads, Some(dir.path().join("live.granary")));

    log("write_archive at full size");
    let out = dir.path().join("bench.granary");
    let t0 = Instant::now();
    let written = capture.write_archive(&out)?;
    let write_archive_seconds = t0.elapsed().as_secs_f64();

    log("open and lookups");
    let mut opens = Vec::new();
    for _ in 0..50 {
        let t0 = Instant::now();
        let a = Archive::open(&out)?;
        opens.push(t0.elapsed());
        std::hint::black_box(a.len());
    }
    let archive = Archive::open(&out)?;
    let keys: Vec<PipelineKey> = archive.iter().filter_map(|p| p.ok()).map(|p| p.key()).collect();
    let labels: Vec<String> = archive.labels()?.into_iter().map(|(l, _)| l.to_string()).collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng as usize
    };
    let mut lookups = Vec::with_capacity(opts.lookups);
    let mut lookup_outputs = Vec::with_capacity(opts.lookups);
    let mut label_lookups = Vec::with_capacity(opts.lookups);
    let mut output_bytes = 0usize;
    for _ in 0..opts.lookups {
        let k = keys[next() % keys.len().max(1)];
        let t0 = Instant::now();
        let stages = match archive.get(k)? {
            Some(p) => p.stages()?,
            None => Vec::new(),
        };
        let t1 = Instant::now();
        let mut bytes = 0;
        for s in &stages {
            bytes += s.output(Target::Spirv)?.map_or(0, |b| b.len());
        }
        let t2 = Instant::now();
        lookups.push(t1 - t0);
        lookup_outputs.push(t2 - t0);
        output_bytes += std::hint::black_box(bytes);
        let l = &labels[next() % labels.len().max(1)];
        let t0 = Instant::now();
        let p = archive.lookup_label(l)?;
        label_lookups.push(t0.elapsed());
        std::hint::black_box(p.is_some());
    }

    Ok(BenchReport {
        pipelines: pipelines.len(),
        unique_stage_functions: unique,
        script_load_seconds,
        repeat,
        load_average_start,
        load_average_end: load_average(),
        scaling,
        baseline_scaling,
        baseline_vs_granary,
        baseline_functions_compiled,
        workaround_threads: max_threads,
        workaround_wall_ratio: w.wall.as_secs_f64() / g.wall.as_secs_f64(),
        workaround_cpu_ratio: w.cpu.as_secs_f64() / g.cpu.as_secs_f64(),
        archive_bytes: written.bytes,
        write_archive_seconds,
        record_idle_us: micros(record_idle),
        record_during_writes_us: micros(record_busy),
        compile_idle_us: micros(compile_idle),
        compile_during_writes_us: micros(compile_busy),
        writes_during_compiles: writes,
        open_us: micros(opens),
        lookup_us: micros(lookups),
        lookup_output_us: micros(lookup_outputs),
        lookup_output_mean_bytes: output_bytes as f64 / opts.lookups.max(1) as f64,
        label_lookup_us: micros(label_lookups),
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// The timing with the median wall time (the upper median for an even count).
fn median_wall(mut v: Vec<Timing>) -> Timing {
    v.sort_by_key(|t| t.wall);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Compiles every pipeline on `threads` threads, timing each compile call and each
/// `Capture::record` (the one step that shares locks with `write_archive`); with `live`, a
/// thread writes the capture to that path in a loop meanwhile. Returns the capture too.
#[allow(clippy::type_complexity)]
fn latency_pass(
    pipelines: &[PipelineDescriptor],
    threads: usize,
    live: Option<PathBuf>,
) -> (Vec<Duration>, Vec<Duration>, usize, Arc<Capture>) {
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let c = passes::compiler(threads, None);
    let records = Mutex::new(Vec::with_capacity(pipelines.len()));
    let compiles = Mutex::new(Vec::with_capacity(pipelines.len()));
    let done = AtomicBool::new(false);
    let mut writes = 0;
    std::thread::scope(|s| {
        let writer = live.as_ref().map(|path| {
            let (capture, done) = (&capture, &done);
            s.spawn(move || {
                let mut n = 0;
                while !done.load(Ordering::Relaxed) {
                    if capture.write_archive(path).is_ok() {
                        n += 1;
                    }
                }
                n
            })
        });
        passes::parallel(pipelines.len(), threads, |i| {
            let t0 = Instant::now();
            let Ok(entry) = c.compile(&pipelines[i]) else { return };
            let t1 = Instant::now();
            capture.record(&entry, &pipelines[i]);
            let t2 = Instant::now();
            granary::sync::lock_std(&records).push(t2 - t1);
            granary::sync::lock_std(&compiles).push(t2 - t0);
        });
        done.store(true, Ordering::Relaxed);
        if let Some(w) = writer {
            writes = w.join().unwrap_or(0);
        }
    });
    (
        records.into_inner().unwrap_or_else(|p| p.into_inner()),
        compiles.into_inner().unwrap_or_else(|p| p.into_inner()),
        writes,
        capture,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use granary::compiler::{Compiler, CompilerOptions};
    use granary::descriptor::{PipelineEntry, TargetSet};

    fn workload(dir: &std::path::Path) -> Vec<PipelineDescriptor> {
        let opts = SeedScaleOptions { pipelines: 300, vertex_functions: 90, max_run: 25, seed: 11 };
        let script = Script::load(&seed_scale(&opts, &dir.join("w")).expect("generate").script).expect("load");
        script.pipelines.into_iter().map(|p| p.descriptor.expect("generated pipelines load")).collect()
    }

    /// The rayon + DashMap baseline compiles each unique stage function exactly once and
    /// produces the same pipelines (keys, stages, output bytes) as granary's compiler, and an
    /// archive of its results is byte-identical to granary's.
    #[test]
    fn baseline_matches_granary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pipelines = workload(dir.path());
        assert_eq!(pipelines.len(), 300);

        let capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let c = Compiler::new(CompilerOptions {
            targets: TargetSet::SPIRV,
            max_concurrent_tasks: Some(3),
            capture: Some(capture.clone()),
            cache_functions: true,
            ..Default::default()
        });
        for p in &pipelines {
            c.compile(p).expect("granary compiles every generated pipeline");
        }
        let mut ours: Vec<PipelineEntry> = capture.snapshot().entries.iter().map(|e| (*e.entry).clone()).collect();

        let run = baseline(&pipelines, 3).expect("rayon pool");
        assert_eq!(run.results.len(), pipelines.len());
        let theirs_arcs: Vec<Arc<PipelineEntry>> =
            run.results.into_iter().map(|r| r.expect("the baseline compiles every generated pipeline")).collect();
        // Same key as granary's compiler gives each descriptor, in input order.
        for (p, e) in pipelines.iter().zip(&theirs_arcs) {
            assert_eq!(e.key, p.key(&c.key_context()));
        }
        let mut theirs: Vec<PipelineEntry> = theirs_arcs.iter().map(|e| (**e).clone()).collect();
        ours.sort_by_key(|e| e.key);
        theirs.sort_by_key(|e| e.key);
        assert_eq!(ours.len(), 300, "generated pipelines have distinct keys");
        // Keys, kinds, stage keys, entry points and every output blob (hash and bytes).
        assert_eq!(ours, theirs);
        assert!(ours
            .iter()
            .all(|e| e.stages.iter().all(|s| s.outputs.get(Target::Spirv).is_some_and(|b| b.bytes().len() > 20))));

        // Memoised: one compile per unique stage function, as many as granary's front end.
        let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
        let unique = granary::harvest::plan(&indexed, &c.key_context(), 2).functions as u64;
        assert_eq!(run.stats.functions_compiled, unique);
        assert_eq!(c.stats().functions_compiled, unique);
        assert_eq!(run.stats.libraries_parsed, c.stats().libraries_parsed);

        // Archives of both results are byte-identical.
        let other = Capture::new(CaptureMode::Outputs);
        for (p, e) in pipelines.iter().zip(&theirs_arcs) {
            other.record(e, p);
        }
        let (a, b) = (dir.path().join("granary.granary"), dir.path().join("baseline.granary"));
        capture.write_archive(&a).expect("write");
        other.write_archive(&b).expect("write");
        assert_eq!(std::fs::read(&a).expect("read"), std::fs::read(&b).expect("read"));
    }

    /// Speed-up is wall(1) / wall(N), parallel efficiency speed-up / N, and CPU utilisation
    /// cpu / (wall × N), independently of each other.
    #[test]
    fn scaling_figures_are_computed_as_defined() {
        assert_eq!(speedup(8.0, 2.0), 4.0);
        assert_eq!(parallel_efficiency(4.0, 8), 0.5);
        assert_eq!(cpu_utilisation(15.0, 2.0, 8), 0.9375);
        assert_eq!(speedup(1.0, 0.0), 0.0);
        assert_eq!(cpu_utilisation(1.0, 0.0, 4), 0.0);

        let t = |wall: f64, cpu: f64| Timing { wall: Duration::from_secs_f64(wall), cpu: Duration::from_secs_f64(cpu) };
        // 4 threads busy all the time (utilisation 1.0) but only 2x faster: efficiency 0.5.
        let rows = scaling_rows(&[(1, t(10.0, 10.0)), (4, t(5.0, 20.0))]).expect("has a 1-thread row");
        let row = |threads, wall, cpu, speedup, parallel_efficiency, cpu_utilisation| Scaling {
            threads,
            wall_seconds: wall,
            cpu_seconds: cpu,
            speedup,
            parallel_efficiency,
            cpu_utilisation,
            wall_min_seconds: wall,
            wall_max_seconds: wall,
            speedup_best: speedup,
            parallel_efficiency_best: parallel_efficiency,
        };
        assert_eq!(rows[0], row(1, 10.0, 10.0, 1.0, 1.0, 1.0));
        assert_eq!(rows[1], row(4, 5.0, 20.0, 2.0, 0.5, 1.0));
        // Best-run figures come from the shortest runs, median figures stay.
        let spread = [Spread { median: 10.0, min: 8.0, max: 12.0 }, Spread { median: 5.0, min: 2.5, max: 9.0 }];
        let best = with_spread(rows, &spread);
        assert_eq!((best[1].wall_min_seconds, best[1].wall_max_seconds), (2.5, 9.0));
        assert_eq!((best[1].speedup_best, best[1].parallel_efficiency_best), (3.2, 0.8));
        assert_eq!((best[1].speedup, best[1].parallel_efficiency), (2.0, 0.5));
        assert_eq!((best[0].speedup_best, best[0].parallel_efficiency_best), (1.0, 1.0));
        // Speed-up is relative to 1 thread, not to the smallest count measured.
        assert!(scaling_rows(&[(2, t(5.0, 10.0)), (4, t(3.0, 12.0))]).is_none());
    }

    /// Ratios are taken pair by pair (baseline run i over granary run i), not of medians.
    #[test]
    fn versus_pairs_runs() {
        let t = |wall: f64, cpu: f64| Timing { wall: Duration::from_secs_f64(wall), cpu: Duration::from_secs_f64(cpu) };
        let g = [t(10.0, 10.0), t(20.0, 10.0), t(5.0, 10.0)];
        let b = [t(11.0, 12.0), t(20.0, 10.0), t(6.0, 11.0)];
        let v = versus(2, &g, &b);
        assert_eq!(v.threads, 2);
        assert_eq!(v.wall_ratio, Spread { median: 1.1, min: 1.0, max: 1.2 });
        assert_eq!(v.cpu_ratio, Spread { median: 1.1, min: 1.0, max: 1.2 });
        assert_eq!(Spread::of(Vec::new()), Spread::default());
    }

    #[test]
    fn median_wall_picks_the_middle_run() {
        let t = |ms: u64| Timing { wall: Duration::from_millis(ms), cpu: Duration::from_millis(ms * 2) };
        assert_eq!(median_wall(vec![t(30), t(10), t(20)]).cpu, Duration::from_millis(40));
        assert_eq!(median_wall(vec![t(7)]).wall, Duration::from_millis(7));
        assert_eq!(median_wall(Vec::new()).wall, Duration::ZERO);
    }
}
