//! Shader modules and pipeline layouts: created once, shared (`Arc`) by every pipeline
//! creation that uses them.
//!
//! # Object lifetime rules
//!
//! A [`Module`] (`VkShaderModule`) or [`DriverLayout`] (descriptor-set layouts and the pipeline
//! layout made from them) is destroyed in `Drop`, when the last `Arc` goes: no creation can
//! still use it. A pipeline does not need its modules after creation. A pipeline layout must
//! outlive command buffers that bind with it: the run-time loader keeps its layouts as long as
//! it lives.
//!
//! # External synchronization
//!
//! Create calls only read modules and layouts, which any number of threads may do; they are
//! destroyed only in `Drop`.

use super::device::Gpu;
use super::error::VulkanError;
use super::translate::LayoutDesc;
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
        unsafe { self.gpu.device.destroy_shader_module(self.handle, None) }
    }
}

/// Descriptor-set layouts and the pipeline layout made from them.
///
/// Thread safety: `Send + Sync`.
pub struct DriverLayout {
    gpu: Arc<Gpu>,
    sets: Vec<vk::DescriptorSetLayout>,
    pub(super) handle: vk::PipelineLayout,
}

impl DriverLayout {
    /// The `VkPipelineLayout` (owned by this value).
    pub fn handle(&self) -> vk::PipelineLayout {
        self.handle
    }
    /// The descriptor-set layouts, by set index (owned by this value).
    pub fn set_layouts(&self) -> &[vk::DescriptorSetLayout] {
        &self.sets
    }
}

impl Drop for DriverLayout {
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
        let handle = unsafe { self.device.create_shader_module(&info, None) }
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

    /// Creates descriptor-set layouts and a pipeline layout, after [`check_layout`](Self::check_layout).
    pub fn layout(self: &Arc<Self>, desc: &LayoutDesc) -> Result<DriverLayout, VulkanError> {
        self.check_layout(desc)
            .map_err(|message| VulkanError::Unsupported { device: self.info.identity.device_name.clone(), message })?;
        let mut layout = DriverLayout { gpu: self.clone(), sets: Vec::new(), handle: vk::PipelineLayout::null() };
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
        // SAFETY: the set layouts and ranges live until the call returns; every range has a
        // non-zero size (multiple of 4) and stage flags (`layout_desc`) within the device's
        // limit (`check_layout`).
        layout.handle = unsafe { self.device.create_pipeline_layout(&info, None) }
            .map_err(|e| VulkanError::call("vkCreatePipelineLayout", e))?;
        Ok(layout)
    }
}
