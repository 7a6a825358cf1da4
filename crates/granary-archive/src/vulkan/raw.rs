//! Every Vulkan call granary makes, and the only `unsafe` code of the crate.
//!
//! # Object lifetime rules
//!
//! 1. [`Driver`] owns the loader library and the `VkInstance` ([`Driver::load`]), or wraps
//!    the application's instance without owning it ([`Driver::borrowed`]). Every [`Gpu`]
//!    holds an `Arc<Driver>`, so an owned instance is destroyed only after the last device.
//! 2. [`Gpu`] owns the `VkDevice` ([`Gpu::open`]) or wraps the application's
//!    ([`Gpu::borrowed`], never destroyed by granary), and owns its internal
//!    `VkPipelineCache`. Every [`Module`], [`Layout`], [`Pipeline`], [`Binaries`] and
//!    [`Cache`] holds an `Arc<Gpu>`, so the device outlives every object made from it (for a
//!    borrowed device: as long as the application keeps it alive while granary's objects
//!    exist, which is its side of the contract).
//! 3. [`Module`] (`VkShaderModule`) and [`Layout`] (descriptor-set layouts + pipeline layout)
//!    are shared as `Arc`s by every compile that uses them and destroyed in `Drop`, i.e. only
//!    when no compile can still reach them.
//! 4. At capture ([`How::Capture`]), pipelines and pipeline binaries never outlive the call
//!    that creates them: [`Gpu::create_graphics`] / [`Gpu::create_compute`] create the
//!    pipeline, capture its binaries, copy their keys and bytes out, then destroy the
//!    binaries, release the captured data and destroy the pipeline, on every path (owning
//!    values dropped on return), before returning.
//! 5. At run time ([`How::Keep`]) the created [`Pipeline`] is returned; it is destroyed when
//!    dropped, or handed to the application with [`Pipeline::into_raw`]. [`Binaries`] made
//!    from archived data are destroyed when dropped, after the pipeline made from them exists
//!    (a pipeline does not reference its binaries). A fragment-output library made by
//!    [`Gpu::link`] is destroyed as soon as the linked pipeline exists.
//!
//! # External synchronization (what the Vulkan specification requires of the caller)
//!
//! - `vkDestroy*` of an object: the object is externally synchronized. Granary destroys
//!   objects only in `Drop` (no other reference exists) or through a guard local to one call.
//! - `vkCreateGraphicsPipelines` / `vkCreateComputePipelines`: the `VkPipelineCache` is
//!   internally synchronized (it is created without
//!   `VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT`), so any number of threads may
//!   create pipelines into it, and `vkGetPipelineCacheData` may read it at the same time.
//! - `vkReleaseCapturedPipelineDataKHR`, `vkDestroyPipeline`, `vkGetPipelineBinaryDataKHR`,
//!   `vkDestroyPipelineBinaryKHR`: their pipeline or binary is local to one call, or owned by
//!   one value ([`Pipeline`], [`Binaries`]) and destroyed only in its `Drop`.
//! - `vkCreatePipelineBinariesKHR` from data: nothing externally synchronized; the bytes are
//!   checked against the archive's content hashes before the call (never raw file bytes).
//! - `vkMergePipelineCaches`: the destination cache is externally synchronized. Granary
//!   merges only in [`Gpu::pipeline_cache_merged`], into a cache it created in the same call
//!   and has not returned yet, so no other thread can reach it; the sources are read, which
//!   an internally synchronized cache allows.
//! - Nothing else granary calls has an externally synchronized parameter: the device, shader
//!   modules and layouts are only read by create calls, which the specification allows from
//!   any number of threads.

use super::error::VulkanError;
use crate::state::TextureFormat;
use crate::{Blob, DeviceIdentity};
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vulkanalia::loader::{LibloadingLoader, LIBRARY};
use vulkanalia::prelude::v1_3::*;
use vulkanalia::vk::KhrPipelineBinaryExtensionDeviceCommands;

/// The loader and one instance.
///
/// Thread safety: `Send + Sync`; instance-level queries may run from any thread.
pub struct Driver {
    /// `None` for an instance the application created ([`Driver::borrowed`]).
    _entry: Option<Entry>,
    instance: Instance,
    /// With validation ([`Driver::load_with`]): the messenger and the log its user data
    /// points at, destroyed in `Drop` before the instance and before this field is dropped
    /// (the lifetime rules of [`super::validation`]).
    validation: Option<(vk::DebugUtilsMessengerEXT, super::validation::MessengerData)>,
}

/// What one physical device is and supports.
#[derive(Clone, Debug)]
pub struct PhysicalInfo {
    /// The handle (valid while the [`Driver`] lives).
    pub handle: vk::PhysicalDevice,
    /// What decides whether a binary is valid on the device, without the pipeline-binary
    /// global key (that needs an open device: [`Gpu::global_key`]).
    pub identity: DeviceIdentity,
    /// What it supports of what granary uses.
    pub supports: Supports,
    /// `maxBoundDescriptorSets`.
    pub max_bound_descriptor_sets: u32,
    /// Sample counts usable for colour and depth attachments (intersection).
    pub sample_counts: u32,
}

/// What a physical device supports of what granary uses (also what `granary devices` lists).
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Supports {
    /// `VK_KHR_pipeline_binary` with the `pipelineBinaries` feature (and maintenance5):
    /// driver binaries can be captured.
    pub pipeline_binaries: bool,
    /// `pipelineBinaryInternalCacheControl`: the driver's internal cache can be turned off
    /// while capturing.
    pub internal_cache_control: bool,
    /// `VK_EXT_graphics_pipeline_library` with its feature.
    pub graphics_pipeline_library: bool,
    /// `graphicsPipelineLibraryFastLinking`.
    pub fast_linking: bool,
    /// `dynamicRendering` (Vulkan 1.3 core), which the backend requires.
    pub dynamic_rendering: bool,
}

