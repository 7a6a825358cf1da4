//! Native Vulkan pipeline state ([`NativePipeline`]) to create infos: pure translation and
//! the chain builders. Every structure and chained extension structure the model has is
//! built here, on one stack frame, and handed to a closure (`with_graphics_info`,
//! `with_compute_info`), so the create info `vkGetPipelineKeyKHR` hashes is exactly the one
//! created with. The stage create infos of both pipeline forms (portable and native) are
//! built here too ([`StageInput`], `with_stages`): the application's `VkSpecializationInfo`
//! and required subgroup size travel with each stage, identically at capture and at run time.
//!
//! No driver call and no `unsafe` here: the objects the create info names (render pass,
//! layouts, immutable samplers) are made by `handles` and shared per device by content
//! through [`NativeObjects`]; the create calls are `pipeline`'s.

use super::handles::{DriverLayout, Module, RenderPass, Sampler};
use super::shared::Shared;
use crate::native::codec::Codec;
use crate::native::{GraphicsState, NativeLayout, NativePipeline, RenderPassState, SamplerState, Specialization};
use std::ffi::{c_void, CString};
use std::sync::Arc;
use vulkanalia::vk::{self, Handle};

/// One stage of a pipeline to create: its module (`None` only when the pipeline is created
/// from binaries), stage, entry point, and what `VkPipelineShaderStageCreateInfo` adds.
pub struct StageInput<'a> {
    /// The shader module.
    pub module: Option<&'a Module>,
    /// The stage.
    pub stage: vk::ShaderStageFlags,
    /// The entry point.
    pub entry: CString,
    /// The stage's `VkSpecializationInfo` (checked: [`Specialization::check`]).
    pub specialization: Option<&'a Specialization>,
    /// `VkPipelineShaderStageCreateFlags` (native pipelines; 0 otherwise).
    pub flags: u32,
    /// `VkPipelineShaderStageRequiredSubgroupSizeCreateInfo::requiredSubgroupSize`.
    pub required_subgroup_size: Option<u32>,
}

impl<'a> StageInput<'a> {
    /// A stage with nothing but its module, stage and entry point.
    pub fn plain(module: Option<&'a Module>, stage: vk::ShaderStageFlags, entry: CString) -> Self {
        StageInput { module, stage, entry, specialization: None, flags: 0, required_subgroup_size: None }
    }
}

/// The tail of a create info's chain: capture, creation feedback, binaries.
#[derive(Clone, Copy)]
pub(super) struct Chain<'a> {
    /// `VK_PIPELINE_CREATE_2_CAPTURE_DATA_BIT_KHR` (harvest on a binaries device).
    pub(super) capture: bool,
    /// Creation feedback (run time and capture alike).
    pub(super) feedback: Option<*mut vk::PipelineCreationFeedback>,
    /// Binaries to create from.
    pub(super) binaries: &'a [vk::PipelineBinaryKHR],
    /// `VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT` on the create info
    /// ([`CreateMode::KeepIfCached`](super::CreateMode::KeepIfCached)).
    pub(super) fail_on_compile: bool,
}

/// The structures of a chain's tail, declared by the builder on its frame.
#[derive(Default)]
pub(super) struct Tail {
    flags2: vk::PipelineCreateFlags2CreateInfo,
    feedback: vk::PipelineCreationFeedbackCreateInfo,
    binaries: vk::PipelineBinaryInfoKHR,
}

impl Tail {
    /// Links `chain`'s structures after `next` and returns the new head: [flags2] →
    /// [binaries] → [feedback] → `next`. `flags2` is chained when capturing or when
    /// `force_flags2` (a library on a binaries device); as it replaces the create info's
    /// `flags`, it carries `flags` too.
    pub(super) fn link(
        &mut self,
        chain: Chain<'_>,
        flags: vk::PipelineCreateFlags2,
        force_flags2: bool,
        next: *const c_void,
    ) -> *const c_void {
        let mut tail = next;
        if let Some(fb) = chain.feedback {
            self.feedback.pipeline_creation_feedback = fb;
            self.feedback.next = tail;
            tail = (&self.feedback as *const vk::PipelineCreationFeedbackCreateInfo).cast();
        }
        if !chain.binaries.is_empty() {
            self.binaries.binary_count = chain.binaries.len() as u32;
            self.binaries.pipeline_binaries = chain.binaries.as_ptr();
            self.binaries.next = tail;
            tail = (&self.binaries as *const vk::PipelineBinaryInfoKHR).cast();
        }
        if chain.capture || force_flags2 {
            self.flags2.flags =
                flags | if chain.capture { vk::PipelineCreateFlags2::CAPTURE_DATA_KHR } else { Default::default() };
            self.flags2.next = tail;
            tail = (&self.flags2 as *const vk::PipelineCreateFlags2CreateInfo).cast();
        }
        tail
    }
}

