//! `granary warm`: create every pipeline of an archive on the local Vulkan device, from its
//! driver binaries where the archive holds them for this exact device, and say how each was
//! made.

use anyhow::Context;
use granary::measure::peak_rss_bytes;
use granary_archive::vulkan::validation::DriverOptions;
use granary_archive::vulkan::{
    select_device, Driver, Gpu, LoadError, LoaderOptions, OpenOptions, PipelineLoader, SidecarStatus, Source,
};
use granary_archive::Archive;
use granary_archive::TextureFormat;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(clap::Args)]
#[command(after_help = "\
Each pipeline is made one of three ways, and the report says which:
  binaries   the archive holds driver binaries for this exact device (granary devices shows
             its identity); vkCreatePipelineBinariesKHR accepted them and the pipeline was
             created from them: no compile. Drivers report only VALID in
             VK_EXT_pipeline_creation_feedback for these, so the evidence is the driver's
             acceptance and the creation time.
  cache-hit  compiled from the archive's SPIR-V and the driver reported a pipeline-cache hit.
  compiled   compiled from SPIR-V (no binaries for this device, or none usable).

On a device the archive was not built for, warm says \"built for X, this device is Y\" and
stops, unless --fallback compile: then it compiles every pipeline from SPIR-V. Run it after a
driver update to check that a shipped archive still matches.

Examples:
  granary warm game.granary
  granary warm game.granary -j 16 --json > warm.json
  granary warm game.granary --source spirv --pipeline-cache-out warm.cache   # the classic baseline
  granary warm game.granary --source spirv --pipeline-cache-in warm.cache    # warm VkPipelineCache")]
