//! Pipelines: the create info of one graphics or compute pipeline, built apart from the driver
//! call that uses it (so the same chain is hashed by `vkGetPipelineKeyKHR` and created), and
//! the owned [`Pipeline`] handle with the libraries it was linked from.
//!
//! # Object lifetime rules
//!
//! - A [`Pipeline`] owns its `VkPipeline` and destroys it when dropped, unless handed over with
//!   [`Pipeline::into_raw`].
//! - A pipeline linked from graphics pipeline libraries ([`Gpu::link`]) holds an `Arc` of each
//!   library for as long as it lives: the specification requires the application to keep a
//!   library alive while any pipeline linked with it exists. Its `Drop` destroys the linked
//!   pipeline first; the libraries go when their last user does. [`Pipeline::into_raw`]
//!   hands the libraries over with the handle ([`Retained`], with its layout), to be dropped only after
//!   the application destroyed the pipeline.
//! - Fragment-output libraries ([`Gpu::fragment_output`]) are ordinary [`Pipeline`]s, shared
//!   (`Arc`) by every pipeline linked with them; the loader caches one per output state.
//! - At capture ([`CreateMode::Capture`]) a pipeline never outlives the creating call: its binaries
//!   are copied out and it is destroyed before the call returns.
//! - Every pipeline and library is created and destroyed with the device's allocation
//!   callbacks ([`Gpu::allocator`]: the application's on a device borrowed with them, else
//!   `NULL`); one handed over with [`Pipeline::into_raw`] is the application's to destroy with
//!   a compatible set.
//!
//! # External synchronization
//!
//! `vkCreateGraphicsPipelines`/`vkCreateComputePipelines` take a pipeline cache created
//! without `EXTERNALLY_SYNCHRONIZED`, so any number of threads may create into it;
//! `vkGetPipelineKeyKHR` has no externally synchronized parameter; `vkDestroyPipeline` is
//! called only from `Drop`, when no other reference exists.

#[cfg(feature = "capture")]
use super::binary::BlobInterner;
use super::binary::RawBinary;
use super::cache::Cache;
use super::device::Gpu;
use super::error::VulkanError;
use super::handles::DriverLayout;
use super::native::{Chain, NativeInput, StageInput};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vulkanalia::prelude::v1_3::*;

/// Depth/stencil state of a graphics pipeline.
pub type DepthStencil = vk::PipelineDepthStencilStateCreateInfo;

/// Everything one graphics pipeline (or library) is made of.
pub struct GraphicsInput<'a> {
    /// The stages (module, stage, entry point, specialization); a module is `None` only when
    /// the pipeline is created from binaries (the specification ignores modules then).
    pub stages: Vec<StageInput<'a>>,
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
    pub layout: &'a DriverLayout,
}

/// How a pipeline is created, and what becomes of it: captured and destroyed (harvest,
/// feature `capture`), or kept, made from binaries, cache or modules (run time).
#[derive(Clone, Copy)]
pub enum CreateMode<'a> {
    /// Harvest: capture its binaries and pipeline key (when the device captures binaries, else
    /// it goes into the device's own pipeline cache) and destroy it before returning.
    #[cfg(feature = "capture")]
    Capture(BlobInterner<'a>),
    /// Run time: create it from `binaries` (in the driver's order) or, when there are none,
    /// from the shader modules with `cache`, and return it.
    Keep {
        /// Binaries to create it from ([`CheckedBinaries::NONE`]: compile from the modules).
        binaries: CheckedBinaries<'a>,
        /// Pipeline cache for a compile (ignored with binaries).
        cache: Option<&'a Cache>,
    },
    /// Run time, only if no compile is needed: created from the modules with `cache` and
    /// `VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT`, so a pipeline the cache (or
    /// the driver) cannot answer without compiling is not created: the driver's
    /// `VK_PIPELINE_COMPILE_REQUIRED` comes back as [`VulkanError::Call`] with that result. The
    /// device must have `pipelineCreationCacheControl` enabled; whole pipelines only (not a
    /// library).
    KeepIfCached {
        /// The pipeline cache to answer it from.
        cache: &'a Cache,
    },
}

