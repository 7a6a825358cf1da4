//! The run-time loader (`granary_archive::vulkan::PipelineLoader`) on the application's own
//! `VkInstance` and `VkDevice` (`Driver::borrowed`, `Gpu::borrowed`): every pipeline of the
//! bundled example created from 4 threads, pipelines handed over to the application with
//! `into_raw`, and everything granary made released before the application destroys its
//! device.
//!
//! Without a Vulkan driver the test prints one `SKIPPED` line, unless
//! `GRANARY_REQUIRE_VULKAN=1` (set by `.ci/run`) makes that a failure. Under
//! `GRANARY_VALIDATE=1` (also set there) the application validates its own instance the way a
//! game would: it enables the layer and registers granary's callback
//! (`MessengerData::create_info`), so the loader's messages are attributed per pipeline, and
//! the test fails on any message the layer reports.

mod support;

use granary::compiler::{Compiler, CompilerOptions};
use granary::script::Script;
use granary_archive::vulkan::validation::{MessengerData, ValidationLog, LAYER};
use granary_archive::vulkan::vulkanalia::loader::{LibloadingLoader, LIBRARY};
use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
use granary_archive::vulkan::vulkanalia::vk::ExtDebugUtilsExtensionInstanceCommands as _;
use granary_archive::vulkan::{Driver, Gpu, LoadError, LoaderOptions, OpenOptions, PipelineLoader, Source};
use granary_archive::{Archive, WriteEntry};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The example compiled with the `none` backend: SPIR-V, layouts and render states, no
/// device section.
fn example_archive() -> Archive {
    let script = Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json"))
        .expect("example script");
    let compiler = Compiler::new(CompilerOptions::default());
    let entries: Vec<WriteEntry> = script
        .pipelines
        .into_iter()
        .map(|p| {
            let desc = p.descriptor.expect("valid");
            let label = desc.label().expect("labelled").to_string();
            WriteEntry {
                entry: compiler.compile(&desc).expect("compiles"),
                labels: vec![label].into(),
                binaries: vec![],
            }
        })
        .collect();
    Archive::from_bytes(granary::archive::encode(&entries, &granary::archive::portable_meta())).expect("archive")
}

/// The application's side: its own loader, instance and device (Vulkan 1.3 with dynamic
/// rendering, nothing else enabled), or `None` without a driver.
struct App {
    _entry: Entry,
    instance: Instance,
    physical: vk::PhysicalDevice,
    device: Device,
    /// Under `GRANARY_VALIDATE=1`: the application's messenger, with granary's callback.
    validation: Option<(vk::DebugUtilsMessengerEXT, MessengerData)>,
    /// The core features the application enabled on `device`, as granary names them.
    features: granary_archive::DeviceFeatures,
}

fn app() -> Option<App> {
    app_with(true, false)
}

