//! The native Vulkan pipeline state: everything a `VkGraphicsPipelineCreateInfo` or
//! `VkComputePipelineCreateInfo` says apart from its shader modules, as plain data (docs/FORMAT.md
//! §1.13 for the bytes, §2.6 for the script's spelling).
//!
//! This is the state of a pipeline as the application created it (as Fossilize records it):
//! every graphics stage, every fixed-function structure and the extension structures chained to
//! them, the render pass or dynamic-rendering formats, the descriptor-set layouts with their
//! immutable samplers and the push-constant ranges. Vulkan's enums and flags are kept as the
//! numbers Vulkan defines (`VkPolygonMode`, `VkFormat`, `VkDynamicState`, …), so nothing is
//! translated and nothing the application said is lost; a structure granary does not model is
//! refused by whoever builds this value, never dropped. The stage functions themselves (module
//! bytes, entry point, `VkSpecializationInfo`) are the pipeline's stage entries; `stages` here
//! holds what `VkPipelineShaderStageCreateInfo` adds to them, in the same order.
//!
//! The portable form ([`RenderState`](crate::RenderState)) stays for WGSL users; a pipeline
//! has one or the other.
//!
//! *Invariants:* [`NativePipeline::encode`] is the one encoding (the archive stores it and the
//! pipeline key hashes it), a pure function of the value; `decode(encode(p)) == p`; `decode`
//! refuses every byte `encode` does not write. Floats are kept bit for bit.
//!
//! Thread safety: plain data, `Send + Sync`.

pub(crate) mod codec;
mod key;

use crate::types::ShaderStage;
pub use codec::NativeStateError;
use codec::{native_struct, Codec, Reader};
pub use key::{native_pipeline_key, native_stage_key, spirv_library_hash};

/// Magic of an encoded [`NativePipeline`].
pub const NATIVE_MAGIC: [u8; 4] = *b"GNV1";
/// Magic of an encoded [`Specialization`].
pub const SPECIALIZATION_MAGIC: [u8; 4] = *b"GSP1";

/// A whole pipeline's native state (everything but the stage functions): graphics, compute or
/// ray tracing.
///
/// Encoded field by field as every native structure is, with one exception that keeps the
/// format of graphics and compute states unchanged: `ray_tracing` comes last and without a tag
/// byte — a state without it ends after `graphics`, a ray-tracing state continues with its
/// [`RayTracingState`] (docs/FORMAT.md §1.13).
#[derive(Clone, Debug, Default, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "camelCase", deny_unknown_fields, default)
)]
pub struct NativePipeline {
    /// `VkPipelineCreateFlags` (`flags` of the create info).
    pub flags: u32,
    /// Per stage, in the order of the pipeline's stage entries.
    pub stages: Vec<StageState>,
    /// The pipeline layout (`layout`), by value.
    pub layout: NativeLayout,
    /// The graphics state; `None` for a compute or ray-tracing pipeline.
    pub graphics: Option<GraphicsState>,
    /// The ray-tracing state (`VkRayTracingPipelineCreateInfoKHR`); `None` for a graphics or
    /// compute pipeline. At most one of `graphics` and `ray_tracing` is set.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub ray_tracing: Option<RayTracingState>,
}

impl Codec for NativePipeline {
    const MIN: usize = <u32 as Codec>::MIN
        + <Vec<StageState> as Codec>::MIN
        + <NativeLayout as Codec>::MIN
        + <Option<GraphicsState> as Codec>::MIN;
    fn put(&self, o: &mut Vec<u8>) {
        self.flags.put(o);
        self.stages.put(o);
        self.layout.put(o);
        self.graphics.put(o);
        if let Some(rt) = &self.ray_tracing {
            rt.put(o);
        }
    }
    fn get(r: &mut Reader<'_>) -> Result<Self, NativeStateError> {
        r.field("NativePipeline.flags");
        let flags = u32::get(r)?;
        r.field("NativePipeline.stages");
        let stages = Codec::get(r)?;
        r.field("NativePipeline.layout");
        let layout = Codec::get(r)?;
        r.field("NativePipeline.graphics");
        let graphics: Option<GraphicsState> = Codec::get(r)?;
        r.field("NativePipeline.rayTracing");
        // A graphics state ends here (anything after it is trailing bytes, which the caller
        // refuses); a compute state too, unless a ray-tracing part follows.
        let ray_tracing = if graphics.is_some() || r.left() == 0 { None } else { Some(RayTracingState::get(r)?) };
        Ok(NativePipeline { flags, stages, layout, graphics, ray_tracing })
    }
}

native_struct!(
    /// `VkRayTracingPipelineCreateInfoKHR` apart from its stages, flags and layout.
    pub struct RayTracingState {
        /// `pGroups`, in the application's order (group handles follow this order).
        pub groups: Vec<ShaderGroup>,
        /// `maxPipelineRayRecursionDepth`.
        pub max_pipeline_ray_recursion_depth: u32,
        /// `pLibraryInterface` (`VkRayTracingPipelineInterfaceCreateInfoKHR`); `None`: null.
        pub library_interface: Option<RayTracingInterface>,
        /// `pDynamicState->pDynamicStates` (empty: no dynamic state;
        /// `VK_DYNAMIC_STATE_RAY_TRACING_PIPELINE_STACK_SIZE_KHR` is the one Vulkan allows).
        pub dynamic_states: Vec<u32>,
    }
);

native_struct!(
    /// `VkRayTracingShaderGroupCreateInfoKHR` (`pShaderGroupCaptureReplayHandle` null: capture
    /// and replay of group handles is not modelled).
    pub struct ShaderGroup {
        /// `type`: `VkRayTracingShaderGroupTypeKHR` (0 general, 1 triangles hit, 2 procedural
        /// hit).
        #[cfg_attr(feature = "serde", serde(rename = "type"))]
        pub group_type: u32,
        /// `generalShader`: an index into the pipeline's stages, or `VK_SHADER_UNUSED_KHR`
        /// (`0xFFFFFFFF`).
        pub general_shader: u32,
        /// `closestHitShader`, likewise.
        pub closest_hit_shader: u32,
        /// `anyHitShader`, likewise.
        pub any_hit_shader: u32,
        /// `intersectionShader`, likewise.
        pub intersection_shader: u32,
    }
);