/// The interner of [`Gpu::probe`]: `Some` when a captured pipeline's binaries are taken from
/// the driver's internal cache by create info (the experiment).
type Probe<'a> = Option<&'a (dyn Fn(&[u8]) -> std::sync::Arc<crate::blob::Blob> + Sync)>;

/// What [`Gpu::key_and_create`] returns: the pipeline, its key (at capture), the time in the
/// create call, and the binaries the internal-cache experiment took (or its error).
type Created = (vk::Pipeline, Vec<u8>, Duration, Option<Result<Vec<RawBinary>, VulkanError>>);

/// Pipeline binary handles, in the driver's order, that the caller vouched for (see
/// [`CheckedBinaries::new`]): the only way binaries reach a pipeline creation.
///
/// Thread safety: plain borrowed data.
#[derive(Clone, Copy)]
pub struct CheckedBinaries<'a>(&'a [vk::PipelineBinaryKHR]);

impl<'a> CheckedBinaries<'a> {
    /// No binaries: compile from the shader modules.
    pub const NONE: CheckedBinaries<'static> = CheckedBinaries(&[]);

    /// Binaries to create one pipeline from.
    ///
    /// # Safety
    ///
    /// Every handle must be alive, made on the device the pipeline is created on by
    /// [`Gpu::binaries_from_data`](super::Gpu::binaries_from_data) (whose own contract covers
    /// the bytes), and the set must be the one captured for a create info whose
    /// `vkGetPipelineKeyKHR` equals that of the create info it is used with
    /// ([`Gpu::graphics_key`] / [`Gpu::compute_key`]). Drivers do not validate binary data:
    /// anything else is undefined behaviour in the driver.
    pub unsafe fn new(handles: &'a [vk::PipelineBinaryKHR]) -> Self {
        CheckedBinaries(handles)
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// What creating one pipeline gave: its captured binaries and pipeline key (capture), or the
/// pipeline itself (run time), with the driver time and creation feedback.
pub struct CreateOutcome {
    /// `(key, data)` of each binary, in the driver's order (empty without pipeline binaries,
    /// and with [`CreateMode::Keep`]).
    pub binaries: Vec<RawBinary>,
    /// With [`CreateMode::Capture`] on a device with pipeline binaries: `vkGetPipelineKeyKHR` of
    /// the create info the pipeline was created with (else empty).
    pub pipeline_key: Vec<u8>,
    /// Time inside `vkCreate*Pipelines`.
    pub driver_time: Duration,
    /// The pipeline, with [`CreateMode::Keep`].
    pub pipeline: Option<Pipeline>,
    /// `VkPipelineCreationFeedback::flags` (with [`CreateMode::Keep`]; 0 if the driver wrote none).
    pub feedback: u32,
}

// `gpu` only decides capture (feature `capture`).
#[cfg_attr(not(feature = "capture"), allow(unused_variables))]
fn chain_of<'a>(
    gpu: &Gpu,
    how: CreateMode<'a>,
    feedback: *mut vk::PipelineCreationFeedback,
) -> (Chain<'a>, vk::PipelineCache) {
    match how {
        #[cfg(feature = "capture")]
        // The internal-cache experiment compiles with the shared cache and no CAPTURE_DATA.
        // Creation feedback is chained as at run time, so that the create info a cache entry
        // or pipeline key comes from is the one `Keep` creates with (and the harvest counts
        // its cache hits).
        CreateMode::Capture(_) => (
            Chain {
                capture: gpu.binaries && !gpu.capture.from_internal_cache,
                feedback: Some(feedback),
                binaries: &[],
                fail_on_compile: false,
            },
            gpu.cache,
        ),
        CreateMode::Keep { binaries, cache } => (
            Chain { capture: false, feedback: Some(feedback), binaries: binaries.0, fail_on_compile: false },
            // A pipeline made from binaries may not use a pipeline cache.
            if binaries.is_empty() {
                cache.map_or(vk::PipelineCache::null(), |c| c.handle)
            } else {
                vk::PipelineCache::null()
            },
        ),
        CreateMode::KeepIfCached { cache } => {
            (Chain { capture: false, feedback: Some(feedback), binaries: &[], fail_on_compile: true }, cache.handle)
        }
    }
}

/// The structures granary puts in front of an application's own chain: its binaries and
/// creation feedback (unless the application chained its own feedback).
pub(super) struct AppTail<'a> {
    chain: Chain<'a>,
    tail: super::native::Tail,
}