fn string_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl Driver {
    /// Opens the system's Vulkan loader and creates an instance (Vulkan 1.3 requested):
    /// [`Driver::load_with`] with the default options (no validation).
    pub fn load() -> Result<Arc<Driver>, VulkanError> {
        Driver::load_with(super::validation::DriverOptions::default())
    }

    /// Opens the system's Vulkan loader and creates an instance (Vulkan 1.3 requested). With
    /// `options.validation`, `VK_LAYER_KHRONOS_validation` and `VK_EXT_debug_utils` are
    /// enabled (or [`VulkanError::NoValidationLayer`] if either is missing) and a messenger
    /// records every WARNING and ERROR message into [`Driver::validation`]'s log.
    pub fn load_with(options: super::validation::DriverOptions) -> Result<Arc<Driver>, VulkanError> {
        use super::validation::{MessengerData, ValidationLog, LAYER};
        use vk::ExtDebugUtilsExtensionInstanceCommands as _;
        // SAFETY: `LibloadingLoader::new` runs the library's initializers; the Vulkan loader
        // is a system library made to be loaded this way.
        let loader = unsafe { LibloadingLoader::new(LIBRARY) }
            .map_err(|e| VulkanError::NoLoader { library: LIBRARY, reason: e.to_string() })?;
        // SAFETY: `Entry::new` resolves `vkGetInstanceProcAddr` from the loader just opened.
        let entry = unsafe { Entry::new(loader) }
            .map_err(|e| VulkanError::NoLoader { library: LIBRARY, reason: e.to_string() })?;
        let name = c"granary";
        let app = vk::ApplicationInfo {
            application_name: name.as_ptr(),
            engine_name: name.as_ptr(),
            api_version: vk::make_version(1, 3, 0),
            ..Default::default()
        };
        let layer = c"VK_LAYER_KHRONOS_validation";
        let debug_utils = vk::EXT_DEBUG_UTILS_EXTENSION.name;
        let data = if options.validation {
            // SAFETY: global queries of the loader just opened; nothing is passed but names.
            let layers = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(|e| VulkanError::call("vkEnumerateInstanceLayerProperties", e))?;
            if !layers.iter().any(|l| string_of(l.layer_name.as_bytes()) == LAYER) {
                return Err(VulkanError::NoValidationLayer { missing: LAYER });
            }
            // SAFETY: as above; `debug_utils` from the loader or from the layer itself.
            let has_utils = unsafe {
                let loader_has = entry.enumerate_instance_extension_properties(None);
                let layer_has = entry.enumerate_instance_extension_properties(Some(layer));
                [loader_has, layer_has].into_iter().flatten().flatten().any(|e| e.extension_name == debug_utils)
            };
            if !has_utils {
                return Err(VulkanError::NoValidationLayer { missing: "VK_EXT_debug_utils" });
            }
            Some(MessengerData::new(ValidationLog::new()))
        } else {
            None
        };
        let layers = [layer.as_ptr()];
        let extensions = [debug_utils.as_ptr()];
        // Chained into the instance's create info so that instance creation and destruction are
        // validated too; its user data is `data`'s box, which outlives the instance.
        let messenger_info = data.as_ref().map(MessengerData::create_info);
        let mut info = vk::InstanceCreateInfo { application_info: &app, ..Default::default() };
        if let Some(m) = &messenger_info {
            info.next = (m as *const vk::DebugUtilsMessengerCreateInfoEXT).cast();
            info.enabled_layer_count = 1;
            info.enabled_layer_names = layers.as_ptr();
            info.enabled_extension_count = 1;
            info.enabled_extension_names = extensions.as_ptr();
        }
        // SAFETY: `info` and what it points to (`app`, `name`, the layer and extension names,
        // `messenger_info`) live until the call returns; the messenger's user data (`data`)
        // lives until the instance is destroyed (it moves into the `Driver`, a box whose
        // address does not change).
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| {
            if e == vk::ErrorCode::INCOMPATIBLE_DRIVER {
                VulkanError::NoDriver
            } else if e == vk::ErrorCode::LAYER_NOT_PRESENT {
                VulkanError::NoValidationLayer { missing: LAYER }
            } else {
                VulkanError::call("vkCreateInstance", e)
            }
        })?;
        let validation = match (data, &messenger_info) {
            (Some(data), Some(m)) => {
                // SAFETY: the instance enables VK_EXT_debug_utils; `m` lives for the call, and
                // its user data (`data`) until the messenger is destroyed (in `Drop`, first).
                match unsafe { instance.create_debug_utils_messenger_ext(m, None) } {
                    Ok(messenger) => Some((messenger, data)),
                    Err(e) => {
                        // SAFETY: nothing was made from the instance yet; `data` outlives it.
                        unsafe { instance.destroy_instance(None) };
                        return Err(VulkanError::call("vkCreateDebugUtilsMessengerEXT", e));
                    }
                }
            }
            _ => None,
        };
        Ok(Arc::new(Driver { _entry: Some(entry), instance, validation }))
    }

    /// The validation layer's messages for this instance: `Some` for a driver loaded with
    /// [`DriverOptions::validation`](super::validation::DriverOptions), `None` otherwise
    /// (also for [`Driver::borrowed`]: an application validating its own instance registers
    /// [`MessengerData::create_info`](super::validation::MessengerData::create_info) itself).
    /// The log is shared: it may be read from any thread while pipelines are created.
    pub fn validation(&self) -> Option<&Arc<super::validation::ValidationLog>> {
        self.validation.as_ref().map(|(_, data)| data.log())
    }

    /// Wraps the application's own instance. Granary never destroys it: the application
    /// keeps it alive until every [`Gpu`] made from this driver is dropped.
    pub fn borrowed(instance: &Instance) -> Arc<Driver> {
        Arc::new(Driver { _entry: None, instance: instance.clone(), validation: None })
    }

    /// What `physical` is and supports (without the global key: see [`Gpu::global_key`]).
    pub fn physical_device(&self, physical: vk::PhysicalDevice) -> Result<PhysicalInfo, VulkanError> {
        self.query(physical)
    }

    /// Every physical device, in the loader's order.
    pub fn physical_devices(&self) -> Result<Vec<PhysicalInfo>, VulkanError> {
        // SAFETY: the instance is valid while `self` lives.
        let handles = unsafe { self.instance.enumerate_physical_devices() }
            .map_err(|e| VulkanError::call("vkEnumeratePhysicalDevices", e))?;
        handles.into_iter().map(|h| self.query(h)).collect()
    }

    fn query(&self, pd: vk::PhysicalDevice) -> Result<PhysicalInfo, VulkanError> {
        let i = &self.instance;
        // SAFETY: `pd` came from this instance; every struct passed lives until its call
        // returns, and every `next` chain below points only at locals declared before it.
        unsafe {
            let extensions: BTreeSet<String> = i
                .enumerate_device_extension_properties(pd, None)
                .map_err(|e| VulkanError::call("vkEnumerateDeviceExtensionProperties", e))?
                .iter()
                .map(|e| string_of(e.extension_name.as_bytes()))
                .collect();
            let core = i.get_physical_device_properties(pd);
            let has = |n: &str| extensions.contains(n);
            let has_binary_ext = has("VK_KHR_pipeline_binary") && has("VK_KHR_maintenance5");
            let has_gpl_ext = has("VK_EXT_graphics_pipeline_library") && has("VK_KHR_pipeline_library");
            let v12 = core.api_version >= vk::make_version(1, 2, 0);
            let v13 = core.api_version >= vk::make_version(1, 3, 0);

            // Properties.
            let mut driver = vk::PhysicalDeviceDriverProperties::default();
            let mut binary_props = vk::PhysicalDevicePipelineBinaryPropertiesKHR::default();
            let mut gpl_props = vk::PhysicalDeviceGraphicsPipelineLibraryPropertiesEXT::default();
            let mut props2 = vk::PhysicalDeviceProperties2::default();
            let mut tail: *mut c_void = std::ptr::null_mut();
            if has_gpl_ext {
                gpl_props.next = tail;
                tail = (&mut gpl_props as *mut vk::PhysicalDeviceGraphicsPipelineLibraryPropertiesEXT).cast();
            }
            if has_binary_ext {
                binary_props.next = tail;
                tail = (&mut binary_props as *mut vk::PhysicalDevicePipelineBinaryPropertiesKHR).cast();
            }
            if v12 || has("VK_KHR_driver_properties") {
                driver.next = tail;
                tail = (&mut driver as *mut vk::PhysicalDeviceDriverProperties).cast();
            }
            props2.next = tail;
            i.get_physical_device_properties2(pd, &mut props2);

            // Features.
            let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT::default();
            let mut m5 = vk::PhysicalDeviceMaintenance5Features::default();
            let mut pb = vk::PhysicalDevicePipelineBinaryFeaturesKHR::default();
            let mut features2 = vk::PhysicalDeviceFeatures2::default();
            let mut tail: *mut c_void = std::ptr::null_mut();
            if has_gpl_ext {
                gpl.next = tail;
                tail = (&mut gpl as *mut vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT).cast();
            }
            if has_binary_ext {
                m5.next = tail;
                tail = (&mut m5 as *mut vk::PhysicalDeviceMaintenance5Features).cast();
                pb.next = tail;
                tail = (&mut pb as *mut vk::PhysicalDevicePipelineBinaryFeaturesKHR).cast();
            }
            if v13 {
                f13.next = tail;
                tail = (&mut f13 as *mut vk::PhysicalDeviceVulkan13Features).cast();
            }
            features2.next = tail;
            i.get_physical_device_features2(pd, &mut features2);

            let limits = &core.limits;
            Ok(PhysicalInfo {
                handle: pd,
                identity: DeviceIdentity {
                    vendor_id: core.vendor_id,
                    device_id: core.device_id,
                    driver_id: driver.driver_id.as_raw() as u32,
                    driver_version: core.driver_version,
                    api_version: core.api_version,
                    pipeline_cache_uuid: *core.pipeline_cache_uuid,
                    binary_global_key: Vec::new(),
                    device_name: string_of(core.device_name.as_bytes()),
                    driver_name: string_of(driver.driver_name.as_bytes()),
                    driver_info: string_of(driver.driver_info.as_bytes()),
                },
                supports: Supports {
                    pipeline_binaries: has_binary_ext
                        && pb.pipeline_binaries == vk::TRUE
                        && m5.maintenance5 == vk::TRUE,
                    internal_cache_control: has_binary_ext
                        && binary_props.pipeline_binary_internal_cache_control == vk::TRUE,
                    graphics_pipeline_library: has_gpl_ext && gpl.graphics_pipeline_library == vk::TRUE,
                    fast_linking: has_gpl_ext && gpl_props.graphics_pipeline_library_fast_linking == vk::TRUE,
                    dynamic_rendering: v13 && f13.dynamic_rendering == vk::TRUE,
                },
                max_bound_descriptor_sets: limits.max_bound_descriptor_sets,
                sample_counts: (limits.framebuffer_color_sample_counts & limits.framebuffer_depth_sample_counts).bits(),
            })
        }
    }

    /// Format features of `format` with optimal tiling.
    pub fn optimal_features(&self, pd: vk::PhysicalDevice, format: vk::Format) -> vk::FormatFeatureFlags {
        // SAFETY: `pd` came from this instance.
        unsafe { self.instance.get_physical_device_format_properties(pd, format) }.optimal_tiling_features
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some((messenger, _)) = &self.validation {
            use vk::ExtDebugUtilsExtensionInstanceCommands as _;
            // SAFETY: the messenger was created from this instance (`load_with`) and is
            // destroyed once, here, before the instance and before its user data (the
            // `MessengerData` in the same field, dropped after this function returns).
            unsafe { self.instance.destroy_debug_utils_messenger_ext(*messenger, None) }
        }
        if self._entry.is_some() {
            // SAFETY: the instance is granary's own (`load`); every `Gpu` holds an
            // `Arc<Driver>`, so no device made from it exists any more.
            unsafe { self.instance.destroy_instance(None) }
        }
    }
}