native_struct!(
    /// `VkRayTracingPipelineInterfaceCreateInfoKHR`.
    pub struct RayTracingInterface {
        /// `maxPipelineRayPayloadSize`.
        pub max_pipeline_ray_payload_size: u32,
        /// `maxPipelineRayHitAttributeSize`.
        pub max_pipeline_ray_hit_attribute_size: u32,
    }
);

/// `VK_SHADER_UNUSED_KHR`: a group's stage index that names no stage.
pub const SHADER_UNUSED: u32 = u32::MAX;

/// `VK_DYNAMIC_STATE_RAY_TRACING_PIPELINE_STACK_SIZE_KHR`, the one dynamic state of a
/// ray-tracing pipeline.
pub const DYNAMIC_STACK_SIZE: u32 = 1_000_347_000;

native_struct!(
    /// What `VkPipelineShaderStageCreateInfo` adds to a stage function.
    pub struct StageState {
        /// `VkPipelineShaderStageCreateFlags`.
        pub flags: u32,
        /// `VkPipelineShaderStageRequiredSubgroupSizeCreateInfo::requiredSubgroupSize`.
        pub required_subgroup_size: Option<u32>,
    }
);

native_struct!(
    /// One entry of `VkSpecializationInfo::pMapEntries`.
    pub struct SpecializationMapEntry {
        /// `constantID`.
        pub constant_id: u32,
        /// `offset` into the data.
        pub offset: u32,
        /// `size` in bytes.
        pub size: u32,
    }
);

native_struct!(
    /// A stage's `VkSpecializationInfo`, as the application gave it (map entries in the
    /// application's order; the data bytes).
    pub struct Specialization {
        /// `pMapEntries`.
        pub map_entries: Vec<SpecializationMapEntry>,
        /// `pData`, `dataSize` bytes (in the script: lowercase hexadecimal).
        #[cfg_attr(feature = "serde", serde(with = "hex_bytes"))]
        pub data: Vec<u8>,
    }
);

native_struct!(
    /// `VkPipelineLayoutCreateInfo` with its set layouts by value.
    pub struct NativeLayout {
        /// `VkPipelineLayoutCreateFlags`.
        pub flags: u32,
        /// `pSetLayouts`, in set order.
        pub set_layouts: Vec<SetLayout>,
        /// `pPushConstantRanges`.
        pub push_constant_ranges: Vec<PushConstantRange>,
    }
);

native_struct!(
    /// `VkDescriptorSetLayoutCreateInfo` (with `VkDescriptorSetLayoutBindingFlagsCreateInfo`).
    pub struct SetLayout {
        /// `VkDescriptorSetLayoutCreateFlags`.
        pub flags: u32,
        /// `pBindings`, in the application's order.
        pub bindings: Vec<SetLayoutBinding>,
    }
);

native_struct!(
    /// `VkDescriptorSetLayoutBinding`.
    pub struct SetLayoutBinding {
        /// `binding`.
        pub binding: u32,
        /// `VkDescriptorType`.
        pub descriptor_type: u32,
        /// `descriptorCount`.
        pub descriptor_count: u32,
        /// `VkShaderStageFlags`.
        pub stage_flags: u32,
        /// `pImmutableSamplers`, by value (empty: none).
        pub immutable_samplers: Vec<SamplerState>,
        /// `VkDescriptorBindingFlags` from `VkDescriptorSetLayoutBindingFlagsCreateInfo` (0 when
        /// the structure is absent).
        pub binding_flags: u32,
    }
);

native_struct!(
    /// `VkSamplerCreateInfo` of an immutable sampler (with `VkSamplerReductionModeCreateInfo`).
    pub struct SamplerState {
        /// `VkSamplerCreateFlags`.
        pub flags: u32,
        /// `VkFilter`.
        pub mag_filter: u32,
        /// `VkFilter`.
        pub min_filter: u32,
        /// `VkSamplerMipmapMode`.
        pub mipmap_mode: u32,
        /// `VkSamplerAddressMode`.
        pub address_mode_u: u32,
        /// `VkSamplerAddressMode`.
        pub address_mode_v: u32,
        /// `VkSamplerAddressMode`.
        pub address_mode_w: u32,
        /// `mipLodBias`.
        pub mip_lod_bias: f32,
        /// `anisotropyEnable`.
        pub anisotropy_enable: bool,
        /// `maxAnisotropy`.
        pub max_anisotropy: f32,
        /// `compareEnable`.
        pub compare_enable: bool,
        /// `VkCompareOp`.
        pub compare_op: u32,
        /// `minLod`.
        pub min_lod: f32,
        /// `maxLod`.
        pub max_lod: f32,
        /// `VkBorderColor`.
        pub border_color: u32,
        /// `unnormalizedCoordinates`.
        pub unnormalized_coordinates: bool,
        /// `VkSamplerReductionMode`, when the structure is chained.
        pub reduction_mode: Option<u32>,
    }
);

native_struct!(
    /// `VkPushConstantRange`.
    pub struct PushConstantRange {
        /// `VkShaderStageFlags`.
        pub stage_flags: u32,
        /// `offset`.
        pub offset: u32,
        /// `size`.
        pub size: u32,
    }
);

