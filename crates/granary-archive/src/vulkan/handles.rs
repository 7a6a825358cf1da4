//! Shader modules, pipeline layouts, and the objects native pipelines name (immutable
//! samplers, render passes): created once, shared (`Arc`) by every pipeline creation that uses
//! them.
//!
//! # Object lifetime rules
//!
//! A [`Module`] (`VkShaderModule`), [`DriverLayout`] (descriptor-set layouts and the pipeline
//! layout made from them), [`Sampler`] or [`RenderPass`] is destroyed in `Drop`, when the last
//! `Arc` goes: no creation can still use it. A pipeline does not need its modules after
//! creation, nor its render pass or layout (Vulkan specification §3.3.1 "Object Lifetime": "A
//! VkRenderPass or VkPipelineLayout object passed as a parameter to create another object is
//! not further accessed by that object after the duration of the command it is passed into").
//! A pipeline layout must outlive command buffers that bind with it: the run-time loader keeps
//! its layouts as long as it lives. A native layout holds the immutable samplers its set
//! layouts were made with (`Arc`) and destroys its set layouts before they go: descriptor
//! sets allocated with a set layout use its immutable samplers at draw time
//! (`VUID-vkDestroySampler-sampler-01082`), so a sampler never goes before a layout that names
//! it.
//!
//! Each is created and destroyed with the device's allocation callbacks
//! ([`Gpu::allocator`]: the application's on a device borrowed with them, else `NULL`), the
//! same set for both, as Vulkan requires.
//!
//! # External synchronization
//!
//! Create calls only read modules, layouts, samplers and render passes, which any number of
//! threads may do; they are destroyed only in `Drop`.

use super::device::Gpu;
use super::error::VulkanError;
use super::translate::LayoutDesc;
use crate::native::{NativeLayout, RenderPassState, SamplerState};
use std::sync::Arc;
use vulkanalia::prelude::v1_3::*;

/// A `VkShaderModule`, destroyed when the last compile using it drops its `Arc`.
///
/// Thread safety: `Send + Sync`.
pub struct Module {
    gpu: Arc<Gpu>,
    pub(super) handle: vk::ShaderModule,
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: no pipeline creation can still use the module: every user holds the `Arc`.
        // The callbacks are the ones it was created with (`Gpu::module`).
        unsafe { self.gpu.device.destroy_shader_module(self.handle, self.gpu.allocator()) }
    }
}

/// Descriptor-set layouts and the pipeline layout made from them.
///
/// Thread safety: `Send + Sync`.
pub struct DriverLayout {
    gpu: Arc<Gpu>,
    sets: Vec<vk::DescriptorSetLayout>,
    pub(super) handle: vk::PipelineLayout,
    /// The immutable samplers the set layouts were made with (destroyed after them).
    _samplers: Vec<Arc<Sampler>>,
    /// Whether this value made the handles and destroys them (`false`: the engine's layout,
    /// from a [`LayoutSource`](super::LayoutSource), never destroyed here).
    owned: bool,
}

impl DriverLayout {
    /// The `VkPipelineLayout` (owned by this value unless [`is_engines`](Self::is_engines)).
    pub fn handle(&self) -> vk::PipelineLayout {
        self.handle
    }
    /// The descriptor-set layouts, by set index (owned by this value); empty for the
    /// engine's own layout.
    pub fn set_layouts(&self) -> &[vk::DescriptorSetLayout] {
        &self.sets
    }
    /// Whether the layout is the engine's own (from a [`LayoutSource`](super::LayoutSource)):
    /// granary never destroys it.
    pub fn is_engines(&self) -> bool {
        !self.owned
    }
}

impl Drop for DriverLayout {
    fn drop(&mut self) {
        if !self.owned {
            return; // The engine's: it destroys it after every pipeline made with it.
        }
        // SAFETY: as for `Module` (the callbacks they were created with); the pipeline layout
        // goes before the set layouts it uses.
        unsafe {
            if !self.handle.is_null() {
                self.gpu.device.destroy_pipeline_layout(self.handle, self.gpu.allocator());
            }
            for s in &self.sets {
                self.gpu.device.destroy_descriptor_set_layout(*s, self.gpu.allocator());
            }
        }
    }
}