/// The first candidate Vulkan format of every texture format the device supports as an
/// attachment of its kind.
fn attachment_formats(driver: &Driver, pd: vk::PhysicalDevice) -> HashMap<TextureFormat, vk::Format> {
    let mut formats = HashMap::new();
    for f in TextureFormat::ALL.iter().copied() {
        let want = if f.is_depth_stencil() {
            vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT
        } else {
            vk::FormatFeatureFlags::COLOR_ATTACHMENT
        };
        if let Some(c) =
            super::state::texture_format_candidates(f).iter().find(|c| driver.optimal_features(pd, **c).contains(want))
        {
            formats.insert(f, *c);
        }
    }
    formats
}

/// What to enable when opening a device.
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// Capture with `VK_KHR_pipeline_binary` (else keep `VkPipelineCache` data).
    pub pipeline_binaries: bool,
    /// Enable graphics pipeline libraries.
    pub libraries: bool,
    /// With pipeline binaries: leave the driver's internal cache on (where the driver lets it
    /// be switched off, `pipelineBinaryInternalCacheControl`, granary switches it off by
    /// default so that every capture is a real compile).
    pub internal_cache: bool,
}

/// One logical device with its pipeline cache.
///
/// Thread safety: `Send + Sync`. Every method may be called from any number of threads at
/// once (see the module's synchronization notes).
pub struct Gpu {
    _driver: Arc<Driver>,
    device: Device,
    /// Whether granary created the device (and destroys it in `Drop`).
    owned: bool,
    /// The Vulkan format of each texture format the device can use as an attachment of its
    /// kind (colour, or depth/stencil); absent: it cannot.
    formats: HashMap<TextureFormat, vk::Format>,
    /// The physical device.
    pub info: PhysicalInfo,
    cache: vk::PipelineCache,
    binaries: bool,
    libraries: bool,
    global_key: Vec<u8>,
}

/// `(key, data)` of one pipeline binary, as the driver returned it (the bytes interned by
/// content: see [`Intern`]).
pub type RawBinary = (Vec<u8>, Arc<Blob>);

/// Turns a binary's bytes into the one shared in-memory copy of those bytes. NVIDIA returns
/// the same dictionary binary (hundreds of KB) with every pipeline after its first few hundred
/// compiles: the bytes are read into a reused per-thread buffer and copied only when new.
pub type Intern<'a> = &'a (dyn Fn(&[u8]) -> Arc<Blob> + Sync);