native_struct!(
    /// The graphics part of `VkGraphicsPipelineCreateInfo`: each `p…State` pointer is an
    /// `Option` (null when `None`), each chained extension structure an `Option` field of the
    /// structure it extends.
    pub struct GraphicsState {
        /// `pVertexInputState`.
        pub vertex_input_state: Option<VertexInputState>,
        /// `pInputAssemblyState`.
        pub input_assembly_state: Option<InputAssemblyState>,
        /// `pTessellationState`.
        pub tessellation_state: Option<TessellationState>,
        /// `pViewportState`.
        pub viewport_state: Option<ViewportState>,
        /// `pRasterizationState`.
        pub rasterization_state: Option<RasterizationState>,
        /// `pMultisampleState`.
        pub multisample_state: Option<MultisampleState>,
        /// `pDepthStencilState`.
        pub depth_stencil_state: Option<DepthStencilState>,
        /// `pColorBlendState`.
        pub color_blend_state: Option<ColorBlendState>,
        /// `pDynamicState->pDynamicStates` (`VkDynamicState` values; empty: no dynamic state).
        pub dynamic_states: Vec<u32>,
        /// `renderPass`, by value; `None` for dynamic rendering.
        pub render_pass: Option<RenderPassState>,
        /// `subpass`.
        pub subpass: u32,
        /// `VkPipelineRenderingCreateInfo` (dynamic rendering); `None` when not chained.
        pub rendering: Option<RenderingState>,
    }
);

native_struct!(
    /// `VkPipelineVertexInputStateCreateInfo` (with `VkPipelineVertexInputDivisorStateCreateInfoKHR`).
    pub struct VertexInputState {
        /// `flags`.
        pub flags: u32,
        /// `pVertexBindingDescriptions`.
        pub bindings: Vec<VertexBinding>,
        /// `pVertexAttributeDescriptions`.
        pub attributes: Vec<VertexAttribute>,
        /// `pVertexBindingDivisors` (empty: the structure is not chained).
        pub divisors: Vec<VertexDivisor>,
    }
);

native_struct!(
    /// `VkVertexInputBindingDescription`.
    pub struct VertexBinding {
        /// `binding`.
        pub binding: u32,
        /// `stride`.
        pub stride: u32,
        /// `VkVertexInputRate`.
        pub input_rate: u32,
    }
);

native_struct!(
    /// `VkVertexInputAttributeDescription`.
    pub struct VertexAttribute {
        /// `location`.
        pub location: u32,
        /// `binding`.
        pub binding: u32,
        /// `VkFormat`.
        pub format: u32,
        /// `offset`.
        pub offset: u32,
    }
);

native_struct!(
    /// `VkVertexInputBindingDivisorDescriptionKHR`.
    pub struct VertexDivisor {
        /// `binding`.
        pub binding: u32,
        /// `divisor`.
        pub divisor: u32,
    }
);

native_struct!(
    /// `VkPipelineInputAssemblyStateCreateInfo`.
    pub struct InputAssemblyState {
        /// `flags`.
        pub flags: u32,
        /// `VkPrimitiveTopology`.
        pub topology: u32,
        /// `primitiveRestartEnable`.
        pub primitive_restart_enable: bool,
    }
);

native_struct!(
    /// `VkPipelineTessellationStateCreateInfo` (with `VkPipelineTessellationDomainOriginStateCreateInfo`).
    pub struct TessellationState {
        /// `flags`.
        pub flags: u32,
        /// `patchControlPoints`.
        pub patch_control_points: u32,
        /// `VkTessellationDomainOrigin`, when the structure is chained.
        pub domain_origin: Option<u32>,
    }
);

native_struct!(
    /// `VkPipelineViewportStateCreateInfo` (with
    /// `VkPipelineViewportDepthClipControlCreateInfoEXT`).
    pub struct ViewportState {
        /// `flags`.
        pub flags: u32,
        /// `viewportCount`.
        pub viewport_count: u32,
        /// `pViewports` (empty: null, the viewports are dynamic).
        pub viewports: Vec<Viewport>,
        /// `scissorCount`.
        pub scissor_count: u32,
        /// `pScissors` (empty: null, the scissors are dynamic).
        pub scissors: Vec<Rect2D>,
        /// `negativeOneToOne`, when the depth-clip-control structure is chained.
        pub negative_one_to_one: Option<bool>,
    }
);

native_struct!(
    /// `VkViewport`.
    pub struct Viewport {
        /// `x`.
        pub x: f32,
        /// `y`.
        pub y: f32,
        /// `width`.
        pub width: f32,
        /// `height`.
        pub height: f32,
        /// `minDepth`.
        pub min_depth: f32,
        /// `maxDepth`.
        pub max_depth: f32,
    }
);

native_struct!(
    /// `VkRect2D`.
    pub struct Rect2D {
        /// `offset.x`.
        pub x: i32,
        /// `offset.y`.
        pub y: i32,
        /// `extent.width`.
        pub width: u32,
        /// `extent.height`.
        pub height: u32,
    }
);

native_struct!(
    /// `VkPipelineRasterizationStateCreateInfo` and the structures chained to it.
    pub struct RasterizationState {
        /// `flags`.
        pub flags: u32,
        /// `depthClampEnable`.
        pub depth_clamp_enable: bool,
        /// `rasterizerDiscardEnable`.
        pub rasterizer_discard_enable: bool,
        /// `VkPolygonMode`.
        pub polygon_mode: u32,
        /// `VkCullModeFlags`.
        pub cull_mode: u32,
        /// `VkFrontFace`.
        pub front_face: u32,
        /// `depthBiasEnable`.
        pub depth_bias_enable: bool,
        /// `depthBiasConstantFactor`.
        pub depth_bias_constant_factor: f32,
        /// `depthBiasClamp`.
        pub depth_bias_clamp: f32,
        /// `depthBiasSlopeFactor`.
        pub depth_bias_slope_factor: f32,
        /// `lineWidth`.
        pub line_width: f32,
        /// `VkPipelineRasterizationLineStateCreateInfoKHR`.
        pub line: Option<LineState>,
        /// `VkPipelineRasterizationProvokingVertexStateCreateInfoEXT::provokingVertexMode`.
        pub provoking_vertex_mode: Option<u32>,
        /// `VkPipelineRasterizationConservativeStateCreateInfoEXT`.
        pub conservative: Option<ConservativeState>,
        /// `VkPipelineRasterizationDepthClipStateCreateInfoEXT::depthClipEnable`.
        pub depth_clip_enable: Option<bool>,
        /// `VkPipelineRasterizationStateStreamCreateInfoEXT::rasterizationStream`.
        pub rasterization_stream: Option<u32>,
    }
);