/// The application's side, enabling every core feature its device supports or none.
/// With `libraries`: also `VK_KHR_pipeline_library` + `VK_EXT_graphics_pipeline_library`
/// (`None` where the device lacks them).
fn app_with(enable_features: bool, libraries: bool) -> Option<App> {
    let skip = |why: String| {
        support::no_driver(why);
        None
    };
    // SAFETY: the system's Vulkan loader, made to be opened this way.
    let loader = match unsafe { LibloadingLoader::new(LIBRARY) } {
        Ok(l) => l,
        Err(e) => return skip(e.to_string()),
    };
    // SAFETY: resolves vkGetInstanceProcAddr from the loader just opened.
    let entry = match unsafe { Entry::new(loader) } {
        Ok(e) => e,
        Err(e) => return skip(e.to_string()),
    };
    let app = vk::ApplicationInfo { api_version: vk::make_version(1, 3, 0), ..Default::default() };
    let mut info = vk::InstanceCreateInfo { application_info: &app, ..Default::default() };
    let data = support::requested().then(|| MessengerData::new(ValidationLog::new()));
    let layers = [c"VK_LAYER_KHRONOS_validation".as_ptr()];
    let extensions = [vk::EXT_DEBUG_UTILS_EXTENSION.name.as_ptr()];
    if data.is_some() {
        // SAFETY: a global query of the loader just opened.
        let available = unsafe { entry.enumerate_instance_layer_properties() }.unwrap_or_default();
        assert!(
            available.iter().any(|l| l.layer_name.to_string_lossy() == LAYER),
            "GRANARY_VALIDATE=1 needs {LAYER} (Debian: apt-get install vulkan-validationlayers)"
        );
        info.enabled_layer_count = 1;
        info.enabled_layer_names = layers.as_ptr();
        info.enabled_extension_count = 1;
        info.enabled_extension_names = extensions.as_ptr();
    }
    // SAFETY: `info` and `app`, `layers` and `extensions` live until the call returns.
    let instance = match unsafe { entry.create_instance(&info, None) } {
        Ok(i) => i,
        Err(e) => return skip(format!("{e:?}")),
    };
    let validation = data.map(|data| {
        // SAFETY: the instance enables VK_EXT_debug_utils; `data` outlives the messenger (it
        // is destroyed, before the instance, at the end of the test).
        let m = unsafe { instance.create_debug_utils_messenger_ext(&data.create_info(), None) }.expect("messenger");
        (m, data)
    });
    // SAFETY: the instance is valid.
    let physical = unsafe { instance.enumerate_physical_devices() }.ok()?.first().copied()?;
    let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT {
        graphics_pipeline_library: vk::TRUE,
        ..Default::default()
    };
    // `pipelineCreationCacheControl` is required of every Vulkan 1.3 device: enabled with the
    // others (it lets `load_if_cheap` ask the pipeline cache without compiling).
    let mut f13 = vk::PhysicalDeviceVulkan13Features {
        dynamic_rendering: vk::TRUE,
        pipeline_creation_cache_control: if enable_features { vk::TRUE } else { vk::FALSE },
        ..Default::default()
    };
    let library_extensions =
        [vk::KHR_PIPELINE_LIBRARY_EXTENSION.name.as_ptr(), vk::EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION.name.as_ptr()];
    if libraries {
        // SAFETY: `physical` came from `instance`.
        let have = unsafe { instance.enumerate_device_extension_properties(physical, None) }.unwrap_or_default();
        if !have.iter().any(|e| e.extension_name.to_string_lossy() == "VK_EXT_graphics_pipeline_library") {
            eprintln!("SKIPPED: the device has no graphics pipeline libraries; this test checked nothing");
            return None;
        }
        f13.next = (&mut gpl as *mut vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT).cast();
    }
    let priority = 1.0f32;
    let queue = vk::DeviceQueueCreateInfo {
        queue_family_index: 0,
        queue_count: 1,
        queue_priorities: &priority,
        ..Default::default()
    };
    // The application enables every core feature its device has (as engines do for the
    // ones they use), and tells granary so through `OpenOptions::features`.
    // SAFETY: `physical` came from `instance`.
    let features = if enable_features {
        unsafe { instance.get_physical_device_features(physical) }
    } else {
        vk::PhysicalDeviceFeatures::default()
    };
    let create = vk::DeviceCreateInfo {
        next: (&mut f13 as *mut vk::PhysicalDeviceVulkan13Features).cast(),
        queue_create_info_count: 1,
        queue_create_infos: &queue,
        enabled_features: &features,
        enabled_extension_count: if libraries { library_extensions.len() as u32 } else { 0 },
        enabled_extension_names: library_extensions.as_ptr(),
        ..Default::default()
    };
    // SAFETY: `physical` came from `instance`; `create` and its chain point at locals that
    // live until the call returns.
    let device = unsafe { instance.create_device(physical, &create, None) }.expect("vkCreateDevice");
    let mut features =
        granary_archive::vulkan::device_features_of(&features, &vk::PhysicalDeviceVulkan11Features::default());
    if enable_features {
        features = features.union(granary_archive::DeviceFeatures::PIPELINE_CREATION_CACHE_CONTROL);
    }
    Some(App { _entry: entry, instance, physical, device, validation, features })
}

impl App {
    /// Granary's view of the application's device: no pipeline binaries, `libraries` as the
    /// device was created, and the core features it enabled (every supported one, or none).
    fn gpu(&self, libraries: bool) -> Arc<Gpu> {
        let features = self.features;
        // SAFETY: the application's Vulkan 1.3 instance; every test keeps `self` alive until
        // everything granary made from it is dropped (`finish` destroys it last).
        let driver = unsafe { Driver::borrowed(&self.instance) };
        let info = driver.physical_device(self.physical).expect("device info");
        let enabled = OpenOptions { pipeline_binaries: false, libraries, features, ..OpenOptions::default() };
        // SAFETY: `self.device` was created from `info.handle` of this instance by `app_with`
        // with what `enabled` says (the features it enabled: all supported, or none; the
        // library extensions exactly when `libraries`), and outlives the returned value.
        unsafe { Gpu::borrowed(driver, info, &self.device, enabled) }.expect("wrap the device")
    }