/// Builds the stage create infos of `stages` (with their specialization and subgroup-size
/// structures) on this frame and hands them to `f`.
pub(super) fn with_stages<R>(
    stages: &[StageInput<'_>],
    f: impl FnOnce(&[vk::PipelineShaderStageCreateInfo]) -> R,
) -> R {
    let entries: Vec<Vec<vk::SpecializationMapEntry>> = stages
        .iter()
        .map(|s| {
            s.specialization.map_or_else(Vec::new, |sp| {
                sp.map_entries
                    .iter()
                    .map(|m| vk::SpecializationMapEntry {
                        constant_id: m.constant_id,
                        offset: m.offset,
                        size: m.size as usize,
                    })
                    .collect()
            })
        })
        .collect();
    let infos: Vec<vk::SpecializationInfo> = stages
        .iter()
        .zip(&entries)
        .map(|(s, e)| match s.specialization {
            Some(sp) => vk::SpecializationInfo {
                map_entry_count: e.len() as u32,
                map_entries: e.as_ptr(),
                data_size: sp.data.len(),
                data: sp.data.as_ptr().cast(),
            },
            None => vk::SpecializationInfo::default(),
        })
        .collect();
    let subgroup: Vec<vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo> = stages
        .iter()
        .map(|s| vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo {
            required_subgroup_size: s.required_subgroup_size.unwrap_or(0),
            ..Default::default()
        })
        .collect();
    let create: Vec<vk::PipelineShaderStageCreateInfo> = stages
        .iter()
        .enumerate()
        .map(|(i, s)| vk::PipelineShaderStageCreateInfo {
            next: if s.required_subgroup_size.is_some() {
                (&subgroup[i] as *const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo).cast()
            } else {
                std::ptr::null()
            },
            flags: vk::PipelineShaderStageCreateFlags::from_bits_truncate(s.flags),
            stage: s.stage,
            module: s.module.map_or(vk::ShaderModule::null(), |m| m.handle),
            name: s.entry.as_ptr(),
            specialization_info: if s.specialization.is_some() { &infos[i] } else { std::ptr::null() },
            ..Default::default()
        })
        .collect();
    f(&create)
}

/// Everything one native pipeline is made of: its stages (in the state's order), its state,
/// and the objects the state names, made on the device ([`NativeObjects`]).
pub struct NativeInput<'a> {
    /// The stages, one per `state.stages` entry.
    pub stages: Vec<StageInput<'a>>,
    /// The native state.
    pub state: &'a NativePipeline,
    /// The pipeline layout made from `state.layout`.
    pub layout: &'a DriverLayout,
    /// The render pass made from `state.graphics.render_pass` (`None` for dynamic rendering
    /// and compute).
    pub render_pass: Option<&'a RenderPass>,
}

/// A pointer to the value, or null.
fn ptr<T>(o: &Option<T>) -> *const T {
    o.as_ref().map_or(std::ptr::null(), |v| v as *const T)
}

fn b32(b: bool) -> vk::Bool32 {
    vk::Bool32::from(b)
}

/// Refuses a flags value with a bit its Vulkan type does not define (the create info is
/// built with `from_bits_truncate`, lossless after this check: nothing the application said
/// is dropped).
macro_rules! known {
    ($t:ty, $v:expr, $($field:tt)+) => {
        if <$t>::from_bits($v).is_none() {
            return Err(format!("{} has bits {:#x} that {} does not define", format!($($field)+), $v, stringify!($t)));
        }
    };
}