native_struct!(
    /// `VkPipelineRasterizationLineStateCreateInfoKHR`.
    pub struct LineState {
        /// `VkLineRasterizationModeKHR`.
        pub line_rasterization_mode: u32,
        /// `stippledLineEnable`.
        pub stippled_line_enable: bool,
        /// `lineStippleFactor`.
        pub line_stipple_factor: u32,
        /// `lineStipplePattern` (a `uint16_t`; stored widened).
        pub line_stipple_pattern: u32,
    }
);

native_struct!(
    /// `VkPipelineRasterizationConservativeStateCreateInfoEXT`.
    pub struct ConservativeState {
        /// `flags`.
        pub flags: u32,
        /// `VkConservativeRasterizationModeEXT`.
        pub conservative_rasterization_mode: u32,
        /// `extraPrimitiveOverestimationSize`.
        pub extra_primitive_overestimation_size: f32,
    }
);

native_struct!(
    /// `VkPipelineMultisampleStateCreateInfo`.
    pub struct MultisampleState {
        /// `flags`.
        pub flags: u32,
        /// `VkSampleCountFlagBits`.
        pub rasterization_samples: u32,
        /// `sampleShadingEnable`.
        pub sample_shading_enable: bool,
        /// `minSampleShading`.
        pub min_sample_shading: f32,
        /// `pSampleMask` (empty: null).
        pub sample_mask: Vec<u32>,
        /// `alphaToCoverageEnable`.
        pub alpha_to_coverage_enable: bool,
        /// `alphaToOneEnable`.
        pub alpha_to_one_enable: bool,
    }
);

native_struct!(
    /// `VkStencilOpState`.
    pub struct StencilOpState {
        /// `VkStencilOp`.
        pub fail_op: u32,
        /// `VkStencilOp`.
        pub pass_op: u32,
        /// `VkStencilOp`.
        pub depth_fail_op: u32,
        /// `VkCompareOp`.
        pub compare_op: u32,
        /// `compareMask`.
        pub compare_mask: u32,
        /// `writeMask`.
        pub write_mask: u32,
        /// `reference`.
        pub reference: u32,
    }
);

native_struct!(
    /// `VkPipelineDepthStencilStateCreateInfo`.
    pub struct DepthStencilState {
        /// `flags`.
        pub flags: u32,
        /// `depthTestEnable`.
        pub depth_test_enable: bool,
        /// `depthWriteEnable`.
        pub depth_write_enable: bool,
        /// `VkCompareOp`.
        pub depth_compare_op: u32,
        /// `depthBoundsTestEnable`.
        pub depth_bounds_test_enable: bool,
        /// `stencilTestEnable`.
        pub stencil_test_enable: bool,
        /// `front`.
        pub front: StencilOpState,
        /// `back`.
        pub back: StencilOpState,
        /// `minDepthBounds`.
        pub min_depth_bounds: f32,
        /// `maxDepthBounds`.
        pub max_depth_bounds: f32,
    }
);

native_struct!(
    /// `VkPipelineColorBlendAttachmentState`.
    pub struct ColorBlendAttachment {
        /// `blendEnable`.
        pub blend_enable: bool,
        /// `VkBlendFactor`.
        pub src_color_blend_factor: u32,
        /// `VkBlendFactor`.
        pub dst_color_blend_factor: u32,
        /// `VkBlendOp`.
        pub color_blend_op: u32,
        /// `VkBlendFactor`.
        pub src_alpha_blend_factor: u32,
        /// `VkBlendFactor`.
        pub dst_alpha_blend_factor: u32,
        /// `VkBlendOp`.
        pub alpha_blend_op: u32,
        /// `VkColorComponentFlags`.
        pub color_write_mask: u32,
    }
);

native_struct!(
    /// `VkPipelineColorBlendStateCreateInfo`.
    pub struct ColorBlendState {
        /// `flags`.
        pub flags: u32,
        /// `logicOpEnable`.
        pub logic_op_enable: bool,
        /// `VkLogicOp`.
        pub logic_op: u32,
        /// `attachmentCount` (equal to the length of `attachments` unless those are dynamic).
        pub attachment_count: u32,
        /// `pAttachments` (empty: null).
        pub attachments: Vec<ColorBlendAttachment>,
        /// `blendConstants`.
        pub blend_constants: [f32; 4],
    }
);

native_struct!(
    /// `VkPipelineRenderingCreateInfo`.
    pub struct RenderingState {
        /// `viewMask`.
        pub view_mask: u32,
        /// `pColorAttachmentFormats` (`VkFormat`).
        pub color_attachment_formats: Vec<u32>,
        /// `depthAttachmentFormat`.
        pub depth_attachment_format: u32,
        /// `stencilAttachmentFormat`.
        pub stencil_attachment_format: u32,
    }
);

native_struct!(
    /// A render pass, as `VkRenderPassCreateInfo2` says it (a version-1 render pass is
    /// written in this form; `VkRenderPassMultiviewCreateInfo`'s view masks become the
    /// subpasses' `viewMask`s and the dependencies' `viewOffset`s).
    pub struct RenderPassState {
        /// `flags`.
        pub flags: u32,
        /// `pAttachments`.
        pub attachments: Vec<AttachmentDescription>,
        /// `pSubpasses`.
        pub subpasses: Vec<SubpassDescription>,
        /// `pDependencies`.
        pub dependencies: Vec<SubpassDependency>,
        /// `pCorrelatedViewMasks`.
        pub correlated_view_masks: Vec<u32>,
    }
);

