//! What a fast-linked pipeline costs on the GPU against the same pipeline created whole
//! (issue 24 item 6): the trade-off of `Warmup::optimize_linked` in numbers.
//!
//! A pipeline archived as a graphics pipeline library (its colour formats unspecialized) is
//! created by the loader from its library parts, fast-linked with a fragment-output part: quick
//! to make, but the driver cannot optimize across the parts. `Warmup::optimize_linked` makes
//! such a pipeline again whole in the background (`PipelineLoader::load_with(.., whole)`: no
//! library, the link formats in place of the unspecialized ones) and swaps it in. This example
//! takes, for every pipeline of the archive the loader fast-links on this device:
//!
//! - (a) the fast-linked pipeline, as `PipelineLoader::load` gives it (`Loaded::linked`);
//! - (b) the optimized one, as a `Warmup` with `optimize_linked(Some(Priority::LOW))` swaps it
//!   in (`Loaded::generation` 1) — the loader's whole re-creation path through its public API.
//!
//! Both are made on `--workers` threads (a) by `load` calls, (b) by the warm-up's workers. Then
//! each pipeline is drawn both ways, `--draws` times each, into `--size`×`--size` targets
//! (`draw::DrawOptions::cover`: every draw's triangles cover the target, each draw in a render
//! pass instance of its own, targets cleared), with a GPU timestamp (`vkCmdWriteTimestamp`,
//! `BOTTOM_OF_PIPE`) right before and after each draw call: the time of one draw is the
//! difference times `timestampPeriod`, and a repetition's figure is the mean over its draws.
//! Each repetition is one batch holding both pipelines' draws, fast first in even (pipeline +
//! repetition) and optimized first in odd ones, so neither always runs on a warmer GPU; a first
//! repetition, not counted, makes the textures and uploads (and whatever a driver does at a
//! pipeline's first draw). Per pipeline: the median of `--reps` repetitions, both ways, and the
//! ratio fast / optimized; the summary takes the median over pipelines of each, the median and
//! 90th percentile (nearest rank) of the ratios, and how many pipelines were slower fast-linked
//! (`slower_fast`: ratio above 1, noise included; `slower_fast_5pct`: above 1.05).
//!
//!     cargo run --release -p granary-vulkan --example link_cost -- [ARCHIVE] [--size N (1024)]
//!         [--draws N (16)] [--reps N (5)] [--workers N (4)] [--limit N (0: all)] [--json]
//!
//! Without ARCHIVE: the bundled example compiled with the `none` backend (`draw::example_archive`).
//! The device is opened as `granary harvest --backend vulkan` opens it, so an archive harvested
//! there (scripts/device-link-cost.sh) matches it and its library parts come from binaries.
//! GRANARY_VALIDATE=1 runs it under the validation layer (any message not listed in
//! GRANARY_VALIDATE_EXPECT is an error). A queue that cannot write timestamps prints
//! `timestamps unsupported` and exits 0.
//!
//! What it does not say: a draw here is the pipeline with the `draw` module's inputs (identity
//! matrices, one depth for every vertex), not a game's; two triangles over one another at the
//! same depth, so with a strict depth test the second is rejected before shading. Timestamps
//! around single draws include the GPU's ramp up and down per draw. On lavapipe the figures are
//! CPU time and say nothing about a GPU (the test below checks the structure only).

/// The renderer: draws with any portable-form pipeline (timed, here). Its read-back half is
/// frame_loop's, unused here.
#[allow(dead_code)]
mod draw;

use granary_archive::vulkan::{Gpu, Loaded, LoaderOptions, PipelineLoader, Priority, Status, VulkanError, Warmup};
use granary_archive::Archive;
use granary_vulkan::{VulkanBackend, VulkanOptions};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The fast-linked pipelines by archive index, and the pipelines `load` failed on, with why.
type Fast = (Vec<(usize, Loaded)>, Vec<(usize, String)>);

/// Per pipeline asked for, the whole one or why there is none.
type Whole = Vec<Result<Arc<Loaded>, String>>;

/// How long the warm-up may take to make every pipeline again whole.
const WHOLE_TIMEOUT: Duration = Duration::from_secs(1800);