thread_local! {
    /// The buffer `vkGetPipelineBinaryDataKHR` writes into, reused by every capture on the
    /// thread (no allocation per binary, so no allocator churn of large blocks).
    static BINARY_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What to do with a pipeline being created.
#[derive(Clone, Copy)]
pub enum How<'a> {
    /// Harvest: capture its binaries (when the device captures them, else it goes into the
    /// device's own pipeline cache) and destroy it before returning.
    Capture(Intern<'a>),
    /// Run time: create it from `binaries` (in the driver's order) or, when there are none,
    /// from the shader modules with `cache`, and return it.
    Keep {
        /// Binaries to create it from (empty: compile from the modules).
        binaries: &'a [vk::PipelineBinaryKHR],
        /// Pipeline cache for a compile (ignored with binaries).
        cache: Option<&'a Cache>,
    },
}

/// A pipeline's creation result.
pub struct Created {
    /// `(key, data)` of each binary, in the driver's order (empty without pipeline binaries,
    /// and with [`How::Keep`]).
    pub binaries: Vec<RawBinary>,
    /// Time inside `vkCreate*Pipelines`.
    pub driver_time: Duration,
    /// The pipeline, with [`How::Keep`].
    pub pipeline: Option<Pipeline>,
    /// `VkPipelineCreationFeedback::flags` (with [`How::Keep`]; 0 if the driver wrote none).
    pub feedback: u32,
}

impl Gpu {
    /// Opens `info` as a logical device.
    pub fn open(driver: Arc<Driver>, info: PhysicalInfo, options: OpenOptions) -> Result<Arc<Gpu>, VulkanError> {
        let binaries = options.pipeline_binaries && info.supports.pipeline_binaries;
        let libraries = options.libraries && info.supports.graphics_pipeline_library;
        let mut ext: Vec<*const i8> = Vec::new();
        if libraries {
            ext.push(vk::KHR_PIPELINE_LIBRARY_EXTENSION.name.as_ptr());
            ext.push(vk::EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION.name.as_ptr());
        }
        if binaries {
            ext.push(vk::KHR_MAINTENANCE5_EXTENSION.name.as_ptr());
            ext.push(vk::KHR_PIPELINE_BINARY_EXTENSION.name.as_ptr());
        }
        let priority = 1.0f32;
        let queue = vk::DeviceQueueCreateInfo {
            queue_family_index: 0,
            queue_count: 1,
            queue_priorities: &priority,
            ..Default::default()
        };
        let mut f13 = vk::PhysicalDeviceVulkan13Features { dynamic_rendering: vk::TRUE, ..Default::default() };
        let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT {
            graphics_pipeline_library: vk::TRUE,
            ..Default::default()
        };
        let mut m5 = vk::PhysicalDeviceMaintenance5Features { maintenance5: vk::TRUE, ..Default::default() };
        let mut pb = vk::PhysicalDevicePipelineBinaryFeaturesKHR { pipeline_binaries: vk::TRUE, ..Default::default() };
        let mut cache_control =
            vk::DevicePipelineBinaryInternalCacheControlKHR { disable_internal_cache: vk::TRUE, ..Default::default() };
        let mut tail: *mut c_void = std::ptr::null_mut();
        if libraries {
            gpl.next = tail;
            tail = (&mut gpl as *mut vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT).cast();
        }
        if binaries {
            m5.next = tail;
            tail = (&mut m5 as *mut vk::PhysicalDeviceMaintenance5Features).cast();
            pb.next = tail;
            tail = (&mut pb as *mut vk::PhysicalDevicePipelineBinaryFeaturesKHR).cast();
            if info.supports.internal_cache_control && !options.internal_cache {
                // Harvests measure (and capture) real compiles: the driver's own cache is off.
                cache_control.next = tail as *const c_void;
                tail = (&mut cache_control as *mut vk::DevicePipelineBinaryInternalCacheControlKHR).cast();
            }
        }
        f13.next = tail;
        let create = vk::DeviceCreateInfo {
            next: (&mut f13 as *mut vk::PhysicalDeviceVulkan13Features).cast(),
            queue_create_info_count: 1,
            queue_create_infos: &queue,
            enabled_extension_count: ext.len() as u32,
            enabled_extension_names: ext.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `info.handle` came from `driver`'s instance; `create` and its chain point
        // only at locals (features, queue, extension names from 'static constants) that live
        // until the call returns; only supported extensions and features are enabled (checked
        // in `PhysicalInfo`).
        let device = unsafe { driver.instance.create_device(info.handle, &create, None) }
            .map_err(|e| VulkanError::call("vkCreateDevice", e))?;
        let cache = if binaries {
            vk::PipelineCache::null()
        } else {
            let ci = vk::PipelineCacheCreateInfo::default();
            // SAFETY: `device` is valid; the cache is internally synchronized (no flags).
            match unsafe { device.create_pipeline_cache(&ci, None) } {
                Ok(c) => c,
                Err(e) => {
                    // SAFETY: nothing was made from the device yet.
                    unsafe { device.destroy_device(None) };
                    return Err(VulkanError::call("vkCreatePipelineCache", e));
                }
            }
        };
        let mut global_key = Vec::new();
        if binaries {
            let mut key = vk::PipelineBinaryKeyKHR::default();
            // SAFETY: the extension is enabled; a null create info asks for the global key.
            match unsafe { device.get_pipeline_key_khr(None, &mut key) } {
                Ok(()) => global_key = key.key[..(key.key_size as usize).min(32)].to_vec(),
                Err(e) => {
                    // SAFETY: nothing was made from the device yet.
                    unsafe { device.destroy_device(None) };
                    return Err(VulkanError::call("vkGetPipelineKeyKHR", e));
                }
            }
        }
        let formats = attachment_formats(&driver, info.handle);
        Ok(Arc::new(Gpu {
            _driver: driver,
            device,
            owned: true,
            formats,
            info,
            cache,
            binaries,
            libraries,
            global_key,
        }))
    }

    /// Wraps the application's own device, created from `driver`'s instance (see
    /// [`Driver::borrowed`]) with the extensions and features `enabled` names (pipeline
    /// binaries: `VK_KHR_pipeline_binary` + `VK_KHR_maintenance5` with `pipelineBinaries`;
    /// libraries: `VK_KHR_pipeline_library` + `VK_EXT_graphics_pipeline_library`; always
    /// Vulkan 1.3 `dynamicRendering`). Granary never destroys it: the application keeps it
    /// alive until this value and everything made from it are dropped.
    pub fn borrowed(
        driver: Arc<Driver>,
        info: PhysicalInfo,
        device: &Device,
        enabled: OpenOptions,
    ) -> Result<Arc<Gpu>, VulkanError> {
        let binaries = enabled.pipeline_binaries && info.supports.pipeline_binaries;
        let libraries = enabled.libraries && info.supports.graphics_pipeline_library;
        let mut global_key = Vec::new();
        if binaries {
            let mut key = vk::PipelineBinaryKeyKHR::default();
            // SAFETY: the application enabled the extension (its promise in `enabled`); a null
            // create info asks for the global key.
            unsafe { device.get_pipeline_key_khr(None, &mut key) }
                .map_err(|e| VulkanError::call("vkGetPipelineKeyKHR", e))?;
            global_key = key.key[..(key.key_size as usize).min(32)].to_vec();
        }
        let formats = attachment_formats(&driver, info.handle);
        Ok(Arc::new(Gpu {
            _driver: driver,
            device: device.clone(),
            owned: false,
            formats,
            info,
            cache: vk::PipelineCache::null(),
            binaries,
            libraries,
            global_key,
        }))
    }

    /// The Vulkan format standing for `f` as an attachment on this device, if any.
    pub fn format(&self, f: TextureFormat) -> Option<vk::Format> {
        self.formats.get(&f).copied()
    }

    /// Whether binaries are captured with `VK_KHR_pipeline_binary`.
    pub fn captures_binaries(&self) -> bool {
        self.binaries
    }

    /// Whether graphics pipeline libraries are enabled.
    pub fn libraries(&self) -> bool {
        self.libraries
    }

    /// The pipeline-binary global key (empty without the extension).
    pub fn global_key(&self) -> &[u8] {
        &self.global_key
    }

    /// The `VkPipelineCache` data (empty when binaries are captured instead).
    pub fn cache_data(&self) -> Result<Vec<u8>, VulkanError> {
        if self.cache.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: the cache is internally synchronized; reading it while other threads create
        // pipelines into it is allowed.
        unsafe { self.device.get_pipeline_cache_data(self.cache) }
            .map_err(|e| VulkanError::call("vkGetPipelineCacheData", e))
    }

    /// Creates a shader module from SPIR-V bytes.
    pub fn module(self: &Arc<Self>, spirv: &[u8]) -> Result<Module, VulkanError> {
        if !spirv.len().is_multiple_of(4) || spirv.is_empty() {
            return Err(VulkanError::call("vkCreateShaderModule", "SPIR-V length is not a positive multiple of 4"));
        }
        // Copy to a `u32` buffer: the archive's bytes are 16-byte aligned, but a `Vec<u8>` from
        // elsewhere need not be.
        let words: Vec<u32> = spirv.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let info = vk::ShaderModuleCreateInfo { code_size: spirv.len(), code: words.as_ptr(), ..Default::default() };
        // SAFETY: `words` lives until the call returns; `code_size` is its length in bytes.
        let handle = unsafe { self.device.create_shader_module(&info, None) }
            .map_err(|e| VulkanError::call("vkCreateShaderModule", e))?;
        Ok(Module { gpu: self.clone(), handle })
    }

    /// Creates descriptor-set layouts and a pipeline layout.
    pub fn layout(self: &Arc<Self>, desc: &super::state::LayoutDesc) -> Result<Layout, VulkanError> {
        let mut layout = Layout { gpu: self.clone(), sets: Vec::new(), handle: vk::PipelineLayout::null() };
        for set in &desc.sets {
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = set
                .iter()
                .map(|b| vk::DescriptorSetLayoutBinding {
                    binding: b.binding,
                    descriptor_type: b.ty,
                    descriptor_count: b.count,
                    stage_flags: b.stages,
                    immutable_samplers: std::ptr::null(),
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo {
                binding_count: bindings.len() as u32,
                bindings: bindings.as_ptr(),
                ..Default::default()
            };
            // SAFETY: `bindings` lives until the call returns. On error `layout`'s Drop
            // destroys the set layouts made so far.
            let s = unsafe { self.device.create_descriptor_set_layout(&info, None) }
                .map_err(|e| VulkanError::call("vkCreateDescriptorSetLayout", e))?;
            layout.sets.push(s);
        }
        let ranges: Vec<vk::PushConstantRange> = desc
            .push_constants
            .iter()
            .map(|(size, stages)| vk::PushConstantRange { stage_flags: *stages, offset: 0, size: *size })
            .collect();
        let info = vk::PipelineLayoutCreateInfo {
            set_layout_count: layout.sets.len() as u32,
            set_layouts: layout.sets.as_ptr(),
            push_constant_range_count: ranges.len() as u32,
            push_constant_ranges: ranges.as_ptr(),
            ..Default::default()
        };
        // SAFETY: the set layouts and ranges live until the call returns.
        layout.handle = unsafe { self.device.create_pipeline_layout(&info, None) }
            .map_err(|e| VulkanError::call("vkCreatePipelineLayout", e))?;
        Ok(layout)
    }

    /// Creates a graphics pipeline (or, with `input.output == None`, a graphics pipeline
    /// library of the vertex-input, pre-rasterization and fragment-shader parts). With
    /// [`How::Capture`] it captures the pipeline's binaries and destroys it before returning;
    /// with [`How::Keep`] it creates it from binaries or modules and returns it.
    pub fn create_graphics(self: &Arc<Self>, input: &GraphicsInput<'_>, how: How<'_>) -> Result<Created, VulkanError> {
        let library = input.output.is_none();
        let stages: Vec<vk::PipelineShaderStageCreateInfo> = input
            .stages
            .iter()
            .map(|(m, stage, name)| vk::PipelineShaderStageCreateInfo {
                stage: *stage,
                module: m.map_or(vk::ShaderModule::null(), |m| m.handle),
                name: name.as_ptr(),
                ..Default::default()
            })
            .collect();
        let vertex_input = vk::PipelineVertexInputStateCreateInfo {
            vertex_binding_description_count: input.bindings.len() as u32,
            vertex_binding_descriptions: input.bindings.as_ptr(),
            vertex_attribute_description_count: input.attributes.len() as u32,
            vertex_attribute_descriptions: input.attributes.as_ptr(),
            ..Default::default()
        };
        let assembly = vk::PipelineInputAssemblyStateCreateInfo {
            topology: input.topology,
            primitive_restart_enable: vk::Bool32::from(input.primitive_restart),
            ..Default::default()
        };
        let viewport =
            vk::PipelineViewportStateCreateInfo { viewport_count: 1, scissor_count: 1, ..Default::default() };
        let (bias_enable, bias_constant, bias_slope, bias_clamp) = input.depth_bias.unwrap_or((false, 0.0, 0.0, 0.0));
        let raster = vk::PipelineRasterizationStateCreateInfo {
            polygon_mode: vk::PolygonMode::FILL,
            cull_mode: input.cull,
            front_face: input.front_face,
            depth_bias_enable: vk::Bool32::from(bias_enable),
            depth_bias_constant_factor: bias_constant,
            depth_bias_slope_factor: bias_slope,
            depth_bias_clamp: bias_clamp,
            line_width: 1.0,
            ..Default::default()
        };
        let multisample = vk::PipelineMultisampleStateCreateInfo {
            rasterization_samples: input.samples,
            alpha_to_coverage_enable: vk::Bool32::from(input.alpha_to_coverage),
            ..Default::default()
        };
        let depth_stencil = input.depth_stencil.unwrap_or_default();
        let (formats, attachments): (Vec<vk::Format>, Vec<vk::PipelineColorBlendAttachmentState>) =
            input.output.iter().flatten().copied().unzip();
        let blend = vk::PipelineColorBlendStateCreateInfo {
            attachment_count: attachments.len() as u32,
            attachments: attachments.as_ptr(),
            ..Default::default()
        };
        let mut dynamic_states = vec![vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        if input.depth_stencil.is_some() {
            dynamic_states.push(vk::DynamicState::STENCIL_REFERENCE);
        }
        if !library {
            dynamic_states.push(vk::DynamicState::BLEND_CONSTANTS);
        }
        let dynamic = vk::PipelineDynamicStateCreateInfo {
            dynamic_state_count: dynamic_states.len() as u32,
            dynamic_states: dynamic_states.as_ptr(),
            ..Default::default()
        };

        // The pNext chain: rendering formats → [library parts] → [flags2] → [binaries] →
        // [creation feedback].
        let mut flags2 = vk::PipelineCreateFlags2CreateInfo::default();
        let mut parts = vk::GraphicsPipelineLibraryCreateInfoEXT {
            flags: vk::GraphicsPipelineLibraryFlagsEXT::VERTEX_INPUT_INTERFACE
                | vk::GraphicsPipelineLibraryFlagsEXT::PRE_RASTERIZATION_SHADERS
                | vk::GraphicsPipelineLibraryFlagsEXT::FRAGMENT_SHADER,
            ..Default::default()
        };
        let mut rendering = vk::PipelineRenderingCreateInfo {
            color_attachment_count: formats.len() as u32,
            color_attachment_formats: formats.as_ptr(),
            depth_attachment_format: input.depth_format,
            stencil_attachment_format: input.stencil_format,
            ..Default::default()
        };
        let mut tail: *const c_void = std::ptr::null();
        let mut feedback = vk::PipelineCreationFeedback::default();
        let mut feedback_info =
            vk::PipelineCreationFeedbackCreateInfo { pipeline_creation_feedback: &mut feedback, ..Default::default() };
        let mut binary_info = vk::PipelineBinaryInfoKHR::default();
        let (capture, cache) = match how {
            How::Capture(_) => (self.binaries, self.cache),
            How::Keep { binaries, cache } => {
                feedback_info.next = tail;
                tail = (&feedback_info as *const vk::PipelineCreationFeedbackCreateInfo).cast();
                if !binaries.is_empty() {
                    binary_info.binary_count = binaries.len() as u32;
                    binary_info.pipeline_binaries = binaries.as_ptr();
                    binary_info.next = tail;
                    tail = (&binary_info as *const vk::PipelineBinaryInfoKHR).cast();
                }
                // A pipeline made from binaries may not use a pipeline cache.
                (
                    false,
                    if binaries.is_empty() {
                        cache.map_or(vk::PipelineCache::null(), |c| c.handle)
                    } else {
                        vk::PipelineCache::null()
                    },
                )
            }
        };
        if capture || (library && self.binaries) {
            let mut f =
                if capture { vk::PipelineCreateFlags2::CAPTURE_DATA_KHR } else { vk::PipelineCreateFlags2::empty() };
            if library {
                f |= vk::PipelineCreateFlags2::LIBRARY_KHR;
            }
            flags2.flags = f;
            flags2.next = tail;
            tail = (&flags2 as *const vk::PipelineCreateFlags2CreateInfo).cast();
        }
        if library {
            parts.next = tail;
            tail = (&parts as *const vk::GraphicsPipelineLibraryCreateInfoEXT).cast();
        }
        rendering.next = tail;
        let info = vk::GraphicsPipelineCreateInfo {
            next: (&rendering as *const vk::PipelineRenderingCreateInfo).cast(),
            flags: if library { vk::PipelineCreateFlags::LIBRARY_KHR } else { vk::PipelineCreateFlags::empty() },
            stage_count: stages.len() as u32,
            stages: stages.as_ptr(),
            vertex_input_state: &vertex_input,
            input_assembly_state: &assembly,
            viewport_state: &viewport,
            rasterization_state: &raster,
            multisample_state: &multisample,
            depth_stencil_state: &depth_stencil,
            color_blend_state: if library { std::ptr::null() } else { &blend },
            dynamic_state: &dynamic,
            layout: input.layout.handle,
            ..Default::default()
        };
        let start = Instant::now();
        // SAFETY: every pointer in `info` and its chain refers to a local above (or to
        // `input` / `how`, borrowed for the whole call) that lives until the call returns;
        // modules, layout, binaries and cache are alive (the caller holds them); the cache is
        // internally synchronized. A shader module is null only together with binaries, where
        // the specification says modules are ignored.
        let result = unsafe { self.device.create_graphics_pipelines(cache, &[info], None) };
        let driver_time = start.elapsed();
        let pipelines = match result {
            Ok((p, _)) => p,
            Err(e) => return Err(VulkanError::call("vkCreateGraphicsPipelines", e)),
        };
        let pipeline = Pipeline { gpu: self.clone(), handle: pipelines.first().copied().unwrap_or_default() };
        self.finish(pipeline, how, driver_time, feedback.flags)
    }

    /// Creates a compute pipeline; as [`create_graphics`](Self::create_graphics).
    pub fn create_compute(
        self: &Arc<Self>,
        module: Option<&Module>,
        entry: &CStr,
        layout: &Layout,
        how: How<'_>,
    ) -> Result<Created, VulkanError> {
        let flags2 = vk::PipelineCreateFlags2CreateInfo {
            flags: vk::PipelineCreateFlags2::CAPTURE_DATA_KHR,
            ..Default::default()
        };
        let mut feedback = vk::PipelineCreationFeedback::default();
        let feedback_info =
            vk::PipelineCreationFeedbackCreateInfo { pipeline_creation_feedback: &mut feedback, ..Default::default() };
        let mut binary_info = vk::PipelineBinaryInfoKHR::default();
        let mut tail: *const c_void = std::ptr::null();
        let cache = match how {
            How::Capture(_) => {
                if self.binaries {
                    tail = (&flags2 as *const vk::PipelineCreateFlags2CreateInfo).cast();
                }
                self.cache
            }
            How::Keep { binaries, cache } => {
                tail = (&feedback_info as *const vk::PipelineCreationFeedbackCreateInfo).cast();
                if binaries.is_empty() {
                    cache.map_or(vk::PipelineCache::null(), |c| c.handle)
                } else {
                    binary_info.binary_count = binaries.len() as u32;
                    binary_info.pipeline_binaries = binaries.as_ptr();
                    binary_info.next = tail;
                    tail = (&binary_info as *const vk::PipelineBinaryInfoKHR).cast();
                    vk::PipelineCache::null()
                }
            }
        };
        let info = vk::ComputePipelineCreateInfo {
            next: tail,
            stage: vk::PipelineShaderStageCreateInfo {
                stage: vk::ShaderStageFlags::COMPUTE,
                module: module.map_or(vk::ShaderModule::null(), |m| m.handle),
                name: entry.as_ptr(),
                ..Default::default()
            },
            layout: layout.handle,
            ..Default::default()
        };
        let start = Instant::now();
        // SAFETY: as in `create_graphics`.
        let result = unsafe { self.device.create_compute_pipelines(cache, &[info], None) };
        let driver_time = start.elapsed();
        let pipelines = result.map_err(|e| VulkanError::call("vkCreateComputePipelines", e))?.0;
        let pipeline = Pipeline { gpu: self.clone(), handle: pipelines.first().copied().unwrap_or_default() };
        self.finish(pipeline, how, driver_time, feedback.flags)
    }

    /// Captures (and destroys) or keeps a freshly created pipeline.
    fn finish(
        &self,
        pipeline: Pipeline,
        how: How<'_>,
        driver_time: Duration,
        feedback: vk::PipelineCreationFeedbackFlags,
    ) -> Result<Created, VulkanError> {
        match how {
            How::Capture(intern) => {
                let binaries = self.capture(&pipeline, intern)?;
                Ok(Created { binaries, driver_time, pipeline: None, feedback: feedback.bits() })
            }
            How::Keep { .. } => {
                Ok(Created { binaries: Vec::new(), driver_time, pipeline: Some(pipeline), feedback: feedback.bits() })
            }
        }
    }

    /// Creates pipeline binaries from `(key, data)` pairs in the driver's order (the order
    /// `vkCreatePipelineBinariesKHR` returned them at capture), to hand to
    /// [`How::Keep`]. The bytes must already be checked (the archive's content hashes).
    pub fn binaries_from_data(self: &Arc<Self>, binaries: &[(&[u8], &[u8])]) -> Result<Binaries, VulkanError> {
        if !self.binaries {
            return Err(VulkanError::Unsupported {
                device: self.info.identity.device_name.clone(),
                message: "VK_KHR_pipeline_binary is not enabled".into(),
            });
        }
        if binaries.is_empty() || binaries.len() > 64 {
            return Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("{} binaries", binaries.len())));
        }
        let mut keys = Vec::with_capacity(binaries.len());
        let mut data = Vec::with_capacity(binaries.len());
        for (key, bytes) in binaries {
            if key.is_empty() || key.len() > 32 || bytes.is_empty() {
                return Err(VulkanError::call("vkCreatePipelineBinariesKHR", "empty or oversized key, or empty data"));
            }
            let mut bytes32 = [0u8; 32];
            bytes32[..key.len()].copy_from_slice(key);
            keys.push(vk::PipelineBinaryKeyKHR {
                key_size: key.len() as u32,
                key: bytes32.into(),
                ..Default::default()
            });
            // The driver only reads `data` (the structure's pointer is `*mut` in the C API).
            data.push(vk::PipelineBinaryDataKHR { data_size: bytes.len(), data: bytes.as_ptr() as *mut c_void });
        }
        let keys_and_data = vk::PipelineBinaryKeysAndDataKHR {
            binary_count: binaries.len() as u32,
            pipeline_binary_keys: keys.as_ptr(),
            pipeline_binary_data: data.as_ptr(),
        };
        let create = vk::PipelineBinaryCreateInfoKHR { keys_and_data_info: &keys_and_data, ..Default::default() };
        let mut raw = vec![vk::PipelineBinaryKHR::null(); binaries.len()];
        let mut handles = vk::PipelineBinaryHandlesInfoKHR {
            pipeline_binary_count: raw.len() as u32,
            pipeline_binaries: raw.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: `keys`, `data` (pointing into the caller's checked byte slices), `raw` and
        // the info structures live until the call returns; `raw` has room for every handle.
        let r = unsafe { self.device.create_pipeline_binaries_khr(&create, None, &mut handles) };
        let out = Binaries { gpu: self.clone(), handles: raw };
        match r {
            Ok(vk::SuccessCode::SUCCESS) => Ok(out),
            Ok(other) => Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("{other:?}"))),
            Err(e) => Err(VulkanError::call("vkCreatePipelineBinariesKHR", e)),
        }
    }

    /// Links a library made by [`create_graphics`](Self::create_graphics) with
    /// `output == None` to a fragment-output part built from `output` (formats and blend per
    /// colour attachment), into a complete pipeline.
    pub fn link(
        self: &Arc<Self>,
        library: &Pipeline,
        input: &GraphicsInput<'_>,
        output: &[(vk::Format, vk::PipelineColorBlendAttachmentState)],
    ) -> Result<Created, VulkanError> {
        let (formats, attachments): (Vec<vk::Format>, Vec<vk::PipelineColorBlendAttachmentState>) =
            output.iter().copied().unzip();
        let multisample = vk::PipelineMultisampleStateCreateInfo {
            rasterization_samples: input.samples,
            alpha_to_coverage_enable: vk::Bool32::from(input.alpha_to_coverage),
            ..Default::default()
        };
        let blend = vk::PipelineColorBlendStateCreateInfo {
            attachment_count: attachments.len() as u32,
            attachments: attachments.as_ptr(),
            ..Default::default()
        };
        let dynamic_states = [vk::DynamicState::BLEND_CONSTANTS];
        let dynamic = vk::PipelineDynamicStateCreateInfo {
            dynamic_state_count: dynamic_states.len() as u32,
            dynamic_states: dynamic_states.as_ptr(),
            ..Default::default()
        };
        let parts = vk::GraphicsPipelineLibraryCreateInfoEXT {
            flags: vk::GraphicsPipelineLibraryFlagsEXT::FRAGMENT_OUTPUT_INTERFACE,
            ..Default::default()
        };
        let rendering = vk::PipelineRenderingCreateInfo {
            next: (&parts as *const vk::GraphicsPipelineLibraryCreateInfoEXT).cast(),
            color_attachment_count: formats.len() as u32,
            color_attachment_formats: formats.as_ptr(),
            depth_attachment_format: input.depth_format,
            stencil_attachment_format: input.stencil_format,
            ..Default::default()
        };
        let info = vk::GraphicsPipelineCreateInfo {
            next: (&rendering as *const vk::PipelineRenderingCreateInfo).cast(),
            flags: vk::PipelineCreateFlags::LIBRARY_KHR,
            multisample_state: &multisample,
            color_blend_state: &blend,
            dynamic_state: &dynamic,
            ..Default::default()
        };
        let start = Instant::now();
        // SAFETY: every pointer in `info` and its chain refers to a local above that lives
        // until the call returns. A fragment-output library uses no shader and no layout.
        let r = unsafe { self.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
        let output_library = Pipeline {
            gpu: self.clone(),
            handle: r
                .map_err(|e| VulkanError::call("vkCreateGraphicsPipelines (fragment output)", e))?
                .0
                .first()
                .copied()
                .unwrap_or_default(),
        };
        let libraries = [library.handle, output_library.handle];
        let mut feedback = vk::PipelineCreationFeedback::default();
        let feedback_info =
            vk::PipelineCreationFeedbackCreateInfo { pipeline_creation_feedback: &mut feedback, ..Default::default() };
        let link = vk::PipelineLibraryCreateInfoKHR {
            next: (&feedback_info as *const vk::PipelineCreationFeedbackCreateInfo).cast(),
            library_count: libraries.len() as u32,
            libraries: libraries.as_ptr(),
            ..Default::default()
        };
        let info = vk::GraphicsPipelineCreateInfo {
            next: (&link as *const vk::PipelineLibraryCreateInfoKHR).cast(),
            layout: input.layout.handle,
            ..Default::default()
        };
        // SAFETY: both libraries are alive (`library` is borrowed, `output_library` is local)
        // and were created on this device; `link` and `feedback_info` live until the call
        // returns; the layout is the one the shader library was created with.
        let r = unsafe { self.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
        let driver_time = start.elapsed();
        let handle = r.map_err(|e| VulkanError::call("vkCreateGraphicsPipelines (link)", e))?.0.first().copied();
        drop(output_library);
        Ok(Created {
            binaries: Vec::new(),
            driver_time,
            pipeline: Some(Pipeline { gpu: self.clone(), handle: handle.unwrap_or_default() }),
            feedback: feedback.flags.bits(),
        })
    }

    /// Creates an internally synchronized `VkPipelineCache`, seeded with `initial` (data from
    /// `vkGetPipelineCacheData` of a matching device; a driver ignores data whose header does
    /// not match it).
    pub fn pipeline_cache(self: &Arc<Self>, initial: &[u8]) -> Result<Cache, VulkanError> {
        let info = vk::PipelineCacheCreateInfo {
            initial_data_size: initial.len(),
            initial_data: if initial.is_empty() { std::ptr::null() } else { initial.as_ptr().cast() },
            ..Default::default()
        };
        // SAFETY: `initial` lives until the call returns; no flags: internally synchronized.
        let handle = unsafe { self.device.create_pipeline_cache(&info, None) }
            .map_err(|e| VulkanError::call("vkCreatePipelineCache", e))?;
        Ok(Cache { gpu: self.clone(), handle })
    }

    /// [`Gpu::pipeline_cache`] seeded with every blob of `blobs`: the first seeds the cache,
    /// each further one seeds a temporary cache that `vkMergePipelineCaches` adds to it (an
    /// archive holds several blobs for one device where shards or `--isolate` workers each
    /// wrote one).
    pub fn pipeline_cache_merged(self: &Arc<Self>, blobs: &[&[u8]]) -> Result<Cache, VulkanError> {
        let cache = self.pipeline_cache(blobs.first().copied().unwrap_or_default())?;
        if blobs.len() > 1 {
            let sources = blobs[1..].iter().map(|b| self.pipeline_cache(b)).collect::<Result<Vec<_>, _>>()?;
            let handles: Vec<vk::PipelineCache> = sources.iter().map(|c| c.handle).collect();
            // SAFETY: the destination was created just above and has not been handed out, so
            // no other thread can use it (the spec requires host access to it be externally
            // synchronized); the sources are distinct caches of this device (each `Cache`
            // owns its handle), alive until `sources` drops after the call.
            unsafe { self.device.merge_pipeline_caches(cache.handle, &handles) }
                .map_err(|e| VulkanError::call("vkMergePipelineCaches", e))?;
        }
        Ok(cache)
    }

    /// The pipeline's binaries (`VK_KHR_pipeline_binary`), copied out; the binaries are
    /// destroyed and the pipeline's captured data released before returning.
    fn capture(&self, pipeline: &Pipeline, intern: Intern<'_>) -> Result<Vec<RawBinary>, VulkanError> {
        if !self.binaries {
            return Ok(Vec::new());
        }
        let create = vk::PipelineBinaryCreateInfoKHR { pipeline: pipeline.handle, ..Default::default() };
        let mut handles = vk::PipelineBinaryHandlesInfoKHR::default();
        // SAFETY: the pipeline was created with CAPTURE_DATA and lives (guard); a null
        // `pipeline_binaries` asks for the count.
        let r = unsafe { self.device.create_pipeline_binaries_khr(&create, None, &mut handles) };
        r.map_err(|e| VulkanError::call("vkCreatePipelineBinariesKHR (count)", e))?;
        let count = handles.pipeline_binary_count as usize;
        if count == 0 || count > 64 {
            return Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("driver reported {count} binaries")));
        }
        let mut raw = vec![vk::PipelineBinaryKHR::null(); count];
        handles.pipeline_binaries = raw.as_mut_ptr();
        // SAFETY: `raw` has room for `pipeline_binary_count` handles and lives until return.
        let r = unsafe { self.device.create_pipeline_binaries_khr(&create, None, &mut handles) };
        let guard = BinaryGuard { gpu: self, handles: raw };
        match r {
            Ok(vk::SuccessCode::SUCCESS) => {}
            Ok(other) => {
                return Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("{other:?}")));
            }
            Err(e) => return Err(VulkanError::call("vkCreatePipelineBinariesKHR", e)),
        }
        let mut out = Vec::with_capacity(count);
        for &binary in &guard.handles {
            out.push(self.binary_data(binary, intern)?);
        }
        drop(guard);
        let release = vk::ReleaseCapturedPipelineDataInfoKHR { pipeline: pipeline.handle, ..Default::default() };
        // SAFETY: the pipeline is local to this call (guard) and its data was captured.
        unsafe { self.device.release_captured_pipeline_data_khr(&release, None) }
            .map_err(|e| VulkanError::call("vkReleaseCapturedPipelineDataKHR", e))?;
        Ok(out)
    }

    fn binary_data(&self, binary: vk::PipelineBinaryKHR, intern: Intern<'_>) -> Result<RawBinary, VulkanError> {
        let info = vk::PipelineBinaryDataInfoKHR { pipeline_binary: binary, ..Default::default() };
        let mut key = vk::PipelineBinaryKeyKHR::default();
        let mut size = 0usize;
        let get = self.device.commands().get_pipeline_binary_data_khr;
        // SAFETY: the raw command is called with a valid key pointer on both calls (a null key
        // on the size query crashes some drivers); a null data pointer asks for the size.
        let r = unsafe { get(self.device.handle(), &info, &mut key, &mut size, std::ptr::null_mut()) };
        if r != vk::Result::SUCCESS {
            return Err(VulkanError::call("vkGetPipelineBinaryDataKHR (size)", r));
        }
        if size == 0 || size > 64 << 20 {
            return Err(VulkanError::call("vkGetPipelineBinaryDataKHR", format!("driver reported {size} bytes")));
        }
        let data = BINARY_BUFFER.with_borrow_mut(|buf| {
            buf.clear();
            buf.resize(size, 0);
            let mut got = size;
            // SAFETY: `buf` has `size` writable bytes; the driver writes at most `got` of them.
            let r = unsafe { get(self.device.handle(), &info, &mut key, &mut got, buf.as_mut_ptr().cast()) };
            if r != vk::Result::SUCCESS {
                return Err(VulkanError::call("vkGetPipelineBinaryDataKHR", r));
            }
            Ok(intern(&buf[..got.min(size)]))
        })?;
        let n = (key.key_size as usize).min(32);
        if n == 0 {
            return Err(VulkanError::call("vkGetPipelineBinaryDataKHR", "driver returned an empty binary key"));
        }
        Ok((key.key[..n].to_vec(), data))
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: every module, layout, pipeline, binary and cache holds an `Arc<Gpu>`, so no
        // object made from the device is left; no other thread can reach `self`. A borrowed
        // device is the application's to destroy.
        unsafe {
            if !self.cache.is_null() {
                self.device.destroy_pipeline_cache(self.cache, None);
            }
            if self.owned {
                self.device.destroy_device(None);
            }
        }
    }
}

/// A `VkPipeline` (or pipeline library), destroyed on drop unless taken with
/// [`into_raw`](Pipeline::into_raw). At capture it lives only inside the creating call.
///
/// Thread safety: `Send + Sync`; the handle is only read (bound in command buffers) by the
/// application after it is created.
pub struct Pipeline {
    gpu: Arc<Gpu>,
    handle: vk::Pipeline,
}

impl Pipeline {
    /// The handle, still owned by this value.
    pub fn handle(&self) -> vk::Pipeline {
        self.handle
    }
    /// Hands the pipeline over to the caller, who must destroy it (`vkDestroyPipeline`) before
    /// the device.
    pub fn into_raw(mut self) -> vk::Pipeline {
        std::mem::take(&mut self.handle)
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: the pipeline is owned by this value (not handed out with `into_raw`);
            // granary records no command buffer, so none can still use it. The caller of
            // `Keep` drops it only once its own command buffers are done with it.
            unsafe { self.gpu.device.destroy_pipeline(self.handle, None) }
        }
    }
}