/// Every flags field of `state` holds only bits Vulkan defines for its type.
fn check_flags(state: &NativePipeline) -> Result<(), String> {
    known!(vk::PipelineCreateFlags, state.flags, "flags");
    for (i, s) in state.stages.iter().enumerate() {
        known!(vk::PipelineShaderStageCreateFlags, s.flags, "stages[{i}].flags");
    }
    let l = &state.layout;
    known!(vk::PipelineLayoutCreateFlags, l.flags, "layout.flags");
    for (i, r) in l.push_constant_ranges.iter().enumerate() {
        known!(vk::ShaderStageFlags, r.stage_flags, "layout.pushConstantRanges[{i}].stageFlags");
    }
    for (si, set) in l.set_layouts.iter().enumerate() {
        known!(vk::DescriptorSetLayoutCreateFlags, set.flags, "layout.setLayouts[{si}].flags");
        for (bi, b) in set.bindings.iter().enumerate() {
            known!(vk::ShaderStageFlags, b.stage_flags, "layout.setLayouts[{si}].bindings[{bi}].stageFlags");
            known!(vk::DescriptorBindingFlags, b.binding_flags, "layout.setLayouts[{si}].bindings[{bi}].bindingFlags");
            for (k, s) in b.immutable_samplers.iter().enumerate() {
                known!(
                    vk::SamplerCreateFlags,
                    s.flags,
                    "layout.setLayouts[{si}].bindings[{bi}].pImmutableSamplers[{k}].flags"
                );
            }
        }
    }
    let Some(g) = &state.graphics else { return Ok(()) };
    if let Some(v) = &g.vertex_input_state {
        known!(vk::PipelineVertexInputStateCreateFlags, v.flags, "vertexInputState.flags");
    }
    if let Some(v) = &g.input_assembly_state {
        known!(vk::PipelineInputAssemblyStateCreateFlags, v.flags, "inputAssemblyState.flags");
    }
    if let Some(v) = &g.tessellation_state {
        known!(vk::PipelineTessellationStateCreateFlags, v.flags, "tessellationState.flags");
    }
    if let Some(v) = &g.viewport_state {
        known!(vk::PipelineViewportStateCreateFlags, v.flags, "viewportState.flags");
    }
    if let Some(r) = &g.rasterization_state {
        known!(vk::PipelineRasterizationStateCreateFlags, r.flags, "rasterizationState.flags");
        known!(vk::CullModeFlags, r.cull_mode, "rasterizationState.cullMode");
        if let Some(c) = &r.conservative {
            known!(
                vk::PipelineRasterizationConservativeStateCreateFlagsEXT,
                c.flags,
                "rasterizationState.conservative.flags"
            );
        }
    }
    if let Some(m) = &g.multisample_state {
        known!(vk::PipelineMultisampleStateCreateFlags, m.flags, "multisampleState.flags");
        known!(vk::SampleCountFlags, m.rasterization_samples, "multisampleState.rasterizationSamples");
    }
    if let Some(d) = &g.depth_stencil_state {
        known!(vk::PipelineDepthStencilStateCreateFlags, d.flags, "depthStencilState.flags");
    }
    if let Some(c) = &g.color_blend_state {
        known!(vk::PipelineColorBlendStateCreateFlags, c.flags, "colorBlendState.flags");
        for (i, a) in c.attachments.iter().enumerate() {
            known!(vk::ColorComponentFlags, a.color_write_mask, "colorBlendState.attachments[{i}].colorWriteMask");
        }
    }
    if let Some(rp) = &g.render_pass {
        known!(vk::RenderPassCreateFlags, rp.flags, "renderPass.flags");
        for (i, a) in rp.attachments.iter().enumerate() {
            known!(vk::AttachmentDescriptionFlags, a.flags, "renderPass.attachments[{i}].flags");
            known!(vk::SampleCountFlags, a.samples, "renderPass.attachments[{i}].samples");
        }
        for (i, s) in rp.subpasses.iter().enumerate() {
            known!(vk::SubpassDescriptionFlags, s.flags, "renderPass.subpasses[{i}].flags");
            let refs = s.input_attachments.iter().chain(&s.color_attachments).chain(&s.resolve_attachments);
            for r in refs.chain(s.depth_stencil_attachment.iter()) {
                known!(
                    vk::ImageAspectFlags,
                    r.aspect_mask,
                    "renderPass.subpasses[{i}] attachment reference aspectMask"
                );
            }
        }
        for (i, d) in rp.dependencies.iter().enumerate() {
            known!(vk::PipelineStageFlags, d.src_stage_mask, "renderPass.dependencies[{i}].srcStageMask");
            known!(vk::PipelineStageFlags, d.dst_stage_mask, "renderPass.dependencies[{i}].dstStageMask");
            known!(vk::AccessFlags, d.src_access_mask, "renderPass.dependencies[{i}].srcAccessMask");
            known!(vk::AccessFlags, d.dst_access_mask, "renderPass.dependencies[{i}].dstAccessMask");
            known!(vk::DependencyFlags, d.dependency_flags, "renderPass.dependencies[{i}].dependencyFlags");
        }
    }
    Ok(())
}

/// The structural checks of a native state that no device property decides: one stage
/// state per stage, a compute pipeline of one compute stage, counts that agree, values that
/// fit their Vulkan types (every flags field only bits Vulkan defines). The message names the
/// field.
pub fn check_structure(state: &NativePipeline, stages: &[crate::types::ShaderStage]) -> Result<(), String> {
    use crate::types::ShaderStage;
    check_flags(state)?;
    // What the model cannot say: the base pipeline of a derivative, and the library parts
    // (`VkGraphicsPipelineLibraryCreateInfoEXT`) and libraries of a library pipeline.
    if state.flags & 0x4 != 0 {
        return Err("flags has DERIVATIVE (its base pipeline is not part of the native state)".into());
    }
    if state.flags & 0x800 != 0 && state.ray_tracing.is_none() {
        return Err("flags has LIBRARY_KHR (graphics pipeline library parts are not part of the native state)".into());
    }
    if state.stages.len() != stages.len() {
        return Err(format!("the native state has {} stage states for {} stages", state.stages.len(), stages.len()));
    }
    if state.ray_tracing.is_some() || stages.iter().any(|s| s.is_ray_tracing()) {
        return state.check_ray_tracing(stages);
    }
    let Some(g) = &state.graphics else {
        if stages != [ShaderStage::Compute] {
            return Err(format!("a compute pipeline's state with stages {stages:?} (one compute stage expected)"));
        }
        return Ok(());
    };
    if stages.contains(&ShaderStage::Compute) {
        return Err("a graphics pipeline's state with a compute stage".into());
    }
    for (i, s) in stages.iter().enumerate() {
        if stages[..i].contains(s) {
            return Err(format!("stages[{i}]: a second {s} stage"));
        }
    }
    if let Some(r) = &g.rasterization_state {
        if let Some(l) = r.line.as_ref().filter(|l| l.line_stipple_pattern > u32::from(u16::MAX)) {
            return Err(format!(
                "rasterizationState.line.lineStipplePattern {} does not fit 16 bits",
                l.line_stipple_pattern
            ));
        }
    }
    if let Some(c) = &g.color_blend_state {
        if !c.attachments.is_empty() && c.attachments.len() as u32 != c.attachment_count {
            return Err(format!(
                "colorBlendState.attachmentCount is {} but {} attachments are given",
                c.attachment_count,
                c.attachments.len()
            ));
        }
    }
    if let Some(v) = &g.viewport_state {
        if (!v.viewports.is_empty() && v.viewports.len() as u32 != v.viewport_count)
            || (!v.scissors.is_empty() && v.scissors.len() as u32 != v.scissor_count)
        {
            return Err("viewportState: viewportCount/scissorCount differ from the viewports/scissors given".into());
        }
    }
    if let Some(m) = &g.multisample_state {
        let words = (m.rasterization_samples as usize).div_ceil(32);
        if !m.sample_mask.is_empty() && m.sample_mask.len() != words {
            return Err(format!(
                "multisampleState.sampleMask has {} words; {} samples need {words}",
                m.sample_mask.len(),
                m.rasterization_samples
            ));
        }
    }
    match (&g.render_pass, &g.rendering) {
        (Some(rp), _) => {
            check_render_pass(rp)?;
            if g.subpass as usize >= rp.subpasses.len() {
                return Err(format!("subpass {} of a render pass of {} subpasses", g.subpass, rp.subpasses.len()));
            }
        }
        (None, None) => {
            return Err(
                "a graphics state without a render pass or dynamic-rendering formats (VkPipelineRenderingCreateInfo)"
                    .into(),
            )
        }
        (None, Some(_)) => {}
    }
    Ok(())
}

