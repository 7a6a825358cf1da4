//! Every Vulkan call granary makes, and the only `unsafe` code of the crate.
//!
//! # Object lifetime rules
//!
//! 1. [`Driver`] owns the loader library and the `VkInstance`. Every [`Gpu`] holds an
//!    `Arc<Driver>`, so the instance is destroyed only after the last device.
//! 2. [`Gpu`] owns the `VkDevice` and its `VkPipelineCache`. Every [`Module`] and [`Layout`]
//!    holds an `Arc<Gpu>`, so the device outlives every object made from it.
//! 3. [`Module`] (`VkShaderModule`) and [`Layout`] (descriptor-set layouts + pipeline layout)
//!    are shared as `Arc`s by every compile that uses them and destroyed in `Drop`, i.e. only
//!    when no compile can still reach them.
//! 4. Pipelines and pipeline binaries never outlive the call that creates them:
//!    [`Gpu::create_graphics`] / [`Gpu::create_compute`] create the pipeline, capture its
//!    binaries, copy their keys and bytes out, then destroy the binaries, release the captured
//!    data and destroy the pipeline, on every path (guards), before returning.
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
//!   `vkDestroyPipelineBinaryKHR`: their pipeline or binary is local to one call.
//! - Nothing else granary calls has an externally synchronized parameter: the device, shader
//!   modules and layouts are only read by create calls, which the specification allows from
//!   any number of threads.

use crate::error::VulkanError;
use granary_archive::{Blob, DeviceIdentity};
use std::collections::BTreeSet;
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
    _entry: Entry,
    instance: Instance,
}

/// What one physical device is and supports.
#[derive(Clone, Debug)]
pub struct PhysicalInfo {
    /// The handle (valid while the [`Driver`] lives).
    pub handle: vk::PhysicalDevice,
    /// What decides whether a binary is valid on the device, without the pipeline-binary
    /// global key (that needs an open device: [`Gpu::global_key`]).
    pub identity: DeviceIdentity,
    /// `VK_KHR_pipeline_binary` with the `pipelineBinaries` feature (and maintenance5).
    pub pipeline_binaries: bool,
    /// `pipelineBinaryInternalCacheControl`: the driver's internal cache can be turned off.
    pub internal_cache_control: bool,
    /// `VK_EXT_graphics_pipeline_library` with its feature.
    pub graphics_pipeline_library: bool,
    /// `graphicsPipelineLibraryFastLinking`.
    pub fast_linking: bool,
    /// `dynamicRendering` (Vulkan 1.3 core).
    pub dynamic_rendering: bool,
    /// `maxBoundDescriptorSets`.
    pub max_bound_descriptor_sets: u32,
    /// Sample counts usable for colour and depth attachments (intersection).
    pub sample_counts: u32,
}

fn string_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl Driver {
    /// Opens the system's Vulkan loader and creates an instance (Vulkan 1.3 requested).
    pub fn load() -> Result<Arc<Driver>, VulkanError> {
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
        let info = vk::InstanceCreateInfo { application_info: &app, ..Default::default() };
        // SAFETY: `info` and what it points to (`app`, `name`) live until the call returns.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| {
            if e == vk::ErrorCode::INCOMPATIBLE_DRIVER {
                VulkanError::NoDriver
            } else {
                VulkanError::call("vkCreateInstance", e)
            }
        })?;
        Ok(Arc::new(Driver { _entry: entry, instance }))
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
                pipeline_binaries: has_binary_ext && pb.pipeline_binaries == vk::TRUE && m5.maintenance5 == vk::TRUE,
                internal_cache_control: has_binary_ext
                    && binary_props.pipeline_binary_internal_cache_control == vk::TRUE,
                graphics_pipeline_library: has_gpl_ext && gpl.graphics_pipeline_library == vk::TRUE,
                fast_linking: has_gpl_ext && gpl_props.graphics_pipeline_library_fast_linking == vk::TRUE,
                dynamic_rendering: v13 && f13.dynamic_rendering == vk::TRUE,
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
        // SAFETY: every `Gpu` holds an `Arc<Driver>`, so no device made from this instance
        // exists any more; nothing else uses the instance.
        unsafe { self.instance.destroy_instance(None) }
    }
}

/// What to enable when opening a device.
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// Capture with `VK_KHR_pipeline_binary` (else keep `VkPipelineCache` data).
    pub pipeline_binaries: bool,
    /// Enable graphics pipeline libraries.
    pub libraries: bool,
}

