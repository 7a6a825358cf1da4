//! The Vulkan loader, the instance and physical devices: what each device is (its identity)
//! and supports (extensions, core features, limits).
//!
//! # Object lifetime rules
//!
//! [`Driver`] owns the loader library and the `VkInstance` ([`Driver::load`]), or wraps the
//! application's instance without owning it ([`Driver::borrowed`], `unsafe`: the application
//! keeps it alive). Every [`Gpu`](super::Gpu) holds an `Arc<Driver>`, so an owned instance is
//! destroyed only after the last device; with validation, the debug messenger is destroyed
//! in `Drop` before the instance and before the log its user data points at.
//!
//! # External synchronization
//!
//! Instance-level queries (`vkEnumeratePhysicalDevices`, `vkGetPhysicalDevice*`) have no
//! externally synchronized parameter; `vkDestroyInstance` runs only in `Drop`.

use super::error::VulkanError;
use super::features::Limits;
use crate::device::DeviceIdentity;
use crate::render_state::TextureFormat;
use std::collections::{BTreeSet, HashMap};
use std::ffi::c_void;
use std::sync::Arc;
use vulkanalia::loader::{LibloadingLoader, LIBRARY};
use vulkanalia::prelude::v1_3::*;

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
    /// global key (that needs an open device: [`Gpu::global_key`](super::Gpu::global_key)).
    pub identity: DeviceIdentity,
    /// What it supports of what granary uses.
    pub supports: Supports,
    /// The limits pipelines are checked against.
    pub limits: Limits,
    /// Sample counts usable for colour and depth attachments (intersection).
    pub sample_counts: u32,
    /// The device extensions it has.
    pub extensions: BTreeSet<String>,
    /// The `VK_EXT_extended_dynamic_state3` members it supports of those granary enables, by
    /// their index in `VkPhysicalDeviceExtendedDynamicState3FeaturesEXT` (bit `i`).
    pub extended_dynamic_state3: u32,
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

    /// Wraps the application's own instance. Granary never destroys it.
    ///
    /// # Safety
    ///
    /// `instance` must be a valid instance of Vulkan 1.3 or later, and the application must
    /// keep it alive until every [`Gpu`](super::Gpu) made from this driver, and everything
    /// made from those, is dropped.
    pub unsafe fn borrowed(instance: &Instance) -> Arc<Driver> {
        Arc::new(Driver { _entry: None, instance: instance.clone(), validation: None })
    }

    /// The instance (for the device module's `vkCreateDevice`).
    pub(super) fn instance(&self) -> &Instance {
        &self.instance
    }

    /// What `physical` is and supports (without the global key: see [`Gpu::global_key`](super::Gpu::global_key)).
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
            let mut p13 = vk::PhysicalDeviceVulkan13Properties::default();
            let mut rt_props = vk::PhysicalDeviceRayTracingPipelinePropertiesKHR::default();
            let mut tail: *mut c_void = std::ptr::null_mut();
            if has("VK_KHR_ray_tracing_pipeline") {
                rt_props.next = tail;
                tail = (&mut rt_props as *mut vk::PhysicalDeviceRayTracingPipelinePropertiesKHR).cast();
            }
            if v13 {
                p13.next = tail;
                tail = (&mut p13 as *mut vk::PhysicalDeviceVulkan13Properties).cast();
            }
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

            // Features: every structure granary knows, linked only where its extension is present
            // (the device is at least 1.2 for the 1.1–1.3 structures; a 1.1 device is refused
            // when opened, for want of dynamic rendering).
            let mut chain = super::features::FeatureChain::for_extensions(&|n| has(n));
            let mut m5 = vk::PhysicalDeviceMaintenance5Features::default();
            let mut pb = vk::PhysicalDevicePipelineBinaryFeaturesKHR::default();
            let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT::default();
            // The pipeline-binary and library structures, then granary's feature chain.
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
            let features2: *mut vk::PhysicalDeviceFeatures2 = if v13 {
                chain.link(tail).cast()
            } else {
                // Before 1.3 (refused when opened, for want of dynamic rendering): the core
                // structure with the binary and library ones only.
                chain.core.next = tail;
                &mut chain.core
            };
            i.get_physical_device_features2(pd, &mut *features2);
            let f13 = chain.v13;

            let limits = &core.limits;
            Ok(PhysicalInfo {
                handle: pd,
                identity: DeviceIdentity {
                    vendor_id: core.vendor_id,
                    device_id: core.device_id,
                    driver_id: driver.driver_id.as_raw() as u32,
                    driver_version: core.driver_version,
                    api_version: core.api_version,
                    // What `Gpu::open` enables: every known feature the device supports.
                    features: chain.features(),
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
                limits: Limits {
                    min_subgroup_size: p13.min_subgroup_size,
                    max_subgroup_size: p13.max_subgroup_size,
                    required_subgroup_size_stages: p13.required_subgroup_size_stages.bits(),
                    max_ray_recursion_depth: rt_props.max_ray_recursion_depth,
                    ..Limits::from_vk(limits)
                },
                sample_counts: (limits.framebuffer_color_sample_counts & limits.framebuffer_depth_sample_counts).bits(),
                extended_dynamic_state3: chain.eds3_members(),
                extensions,
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
pub(super) fn attachment_formats(driver: &Driver, pd: vk::PhysicalDevice) -> HashMap<TextureFormat, vk::Format> {
    let mut formats = HashMap::new();
    for f in TextureFormat::ALL.iter().copied() {
        let want = if f.is_depth_stencil() {
            vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT
        } else {
            vk::FormatFeatureFlags::COLOR_ATTACHMENT
        };
        if let Some(c) = super::translate::texture_format_candidates(f)
            .iter()
            .find(|c| driver.optimal_features(pd, **c).contains(want))
        {
            formats.insert(f, *c);
        }
    }
    formats
}

/// `major.minor.patch` of a Vulkan version number.
pub fn api_string(v: u32) -> String {
    format!("{}.{}.{}", (v >> 22) & 0x7f, (v >> 12) & 0x3ff, v & 0xfff)
}