fn check_render_pass(rp: &RenderPassState) -> Result<(), String> {
    for (i, s) in rp.subpasses.iter().enumerate() {
        if !s.resolve_attachments.is_empty() && s.resolve_attachments.len() != s.color_attachments.len() {
            return Err(format!(
                "renderPass.subpasses[{i}] has {} resolve attachments for {} colour attachments",
                s.resolve_attachments.len(),
                s.color_attachments.len()
            ));
        }
    }
    Ok(())
}

/// Builds the graphics create info of `input` (whose state has a graphics part) with `chain`
/// on this stack frame and hands it to `f` (every pointer in it refers to a local of this
/// call or to `input`, valid while `f` runs).
pub(super) fn with_graphics_info<R>(
    input: &NativeInput<'_>,
    g: &GraphicsState,
    chain: Chain<'_>,
    f: impl FnOnce(&vk::GraphicsPipelineCreateInfo) -> R,
) -> R {
    // Vertex input (+ divisors).
    let vi = g.vertex_input_state.as_ref();
    let bindings: Vec<vk::VertexInputBindingDescription> = vi
        .map(|v| {
            v.bindings
                .iter()
                .map(|b| vk::VertexInputBindingDescription {
                    binding: b.binding,
                    stride: b.stride,
                    input_rate: vk::VertexInputRate::from_raw(b.input_rate as i32),
                })
                .collect()
        })
        .unwrap_or_default();
    let attributes: Vec<vk::VertexInputAttributeDescription> = vi
        .map(|v| {
            v.attributes
                .iter()
                .map(|a| vk::VertexInputAttributeDescription {
                    location: a.location,
                    binding: a.binding,
                    format: vk::Format::from_raw(a.format as i32),
                    offset: a.offset,
                })
                .collect()
        })
        .unwrap_or_default();
    let divisors: Vec<vk::VertexInputBindingDivisorDescription> = vi
        .map(|v| {
            v.divisors
                .iter()
                .map(|d| vk::VertexInputBindingDivisorDescription { binding: d.binding, divisor: d.divisor })
                .collect()
        })
        .unwrap_or_default();
    let divisor_info = vk::PipelineVertexInputDivisorStateCreateInfo {
        vertex_binding_divisor_count: divisors.len() as u32,
        vertex_binding_divisors: divisors.as_ptr(),
        ..Default::default()
    };
    let vertex_input = vk::PipelineVertexInputStateCreateInfo {
        next: if divisors.is_empty() {
            std::ptr::null()
        } else {
            (&divisor_info as *const vk::PipelineVertexInputDivisorStateCreateInfo).cast()
        },
        flags: vk::PipelineVertexInputStateCreateFlags::from_bits_truncate(vi.map_or(0, |v| v.flags)),
        vertex_binding_description_count: bindings.len() as u32,
        vertex_binding_descriptions: bindings.as_ptr(),
        vertex_attribute_description_count: attributes.len() as u32,
        vertex_attribute_descriptions: attributes.as_ptr(),
        ..Default::default()
    };
    // Input assembly.
    let ia = g.input_assembly_state.as_ref();
    let assembly = vk::PipelineInputAssemblyStateCreateInfo {
        flags: vk::PipelineInputAssemblyStateCreateFlags::from_bits_truncate(ia.map_or(0, |a| a.flags)),
        topology: vk::PrimitiveTopology::from_raw(ia.map_or(0, |a| a.topology) as i32),
        primitive_restart_enable: b32(ia.is_some_and(|a| a.primitive_restart_enable)),
        ..Default::default()
    };
    // Tessellation (+ domain origin).
    let ts = g.tessellation_state.as_ref();
    let domain = vk::PipelineTessellationDomainOriginStateCreateInfo {
        domain_origin: vk::TessellationDomainOrigin::from_raw(ts.and_then(|t| t.domain_origin).unwrap_or(0) as i32),
        ..Default::default()
    };
    let tessellation = vk::PipelineTessellationStateCreateInfo {
        next: if ts.is_some_and(|t| t.domain_origin.is_some()) {
            (&domain as *const vk::PipelineTessellationDomainOriginStateCreateInfo).cast()
        } else {
            std::ptr::null()
        },
        flags: vk::PipelineTessellationStateCreateFlags::from_bits_truncate(ts.map_or(0, |t| t.flags)),
        patch_control_points: ts.map_or(0, |t| t.patch_control_points),
        ..Default::default()
    };
    // Viewports (+ depth clip control).
    let vs = g.viewport_state.as_ref();
    let viewports: Vec<vk::Viewport> = vs
        .map(|v| {
            v.viewports
                .iter()
                .map(|p| vk::Viewport {
                    x: p.x,
                    y: p.y,
                    width: p.width,
                    height: p.height,
                    min_depth: p.min_depth,
                    max_depth: p.max_depth,
                })
                .collect()
        })
        .unwrap_or_default();
    let scissors: Vec<vk::Rect2D> = vs
        .map(|v| {
            v.scissors
                .iter()
                .map(|r| vk::Rect2D {
                    offset: vk::Offset2D { x: r.x, y: r.y },
                    extent: vk::Extent2D { width: r.width, height: r.height },
                })
                .collect()
        })
        .unwrap_or_default();
    let clip_control = vk::PipelineViewportDepthClipControlCreateInfoEXT {
        negative_one_to_one: b32(vs.and_then(|v| v.negative_one_to_one).unwrap_or(false)),
        ..Default::default()
    };
    let viewport = vk::PipelineViewportStateCreateInfo {
        next: if vs.is_some_and(|v| v.negative_one_to_one.is_some()) {
            (&clip_control as *const vk::PipelineViewportDepthClipControlCreateInfoEXT).cast()
        } else {
            std::ptr::null()
        },
        flags: vk::PipelineViewportStateCreateFlags::from_bits_truncate(vs.map_or(0, |v| v.flags)),
        viewport_count: vs.map_or(0, |v| v.viewport_count),
        viewports: if viewports.is_empty() { std::ptr::null() } else { viewports.as_ptr() },
        scissor_count: vs.map_or(0, |v| v.scissor_count),
        scissors: if scissors.is_empty() { std::ptr::null() } else { scissors.as_ptr() },
        ..Default::default()
    };
    // Rasterization (+ line, provoking vertex, conservative, depth clip, stream).
    let rs = g.rasterization_state.as_ref();
    let mut raster_tail: *const c_void = std::ptr::null();
    let line = rs.and_then(|r| r.line.as_ref());
    let line_info = vk::PipelineRasterizationLineStateCreateInfo {
        line_rasterization_mode: vk::LineRasterizationMode::from_raw(
            line.map_or(0, |l| l.line_rasterization_mode) as i32
        ),
        stippled_line_enable: b32(line.is_some_and(|l| l.stippled_line_enable)),
        line_stipple_factor: line.map_or(0, |l| l.line_stipple_factor),
        // `check_structure` refused a pattern past 16 bits.
        line_stipple_pattern: line.map_or(0, |l| l.line_stipple_pattern as u16),
        ..Default::default()
    };
    let mut line_info = line_info;
    if line.is_some() {
        line_info.next = raster_tail;
        raster_tail = (&line_info as *const vk::PipelineRasterizationLineStateCreateInfo).cast();
    }
    let mut provoking = vk::PipelineRasterizationProvokingVertexStateCreateInfoEXT::default();
    if let Some(m) = rs.and_then(|r| r.provoking_vertex_mode) {
        provoking.provoking_vertex_mode = vk::ProvokingVertexModeEXT::from_raw(m as i32);
        provoking.next = raster_tail;
        raster_tail = (&provoking as *const vk::PipelineRasterizationProvokingVertexStateCreateInfoEXT).cast();
    }
    let mut conservative = vk::PipelineRasterizationConservativeStateCreateInfoEXT::default();
    if let Some(c) = rs.and_then(|r| r.conservative.as_ref()) {
        conservative.flags = vk::PipelineRasterizationConservativeStateCreateFlagsEXT::from_bits_truncate(c.flags);
        conservative.conservative_rasterization_mode =
            vk::ConservativeRasterizationModeEXT::from_raw(c.conservative_rasterization_mode as i32);
        conservative.extra_primitive_overestimation_size = c.extra_primitive_overestimation_size;
        conservative.next = raster_tail;
        raster_tail = (&conservative as *const vk::PipelineRasterizationConservativeStateCreateInfoEXT).cast();
    }
    let mut depth_clip = vk::PipelineRasterizationDepthClipStateCreateInfoEXT::default();
    if let Some(e) = rs.and_then(|r| r.depth_clip_enable) {
        depth_clip.depth_clip_enable = b32(e);
        depth_clip.next = raster_tail;
        raster_tail = (&depth_clip as *const vk::PipelineRasterizationDepthClipStateCreateInfoEXT).cast();
    }
    let mut stream = vk::PipelineRasterizationStateStreamCreateInfoEXT::default();
    if let Some(s) = rs.and_then(|r| r.rasterization_stream) {
        stream.rasterization_stream = s;
        stream.next = raster_tail;
        raster_tail = (&stream as *const vk::PipelineRasterizationStateStreamCreateInfoEXT).cast();
    }
    let raster = rs.map(|r| vk::PipelineRasterizationStateCreateInfo {
        next: raster_tail,
        flags: vk::PipelineRasterizationStateCreateFlags::from_bits_truncate(r.flags),
        depth_clamp_enable: b32(r.depth_clamp_enable),
        rasterizer_discard_enable: b32(r.rasterizer_discard_enable),
        polygon_mode: vk::PolygonMode::from_raw(r.polygon_mode as i32),
        cull_mode: vk::CullModeFlags::from_bits_truncate(r.cull_mode),
        front_face: vk::FrontFace::from_raw(r.front_face as i32),
        depth_bias_enable: b32(r.depth_bias_enable),
        depth_bias_constant_factor: r.depth_bias_constant_factor,
        depth_bias_clamp: r.depth_bias_clamp,
        depth_bias_slope_factor: r.depth_bias_slope_factor,
        line_width: r.line_width,
        ..Default::default()
    });
    // Multisample.
    let ms = g.multisample_state.as_ref();
    let multisample = ms.map(|m| vk::PipelineMultisampleStateCreateInfo {
        flags: vk::PipelineMultisampleStateCreateFlags::from_bits_truncate(m.flags),
        rasterization_samples: vk::SampleCountFlags::from_bits_truncate(m.rasterization_samples),
        sample_shading_enable: b32(m.sample_shading_enable),
        min_sample_shading: m.min_sample_shading,
        sample_mask: if m.sample_mask.is_empty() { std::ptr::null() } else { m.sample_mask.as_ptr() },
        alpha_to_coverage_enable: b32(m.alpha_to_coverage_enable),
        alpha_to_one_enable: b32(m.alpha_to_one_enable),
        ..Default::default()
    });
    // Depth/stencil.
    let stencil = |s: &crate::native::StencilOpState| vk::StencilOpState {
        fail_op: vk::StencilOp::from_raw(s.fail_op as i32),
        pass_op: vk::StencilOp::from_raw(s.pass_op as i32),
        depth_fail_op: vk::StencilOp::from_raw(s.depth_fail_op as i32),
        compare_op: vk::CompareOp::from_raw(s.compare_op as i32),
        compare_mask: s.compare_mask,
        write_mask: s.write_mask,
        reference: s.reference,
    };
    let depth_stencil = g.depth_stencil_state.as_ref().map(|d| vk::PipelineDepthStencilStateCreateInfo {
        flags: vk::PipelineDepthStencilStateCreateFlags::from_bits_truncate(d.flags),
        depth_test_enable: b32(d.depth_test_enable),
        depth_write_enable: b32(d.depth_write_enable),
        depth_compare_op: vk::CompareOp::from_raw(d.depth_compare_op as i32),
        depth_bounds_test_enable: b32(d.depth_bounds_test_enable),
        stencil_test_enable: b32(d.stencil_test_enable),
        front: stencil(&d.front),
        back: stencil(&d.back),
        min_depth_bounds: d.min_depth_bounds,
        max_depth_bounds: d.max_depth_bounds,
        ..Default::default()
    });
    // Colour blend.
    let cb = g.color_blend_state.as_ref();
    let blend_attachments: Vec<vk::PipelineColorBlendAttachmentState> = cb
        .map(|c| {
            c.attachments
                .iter()
                .map(|a| vk::PipelineColorBlendAttachmentState {
                    blend_enable: b32(a.blend_enable),
                    src_color_blend_factor: vk::BlendFactor::from_raw(a.src_color_blend_factor as i32),
                    dst_color_blend_factor: vk::BlendFactor::from_raw(a.dst_color_blend_factor as i32),
                    color_blend_op: vk::BlendOp::from_raw(a.color_blend_op as i32),
                    src_alpha_blend_factor: vk::BlendFactor::from_raw(a.src_alpha_blend_factor as i32),
                    dst_alpha_blend_factor: vk::BlendFactor::from_raw(a.dst_alpha_blend_factor as i32),
                    alpha_blend_op: vk::BlendOp::from_raw(a.alpha_blend_op as i32),
                    color_write_mask: vk::ColorComponentFlags::from_bits_truncate(a.color_write_mask),
                })
                .collect()
        })
        .unwrap_or_default();
    let blend = cb.map(|c| vk::PipelineColorBlendStateCreateInfo {
        flags: vk::PipelineColorBlendStateCreateFlags::from_bits_truncate(c.flags),
        logic_op_enable: b32(c.logic_op_enable),
        logic_op: vk::LogicOp::from_raw(c.logic_op as i32),
        attachment_count: c.attachment_count,
        attachments: if blend_attachments.is_empty() { std::ptr::null() } else { blend_attachments.as_ptr() },
        blend_constants: c.blend_constants,
        ..Default::default()
    });
    // Dynamic state.
    let dynamic_states: Vec<vk::DynamicState> =
        g.dynamic_states.iter().map(|d| vk::DynamicState::from_raw(*d as i32)).collect();
    let dynamic = vk::PipelineDynamicStateCreateInfo {
        dynamic_state_count: dynamic_states.len() as u32,
        dynamic_states: dynamic_states.as_ptr(),
        ..Default::default()
    };
    // Dynamic rendering, at the head of the chain, then the tail.
    let formats: Vec<vk::Format> = g
        .rendering
        .as_ref()
        .map(|r| r.color_attachment_formats.iter().map(|f| vk::Format::from_raw(*f as i32)).collect())
        .unwrap_or_default();
    let mut tail = Tail::default();
    let flags = vk::PipelineCreateFlags2::from_bits_truncate(u64::from(input.state.flags));
    let mut next = tail.link(chain, flags, false, std::ptr::null());
    let mut rendering = vk::PipelineRenderingCreateInfo::default();
    if let Some(r) = &g.rendering {
        rendering.view_mask = r.view_mask;
        rendering.color_attachment_count = formats.len() as u32;
        rendering.color_attachment_formats = formats.as_ptr();
        rendering.depth_attachment_format = vk::Format::from_raw(r.depth_attachment_format as i32);
        rendering.stencil_attachment_format = vk::Format::from_raw(r.stencil_attachment_format as i32);
        rendering.next = next;
        next = (&rendering as *const vk::PipelineRenderingCreateInfo).cast();
    }
    with_stages(&input.stages, |stages| {
        let info = vk::GraphicsPipelineCreateInfo {
            next,
            flags: vk::PipelineCreateFlags::from_bits_truncate(input.state.flags),
            stage_count: stages.len() as u32,
            stages: stages.as_ptr(),
            vertex_input_state: if vi.is_some() { &vertex_input } else { std::ptr::null() },
            input_assembly_state: if ia.is_some() { &assembly } else { std::ptr::null() },
            tessellation_state: if ts.is_some() { &tessellation } else { std::ptr::null() },
            viewport_state: if vs.is_some() { &viewport } else { std::ptr::null() },
            rasterization_state: ptr(&raster),
            multisample_state: ptr(&multisample),
            depth_stencil_state: ptr(&depth_stencil),
            color_blend_state: ptr(&blend),
            dynamic_state: if dynamic_states.is_empty() { std::ptr::null() } else { &dynamic },
            layout: input.layout.handle,
            render_pass: input.render_pass.map_or(vk::RenderPass::null(), |r| r.handle),
            subpass: g.subpass,
            base_pipeline_handle: vk::Pipeline::null(),
            base_pipeline_index: -1,
            ..Default::default()
        };
        f(&info)
    })
}