/// Pipeline binaries made from archived data ([`Gpu::binaries_from_data`]), destroyed on
/// drop (a pipeline created from them does not need them afterwards).
pub struct Binaries {
    gpu: Arc<Gpu>,
    handles: Vec<vk::PipelineBinaryKHR>,
}

impl Binaries {
    /// The handles, in the driver's order.
    pub fn handles(&self) -> &[vk::PipelineBinaryKHR] {
        &self.handles
    }
}

impl Drop for Binaries {
    fn drop(&mut self) {
        for h in &self.handles {
            if !h.is_null() {
                // SAFETY: the binaries are owned by this value; pipeline creation reads them
                // only during the call.
                unsafe { self.gpu.device.destroy_pipeline_binary_khr(*h, None) }
            }
        }
    }
}

/// An internally synchronized `VkPipelineCache` ([`Gpu::pipeline_cache`]).
pub struct Cache {
    gpu: Arc<Gpu>,
    handle: vk::PipelineCache,
}

impl Cache {
    /// `vkGetPipelineCacheData`.
    pub fn data(&self) -> Result<Vec<u8>, VulkanError> {
        // SAFETY: the cache is internally synchronized; reading it while other threads create
        // pipelines with it is allowed.
        unsafe { self.gpu.device.get_pipeline_cache_data(self.handle) }
            .map_err(|e| VulkanError::call("vkGetPipelineCacheData", e))
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // SAFETY: no creation can still use the cache: every user borrows this value.
        unsafe { self.gpu.device.destroy_pipeline_cache(self.handle, None) }
    }
}

