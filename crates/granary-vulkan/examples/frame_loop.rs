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
//! Per mode: frames, frames over budget, the worst frame, the time spent creating pipelines on
//! the frame thread, draws skipped (progressive), time to first frame, time until every
//! pipeline is created and time until every pipeline has been drawn with (which the first-use
//! schedule bounds: `per-frame` new ones each frame). A frame's time here is its pipeline work only: no command buffer is
//! recorded and nothing is drawn (a renderer that draws with every pipeline, and the pixel
//! comparison of binaries against SPIR-V, are not built). Each mode opens its own loader (a
//! fresh pipeline cache); run one mode per process on a driver with an in-process cache.
//!
//!     cargo run --release -p granary-vulkan --example frame_loop -- [ARCHIVE] [--mode all|compile|blocking|progressive]
//!         [--per-frame N] [--workers N] [--tail N]
//!
//! Without ARCHIVE: the bundled example compiled with the `none` backend (SPIR-V only). The
//! test below runs all three modes on it (lavapipe in CI). docs/BENCHMARKS.md has the figures.

use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_archive::vulkan::{Gpu, LoaderOptions, PipelineLoader, VulkanError};
use granary_archive::vulkan::{Loaded, Priority, Status, Warmup};
use granary_archive::{Archive, WriteEntry};
use granary_vulkan::{VulkanBackend, VulkanOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The frame budget: 60 frames a second.
const BUDGET: Duration = Duration::from_micros(16_600);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Compile,
    Blocking,
    Progressive,
}

impl Mode {
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
    frames: usize,
    over_budget: usize,
    worst_frame: Duration,
    /// Time inside pipeline creation on the frame thread.
    created_on_frame_thread: Duration,
    /// First-use draws skipped because the pipeline was not ready (progressive only).
    skipped_draws: usize,
    /// Distinct pipelines whose first use came before they were ready.
    late_pipelines: usize,
    time_to_first_frame: Duration,
    /// Until every pipeline was created (the warm-up done; in `compile`, the last first use).
    all_ready: Duration,
    /// Until every pipeline had been drawn with at least once (frame granularity).
    all_drawn: Duration,
    failed: usize,
}

struct Options {
    per_frame: usize,
    workers: usize,
    tail: usize,
}

fn run_mode(
    archive: &Arc<Archive>,
    gpu: &Arc<Gpu>,
    mode: Mode,
    o: &Options,
) -> Result<Report, Box<dyn std::error::Error>> {
    let n = archive.len();
    let mut r = Report::default();
    let start = Instant::now();
    let options = match mode {
        Mode::Compile => LoaderOptions { use_binaries: false, use_archive_cache: false, ..LoaderOptions::default() },
        _ => LoaderOptions::default(),
    };
    let loader = Arc::new(PipelineLoader::new(archive.clone(), gpu.clone(), options)?);
    let warmup = Warmup::new(loader.clone());
    let keys: Vec<_> = (0..n).map(|i| archive.pipeline(i).map(|p| p.key())).collect::<Result<_, _>>()?;
    let mut held: Vec<Option<Arc<Loaded>>> = vec![None; n];
    let mut tickets = Vec::new();
    let mut workers = None;
    if mode != Mode::Compile {
        tickets = keys.iter().map(|k| warmup.request(*k, Priority::NORMAL)).collect();
        workers = Some(warmup.spawn_workers(o.workers)?);
        if mode == Mode::Blocking {
            warmup.wait(&tickets, Duration::from_secs(3600));
            r.all_ready = start.elapsed();
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
        for i in 0..used {
            if done[i] {
                continue; // drawn with the pipeline it has
            }
            match mode {
                Mode::Compile => {
                    let at = Instant::now();
                    let p = archive.pipeline(i)?;
                    match loader.load(&p) {
                        Ok(l) => held[i] = Some(Arc::new(l)),
                        Err(_) => r.failed += 1,
                    }
                    r.created_on_frame_thread += at.elapsed();
                    done[i] = true;
                    ready_count += 1;
                }
                _ => match warmup.try_get(&tickets[i]) {
                    Status::Ready(l) => {
                        held[i] = Some(l);
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
    drop(workers);
    drop(held);
    Ok(r)
}

/// The bundled example compiled with the `none` backend.
fn example_archive() -> Result<Archive, Box<dyn std::error::Error>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json");
    let script = Script::load(&path)?;
    let compiler = Compiler::new(CompilerOptions::default());
    let mut entries = Vec::new();
    for p in script.pipelines {
        let Ok(desc) = p.descriptor else { continue };
        let label = desc.label().unwrap_or("unlabelled").to_string();
        entries.push(WriteEntry { entry: compiler.compile(&desc)?, labels: vec![label].into(), binaries: vec![] });
    }
    Ok(Archive::from_bytes(granary::archive::encode(&entries, &granary::archive::portable_meta()))?)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Each mode's figures, in the order run.
type Reports = Vec<(Mode, Report)>;

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
        None => example_archive()?,
    });
    let mut out = Vec::new();
    for &mode in modes {
        let r = run_mode(&archive, &gpu, mode, o)?;
        println!(
            "mode={} device=\"{}\" pipelines={} per_frame={} workers={} frames={} over_budget={} worst_frame_ms={:.2} \
             created_on_frame_thread_ms={:.1} skipped_draws={} late_pipelines={} time_to_first_frame_ms={:.1} \
             all_ready_ms={:.1} all_drawn_ms={:.1} failed={}",
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
            r.failed
        );
        out.push((mode, r));
    }
    drop(archive);
    drop(gpu);
    if let Some(log) = backend.validation() {
        let expected = std::env::var("GRANARY_VALIDATE_EXPECT").unwrap_or_default();
        let messages: Vec<String> = log
            .messages()
            .into_iter()
            .filter(|m| !expected.split(',').any(|id| id.trim() == m.id))
            .map(|m| format!("{} {}", m.id, m.text))
            .collect();
        if !messages.is_empty() {
            return Err(format!("the validation layer reported:\n{}", messages.join("\n")).into());
        }
    }
    Ok(Some(out))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut archive = None;
    let mut modes = vec![Mode::Compile, Mode::Blocking, Mode::Progressive];
    let mut o = Options { per_frame: 4, workers: 2, tail: 10 };
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
            p if !p.starts_with("--") && archive.is_none() => archive = Some(std::path::PathBuf::from(p)),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    run(archive.as_deref(), &modes, &o)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_uses_every_pipeline_and_only_compile_creates_on_the_frame_thread() {
        let o = Options { per_frame: 40, workers: 2, tail: 2 };
        let Some(out) = run(None, &[Mode::Compile, Mode::Blocking, Mode::Progressive], &o).unwrap() else {
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
    }
}