/// Builds the compute create info of `input` (one stage) with `chain` on this stack frame and
/// hands it to `f`.
pub(super) fn with_compute_info<R>(
    input: &NativeInput<'_>,
    chain: Chain<'_>,
    f: impl FnOnce(&vk::ComputePipelineCreateInfo) -> R,
) -> R {
    let mut tail = Tail::default();
    let flags = vk::PipelineCreateFlags2::from_bits_truncate(u64::from(input.state.flags));
    let next = tail.link(chain, flags, false, std::ptr::null());
    with_stages(&input.stages[..input.stages.len().min(1)], |stages| {
        let info = vk::ComputePipelineCreateInfo {
            next,
            flags: vk::PipelineCreateFlags::from_bits_truncate(input.state.flags),
            stage: stages.first().copied().unwrap_or_default(),
            layout: input.layout.handle,
            base_pipeline_handle: vk::Pipeline::null(),
            base_pipeline_index: -1,
            ..Default::default()
        };
        f(&info)
    })
}

/// Builds the ray-tracing create info of `input` with `chain` on this stack frame and hands it
/// to `f`. No pipeline libraries are linked (`pLibraryInfo` null: the model has none); a
/// library pipeline carries its interface.
pub(super) fn with_ray_tracing_info<R>(
    input: &NativeInput<'_>,
    rt: &crate::native::RayTracingState,
    chain: Chain<'_>,
    f: impl FnOnce(&vk::RayTracingPipelineCreateInfoKHR) -> R,
) -> R {
    let mut tail = Tail::default();
    let flags = vk::PipelineCreateFlags2::from_bits_truncate(u64::from(input.state.flags));
    let next = tail.link(chain, flags, false, std::ptr::null());
    let groups: Vec<vk::RayTracingShaderGroupCreateInfoKHR> = rt
        .groups
        .iter()
        .map(|g| vk::RayTracingShaderGroupCreateInfoKHR {
            type_: vk::RayTracingShaderGroupTypeKHR::from_raw(g.group_type as i32),
            general_shader: g.general_shader,
            closest_hit_shader: g.closest_hit_shader,
            any_hit_shader: g.any_hit_shader,
            intersection_shader: g.intersection_shader,
            shader_group_capture_replay_handle: std::ptr::null(),
            ..Default::default()
        })
        .collect();
    let interface = rt.library_interface.as_ref().map(|i| vk::RayTracingPipelineInterfaceCreateInfoKHR {
        max_pipeline_ray_payload_size: i.max_pipeline_ray_payload_size,
        max_pipeline_ray_hit_attribute_size: i.max_pipeline_ray_hit_attribute_size,
        ..Default::default()
    });
    let dynamic_states: Vec<vk::DynamicState> =
        rt.dynamic_states.iter().map(|d| vk::DynamicState::from_raw(*d as i32)).collect();
    let dynamic = vk::PipelineDynamicStateCreateInfo {
        dynamic_state_count: dynamic_states.len() as u32,
        dynamic_states: dynamic_states.as_ptr(),
        ..Default::default()
    };
    with_stages(&input.stages, |stages| {
        let info = vk::RayTracingPipelineCreateInfoKHR {
            next,
            flags: vk::PipelineCreateFlags::from_bits_truncate(input.state.flags),
            stage_count: stages.len() as u32,
            stages: stages.as_ptr(),
            group_count: groups.len() as u32,
            groups: groups.as_ptr(),
            max_pipeline_ray_recursion_depth: rt.max_pipeline_ray_recursion_depth,
            library_info: std::ptr::null(),
            library_interface: ptr(&interface),
            dynamic_state: if dynamic_states.is_empty() { std::ptr::null() } else { &dynamic },
            layout: input.layout.handle,
            base_pipeline_handle: vk::Pipeline::null(),
            base_pipeline_index: -1,
            ..Default::default()
        };
        f(&info)
    })
}

