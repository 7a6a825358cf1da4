//! What pipeline creation costs a game's frames, three ways (issue 25): a frame loop paced at a
//! fixed budget (16.6 ms) that needs `PER_FRAME` new pipelines each frame, in archive order,
//! until every pipeline of the archive has been used, then `--tail` more frames.
//!
//! - `compile` — no archive: each pipeline is compiled on the frame thread at its first use
//!   (`PipelineLoader::load` with binaries and the archive's cache data off: what a game
//!   without granary does, its own empty `VkPipelineCache`);
//! - `blocking` — every pipeline created before the first frame (a loading screen: `Warmup`
//!   with `WORKERS` owned threads and `wait`);
//! - `progressive` — the warm-up starts with the loop (every pipeline requested in first-use
//!   order, `WORKERS` threads); a frame calls only `try_get`, boosts a pipeline it needs that
//!   is not ready and skips that draw.
//!
//! Each frame draws: every pipeline that became usable in it is drawn with once (a compute
//! pipeline dispatched once) into 64×64 offscreen targets, with inputs made from the
//! pipeline's reflection (the `draw` module says which), in one command buffer submitted and
//! waited for at the end of the frame. Nothing is read back in the loop.
//!
//! Per mode: frames, frames over budget, the worst frame, the time spent creating pipelines on
//! the frame thread, draws skipped (progressive), time to first frame, time until every
//! pipeline is created, time until every pipeline has been drawn with (which the first-use
//! schedule bounds: `per-frame` new ones each frame), draws, and the time the frames spent
//! drawing (recording, submitting, waiting: part of the frame time, so "over budget" counts
//! the draws too). Each mode opens its own loader (a fresh pipeline cache); run one mode per
//! process on a driver with an in-process cache.
//!
//! `--check N` then compares pixels: for N pipelines spread over the archive, the outputs
//! (attachments, or a compute pipeline's storage buffers and textures) of a draw with the
//! pipeline as the archive's loader creates it (from binaries where the archive has them for
//! this device) against the same draw with the pipeline compiled from SPIR-V (`check_pixels`).
//!
//!     cargo run --release -p granary-vulkan --example frame_loop -- [ARCHIVE] [--mode all|compile|blocking|progressive]
//!         [--per-frame N] [--workers N] [--tail N] [--check N] [--trace]
//!         [--dictionary-binaries] [--share-binaries-from BYTES]
//!
//! Without ARCHIVE: the bundled example compiled with the `none` backend (SPIR-V only). The
//! test below runs all three modes and a check of 48 on it (lavapipe in CI). docs/BENCHMARKS.md
//! has the figures.

/// The renderer: draws with any portable-form pipeline and reads its outputs back.
mod draw;

use granary_archive::vulkan::{Gpu, LoaderOptions, PipelineLoader, VulkanError};
use granary_archive::vulkan::{Loaded, Priority, Source, Status, Warmup};
use granary_archive::Archive;
use granary_vulkan::{VulkanBackend, VulkanOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The frame budget: 60 frames a second.
const BUDGET: Duration = Duration::from_micros(16_600);

/// How the loop gets its pipelines (the module's list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Compiled on the frame thread at first use.
    Compile,
    /// Every pipeline created by the warm-up before the first frame.
    Blocking,
    /// The warm-up runs with the loop; frames only poll.
    Progressive,
}

impl Mode {
    /// The `--mode` value.
    fn name(self) -> &'static str {
        match self {
            Mode::Compile => "compile",
            Mode::Blocking => "blocking",
            Mode::Progressive => "progressive",
        }
    }
}