native_struct!(
    /// `VkAttachmentDescription2`.
    pub struct AttachmentDescription {
        /// `flags`.
        pub flags: u32,
        /// `VkFormat`.
        pub format: u32,
        /// `VkSampleCountFlagBits`.
        pub samples: u32,
        /// `VkAttachmentLoadOp`.
        pub load_op: u32,
        /// `VkAttachmentStoreOp`.
        pub store_op: u32,
        /// `VkAttachmentLoadOp`.
        pub stencil_load_op: u32,
        /// `VkAttachmentStoreOp`.
        pub stencil_store_op: u32,
        /// `VkImageLayout`.
        pub initial_layout: u32,
        /// `VkImageLayout`.
        pub final_layout: u32,
    }
);

native_struct!(
    /// `VkAttachmentReference2`.
    pub struct AttachmentReference {
        /// `attachment` (`VK_ATTACHMENT_UNUSED` = `0xFFFFFFFF`).
        pub attachment: u32,
        /// `VkImageLayout`.
        pub layout: u32,
        /// `VkImageAspectFlags`.
        pub aspect_mask: u32,
    }
);

native_struct!(
    /// `VkSubpassDescription2`.
    pub struct SubpassDescription {
        /// `flags`.
        pub flags: u32,
        /// `VkPipelineBindPoint`.
        pub pipeline_bind_point: u32,
        /// `viewMask`.
        pub view_mask: u32,
        /// `pInputAttachments`.
        pub input_attachments: Vec<AttachmentReference>,
        /// `pColorAttachments`.
        pub color_attachments: Vec<AttachmentReference>,
        /// `pResolveAttachments` (empty: null).
        pub resolve_attachments: Vec<AttachmentReference>,
        /// `pDepthStencilAttachment`.
        pub depth_stencil_attachment: Option<AttachmentReference>,
        /// `pPreserveAttachments`.
        pub preserve_attachments: Vec<u32>,
    }
);

native_struct!(
    /// `VkSubpassDependency2`.
    pub struct SubpassDependency {
        /// `srcSubpass`.
        pub src_subpass: u32,
        /// `dstSubpass`.
        pub dst_subpass: u32,
        /// `VkPipelineStageFlags`.
        pub src_stage_mask: u32,
        /// `VkPipelineStageFlags`.
        pub dst_stage_mask: u32,
        /// `VkAccessFlags`.
        pub src_access_mask: u32,
        /// `VkAccessFlags`.
        pub dst_access_mask: u32,
        /// `VkDependencyFlags`.
        pub dependency_flags: u32,
        /// `viewOffset`.
        pub view_offset: i32,
    }
);

/// Encodes `value` behind `magic`.
fn encode_with<T: Codec>(magic: [u8; 4], value: &T) -> Vec<u8> {
    let mut o = Vec::with_capacity(64);
    o.extend_from_slice(&magic);
    value.put(&mut o);
    o
}

/// Decodes bytes written by [`encode_with`] with `magic`.
fn decode_with<T: Codec>(magic: [u8; 4], bytes: &[u8]) -> Result<T, NativeStateError> {
    let mut r = Reader::new(bytes);
    if r.take(4)? != magic {
        return Err(NativeStateError { offset: 0, field: "header", message: "bad magic" });
    }
    let v = T::get(&mut r)?;
    r.finish()?;
    Ok(v)
}

impl NativePipeline {
    /// The canonical bytes (docs/FORMAT.md §1.13): the archive's blob and the pipeline key's
    /// input.
    pub fn encode(&self) -> Vec<u8> {
        encode_with(NATIVE_MAGIC, self)
    }

    /// Parses bytes written by [`encode`](Self::encode); refuses anything else.
    pub fn decode(bytes: &[u8]) -> Result<Self, NativeStateError> {
        decode_with(NATIVE_MAGIC, bytes)
    }

    /// Whether this is a compute pipeline's state.
    pub fn is_compute(&self) -> bool {
        self.graphics.is_none() && self.ray_tracing.is_none()
    }

