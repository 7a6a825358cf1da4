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
    let mut f13 = vk::PhysicalDeviceVulkan13Features { dynamic_rendering: vk::TRUE, ..Default::default() };
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
    let features =
        granary_archive::vulkan::device_features_of(&features, &vk::PhysicalDeviceVulkan11Features::default());
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
    let archive = example_archive();
    let handed_over = Mutex::new(Vec::new());
    {
        // Only what the application enabled: no pipeline binaries, no libraries (pipelines
        // archived with unspecialized colour output are then created whole, with the link
        // format), every core feature the device has.
        let gpu = app.gpu(false);
        let loader = PipelineLoader::new(&archive, gpu, LoaderOptions::default()).expect("loader");
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
                        let (pipeline, libraries) = made.pipeline.into_raw();
                        assert!(libraries.is_empty(), "nothing is linked on this device");
                        handed_over.lock().unwrap().push(pipeline);
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
        handed_over.lock().unwrap().push(by_label.pipeline.into_raw().0);
        assert!(matches!(loader.load_label("no/such/pipeline"), Err(LoadError::NotFound(_))));
    } // the loader, its modules, layouts and cache, the Gpu and the Driver are dropped here
    let handed_over = handed_over.into_inner().unwrap();
    assert_eq!(handed_over.len(), archive.len().div_ceil(2) + 1);
    // SAFETY: the pipelines were handed over with `into_raw` and no command buffer used
    // them; granary's objects are gone (dropped above), so the device and instance are the
    // application's alone to destroy, in that order.
    unsafe {
        for p in handed_over {
            app.device.destroy_pipeline(p, None);
        }
    }
    app.finish();
}

#[test]
fn a_pipeline_needing_a_feature_the_application_did_not_enable_is_refused_naming_it() {
    let Some(app) = app_with(false, false) else { return };
    let archive = example_archive();
    let (mut made, mut refused) = (0, Vec::new());
    {
        let gpu = app.gpu(false);
        // A module declaring ClipDistance is refused before vkCreateShaderModule (where it
        // would be VUID-VkShaderModuleCreateInfo-pCode-01091), naming capability and feature.
        let words: [u32; 10] = [0x0723_0203, 0x0001_0000, 0, 8, 0, (2 << 16) | 17, 1, (2 << 16) | 17, 32, 0];
        let spirv: Vec<u8> = words[..9].iter().flat_map(|w| w.to_le_bytes()).collect();
        let e = gpu.module(&spirv).err().expect("refused").to_string();
        assert!(e.contains("shaderClipDistance (the SPIR-V declares capability ClipDistance)"), "{e}");
        let loader = PipelineLoader::new(&archive, gpu, LoaderOptions::default()).expect("loader");
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
    let archive = example_archive();
    let mut handed_over = Vec::new();
    {
        let gpu = app.gpu(true);
        let loader = PipelineLoader::new(&archive, gpu, LoaderOptions::default()).expect("loader");
        let mut linked = 0;
        for i in 0..archive.len() {
            let made = loader.load(&archive.pipeline(i).expect("record")).expect("created");
            assert_eq!(made.linked, made.pipeline.is_linked());
            if made.linked {
                linked += 1;
                let (pipeline, libraries) = made.pipeline.into_raw();
                assert!(!libraries.is_empty(), "a linked pipeline hands over its libraries");
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