impl AppTail<'_> {
    /// Links granary's structures in front of `next` and returns the new head (valid while
    /// `self` is not moved).
    fn head(&mut self, next: *const std::ffi::c_void) -> *const std::ffi::c_void {
        self.tail.link(self.chain, Default::default(), false, next)
    }
}

/// The chain tail and cache for creating the application's own create info with `how`.
///
/// # Safety
///
/// `next` is null or a valid `pNext` chain.
unsafe fn app_chain<'a>(
    gpu: &Gpu,
    next: *const std::ffi::c_void,
    how: CreateMode<'a>,
    feedback: *mut vk::PipelineCreationFeedback,
) -> (AppTail<'a>, vk::PipelineCache) {
    let (mut chain, cache) = chain_of(gpu, how, feedback);
    // SAFETY: the caller's promise: a valid chain.
    let theirs = unsafe { super::recorder::chain(next) };
    if theirs.iter().any(|(s, _)| *s == vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO) {
        chain.feedback = None;
    }
    (AppTail { chain, tail: Default::default() }, cache)
}

impl Gpu {
    /// Builds the create info of `input` with `chain` on this stack frame and hands it to `f`
    /// (every pointer in it refers to a local of this call or to `input`, valid while `f`
    /// runs).
    fn with_graphics_info<R>(
        &self,
        input: &GraphicsInput<'_>,
        chain: Chain<'_>,
        f: impl FnOnce(&vk::GraphicsPipelineCreateInfo) -> R,
    ) -> R {
        let library = input.output.is_none();
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
        let mut feedback_info = vk::PipelineCreationFeedbackCreateInfo::default();
        if let Some(fb) = chain.feedback {
            feedback_info.pipeline_creation_feedback = fb;
            feedback_info.next = tail;
            tail = (&feedback_info as *const vk::PipelineCreationFeedbackCreateInfo).cast();
        }
        let mut binary_info = vk::PipelineBinaryInfoKHR::default();
        if !chain.binaries.is_empty() {
            binary_info.binary_count = chain.binaries.len() as u32;
            binary_info.pipeline_binaries = chain.binaries.as_ptr();
            binary_info.next = tail;
            tail = (&binary_info as *const vk::PipelineBinaryInfoKHR).cast();
        }
        if chain.capture || (library && self.binaries) {
            let mut f = if chain.capture {
                vk::PipelineCreateFlags2::CAPTURE_DATA_KHR
            } else {
                vk::PipelineCreateFlags2::empty()
            };
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
        super::native::with_stages(&input.stages, |stages| {
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
            f(&info)
        })
    }

    /// Creates a graphics pipeline (or, with `input.output == None`, a graphics pipeline
    /// library of the vertex-input, pre-rasterization and fragment-shader parts). With
    /// [`CreateMode::Capture`] it captures the pipeline's binaries and pipeline key and destroys it
    /// before returning; with [`CreateMode::Keep`] it creates it from binaries or modules and
    /// returns it. A stage's module may be `None` only with binaries.
    pub fn create_graphics(
        self: &Arc<Self>,
        input: &GraphicsInput<'_>,
        how: CreateMode<'_>,
    ) -> Result<CreateOutcome, VulkanError> {
        let mut feedback = vk::PipelineCreationFeedback::default();
        let (chain, cache) = chain_of(self, how, &mut feedback);
        if chain.binaries.is_empty() && input.stages.iter().any(|s| s.module.is_none()) {
            return Err(VulkanError::call(
                "vkCreateGraphicsPipelines",
                "a stage without a shader module and no binaries",
            ));
        }
        let probe = self.probe(how);
        let (handle, pipeline_key, driver_time, probed) = self.with_graphics_info(input, chain, |info| {
            self.key_and_create(chain, probe, info, "vkCreateGraphicsPipelines", |info| {
                // SAFETY: every pointer in `info` and its chain refers to a local of
                // `with_graphics_info` (or to `input`/`how`, borrowed for the whole call),
                // alive while this closure runs; modules, layout, binaries and cache are alive
                // (the caller holds them); the cache is internally synchronized. Binaries come
                // only as `CheckedBinaries`, whose constructor's contract makes them valid for
                // this create info. A null module comes only with binaries (checked above).
                unsafe { self.device.create_graphics_pipelines(cache, &[*info], self.allocator()) }
            })
        })?;
        let pipeline = Pipeline { gpu: self.clone(), handle, libraries: Vec::new(), layout: None };
        self.finish(pipeline, how, pipeline_key, driver_time, feedback.flags, probed)
    }

    /// `vkGetPipelineKeyKHR` of the graphics pipeline `input` would be created with at run
    /// time ([`CreateMode::Keep`]: creation feedback in the chain, no binaries yet): the key a set of
    /// archived binaries must carry to be used for it. Empty without pipeline binaries.
    pub fn graphics_key(&self, input: &GraphicsInput<'_>) -> Result<Vec<u8>, VulkanError> {
        if !self.binaries {
            return Ok(Vec::new());
        }
        let mut feedback = vk::PipelineCreationFeedback::default();
        let chain = Chain { capture: false, feedback: Some(&mut feedback), binaries: &[], fail_on_compile: false };
        self.with_graphics_info(input, chain, |info| self.pipeline_key_of(info))
    }

    /// Builds the compute create info on this stack frame and hands it to `f`.
    fn with_compute_info<R>(
        &self,
        stage: &StageInput<'_>,
        layout: &DriverLayout,
        chain: Chain<'_>,
        f: impl FnOnce(&vk::ComputePipelineCreateInfo) -> R,
    ) -> R {
        let flags2 = vk::PipelineCreateFlags2CreateInfo {
            flags: vk::PipelineCreateFlags2::CAPTURE_DATA_KHR,
            ..Default::default()
        };
        let mut feedback_info = vk::PipelineCreationFeedbackCreateInfo::default();
        let mut binary_info = vk::PipelineBinaryInfoKHR::default();
        let mut tail: *const c_void = std::ptr::null();
        if let Some(fb) = chain.feedback {
            feedback_info.pipeline_creation_feedback = fb;
            tail = (&feedback_info as *const vk::PipelineCreationFeedbackCreateInfo).cast();
        }
        if !chain.binaries.is_empty() {
            binary_info.binary_count = chain.binaries.len() as u32;
            binary_info.pipeline_binaries = chain.binaries.as_ptr();
            binary_info.next = tail;
            tail = (&binary_info as *const vk::PipelineBinaryInfoKHR).cast();
        }
        if chain.capture {
            tail = (&flags2 as *const vk::PipelineCreateFlags2CreateInfo).cast();
        }
        super::native::with_stages(std::slice::from_ref(stage), |stages| {
            let info = vk::ComputePipelineCreateInfo {
                next: tail,
                stage: stages[0],
                layout: layout.handle,
                ..Default::default()
            };
            f(&info)
        })
    }

    /// Creates a compute pipeline of `stage` (a compute stage); as
    /// [`create_graphics`](Self::create_graphics).
    pub fn create_compute(
        self: &Arc<Self>,
        stage: &StageInput<'_>,
        layout: &DriverLayout,
        how: CreateMode<'_>,
    ) -> Result<CreateOutcome, VulkanError> {
        let mut feedback = vk::PipelineCreationFeedback::default();
        let (chain, cache) = chain_of(self, how, &mut feedback);
        if chain.binaries.is_empty() && stage.module.is_none() {
            return Err(VulkanError::call("vkCreateComputePipelines", "no shader module and no binaries"));
        }
        let probe = self.probe(how);
        let (handle, pipeline_key, driver_time, probed) = self.with_compute_info(stage, layout, chain, |info| {
            self.key_and_create(chain, probe, info, "vkCreateComputePipelines", |info| {
                // SAFETY: as in `create_graphics`, for the compute create info.
                unsafe { self.device.create_compute_pipelines(cache, &[*info], self.allocator()) }
            })
        })?;
        let pipeline = Pipeline { gpu: self.clone(), handle, libraries: Vec::new(), layout: None };
        self.finish(pipeline, how, pipeline_key, driver_time, feedback.flags, probed)
    }

    /// `vkGetPipelineKeyKHR` of the compute pipeline as created at run time; as
    /// [`graphics_key`](Self::graphics_key).
    pub fn compute_key(&self, stage: &StageInput<'_>, layout: &DriverLayout) -> Result<Vec<u8>, VulkanError> {
        if !self.binaries {
            return Ok(Vec::new());
        }
        let mut feedback = vk::PipelineCreationFeedback::default();
        let chain = Chain { capture: false, feedback: Some(&mut feedback), binaries: &[], fail_on_compile: false };
        self.with_compute_info(stage, layout, chain, |info| self.pipeline_key_of(info))
    }

    /// Creates a native pipeline (graphics or compute, by its state) from `input`; as
    /// [`create_graphics`](Self::create_graphics): with [`CreateMode::Capture`] its binaries
    /// and pipeline key are captured and it is destroyed, with [`CreateMode::Keep`] it is made
    /// from binaries or modules and returned. The caller checked it first
    /// ([`check_native`](super::check_native), [`check_structure`](super::check_structure)).
    pub fn create_native(
        self: &Arc<Self>,
        input: &NativeInput<'_>,
        how: CreateMode<'_>,
    ) -> Result<CreateOutcome, VulkanError> {
        let mut feedback = vk::PipelineCreationFeedback::default();
        let (chain, cache) = chain_of(self, how, &mut feedback);
        if chain.binaries.is_empty() && input.stages.iter().any(|s| s.module.is_none()) {
            return Err(VulkanError::call("vkCreate*Pipelines", "a stage without a shader module and no binaries"));
        }
        if input.stages.len() != input.state.stages.len() {
            return Err(VulkanError::call("vkCreate*Pipelines", "stage inputs and stage states differ in number"));
        }
        let probe = self.probe(how);
        let (handle, pipeline_key, driver_time, probed) = match &input.state.graphics {
            Some(g) => super::native::with_graphics_info(input, g, chain, |info| {
                self.key_and_create(chain, probe, info, "vkCreateGraphicsPipelines", |info| {
                    // SAFETY: every pointer in `info` and its chain refers to a local of
                    // `native::with_graphics_info` or to `input` (borrowed for the whole call),
                    // alive while this closure runs; modules, layout, render pass, binaries and
                    // cache are alive (the caller holds them). Binaries come only as
                    // `CheckedBinaries` (see `create_graphics`); a null module only with them.
                    unsafe { self.device.create_graphics_pipelines(cache, &[*info], self.allocator()) }
                })
            })?,
            None => match &input.state.ray_tracing {
                Some(rt) => super::native::with_ray_tracing_info(input, rt, chain, |info| {
                    self.key_and_create(chain, probe, info, "vkCreateRayTracingPipelinesKHR", |info| {
                        // SAFETY: as for the graphics case, for `native::with_ray_tracing_info`;
                        // `rayTracingPipeline` is enabled (`check_native`, which the caller ran).
                        unsafe {
                            super::binary::PipelineCreateInfo::create(*info, &self.device, cache, self.allocator())
                        }
                    })
                })?,
                None => super::native::with_compute_info(input, chain, |info| {
                    self.key_and_create(chain, probe, info, "vkCreateComputePipelines", |info| {
                        // SAFETY: as for the graphics case, for `native::with_compute_info`.
                        unsafe { self.device.create_compute_pipelines(cache, &[*info], self.allocator()) }
                    })
                })?,
            },
        };
        let pipeline = Pipeline { gpu: self.clone(), handle, libraries: Vec::new(), layout: None };
        self.finish(pipeline, how, pipeline_key, driver_time, feedback.flags, probed)
    }

    /// `vkGetPipelineKeyKHR` of the native pipeline `input` as created at run time; as
    /// [`graphics_key`](Self::graphics_key).
    pub fn native_key(&self, input: &NativeInput<'_>) -> Result<Vec<u8>, VulkanError> {
        if !self.binaries {
            return Ok(Vec::new());
        }
        let mut feedback = vk::PipelineCreationFeedback::default();
        let chain = Chain { capture: false, feedback: Some(&mut feedback), binaries: &[], fail_on_compile: false };
        match (&input.state.graphics, &input.state.ray_tracing) {
            (Some(g), _) => super::native::with_graphics_info(input, g, chain, |info| self.pipeline_key_of(info)),
            (None, Some(rt)) => {
                super::native::with_ray_tracing_info(input, rt, chain, |info| self.pipeline_key_of(info))
            }
            (None, None) => super::native::with_compute_info(input, chain, |info| self.pipeline_key_of(info)),
        }
    }

    /// `vkGetPipelineKeyKHR` of the application's own create info `info` (empty without
    /// pipeline binaries on this device).
    ///
    /// # Safety
    ///
    /// `info` is a valid graphics or compute create info, as `vkCreate*Pipelines` requires.
    pub(super) unsafe fn app_key<T: super::binary::PipelineCreateInfo>(
        &self,
        info: &T,
    ) -> Result<Vec<u8>, VulkanError> {
        if !self.binaries {
            return Ok(Vec::new());
        }
        self.pipeline_key_of(info)
    }

    /// Creates the application's own graphics or compute create info `info` (kept): from
    /// `how`'s binaries, chained in front of the application's chain, or compiled with `how`'s
    /// cache. Creation feedback is chained unless the application chained its own.
    ///
    /// # Safety
    ///
    /// `info` is a valid create info as its `vkCreate*Pipelines` requires, whose objects were
    /// made on this device and stay alive for the call; binaries only as [`CheckedBinaries`]
    /// for this very create info (its contract).
    pub(super) unsafe fn create_app<T: super::binary::PipelineCreateInfo>(
        self: &Arc<Self>,
        info: &T,
        how: CreateMode<'_>,
    ) -> Result<CreateOutcome, VulkanError> {
        let mut feedback = vk::PipelineCreationFeedback::default();
        // SAFETY: the caller's promise: a valid create info and chain.
        let (mut tail, cache) = unsafe { app_chain(self, info.next(), how, &mut feedback) };
        let own = info.with_next(tail.head(info.next()));
        let (handle, _, driver_time, _) = self.key_and_create(tail.chain, None, &own, T::CALL, |info| {
            // SAFETY: `own` is the application's valid create info with granary's binary and
            // feedback structures (locals of this call) in front of its chain; the caller keeps
            // its objects alive, the binaries are checked for this create info, the cache is
            // alive.
            unsafe { info.create(&self.device, cache, self.allocator()) }
        })?;
        let pipeline = Pipeline { gpu: self.clone(), handle, libraries: Vec::new(), layout: None };
        self.finish(pipeline, how, Vec::new(), driver_time, feedback.flags, None)
    }

    /// With `capture`, the pipeline key of `info` (exactly the chain created with, stored beside
    /// the binaries); then `create(info)`, timed. Returns the pipeline, the key (empty without
    /// `capture`) and the time inside the driver's create call.
    fn key_and_create<T: super::binary::PipelineCreateInfo, S, E: super::error::CallCode>(
        &self,
        chain: Chain<'_>,
        probe: Probe<'_>,
        info: &T,
        call: &'static str,
        create: impl FnOnce(&T) -> Result<(Vec<vk::Pipeline>, S), E>,
    ) -> Result<Created, VulkanError> {
        let key = if chain.capture || probe.is_some() {
            let start = Instant::now();
            let key = self.pipeline_key_of(info)?;
            self.capture.add_key_time(start.elapsed());
            key
        } else {
            Vec::new()
        };
        // `KeepIfCached`: the create info's own flags gain FAIL_ON_PIPELINE_COMPILE_REQUIRED
        // (no `VkPipelineCreateFlags2CreateInfo`, which would replace them, is chained at run
        // time for a whole pipeline).
        let fail = chain.fail_on_compile.then(|| info.with_fail_on_compile());
        let start = Instant::now();
        let r = create(fail.as_ref().unwrap_or(info));
        let driver_time = start.elapsed();
        let handle = r.map_err(|e| VulkanError::call(call, e))?.0.first().copied().unwrap_or_default();
        if chain.fail_on_compile && handle.is_null() {
            return Err(VulkanError::Call {
                call,
                result: Some(vk::Result::PIPELINE_COMPILE_REQUIRED),
                code: "PIPELINE_COMPILE_REQUIRED: the pipeline cache does not hold it".into(),
            });
        }
        #[cfg(feature = "capture")]
        let probed = probe.map(|intern| self.capture_from_internal_cache(info, intern));
        #[cfg(not(feature = "capture"))]
        let probed = probe.map(|_| Ok(Vec::new()));
        Ok((handle, key, driver_time, probed))
    }

    /// With [`CreateMode::Capture`] under the internal-cache experiment
    /// ([`OpenOptions::capture_from_internal_cache`](super::OpenOptions::capture_from_internal_cache)):
    /// the interner to take the created pipeline's binaries from the internal cache with.
    fn probe<'a>(&self, how: CreateMode<'a>) -> Probe<'a> {
        match how {
            #[cfg(feature = "capture")]
            CreateMode::Capture(intern) if self.binaries && self.capture.from_internal_cache => Some(intern),
            _ => None,
        }
    }

    /// Captures (and destroys) or keeps a freshly created pipeline (`pipeline_key` is kept only
    /// at capture).
    #[cfg_attr(not(feature = "capture"), allow(unused_variables))]
    fn finish(
        &self,
        pipeline: Pipeline,
        how: CreateMode<'_>,
        pipeline_key: Vec<u8>,
        driver_time: Duration,
        feedback: vk::PipelineCreationFeedbackFlags,
        probed: Option<Result<Vec<RawBinary>, VulkanError>>,
    ) -> Result<CreateOutcome, VulkanError> {
        match how {
            #[cfg(feature = "capture")]
            CreateMode::Capture(intern) => {
                let binaries = match probed {
                    // The internal-cache experiment: taken by create info already (`pipeline`
                    // drops, destroyed, on either outcome).
                    Some(b) => b?,
                    // SAFETY: `pipeline` was created on this device by this module with
                    // CAPTURE_DATA (`Chain::capture` on a binaries device; `capture` returns
                    // early otherwise) and is owned here until after the call.
                    None => unsafe { self.capture(pipeline.handle, intern) }?,
                };
                let pipeline_key = if binaries.is_empty() { Vec::new() } else { pipeline_key };
                // `pipeline` drops here: destroyed before returning.
                Ok(CreateOutcome { binaries, pipeline_key, driver_time, pipeline: None, feedback: feedback.bits() })
            }
            CreateMode::Keep { .. } | CreateMode::KeepIfCached { .. } => Ok(CreateOutcome {
                binaries: Vec::new(),
                pipeline_key: Vec::new(),
                driver_time,
                pipeline: Some(pipeline),
                feedback: feedback.bits(),
            }),
        }
    }

    /// Creates the fragment-output library for `output` (formats and blend per colour
    /// attachment) with `input`'s multisample state and depth/stencil formats, to be linked
    /// with any number of libraries ([`link`](Self::link)); share it (`Arc`).
    pub fn fragment_output(
        self: &Arc<Self>,
        input: &GraphicsInput<'_>,
        output: &[(vk::Format, vk::PipelineColorBlendAttachmentState)],
    ) -> Result<(Pipeline, Duration), VulkanError> {
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
        let r = unsafe { self.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], self.allocator()) };
        let handle = r.map_err(|e| VulkanError::call("vkCreateGraphicsPipelines (fragment output)", e))?.0;
        let pipeline = Pipeline {
            gpu: self.clone(),
            handle: handle.first().copied().unwrap_or_default(),
            libraries: Vec::new(),
            layout: None,
        };
        Ok((pipeline, start.elapsed()))
    }

    /// Links `library` (made by [`create_graphics`](Self::create_graphics) with `output ==
    /// None`) with `output` (made by [`fragment_output`](Self::fragment_output)) into a
    /// complete pipeline with `layout` (the one the library was created with). The linked
    /// pipeline holds both libraries until it is destroyed.
    pub fn link(
        self: &Arc<Self>,
        library: Arc<Pipeline>,
        output: Arc<Pipeline>,
        layout: &DriverLayout,
    ) -> Result<CreateOutcome, VulkanError> {
        let libraries = [library.handle, output.handle];
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
            layout: layout.handle,
            ..Default::default()
        };
        let start = Instant::now();
        // SAFETY: both libraries are alive (the `Arc`s are held for the call and then by the
        // linked pipeline) and were created on this device; `link` and `feedback_info` live
        // until the call returns; the layout is the one the shader library was created with.
        let r = unsafe { self.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], self.allocator()) };
        let driver_time = start.elapsed();
        let handle = r.map_err(|e| VulkanError::call("vkCreateGraphicsPipelines (link)", e))?.0.first().copied();
        Ok(CreateOutcome {
            binaries: Vec::new(),
            pipeline_key: Vec::new(),
            driver_time,
            pipeline: Some(Pipeline {
                gpu: self.clone(),
                handle: handle.unwrap_or_default(),
                libraries: vec![library, output],
                layout: None,
            }),
            feedback: feedback.flags.bits(),
        })
    }
}