impl Gpu {
    /// Creates a shader module from SPIR-V bytes.
    pub fn module(self: &Arc<Self>, spirv: &[u8]) -> Result<Module, VulkanError> {
        if !spirv.len().is_multiple_of(4) || spirv.is_empty() {
            return Err(VulkanError::call("vkCreateShaderModule", "SPIR-V length is not a positive multiple of 4"));
        }
        if spirv[..4] != [0x03, 0x02, 0x23, 0x07] {
            return Err(VulkanError::call("vkCreateShaderModule", "not SPIR-V (no little-endian magic 0x07230203)"));
        }
        // A capability whose feature is not enabled is invalid usage (VUID-…-pCode-01091).
        super::feature_check::check_spirv(self, spirv)
            .map_err(|message| VulkanError::Unsupported { device: self.info.identity.device_name.clone(), message })?;
        super::probe::observe(super::probe::Data::Spirv, spirv);
        // Copy to a `u32` buffer: the archive's bytes are 16-byte aligned, but a `Vec<u8>` from
        // elsewhere need not be.
        let words: Vec<u32> = spirv.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let info = vk::ShaderModuleCreateInfo { code_size: spirv.len(), code: words.as_ptr(), ..Default::default() };
        // SAFETY: `words` lives until the call returns; `code_size` is its length in bytes.
        let handle = unsafe { self.device.create_shader_module(&info, self.allocator()) }
            .map_err(|e| VulkanError::call("vkCreateShaderModule", e))?;
        Ok(Module { gpu: self.clone(), handle })
    }

    /// Checks `desc` against this device's limits (descriptor sets, push-constant size).
    pub fn check_layout(&self, desc: &LayoutDesc) -> Result<(), String> {
        let limits = &self.info.limits;
        if desc.sets.len() as u32 > limits.max_bound_descriptor_sets {
            return Err(format!(
                "the layout uses {} descriptor sets; device '{}' binds at most {} (maxBoundDescriptorSets)",
                desc.sets.len(),
                self.info.identity.device_name,
                limits.max_bound_descriptor_sets
            ));
        }
        if let Some((size, _)) = desc.push_constants {
            if size > limits.max_push_constants_size {
                return Err(format!(
                    "the push-constant block is {size} bytes; device '{}' allows at most {} (maxPushConstantsSize)",
                    self.info.identity.device_name, limits.max_push_constants_size
                ));
            }
        }
        Ok(())
    }

    /// The engine's own pipeline layout `handle`, held (never destroyed) for the pipelines
    /// created with it. Makes no Vulkan call; what `handle` must be is the
    /// [`LayoutSource`](super::LayoutSource) contract.
    pub(super) fn engine_layout(self: &Arc<Self>, handle: vk::PipelineLayout) -> DriverLayout {
        DriverLayout { gpu: self.clone(), sets: Vec::new(), handle, _samplers: Vec::new(), owned: false }
    }

    /// Creates descriptor-set layouts and a pipeline layout, after [`check_layout`](Self::check_layout).
    pub fn layout(self: &Arc<Self>, desc: &LayoutDesc) -> Result<DriverLayout, VulkanError> {
        self.check_layout(desc)
            .map_err(|message| VulkanError::Unsupported { device: self.info.identity.device_name.clone(), message })?;
        let mut layout = DriverLayout {
            gpu: self.clone(),
            sets: Vec::new(),
            handle: vk::PipelineLayout::null(),
            _samplers: Vec::new(),
            owned: true,
        };
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
            let s = unsafe { self.device.create_descriptor_set_layout(&info, self.allocator()) }
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
        // SAFETY: the set layouts and ranges live until the call returns; every range has a
        // non-zero size (multiple of 4) and stage flags (`layout_desc`) within the device's
        // limit (`check_layout`).
        layout.handle = unsafe { self.device.create_pipeline_layout(&info, self.allocator()) }
            .map_err(|e| VulkanError::call("vkCreatePipelineLayout", e))?;
        Ok(layout)
    }
}

/// A `VkSampler` made for a set layout's immutable samplers, destroyed when the last layout
/// made with it is dropped.
///
/// Thread safety: `Send + Sync`.
pub struct Sampler {
    gpu: Arc<Gpu>,
    pub(super) handle: vk::Sampler,
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: every layout made with the sampler holds its `Arc` and has destroyed its set
        // layouts before dropping it; no creation can reach it any more. The callbacks are
        // the ones it was created with.
        unsafe { self.gpu.device.destroy_sampler(self.handle, self.gpu.allocator()) }
    }
}

/// A `VkRenderPass` made from a native state's render pass, shared by every pipeline naming an
/// equal one (a pipeline does not access it after creation).
///
/// Thread safety: `Send + Sync`.
pub struct RenderPass {
    gpu: Arc<Gpu>,
    pub(super) handle: vk::RenderPass,
}