/// Destroys pipeline binaries when the capturing call ends.
struct BinaryGuard<'a> {
    gpu: &'a Gpu,
    handles: Vec<vk::PipelineBinaryKHR>,
}

impl Drop for BinaryGuard<'_> {
    fn drop(&mut self) {
        for h in &self.handles {
            if !h.is_null() {
                // SAFETY: the binaries are local to the capturing call.
                unsafe { self.gpu.device.destroy_pipeline_binary_khr(*h, None) }
            }
        }
    }
}

/// A `VkShaderModule`, destroyed when the last compile using it drops its `Arc`.
pub struct Module {
    gpu: Arc<Gpu>,
    handle: vk::ShaderModule,
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: no pipeline creation can still use the module: every user holds the `Arc`.
        unsafe { self.gpu.device.destroy_shader_module(self.handle, None) }
    }
}

/// Descriptor-set layouts and the pipeline layout made from them.
pub struct Layout {
    gpu: Arc<Gpu>,
    sets: Vec<vk::DescriptorSetLayout>,
    handle: vk::PipelineLayout,
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: as for `Module`; the pipeline layout goes before the set layouts it uses.
        unsafe {
            if !self.handle.is_null() {
                self.gpu.device.destroy_pipeline_layout(self.handle, None);
            }
            for s in &self.sets {
                self.gpu.device.destroy_descriptor_set_layout(*s, None);
            }
        }
    }
}