/// The canonical bytes of one part of a native state (the key its shared object is found by).
fn bytes_of<T: Codec>(v: &T) -> Vec<u8> {
    let mut o = Vec::new();
    v.put(&mut o);
    o
}

/// The objects native pipelines name, made once per device by content and shared by every
/// pipeline that names an equal one: immutable samplers, pipeline layouts (with their set
/// layouts) and render passes. Whoever creates pipelines on a device (the harvest backend,
/// the run-time loader) holds one.
///
/// Lifetimes (docs: Vulkan specification §3.3.1 "Object Lifetime"): "A VkRenderPass or
/// VkPipelineLayout object passed as a parameter to create another object is not further
/// accessed by that object after the duration of the command it is passed into", so a
/// pipeline does not keep its render pass or layout; but a layout must still outlive command
/// buffers that bind with it, and the descriptor sets allocated with a set layout use its
/// immutable samplers at draw time (`VkDescriptorSetLayoutBinding::pImmutableSamplers`;
/// `VUID-vkDestroySampler-sampler-01082`: no pending command may use a destroyed sampler). So
/// every layout holds its samplers (`Arc`), and everything here lives as long as this value:
/// destroyed when its owner (backend or loader) is dropped, when no creation can reach them.
///
/// Thread safety: `Send + Sync`; each object is made once per content by one caller while the
/// others wait ([`Shared`]).
#[derive(Default)]
pub struct NativeObjects {
    samplers: Shared<Vec<u8>, Sampler>,
    layouts: Shared<Vec<u8>, DriverLayout>,
    engine_layouts: Shared<Vec<u8>, DriverLayout>,
    render_passes: Shared<Vec<u8>, RenderPass>,
}