    /// The structural checks of a ray-tracing pipeline (Vulkan's valid usage of
    /// `VkRayTracingPipelineCreateInfoKHR` that no device property decides), for a state with
    /// stages `stages`: only ray-tracing stages; a ray-generation stage unless the pipeline is a library; a library interface exactly
    /// when it is one (Vulkan asks for it with `LIBRARY_KHR`, and this model links no
    /// libraries); each shader group's type and the stages it names as
    /// `VkRayTracingShaderGroupCreateInfoKHR`'s valid usage requires; the one dynamic state
    /// Vulkan allows. A state without a ray-tracing part passes when no stage is a
    /// ray-tracing one. The message names the field.
    pub fn check_ray_tracing(&self, stages: &[ShaderStage]) -> Result<(), String> {
        use ShaderStage as S;
        let flags = self.flags;
        let Some(rt) = &self.ray_tracing else {
            return match stages.iter().find(|s| s.is_ray_tracing()) {
                Some(s) => Err(format!("a {s} stage in a pipeline without a ray-tracing state (\"rayTracing\")")),
                None => Ok(()),
            };
        };
        if self.graphics.is_some() {
            return Err("a state with both a graphics and a ray-tracing part (\"graphics\" and \"rayTracing\")".into());
        }
        if let Some((i, s)) = stages.iter().enumerate().find(|(_, s)| !s.is_ray_tracing()) {
            return Err(format!("stages[{i}]: a {s} stage in a ray-tracing pipeline"));
        }
        let library = flags & 0x800 != 0;
        if library != rt.library_interface.is_some() {
            return Err(if library {
                "flags has LIBRARY_KHR but rayTracing.libraryInterface is not given".into()
            } else {
                "rayTracing.libraryInterface is given but flags lacks LIBRARY_KHR (this model links no libraries)"
                    .into()
            });
        }
        if !library && !stages.contains(&S::RayGeneration) {
            return Err("a ray-tracing pipeline (not a library) without a ray_generation stage".into());
        }
        if rt.groups.is_empty() {
            return Err("a ray-tracing pipeline without shader groups (rayTracing.groups)".into());
        }
        for (gi, g) in rt.groups.iter().enumerate() {
            let at = format!("rayTracing.groups[{gi}]");
            let stage_at = |field: &str, index: u32, allowed: &[S]| -> Result<(), String> {
                if index == SHADER_UNUSED {
                    return Ok(());
                }
                match stages.get(index as usize) {
                    Some(s) if allowed.contains(s) => Ok(()),
                    Some(s) => Err(format!("{at}.{field} is stages[{index}], a {s} stage")),
                    None => Err(format!("{at}.{field} is {index}, past the pipeline's {} stages", stages.len())),
                }
            };
            let unused = |field: &str, index: u32| -> Result<(), String> {
                if index == SHADER_UNUSED {
                    Ok(())
                } else {
                    Err(format!(
                        "{at}.{field} must be VK_SHADER_UNUSED_KHR (0xffffffff) in a group of type {}",
                        g.group_type
                    ))
                }
            };
            match g.group_type {
                0 => {
                    if g.general_shader == SHADER_UNUSED {
                        return Err(format!("{at}: a general group without generalShader"));
                    }
                    stage_at("generalShader", g.general_shader, &[S::RayGeneration, S::Miss, S::Callable])?;
                    unused("closestHitShader", g.closest_hit_shader)?;
                    unused("anyHitShader", g.any_hit_shader)?;
                    unused("intersectionShader", g.intersection_shader)?;
                }
                1 | 2 => {
                    unused("generalShader", g.general_shader)?;
                    stage_at("closestHitShader", g.closest_hit_shader, &[S::ClosestHit])?;
                    stage_at("anyHitShader", g.any_hit_shader, &[S::AnyHit])?;
                    if g.group_type == 1 {
                        unused("intersectionShader", g.intersection_shader)?;
                    } else {
                        if g.intersection_shader == SHADER_UNUSED {
                            return Err(format!("{at}: a procedural hit group without intersectionShader"));
                        }
                        stage_at("intersectionShader", g.intersection_shader, &[S::Intersection])?;
                    }
                }
                t => return Err(format!("{at}.type {t} is not a VkRayTracingShaderGroupTypeKHR (0, 1 or 2)")),
            }
        }
        if let Some(d) = rt.dynamic_states.iter().find(|d| **d != DYNAMIC_STACK_SIZE) {
            return Err(format!(
                "rayTracing.dynamicStates has {d}; a ray-tracing pipeline allows only RAY_TRACING_PIPELINE_STACK_SIZE_KHR ({DYNAMIC_STACK_SIZE})"
            ));
        }
        Ok(())
    }

    /// Whether this is a ray-tracing pipeline's state.
    pub fn is_ray_tracing(&self) -> bool {
        self.ray_tracing.is_some()
    }

    /// The kind of pipeline this state describes.
    pub fn kind(&self) -> crate::types::PipelineKind {
        match (&self.graphics, &self.ray_tracing) {
            (Some(_), _) => crate::types::PipelineKind::Render,
            (None, Some(_)) => crate::types::PipelineKind::RayTracing,
            (None, None) => crate::types::PipelineKind::Compute,
        }
    }
}

impl Specialization {
    /// The canonical bytes (docs/FORMAT.md §1.13).
    pub fn encode(&self) -> Vec<u8> {
        encode_with(SPECIALIZATION_MAGIC, self)
    }

    /// Parses bytes written by [`encode`](Self::encode); refuses anything else.
    pub fn decode(bytes: &[u8]) -> Result<Self, NativeStateError> {
        decode_with(SPECIALIZATION_MAGIC, bytes)
    }