/// The command line's numbers.
#[derive(Clone, Debug)]
struct Options {
    /// Target width and height.
    size: u32,
    /// Timed draws per pipeline, each way, per repetition.
    draws: u32,
    /// Timed repetitions (after one not counted).
    reps: usize,
    /// Threads creating pipelines (both ways).
    workers: usize,
    /// At most this many fast-linked pipelines measured, in archive order (0: all).
    limit: usize,
    /// One JSON document on stdout instead of the text lines.
    json: bool,
}

/// One pipeline, both ways.
#[derive(Debug, Clone)]
struct Measured {
    label: String,
    /// GPU nanoseconds per draw, per timed repetition.
    fast_reps: Vec<f64>,
    optimized_reps: Vec<f64>,
    /// Their medians.
    fast_ns: f64,
    optimized_ns: f64,
    /// The loader's time creating each (`Loaded::total_time`; the fast one's includes its
    /// library parts, from binaries where the archive has them).
    fast_create: Duration,
    optimized_create: Duration,
}

impl Measured {
    /// Fast-linked over optimized (`None` when the optimized draw measured 0 ns).
    fn ratio(&self) -> Option<f64> {
        (self.optimized_ns > 0.0).then(|| self.fast_ns / self.optimized_ns)
    }
}

/// The figures of one run.
#[derive(Debug, Default)]
struct Report {
    device: String,
    /// Pipelines in the archive.
    archive_pipelines: usize,
    /// The device has graphics pipeline libraries (else nothing is fast-linked).
    libraries: bool,
    /// Pipelines `load` gave fast-linked.
    linked: usize,
    /// Of those, measured both ways (in archive order).
    measured: Vec<Measured>,
    /// Fast-linked but not drawable by the `draw` module, with why.
    not_drawable: Vec<(String, String)>,
    /// Not created (either way), with why.
    failed: Vec<(String, String)>,
    /// Timestamp ticks' valid bits, nanoseconds per tick.
    valid_bits: u32,
    period_ns: f32,
    compute_and_graphics: bool,
    /// Time making every fast-linked pipeline (`load` on `workers` threads, every pipeline of
    /// the archive) and every whole one (the warm-up: fast-linked again, then whole).
    fast_wall: Duration,
    whole_wall: Duration,
}

/// What a run found.
#[derive(Debug)]
enum Outcome {
    /// No Vulkan driver or device (the message says which).
    NoDevice(String),
    /// Queue family 0 writes no timestamps.
    NoTimestamps(String),
    Done(Report),
}

/// The median of `v` (the mean of the middle two for an even count; 0 for none).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The `p`th percentile of `v`, nearest rank (0 for none).
fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}

/// Every pipeline of `archive` through `loader.load` on `workers` threads: the fast-linked
/// ones by index, and those that failed with why.
fn load_fast(archive: &Archive, loader: &PipelineLoader, workers: usize) -> Result<Fast, Box<dyn std::error::Error>> {
    let n = archive.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let made = archive
                    .pipeline(i)
                    .map_err(|e| e.to_string())
                    .and_then(|p| loader.load(&p).map_err(|e| e.to_string()));
                results.lock().unwrap_or_else(|p| p.into_inner()).push((i, made));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(i, _)| *i);
    let (mut linked, mut failed) = (Vec::new(), Vec::new());
    for (i, made) in results {
        match made {
            Ok(l) if l.linked => linked.push((i, l)),
            Ok(_) => {} // created whole (or compute): nothing to compare
            Err(e) => failed.push((i, e)),
        }
    }
    Ok((linked, failed))
}

