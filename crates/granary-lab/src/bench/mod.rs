//! The macro benchmark (`granary bench seed-scale`): one run on the generated workload, every
//! figure printed as a ratio or a distribution measured within that run, because the machines
//! are shared and noisy.

mod baseline;
mod device;
mod passes;
mod stats;

pub use baseline::{baseline, Baseline, BaselineRun};
pub use device::{imbalance, run_device, DeviceBenchOptions, DeviceBenchReport, DevicePass, Imbalance};
pub use passes::{granary, granary_on, parallel, vertex_runs, workaround, workaround_on, Pass, Timing, Worker};
pub use stats::{cpu_utilisation, parallel_efficiency, scaling_rows, speedup, Micros, Scaling, Spread, Versus};

use stats::{load_average, median_wall, micros, versus, with_spread};

use crate::workload::{seed_scale, SeedScaleOptions};
use granary::archive::Archive;
use granary::capture::{Capture, CaptureMode};
use granary::descriptor::{PipelineDescriptor, PipelineKey, Target, TargetSet};
use granary::measure::peak_rss_bytes;
use granary::script::Script;
use serde::Serialize;
use std::path::{Path, PathBuf};
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
///
/// The phases, in order: generate and load the workload; warm up; scaling of granary's
/// schedule and the baseline, interleaved; the report's workaround; record and compile
/// latency without and with concurrent writes; `write_archive` at full size; open and
/// lookups.
pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> Result<BenchReport, BenchError> {
    let load_average_start = load_average();
    let dir = tempfile::tempdir()?;
    let (pipelines, script_load_seconds) = load_workload(opts, dir.path(), log)?;
    let threads = thread_counts(&opts.threads);
    let max_threads = threads.last().copied().unwrap_or(1);
    if pipelines.is_empty() {
        return Err(BenchError::Workload("the workload has no pipeline that loads".into()));
    }
    warm_up(&pipelines, max_threads, log)?;
    let repeat = opts.repeat.max(1);
    let scaled = scaling(&pipelines, &threads, repeat, log)?;
    let unique = unique_stage_functions(&pipelines);

    log("the report's workaround");
    let g = scaled.at_max; // the scaling pass at the largest thread count
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
    let looked = lookups(&out, opts.lookups)?;

    Ok(BenchReport {
        pipelines: pipelines.len(),
        unique_stage_functions: unique,
        script_load_seconds,
        repeat,
        load_average_start,
        load_average_end: load_average(),
        scaling: scaled.scaling,
        baseline_scaling: scaled.baseline_scaling,
        baseline_vs_granary: scaled.baseline_vs_granary,
        baseline_functions_compiled: scaled.baseline_functions_compiled,
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
        open_us: micros(looked.opens),
        lookup_us: micros(looked.lookups),
        lookup_output_us: micros(looked.lookup_outputs),
        lookup_output_mean_bytes: looked.output_bytes as f64 / opts.lookups.max(1) as f64,
        label_lookup_us: micros(looked.label_lookups),
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// Generate and load: the workload's script written under `dir` and loaded; its loadable
/// pipelines and the load time in seconds.
fn load_workload(
    opts: &BenchOptions,
    dir: &Path,
    log: &dyn Fn(&str),
) -> Result<(Vec<PipelineDescriptor>, f64), BenchError> {
    log("generating the workload");
    let script_path: PathBuf = seed_scale(&opts.workload, &dir.join("w"))?.script;
    let t0 = Instant::now();
    let script = Script::load(&script_path)?;
    let pipelines: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    Ok((pipelines, t0.elapsed().as_secs_f64()))
}

/// The thread counts measured: those asked for and 1, ascending, each once.
fn thread_counts(asked: &[usize]) -> Vec<usize> {
    let mut threads = asked.to_vec();
    threads.push(1);
    threads.sort();
    threads.dedup();
    threads.retain(|j| *j >= 1);
    threads
}

/// Warm-up (allocator, page cache, CPU clocks), so the first measured pass is not penalized.
fn warm_up(pipelines: &[PipelineDescriptor], threads: usize, log: &dyn Fn(&str)) -> Result<(), BenchError> {
    log("warm-up");
    let warm = &pipelines[..pipelines.len().min(2000)];
    granary(warm, threads, None);
    baseline(warm, threads)?;
    Ok(())
}

/// What the scaling phase measured.
struct Scaled {
    scaling: Vec<Scaling>,
    baseline_scaling: Vec<Scaling>,
    baseline_vs_granary: Vec<Versus>,
    baseline_functions_compiled: u64,
    /// Granary's median pass at the largest thread count.
    at_max: Timing,
}

/// Scaling: granary and the baseline interleaved at each thread count, `repeat` times each,
/// so both see the same background load.
fn scaling(
    pipelines: &[PipelineDescriptor],
    threads: &[usize],
    repeat: usize,
    log: &dyn Fn(&str),
) -> Result<Scaled, BenchError> {
    let mut g_timings: Vec<(usize, Timing)> = Vec::new();
    let mut b_timings: Vec<(usize, Timing)> = Vec::new();
    let mut g_spread = Vec::new();
    let mut b_spread = Vec::new();
    let mut baseline_vs_granary = Vec::new();
    let mut baseline_functions_compiled = 0;
    for &j in threads {
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
                gs.push(granary(pipelines, j, None));
            }
            let b = baseline(pipelines, j)?;
            baseline_functions_compiled = b.stats.functions_compiled;
            bs.push(b.timing);
            drop(b);
            if !granary_first {
                gs.push(granary(pipelines, j, None));
            }
        }
        baseline_vs_granary.push(versus(j, &gs, &bs));
        let walls = |v: &[Timing]| Spread::of(v.iter().map(|t| t.wall.as_secs_f64()).collect());
        g_spread.push(walls(&gs));
        b_spread.push(walls(&bs));
        g_timings.push((j, median_wall(gs)));
        b_timings.push((j, median_wall(bs)));
    }
    Ok(Scaled {
        scaling: with_spread(scaling_rows(&g_timings).unwrap_or_default(), &g_spread),
        baseline_scaling: with_spread(scaling_rows(&b_timings).unwrap_or_default(), &b_spread),
        baseline_vs_granary,
        baseline_functions_compiled,
        at_max: g_timings.last().map(|t| t.1).unwrap_or_default(),
    })
}

/// Unique stage functions of the workload (SPIR-V under the default profile), from the plan.
fn unique_stage_functions(pipelines: &[PipelineDescriptor]) -> u64 {
    let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let ctx = granary::descriptor::KeyContext {
        target_options: granary::frontend::targets::target_options_fingerprint(
            granary::frontend::Profile::default_profile(),
            TargetSet::SPIRV,
        ),
    };
    granary::harvest::plan(&indexed, &ctx, 1).functions as u64
}

/// What the lookup phase timed.
struct Lookups {
    opens: Vec<Duration>,
    lookups: Vec<Duration>,
    lookup_outputs: Vec<Duration>,
    label_lookups: Vec<Duration>,
    output_bytes: usize,
}

/// Open and lookups: 50 opens of the archive at `out`, then `n` random lookups by key (with
/// and without fetching every stage's SPIR-V) and by label.
fn lookups(out: &Path, n: usize) -> Result<Lookups, BenchError> {
    let mut opens = Vec::new();
    for _ in 0..50 {
        let t0 = Instant::now();
        let a = Archive::open(out)?;
        opens.push(t0.elapsed());
        std::hint::black_box(a.len());
    }
    let archive = Archive::open(out)?;
    let keys: Vec<PipelineKey> = archive.iter().filter_map(|p| p.ok()).map(|p| p.key()).collect();
    let labels: Vec<String> = archive.labels()?.into_iter().map(|(l, _)| l.to_string()).collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng as usize
    };
    let mut lookups = Vec::with_capacity(n);
    let mut lookup_outputs = Vec::with_capacity(n);
    let mut label_lookups = Vec::with_capacity(n);
    let mut output_bytes = 0usize;
    for _ in 0..n {
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
    Ok(Lookups { opens, lookups, lookup_outputs, label_lookups, output_bytes })
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
}