    /// The application's teardown once granary's objects are gone: the device, the
    /// messenger, the instance; then the validation verdict.
    fn finish(self) {
        // SAFETY: nothing granary made from the device or instance is alive any more (each
        // test drops them first), so both are the application's alone to destroy, in order.
        unsafe {
            self.device.destroy_device(None);
            if let Some((messenger, _)) = &self.validation {
                self.instance.destroy_debug_utils_messenger_ext(*messenger, None);
            }
            self.instance.destroy_instance(None);
        }
        support::assert_clean(self.validation.map(|(_, data)| data.log().clone()));
    }
}

#[test]
fn the_loader_creates_every_pipeline_on_the_applications_device_from_four_threads() {
    let Some(app) = app() else { return };
    let archive = Arc::new(example_archive());
    let handed_over = Mutex::new(Vec::new());
    {
        // Only what the application enabled: no pipeline binaries, no libraries (pipelines
        // archived with unspecialized colour output are then created whole, with the link
        // format), every core feature the device has.
        let gpu = app.gpu(false);
        let loader = PipelineLoader::new(archive.clone(), gpu, LoaderOptions::default()).expect("loader");
        assert!(loader.mismatch().expect("no device section").to_string().contains("holds no driver binaries"));
        assert!(!loader.has_binaries());

        let next = AtomicUsize::new(0);
        let compiled = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= archive.len() {
                        break;
                    }
                    let p = archive.pipeline(i).expect("record");
                    let made = loader.load(&p).expect("created");
                    assert_eq!(made.binaries, 0);
                    assert!(!made.linked, "libraries are off on this device");
                    assert!(made.fallback_reason.is_none());
                    if made.source == Source::Compiled {
                        compiled.fetch_add(1, Ordering::Relaxed);
                    }
                    if i.is_multiple_of(2) {
                        // The application takes every other pipeline over; the rest are
                        // destroyed by the loader's `Pipeline` when dropped here.
                        let layout = made.pipeline.layout().expect("the loader's pipelines hold their layout");
                        let (pipeline, retained) = made.pipeline.into_raw();
                        assert!(retained.is_unlinked(), "nothing is linked on this device");
                        assert_eq!(retained.layout(), Some(layout));
                        handed_over.lock().unwrap().push((pipeline, retained));
                    }
                });
            }
        });
        // No binaries and an empty cache: nothing may claim a hit it did not get (a driver
        // may still report a hit for a pipeline identical to one created earlier).
        assert!(compiled.load(Ordering::Relaxed) > 0);

        // By label, and a label the archive does not have.
        let first = archive.labels().expect("labels")[0].0.to_string();
        let by_label = loader.load_label(&first).expect("by label");
        handed_over.lock().unwrap().push(by_label.pipeline.into_raw());
        assert!(matches!(loader.load_label("no/such/pipeline"), Err(LoadError::NotFound(_))));
        let stats = loader.stats();
        assert_eq!(stats.from_binaries + stats.cache_hits + stats.compiled, archive.len() as u64 + 1);
        assert_eq!((stats.failed, stats.not_found, stats.in_flight), (0, 1, 0));
        assert!(stats.compile_latency.count > 0 && stats.compile_latency.p50 <= stats.compile_latency.p99);
    } // the loader, its modules and cache are dropped here; the layouts the handed-over
      // pipelines were made with live on in their `Retained`, with the Gpu and the Driver
    let handed_over = handed_over.into_inner().unwrap();
    assert_eq!(handed_over.len(), archive.len().div_ceil(2) + 1);
    // SAFETY: the pipelines were handed over with `into_raw` and no command buffer used
    // them; each is destroyed before its `Retained` (its layout) is dropped, and then
    // granary's objects are gone, so the device and instance are the application's alone to
    // destroy, in that order.
    unsafe {
        for (p, retained) in handed_over {
            app.device.destroy_pipeline(p, None);
            drop(retained);
        }
    }
    app.finish();
}