    /// Whether every map entry lies inside the data (`offset + size <= dataSize`) with a size
    /// of 1, 2, 4 or 8 bytes, as Vulkan requires; the entry at fault otherwise.
    pub fn check(&self) -> Result<(), String> {
        for (i, m) in self.map_entries.iter().enumerate() {
            let end = u64::from(m.offset) + u64::from(m.size);
            if !matches!(m.size, 1 | 2 | 4 | 8) || end > self.data.len() as u64 {
                return Err(format!(
                    "specialization map entry {i} (constant {}): offset {} size {} does not fit {} data bytes in a 1, 2, 4 or 8 byte value",
                    m.constant_id,
                    m.offset,
                    m.size,
                    self.data.len()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
mod hex_bytes {
    //! `Vec<u8>` as a lowercase hexadecimal string.
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(v.len() * 2);
        for b in v {
            out.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        if s.len() % 2 != 0 {
            return Err(serde::de::Error::custom("hexadecimal bytes need an even number of digits"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| {
                s.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| serde::de::Error::custom(format!("'{s}' is not hexadecimal bytes")))
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pipeline with every optional structure present and no field at its default.
    pub(crate) fn full() -> NativePipeline {
        let sampler = SamplerState {
            flags: 0,
            mag_filter: 1,
            min_filter: 1,
            mipmap_mode: 1,
            address_mode_u: 2,
            address_mode_v: 2,
            address_mode_w: 3,
            mip_lod_bias: 0.5,
            anisotropy_enable: true,
            max_anisotropy: 8.0,
            compare_enable: true,
            compare_op: 3,
            min_lod: 0.0,
            max_lod: 1000.0,
            border_color: 1,
            unnormalized_coordinates: false,
            reduction_mode: Some(1),
        };
        let stencil = StencilOpState {
            fail_op: 1,
            pass_op: 2,
            depth_fail_op: 3,
            compare_op: 7,
            compare_mask: 0xff,
            write_mask: 0x0f,
            reference: 1,
        };
        let reference = AttachmentReference { attachment: 0, layout: 2, aspect_mask: 1 };
        NativePipeline {
            flags: 0x1,
            stages: vec![
                StageState { flags: 0, required_subgroup_size: None },
                StageState { flags: 1, required_subgroup_size: Some(32) },
            ],
            layout: NativeLayout {
                flags: 0,
                set_layouts: vec![SetLayout {
                    flags: 2,
                    bindings: vec![SetLayoutBinding {
                        binding: 1,
                        descriptor_type: 1,
                        descriptor_count: 2,
                        stage_flags: 0x10,
                        immutable_samplers: vec![sampler.clone(), sampler],
                        binding_flags: 4,
                    }],
                }],
                push_constant_ranges: vec![PushConstantRange { stage_flags: 0x11, offset: 0, size: 64 }],
            },
            graphics: Some(GraphicsState {
                vertex_input_state: Some(VertexInputState {
                    flags: 0,
                    bindings: vec![VertexBinding { binding: 0, stride: 32, input_rate: 1 }],
                    attributes: vec![VertexAttribute { location: 3, binding: 0, format: 109, offset: 16 }],
                    divisors: vec![VertexDivisor { binding: 0, divisor: 4 }],
                }),
                input_assembly_state: Some(InputAssemblyState {
                    flags: 0,
                    topology: 10,
                    primitive_restart_enable: true,
                }),
                tessellation_state: Some(TessellationState {
                    flags: 0,
                    patch_control_points: 3,
                    domain_origin: Some(1),
                }),
                viewport_state: Some(ViewportState {
                    flags: 0,
                    viewport_count: 1,
                    viewports: vec![Viewport {
                        x: 0.0,
                        y: 0.0,
                        width: 640.0,
                        height: -480.0,
                        min_depth: 0.0,
                        max_depth: 1.0,
                    }],
                    scissor_count: 1,
                    scissors: vec![Rect2D { x: -1, y: 0, width: 640, height: 480 }],
                    negative_one_to_one: Some(true),
                }),
                rasterization_state: Some(RasterizationState {
                    flags: 0,
                    depth_clamp_enable: true,
                    rasterizer_discard_enable: false,
                    polygon_mode: 1,
                    cull_mode: 2,
                    front_face: 1,
                    depth_bias_enable: true,
                    depth_bias_constant_factor: 1.25,
                    depth_bias_clamp: 0.5,
                    depth_bias_slope_factor: 2.0,
                    line_width: 1.0,
                    line: Some(LineState {
                        line_rasterization_mode: 2,
                        stippled_line_enable: true,
                        line_stipple_factor: 2,
                        line_stipple_pattern: 0xf0f0,
                    }),
                    provoking_vertex_mode: Some(1),
                    conservative: Some(ConservativeState {
                        flags: 0,
                        conservative_rasterization_mode: 1,
                        extra_primitive_overestimation_size: 0.25,
                    }),
                    depth_clip_enable: Some(false),
                    rasterization_stream: Some(0),
                }),
                multisample_state: Some(MultisampleState {
                    flags: 0,
                    rasterization_samples: 4,
                    sample_shading_enable: true,
                    min_sample_shading: 0.5,
                    sample_mask: vec![0xf],
                    alpha_to_coverage_enable: true,
                    alpha_to_one_enable: true,
                }),
                depth_stencil_state: Some(DepthStencilState {
                    flags: 0,
                    depth_test_enable: true,
                    depth_write_enable: true,
                    depth_compare_op: 2,
                    depth_bounds_test_enable: true,
                    stencil_test_enable: true,
                    front: stencil.clone(),
                    back: stencil,
                    min_depth_bounds: 0.0,
                    max_depth_bounds: 1.0,
                }),
                color_blend_state: Some(ColorBlendState {
                    flags: 0,
                    logic_op_enable: true,
                    logic_op: 3,
                    attachment_count: 1,
                    attachments: vec![ColorBlendAttachment {
                        blend_enable: true,
                        src_color_blend_factor: 6,
                        dst_color_blend_factor: 7,
                        color_blend_op: 0,
                        src_alpha_blend_factor: 1,
                        dst_alpha_blend_factor: 0,
                        alpha_blend_op: 0,
                        color_write_mask: 0xf,
                    }],
                    blend_constants: [0.0, 0.25, 0.5, 1.0],
                }),
                dynamic_states: vec![0, 1, 1000267000],
                render_pass: Some(RenderPassState {
                    flags: 0,
                    attachments: vec![AttachmentDescription {
                        flags: 0,
                        format: 44,
                        samples: 4,
                        load_op: 1,
                        store_op: 0,
                        stencil_load_op: 2,
                        stencil_store_op: 1,
                        initial_layout: 0,
                        final_layout: 1000001002,
                    }],
                    subpasses: vec![SubpassDescription {
                        flags: 0,
                        pipeline_bind_point: 0,
                        view_mask: 3,
                        input_attachments: vec![],
                        color_attachments: vec![reference.clone()],
                        resolve_attachments: vec![],
                        depth_stencil_attachment: Some(reference),
                        preserve_attachments: vec![],
                    }],
                    dependencies: vec![SubpassDependency {
                        src_subpass: u32::MAX,
                        dst_subpass: 0,
                        src_stage_mask: 0x400,
                        dst_stage_mask: 0x400,
                        src_access_mask: 0,
                        dst_access_mask: 0x100,
                        dependency_flags: 1,
                        view_offset: -1,
                    }],
                    correlated_view_masks: vec![3],
                }),
                subpass: 0,
                rendering: None,
            }),
            ray_tracing: None,
        }
    }

    #[test]
    fn round_trips_and_refuses_damage() {
        let p = full();
        let bytes = p.encode();
        assert_eq!(NativePipeline::decode(&bytes), Ok(p.clone()));
        for cut in 0..bytes.len() {
            assert!(NativePipeline::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert_eq!(NativePipeline::decode(&extra).unwrap_err().message, "trailing bytes");
        let compute = NativePipeline { graphics: None, ..p.clone() };
        assert!(compute.is_compute());
        assert_eq!(NativePipeline::decode(&compute.encode()), Ok(compute.clone()));
        assert_eq!(NativePipeline::decode(&NativePipeline::default().encode()), Ok(NativePipeline::default()));
        // A ray-tracing state: the compute state's bytes and then its ray-tracing part.
        let rt = NativePipeline { ray_tracing: Some(ray_tracing()), ..compute.clone() };
        let rt_bytes = rt.encode();
        assert_eq!(&rt_bytes[..compute.encode().len()], &compute.encode()[..]);
        assert_eq!(NativePipeline::decode(&rt_bytes), Ok(rt.clone()));
        assert!(rt.is_ray_tracing() && !rt.is_compute());
        for cut in compute.encode().len() + 1..rt_bytes.len() {
            assert!(NativePipeline::decode(&rt_bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = rt_bytes.clone();
        extra.push(0);
        assert_eq!(NativePipeline::decode(&extra).unwrap_err().message, "trailing bytes");
        // A graphics state followed by a ray-tracing part is refused: the two exclude each other.
        let mut both = p.encode();
        ray_tracing().put(&mut both);
        assert_eq!(NativePipeline::decode(&both).unwrap_err().message, "trailing bytes");
    }

    fn ray_tracing() -> RayTracingState {
        RayTracingState {
            groups: vec![
                ShaderGroup {
                    group_type: 0,
                    general_shader: 0,
                    closest_hit_shader: SHADER_UNUSED,
                    any_hit_shader: SHADER_UNUSED,
                    intersection_shader: SHADER_UNUSED,
                },
                ShaderGroup {
                    group_type: 2,
                    general_shader: SHADER_UNUSED,
                    closest_hit_shader: 1,
                    any_hit_shader: SHADER_UNUSED,
                    intersection_shader: 2,
                },
            ],
            max_pipeline_ray_recursion_depth: 2,
            library_interface: Some(RayTracingInterface {
                max_pipeline_ray_payload_size: 16,
                max_pipeline_ray_hit_attribute_size: 8,
            }),
            dynamic_states: vec![DYNAMIC_STACK_SIZE],
        }
    }

    #[test]
    fn the_ray_tracing_checks_name_the_field() {
        use crate::types::ShaderStage as S;
        let stages = [S::RayGeneration, S::ClosestHit, S::Intersection];
        let mut p = NativePipeline {
            flags: 0x800,
            stages: vec![StageState::default(); 3],
            ray_tracing: Some(ray_tracing()),
            ..Default::default()
        };
        assert_eq!(p.check_ray_tracing(&stages), Ok(()));
        assert_eq!(p.kind(), crate::types::PipelineKind::RayTracing);
        let err = |p: &NativePipeline, stages: &[S]| p.check_ray_tracing(stages).unwrap_err();
        assert!(err(&p, &[S::RayGeneration, S::Miss, S::Intersection])
            .contains("closestHitShader is stages[1], a miss stage"));
        assert!(err(&p, &[S::RayGeneration, S::ClosestHit, S::Vertex]).contains("stages[2]: a vertex stage"));
        assert!(err(&p, &stages[..2]).contains("intersectionShader is 2, past the pipeline's 2 stages"));
        p.flags = 0;
        assert!(err(&p, &stages).contains("libraryInterface is given but flags lacks LIBRARY_KHR"));
        let rt = p.ray_tracing.as_mut().unwrap();
        rt.library_interface = None;
        rt.dynamic_states = vec![0];
        assert!(err(&p, &stages).contains("dynamicStates has 0"));
        let rt = p.ray_tracing.as_mut().unwrap();
        rt.dynamic_states.clear();
        rt.groups[1].group_type = 1;
        assert!(err(&p, &stages).contains("groups[1].intersectionShader must be VK_SHADER_UNUSED_KHR"));
        p.ray_tracing.as_mut().unwrap().groups[1].group_type = 3;
        assert!(err(&p, &stages).contains("groups[1].type 3"));
        assert!(err(&p, &[S::Miss, S::ClosestHit, S::Intersection]).contains("without a ray_generation stage"));
        let no_rt = NativePipeline { ray_tracing: None, ..p };
        assert!(err(&no_rt, &[S::Miss]).contains("a miss stage in a pipeline without a ray-tracing state"));
    }

    #[test]
    fn every_field_changes_the_bytes() {
        // Flip each byte of the encoding that a field owns: the result either decodes to a
        // different value or is refused, so no field is left out of the encoding.
        let p = full();
        let bytes = p.encode();
        for i in 4..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 1;
            if let Ok(q) = NativePipeline::decode(&b) {
                assert_ne!(q.encode(), bytes, "byte {i}");
            }
        }
    }

    #[test]
    fn specialization_round_trips_and_checks_its_entries() {
        let s = Specialization {
            map_entries: vec![SpecializationMapEntry { constant_id: 7, offset: 0, size: 4 }],
            data: vec![1, 0, 0, 0],
        };
        assert_eq!(Specialization::decode(&s.encode()), Ok(s.clone()));
        assert!(s.check().is_ok());
        let bad = Specialization {
            map_entries: vec![SpecializationMapEntry { constant_id: 7, offset: 2, size: 4 }],
            ..s.clone()
        };
        assert!(bad.check().unwrap_err().contains("constant 7"));
        assert!(NativePipeline::decode(&s.encode()).is_err());
    }
}