/// The same pipelines made again whole by a warm-up with `optimize_linked`: per index, the
/// whole one (`generation` 1) or why there is none.
fn load_whole(
    loader: &Arc<PipelineLoader>,
    archive: &Archive,
    indices: &[usize],
    workers: usize,
) -> Result<(Warmup, Whole), Box<dyn std::error::Error>> {
    let warmup = Warmup::new(loader.clone());
    warmup.optimize_linked(Some(Priority::LOW));
    let mut tickets = Vec::new();
    for &i in indices {
        tickets.push(warmup.request(archive.pipeline(i)?.key(), Priority::NORMAL));
    }
    let workers_running = warmup.spawn_workers(workers.max(1))?;
    let start = Instant::now();
    loop {
        // A fast-linked result queues its whole re-creation after it is published: wait until
        // every one that came back linked (or already whole) has its re-creation done.
        let expected = tickets
            .iter()
            .filter(|t| matches!(warmup.try_get(t), Status::Ready(l) if l.linked || l.generation == 1))
            .count() as u64;
        let s = warmup.stats();
        if warmup.progress().done() && s.optimized + s.optimize_failed >= expected {
            break;
        }
        if start.elapsed() > WHOLE_TIMEOUT {
            return Err(format!("the warm-up did not make every pipeline whole in {WHOLE_TIMEOUT:?}: {s:?}").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(workers_running);
    let whole = tickets
        .iter()
        .map(|t| match warmup.try_get(t) {
            Status::Ready(l) if l.generation == 1 => Ok(l),
            Status::Ready(_) => {
                Err("the warm-up's whole re-creation failed (it keeps the fast-linked one)".to_string())
            }
            Status::Failed(e) => Err(e.to_string()),
            Status::Pending => Err("still pending".to_string()),
            Status::Absent => Err("absent from the archive".to_string()),
        })
        .collect();
    Ok((warmup, whole))
}

/// Draws a pipeline both ways, `o.reps` repetitions after one not counted: per
/// repetition, GPU nanoseconds per draw, fast-linked then optimized.
fn time_pair(
    drawer: &mut draw::Drawer,
    plan: &draw::Plan,
    fast: &Loaded,
    whole: &Loaded,
    parity: usize,
    o: &Options,
) -> Result<(Vec<f64>, Vec<f64>), draw::Error> {
    let clock = drawer.clock();
    let per = 2 * o.draws;
    let (mut f, mut w) = (Vec::new(), Vec::new());
    for rep in 0..=o.reps {
        let fast_first = (rep + parity).is_multiple_of(2);
        let order: [(&Loaded, u32); 2] = if fast_first { [(fast, 0), (whole, per)] } else { [(whole, per), (fast, 0)] };
        drawer.begin()?;
        for (l, first) in order {
            drawer.draw(l, plan, draw::Record::Timed { first, repeats: o.draws })?;
        }
        drawer.finish()?;
        if rep == 0 {
            continue; // not counted: first uses
        }
        let t = drawer.timestamps(0, 2 * per)?;
        let mean = |first: usize| {
            let total: f64 = (0..o.draws as usize).map(|k| clock.ns(t[first + 2 * k], t[first + 2 * k + 1])).sum();
            total / f64::from(o.draws)
        };
        f.push(mean(0));
        w.push(mean(per as usize));
    }
    Ok((f, w))
}

/// Runs the measurement on `archive` (or the example) on the first device.
fn run(archive: Option<&std::path::Path>, o: &Options) -> Result<Outcome, Box<dyn std::error::Error>> {
    let validate = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1");
    let backend = match VulkanBackend::open(&VulkanOptions { validate, ..Default::default() }) {
        Ok(b) => b,
        Err(e @ VulkanError::NoValidationLayer { .. }) => return Err(e.into()),
        Err(e) => return Ok(Outcome::NoDevice(format!("no Vulkan driver ({e})"))),
    };
    let gpu: Arc<Gpu> = backend.gpu().clone();
    let device = gpu.info.identity.device_name.clone();
    let clock = draw::clock(&gpu);
    if clock.valid_bits == 0 {
        return Ok(Outcome::NoTimestamps(format!(
            "device=\"{device}\": queue family 0 has timestampValidBits 0 (timestampComputeAndGraphics {})",
            clock.compute_and_graphics
        )));
    }
    let archive = Arc::new(match archive {
        Some(p) => Archive::open(p)?,
        None => draw::example_archive()?,
    });
    let mut labels = HashMap::new();
    for (label, i) in archive.labels()? {
        labels.entry(i).or_insert_with(|| label.to_string());
    }
    let label_of = |i: usize| -> Result<String, Box<dyn std::error::Error>> {
        Ok(labels.get(&i).cloned().unwrap_or_else(|| archive.pipeline(i).map(|p| p.key().to_hex()).unwrap_or_default()))
    };
    let mut r = Report {
        device: device.clone(),
        archive_pipelines: archive.len(),
        libraries: gpu.libraries(),
        valid_bits: clock.valid_bits,
        period_ns: clock.period_ns,
        compute_and_graphics: clock.compute_and_graphics,
        ..Report::default()
    };
    let loader = Arc::new(PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default())?);

    let start = Instant::now();
    let (mut fast, fast_failed) = load_fast(&archive, &loader, o.workers)?;
    r.fast_wall = start.elapsed();
    r.linked = fast.len();
    for (i, e) in fast_failed {
        r.failed.push((label_of(i)?, format!("load: {e}")));
    }
    if o.limit > 0 {
        fast.truncate(o.limit);
    }
    let indices: Vec<usize> = fast.iter().map(|(i, _)| *i).collect();
    let start = Instant::now();
    let (warmup, whole) = load_whole(&loader, &archive, &indices, o.workers)?;
    r.whole_wall = start.elapsed();

    let mut drawer = draw::Drawer::with_options(
        gpu.clone(),
        draw::DrawOptions { size: o.size, cover: true, timestamps: 4 * o.draws },
    )?;
    for (j, ((i, f), w)) in fast.iter().zip(&whole).enumerate() {
        let label = label_of(*i)?;
        let w = match w {
            Ok(w) => w,
            Err(e) => {
                r.failed.push((label, format!("whole: {e}")));
                continue;
            }
        };
        let plan = match drawer.plan(&archive.pipeline(*i)?) {
            Ok(p) => p,
            Err(why) => {
                r.not_drawable.push((label, why));
                continue;
            }
        };
        let (fast_reps, optimized_reps) =
            time_pair(&mut drawer, &plan, f, w, j, o).map_err(|e| format!("drawing {label}: {e}"))?;
        r.measured.push(Measured {
            label,
            fast_ns: median(&fast_reps),
            optimized_ns: median(&optimized_reps),
            fast_reps,
            optimized_reps,
            fast_create: f.total_time,
            optimized_create: w.total_time,
        });
    }
    drop(drawer);
    drop(whole);
    drop(fast);
    drop(warmup);
    drop(loader);
    drop(archive);
    drop(gpu);
    draw::validation_clean(&backend)?;
    Ok(Outcome::Done(r))
}

/// The summary's figures over the measured pipelines.
#[derive(Debug, PartialEq)]
struct Summary {
    fast_median_ns: f64,
    optimized_median_ns: f64,
    ratio_median: f64,
    ratio_p90: f64,
    ratio_min: f64,
    ratio_max: f64,
    /// Ratio above 1, and above 1.05.
    slower_fast: usize,
    slower_fast_5pct: usize,
    /// Sums over pipelines of the per-pipeline medians (one draw of each).
    fast_total_ns: f64,
    optimized_total_ns: f64,
    fast_create_median_us: f64,
    optimized_create_median_us: f64,
}

fn summarize(m: &[Measured]) -> Summary {
    let fast: Vec<f64> = m.iter().map(|x| x.fast_ns).collect();
    let optimized: Vec<f64> = m.iter().map(|x| x.optimized_ns).collect();
    let ratios: Vec<f64> = m.iter().filter_map(Measured::ratio).collect();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    Summary {
        fast_median_ns: median(&fast),
        optimized_median_ns: median(&optimized),
        ratio_median: median(&ratios),
        ratio_p90: percentile(&ratios, 90.0),
        ratio_min: if ratios.is_empty() { 0.0 } else { ratios.iter().copied().fold(f64::INFINITY, f64::min) },
        ratio_max: ratios.iter().copied().fold(0.0, f64::max),
        slower_fast: ratios.iter().filter(|&&x| x > 1.0).count(),
        slower_fast_5pct: ratios.iter().filter(|&&x| x > 1.05).count(),
        fast_total_ns: fast.iter().sum(),
        optimized_total_ns: optimized.iter().sum(),
        fast_create_median_us: median(&m.iter().map(|x| us(x.fast_create)).collect::<Vec<_>>()),
        optimized_create_median_us: median(&m.iter().map(|x| us(x.optimized_create)).collect::<Vec<_>>()),
    }
}

/// The summary line (`link_cost device=... pipelines=N ...`).
fn summary_line(r: &Report, s: &Summary, o: &Options) -> String {
    format!(
        "link_cost device=\"{}\" pipelines={} fast_median_ns={:.0} optimized_median_ns={:.0} ratio_median={:.3} \
         ratio_p90={:.3} slower_fast={} slower_fast_5pct={} ratio_min={:.3} ratio_max={:.3} fast_total_ns={:.0} \
         optimized_total_ns={:.0} fast_create_median_us={:.0} optimized_create_median_us={:.0} linked={} \
         archive_pipelines={} not_drawable={} failed={} size={} draws={} reps={} workers={} timestamp_period_ns={} \
         timestamp_valid_bits={} fast_wall_ms={:.0} whole_wall_ms={:.0}",
        r.device,
        r.measured.len(),
        s.fast_median_ns,
        s.optimized_median_ns,
        s.ratio_median,
        s.ratio_p90,
        s.slower_fast,
        s.slower_fast_5pct,
        s.ratio_min,
        s.ratio_max,
        s.fast_total_ns,
        s.optimized_total_ns,
        s.fast_create_median_us,
        s.optimized_create_median_us,
        r.linked,
        r.archive_pipelines,
        r.not_drawable.len(),
        r.failed.len(),
        o.size,
        o.draws,
        o.reps,
        o.workers,
        r.period_ns,
        r.valid_bits,
        r.fast_wall.as_secs_f64() * 1e3,
        r.whole_wall.as_secs_f64() * 1e3,
    )
}

/// The report as one JSON document.
fn to_json(r: &Report, s: &Summary, o: &Options) -> serde_json::Value {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    serde_json::json!({
        "device": r.device,
        "options": { "size": o.size, "draws": o.draws, "reps": o.reps, "workers": o.workers, "limit": o.limit },
        "timestamps": { "valid_bits": r.valid_bits, "period_ns": r.period_ns, "compute_and_graphics": r.compute_and_graphics },
        "archive_pipelines": r.archive_pipelines,
        "libraries": r.libraries,
        "linked": r.linked,
        "fast_wall_ms": r.fast_wall.as_secs_f64() * 1e3,
        "whole_wall_ms": r.whole_wall.as_secs_f64() * 1e3,
        "summary": {
            "pipelines": r.measured.len(),
            "fast_median_ns": s.fast_median_ns,
            "optimized_median_ns": s.optimized_median_ns,
            "ratio_median": s.ratio_median,
            "ratio_p90": s.ratio_p90,
            "ratio_min": s.ratio_min,
            "ratio_max": s.ratio_max,
            "slower_fast": s.slower_fast,
            "slower_fast_5pct": s.slower_fast_5pct,
            "fast_total_ns": s.fast_total_ns,
            "optimized_total_ns": s.optimized_total_ns,
            "fast_create_median_us": s.fast_create_median_us,
            "optimized_create_median_us": s.optimized_create_median_us,
        },
        "pipelines": r.measured.iter().map(|m| serde_json::json!({
            "label": m.label,
            "fast_ns": m.fast_ns,
            "optimized_ns": m.optimized_ns,
            "ratio": m.ratio(),
            "fast_reps_ns": m.fast_reps,
            "optimized_reps_ns": m.optimized_reps,
            "fast_create_us": us(m.fast_create),
            "optimized_create_us": us(m.optimized_create),
        })).collect::<Vec<_>>(),
        "not_drawable": r.not_drawable.iter().map(|(l, why)| serde_json::json!({ "label": l, "why": why })).collect::<Vec<_>>(),
        "failed": r.failed.iter().map(|(l, why)| serde_json::json!({ "label": l, "why": why })).collect::<Vec<_>>(),
    })
}

/// Prints the report: one line per pipeline and the summary, or the JSON document.
fn print(r: &Report, o: &Options) {
    let s = summarize(&r.measured);
    if o.json {
        println!("{}", serde_json::to_string_pretty(&to_json(r, &s, o)).unwrap_or_default());
        return;
    }
    for m in &r.measured {
        println!(
            "pipeline label=\"{}\" fast_ns={:.0} optimized_ns={:.0} ratio={} fast_create_us={:.0} optimized_create_us={:.0}",
            m.label,
            m.fast_ns,
            m.optimized_ns,
            m.ratio().map_or("-".to_string(), |x| format!("{x:.3}")),
            m.fast_create.as_secs_f64() * 1e6,
            m.optimized_create.as_secs_f64() * 1e6
        );
    }
    for (l, why) in &r.not_drawable {
        println!("  not drawable: {l}: {why}");
    }
    for (l, why) in &r.failed {
        println!("  failed: {l}: {why}");
    }
    if !r.libraries {
        println!("  this device has no graphics pipeline libraries: the loader fast-links nothing");
    }
    println!("{}", summary_line(r, &s, o));
}

/// The command line.
const USAGE: &str = "link_cost [ARCHIVE] [--size N (1024)] [--draws N (16)] [--reps N (5)] [--workers N (4)] \
                     [--limit N (0: every fast-linked pipeline)] [--json]";

/// `link_cost [ARCHIVE] [--size N] [--draws N] [--reps N] [--workers N] [--limit N] [--json]`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut archive = None;
    let mut o = Options { size: 1024, draws: 16, reps: 5, workers: 4, limit: 0, json: false };
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--size" => o.size = value()?.parse::<u32>()?.clamp(1, 16384),
            "--draws" => o.draws = value()?.parse::<u32>()?.clamp(1, 4096),
            "--reps" => o.reps = value()?.parse::<usize>()?.max(1),
            "--workers" => o.workers = value()?.parse::<usize>()?.max(1),
            "--limit" => o.limit = value()?.parse()?,
            "--json" => o.json = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            p if !p.starts_with("--") && archive.is_none() => archive = Some(std::path::PathBuf::from(p)),
            other => return Err(format!("unknown argument {other}; usage: {USAGE}").into()),
        }
    }
    match run(archive.as_deref(), &o)? {
        Outcome::NoDevice(why) => println!("SKIPPED: {why}"),
        Outcome::NoTimestamps(why) => println!("link_cost timestamps unsupported: {why}"),
        Outcome::Done(r) => print(&r, &o),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentile() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 90.0), 9.0);
        assert_eq!(percentile(&v, 100.0), 10.0);
        assert_eq!(percentile(&[5.0], 90.0), 5.0);
    }

    #[test]
    fn every_fast_linked_pipeline_is_measured_both_ways() {
        // Tiny: the structure, not the speed (on lavapipe the CPU draws).
        let o = Options { size: 64, draws: 2, reps: 2, workers: 2, limit: 0, json: false };
        let r = match run(None, &o).unwrap() {
            Outcome::Done(r) => r,
            Outcome::NoDevice(why) => {
                assert!(
                    std::env::var("GRANARY_REQUIRE_VULKAN").map_or(true, |v| v != "1"),
                    "no Vulkan device and GRANARY_REQUIRE_VULKAN=1 requires one: {why}"
                );
                println!("SKIPPED: {why}");
                return;
            }
            Outcome::NoTimestamps(why) => {
                println!("SKIPPED: timestamps unsupported: {why}");
                return;
            }
        };
        print(&r, &o);
        assert!(r.failed.is_empty() && r.not_drawable.is_empty(), "{:?} {:?}", r.failed, r.not_drawable);
        if !r.libraries {
            assert_eq!(r.linked, 0, "no libraries, nothing fast-linked");
            return;
        }
        // The bundled example's pipelines with unspecialized colour formats are libraries.
        assert!(r.linked > 100, "{} fast-linked of {}", r.linked, r.archive_pipelines);
        assert_eq!(r.measured.len(), r.linked, "every fast-linked pipeline measured");
        for m in &r.measured {
            assert_eq!((m.fast_reps.len(), m.optimized_reps.len()), (o.reps, o.reps), "{m:?}");
            for x in m.fast_reps.iter().chain(&m.optimized_reps).chain([&m.fast_ns, &m.optimized_ns]) {
                assert!(x.is_finite() && *x >= 0.0, "{m:?}");
            }
        }
        let s = summarize(&r.measured);
        assert!(s.ratio_p90 >= s.ratio_median && s.ratio_median >= 0.0, "{s:?}");
        assert!(s.slower_fast <= r.measured.len() && s.slower_fast_5pct <= s.slower_fast, "{s:?}");
        let line = summary_line(&r, &s, &o);
        assert!(line.starts_with(&format!("link_cost device=\"{}\" pipelines={} ", r.device, r.linked)), "{line}");
        let json = to_json(&r, &s, &o);
        assert_eq!(json["pipelines"].as_array().map(Vec::len), Some(r.linked), "{json}");
    }
}