/// A `VkPipeline` (or pipeline library), destroyed on drop unless taken with
/// [`into_raw`](Pipeline::into_raw); a linked pipeline also holds the libraries it was linked
/// from (see the module's lifetime rules).
///
/// Thread safety: `Send + Sync`; the handle is only read (bound in command buffers) by the
/// application after it is created.
pub struct Pipeline {
    pub(super) gpu: Arc<Gpu>,
    pub(super) handle: vk::Pipeline,
    /// The libraries this pipeline was linked from, kept alive as long as it is.
    pub(super) libraries: Vec<Arc<Pipeline>>,
    /// The layout it was created with (set by the loader), kept alive as long as it is: a
    /// command buffer binding descriptor sets for it uses a compatible layout, and without
    /// `maintenance4` a layout must outlive the pipelines made with it.
    pub(super) layout: Option<Arc<super::handles::DriverLayout>>,
}

/// What a pipeline handed over with [`Pipeline::into_raw`] still needs: the graphics pipeline
/// libraries it was linked from and the pipeline layout it was created with. Keep this value
/// until the application has destroyed that pipeline (`vkDestroyPipeline`), then drop it: the
/// specification requires a library to outlive every pipeline linked with it, and (without
/// `maintenance4`) a layout to outlive the pipelines created with it.
///
/// Thread safety: `Send + Sync`.
#[must_use = "the libraries and layout must outlive the pipeline made from them"]
pub struct Retained {
    #[allow(dead_code)]
    libraries: Vec<Arc<Pipeline>>,
    layout: Option<Arc<super::handles::DriverLayout>>,
}