impl NativeObjects {
    /// The pipeline layout of `layout` on `gpu` (its set layouts and immutable samplers made
    /// first), made once per content.
    pub fn layout(&self, gpu: &Arc<super::device::Gpu>, layout: &NativeLayout) -> Result<Arc<DriverLayout>, String> {
        self.layouts.get_or_try(bytes_of(layout), || {
            let sampler =
                |s: &SamplerState| self.samplers.get_or_try(bytes_of(s), || gpu.sampler(s).map_err(|e| e.to_string()));
            gpu.native_layout(layout, &sampler).map_err(|e| e.to_string())
        })
    }

    /// The engine's layout for `layout` (from `make`), asked once per content; held apart
    /// from granary's own.
    pub fn engine_layout(
        &self,
        layout: &NativeLayout,
        make: impl FnOnce() -> Result<DriverLayout, String>,
    ) -> Result<Arc<DriverLayout>, String> {
        self.engine_layouts.get_or_try(bytes_of(layout), make)
    }

    /// The render pass of `rp` on `gpu`, made once per content.
    pub fn render_pass(&self, gpu: &Arc<super::device::Gpu>, rp: &RenderPassState) -> Result<Arc<RenderPass>, String> {
        self.render_passes.get_or_try(bytes_of(rp), || gpu.render_pass(rp).map_err(|e| e.to_string()))
    }

    /// How many samplers, layouts and render passes are held.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.samplers.len(), self.layouts.len(), self.render_passes.len())
    }
}