#[test]
fn a_pipeline_needing_a_feature_the_application_did_not_enable_is_refused_naming_it() {
    let Some(app) = app_with(false, false) else { return };
    let archive = Arc::new(example_archive());
    let (mut made, mut refused) = (0, Vec::new());
    {
        let gpu = app.gpu(false);
        // A module declaring ClipDistance is refused before vkCreateShaderModule (where it
        // would be VUID-VkShaderModuleCreateInfo-pCode-01091), naming capability and feature.
        let words: [u32; 10] = [0x0723_0203, 0x0001_0000, 0, 8, 0, (2 << 16) | 17, 1, (2 << 16) | 17, 32, 0];
        let spirv: Vec<u8> = words[..9].iter().flat_map(|w| w.to_le_bytes()).collect();
        let e = gpu.module(&spirv).err().expect("refused").to_string();
        assert!(e.contains("shaderClipDistance (the SPIR-V declares capability ClipDistance)"), "{e}");
        let loader = PipelineLoader::new(archive.clone(), gpu, LoaderOptions::default()).expect("loader");
        for i in 0..archive.len() {
            match loader.load(&archive.pipeline(i).expect("record")) {
                Ok(_) => made += 1,
                Err(e) => refused.push(e.to_string()),
            }
        }
    }
    // The example has pipelines with a depth-bias clamp and with differing blend per
    // attachment: each is refused by name before the driver sees it, so the validation layer
    // reports nothing (before the fix the driver got them: VUID-…-00754 and -00605).
    assert!(made > 0, "{refused:?}");
    assert!(refused.iter().any(|e| e.contains("depthBiasClamp (depth_stencil.depth_bias_clamp is")), "{refused:#?}");
    assert!(refused.iter().all(|e| e.contains("not enabled on device")), "{refused:#?}");
    app.finish();
}

#[test]
fn a_linked_pipeline_keeps_its_libraries_alive_after_the_loader_and_into_raw() {
    let Some(app) = app_with(true, true) else { return };
    let archive = Arc::new(example_archive());
    let mut handed_over = Vec::new();
    {
        let gpu = app.gpu(true);
        let loader = PipelineLoader::new(archive.clone(), gpu, LoaderOptions::default()).expect("loader");
        let mut linked = 0;
        for i in 0..archive.len() {
            let made = loader.load(&archive.pipeline(i).expect("record")).expect("created");
            assert_eq!(made.linked, made.pipeline.is_linked());
            if made.linked {
                linked += 1;
                let (pipeline, libraries) = made.pipeline.into_raw();
                assert!(!libraries.is_unlinked(), "a linked pipeline hands over its libraries");
                handed_over.push((pipeline, libraries));
            }
        }
        assert!(linked > 0, "the example has pipelines with unspecialized colour output");
        // The loader is dropped here; the libraries (and the Gpu they hold) live on.
    }
    // SAFETY: the pipelines are the application's now; each is destroyed before the libraries
    // it was linked from (dropped right after), and before the device.
    unsafe {
        for (pipeline, libraries) in handed_over {
            app.device.destroy_pipeline(pipeline, None);
            drop(libraries);
        }
    }
    app.finish();
}