impl RenderPass {
    /// The handle (owned by this value).
    pub fn handle(&self) -> vk::RenderPass {
        self.handle
    }
}

impl Drop for RenderPass {
    fn drop(&mut self) {
        // SAFETY: pipelines do not access their render pass after creation (§3.3.1); every
        // creation using it holds the `Arc`. The callbacks are the ones it was created with.
        unsafe { self.gpu.device.destroy_render_pass(self.handle, self.gpu.allocator()) }
    }
}

impl Gpu {
    /// Creates an immutable sampler (`vkCreateSampler`, with `VkSamplerReductionModeCreateInfo`
    /// when `s.reduction_mode` is set). The features it needs were checked with the pipeline
    /// ([`check_native`](super::check_native)).
    pub fn sampler(self: &Arc<Self>, s: &SamplerState) -> Result<Sampler, VulkanError> {
        let reduction = vk::SamplerReductionModeCreateInfo {
            reduction_mode: vk::SamplerReductionMode::from_raw(s.reduction_mode.unwrap_or(0) as i32),
            ..Default::default()
        };
        let info = vk::SamplerCreateInfo {
            next: if s.reduction_mode.is_some() {
                (&reduction as *const vk::SamplerReductionModeCreateInfo).cast()
            } else {
                std::ptr::null()
            },
            flags: vk::SamplerCreateFlags::from_bits_truncate(s.flags),
            mag_filter: vk::Filter::from_raw(s.mag_filter as i32),
            min_filter: vk::Filter::from_raw(s.min_filter as i32),
            mipmap_mode: vk::SamplerMipmapMode::from_raw(s.mipmap_mode as i32),
            address_mode_u: vk::SamplerAddressMode::from_raw(s.address_mode_u as i32),
            address_mode_v: vk::SamplerAddressMode::from_raw(s.address_mode_v as i32),
            address_mode_w: vk::SamplerAddressMode::from_raw(s.address_mode_w as i32),
            mip_lod_bias: s.mip_lod_bias,
            anisotropy_enable: vk::Bool32::from(s.anisotropy_enable),
            max_anisotropy: s.max_anisotropy,
            compare_enable: vk::Bool32::from(s.compare_enable),
            compare_op: vk::CompareOp::from_raw(s.compare_op as i32),
            min_lod: s.min_lod,
            max_lod: s.max_lod,
            border_color: vk::BorderColor::from_raw(s.border_color as i32),
            unnormalized_coordinates: vk::Bool32::from(s.unnormalized_coordinates),
            ..Default::default()
        };
        // SAFETY: `info` and `reduction` live until the call returns.
        let handle = unsafe { self.device.create_sampler(&info, self.allocator()) }
            .map_err(|e| VulkanError::call("vkCreateSampler", e))?;
        Ok(Sampler { gpu: self.clone(), handle })
    }