pub struct WarmArgs {
    /// The archive.
    archive: PathBuf,
    /// The device, by index or part of its name (`granary devices` lists them) [default: 0].
    #[arg(long, value_name = "N|NAME")]
    device: Option<String>,
    /// Threads creating pipelines at once [default: available cores].
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
    /// What to create pipelines from. auto: this device's binaries where the archive has
    /// them, else its SPIR-V with the archive's pipeline-cache data for this device. binaries:
    /// only binaries (a pipeline without is an error unless --fallback compile). cache: SPIR-V
    /// with the archive's pipeline-cache data. spirv: SPIR-V with an empty pipeline cache (or
    /// --pipeline-cache-in). With auto and binaries, an archive for another device and a
    /// damaged or refused binary follow --fallback.
    #[arg(long, value_enum, default_value = "auto")]
    source: SourceArg,
    /// What to do where the archive has nothing valid for this device (another GPU or driver
    /// version, a damaged binary, one the driver refuses): fail, or compile from SPIR-V.
    #[arg(long, value_enum, default_value = "fail")]
    fallback: FallbackArg,
    /// Seed the compile path's VkPipelineCache with this file (vkGetPipelineCacheData bytes),
    /// merged with the archive's pipeline-cache data where --source uses it (auto, cache);
    /// with --source spirv it is the only seed. Its header must be this device's (vendor, device, pipelineCacheUUID): otherwise warm
    /// stops, naming the field (exit 2), and the driver never sees the bytes.
    #[arg(long, value_name = "FILE")]
    pipeline_cache_in: Option<PathBuf>,
    /// Refuse the archive unless it is signed by the public key in FILE (`granary sign
    /// --generate-key NAME` writes NAME.pub): unsigned, another key's or changed archives stop
    /// before any pipeline is created (exit 2), as a game's loader with
    /// `LoaderOptions::require_signature` does.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Write the compile path's VkPipelineCache data to this file at the end.
    #[arg(long, value_name = "FILE")]
    pipeline_cache_out: Option<PathBuf>,
    /// The after-update sidecar a game's loader keeps (LoaderOptions::sidecar, docs/FORMAT.md
    /// §7): read first when it exists and was written on this device (merged into the compile
    /// path's cache; damaged or another device's, it is refused, named, and never reaches the
    /// driver), and written at the end when the archive holds nothing for this device (with
    /// --fallback compile after a driver update). The archive itself is never written.
    #[arg(long, value_name = "FILE")]
    sidecar: Option<PathBuf>,
    /// Format for colour attachments the archive left unspecialized (pipelines captured as
    /// libraries are linked with it), e.g. bgra8unorm; repeat for attachment 1, 2, ….
    #[arg(long, value_name = "FORMAT", default_value = "rgba8unorm", value_parser = parse_format)]
    link_format: Vec<TextureFormat>,
    /// Create every pipeline this many times (a fresh loader each pass); each pass's wall
    /// time is reported, the per-pipeline figures are the last pass's.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Pipelines archived as libraries: create them from their binaries and link (binaries;
    /// except on a device section carrying NVIDIA's dictionary — a binary of 64 KiB or more
    /// that several pipelines share —, where every library part is compiled: NVIDIA 580
    /// crashes linking such libraries, and creating any of that section's libraries from
    /// binaries on several threads), from every set's binaries whatever the section holds
    /// (binaries-all), or compile every library part from SPIR-V and link (compile).
    /// docs/BENCHMARKS.md has the driver bug.
    #[arg(long, value_enum, default_value = "binaries")]
    libraries: LibrariesArg,
    /// Open the device without graphics pipeline libraries (as an application that does not
    /// enable them would): pipelines archived as libraries are then created whole, with the
    /// link formats, from SPIR-V (their library binaries cannot be used; `fell_back` says so).
    #[arg(long)]
    no_pipeline_libraries: bool,
    /// Create whole pipelines from binary sets that carry NVIDIA's dictionary (a binary of at
    /// least 64 KiB that other pipelines' sets share) instead of compiling them: drawing with
    /// such a pipeline crashes NVIDIA 580.159, so the loader declines them by default
    /// (`fell_back` counts them). For measuring what those binaries cost.
    #[arg(long)]
    dictionary_binaries: bool,
    /// Binaries of at least this many bytes are created once and shared between pipelines;
    /// smaller ones are created per pipeline (0: share every binary).
    #[arg(long, hide = true, default_value_t = 64 << 10)]
    share_binaries_from: usize,
    /// Diagnostics: print each pipeline's index and binary count to stderr before creating it.
    #[arg(long, hide = true)]
    trace_each: bool,
    /// Keep every pipeline of a pass alive until the pass ends, as a game holds what it
    /// created, instead of destroying each one as soon as it is made (the default: warm then
    /// measures creation with little driver memory in use).
    #[arg(long)]
    hold: bool,
    /// Print JSON: the summary and one record per pipeline.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    validate: super::validation::ValidateArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SourceArg {
    Auto,
    Binaries,
    Cache,
    Spirv,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LibrariesArg {
    Binaries,
    BinariesAll,
    Compile,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FallbackArg {
    Fail,
    Compile,
}

fn parse_format(s: &str) -> Result<TextureFormat, String> {
    TextureFormat::from_name(s).ok_or_else(|| format!("unknown texture format '{s}'"))
}

/// One pipeline's result.
struct Record {
    index: usize,
    result: Result<Made, String>,
}

struct Made {
    source: Source,
    linked: bool,
    variant: bool,
    binaries: usize,
    driver: Duration,
    total: Duration,
    feedback: u32,
    fallback_reason: Option<String>,
}

struct Pass {
    records: Vec<Record>,
    wall: Duration,
    cpu: Duration,
}

fn pass(loader: &PipelineLoader, archive: &Archive, threads: usize, trace: bool, hold: bool) -> Pass {
    let n = archive.len();
    let out = Mutex::new(Vec::with_capacity(n));
    // With `hold`: every pipeline made, destroyed only after the pass's timing.
    let held = Mutex::new(Vec::with_capacity(if hold { n } else { 0 }));
    let timing = granary_lab::bench::parallel(n, threads, |i| {
        if trace {
            eprintln!("warm: creating pipeline {i}");
        }
        let result = archive.pipeline(i).map_err(LoadError::from).and_then(|p| loader.load(&p));
        if trace {
            eprintln!("warm: pipeline {i}: {}", result.as_ref().map_or("failed", |l| l.source.name()));
        }
        // The pipeline is destroyed here (dropped with `l`) unless held: warm measures
        // creation, and keeps no driver memory growing with the archive.
        let result = result
            .map(|l| {
                let made = Made {
                    source: l.source,
                    linked: l.linked,
                    variant: l.variant,
                    binaries: l.binaries,
                    driver: l.driver_time,
                    total: l.total_time,
                    feedback: l.feedback,
                    fallback_reason: l.fallback_reason.clone(),
                };
                if hold {
                    held.lock().unwrap_or_else(|p| p.into_inner()).push(l);
                }
                made
            })
            .map_err(|e| e.to_string());
        out.lock().unwrap_or_else(|p| p.into_inner()).push(Record { index: i, result });
    });
    drop(held);
    let mut records = out.into_inner().unwrap_or_else(|p| p.into_inner());
    records.sort_by_key(|r| r.index);
    Pass { records, wall: timing.wall, cpu: timing.cpu }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn run(a: WarmArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(a.jobs != Some(0), "-j must be at least 1");
    let validation = a.validate.policy();
    let driver = Driver::load_with(DriverOptions { validation: validation.on })?;
    let log = driver.validation().cloned();
    // Every Vulkan object (the driver included) is destroyed when `warm` returns, so the
    // layer's messages about destruction are in the report too.
    let result = warm(&a, driver);
    let report = log.map(|log| validation.finish(&log));
    let (code, json) = result?;
    if let Some(mut v) = json {
        super::validation::add_report(report.as_ref(), &mut v);
        super::output::print_json(&v)?;
    }
    Ok(if report.is_some_and(|r| r.failed) { code.max(1) } else { code })
}

/// The command on `driver`: its exit status and, with `--json`, what to print.
fn warm(a: &WarmArgs, driver: Arc<Driver>) -> anyhow::Result<(i32, Option<serde_json::Value>)> {
    let archive =
        std::sync::Arc::new(Archive::open(&a.archive).with_context(|| format!("opening {}", a.archive.display()))?);
    let info = select_device(driver.physical_devices()?, a.device.as_deref())?;
    // The compile paths open the device as an application without granary would: without
    // VK_KHR_pipeline_binary (the baseline a developer writes uses a VkPipelineCache only).
    let binaries = matches!(a.source, SourceArg::Auto | SourceArg::Binaries);
    let gpu = Gpu::open(
        driver,
        info,
        OpenOptions { pipeline_binaries: binaries, libraries: !a.no_pipeline_libraries, ..OpenOptions::default() },
    )?;
    let identity = gpu.identity();
    let initial_cache = match &a.pipeline_cache_in {
        Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
        None => None,
    };
    let options = LoaderOptions {
        link_formats: a.link_format.clone(),
        use_binaries: matches!(a.source, SourceArg::Auto | SourceArg::Binaries),
        fallback_compile: a.fallback == FallbackArg::Compile || matches!(a.source, SourceArg::Cache | SourceArg::Spirv),
        require_binaries: a.source == SourceArg::Binaries && a.fallback == FallbackArg::Fail,
        library_binaries: a.libraries != LibrariesArg::Compile,
        link_shared_library_binaries: a.libraries == LibrariesArg::BinariesAll,
        whole_dictionary_binaries: a.dictionary_binaries,
        share_binaries_from: a.share_binaries_from,
        use_archive_cache: matches!(a.source, SourceArg::Auto | SourceArg::Cache),
        initial_cache,
        sidecar: a.sidecar.clone(),
        require_signature: match &a.key {
            Some(p) => Some(granary_archive::PublicKey::read(p).with_context(|| format!("reading {}", p.display()))?),
            None => None,
        },
        ..LoaderOptions::default()
    };
    let threads = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);

    // The identity check comes before any pipeline: an archive for another device or driver
    // is reported as such, and (without --fallback compile) nothing is created.
    let probe = PipelineLoader::new(archive.clone(), gpu.clone(), options.clone())?;
    let mismatch = probe.mismatch().map(|m| m.to_string());
    let has_binaries = probe.has_binaries();
    let cache_blobs = probe.cache_blobs();
    let sidecar_read = match probe.sidecar() {
        SidecarStatus::Off => None,
        SidecarStatus::Absent => Some("absent".to_string()),
        SidecarStatus::Loaded { bytes, same_archive: true } => Some(format!("loaded {bytes} bytes")),
        SidecarStatus::Loaded { bytes, .. } => Some(format!("loaded {bytes} bytes (written for another archive)")),
        SidecarStatus::Refused { why } => {
            eprintln!("granary: sidecar refused: {why}");
            Some(format!("refused: {why}"))
        }
        other => Some(format!("{other:?}")),
    };
    let needs_sidecar = probe.needs_sidecar();
    // Archive cache blobs whose header is not this device's never reach the driver.
    let skipped_caches: Vec<String> =
        probe.skipped_caches().iter().map(|(i, why)| format!("pipeline-cache blob {i}: {why}")).collect();
    for s in &skipped_caches {
        eprintln!("granary: skipped {s}");
    }
    // The probe is the first pass's loader; each further pass gets a fresh one.
    let mut probe = Some(probe);
    if let Some(m) = &mismatch {
        if a.fallback == FallbackArg::Fail && matches!(a.source, SourceArg::Auto | SourceArg::Binaries) {
            let json = a.json.then(|| {
                serde_json::json!({
                    "archive": a.archive.display().to_string(),
                    "device": identity.describe(),
                    "matches_device": false,
                    "mismatch": m,
                    "pipelines": archive.len(),
                    "created": 0,
                })
            });
            eprintln!("granary: {m}");
            eprintln!("granary: nothing created; run with --fallback compile to compile every pipeline from the archive's SPIR-V");
            // Could not run (2): the archive is not for this device, nothing was tried.
            return Ok((2, json));
        }
    }

    if a.source == SourceArg::Binaries && a.fallback == FallbackArg::Fail && !has_binaries && mismatch.is_none() {
        let why = if gpu.captures_binaries() {
            "the archive holds pipeline-cache data, not binaries, for this device"
        } else {
            "this device has no VK_KHR_pipeline_binary"
        };
        eprintln!(
            "granary: --source binaries: {why}; nothing created (--source auto or --fallback compile compiles instead)"
        );
        return Ok((1, None));
    }

    let mut walls = Vec::new();
    let mut last = None;
    let mut cache_bytes = None;
    let mut key_mismatches = 0;
    let mut sidecar_written = None;
    for _ in 0..a.repeat.max(1) {
        let loader = match probe.take() {
            Some(l) => l,
            None => PipelineLoader::new(archive.clone(), gpu.clone(), options.clone())?,
        };
        let p = pass(&loader, &archive, threads, a.trace_each, a.hold);
        key_mismatches = loader.key_mismatches();
        walls.push(p.wall.as_secs_f64());
        if let Some(path) = &a.pipeline_cache_out {
            let data = loader.cache_data()?;
            granary_archive::write_atomic(path, &data).with_context(|| format!("writing {}", path.display()))?;
            cache_bytes = Some(data.len());
        }
        if needs_sidecar && sidecar_written.is_none() {
            sidecar_written = Some(loader.save_sidecar()?);
        }
        last = Some(p);
    }
    let Some(p) = last else { return Ok((2, None)) };

    let labels = archive.labels()?;
    let mut names: Vec<Option<&str>> = vec![None; archive.len()];
    for (l, i) in &labels {
        if let Some(slot) = names.get_mut(*i) {
            slot.get_or_insert(l);
        }
    }
    let count = |s: Source| p.records.iter().filter(|r| r.result.as_ref().is_ok_and(|m| m.source == s)).count();
    let (from_binaries, cache_hits, compiled) =
        (count(Source::Binaries), count(Source::CacheHit), count(Source::Compiled));
    let failed = p.records.iter().filter(|r| r.result.is_err()).count();
    let fell_back = p.records.iter().filter(|r| r.result.as_ref().is_ok_and(|m| m.fallback_reason.is_some())).count();
    let linked = p.records.iter().filter(|r| r.result.as_ref().is_ok_and(|m| m.linked)).count();
    let variants = p.records.iter().filter(|r| r.result.as_ref().is_ok_and(|m| m.variant)).count();
    let n = p.records.len();
    let mut totals: Vec<f64> =
        p.records.iter().filter_map(|r| r.result.as_ref().ok()).map(|m| m.total.as_secs_f64() * 1e6).collect();
    totals.sort_by(f64::total_cmp);
    let mut drivers: Vec<f64> =
        p.records.iter().filter_map(|r| r.result.as_ref().ok()).map(|m| m.driver.as_secs_f64() * 1e6).collect();
    drivers.sort_by(f64::total_cmp);
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let hit_rate = if n == 0 { 0.0 } else { (from_binaries + cache_hits) as f64 / n as f64 };
    let why_no_binaries = if has_binaries {
        None
    } else if let Some(m) = &mismatch {
        Some(m.clone())
    } else if !gpu.captures_binaries() {
        Some("this device has no VK_KHR_pipeline_binary".to_string())
    } else if !options.use_binaries {
        Some(format!("--source {}", if a.source == SourceArg::Cache { "cache" } else { "spirv" }))
    } else {
        Some("the archive holds pipeline-cache data, not binaries, for this device".to_string())
    };

    let mut json = None;
    if a.json {
        let records: Vec<serde_json::Value> = p
            .records
            .iter()
            .map(|r| {
                let key = archive.pipeline(r.index).map(|p| p.key().to_hex()).unwrap_or_default();
                match &r.result {
                    Ok(m) => serde_json::json!({
                        "label": names[r.index],
                        "key": key,
                        "source": m.source.name(),
                        "linked": m.linked,
                        "variant": m.variant,
                        "binaries": m.binaries,
                        "driver_us": m.driver.as_secs_f64() * 1e6,
                        "total_us": m.total.as_secs_f64() * 1e6,
                        "feedback_valid": m.feedback & granary_archive::vulkan::FEEDBACK_VALID != 0,
                        "feedback_cache_hit": m.feedback & granary_archive::vulkan::FEEDBACK_CACHE_HIT != 0,
                        "fallback_reason": m.fallback_reason,
                    }),
                    Err(e) => serde_json::json!({ "label": names[r.index], "key": key, "error": e }),
                }
            })
            .collect();
        json = Some(serde_json::json!({
                "archive": a.archive.display().to_string(),
                "device": identity.describe(),
                "matches_device": mismatch.is_none(),
                "mismatch": mismatch,
                "device_has_pipeline_binaries": gpu.captures_binaries(),
                "archive_has_binaries_for_device": has_binaries,
                "why_no_binaries": why_no_binaries,
                "cache_seeded": cache_blobs > 0,
                "cache_blobs": cache_blobs,
                "cache_blobs_skipped": skipped_caches,
                "key_mismatches": key_mismatches,
                "threads": threads,
                "held": a.hold,
                "pipelines": n,
                "created": n - failed,
                "from_binaries": from_binaries,
                "cache_hits": cache_hits,
                "compiled": compiled,
                "failed": failed,
                "fell_back": fell_back,
                "linked": linked,
                "whole_variants": variants,
                "hit_rate": hit_rate,
                "wall_seconds": p.wall.as_secs_f64(),
                "wall_seconds_per_pass": walls,
                "cpu_seconds": p.cpu.as_secs_f64(),
                "per_pipeline_us": {
                    "mean": mean(&totals), "p50": percentile(&totals, 0.5), "p99": percentile(&totals, 0.99),
                    "max": totals.last().copied().unwrap_or(0.0),
                },
                "driver_us": { "mean": mean(&drivers), "p50": percentile(&drivers, 0.5), "p99": percentile(&drivers, 0.99) },
                "pipeline_cache_out_bytes": cache_bytes,
                "sidecar": a.sidecar.as_ref().map(|path| serde_json::json!({
                    "path": path.display().to_string(),
                    "read": sidecar_read,
                    "written_bytes": sidecar_written,
                })),
                "peak_rss_bytes": peak_rss_bytes(),
                "records": records,
        }));
    } else {
        outln!("device: {}", identity.describe());
        if let Some(read) = &sidecar_read {
            let written = sidecar_written.map(|b| format!(", wrote {b} bytes of cache data")).unwrap_or_default();
            outln!("sidecar: {read}{written}");
        }
        if let Some(why) = &why_no_binaries {
            outln!("no binaries used: {why}");
        }
        outln!(
            "{n} pipelines on {threads} threads in {:.3} s: {from_binaries} from binaries, {cache_hits} cache hits, \
             {compiled} compiled, {failed} failed (hit rate {:.1}%)",
            p.wall.as_secs_f64(),
            hit_rate * 100.0
        );
        outln!(
            "per pipeline: mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs (driver p50 {:.1} µs); {linked} linked from libraries",
            mean(&totals),
            percentile(&totals, 0.5),
            percentile(&totals, 0.99),
            percentile(&drivers, 0.5)
        );
        if variants > 0 {
            outln!(
                "{variants} library pipelines created as their whole variant for the link formats (--whole-variants)"
            );
        }
        if fell_back > 0 {
            outln!("{fell_back} pipelines fell back to compiling (see --json for the reasons)");
        }
        for r in p.records.iter().filter(|r| r.result.is_err()).take(20) {
            if let Err(e) = &r.result {
                outln!("  failed: {e}");
            }
        }
    }
    Ok((if failed > 0 { 1 } else { 0 }, json))
}