/// The engine-shaped path on the application's device: a progressive warm-up over the
/// example, driven by owned workers and by `pump`, deduplicated, every pipeline ready; then a
/// loader for a "patched" archive replaces the first while pipelines from the first live on
/// (held by `Arc<Loaded>` after their loader, warm-up and archive handle are dropped); then
/// workers shut down with creations in flight. The validation layer (under
/// `GRANARY_VALIDATE=1`) sees every object destroyed in order, before the device.
#[test]
fn a_progressive_warmup_creates_every_pipeline_and_a_patched_archive_replaces_it_while_pipelines_live() {
    use granary_archive::vulkan::{Priority, Status, Warmup};
    use std::time::Duration;
    let Some(app) = app_with(true, true) else { return };
    let example = example_archive();
    let count = example.len();
    let mut kept = Vec::new();
    {
        let gpu = app.gpu(true);
        let loader = PipelineLoader::new(example, gpu.clone(), LoaderOptions::default()).expect("loader");
        let warmup = Warmup::new(Arc::new(loader));
        // Everything at low priority, then one pipeline wanted now.
        let all = warmup.request_prefix("", Priority::LOW).expect("labels");
        assert_eq!(all.len(), warmup.loader().archive().labels().expect("labels").len());
        let first_label = warmup.loader().archive().labels().expect("labels")[0].0.to_string();
        let wanted = warmup.request_labels(&[first_label.as_str()], Priority::CRITICAL).remove(0).expect("label");
        assert!(matches!(warmup.try_get(&wanted), Status::Pending));
        // The wanted one runs first: a zero-budget pump creates exactly it.
        assert_eq!(warmup.pump(Duration::ZERO).finished, 1);
        assert!(matches!(warmup.try_get(&wanted), Status::Ready(_)), "the CRITICAL request was not first");
        // The rest by two owned workers; a loading screen waits.
        let workers = warmup.spawn_workers(2).expect("threads");
        assert!(warmup.wait(&all, Duration::from_secs(600)), "{:?}", warmup.progress());
        drop(workers);
        let progress = warmup.progress();
        assert!(progress.done());
        assert_eq!((progress.failed, progress.absent), (0, 0), "{progress:?}");
        // Labels of identical pipelines share an entry: distinct requests ≤ pipelines.
        assert!(progress.requested as usize <= count && progress.ready == progress.requested);
        assert!(warmup.stats().deduplicated >= 1, "the wanted label was asked for twice");
        assert_eq!(warmup.stats().requested_too_late, 1, "only the wanted one was polled early");
        let stats = warmup.loader().stats();
        assert_eq!(stats.from_binaries + stats.cache_hits + stats.compiled, progress.ready);
        for t in &all {
            match warmup.try_get(t) {
                Status::Ready(l) => kept.push(l),
                other => panic!("{other:?}"),
            }
        }
        // The patched archive: the same example, read again (a game would open the new file).
        let patched = Arc::new(example_archive());
        let loader2 = PipelineLoader::new(patched.clone(), gpu, LoaderOptions::default()).expect("loader");
        drop(warmup); // the first loader, its archive and warm-up go; `kept` holds their pipelines
        let warmup2 = Warmup::new(Arc::new(loader2));
        let tickets = warmup2.request_prefix("", Priority::NORMAL).expect("labels");
        // Shut down with work in flight: workers stop after the creation each is in.
        let workers = warmup2.spawn_workers(2).expect("threads");
        while warmup2.stats().in_flight == 0 && !warmup2.progress().done() {
            std::thread::yield_now();
        }
        workers.shutdown();
        assert_eq!(warmup2.stats().in_flight, 0);
        let after = warmup2.progress();
        assert!(after.ready >= 1, "{after:?}");
        // What is left is finished by the engine's own pumping.
        while warmup2.pump(Duration::from_millis(50)).more {}
        assert!(warmup2.wait(&tickets, Duration::ZERO));
        // Each pipeline of the first loader is still alive and bound to a live layout.
        for l in &kept {
            assert!(l.pipeline.layout().is_some());
        }
    } // the second warm-up and loader go here
    drop(kept); // the last pipelines of the first archive, then their layouts and libraries
    app.finish();
}

/// The optimized re-creation of linked pipelines: a warm-up that fast-links the example's
/// library pipelines (unspecialized colour output) makes each again whole at a low priority,
/// after every request, and `try_get` swaps it in (generation 1, not linked) while the
/// fast-linked one lives on; pipelines that were not linked are left as they are. Under
/// `GRANARY_VALIDATE=1` the layer checks the whole create infos (link formats in place of the
/// unspecialized ones).
#[test]
fn a_warmup_makes_linked_pipelines_again_whole_in_the_background_and_swaps_them_in() {
    use granary_archive::vulkan::{Priority, Status, Warmup};
    use std::time::Duration;
    let Some(app) = app_with(true, true) else { return };
    {
        let gpu = app.gpu(true);
        let loader = PipelineLoader::new(example_archive(), gpu, LoaderOptions::default()).expect("loader");
        let warmup = Warmup::new(Arc::new(loader));
        warmup.optimize_linked(Some(Priority::LOW));
        let tickets = warmup.request_prefix("", Priority::NORMAL).expect("labels");
        // Every request first: the re-creations queue at LOW behind them.
        while !warmup.progress().done() {
            warmup.pump(Duration::ZERO);
        }
        let ready = |t| match warmup.try_get(t) {
            Status::Ready(l) => l,
            other => panic!("{other:?}"),
        };
        let first: Vec<_> = tickets.iter().map(ready).collect();
        let linked = first.iter().filter(|l| l.linked).count();
        assert!(linked > 0, "the example has pipelines with unspecialized colour output");
        assert!(first.iter().all(|l| l.generation == 0));
        let stats = warmup.stats();
        assert_eq!(stats.optimized, 0);
        assert!(stats.optimize_pending > 0 && stats.optimize_pending <= linked as u64, "{stats:?}");
        while warmup.pump(Duration::from_millis(100)).more {}
        let stats = warmup.stats();
        assert_eq!((stats.optimize_failed, stats.optimize_pending), (0, 0), "{stats:?}");
        // One re-creation per distinct linked request (labels of one pipeline share a ticket).
        let mut distinct: Vec<*const _> = first.iter().filter(|l| l.linked).map(Arc::as_ptr).collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(stats.optimized, distinct.len() as u64);
        for (t, before) in tickets.iter().zip(&first) {
            let now = ready(t);
            if before.linked {
                assert_eq!((now.generation, now.linked), (1, false), "made again whole");
                assert_ne!(now.pipeline.handle(), before.pipeline.handle());
            } else {
                assert!(Arc::ptr_eq(&now, before), "a pipeline that was not linked stays");
            }
        }
        // Requests, progress and `wait` are the engine's only.
        assert!(warmup.wait(&tickets, Duration::ZERO));
        assert_eq!(warmup.progress().requested, stats.progress.requested);
    }
    app.finish();
}

