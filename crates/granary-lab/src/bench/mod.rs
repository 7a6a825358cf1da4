//! The macro benchmark (`granary bench seed-scale`): one run on the generated workload, every
//! figure printed as a ratio or a distribution measured within that run, because the machines
//! are shared and noisy.

mod passes;

pub use passes::{granary, naive, workaround, Timing};

use granary::archive::Archive;
use granary::capture::{Capture, CaptureMode};
use granary::descriptor::{PipelineDescriptor, PipelineKey};
use crate::gen::{seed_scale, SeedScaleOptions};
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
    /// Thread counts to measure scaling at (the largest is used for the other figures).
    pub threads: Vec<usize>,
    /// Pipelines in the naive-baseline sample (the first N of the workload).
    pub naive_sample: usize,
    /// Random lookups to time.
    pub lookups: usize,
}

/// One row of the scaling table.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    /// Threads.
    pub threads: usize,
    /// Wall seconds of the compile phase.
    pub wall_seconds: f64,
    /// Worker CPU seconds.
    pub cpu_seconds: f64,
    /// cpu / (wall × threads).
    pub parallel_efficiency: f64,
    /// Wall time at the smallest thread count measured / wall time here.
    pub speedup: f64,
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
    /// Compile-phase scaling.
    pub scaling: Vec<Scaling>,
    /// Pipelines in the naive-baseline sample.
    pub naive_sample: usize,
    /// Naive CPU seconds / granary CPU seconds on that sample (at the largest thread count).
    pub naive_cpu_ratio: f64,
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
    /// Lookup by key of a random archived pipeline, with its stage records checked.
    pub lookup_us: Micros,
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
    Gen(#[from] crate::gen::GenError),
    /// Loading it failed.
    #[error(transparent)]
    Script(#[from] granary::script::ScriptError),
    /// Writing or reading the archive failed.
    #[error(transparent)]
    Archive(#[from] granary::archive::ArchiveError),
    /// Temporary files.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Runs the benchmark. `log` receives a line per step.
pub fn run(opts: &BenchOptions, log: &dyn Fn(&str)) -> Result<BenchReport, BenchError> {
    let dir = tempfile::tempdir()?;
    log("generating the workload");
    let script_path: PathBuf = seed_scale(&opts.workload, &dir.path().join("w"))?.script;
    let t0 = Instant::now();
    let script = Script::load(&script_path)?;
    let pipelines: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    let script_load_seconds = t0.elapsed().as_secs_f64();
    let mut threads = opts.threads.clone();
    threads.sort();
    threads.dedup();
    let max_threads = threads.last().copied().unwrap_or(1);

    // Scaling. The last pass's capture is kept for the archive figures.
    // Warm-up (allocator, page cache, CPU clocks), so the first measured pass is not penalized.
    log("warm-up");
    granary(&pipelines[..pipelines.len().min(2000)], max_threads, None);
    let mut scaling: Vec<Scaling> = Vec::new();
    let mut capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let mut at_max = Timing::default();
    for &j in &threads {
        log(&format!("compiling {} pipelines on {j} threads", pipelines.len()));
        capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let t = granary(&pipelines, j, Some(capture.clone()));
        at_max = t;
        let wall = t.wall.as_secs_f64();
        let first = scaling.first().map_or(wall, |s| s.wall_seconds);
        scaling.push(Scaling {
            threads: j,
            wall_seconds: wall,
            cpu_seconds: t.cpu.as_secs_f64(),
            parallel_efficiency: t.cpu.as_secs_f64() / (wall * j as f64),
            speedup: first / wall,
        });
    }
    let indexed: Vec<(usize, &PipelineDescriptor)> = pipelines.iter().enumerate().collect();
    let ctx = granary::descriptor::KeyContext { target_options: granary::frontend::targets::target_options_fingerprint() };
    let unique = granary::harvest::plan(&indexed, &ctx).functions as u64;

    log("naive baseline");
    let sample = &pipelines[..opts.naive_sample.min(pipelines.len())];
    let g = granary(sample, max_threads, None);
    let n = naive(sample, max_threads);
    let naive_cpu_ratio = n.cpu.as_secs_f64() / g.cpu.as_secs_f64();

    log("the report's workaround");
    let g = at_max; // the scaling pass at the largest thread count
    let w = workaround(&pipelines, max_threads);

    log("write_archive at full size");
    let out = dir.path().join("bench.granary");
    let t0 = Instant::now();
    let written = capture.write_archive(&out)?;
    let write_archive_seconds = t0.elapsed().as_secs_f64();

    log("record and compile latency without and with concurrent writes");
    let (record_idle, compile_idle, _) = latency_pass(&pipelines, max_threads, None);
    let (record_busy, compile_busy, writes) = latency_pass(&pipelines, max_threads, Some(dir.path().join("live.granary")));

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
    let mut label_lookups = Vec::with_capacity(opts.lookups);
    for _ in 0..opts.lookups {
        let k = keys[next() % keys.len().max(1)];
        let t0 = Instant::now();
        let p = archive.get(k)?;
        let s = p.map(|p| p.stages().map(|s| s.len()));
        lookups.push(t0.elapsed());
        std::hint::black_box(s.is_some());
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
        scaling,
        naive_sample: sample.len(),
        naive_cpu_ratio,
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
        label_lookup_us: micros(label_lookups),
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// Compiles every pipeline on `threads` threads, timing each compile call and each
/// `Capture::record` (the one step that shares locks with `write_archive`); with `live`, a
/// thread writes the capture to that path in a loop meanwhile.
fn latency_pass(pipelines: &[PipelineDescriptor], threads: usize, live: Option<PathBuf>) -> (Vec<Duration>, Vec<Duration>, usize) {
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let c = passes::compiler(threads, true, None);
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
    )
}