    /// Creates a render pass (`vkCreateRenderPass2`) from `rp`.
    pub fn render_pass(self: &Arc<Self>, rp: &RenderPassState) -> Result<RenderPass, VulkanError> {
        let reference = |r: &crate::native::AttachmentReference| vk::AttachmentReference2 {
            attachment: r.attachment,
            layout: vk::ImageLayout::from_raw(r.layout as i32),
            aspect_mask: vk::ImageAspectFlags::from_bits_truncate(r.aspect_mask),
            ..Default::default()
        };
        let attachments: Vec<vk::AttachmentDescription2> = rp
            .attachments
            .iter()
            .map(|a| vk::AttachmentDescription2 {
                flags: vk::AttachmentDescriptionFlags::from_bits_truncate(a.flags),
                format: vk::Format::from_raw(a.format as i32),
                samples: vk::SampleCountFlags::from_bits_truncate(a.samples),
                load_op: vk::AttachmentLoadOp::from_raw(a.load_op as i32),
                store_op: vk::AttachmentStoreOp::from_raw(a.store_op as i32),
                stencil_load_op: vk::AttachmentLoadOp::from_raw(a.stencil_load_op as i32),
                stencil_store_op: vk::AttachmentStoreOp::from_raw(a.stencil_store_op as i32),
                initial_layout: vk::ImageLayout::from_raw(a.initial_layout as i32),
                final_layout: vk::ImageLayout::from_raw(a.final_layout as i32),
                ..Default::default()
            })
            .collect();
        // Per subpass: input, colour, resolve references, depth/stencil, preserve indices.
        type Refs = (
            Vec<vk::AttachmentReference2>,
            Vec<vk::AttachmentReference2>,
            Vec<vk::AttachmentReference2>,
            Option<vk::AttachmentReference2>,
        );
        let refs: Vec<Refs> = rp
            .subpasses
            .iter()
            .map(|s| {
                (
                    s.input_attachments.iter().map(reference).collect(),
                    s.color_attachments.iter().map(reference).collect(),
                    s.resolve_attachments.iter().map(reference).collect(),
                    s.depth_stencil_attachment.as_ref().map(reference),
                )
            })
            .collect();
        let subpasses: Vec<vk::SubpassDescription2> = rp
            .subpasses
            .iter()
            .zip(&refs)
            .map(|(s, (input, color, resolve, depth))| vk::SubpassDescription2 {
                flags: vk::SubpassDescriptionFlags::from_bits_truncate(s.flags),
                pipeline_bind_point: vk::PipelineBindPoint::from_raw(s.pipeline_bind_point as i32),
                view_mask: s.view_mask,
                input_attachment_count: input.len() as u32,
                input_attachments: input.as_ptr(),
                color_attachment_count: color.len() as u32,
                color_attachments: color.as_ptr(),
                resolve_attachments: if resolve.is_empty() { std::ptr::null() } else { resolve.as_ptr() },
                depth_stencil_attachment: depth.as_ref().map_or(std::ptr::null(), |d| d as *const _),
                preserve_attachment_count: s.preserve_attachments.len() as u32,
                preserve_attachments: s.preserve_attachments.as_ptr(),
                ..Default::default()
            })
            .collect();
        let dependencies: Vec<vk::SubpassDependency2> = rp
            .dependencies
            .iter()
            .map(|d| vk::SubpassDependency2 {
                src_subpass: d.src_subpass,
                dst_subpass: d.dst_subpass,
                src_stage_mask: vk::PipelineStageFlags::from_bits_truncate(d.src_stage_mask),
                dst_stage_mask: vk::PipelineStageFlags::from_bits_truncate(d.dst_stage_mask),
                src_access_mask: vk::AccessFlags::from_bits_truncate(d.src_access_mask),
                dst_access_mask: vk::AccessFlags::from_bits_truncate(d.dst_access_mask),
                dependency_flags: vk::DependencyFlags::from_bits_truncate(d.dependency_flags),
                view_offset: d.view_offset,
                ..Default::default()
            })
            .collect();
        let info = vk::RenderPassCreateInfo2 {
            flags: vk::RenderPassCreateFlags::from_bits_truncate(rp.flags),
            attachment_count: attachments.len() as u32,
            attachments: attachments.as_ptr(),
            subpass_count: subpasses.len() as u32,
            subpasses: subpasses.as_ptr(),
            dependency_count: dependencies.len() as u32,
            dependencies: dependencies.as_ptr(),
            correlated_view_mask_count: rp.correlated_view_masks.len() as u32,
            correlated_view_masks: rp.correlated_view_masks.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `info` points at `attachments`, `subpasses` (which point at `refs` and `rp`'s
        // preserve lists), `dependencies` and `rp`'s view masks, all alive until the call
        // returns; `check_structure` matched resolve and colour counts first.
        let handle = unsafe { self.device.create_render_pass2(&info, self.allocator()) }
            .map_err(|e| VulkanError::call("vkCreateRenderPass2", e))?;
        Ok(RenderPass { gpu: self.clone(), handle })
    }

    /// Creates the descriptor-set layouts (with `VkDescriptorSetLayoutBindingFlagsCreateInfo`
    /// where any binding has flags, and their immutable samplers from `sampler`) and the
    /// pipeline layout of a native state, after the device's set-count and push-constant
    /// limits.
    pub fn native_layout(
        self: &Arc<Self>,
        l: &NativeLayout,
        sampler: &dyn Fn(&SamplerState) -> Result<Arc<Sampler>, String>,
    ) -> Result<DriverLayout, VulkanError> {
        let unsupported =
            |message: String| VulkanError::Unsupported { device: self.info.identity.device_name.clone(), message };
        let limits = &self.info.limits;
        if l.set_layouts.len() as u32 > limits.max_bound_descriptor_sets {
            return Err(unsupported(format!(
                "layout.setLayouts has {} sets; the device binds at most {} (maxBoundDescriptorSets)",
                l.set_layouts.len(),
                limits.max_bound_descriptor_sets
            )));
        }
        for (i, r) in l.push_constant_ranges.iter().enumerate() {
            if u64::from(r.offset) + u64::from(r.size) > u64::from(limits.max_push_constants_size) {
                return Err(unsupported(format!(
                    "layout.pushConstantRanges[{i}] ends at byte {}; the device allows {} (maxPushConstantsSize)",
                    u64::from(r.offset) + u64::from(r.size),
                    limits.max_push_constants_size
                )));
            }
        }
        let mut layout = DriverLayout {
            gpu: self.clone(),
            sets: Vec::new(),
            handle: vk::PipelineLayout::null(),
            _samplers: Vec::new(),
            owned: true,
        };
        for (si, set) in l.set_layouts.iter().enumerate() {
            let mut handles: Vec<Vec<vk::Sampler>> = Vec::with_capacity(set.bindings.len());
            for (bi, b) in set.bindings.iter().enumerate() {
                let mut h = Vec::with_capacity(b.immutable_samplers.len());
                for s in &b.immutable_samplers {
                    let made = sampler(s).map_err(|e| {
                        VulkanError::call("vkCreateSampler", format!("layout.setLayouts[{si}].bindings[{bi}]: {e}"))
                    })?;
                    h.push(made.handle);
                    layout._samplers.push(made);
                }
                if !h.is_empty() && h.len() as u32 != b.descriptor_count {
                    return Err(unsupported(format!(
                        "layout.setLayouts[{si}].bindings[{bi}] has {} immutable samplers for descriptorCount {}",
                        h.len(),
                        b.descriptor_count
                    )));
                }
                handles.push(h);
            }
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = set
                .bindings
                .iter()
                .zip(&handles)
                .map(|(b, h)| vk::DescriptorSetLayoutBinding {
                    binding: b.binding,
                    descriptor_type: vk::DescriptorType::from_raw(b.descriptor_type as i32),
                    descriptor_count: b.descriptor_count,
                    stage_flags: vk::ShaderStageFlags::from_bits_truncate(b.stage_flags),
                    immutable_samplers: if h.is_empty() { std::ptr::null() } else { h.as_ptr() },
                })
                .collect();
            let flags: Vec<vk::DescriptorBindingFlags> =
                set.bindings.iter().map(|b| vk::DescriptorBindingFlags::from_bits_truncate(b.binding_flags)).collect();
            let flags_info = vk::DescriptorSetLayoutBindingFlagsCreateInfo {
                binding_count: flags.len() as u32,
                binding_flags: flags.as_ptr(),
                ..Default::default()
            };
            let info = vk::DescriptorSetLayoutCreateInfo {
                next: if set.bindings.iter().any(|b| b.binding_flags != 0) {
                    (&flags_info as *const vk::DescriptorSetLayoutBindingFlagsCreateInfo).cast()
                } else {
                    std::ptr::null()
                },
                flags: vk::DescriptorSetLayoutCreateFlags::from_bits_truncate(set.flags),
                binding_count: bindings.len() as u32,
                bindings: bindings.as_ptr(),
                ..Default::default()
            };
            // SAFETY: `bindings`, `handles` (the samplers, alive: `layout` holds them), `flags`
            // and `flags_info` live until the call returns. On error `layout`'s Drop destroys
            // the set layouts made so far.
            let s = unsafe { self.device.create_descriptor_set_layout(&info, self.allocator()) }
                .map_err(|e| VulkanError::call("vkCreateDescriptorSetLayout", e))?;
            layout.sets.push(s);
        }
        let ranges: Vec<vk::PushConstantRange> = l
            .push_constant_ranges
            .iter()
            .map(|r| vk::PushConstantRange {
                stage_flags: vk::ShaderStageFlags::from_bits_truncate(r.stage_flags),
                offset: r.offset,
                size: r.size,
            })
            .collect();
        let info = vk::PipelineLayoutCreateInfo {
            flags: vk::PipelineLayoutCreateFlags::from_bits_truncate(l.flags),
            set_layout_count: layout.sets.len() as u32,
            set_layouts: layout.sets.as_ptr(),
            push_constant_range_count: ranges.len() as u32,
            push_constant_ranges: ranges.as_ptr(),
            ..Default::default()
        };
        // SAFETY: the set layouts and ranges live until the call returns.
        layout.handle = unsafe { self.device.create_pipeline_layout(&info, self.allocator()) }
            .map_err(|e| VulkanError::call("vkCreatePipelineLayout", e))?;
        Ok(layout)
    }
}
