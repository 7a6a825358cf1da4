//! The Vulkan numbers the importer itself interprets (values checked against the Vulkan
//! registry as vulkanalia-sys 0.35 generates it): shader stage bits, the structure types of
//! the `pNext` structures the native model has, and the create flags that name objects the
//! archive cannot hold. Every other Vulkan value is copied as the number Fossilize recorded.

use crate::descriptor::ShaderStage;

/// `VkShaderStageFlagBits` to granary's stage; `None` for unknown bits.
pub fn stage(bit: u64) -> Option<ShaderStage> {
    Some(match bit {
        0x1 => ShaderStage::Vertex,
        0x2 => ShaderStage::TessellationControl,
        0x4 => ShaderStage::TessellationEvaluation,
        0x8 => ShaderStage::Geometry,
        0x10 => ShaderStage::Fragment,
        0x20 => ShaderStage::Compute,
        0x40 => ShaderStage::Task,
        0x80 => ShaderStage::Mesh,
        0x100 => ShaderStage::RayGeneration,
        0x200 => ShaderStage::AnyHit,
        0x400 => ShaderStage::ClosestHit,
        0x800 => ShaderStage::Miss,
        0x1000 => ShaderStage::Intersection,
        0x2000 => ShaderStage::Callable,
        _ => return None,
    })
}

/// `VkStructureType` values of the structures the importer reads from `pNext` chains.
pub mod stype {
    /// `VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO`.
    pub const RENDERING: u64 = 1000044002;
    /// `VK_STRUCTURE_TYPE_PIPELINE_LIBRARY_CREATE_INFO_KHR`.
    pub const LIBRARY: u64 = 1000290000;
    /// `VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT`.
    pub const GPL: u64 = 1000320002;
    /// `VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO`.
    pub const REQUIRED_SUBGROUP_SIZE: u64 = 1000225001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_DIVISOR_STATE_CREATE_INFO_KHR`.
    pub const VERTEX_DIVISOR: u64 = 1000190001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_TESSELLATION_DOMAIN_ORIGIN_STATE_CREATE_INFO`.
    pub const DOMAIN_ORIGIN: u64 = 1000117003;
    /// `VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_DEPTH_CLIP_CONTROL_CREATE_INFO_EXT`.
    pub const DEPTH_CLIP_CONTROL: u64 = 1000355001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_LINE_STATE_CREATE_INFO_KHR`.
    pub const LINE: u64 = 1000259001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_PROVOKING_VERTEX_STATE_CREATE_INFO_EXT`.
    pub const PROVOKING_VERTEX: u64 = 1000254001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_CONSERVATIVE_STATE_CREATE_INFO_EXT`.
    pub const CONSERVATIVE: u64 = 1000101001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_DEPTH_CLIP_STATE_CREATE_INFO_EXT`.
    pub const DEPTH_CLIP: u64 = 1000102001;
    /// `VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_STREAM_CREATE_INFO_EXT`.
    pub const STREAM: u64 = 1000028002;
    /// `VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_BINDING_FLAGS_CREATE_INFO`.
    pub const BINDING_FLAGS: u64 = 1000161000;
    /// `VK_STRUCTURE_TYPE_SAMPLER_REDUCTION_MODE_CREATE_INFO`.
    pub const REDUCTION_MODE: u64 = 1000130001;
    /// `VK_STRUCTURE_TYPE_RENDER_PASS_MULTIVIEW_CREATE_INFO`.
    pub const MULTIVIEW: u64 = 1000053000;
}

/// `VK_PIPELINE_CREATE_DERIVATIVE_BIT`: names a base pipeline (a handle or an index into one
/// create call) the archive cannot hold; a hint that never changes the pipeline.
pub const DERIVATIVE_BIT: u32 = 0x4;
/// `VK_PIPELINE_CREATE_LINK_TIME_OPTIMIZATION_BIT_EXT`: only for linking libraries.
pub const LINK_TIME_OPTIMIZATION_BIT: u32 = 0x400;
/// `VK_PIPELINE_CREATE_LIBRARY_BIT_KHR`.
pub const LIBRARY_BIT: u32 = 0x800;
/// `VK_PIPELINE_CREATE_RETAIN_LINK_TIME_OPTIMIZATION_INFO_BIT_EXT`: only for libraries.
pub const RETAIN_LINK_TIME_OPTIMIZATION_INFO_BIT: u32 = 0x0080_0000;
/// `VK_ATTACHMENT_UNUSED`.
pub const ATTACHMENT_UNUSED: u32 = u32::MAX;

/// The `VkImageAspectFlags` of every aspect of `format` (what a version-1 render pass's input
/// attachment reads when no `VkRenderPassInputAttachmentAspectCreateInfo` narrows it).
pub fn format_aspects(format: u32) -> u32 {
    const COLOR: u32 = 0x1;
    const DEPTH: u32 = 0x2;
    const STENCIL: u32 = 0x4;
    match format {
        124..=126 => DEPTH,           // D16_UNORM, X8_D24_UNORM_PACK32, D32_SFLOAT
        127 => STENCIL,               // S8_UINT
        128..=130 => DEPTH | STENCIL, // D16_UNORM_S8_UINT, D24_UNORM_S8_UINT, D32_SFLOAT_S8_UINT
        _ => COLOR,
    }
}