impl Retained {
    /// Whether the pipeline was linked from no library.
    pub fn is_unlinked(&self) -> bool {
        self.libraries.is_empty()
    }

    /// The pipeline layout the pipeline was created with (bind descriptor sets with it, or
    /// with a layout compatible with it), if the loader made it.
    pub fn layout(&self) -> Option<vk::PipelineLayout> {
        self.layout.as_ref().map(|l| l.handle)
    }
}

impl Pipeline {
    /// The handle, still owned by this value.
    pub fn handle(&self) -> vk::Pipeline {
        self.handle
    }
    /// Whether the pipeline was linked from libraries (which it keeps alive).
    pub fn is_linked(&self) -> bool {
        !self.libraries.is_empty()
    }
    /// The pipeline layout it was created with, kept alive as long as this value (set for
    /// pipelines the loader made; `None` for a pipeline made from the application's own create
    /// info, whose layout is the application's).
    pub fn layout(&self) -> Option<vk::PipelineLayout> {
        self.layout.as_ref().map(|l| l.handle)
    }
    /// Hands the pipeline over to the caller, who must destroy it (`vkDestroyPipeline`)
    /// before the device, and before dropping the returned [`Retained`], with allocation
    /// callbacks compatible with the device's ([`Gpu::allocator`]: `NULL` unless the device
    /// was borrowed with the application's).
    pub fn into_raw(mut self) -> (vk::Pipeline, Retained) {
        let handle = std::mem::take(&mut self.handle);
        (handle, Retained { libraries: std::mem::take(&mut self.libraries), layout: self.layout.take() })
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            // SAFETY: the pipeline is owned by this value (not handed out with `into_raw`);
            // granary records no command buffer, so none can still use it. The caller of
            // `Keep` drops it only once its own command buffers are done with it. Libraries it
            // was linked from are destroyed after it (fields drop after this body). The
            // callbacks are the ones every pipeline of this module is created with.
            unsafe { self.gpu.device.destroy_pipeline(self.handle, self.gpu.allocator()) }
        }
    }
}
