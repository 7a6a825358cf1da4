//! Where a Vulkan harvest's memory goes: compiles a script's pipelines on the device from N
//! threads and prints the process's resident memory as it grows, the distinct captured binary
//! bytes granary holds, then the resident memory after the binary sets are dropped and after
//! the device is destroyed. Separates granary's own memory from the driver's.
//!
//!     cargo run --release -p granary-vulkan --example memory -- SCRIPT [THREADS] [DEVICE]
//!
//! The binary sets are kept as a harvest keeps them (through the `Backend` trait, which
//! interns their bytes).

use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_vulkan::{VulkanBackend, VulkanOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn rss_mib() -> u64 {
    granary::measure::current_rss_bytes() >> 20
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let script = Script::load(std::path::Path::new(args.get(1).ok_or("usage: memory SCRIPT [THREADS] [DEVICE]")?))?;
    let threads: usize = args.get(2).map_or(Ok(16), |s| s.parse())?;
    let backend = Arc::new(VulkanBackend::open(&VulkanOptions { device: args.get(3).cloned(), ..Default::default() })?);
    let compiler = Compiler::new(CompilerOptions { max_concurrent_tasks: Some(threads), ..Default::default() });
    let pipelines: Vec<_> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    println!("start: rss {} MiB, {} pipelines, {threads} threads", rss_mib(), pipelines.len());
    let next = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let step = (pipelines.len() / 8).max(1);
    let kept = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(desc) = pipelines.get(i) else { return };
                let fs: Result<Vec<_>, _> =
                    desc.stages().iter().map(|(st, f)| compiler.frontend().function(f, *st)).collect();
                let ok = fs.ok().and_then(|fs| {
                    let layout = granary::backend::merge_layout(desc, &fs).ok()?;
                    granary::backend::Backend::compile(&*backend, desc, &fs, &layout).ok().flatten()
                });
                match ok {
                    Some(set) => kept.lock().unwrap_or_else(|p| p.into_inner()).push(set),
                    None => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                if (i + 1).is_multiple_of(step) {
                    println!(
                        "after {:>6} pipelines: rss {:>6} MiB (peak {:>6}), distinct binary bytes held {:>5} MiB",
                        i + 1,
                        rss_mib(),
                        granary::measure::peak_rss_bytes() >> 20,
                        backend.interned_bytes() >> 20
                    );
                }
            });
        }
    });
    let s = granary::backend::Backend::report(&*backend).ok_or("no report")?;
    println!(
        "done: {} failed; {} binaries, {} MiB captured before interning, {} MiB distinct held; rss {} MiB",
        failed.load(Ordering::Relaxed),
        s.binaries,
        s.binary_bytes >> 20,
        backend.interned_bytes() >> 20,
        rss_mib()
    );
    drop(kept);
    println!("binary sets dropped: rss {} MiB", rss_mib());
    drop(backend);
    println!("device destroyed: rss {} MiB", rss_mib());
    Ok(())
}