/// The engine's layouts: made by the application from the request's description, with every
/// binding visible to vertex, fragment and compute (a superset of the stages, as engines use
/// to make layouts set-compatible across pipelines); kept for the application to destroy.
struct EngineLayoutSource {
    device: Device,
    made: Mutex<Vec<(vk::PipelineLayout, Vec<vk::DescriptorSetLayout>)>>,
}

const ENGINE_STAGES: vk::ShaderStageFlags = vk::ShaderStageFlags::from_bits_truncate(
    vk::ShaderStageFlags::VERTEX.bits() | vk::ShaderStageFlags::FRAGMENT.bits() | vk::ShaderStageFlags::COMPUTE.bits(),
);

// SAFETY: every handle returned is a pipeline layout of the loader's device (`device` is the
// application's, which the loader wraps), made from the request's own bindings and push
// constants with a superset of their stages, and destroyed by the test only after every
// pipeline made with it.
unsafe impl granary_archive::vulkan::LayoutSource for EngineLayoutSource {
    fn layout(&self, request: granary_archive::vulkan::LayoutRequest<'_>) -> Result<vk::PipelineLayout, String> {
        let granary_archive::vulkan::LayoutRequest::Script(desc) = request else {
            return Err("this engine has only script layouts".into());
        };
        let mut sets = Vec::new();
        for set in &desc.sets {
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = set
                .iter()
                .map(|b| vk::DescriptorSetLayoutBinding {
                    binding: b.binding,
                    descriptor_type: b.ty,
                    descriptor_count: b.count,
                    stage_flags: b.stages | ENGINE_STAGES,
                    immutable_samplers: std::ptr::null(),
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo {
                binding_count: bindings.len() as u32,
                bindings: bindings.as_ptr(),
                ..Default::default()
            };
            // SAFETY: `bindings` lives until the call returns; the device is alive.
            sets.push(unsafe { self.device.create_descriptor_set_layout(&info, None) }.map_err(|e| e.to_string())?);
        }
        let ranges: Vec<vk::PushConstantRange> = desc
            .push_constants
            .iter()
            .map(|(size, stages)| vk::PushConstantRange {
                stage_flags: *stages | ENGINE_STAGES,
                offset: 0,
                size: *size,
            })
            .collect();
        let info = vk::PipelineLayoutCreateInfo {
            set_layout_count: sets.len() as u32,
            set_layouts: sets.as_ptr(),
            push_constant_range_count: ranges.len() as u32,
            push_constant_ranges: ranges.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `sets` and `ranges` live until the call returns.
        let layout = unsafe { self.device.create_pipeline_layout(&info, None) }.map_err(|e| e.to_string())?;
        self.made.lock().unwrap().push((layout, sets));
        Ok(layout)
    }
}

/// The engine's own objects: its `VkPipelineCache` (the loader merges its seed into it,
/// compiles into it, and never destroys it) and its pipeline layouts (asked once per distinct
/// description, held by the pipelines made with them, never destroyed by granary). Under
/// `GRANARY_VALIDATE=1` a destroy by granary would show as the application's own destroy of a
/// destroyed handle at the end.
#[test]
fn the_engines_own_pipeline_cache_and_layouts_are_used_and_left_to_the_engine() {
    use granary_archive::vulkan::{layout_desc, EngineCache, EngineLayouts, LoadErrorKind};
    let Some(app) = app() else { return };
    let archive = Arc::new(example_archive());
    // SAFETY: a default pipeline cache (internally synchronized) of the application's device.
    let cache = unsafe { app.device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) }
        .expect("vkCreatePipelineCache");
    // SAFETY: as above; nothing else uses the cache yet.
    let seed = unsafe { app.device.get_pipeline_cache_data(cache) }.expect("cache data");
    let source = Arc::new(EngineLayoutSource { device: app.device.clone(), made: Mutex::new(Vec::new()) });
    let mut handed_over = Vec::new();
    {
        let gpu = app.gpu(false);
        let options = LoaderOptions {
            // SAFETY: `cache` is the application's internally synchronized cache of this
            // device; no other thread touches it while the loader is made, and it is
            // destroyed below only after the loader is dropped.
            engine_cache: Some(unsafe { EngineCache::new(cache) }),
            layouts: Some(EngineLayouts::new(source.clone())),
            // The engine's own saved data, merged into its cache with the archive's (none here).
            initial_cache: Some(seed),
            ..LoaderOptions::default()
        };
        let loader = PipelineLoader::new(archive.clone(), gpu, options).expect("loader");
        assert_eq!(loader.cache_blobs(), 1, "the engine's seed was merged into its cache");
        let mut distinct = std::collections::HashSet::new();
        for i in 0..archive.len() {
            let p = archive.pipeline(i).expect("record");
            distinct.insert(layout_desc(&p.layout().expect("layout").expect("has one")).expect("describable"));
            let made = loader.load(&p).expect("created with the engine's layout");
            let layout = made.pipeline.layout().expect("held");
            assert!(source.made.lock().unwrap().iter().any(|(l, _)| *l == layout), "the engine's layout");
            if i % 3 == 0 {
                handed_over.push(made.pipeline.into_raw());
            }
        }
        // One call per distinct description, however many pipelines share it.
        assert_eq!(source.made.lock().unwrap().len(), distinct.len());
        assert!(distinct.len() < archive.len());
        // The loader reads the engine's cache back (the same handle).
        // SAFETY: internally synchronized; no creation runs now.
        let engine_data = unsafe { app.device.get_pipeline_cache_data(cache) }.expect("cache data");
        assert_eq!(loader.cache_data().expect("cache data"), engine_data);
    } // the loader is gone; the engine's cache and layouts are untouched
      // A source that refuses: the pipeline fails with the kind that says so, nothing created.
    {
        struct Refuses;
        // SAFETY: returns no handle.
        unsafe impl granary_archive::vulkan::LayoutSource for Refuses {
            fn layout(&self, _: granary_archive::vulkan::LayoutRequest<'_>) -> Result<vk::PipelineLayout, String> {
                Err("no layout for this material".into())
            }
        }
        let options =
            LoaderOptions { layouts: Some(EngineLayouts::new(Arc::new(Refuses))), ..LoaderOptions::default() };
        let loader = PipelineLoader::new(archive.clone(), app.gpu(false), options).expect("loader");
        let e = loader.load(&archive.pipeline(0).expect("record")).err().expect("refused");
        assert_eq!(e.kind(), LoadErrorKind::Layout);
        assert!(e.to_string().contains("no layout for this material"), "{e}");
    }
    // SAFETY: the pipelines are the application's; each goes before its `Retained`, then the
    // engine destroys its layouts and cache, which no granary object uses any more.
    unsafe {
        for (pipeline, retained) in handed_over {
            app.device.destroy_pipeline(pipeline, None);
            drop(retained);
        }
        for (layout, sets) in source.made.lock().unwrap().drain(..) {
            app.device.destroy_pipeline_layout(layout, None);
            for s in sets {
                app.device.destroy_descriptor_set_layout(s, None);
            }
        }
        app.device.destroy_pipeline_cache(cache, None);
    }
    drop(source);
    app.finish();
}

/// The use recorder (issue 25 item 4) on a warm-up: a pipeline is recorded at the first
/// `try_get` of its ticket, in the order the frame asks (not the order the warm-up created
/// them in), each once; a blocking load by label records the label; a label and a key the
/// archive lacks are recorded as misses.
#[test]
fn a_warmup_records_first_use_in_the_order_the_frame_asks_and_each_miss() {
    use granary_archive::record::{read_record, Event, Recorder, RecorderOptions};
    use granary_archive::vulkan::{Priority, Warmup};
    use granary_archive::PipelineKey;
    use std::time::Duration;
    let Some(app) = app_with(true, true) else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("game.record");
    let example = example_archive();
    let labels: Vec<String> = example.labels().expect("labels").iter().map(|(l, _)| l.to_string()).collect();
    assert!(labels.len() >= 3);
    let keys: Vec<PipelineKey> =
        labels.iter().map(|l| example.lookup_label(l).expect("lookup").expect("labelled").key()).collect();
    {
        let recorder = Arc::new(Recorder::open(&path, RecorderOptions::default()).expect("recorder"));
        let options = LoaderOptions { recorder: Some(recorder.clone()), ..LoaderOptions::default() };
        let loader = PipelineLoader::new(example, app.gpu(true), options).expect("loader");
        let warmup = Warmup::new(Arc::new(loader));
        let tickets: Vec<_> =
            warmup.request_labels(&labels[..3], Priority::NORMAL).into_iter().map(|t| t.expect("label")).collect();
        while warmup.pump(Duration::from_millis(50)).more {}
        assert!(warmup.wait(&tickets, Duration::ZERO));
        // Created, never asked for by a frame: nothing recorded yet.
        recorder.flush().unwrap();
        assert!(read_record(&path).unwrap().events.is_empty(), "a warm-up's creations are not uses");
        // The frame asks for the third, then the first, then both again.
        for i in [2, 0, 2, 0] {
            let _ = warmup.try_get(&tickets[i]);
        }
        drop(warmup.loader().load_label(&labels[1]).expect("blocking load"));
        assert!(warmup.request_labels(&["not/in/the/archive"], Priority::NORMAL)[0].is_err());
        let absent = warmup.request(PipelineKey(0x5eed), Priority::NORMAL);
        while warmup.pump(Duration::from_millis(50)).more {}
        let _ = warmup.try_get(&absent);
        let _ = warmup.try_get(&absent);
        assert_eq!(recorder.stats().events, 5, "{:?}", recorder.stats());
    } // the loader and warm-up go, then the recorder, which appends what is left
    let read = read_record(&path).expect("record");
    assert_eq!(read.damaged_tail, None);
    let key = |i: usize| keys[i];
    assert_eq!(
        read.events,
        [
            Event::Used { key: key(2), label: None },
            Event::Used { key: key(0), label: None },
            Event::Used { key: key(1), label: Some(labels[1].clone()) },
            Event::Missed { key: None, label: Some("not/in/the/archive".into()) },
            Event::Missed { key: Some(PipelineKey(0x5eed)), label: None },
        ]
    );
    app.finish();
}

/// `load_if_cheap` without binaries (issue 25 item 2): the pipeline is created only if the
/// loader's pipeline cache answers it without a compile
/// (`VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT`); otherwise `WouldCompile` and
/// nothing is created. A pipeline archived as a library always needs its parts compiled here.
#[test]
fn load_if_cheap_creates_from_the_cache_only_what_needs_no_compile() {
    use granary_archive::vulkan::LoadErrorKind;
    use granary_archive::PipelineKind;
    let Some(app) = app_with(true, true) else { return };
    let example = Arc::new(example_archive());
    let loader = PipelineLoader::new(example.clone(), app.gpu(true), LoaderOptions::default()).expect("loader");
    let computes: Vec<usize> =
        (0..example.len()).filter(|&i| example.pipeline(i).unwrap().kind() == PipelineKind::Compute).collect();
    assert!(!computes.is_empty(), "the example has compute pipelines");
    let p = example.pipeline(computes[0]).unwrap();
    assert!(
        loader.gpu().features().contains(granary_archive::DeviceFeatures::PIPELINE_CREATION_CACHE_CONTROL),
        "the application enabled pipelineCreationCacheControl: the cache is asked, under the flag"
    );
    // Whether the driver can create it without compiling is the driver's answer: lavapipe
    // says no (its pipeline cache holds nothing); NVIDIA may say yes even before the loader's
    // cache has it (its own shader caches). Either way: created, or `WouldCompile` and nothing.
    let name = loader.gpu().info.identity.device_name.clone();
    let cheap = |what: &str| match loader.load_if_cheap(&p, &[]) {
        Ok(l) => {
            eprintln!("{name}, {what}: created without a compile ({:?})", l.source);
            assert!(l.pipeline.handle() != vk::Pipeline::null());
            true
        }
        Err(e) => {
            assert_eq!(e.kind(), LoadErrorKind::WouldCompile, "{e}");
            eprintln!("{name}, {what}: the driver needs a compile");
            false
        }
    };
    let before = cheap("before it is compiled");
    assert_eq!(loader.stats().compiled + loader.stats().cache_hits, u64::from(before), "{:?}", loader.stats());
    let compiled = loader.load(&p).expect("compiled");
    let after = cheap("after it is compiled");
    assert!(after || !before, "a pipeline answered without a compile before is answered after");
    // A pipeline archived as a library: its parts would need a compile.
    let library = (0..example.len()).find(|&i| example.pipeline(i).unwrap().kind() == PipelineKind::Render).unwrap();
    if loader.gpu().libraries() {
        let r = loader.load_if_cheap(&example.pipeline(library).unwrap(), &[]);
        assert!(matches!(&r, Err(e) if e.kind() == LoadErrorKind::WouldCompile));
    }
    drop(compiled);
    drop(loader);
    app.finish();
}