/// One mode's figures.
#[derive(Debug, Default)]
struct Report {
    /// Frames run.
    frames: usize,
    /// Frames longer than [`BUDGET`] (pipeline work and drawing).
    over_budget: usize,
    /// The longest frame.
    worst_frame: Duration,
    /// Time inside pipeline creation on the frame thread.
    created_on_frame_thread: Duration,
    /// First-use draws skipped because the pipeline was not ready (progressive only).
    skipped_draws: usize,
    /// Distinct pipelines whose first use came before they were ready.
    late_pipelines: usize,
    /// From the mode's start (the loader made) to the end of the first frame.
    time_to_first_frame: Duration,
    /// Until every pipeline was created (the warm-up done; in `compile`, the last first use).
    all_ready: Duration,
    /// Until every pipeline had been drawn with at least once (frame granularity).
    all_drawn: Duration,
    /// Pipelines that failed to be created.
    failed: usize,
    /// Draws recorded and submitted (each pipeline once, at the frame it became usable).
    draws: usize,
    /// Time recording the frames' draws, submitting them and waiting for them (part of the
    /// frame time; on lavapipe the CPU draws).
    drawing: Duration,
    /// The longest of those in one frame.
    worst_drawing: Duration,
    /// Pipelines the renderer cannot draw (`draw::Drawer::plan` says why).
    not_drawable: usize,
}

/// The command line's numbers.
struct Options {
    /// New pipelines needed each frame.
    per_frame: usize,
    /// Warm-up threads (blocking and progressive).
    workers: usize,
    /// Frames run after every pipeline was used and ready.
    tail: usize,
    /// Pipelines the pixel check samples (0: no check).
    check: usize,
    /// Each phase, and each draw before it is recorded, on stderr: where a driver crash struck.
    trace: bool,
    /// `LoaderOptions::whole_dictionary_binaries` (blocking and progressive): create pipelines
    /// from sets that carry NVIDIA's dictionary instead of compiling them.
    dictionary_binaries: bool,
    /// `LoaderOptions::share_binaries_from` (blocking and progressive), when given.
    share_binaries_from: Option<usize>,
}