/// Depth/stencil state of a graphics pipeline.
pub type DepthStencil = vk::PipelineDepthStencilStateCreateInfo;

/// Everything one graphics pipeline (or library) is made of.
pub struct GraphicsInput<'a> {
    /// `(module, stage, entry point)` per stage; the module is `None` only when the pipeline
    /// is created from binaries (the specification ignores modules then).
    pub stages: Vec<(Option<&'a Module>, vk::ShaderStageFlags, CString)>,
    /// Vertex buffer bindings.
    pub bindings: Vec<vk::VertexInputBindingDescription>,
    /// Vertex attributes.
    pub attributes: Vec<vk::VertexInputAttributeDescription>,
    /// Topology.
    pub topology: vk::PrimitiveTopology,
    /// Primitive restart.
    pub primitive_restart: bool,
    /// Culling.
    pub cull: vk::CullModeFlags,
    /// Winding.
    pub front_face: vk::FrontFace,
    /// `(enable, constant, slope, clamp)`.
    pub depth_bias: Option<(bool, f32, f32, f32)>,
    /// Samples.
    pub samples: vk::SampleCountFlags,
    /// Alpha to coverage.
    pub alpha_to_coverage: bool,
    /// Depth/stencil state (`None`: no depth/stencil attachment).
    pub depth_stencil: Option<DepthStencil>,
    /// Depth attachment format (`UNDEFINED` if none).
    pub depth_format: vk::Format,
    /// Stencil attachment format (`UNDEFINED` if none).
    pub stencil_format: vk::Format,
    /// Colour attachments; `None` builds a library without the fragment-output part.
    pub output: Option<Vec<(vk::Format, vk::PipelineColorBlendAttachmentState)>>,
    /// The pipeline layout.
    pub layout: &'a Layout,
}

// `Driver`, `Gpu`, `Module` and `Layout` are `Send + Sync` without any `unsafe impl`:
// Vulkan handles are plain integers in vulkanalia and its `Instance`/`Device` are `Send + Sync`;
// what makes sharing them correct is the external-synchronization discipline above.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Driver>();
    assert_send_sync::<Gpu>();
    assert_send_sync::<Module>();
    assert_send_sync::<Layout>();
    assert_send_sync::<Pipeline>();
    assert_send_sync::<Binaries>();
    assert_send_sync::<Cache>();
};
