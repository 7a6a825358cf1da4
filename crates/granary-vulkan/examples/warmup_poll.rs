//! How long `Warmup::try_get` takes on the frame's path while creations run on other threads:
//! the bundled example (335 pipelines, compiled from SPIR-V on the first Vulkan device, so
//! every creation is a real driver compile), requested at once and created by `WORKERS`
//! owned worker threads (default 2), while this thread polls every ticket in turn, timing
//! each poll, until all are ready. Prints the poll count and p50 / p99 / p99.9 / max, and the
//! loader's statistics. Release build: `cargo run --release -p granary-vulkan --example
//! warmup_poll` (docs/BENCHMARKS.md).

use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_archive::vulkan::{select_device, Driver, Gpu, LoaderOptions, OpenOptions, PipelineLoader};
use granary_archive::vulkan::{Priority, Status, Warmup};
use granary_archive::{Archive, WriteEntry};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json");
    let script = Script::load(&path)?;
    let compiler = Compiler::new(CompilerOptions::default());
    let mut entries = Vec::new();
    for p in script.pipelines {
        let Ok(desc) = p.descriptor else { continue };
        let label = desc.label().unwrap_or("unlabelled").to_string();
        entries.push(WriteEntry { entry: compiler.compile(&desc)?, labels: vec![label].into(), binaries: vec![] });
    }
    let archive = Archive::from_bytes(granary::archive::encode(&entries, &granary::archive::portable_meta()))?;
    let driver = Driver::load()?;
    let info = select_device(driver.physical_devices()?, None)?;
    let name = info.identity.device_name.clone();
    let gpu = Gpu::open(driver, info, OpenOptions { pipeline_binaries: false, ..OpenOptions::default() })?;
    let warmup = Warmup::new(Arc::new(PipelineLoader::new(archive, gpu, LoaderOptions::default())?));
    let tickets = warmup.request_prefix("", Priority::NORMAL)?;
    let workers: usize = std::env::var("WORKERS").ok().and_then(|w| w.parse().ok()).unwrap_or(2);
    let start = Instant::now();
    let pool = warmup.spawn_workers(workers)?;
    let mut polls: Vec<Duration> = Vec::with_capacity(1 << 20);
    let mut ready = vec![false; tickets.len()];
    let mut left = tickets.len();
    while left > 0 {
        for (t, done) in tickets.iter().zip(ready.iter_mut()) {
            if *done {
                continue;
            }
            let at = Instant::now();
            let status = warmup.try_get(t);
            polls.push(at.elapsed());
            if !matches!(status, Status::Pending) {
                *done = true;
                left -= 1;
            }
        }
    }
    let wall = start.elapsed();
    drop(pool);
    polls.sort();
    let q = |f: f64| polls[((polls.len() as f64 * f) as usize).min(polls.len() - 1)];
    println!(
        "device: {name}; {} pipelines, {workers} workers, all ready in {:.2} s",
        tickets.len(),
        wall.as_secs_f64()
    );
    println!(
        "try_get while creating: {} polls, p50 {:?}, p99 {:?}, p99.9 {:?}, max {:?}",
        polls.len(),
        q(0.5),
        q(0.99),
        q(0.999),
        polls[polls.len() - 1]
    );
    println!("warm-up: {:?}", warmup.stats());
    println!("loader: {:?}", warmup.loader().stats());
    Ok(())
}