/// Runs the frame loop in `mode` with a loader of its own.
fn run_mode(
    archive: &Arc<Archive>,
    gpu: &Arc<Gpu>,
    mode: Mode,
    o: &Options,
) -> Result<Report, Box<dyn std::error::Error>> {
    let n = archive.len();
    let mut r = Report::default();
    // What an engine sets up before its loop (materials, meshes): the draw of each pipeline.
    let mut drawer = draw::Drawer::new(gpu.clone())?;
    let plans: Vec<Option<draw::Plan>> =
        (0..n).map(|i| archive.pipeline(i).map(|p| drawer.plan(&p).ok())).collect::<Result<_, _>>()?;
    r.not_drawable = plans.iter().filter(|p| p.is_none()).count();
    let start = Instant::now();
    let options = match mode {
        Mode::Compile => LoaderOptions { use_binaries: false, use_archive_cache: false, ..LoaderOptions::default() },
        _ => {
            let d = LoaderOptions::default();
            LoaderOptions {
                whole_dictionary_binaries: o.dictionary_binaries,
                share_binaries_from: o.share_binaries_from.unwrap_or(d.share_binaries_from),
                ..d
            }
        }
    };
    let loader = Arc::new(PipelineLoader::new(archive.clone(), gpu.clone(), options)?);
    let warmup = Warmup::new(loader.clone());
    let keys: Vec<_> = (0..n).map(|i| archive.pipeline(i).map(|p| p.key())).collect::<Result<_, _>>()?;
    let mut held: Vec<Option<Arc<Loaded>>> = vec![None; n];
    let mut tickets = Vec::new();
    let mut workers = None;
    if mode != Mode::Compile {
        if o.trace {
            eprintln!("{}: requesting {n} pipelines, {} workers", mode.name(), o.workers);
        }
        tickets = keys.iter().map(|k| warmup.request(*k, Priority::NORMAL)).collect();
        workers = Some(warmup.spawn_workers(o.workers)?);
        if mode == Mode::Blocking {
            warmup.wait(&tickets, Duration::from_secs(3600));
            r.all_ready = start.elapsed();
            if o.trace {
                eprintln!("{}: every pipeline ready after {:.1} ms", mode.name(), ms(r.all_ready));
            }
        }
    }
    let mut late = vec![false; n];
    // Ready (or failed): the frame draws with it (or without it) from now on.
    let mut done = vec![false; n];
    let mut ready_count = 0;
    let mut frame = 0;
    let mut tail_left = o.tail;
    loop {
        let frame_start = Instant::now();
        let used = ((frame + 1) * o.per_frame).min(n);
        // Pipelines that became usable this frame: drawn with at the end of the frame.
        let mut new = Vec::new();
        for i in 0..used {
            if done[i] {
                continue; // drawn with already, or failed
            }
            match mode {
                Mode::Compile => {
                    let at = Instant::now();
                    let p = archive.pipeline(i)?;
                    match loader.load(&p) {
                        Ok(l) => {
                            held[i] = Some(Arc::new(l));
                            new.push(i);
                        }
                        Err(_) => r.failed += 1,
                    }
                    r.created_on_frame_thread += at.elapsed();
                    done[i] = true;
                    ready_count += 1;
                }
                _ => match warmup.try_get(&tickets[i]) {
                    Status::Ready(l) => {
                        held[i] = Some(l);
                        new.push(i);
                        done[i] = true;
                        ready_count += 1;
                    }
                    Status::Pending => {
                        r.skipped_draws += 1;
                        if !late[i] {
                            late[i] = true;
                            r.late_pipelines += 1;
                            warmup.boost(&tickets[i], Priority::CRITICAL);
                        }
                    }
                    Status::Failed(_) | Status::Absent => {
                        r.failed += 1;
                        done[i] = true;
                        ready_count += 1;
                    }
                },
            }
        }
        let drawing = Instant::now();
        drawer.begin()?;
        for i in new {
            if let (Some(l), Some(plan)) = (&held[i], &plans[i]) {
                if o.trace {
                    eprintln!("{} frame {frame}: drawing pipeline {i} ({:?})", mode.name(), l.source);
                }
                drawer.draw(l, plan, draw::Record::Draw)?;
                r.draws += 1;
            }
        }
        if o.trace {
            eprintln!("{} frame {frame}: submitting", mode.name());
        }
        drawer.finish()?;
        let drawing = drawing.elapsed();
        r.drawing += drawing;
        r.worst_drawing = r.worst_drawing.max(drawing);
        let took = frame_start.elapsed();
        r.frames += 1;
        r.worst_frame = r.worst_frame.max(took);
        if took > BUDGET {
            r.over_budget += 1;
        }
        if frame == 0 {
            r.time_to_first_frame = start.elapsed();
        }
        if r.all_ready.is_zero() && (if mode == Mode::Compile { ready_count >= n } else { warmup.progress().done() }) {
            r.all_ready = start.elapsed();
        }
        if ready_count >= n && r.all_drawn.is_zero() {
            r.all_drawn = start.elapsed();
        }
        frame += 1;
        if used == n && ready_count >= n {
            if tail_left == 0 {
                break;
            }
            tail_left -= 1;
        }
        if let Some(rest) = BUDGET.checked_sub(frame_start.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    if o.trace {
        eprintln!("{}: {} frames; destroying the workers, the drawer and the pipelines", mode.name(), r.frames);
    }
    drop(workers);
    drop(drawer);
    drop(held);
    if o.trace {
        eprintln!("{}: destroyed", mode.name());
    }
    Ok(r)
}

/// The pixel check's figures.
#[derive(Debug, Default)]
struct PixelReport {
    /// Pipelines sampled.
    sampled: usize,
    /// Of those, drawn and compared (the SPIR-V pipeline's two images equal).
    compared: usize,
    /// Compared with the pipeline the archive's loader made from the archive's driver binaries.
    from_binaries: usize,
    /// Compared with the pipeline the archive's loader compiled with a pipeline-cache hit
    /// (the archive's cache data for this device).
    from_cache: usize,
    /// Compared and equal byte for byte.
    equal: usize,
    /// Compared, and some output differs from the same draw recorded without its draw call:
    /// the pipeline drew (or wrote) something.
    drew_something: usize,
    /// Compared, and every output is what it is without the draw call (a discard, a cull, a
    /// test every fragment fails, with this module's inputs).
    blank: Vec<String>,
    /// Labels whose outputs differ.
    differ: Vec<String>,
    /// Two draws with the pipeline compiled from SPIR-V differed (atomics, races): not compared.
    nondeterministic: Vec<String>,
    /// Not drawable here, with why.
    not_drawable: Vec<(String, String)>,
    /// Either loader failed to create it, with the error.
    failed: Vec<(String, String)>,
}

/// For `sample` pipelines spread evenly over the archive (pipeline `k * n / sample`): the outputs of a draw (or dispatch) with
/// the pipeline as the loader creates it (from the archive's binaries where it has them for
/// this device, else from SPIR-V with the archive's cache data), against the same draw with the
/// pipeline compiled from SPIR-V by a loader that uses neither binaries nor the archive's cache
/// data. The SPIR-V pipeline draws twice first: where those two differ the pipeline's output is
/// not a function of its inputs (atomics, races) and it is not compared. Each draw is a batch
/// of its own (storage textures cleared, targets cleared).
fn check_pixels(
    archive: &Arc<Archive>,
    gpu: &Arc<Gpu>,
    sample: usize,
) -> Result<PixelReport, Box<dyn std::error::Error>> {
    let n = archive.len();
    let mut out = PixelReport::default();
    let archived = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default())?;
    let compiled = PipelineLoader::new(
        archive.clone(),
        gpu.clone(),
        LoaderOptions { use_binaries: false, use_archive_cache: false, ..LoaderOptions::default() },
    )?;
    let mut drawer = draw::Drawer::new(gpu.clone())?;
    let mut labels = std::collections::HashMap::new();
    for (label, i) in archive.labels()? {
        labels.entry(i).or_insert_with(|| label.to_string());
    }
    let sample = sample.min(n);
    for i in (0..sample).map(|k| k * n / sample) {
        let p = archive.pipeline(i)?;
        let label = labels.get(&i).cloned().unwrap_or_else(|| p.key().to_hex());
        out.sampled += 1;
        let plan = match drawer.plan(&p) {
            Ok(plan) => plan,
            Err(why) => {
                out.not_drawable.push((label, why));
                continue;
            }
        };
        let (a, b) = match (archived.load(&p), compiled.load(&p)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                out.failed.push((label, e.to_string()));
                continue;
            }
        };
        use draw::Record::{DrawAndRead, ReadWithoutDrawing};
        // SPIR-V twice, from the archive, and SPIR-V without the draw call.
        let mut images = Vec::new();
        for (l, how) in [(&b, DrawAndRead), (&b, DrawAndRead), (&a, DrawAndRead), (&b, ReadWithoutDrawing)] {
            drawer.begin()?;
            drawer.draw(l, &plan, how)?;
            images.push(drawer.finish()?.into_iter().next().ok_or("a batch without its draw")?);
        }
        if images[0] != images[1] {
            out.nondeterministic.push(label);
            continue;
        }
        out.compared += 1;
        match a.source {
            Source::Binaries => out.from_binaries += 1,
            Source::CacheHit => out.from_cache += 1,
            Source::Compiled => {}
        }
        if images[0] != images[3] {
            out.drew_something += 1;
        } else {
            out.blank.push(label.clone());
        }
        if images[2] == images[0] {
            out.equal += 1;
        } else {
            out.differ.push(label);
        }
    }
    Ok(out)
}