/// One logical device with its pipeline cache.
///
/// Thread safety: `Send + Sync`. Every method may be called from any number of threads at
/// once (see the module's synchronization notes).
pub struct Gpu {
    _driver: Arc<Driver>,
    device: Device,
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

/// A pipeline's captured result.
#[derive(Debug)]
pub struct Created {
    /// `(key, data)` of each binary, in the driver's order (empty without pipeline binaries).
    pub binaries: Vec<RawBinary>,
    /// Time inside `vkCreate*Pipelines`.
    pub driver_time: Duration,
}

impl Gpu {
    /// Opens `info` as a logical device.
    pub fn open(driver: Arc<Driver>, info: PhysicalInfo, options: OpenOptions) -> Result<Arc<Gpu>, VulkanError> {
        let binaries = options.pipeline_binaries && info.pipeline_binaries;
        let libraries = options.libraries && info.graphics_pipeline_library;
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
            if info.internal_cache_control {
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
        Ok(Arc::new(Gpu { _driver: driver, device, info, cache, binaries, libraries, global_key }))
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
    pub fn layout(self: &Arc<Self>, desc: &crate::state::LayoutDesc) -> Result<Layout, VulkanError> {
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
    /// library of the vertex-input, pre-rasterization and fragment-shader parts), captures it,
    /// and destroys it.
    pub fn create_graphics(&self, input: &GraphicsInput<'_>, intern: Intern<'_>) -> Result<Created, VulkanError> {
        let library = input.output.is_none();
        let stages: Vec<vk::PipelineShaderStageCreateInfo> = input
            .stages
            .iter()
            .map(|(m, stage, name)| vk::PipelineShaderStageCreateInfo {
                stage: *stage,
                module: m.handle,
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

        // The pNext chain: rendering formats → [library parts] → [flags2].
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
        if self.binaries {
            let mut f = vk::PipelineCreateFlags2::CAPTURE_DATA_KHR;
            if library {
                f |= vk::PipelineCreateFlags2::LIBRARY_KHR;
            }
            flags2.flags = f;
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
        // `input`, borrowed for the whole call) that lives until the call returns; modules and
        // the layout are alive (`input` holds them); the cache is internally synchronized.
        let result = unsafe { self.device.create_graphics_pipelines(self.cache, &[info], None) };
        let driver_time = start.elapsed();
        let pipelines = match result {
            Ok((p, _)) => p,
            Err(e) => return Err(VulkanError::call("vkCreateGraphicsPipelines", e)),
        };
        let guard = PipelineGuard { gpu: self, handle: pipelines.first().copied().unwrap_or_default() };
        let binaries = self.capture(&guard, intern)?;
        Ok(Created { binaries, driver_time })
    }

    /// Creates a compute pipeline, captures it and destroys it.
    pub fn create_compute(
        &self,
        module: &Module,
        entry: &CStr,
        layout: &Layout,
        intern: Intern<'_>,
    ) -> Result<Created, VulkanError> {
        let flags2 = vk::PipelineCreateFlags2CreateInfo {
            flags: vk::PipelineCreateFlags2::CAPTURE_DATA_KHR,
            ..Default::default()
        };
        let info = vk::ComputePipelineCreateInfo {
            next: if self.binaries {
                (&flags2 as *const vk::PipelineCreateFlags2CreateInfo).cast()
            } else {
                std::ptr::null()
            },
            stage: vk::PipelineShaderStageCreateInfo {
                stage: vk::ShaderStageFlags::COMPUTE,
                module: module.handle,
                name: entry.as_ptr(),
                ..Default::default()
            },
            layout: layout.handle,
            ..Default::default()
        };
        let start = Instant::now();
        // SAFETY: as in `create_graphics`.
        let result = unsafe { self.device.create_compute_pipelines(self.cache, &[info], None) };
        let driver_time = start.elapsed();
        let pipelines = result.map_err(|e| VulkanError::call("vkCreateComputePipelines", e))?.0;
        let guard = PipelineGuard { gpu: self, handle: pipelines.first().copied().unwrap_or_default() };
        let binaries = self.capture(&guard, intern)?;
        Ok(Created { binaries, driver_time })
    }

    /// The pipeline's binaries (`VK_KHR_pipeline_binary`), copied out; the binaries are
    /// destroyed and the pipeline's captured data released before returning.
    fn capture(&self, pipeline: &PipelineGuard<'_>, intern: Intern<'_>) -> Result<Vec<RawBinary>, VulkanError> {
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
        // SAFETY: every module and layout holds an `Arc<Gpu>`, and pipelines never outlive a
        // call, so no object made from the device is left; no other thread can reach `self`.
        unsafe {
            if !self.cache.is_null() {
                self.device.destroy_pipeline_cache(self.cache, None);
            }
            self.device.destroy_device(None);
        }
    }
}

/// Destroys a pipeline when the creating call ends.
struct PipelineGuard<'a> {
    gpu: &'a Gpu,
    handle: vk::Pipeline,
}

impl Drop for PipelineGuard<'_> {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: the pipeline is local to the call that made this guard; no command
            // buffer ever used it.
            unsafe { self.gpu.device.destroy_pipeline(self.handle, None) }
        }
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
    /// `(module, stage, entry point)` per stage.
    pub stages: Vec<(&'a Module, vk::ShaderStageFlags, CString)>,
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
};
