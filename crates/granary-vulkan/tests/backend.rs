//! The backend on a real driver, through its library API: every pipeline of the bundled
//! example, one shader module per stage function, and many threads creating pipelines that
//! share shader modules while another thread reads the pipeline cache.
//!
//! Without a Vulkan driver each test prints one `SKIPPED` line, unless
//! `GRANARY_REQUIRE_VULKAN=1` (set by `.ci/run`) makes that a failure. Under
//! `GRANARY_VALIDATE=1` (also set there) the backend runs under the validation layer and each
//! test fails on any message the layer reports (`support::assert_clean`).

mod support;

use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::PipelineDescriptor;
use granary::frontend::StageFunction;
use granary::script::Script;
use granary_vulkan::VulkanBackend;
use std::path::Path;
use std::sync::Arc;

fn backend() -> Option<VulkanBackend> {
    support::backend()
}

/// The example's valid pipelines with their stage functions and layouts.
fn example() -> Vec<(PipelineDescriptor, Vec<Arc<StageFunction>>, granary::descriptor::PipelineLayout)> {
    let script = Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json"))
        .expect("example script");
    let compiler = Compiler::new(CompilerOptions::default());
    script
        .pipelines
        .into_iter()
        .map(|p| {
            let desc = p.descriptor.expect("valid");
            let fs: Vec<_> =
                desc.stages().iter().map(|(s, f)| compiler.frontend().function(f, *s).expect("compiles")).collect();
            let layout = granary::backend::merge_layout(&desc, &fs).expect("links");
            (desc, fs, layout)
        })
        .collect()
}

#[test]
fn the_backend_is_send_and_sync() {
    fn assert<T: Send + Sync>() {}
    assert::<VulkanBackend>();
}

#[test]
fn every_example_pipeline_is_created_with_one_module_per_stage_function() {
    let Some(b) = backend() else { return };
    let pipelines = example();
    let unique: std::collections::HashSet<_> =
        pipelines.iter().flat_map(|(_, fs, _)| fs.iter().map(|f| f.key)).collect();
    let mut libraries = 0;
    for (desc, fs, layout) in &pipelines {
        let c = b.create_pipeline(desc, fs, layout).unwrap_or_else(|e| panic!("{:?}: {e}", desc.label()));
        assert_eq!(c.library, desc.needs_libraries());
        assert_eq!(c.binaries.is_empty(), !b.captures_binaries());
        libraries += usize::from(c.library);
    }
    let s = granary::backend::Backend::report(&b).expect("a device backend reports");
    assert_eq!(s.shader_modules as usize, unique.len(), "one VkShaderModule per unique stage function");
    assert_eq!((s.pipelines_created + s.libraries_created) as usize, pipelines.len());
    assert_eq!(s.libraries_created as usize, libraries);
    assert!(b.uses_libraries() || libraries == 0);
    let log = b.validation().cloned();
    drop(b);
    support::assert_clean(log);
}

/// The report's pattern on a real driver: 8 threads creating pipelines that share vertex
/// shader modules (each module created once, on first use, by whichever thread gets there),
/// while another thread reads the pipeline cache throughout. No errors, and every pipeline's
/// result is the same kind as when compiled alone.
#[test]
fn threads_sharing_shader_modules_while_the_cache_is_read() {
    let Some(b) = backend() else { return };
    let pipelines = Arc::new(example());
    let b = Arc::new(b);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (b, done) = (b.clone(), done.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                b.cache_data().expect("cache data while compiling");
                reads += 1;
            }
            reads
        })
    };
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (b, pipelines, next) = (b.clone(), pipelines.clone(), next.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((desc, fs, layout)) = pipelines.get(i) else { return n };
                    b.create_pipeline(desc, fs, layout).unwrap_or_else(|e| panic!("{:?}: {e}", desc.label()));
                    n += 1;
                }
            })
        })
        .collect();
    let compiled: usize = workers.into_iter().map(|w| w.join().expect("no panic")).sum();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().expect("reader") > 0);
    assert_eq!(compiled, pipelines.len());
    let unique: std::collections::HashSet<_> =
        pipelines.iter().flat_map(|(_, fs, _)| fs.iter().map(|f| f.key)).collect();
    assert_eq!(granary::backend::Backend::report(&*b).map(|r| r.shader_modules as usize), Some(unique.len()));
    let log = b.validation().cloned();
    drop(b);
    support::assert_clean(log);
}

/// `VulkanBackend::open_with` on an instance the caller made (what `harvest --capture auto`
/// hands over after looking at the device): the same device, pipelines created on it, the
/// instance shared rather than made again; and a validated open never takes an instance made
/// without the layer (it loads its own, whose log collects the messages).
#[test]
fn a_backend_opens_on_an_instance_the_caller_made() {
    let Some(plain) = backend() else { return };
    let driver = granary_archive::vulkan::Driver::load().expect("the driver loaded for the backend loads again");
    let options = granary_vulkan::VulkanOptions::default();
    let b = VulkanBackend::open_with(Some(driver.clone()), &options).expect("opens on the given instance");
    assert_eq!(b.identity(), plain.identity(), "the same device as a backend that loaded its own");
    assert!(Arc::strong_count(&driver) > 1, "the backend holds the given instance");
    let (desc, fs, layout) = example().into_iter().next().expect("a pipeline");
    b.create_pipeline(&desc, &fs, &layout).unwrap_or_else(|e| panic!("{:?}: {e}", desc.label()));
    drop(b);
    assert_eq!(Arc::strong_count(&driver), 1, "closing the backend lets the instance go");
    if support::requested() {
        let v = granary_vulkan::VulkanOptions { validate: true, ..Default::default() };
        let b = VulkanBackend::open_with(Some(driver.clone()), &v).expect("a validated open");
        assert!(b.validation().is_some(), "the layer's own instance, not the one given");
        assert_eq!(Arc::strong_count(&driver), 1);
        let log = b.validation().cloned();
        drop(b);
        support::assert_clean(log);
    }
    let log = plain.validation().cloned();
    drop(plain);
    support::assert_clean(log);
}