/// `d` in milliseconds.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Each mode's figures, in the order run, and the pixel check's (with `--check`).
type Reports = (Vec<(Mode, Report)>, Option<PixelReport>);

/// Runs `modes` on `archive` (or the example) on the first device; one line per mode.
fn run(
    archive: Option<&std::path::Path>,
    modes: &[Mode],
    o: &Options,
) -> Result<Option<Reports>, Box<dyn std::error::Error>> {
    // The device as `granary harvest --backend vulkan` opens it (so an archive harvested there
    // matches it), under the validation layer with GRANARY_VALIDATE=1.
    let validate = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1");
    let backend = match VulkanBackend::open(&VulkanOptions { validate, ..Default::default() }) {
        Ok(b) => b,
        Err(e @ VulkanError::NoValidationLayer { .. }) => return Err(e.into()),
        Err(e) => {
            println!("SKIPPED: no Vulkan driver ({e})");
            return Ok(None);
        }
    };
    let gpu = backend.gpu().clone();
    let archive = Arc::new(match archive {
        Some(p) => Archive::open(p)?,
        None => draw::example_archive()?,
    });
    let mut out = Vec::new();
    for &mode in modes {
        let r = run_mode(&archive, &gpu, mode, o)?;
        println!(
            "mode={} device=\"{}\" pipelines={} per_frame={} workers={} frames={} over_budget={} worst_frame_ms={:.2} \
             created_on_frame_thread_ms={:.1} skipped_draws={} late_pipelines={} time_to_first_frame_ms={:.1} \
             all_ready_ms={:.1} all_drawn_ms={:.1} failed={} draws={} not_drawable={} drawing_ms={:.1} \
             worst_drawing_ms={:.2}",
            mode.name(),
            gpu.info.identity.device_name,
            archive.len(),
            o.per_frame,
            o.workers,
            r.frames,
            r.over_budget,
            ms(r.worst_frame),
            ms(r.created_on_frame_thread),
            r.skipped_draws,
            r.late_pipelines,
            ms(r.time_to_first_frame),
            ms(r.all_ready),
            ms(r.all_drawn),
            r.failed,
            r.draws,
            r.not_drawable,
            ms(r.drawing),
            ms(r.worst_drawing)
        );
        out.push((mode, r));
    }
    let pixels = if o.check > 0 {
        let p = check_pixels(&archive, &gpu, o.check)?;
        println!(
            "pixels device=\"{}\" sampled={} compared={} from_binaries={} from_cache={} equal={} drew_something={} \
             differ={} nondeterministic={} not_drawable={} failed={}",
            gpu.info.identity.device_name,
            p.sampled,
            p.compared,
            p.from_binaries,
            p.from_cache,
            p.equal,
            p.drew_something,
            p.differ.len(),
            p.nondeterministic.len(),
            p.not_drawable.len(),
            p.failed.len()
        );
        for l in &p.differ {
            println!("  differ: {l}");
        }
        for l in &p.nondeterministic {
            println!("  nondeterministic: {l}");
        }
        for l in &p.blank {
            println!("  drew nothing: {l}");
        }
        for (l, why) in p.not_drawable.iter().chain(&p.failed) {
            println!("  not compared: {l}: {why}");
        }
        Some(p)
    } else {
        None
    };
    drop(archive);
    drop(gpu);
    draw::validation_clean(&backend)?;
    Ok(Some((out, pixels)))
}

/// The command line.
const USAGE: &str = "frame_loop [ARCHIVE] [--mode all|compile|blocking|progressive] [--per-frame N (4)] \
                     [--workers N (2)] [--tail N (10)] [--check N (0: no pixel check)] [--trace] [--dictionary-binaries] [--share-binaries-from BYTES]";

/// `frame_loop [ARCHIVE] [--mode M] [--per-frame N] [--workers N] [--tail N] [--check N] [--trace]
/// [--dictionary-binaries] [--share-binaries-from BYTES]`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut archive = None;
    let mut modes = vec![Mode::Compile, Mode::Blocking, Mode::Progressive];
    let mut o = Options {
        per_frame: 4,
        workers: 2,
        tail: 10,
        check: 0,
        trace: false,
        dictionary_binaries: false,
        share_binaries_from: None,
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--mode" => {
                modes = match value()?.as_str() {
                    "all" => vec![Mode::Compile, Mode::Blocking, Mode::Progressive],
                    "compile" => vec![Mode::Compile],
                    "blocking" => vec![Mode::Blocking],
                    "progressive" => vec![Mode::Progressive],
                    m => return Err(format!("--mode {m}: all, compile, blocking or progressive").into()),
                }
            }
            "--per-frame" => o.per_frame = value()?.parse::<usize>()?.max(1),
            "--workers" => o.workers = value()?.parse::<usize>()?.max(1),
            "--tail" => o.tail = value()?.parse()?,
            "--check" => o.check = value()?.parse()?,
            "--trace" => o.trace = true,
            "--dictionary-binaries" => o.dictionary_binaries = true,
            "--share-binaries-from" => o.share_binaries_from = Some(value()?.parse()?),
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            p if !p.starts_with("--") && archive.is_none() => archive = Some(std::path::PathBuf::from(p)),
            other => return Err(format!("unknown argument {other}; usage: {USAGE}").into()),
        }
    }
    run(archive.as_deref(), &modes, &o)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_draws_every_pipeline_and_only_compile_creates_on_the_frame_thread() {
        let o = Options {
            per_frame: 40,
            workers: 2,
            tail: 2,
            check: 48,
            trace: false,
            dictionary_binaries: false,
            share_binaries_from: None,
        };
        let Some((out, pixels)) = run(None, &[Mode::Compile, Mode::Blocking, Mode::Progressive], &o).unwrap() else {
            assert!(
                std::env::var("GRANARY_REQUIRE_VULKAN").map_or(true, |v| v != "1"),
                "no Vulkan device and GRANARY_REQUIRE_VULKAN=1 requires one"
            );
            return;
        };
        let get = |m: Mode| &out.iter().find(|(x, _)| *x == m).unwrap().1;
        let (compile, blocking, progressive) = (get(Mode::Compile), get(Mode::Blocking), get(Mode::Progressive));
        for r in [compile, blocking, progressive] {
            assert_eq!(r.failed, 0, "{r:?}");
            assert!(!r.all_ready.is_zero(), "{r:?}");
            // Every pipeline of the bundled example is drawable here, and drawn once.
            assert_eq!((r.not_drawable, r.draws), (0, 335), "{r:?}");
            assert!(!r.drawing.is_zero() && r.worst_drawing <= r.drawing, "{r:?}");
        }
        // 335 pipelines, 40 a frame: 9 frames of first uses at least, then the tail.
        assert!(compile.frames >= 9 + 2, "{compile:?}");
        assert!(!compile.created_on_frame_thread.is_zero());
        // Only the compile mode creates on the frame thread; the others only poll.
        assert!(blocking.created_on_frame_thread.is_zero() && progressive.created_on_frame_thread.is_zero());
        assert_eq!(blocking.skipped_draws, 0, "blocking: everything ready before the first frame");
        // The first frame of a blocking warm waits for every pipeline; a progressive one does not.
        assert!(blocking.time_to_first_frame >= blocking.all_ready, "{blocking:?}");
        assert!(progressive.time_to_first_frame < blocking.time_to_first_frame, "{progressive:?} {blocking:?}");

        // The pixel check: every 7th pipeline (48 of 335). The example archive is compiled with
        // the `none` backend, so it holds neither driver binaries nor cache data for any device:
        // here both sides are compiled from the same SPIR-V (on lavapipe, which has no pipeline
        // binaries, so would a harvested archive's be). What this checks is the drawing itself
        // (validation-clean, deterministic, the pipelines draw) and that two creations of one
        // pipeline draw alike; images from binaries are compared where a harvested archive is
        // run on a device with binaries (scripts/device-frames.sh).
        let p = pixels.expect("--check 48 reports");
        assert_eq!(p.sampled, 48, "{p:?}");
        assert!(p.failed.is_empty() && p.not_drawable.is_empty(), "{p:?}");
        assert_eq!(p.compared + p.nondeterministic.len(), p.sampled, "{p:?}");
        assert!(p.compared >= 40, "too few compared: {p:?}");
        assert_eq!((p.from_binaries, p.from_cache), (0, 0), "an archive without device sections: {p:?}");
        assert!(p.differ.is_empty(), "the same pipeline drew differently: {p:?}");
        assert_eq!(p.equal, p.compared, "{p:?}");
        // Most compared pipelines put something in their outputs (on lavapipe 47 of 48; of all
        // 335, the 8 forward foliage pipelines draw nothing: their wind moves vertices off the
        // depth their `equal` test, made for a depth prepass, needs).
        assert!(p.drew_something * 10 >= p.compared * 9, "most should draw: {p:?}");
        assert_eq!(p.drew_something + p.blank.len(), p.compared, "{p:?}");
    }
}
