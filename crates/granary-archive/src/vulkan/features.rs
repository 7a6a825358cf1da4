//! The core features and limits a pipeline needs, checked against what the device enabled
//! before any driver call: a pipeline that needs a feature the device lacks is refused naming
//! the feature, never handed to the driver (where it is undefined behaviour).

use crate::device::DeviceFeatures;
use crate::layout::{BindingKind, PipelineLayout};
use crate::native::NativePipeline;
use crate::render_state::RenderState;
use crate::types::ShaderStage;
use std::ffi::c_void;
use vulkanalia::vk;

/// The features of `f` and `v11` (Vulkan 1.1's) that granary knows (one bit per `VkBool32`).
pub fn from_vk(f: &vk::PhysicalDeviceFeatures, v11: &vk::PhysicalDeviceVulkan11Features) -> DeviceFeatures {
    let mut c = FeatureChain::default();
    c.core.features = *f;
    c.v11 = *v11;
    c.features()
}

/// A `VkBool32` member of one structure of a [`FeatureChain`].
type Member = fn(&mut FeatureChain) -> &mut vk::Bool32;

/// Every feature bit that is one `VkBool32` member of a feature structure, with that member
/// (the bits of feature-less extensions and `VK_EXT_extended_dynamic_state3` are the
/// [`EXTENSIONS`] rows' own). One table drives querying ([`FeatureChain::features`]) and
/// enabling ([`FeatureChain::enabling`]), so the two cannot disagree.
const MEMBERS: [(DeviceFeatures, Member); 114] = {
    use DeviceFeatures as F;
    [
        (F::DEPTH_BIAS_CLAMP, |c| &mut c.core.features.depth_bias_clamp),
        (F::INDEPENDENT_BLEND, |c| &mut c.core.features.independent_blend),
        (F::VERTEX_PIPELINE_STORES_AND_ATOMICS, |c| &mut c.core.features.vertex_pipeline_stores_and_atomics),
        (F::FRAGMENT_STORES_AND_ATOMICS, |c| &mut c.core.features.fragment_stores_and_atomics),
        (F::SAMPLE_RATE_SHADING, |c| &mut c.core.features.sample_rate_shading),
        (F::DEPTH_CLAMP, |c| &mut c.core.features.depth_clamp),
        (F::FILL_MODE_NON_SOLID, |c| &mut c.core.features.fill_mode_non_solid),
        (F::WIDE_LINES, |c| &mut c.core.features.wide_lines),
        (F::GEOMETRY_SHADER, |c| &mut c.core.features.geometry_shader),
        (F::TESSELLATION_SHADER, |c| &mut c.core.features.tessellation_shader),
        (F::DUAL_SRC_BLEND, |c| &mut c.core.features.dual_src_blend),
        (F::LOGIC_OP, |c| &mut c.core.features.logic_op),
        (F::DEPTH_BOUNDS, |c| &mut c.core.features.depth_bounds),
        (F::MULTI_VIEWPORT, |c| &mut c.core.features.multi_viewport),
        (F::STORAGE_IMAGE_READ_WITHOUT_FORMAT, |c| &mut c.core.features.shader_storage_image_read_without_format),
        (F::STORAGE_IMAGE_WRITE_WITHOUT_FORMAT, |c| &mut c.core.features.shader_storage_image_write_without_format),
        (F::SHADER_CLIP_DISTANCE, |c| &mut c.core.features.shader_clip_distance),
        (F::SHADER_CULL_DISTANCE, |c| &mut c.core.features.shader_cull_distance),
        (F::SHADER_FLOAT64, |c| &mut c.core.features.shader_float64),
        (F::SHADER_INT64, |c| &mut c.core.features.shader_int64),
        (F::SHADER_INT16, |c| &mut c.core.features.shader_int16),
        (F::IMAGE_CUBE_ARRAY, |c| &mut c.core.features.image_cube_array),
        (F::SHADER_IMAGE_GATHER_EXTENDED, |c| &mut c.core.features.shader_image_gather_extended),
        (F::SHADER_STORAGE_IMAGE_MULTISAMPLE, |c| &mut c.core.features.shader_storage_image_multisample),
        (F::SHADER_STORAGE_IMAGE_EXTENDED_FORMATS, |c| &mut c.core.features.shader_storage_image_extended_formats),
        (F::SHADER_RESOURCE_MIN_LOD, |c| &mut c.core.features.shader_resource_min_lod),
        (F::MULTIVIEW, |c| &mut c.v11.multiview),
        (F::SHADER_DRAW_PARAMETERS, |c| &mut c.v11.shader_draw_parameters),
        (F::ALPHA_TO_ONE, |c| &mut c.core.features.alpha_to_one),
        (F::LARGE_POINTS, |c| &mut c.core.features.large_points),
        (F::TASK_SHADER, |c| &mut c.mesh.task_shader),
        (F::MESH_SHADER, |c| &mut c.mesh.mesh_shader),
        (F::RECTANGULAR_LINES, |c| &mut c.line.rectangular_lines),
        (F::BRESENHAM_LINES, |c| &mut c.line.bresenham_lines),
        (F::SMOOTH_LINES, |c| &mut c.line.smooth_lines),
        (F::STIPPLED_RECTANGULAR_LINES, |c| &mut c.line.stippled_rectangular_lines),
        (F::STIPPLED_BRESENHAM_LINES, |c| &mut c.line.stippled_bresenham_lines),
        (F::STIPPLED_SMOOTH_LINES, |c| &mut c.line.stippled_smooth_lines),
        (F::PROVOKING_VERTEX_LAST, |c| &mut c.provoking.provoking_vertex_last),
        (F::DEPTH_CLIP_ENABLE, |c| &mut c.clip_enable.depth_clip_enable),
        (F::DEPTH_CLIP_CONTROL, |c| &mut c.clip_control.depth_clip_control),
        (F::GEOMETRY_STREAMS, |c| &mut c.xfb.geometry_streams),
        (F::TRANSFORM_FEEDBACK, |c| &mut c.xfb.transform_feedback),
        (F::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR, |c| &mut c.divisor.vertex_attribute_instance_rate_divisor),
        (F::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR, |c| {
            &mut c.divisor.vertex_attribute_instance_rate_zero_divisor
        }),
        (F::EXTENDED_DYNAMIC_STATE2_LOGIC_OP, |c| &mut c.eds2.extended_dynamic_state2_logic_op),
        (F::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS, |c| &mut c.eds2.extended_dynamic_state2_patch_control_points),
        (F::VERTEX_INPUT_DYNAMIC_STATE, |c| &mut c.vids.vertex_input_dynamic_state),
        (F::SAMPLER_FILTER_MINMAX, |c| &mut c.v12.sampler_filter_minmax),
        (F::SAMPLER_MIRROR_CLAMP_TO_EDGE, |c| &mut c.v12.sampler_mirror_clamp_to_edge),
        (F::DESCRIPTOR_BINDING_PARTIALLY_BOUND, |c| &mut c.v12.descriptor_binding_partially_bound),
        (F::DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT, |c| &mut c.v12.descriptor_binding_variable_descriptor_count),
        (F::DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING, |c| {
            &mut c.v12.descriptor_binding_update_unused_while_pending
        }),
        (F::DESCRIPTOR_BINDING_UNIFORM_BUFFER_UPDATE_AFTER_BIND, |c| {
            &mut c.v12.descriptor_binding_uniform_buffer_update_after_bind
        }),
        (F::DESCRIPTOR_BINDING_SAMPLED_IMAGE_UPDATE_AFTER_BIND, |c| {
            &mut c.v12.descriptor_binding_sampled_image_update_after_bind
        }),
        (F::DESCRIPTOR_BINDING_STORAGE_IMAGE_UPDATE_AFTER_BIND, |c| {
            &mut c.v12.descriptor_binding_storage_image_update_after_bind
        }),
        (F::DESCRIPTOR_BINDING_STORAGE_BUFFER_UPDATE_AFTER_BIND, |c| {
            &mut c.v12.descriptor_binding_storage_buffer_update_after_bind
        }),
        (F::DESCRIPTOR_BINDING_UNIFORM_TEXEL_BUFFER_UPDATE_AFTER_BIND, |c| {
            &mut c.v12.descriptor_binding_uniform_texel_buffer_update_after_bind
        }),
        (F::DESCRIPTOR_BINDING_STORAGE_TEXEL_BUFFER_UPDATE_AFTER_BIND, |c| {
            &mut c.v12.descriptor_binding_storage_texel_buffer_update_after_bind
        }),
        (F::SUBGROUP_SIZE_CONTROL, |c| &mut c.v13.subgroup_size_control),
        (F::COMPUTE_FULL_SUBGROUPS, |c| &mut c.v13.compute_full_subgroups),
        (F::SAMPLER_ANISOTROPY, |c| &mut c.core.features.sampler_anisotropy),
        (F::SHADER_RESOURCE_RESIDENCY, |c| &mut c.core.features.shader_resource_residency),
        (F::SHADER_UNIFORM_BUFFER_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.core.features.shader_uniform_buffer_array_dynamic_indexing
        }),
        (F::SHADER_SAMPLED_IMAGE_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.core.features.shader_sampled_image_array_dynamic_indexing
        }),
        (F::SHADER_STORAGE_BUFFER_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.core.features.shader_storage_buffer_array_dynamic_indexing
        }),
        (F::SHADER_STORAGE_IMAGE_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.core.features.shader_storage_image_array_dynamic_indexing
        }),
        (F::SHADER_TESSELLATION_AND_GEOMETRY_POINT_SIZE, |c| {
            &mut c.core.features.shader_tessellation_and_geometry_point_size
        }),
        (F::STORAGE_BUFFER_16BIT_ACCESS, |c| &mut c.v11.storage_buffer_16bit_access),
        (F::UNIFORM_AND_STORAGE_BUFFER_16BIT_ACCESS, |c| &mut c.v11.uniform_and_storage_buffer_16bit_access),
        (F::STORAGE_PUSH_CONSTANT16, |c| &mut c.v11.storage_push_constant16),
        (F::STORAGE_INPUT_OUTPUT16, |c| &mut c.v11.storage_input_output16),
        (F::VARIABLE_POINTERS_STORAGE_BUFFER, |c| &mut c.v11.variable_pointers_storage_buffer),
        (F::VARIABLE_POINTERS, |c| &mut c.v11.variable_pointers),
        (F::STORAGE_BUFFER_8BIT_ACCESS, |c| &mut c.v12.storage_buffer_8bit_access),
        (F::UNIFORM_AND_STORAGE_BUFFER_8BIT_ACCESS, |c| &mut c.v12.uniform_and_storage_buffer_8bit_access),
        (F::STORAGE_PUSH_CONSTANT8, |c| &mut c.v12.storage_push_constant8),
        (F::SHADER_BUFFER_INT64_ATOMICS, |c| &mut c.v12.shader_buffer_int64_atomics),
        (F::SHADER_SHARED_INT64_ATOMICS, |c| &mut c.v12.shader_shared_int64_atomics),
        (F::SHADER_FLOAT16, |c| &mut c.v12.shader_float16),
        (F::SHADER_INT8, |c| &mut c.v12.shader_int8),
        (F::SHADER_INPUT_ATTACHMENT_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.v12.shader_input_attachment_array_dynamic_indexing
        }),
        (F::SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.v12.shader_uniform_texel_buffer_array_dynamic_indexing
        }),
        (F::SHADER_STORAGE_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING, |c| {
            &mut c.v12.shader_storage_texel_buffer_array_dynamic_indexing
        }),
        (F::SHADER_UNIFORM_BUFFER_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_uniform_buffer_array_non_uniform_indexing
        }),
        (F::SHADER_SAMPLED_IMAGE_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_sampled_image_array_non_uniform_indexing
        }),
        (F::SHADER_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_storage_buffer_array_non_uniform_indexing
        }),
        (F::SHADER_STORAGE_IMAGE_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_storage_image_array_non_uniform_indexing
        }),
        (F::SHADER_INPUT_ATTACHMENT_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_input_attachment_array_non_uniform_indexing
        }),
        (F::SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_uniform_texel_buffer_array_non_uniform_indexing
        }),
        (F::SHADER_STORAGE_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING, |c| {
            &mut c.v12.shader_storage_texel_buffer_array_non_uniform_indexing
        }),
        (F::RUNTIME_DESCRIPTOR_ARRAY, |c| &mut c.v12.runtime_descriptor_array),
        (F::BUFFER_DEVICE_ADDRESS, |c| &mut c.v12.buffer_device_address),
        (F::VULKAN_MEMORY_MODEL, |c| &mut c.v12.vulkan_memory_model),
        (F::VULKAN_MEMORY_MODEL_DEVICE_SCOPE, |c| &mut c.v12.vulkan_memory_model_device_scope),
        (F::SHADER_OUTPUT_VIEWPORT_INDEX, |c| &mut c.v12.shader_output_viewport_index),
        (F::SHADER_OUTPUT_LAYER, |c| &mut c.v12.shader_output_layer),
        (F::SHADER_DEMOTE_TO_HELPER_INVOCATION, |c| &mut c.v13.shader_demote_to_helper_invocation),
        (F::SHADER_TERMINATE_INVOCATION, |c| &mut c.v13.shader_terminate_invocation),
        (F::SHADER_INTEGER_DOT_PRODUCT, |c| &mut c.v13.shader_integer_dot_product),
        (F::INLINE_UNIFORM_BLOCK, |c| &mut c.v13.inline_uniform_block),
        (F::PIPELINE_CREATION_CACHE_CONTROL, |c| &mut c.v13.pipeline_creation_cache_control),
        (F::FRAGMENT_SHADER_BARYCENTRIC, |c| &mut c.barycentric.fragment_shader_barycentric),
        (F::PIPELINE_FRAGMENT_SHADING_RATE, |c| &mut c.shading_rate.pipeline_fragment_shading_rate),
        (F::PRIMITIVE_FRAGMENT_SHADING_RATE, |c| &mut c.shading_rate.primitive_fragment_shading_rate),
        (F::ATTACHMENT_FRAGMENT_SHADING_RATE, |c| &mut c.shading_rate.attachment_fragment_shading_rate),
        (F::FRAGMENT_SHADER_SAMPLE_INTERLOCK, |c| &mut c.interlock.fragment_shader_sample_interlock),
        (F::FRAGMENT_SHADER_PIXEL_INTERLOCK, |c| &mut c.interlock.fragment_shader_pixel_interlock),
        (F::FRAGMENT_SHADER_SHADING_RATE_INTERLOCK, |c| &mut c.interlock.fragment_shader_shading_rate_interlock),
        (F::SHADER_IMAGE_INT64_ATOMICS, |c| &mut c.image_int64.shader_image_int64_atomics),
        (F::RAY_TRACING_PIPELINE, |c| &mut c.ray_tracing.ray_tracing_pipeline),
        (F::RAY_TRAVERSAL_PRIMITIVE_CULLING, |c| &mut c.ray_tracing.ray_traversal_primitive_culling),
        (F::ACCELERATION_STRUCTURE, |c| &mut c.acceleration.acceleration_structure),
        (F::RAY_QUERY, |c| &mut c.ray_query.ray_query),
    ]
};

/// Device limits granary compares pipelines against before any driver call.
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `maxBoundDescriptorSets`.
    pub max_bound_descriptor_sets: u32,
    /// `maxPushConstantsSize`.
    pub max_push_constants_size: u32,
    /// `maxVertexInputBindings`.
    pub max_vertex_input_bindings: u32,
    /// `maxVertexInputAttributes`.
    pub max_vertex_input_attributes: u32,
    /// `maxVertexInputBindingStride`.
    pub max_vertex_input_binding_stride: u32,
    /// `maxVertexInputAttributeOffset`.
    pub max_vertex_input_attribute_offset: u32,
    /// `maxColorAttachments`.
    pub max_color_attachments: u32,
    /// `maxTessellationPatchSize`.
    pub max_tessellation_patch_size: u32,
    /// `maxViewports`.
    pub max_viewports: u32,
    /// Vulkan 1.3 `minSubgroupSize` (0 where unknown).
    pub min_subgroup_size: u32,
    /// Vulkan 1.3 `maxSubgroupSize` (0 where unknown).
    pub max_subgroup_size: u32,
    /// Vulkan 1.3 `requiredSubgroupSizeStages` (`VkShaderStageFlags`).
    pub required_subgroup_size_stages: u32,
    /// `VkPhysicalDeviceRayTracingPipelinePropertiesKHR::maxRayRecursionDepth` (0 without
    /// `VK_KHR_ray_tracing_pipeline`).
    pub max_ray_recursion_depth: u32,
}

impl Limits {
    /// The limits granary checks, from the device's `VkPhysicalDeviceLimits` (the subgroup
    /// sizes, from Vulkan 1.3's properties, are filled in by the instance's query).
    pub fn from_vk(l: &vk::PhysicalDeviceLimits) -> Limits {
        Limits {
            max_bound_descriptor_sets: l.max_bound_descriptor_sets,
            max_push_constants_size: l.max_push_constants_size,
            max_vertex_input_bindings: l.max_vertex_input_bindings,
            max_vertex_input_attributes: l.max_vertex_input_attributes,
            max_vertex_input_binding_stride: l.max_vertex_input_binding_stride,
            max_vertex_input_attribute_offset: l.max_vertex_input_attribute_offset,
            max_color_attachments: l.max_color_attachments,
            max_tessellation_patch_size: l.max_tessellation_patch_size,
            max_viewports: l.max_viewports,
            min_subgroup_size: 0,
            max_subgroup_size: 0,
            required_subgroup_size_stages: 0,
            max_ray_recursion_depth: 0,
        }
    }
}

/// Whether every colour attachment has the same blend state and write mask (as the pipeline
/// will be created: unspecialized fields take blending off and every channel, as
/// [`color_output`](super::build::color_output) does).
fn blends_identical(r: &RenderState) -> bool {
    let effective = |i: usize| super::translate::blend_state(&r.color_attachments[i]);
    let same = |a: &vk::PipelineColorBlendAttachmentState, b: &vk::PipelineColorBlendAttachmentState| {
        a.blend_enable == b.blend_enable
            && a.color_write_mask == b.color_write_mask
            && (a.blend_enable == vk::FALSE
                || (a.src_color_blend_factor == b.src_color_blend_factor
                    && a.dst_color_blend_factor == b.dst_color_blend_factor
                    && a.color_blend_op == b.color_blend_op
                    && a.src_alpha_blend_factor == b.src_alpha_blend_factor
                    && a.dst_alpha_blend_factor == b.dst_alpha_blend_factor
                    && a.alpha_blend_op == b.alpha_blend_op))
    };
    let n = r.color_attachments.len();
    n < 2 || {
        let first = effective(0);
        (1..n).all(|i| same(&first, &effective(i)))
    }
}

/// The features a pipeline of `layout` (and, for a render pipeline, `state`) needs, each with
/// the reason, in bit order.
pub(crate) fn required(layout: &PipelineLayout, state: Option<&RenderState>) -> Vec<(DeviceFeatures, String)> {
    let mut out = Vec::new();
    if let Some(r) = state {
        if let Some(ds) = r.depth_stencil.as_ref().filter(|ds| ds.depth_bias_clamp != 0.0) {
            out.push((
                DeviceFeatures::DEPTH_BIAS_CLAMP,
                format!("depth_stencil.depth_bias_clamp is {}", ds.depth_bias_clamp),
            ));
        }
        if !blends_identical(r) {
            out.push((
                DeviceFeatures::INDEPENDENT_BLEND,
                "color_attachments differ in blend or write_mask".to_string(),
            ));
        }
    }
    let writes =
        |b: &&crate::layout::LayoutBinding| matches!(b.kind, BindingKind::StorageBuffer | BindingKind::StorageTexture);
    let written_in = |stage: ShaderStage| layout.bindings.iter().filter(writes).find(|b| b.visibility.contains(stage));
    if state.is_some() {
        if let Some(b) = written_in(ShaderStage::Vertex) {
            out.push((
                DeviceFeatures::VERTEX_PIPELINE_STORES_AND_ATOMICS,
                format!(
                    "@group({}) @binding({}) is a writable {} visible to the vertex stage",
                    b.group, b.binding, b.kind
                ),
            ));
        }
        if let Some(b) = written_in(ShaderStage::Fragment) {
            out.push((
                DeviceFeatures::FRAGMENT_STORES_AND_ATOMICS,
                format!(
                    "@group({}) @binding({}) is a writable {} visible to the fragment stage",
                    b.group, b.binding, b.kind
                ),
            ));
        }
    }
    out
}

/// SPIR-V capabilities that need a device feature (the specification's SPIR-V environment
/// appendix), by capability number, with the capability's name and the features of which
/// one must be enabled (most need exactly one).
const CAPABILITY_FEATURES: [(u32, &str, DeviceFeatures); 77] = {
    use DeviceFeatures as F;
    const fn any(a: F, b: F) -> F {
        F(a.0 | b.0)
    }
    [
        (2, "Geometry", F::GEOMETRY_SHADER),
        (3, "Tessellation", F::TESSELLATION_SHADER),
        (9, "Float16", F::SHADER_FLOAT16),
        (10, "Float64", F::SHADER_FLOAT64),
        (11, "Int64", F::SHADER_INT64),
        (12, "Int64Atomics", any(F::SHADER_BUFFER_INT64_ATOMICS, F::SHADER_SHARED_INT64_ATOMICS)),
        (22, "Int16", F::SHADER_INT16),
        (23, "TessellationPointSize", F::SHADER_TESSELLATION_AND_GEOMETRY_POINT_SIZE),
        (24, "GeometryPointSize", F::SHADER_TESSELLATION_AND_GEOMETRY_POINT_SIZE),
        (25, "ImageGatherExtended", F::SHADER_IMAGE_GATHER_EXTENDED),
        (27, "StorageImageMultisample", F::SHADER_STORAGE_IMAGE_MULTISAMPLE),
        (28, "UniformBufferArrayDynamicIndexing", F::SHADER_UNIFORM_BUFFER_ARRAY_DYNAMIC_INDEXING),
        (29, "SampledImageArrayDynamicIndexing", F::SHADER_SAMPLED_IMAGE_ARRAY_DYNAMIC_INDEXING),
        (30, "StorageBufferArrayDynamicIndexing", F::SHADER_STORAGE_BUFFER_ARRAY_DYNAMIC_INDEXING),
        (31, "StorageImageArrayDynamicIndexing", F::SHADER_STORAGE_IMAGE_ARRAY_DYNAMIC_INDEXING),
        (32, "ClipDistance", F::SHADER_CLIP_DISTANCE),
        (33, "CullDistance", F::SHADER_CULL_DISTANCE),
        (34, "ImageCubeArray", F::IMAGE_CUBE_ARRAY),
        (35, "SampleRateShading", F::SAMPLE_RATE_SHADING),
        (39, "Int8", F::SHADER_INT8),
        (41, "SparseResidency", F::SHADER_RESOURCE_RESIDENCY),
        (42, "MinLod", F::SHADER_RESOURCE_MIN_LOD),
        (45, "SampledCubeArray", F::IMAGE_CUBE_ARRAY),
        (48, "ImageMSArray", F::SHADER_STORAGE_IMAGE_MULTISAMPLE),
        (49, "StorageImageExtendedFormats", F::SHADER_STORAGE_IMAGE_EXTENDED_FORMATS),
        (52, "InterpolationFunction", F::SAMPLE_RATE_SHADING),
        (53, "TransformFeedback", F::TRANSFORM_FEEDBACK),
        (54, "GeometryStreams", F::GEOMETRY_STREAMS),
        (55, "StorageImageReadWithoutFormat", F::STORAGE_IMAGE_READ_WITHOUT_FORMAT),
        (56, "StorageImageWriteWithoutFormat", F::STORAGE_IMAGE_WRITE_WITHOUT_FORMAT),
        (57, "MultiViewport", F::MULTI_VIEWPORT),
        (69, "ShaderLayer", F::SHADER_OUTPUT_LAYER),
        (70, "ShaderViewportIndex", F::SHADER_OUTPUT_VIEWPORT_INDEX),
        (
            4422,
            "FragmentShadingRateKHR",
            F(F::PIPELINE_FRAGMENT_SHADING_RATE.0
                | F::PRIMITIVE_FRAGMENT_SHADING_RATE.0
                | F::ATTACHMENT_FRAGMENT_SHADING_RATE.0),
        ),
        (4427, "DrawParameters", F::SHADER_DRAW_PARAMETERS),
        (4433, "StorageBuffer16BitAccess", F::STORAGE_BUFFER_16BIT_ACCESS),
        (4434, "UniformAndStorageBuffer16BitAccess", F::UNIFORM_AND_STORAGE_BUFFER_16BIT_ACCESS),
        (4435, "StoragePushConstant16", F::STORAGE_PUSH_CONSTANT16),
        (4436, "StorageInputOutput16", F::STORAGE_INPUT_OUTPUT16),
        (4439, "MultiView", F::MULTIVIEW),
        (4441, "VariablePointersStorageBuffer", F::VARIABLE_POINTERS_STORAGE_BUFFER),
        (4442, "VariablePointers", F::VARIABLE_POINTERS),
        (4447, "SampleMaskPostDepthCoverage", F::POST_DEPTH_COVERAGE),
        (4448, "StorageBuffer8BitAccess", F::STORAGE_BUFFER_8BIT_ACCESS),
        (4449, "UniformAndStorageBuffer8BitAccess", F::UNIFORM_AND_STORAGE_BUFFER_8BIT_ACCESS),
        (4450, "StoragePushConstant8", F::STORAGE_PUSH_CONSTANT8),
        (4472, "RayQueryKHR", F::RAY_QUERY),
        (4478, "RayTraversalPrimitiveCullingKHR", any(F::RAY_TRAVERSAL_PRIMITIVE_CULLING, F::RAY_QUERY)),
        (4479, "RayTracingKHR", F::RAY_TRACING_PIPELINE),
        (5013, "StencilExportEXT", F::SHADER_STENCIL_EXPORT),
        (5016, "Int64ImageEXT", F::SHADER_IMAGE_INT64_ATOMICS),
        (5254, "ShaderViewportIndexLayerEXT", F::SHADER_OUTPUT_VIEWPORT_INDEX),
        (5254, "ShaderViewportIndexLayerEXT", F::SHADER_OUTPUT_LAYER),
        (5283, "MeshShadingEXT", F::MESH_SHADER),
        (5284, "FragmentBarycentricKHR", F::FRAGMENT_SHADER_BARYCENTRIC),
        (5302, "RuntimeDescriptorArray", F::RUNTIME_DESCRIPTOR_ARRAY),
        (5303, "InputAttachmentArrayDynamicIndexing", F::SHADER_INPUT_ATTACHMENT_ARRAY_DYNAMIC_INDEXING),
        (5304, "UniformTexelBufferArrayDynamicIndexing", F::SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING),
        (5305, "StorageTexelBufferArrayDynamicIndexing", F::SHADER_STORAGE_TEXEL_BUFFER_ARRAY_DYNAMIC_INDEXING),
        (5306, "UniformBufferArrayNonUniformIndexing", F::SHADER_UNIFORM_BUFFER_ARRAY_NON_UNIFORM_INDEXING),
        (5307, "SampledImageArrayNonUniformIndexing", F::SHADER_SAMPLED_IMAGE_ARRAY_NON_UNIFORM_INDEXING),
        (5308, "StorageBufferArrayNonUniformIndexing", F::SHADER_STORAGE_BUFFER_ARRAY_NON_UNIFORM_INDEXING),
        (5309, "StorageImageArrayNonUniformIndexing", F::SHADER_STORAGE_IMAGE_ARRAY_NON_UNIFORM_INDEXING),
        (5310, "InputAttachmentArrayNonUniformIndexing", F::SHADER_INPUT_ATTACHMENT_ARRAY_NON_UNIFORM_INDEXING),
        (5311, "UniformTexelBufferArrayNonUniformIndexing", F::SHADER_UNIFORM_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING),
        (5312, "StorageTexelBufferArrayNonUniformIndexing", F::SHADER_STORAGE_TEXEL_BUFFER_ARRAY_NON_UNIFORM_INDEXING),
        (5345, "VulkanMemoryModel", F::VULKAN_MEMORY_MODEL),
        (5346, "VulkanMemoryModelDeviceScope", F::VULKAN_MEMORY_MODEL_DEVICE_SCOPE),
        (5347, "PhysicalStorageBufferAddresses", F::BUFFER_DEVICE_ADDRESS),
        (5363, "FragmentShaderSampleInterlockEXT", F::FRAGMENT_SHADER_SAMPLE_INTERLOCK),
        (5372, "FragmentShaderShadingRateInterlockEXT", F::FRAGMENT_SHADER_SHADING_RATE_INTERLOCK),
        (5378, "FragmentShaderPixelInterlockEXT", F::FRAGMENT_SHADER_PIXEL_INTERLOCK),
        (5379, "DemoteToHelperInvocation", F::SHADER_DEMOTE_TO_HELPER_INVOCATION),
        (6016, "DotProductInputAll", F::SHADER_INTEGER_DOT_PRODUCT),
        (6017, "DotProductInput4x8Bit", F::SHADER_INTEGER_DOT_PRODUCT),
        (6018, "DotProductInput4x8BitPacked", F::SHADER_INTEGER_DOT_PRODUCT),
        (6019, "DotProduct", F::SHADER_INTEGER_DOT_PRODUCT),
    ]
};

/// SPIR-V extensions (`OpExtension`) whose use needs a device extension that is not core in
/// Vulkan 1.3, with the device extension: it is enabled when any feature of the mask is (its
/// [`EXTENSIONS`] row's).
const SPIRV_EXTENSIONS: [(&str, &str); 12] = [
    ("SPV_KHR_fragment_shading_rate", "VK_KHR_fragment_shading_rate"),
    ("SPV_KHR_fragment_shader_barycentric", "VK_KHR_fragment_shader_barycentric"),
    ("SPV_EXT_fragment_shader_interlock", "VK_EXT_fragment_shader_interlock"),
    ("SPV_EXT_shader_image_int64", "VK_EXT_shader_image_atomic_int64"),
    ("SPV_KHR_ray_tracing", "VK_KHR_ray_tracing_pipeline"),
    ("SPV_KHR_ray_query", "VK_KHR_ray_query"),
    ("SPV_EXT_shader_stencil_export", "VK_EXT_shader_stencil_export"),
    ("SPV_GOOGLE_hlsl_functionality1", "VK_GOOGLE_hlsl_functionality1"),
    ("SPV_GOOGLE_user_type", "VK_GOOGLE_user_type"),
    ("SPV_GOOGLE_decorate_string", "VK_GOOGLE_decorate_string"),
    ("SPV_KHR_post_depth_coverage", "VK_EXT_post_depth_coverage"),
    ("SPV_EXT_mesh_shader", "VK_EXT_mesh_shader"),
];

/// What the `OpCapability` and `OpExtension` declarations of a SPIR-V module need of the
/// device (as far as granary knows them), each with the declaration that needs it. Reads only
/// the module's preamble (capabilities and extensions come first); bytes that are not SPIR-V
/// need nothing here (the module's own checks refuse them).
pub(crate) fn required_by_spirv(spirv: &[u8]) -> Vec<(Need, String)> {
    let word = |i: usize| spirv.get(i * 4..i * 4 + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut out = Vec::new();
    if word(0) != Some(0x0723_0203) {
        return out;
    }
    let mut i = 5;
    while let Some(w) = word(i) {
        let (op, len) = (w & 0xffff, (w >> 16) as usize);
        match op {
            // OpCapability
            17 => {
                let cap = word(i + 1);
                for (_, c, ext, instead) in NEVER_ENABLED.iter() {
                    if let Some((_, name)) = c.filter(|(n, _)| Some(*n) == cap) {
                        out.push((Need::Never(ext, instead), format!("the SPIR-V declares capability {name}")));
                    }
                }
                for (_, name, f) in CAPABILITY_FEATURES.iter().filter(|(c, _, _)| Some(*c) == cap) {
                    let why = format!("the SPIR-V declares capability {name}");
                    let need = if f.0.count_ones() == 1 { Need::Feature(*f) } else { Need::AnyOf(*f) };
                    out.push((need, why));
                }
            }
            // OpExtension: a NUL-terminated string.
            10 => {
                let bytes = spirv.get((i + 1) * 4..(i + len.max(1)) * 4).unwrap_or(&[]);
                let name = bytes.split(|b| *b == 0).next().unwrap_or(&[]);
                if let Some((spv, _, ext, instead)) = NEVER_ENABLED.iter().find(|(s, _, _, _)| s.as_bytes() == name) {
                    out.push((Need::Never(ext, instead), format!("the SPIR-V declares extension {spv}")));
                }
                if let Some((spv, ext)) = SPIRV_EXTENSIONS.iter().find(|(s, _)| s.as_bytes() == name) {
                    if let Some((_, mask, _)) = EXTENSIONS.iter().find(|(names, _, _)| names.contains(ext)) {
                        out.push((Need::Extension(*mask, ext), format!("the SPIR-V declares extension {spv}")));
                    }
                }
            }
            // OpExtInstImport, OpMemoryModel: still the preamble.
            11 | 14 => {}
            _ => break,
        }
        if len == 0 {
            break;
        }
        i += len;
    }
    out
}

/// Refuses needs of an extension granary enables on no device (whatever the device supports):
/// "needs the X extension (why), which granary does not enable: what to do instead".
pub(crate) fn never_enabled(needs: &[(Need, String)]) -> Result<(), String> {
    match needs.iter().find_map(|(n, why)| match n {
        Need::Never(ext, instead) => Some((ext, why, instead)),
        _ => None,
    }) {
        Some((ext, why, instead)) => {
            Err(format!("needs the {ext} extension ({why}), which granary does not enable: {instead}"))
        }
        None => Ok(()),
    }
}

/// The mask of every line-rasterization feature.
const LINE_FEATURES: DeviceFeatures = DeviceFeatures(
    DeviceFeatures::RECTANGULAR_LINES.0
        | DeviceFeatures::BRESENHAM_LINES.0
        | DeviceFeatures::SMOOTH_LINES.0
        | DeviceFeatures::STIPPLED_RECTANGULAR_LINES.0
        | DeviceFeatures::STIPPLED_BRESENHAM_LINES.0
        | DeviceFeatures::STIPPLED_SMOOTH_LINES.0,
);

/// The ray-tracing features: each needs `VK_KHR_acceleration_structure` (and its
/// `VK_KHR_deferred_host_operations`) enabled with it.
const RAY_FEATURES: DeviceFeatures = DeviceFeatures(
    DeviceFeatures::RAY_TRACING_PIPELINE.0
        | DeviceFeatures::RAY_TRAVERSAL_PRIMITIVE_CULLING.0
        | DeviceFeatures::ACCELERATION_STRUCTURE.0
        | DeviceFeatures::RAY_QUERY.0,
);

/// The device extensions granary enables beyond Vulkan 1.3 core, each with the features whose
/// enabling needs it (an extension is enabled exactly when one of its features is) and, for an
/// extension without a feature structure, the bit that stands for it (set where the device
/// has the extension). Where a `KHR` and an `EXT` name exist (same structures and values),
/// the `KHR` one is preferred. The row order is part of [`FeatureChain`] (`present`).
pub(crate) const EXTENSIONS: [(&[&str], DeviceFeatures, Option<DeviceFeatures>); 24] = {
    use DeviceFeatures as F;
    const fn or(a: F, b: F) -> F {
        F(a.0 | b.0)
    }
    [
        (&["VK_EXT_mesh_shader"], or(F::TASK_SHADER, F::MESH_SHADER), None),
        (&["VK_KHR_line_rasterization", "VK_EXT_line_rasterization"], LINE_FEATURES, None),
        (&["VK_EXT_provoking_vertex"], F::PROVOKING_VERTEX_LAST, None),
        (&["VK_EXT_conservative_rasterization"], F::CONSERVATIVE_RASTERIZATION, Some(F::CONSERVATIVE_RASTERIZATION)),
        (&["VK_EXT_depth_clip_enable"], F::DEPTH_CLIP_ENABLE, None),
        (&["VK_EXT_depth_clip_control"], F::DEPTH_CLIP_CONTROL, None),
        (&["VK_EXT_transform_feedback"], or(F::GEOMETRY_STREAMS, F::TRANSFORM_FEEDBACK), None),
        (
            &["VK_KHR_vertex_attribute_divisor", "VK_EXT_vertex_attribute_divisor"],
            or(F::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR, F::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR),
            None,
        ),
        (
            &["VK_EXT_extended_dynamic_state2"],
            or(F::EXTENDED_DYNAMIC_STATE2_LOGIC_OP, F::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS),
            None,
        ),
        (&["VK_EXT_extended_dynamic_state3"], F::EXTENDED_DYNAMIC_STATE3, None),
        (&["VK_EXT_vertex_input_dynamic_state"], F::VERTEX_INPUT_DYNAMIC_STATE, None),
        (&["VK_KHR_fragment_shader_barycentric"], F::FRAGMENT_SHADER_BARYCENTRIC, None),
        (
            &["VK_KHR_fragment_shading_rate"],
            or(
                or(F::PIPELINE_FRAGMENT_SHADING_RATE, F::PRIMITIVE_FRAGMENT_SHADING_RATE),
                F::ATTACHMENT_FRAGMENT_SHADING_RATE,
            ),
            None,
        ),
        (
            &["VK_EXT_fragment_shader_interlock"],
            or(
                or(F::FRAGMENT_SHADER_SAMPLE_INTERLOCK, F::FRAGMENT_SHADER_PIXEL_INTERLOCK),
                F::FRAGMENT_SHADER_SHADING_RATE_INTERLOCK,
            ),
            None,
        ),
        (&["VK_EXT_shader_image_atomic_int64"], F::SHADER_IMAGE_INT64_ATOMICS, None),
        (&["VK_KHR_ray_tracing_pipeline"], or(F::RAY_TRACING_PIPELINE, F::RAY_TRAVERSAL_PRIMITIVE_CULLING), None),
        (&["VK_KHR_acceleration_structure"], RAY_FEATURES, None),
        (&["VK_KHR_deferred_host_operations"], RAY_FEATURES, None),
        (&["VK_KHR_ray_query"], F::RAY_QUERY, None),
        (&["VK_EXT_shader_stencil_export"], F::SHADER_STENCIL_EXPORT, Some(F::SHADER_STENCIL_EXPORT)),
        (&["VK_GOOGLE_hlsl_functionality1"], F::HLSL_FUNCTIONALITY1, Some(F::HLSL_FUNCTIONALITY1)),
        (&["VK_GOOGLE_user_type"], F::USER_TYPE, Some(F::USER_TYPE)),
        (&["VK_GOOGLE_decorate_string"], or(F::HLSL_FUNCTIONALITY1, F::USER_TYPE), None),
        (&["VK_EXT_post_depth_coverage"], F::POST_DEPTH_COVERAGE, Some(F::POST_DEPTH_COVERAGE)),
    ]
};

/// The extension names to enable for `features` on a device that has `available`.
pub(crate) fn extensions_for(features: DeviceFeatures, available: &dyn Fn(&str) -> bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (names, bits, _) in EXTENSIONS {
        if features.intersection(bits).is_empty() {
            continue;
        }
        if let Some(n) = names.iter().find(|n| available(n)) {
            out.push(*n);
        }
    }
    out
}

/// The `VK_EXT_extended_dynamic_state3` members granary enables where supported (the ones
/// whose state the native model carries), by their index in
/// `VkPhysicalDeviceExtendedDynamicState3FeaturesEXT`, with the dynamic state each allows.
pub(crate) const EDS3_MEMBERS: [(u32, &str, vk::DynamicState); 19] = [
    (0, "extendedDynamicState3TessellationDomainOrigin", vk::DynamicState::TESSELLATION_DOMAIN_ORIGIN_EXT),
    (1, "extendedDynamicState3DepthClampEnable", vk::DynamicState::DEPTH_CLAMP_ENABLE_EXT),
    (2, "extendedDynamicState3PolygonMode", vk::DynamicState::POLYGON_MODE_EXT),
    (3, "extendedDynamicState3RasterizationSamples", vk::DynamicState::RASTERIZATION_SAMPLES_EXT),
    (4, "extendedDynamicState3SampleMask", vk::DynamicState::SAMPLE_MASK_EXT),
    (5, "extendedDynamicState3AlphaToCoverageEnable", vk::DynamicState::ALPHA_TO_COVERAGE_ENABLE_EXT),
    (6, "extendedDynamicState3AlphaToOneEnable", vk::DynamicState::ALPHA_TO_ONE_ENABLE_EXT),
    (7, "extendedDynamicState3LogicOpEnable", vk::DynamicState::LOGIC_OP_ENABLE_EXT),
    (8, "extendedDynamicState3ColorBlendEnable", vk::DynamicState::COLOR_BLEND_ENABLE_EXT),
    (9, "extendedDynamicState3ColorBlendEquation", vk::DynamicState::COLOR_BLEND_EQUATION_EXT),
    (10, "extendedDynamicState3ColorWriteMask", vk::DynamicState::COLOR_WRITE_MASK_EXT),
    (11, "extendedDynamicState3RasterizationStream", vk::DynamicState::RASTERIZATION_STREAM_EXT),
    (12, "extendedDynamicState3ConservativeRasterizationMode", vk::DynamicState::CONSERVATIVE_RASTERIZATION_MODE_EXT),
    (
        13,
        "extendedDynamicState3ExtraPrimitiveOverestimationSize",
        vk::DynamicState::EXTRA_PRIMITIVE_OVERESTIMATION_SIZE_EXT,
    ),
    (14, "extendedDynamicState3DepthClipEnable", vk::DynamicState::DEPTH_CLIP_ENABLE_EXT),
    (17, "extendedDynamicState3ProvokingVertexMode", vk::DynamicState::PROVOKING_VERTEX_MODE_EXT),
    (18, "extendedDynamicState3LineRasterizationMode", vk::DynamicState::LINE_RASTERIZATION_MODE_EXT),
    (19, "extendedDynamicState3LineStippleEnable", vk::DynamicState::LINE_STIPPLE_ENABLE_EXT),
    (20, "extendedDynamicState3DepthClipNegativeOneToOne", vk::DynamicState::DEPTH_CLIP_NEGATIVE_ONE_TO_ONE_EXT),
];

/// The member `i` (an [`EDS3_MEMBERS`] index) of `f`.
fn eds3_member(f: &mut vk::PhysicalDeviceExtendedDynamicState3FeaturesEXT, i: u32) -> Option<&mut vk::Bool32> {
    Some(match i {
        0 => &mut f.extended_dynamic_state3_tessellation_domain_origin,
        1 => &mut f.extended_dynamic_state_3depth_clamp_enable,
        2 => &mut f.extended_dynamic_state3_polygon_mode,
        3 => &mut f.extended_dynamic_state3_rasterization_samples,
        4 => &mut f.extended_dynamic_state3_sample_mask,
        5 => &mut f.extended_dynamic_state3_alpha_to_coverage_enable,
        6 => &mut f.extended_dynamic_state3_alpha_to_one_enable,
        7 => &mut f.extended_dynamic_state3_logic_op_enable,
        8 => &mut f.extended_dynamic_state3_color_blend_enable,
        9 => &mut f.extended_dynamic_state3_color_blend_equation,
        10 => &mut f.extended_dynamic_state3_color_write_mask,
        11 => &mut f.extended_dynamic_state3_rasterization_stream,
        12 => &mut f.extended_dynamic_state3_conservative_rasterization_mode,
        13 => &mut f.extended_dynamic_state3_extra_primitive_overestimation_size,
        14 => &mut f.extended_dynamic_state_3depth_clip_enable,
        17 => &mut f.extended_dynamic_state3_provoking_vertex_mode,
        18 => &mut f.extended_dynamic_state3_line_rasterization_mode,
        19 => &mut f.extended_dynamic_state3_line_stipple_enable,
        20 => &mut f.extended_dynamic_state_3depth_clip_negative_one_to_one,
        _ => return None,
    })
}

/// Every feature structure granary reads and enables, as one value: queried whole from a
/// physical device ([`link`](Self::link) into `vkGetPhysicalDeviceFeatures2`), read into
/// [`DeviceFeatures`] ([`features`](Self::features)), and built to enable exactly a set of
/// them ([`enabling`](Self::enabling)) for `vkCreateDevice`.
///
/// Thread safety: holds raw `pNext` pointers while linked; used on one stack frame only.
#[derive(Clone, Copy, Default)]
pub(crate) struct FeatureChain {
    pub(crate) core: vk::PhysicalDeviceFeatures2,
    pub(crate) v11: vk::PhysicalDeviceVulkan11Features,
    pub(crate) v12: vk::PhysicalDeviceVulkan12Features,
    pub(crate) v13: vk::PhysicalDeviceVulkan13Features,
    mesh: vk::PhysicalDeviceMeshShaderFeaturesEXT,
    line: vk::PhysicalDeviceLineRasterizationFeatures,
    provoking: vk::PhysicalDeviceProvokingVertexFeaturesEXT,
    clip_enable: vk::PhysicalDeviceDepthClipEnableFeaturesEXT,
    clip_control: vk::PhysicalDeviceDepthClipControlFeaturesEXT,
    xfb: vk::PhysicalDeviceTransformFeedbackFeaturesEXT,
    divisor: vk::PhysicalDeviceVertexAttributeDivisorFeatures,
    eds2: vk::PhysicalDeviceExtendedDynamicState2FeaturesEXT,
    pub(crate) eds3: vk::PhysicalDeviceExtendedDynamicState3FeaturesEXT,
    vids: vk::PhysicalDeviceVertexInputDynamicStateFeaturesEXT,
    barycentric: vk::PhysicalDeviceFragmentShaderBarycentricFeaturesKHR,
    shading_rate: vk::PhysicalDeviceFragmentShadingRateFeaturesKHR,
    interlock: vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT,
    image_int64: vk::PhysicalDeviceShaderImageAtomicInt64FeaturesEXT,
    ray_tracing: vk::PhysicalDeviceRayTracingPipelineFeaturesKHR,
    acceleration: vk::PhysicalDeviceAccelerationStructureFeaturesKHR,
    ray_query: vk::PhysicalDeviceRayQueryFeaturesKHR,
    /// Which [`EXTENSIONS`] rows are present: the extensions the device has (query) or
    /// enables (create). A row's structure is linked only when it is.
    present: [bool; EXTENSIONS.len()],
}

impl FeatureChain {
    /// A chain for a device whose extensions `has` answers (query: structures of absent
    /// extensions are not linked).
    pub(crate) fn for_extensions(has: &dyn Fn(&str) -> bool) -> FeatureChain {
        let mut c = FeatureChain::default();
        for (i, (names, _, _)) in EXTENSIONS.iter().enumerate() {
            c.present[i] = names.iter().any(|n| has(n));
        }
        c
    }

    /// Links every structure (the core one first, then Vulkan 1.1–1.3, then each present
    /// extension's, then `extra`, a chain of the caller's) and returns the head
    /// (`VkPhysicalDeviceFeatures2`). The pointers are valid while `self` is neither moved nor
    /// dropped (and not touched but through them).
    pub(crate) fn link(&mut self, extra: *mut c_void) -> *mut c_void {
        let mut tail: *mut c_void = extra;
        macro_rules! push {
            ($s:expr) => {{
                $s.next = tail;
                tail = (&mut $s as *mut _) as *mut c_void;
            }};
        }
        // By EXTENSIONS row; rows 3, 17 and 19–23 have no structure.
        let p = self.present;
        macro_rules! rows {
            ($($row:literal => $field:ident),* $(,)?) => {
                $(if p[$row] {
                    push!(self.$field);
                })*
            };
        }
        rows!(
            0 => mesh, 1 => line, 2 => provoking, 4 => clip_enable, 5 => clip_control, 6 => xfb, 7 => divisor,
            8 => eds2, 9 => eds3, 10 => vids, 11 => barycentric, 12 => shading_rate, 13 => interlock,
            14 => image_int64, 15 => ray_tracing, 16 => acceleration, 18 => ray_query,
        );
        push!(self.v13);
        push!(self.v12);
        push!(self.v11);
        push!(self.core);
        tail
    }

    /// The features granary knows that this (queried) chain reports.
    pub(crate) fn features(&self) -> DeviceFeatures {
        let mut c = *self;
        let mut out = DeviceFeatures::NONE;
        for (f, member) in MEMBERS {
            if *member(&mut c) == vk::TRUE {
                out = out.union(f);
            }
        }
        for (i, (_, _, bit)) in EXTENSIONS.iter().enumerate() {
            if let Some(bit) = bit.filter(|_| self.present[i]) {
                out = out.union(bit);
            }
        }
        if self.eds3_members() != 0 {
            out = out.union(DeviceFeatures::EXTENDED_DYNAMIC_STATE3);
        }
        out
    }

    /// The `VK_EXT_extended_dynamic_state3` members of [`EDS3_MEMBERS`] this (queried) chain
    /// reports, as a bit set by member index.
    pub(crate) fn eds3_members(&self) -> u32 {
        let mut eds3 = self.eds3;
        EDS3_MEMBERS
            .iter()
            .filter(|(i, _, _)| self.present[9] && eds3_member(&mut eds3, *i).is_some_and(|b| *b == vk::TRUE))
            .fold(0, |m, (i, _, _)| m | (1 << i))
    }

    /// The chain that enables exactly `f` (with `eds3` members where `f` has
    /// `EXTENDED_DYNAMIC_STATE3`) and Vulkan 1.3 `dynamicRendering`; extension structures are
    /// linked only for the extensions `f` needs ([`extensions_for`]).
    pub(crate) fn enabling(f: DeviceFeatures, eds3: u32) -> FeatureChain {
        let mut c = FeatureChain::default();
        for (i, (_, bits, _)) in EXTENSIONS.iter().enumerate() {
            c.present[i] = !f.intersection(*bits).is_empty();
        }
        for (bit, member) in MEMBERS {
            *member(&mut c) = vk::Bool32::from(f.contains(bit));
        }
        c.v13.dynamic_rendering = vk::TRUE;
        // Required of every Vulkan 1.3 device, like dynamic rendering; SPIR-V with the
        // `LocalSizeId` execution mode needs it (VUID-RuntimeSpirv-LocalSizeId-06434).
        c.v13.maintenance4 = vk::TRUE;
        if f.contains(DeviceFeatures::EXTENDED_DYNAMIC_STATE3) {
            for (i, _, _) in EDS3_MEMBERS {
                if eds3 & (1 << i) != 0 {
                    if let Some(m) = eds3_member(&mut c.eds3, i) {
                        *m = vk::TRUE;
                    }
                }
            }
        }
        c
    }
}

/// What a native pipeline needs of the device beyond its enabled core features: a feature,
/// an extension (enabled when any feature of its mask is), or a member of
/// `VK_EXT_extended_dynamic_state3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// A feature (bit) of [`DeviceFeatures`].
    Feature(DeviceFeatures),
    /// The extension named, enabled when any feature of the mask is.
    Extension(DeviceFeatures, &'static str),
    /// An [`EDS3_MEMBERS`] member (index, name).
    Eds3(u32, &'static str),
    /// Any one of the features of the mask (a SPIR-V capability several features allow).
    AnyOf(DeviceFeatures),
    /// A device extension granary never enables, with what to do instead: the module is
    /// refused on every device ([`NEVER_ENABLED`]).
    Never(&'static str, &'static str),
}

/// A row of [`NEVER_ENABLED`]: the SPIR-V extension, the capability (number and name) that
/// also declares it, the device extension, and what to do instead.
type NeverRow = (&'static str, Option<(u32, &'static str)>, &'static str, &'static str);

/// SPIR-V declarations (`OpExtension` names and `OpCapability` numbers) whose device extension
/// granary never enables, the extension, and what to do instead. `SPV_NV_ray_tracing`
/// (`RayTracingNV`, 5340) needs `VK_NV_ray_tracing`: its shaders bind acceleration structures
/// as `VK_DESCRIPTOR_TYPE_ACCELERATION_STRUCTURE_NV`, while granary creates ray-tracing
/// pipelines through `VK_KHR_ray_tracing_pipeline` with KHR acceleration structures (such a
/// module reaching `vkCreateRayTracingPipelinesKHR` is `VUID-VkShaderModuleCreateInfo-pCode-08742`
/// and `VUID-VkRayTracingPipelineCreateInfoKHR-layout-07990`).
pub(crate) const NEVER_ENABLED: [NeverRow; 1] = [(
    "SPV_NV_ray_tracing",
    Some((5340, "RayTracingNV")),
    "VK_NV_ray_tracing",
    "granary creates ray-tracing pipelines through VK_KHR_ray_tracing_pipeline; compile the shader for \
     SPV_KHR_ray_tracing (DXC: -fspv-extension=SPV_KHR_ray_tracing; glslang: GL_EXT_ray_tracing)",
)];

/// What one dynamic state needs (`Ok(None)`: nothing beyond Vulkan 1.3), or why granary does
/// not take it.
fn dynamic_state_need(d: u32) -> Result<Option<Need>, String> {
    let v = vk::DynamicState::from_raw(d as i32);
    type D = vk::DynamicState;
    let core = [
        D::VIEWPORT,
        D::SCISSOR,
        D::LINE_WIDTH,
        D::DEPTH_BIAS,
        D::BLEND_CONSTANTS,
        D::DEPTH_BOUNDS,
        D::STENCIL_COMPARE_MASK,
        D::STENCIL_WRITE_MASK,
        D::STENCIL_REFERENCE,
        D::CULL_MODE,
        D::FRONT_FACE,
        D::PRIMITIVE_TOPOLOGY,
        D::VIEWPORT_WITH_COUNT,
        D::SCISSOR_WITH_COUNT,
        D::VERTEX_INPUT_BINDING_STRIDE,
        D::DEPTH_TEST_ENABLE,
        D::DEPTH_WRITE_ENABLE,
        D::DEPTH_COMPARE_OP,
        D::DEPTH_BOUNDS_TEST_ENABLE,
        D::STENCIL_TEST_ENABLE,
        D::STENCIL_OP,
        D::RASTERIZER_DISCARD_ENABLE,
        D::DEPTH_BIAS_ENABLE,
        D::PRIMITIVE_RESTART_ENABLE,
    ];
    if core.contains(&v) {
        return Ok(None);
    }
    Ok(Some(match v {
        D::PATCH_CONTROL_POINTS_EXT => Need::Feature(DeviceFeatures::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS),
        D::LOGIC_OP_EXT => Need::Feature(DeviceFeatures::EXTENDED_DYNAMIC_STATE2_LOGIC_OP),
        D::VERTEX_INPUT_EXT => Need::Feature(DeviceFeatures::VERTEX_INPUT_DYNAMIC_STATE),
        D::LINE_STIPPLE => Need::Extension(LINE_FEATURES, "VK_KHR_line_rasterization"),
        _ => match EDS3_MEMBERS.iter().find(|(_, _, s)| *s == v) {
            Some((i, name, _)) => Need::Eds3(*i, name),
            None => return Err(format!("dynamic state {d} ({v:?}) is not one granary creates pipelines with")),
        },
    }))
}

/// The extended-dynamic-state-3 members whose state another extension defines, with it.
const EDS3_EXTENSION: [(u32, DeviceFeatures, &str); 8] = [
    (
        11,
        DeviceFeatures(DeviceFeatures::TRANSFORM_FEEDBACK.0 | DeviceFeatures::GEOMETRY_STREAMS.0),
        "VK_EXT_transform_feedback",
    ),
    (12, DeviceFeatures::CONSERVATIVE_RASTERIZATION, "VK_EXT_conservative_rasterization"),
    (13, DeviceFeatures::CONSERVATIVE_RASTERIZATION, "VK_EXT_conservative_rasterization"),
    (14, DeviceFeatures::DEPTH_CLIP_ENABLE, "VK_EXT_depth_clip_enable"),
    (17, DeviceFeatures::PROVOKING_VERTEX_LAST, "VK_EXT_provoking_vertex"),
    (18, LINE_FEATURES, "VK_KHR_line_rasterization"),
    (19, LINE_FEATURES, "VK_KHR_line_rasterization"),
    (20, DeviceFeatures::DEPTH_CLIP_CONTROL, "VK_EXT_depth_clip_control"),
];

/// Whether dual-source blending is used by a blend factor.
fn dual_source(f: u32) -> bool {
    (15..=18).contains(&f)
}

/// Everything a native pipeline of `state` with stages `stages` needs of the device (features,
/// extensions, dynamic-state members), each with the field that needs it; an `Err` for state
/// granary does not create pipelines with (an unknown dynamic state). The SPIR-V modules'
/// own needs are [`required_by_spirv`]'s.
pub(crate) fn required_native(state: &NativePipeline, stages: &[ShaderStage]) -> Result<Vec<(Need, String)>, String> {
    use DeviceFeatures as F;
    let mut out: Vec<(Need, String)> = Vec::new();
    let mut need = |f: F, why: String| out.push((Need::Feature(f), why));
    for (i, s) in stages.iter().enumerate() {
        let f = match s {
            ShaderStage::TessellationControl | ShaderStage::TessellationEvaluation => Some(F::TESSELLATION_SHADER),
            ShaderStage::Geometry => Some(F::GEOMETRY_SHADER),
            ShaderStage::Task => Some(F::TASK_SHADER),
            ShaderStage::Mesh => Some(F::MESH_SHADER),
            // Ray-tracing stages: the pipeline's own need below (they come only with it).
            _ => None,
        };
        if let Some(f) = f {
            need(f, format!("stages[{i}] is a {s} stage"));
        }
    }
    if state.ray_tracing.is_some() {
        need(F::RAY_TRACING_PIPELINE, "the pipeline is a ray-tracing pipeline".into());
        // VK_PIPELINE_CREATE_RAY_TRACING_SKIP_TRIANGLES_BIT_KHR, _SKIP_AABBS_BIT_KHR.
        for (bit, name) in [(0x1000, "RAY_TRACING_SKIP_TRIANGLES"), (0x2000, "RAY_TRACING_SKIP_AABBS")] {
            if state.flags & bit != 0 {
                need(F::RAY_TRAVERSAL_PRIMITIVE_CULLING, format!("flags has {name}"));
            }
        }
    }
    // VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT, _EARLY_RETURN_ON_FAILURE_BIT.
    for (bit, name) in [(0x100, "FAIL_ON_PIPELINE_COMPILE_REQUIRED"), (0x200, "EARLY_RETURN_ON_FAILURE")] {
        if state.flags & bit != 0 {
            need(F::PIPELINE_CREATION_CACHE_CONTROL, format!("flags has {name}"));
        }
    }
    for (i, s) in state.stages.iter().enumerate() {
        if let Some(n) = s.required_subgroup_size {
            need(F::SUBGROUP_SIZE_CONTROL, format!("stages[{i}].requiredSubgroupSize is {n}"));
        }
        if s.flags & 0x1 != 0 {
            need(F::SUBGROUP_SIZE_CONTROL, format!("stages[{i}].flags has ALLOW_VARYING_SUBGROUP_SIZE"));
        }
        if s.flags & 0x2 != 0 {
            need(F::COMPUTE_FULL_SUBGROUPS, format!("stages[{i}].flags has REQUIRE_FULL_SUBGROUPS"));
        }
    }
    for (si, set) in state.layout.set_layouts.iter().enumerate() {
        for (bi, b) in set.bindings.iter().enumerate() {
            let at = format!("layout.setLayouts[{si}].bindings[{bi}]");
            let flag = |bit: u32, f: F, name: &str, need: &mut dyn FnMut(F, String)| {
                if b.binding_flags & bit != 0 {
                    need(f, format!("{at}.bindingFlags has {name}"));
                }
            };
            if b.binding_flags & 0x1 != 0 {
                let f = match b.descriptor_type {
                    0..=2 => Some(F::DESCRIPTOR_BINDING_SAMPLED_IMAGE_UPDATE_AFTER_BIND),
                    3 => Some(F::DESCRIPTOR_BINDING_STORAGE_IMAGE_UPDATE_AFTER_BIND),
                    4 => Some(F::DESCRIPTOR_BINDING_UNIFORM_TEXEL_BUFFER_UPDATE_AFTER_BIND),
                    5 => Some(F::DESCRIPTOR_BINDING_STORAGE_TEXEL_BUFFER_UPDATE_AFTER_BIND),
                    6 => Some(F::DESCRIPTOR_BINDING_UNIFORM_BUFFER_UPDATE_AFTER_BIND),
                    7 => Some(F::DESCRIPTOR_BINDING_STORAGE_BUFFER_UPDATE_AFTER_BIND),
                    _ => None,
                };
                match f {
                    Some(f) => need(f, format!("{at}.bindingFlags has UPDATE_AFTER_BIND")),
                    None => {
                        return Err(format!(
                            "{at}: UPDATE_AFTER_BIND on descriptor type {} is not allowed",
                            b.descriptor_type
                        ))
                    }
                }
            }
            match b.descriptor_type {
                1000138000 => need(F::INLINE_UNIFORM_BLOCK, format!("{at}.descriptorType is INLINE_UNIFORM_BLOCK")),
                1000150000 => {
                    need(F::ACCELERATION_STRUCTURE, format!("{at}.descriptorType is ACCELERATION_STRUCTURE_KHR"))
                }
                _ => {}
            }
            flag(0x2, F::DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING, "UPDATE_UNUSED_WHILE_PENDING", &mut need);
            flag(0x4, F::DESCRIPTOR_BINDING_PARTIALLY_BOUND, "PARTIALLY_BOUND", &mut need);
            flag(0x8, F::DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT, "VARIABLE_DESCRIPTOR_COUNT", &mut need);
            for (k, s) in b.immutable_samplers.iter().enumerate() {
                let at = format!("{at}.pImmutableSamplers[{k}]");
                if s.anisotropy_enable {
                    need(F::SAMPLER_ANISOTROPY, format!("{at}.anisotropyEnable is true"));
                }
                if s.reduction_mode.is_some_and(|m| m != 0) {
                    need(F::SAMPLER_FILTER_MINMAX, format!("{at} has reduction mode {:?}", s.reduction_mode));
                }
                if [s.address_mode_u, s.address_mode_v, s.address_mode_w].contains(&4) {
                    need(F::SAMPLER_MIRROR_CLAMP_TO_EDGE, format!("{at} uses MIRROR_CLAMP_TO_EDGE"));
                }
            }
        }
    }
    let Some(g) = &state.graphics else { return Ok(out) };
    let dynamic = |d: vk::DynamicState| g.dynamic_states.contains(&(d.as_raw() as u32));
    if let Some(v) = &g.vertex_input_state {
        for (i, d) in v.divisors.iter().enumerate() {
            out.push((
                Need::Extension(
                    F(F::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR.0 | F::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR.0),
                    "VK_KHR_vertex_attribute_divisor",
                ),
                format!("vertexInputState.divisors[{i}] is chained"),
            ));
            let f = if d.divisor == 0 {
                F::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR
            } else {
                F::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR
            };
            if d.divisor != 1 {
                out.push((Need::Feature(f), format!("vertexInputState.divisors[{i}].divisor is {}", d.divisor)));
            }
        }
    }
    let mut need = |f: F, why: String| out.push((Need::Feature(f), why));
    if let Some(v) = &g.viewport_state {
        if v.viewport_count > 1 || v.scissor_count > 1 {
            need(
                F::MULTI_VIEWPORT,
                format!("viewportState has {} viewports, {} scissors", v.viewport_count, v.scissor_count),
            );
        }
        if let Some(n) = v.negative_one_to_one {
            need(F::DEPTH_CLIP_CONTROL, format!("viewportState.negativeOneToOne is chained ({n})"));
        }
    }
    if let Some(r) = &g.rasterization_state {
        if r.depth_clamp_enable {
            need(F::DEPTH_CLAMP, "rasterizationState.depthClampEnable is true".into());
        }
        if r.polygon_mode != 0 {
            need(F::FILL_MODE_NON_SOLID, format!("rasterizationState.polygonMode is {}", r.polygon_mode));
        }
        if r.depth_bias_clamp != 0.0 && !dynamic(vk::DynamicState::DEPTH_BIAS) {
            need(F::DEPTH_BIAS_CLAMP, format!("rasterizationState.depthBiasClamp is {}", r.depth_bias_clamp));
        }
        if r.line_width != 1.0 && !dynamic(vk::DynamicState::LINE_WIDTH) {
            need(F::WIDE_LINES, format!("rasterizationState.lineWidth is {}", r.line_width));
        }
        if let Some(l) = &r.line {
            let f = match (l.line_rasterization_mode, l.stippled_line_enable) {
                (0, true) | (1, true) => Some(F::STIPPLED_RECTANGULAR_LINES),
                (1, false) => Some(F::RECTANGULAR_LINES),
                (2, false) => Some(F::BRESENHAM_LINES),
                (2, true) => Some(F::STIPPLED_BRESENHAM_LINES),
                (3, false) => Some(F::SMOOTH_LINES),
                (3, true) => Some(F::STIPPLED_SMOOTH_LINES),
                _ => None,
            };
            let why = format!(
                "rasterizationState.line: lineRasterizationMode {}, stippledLineEnable {}",
                l.line_rasterization_mode, l.stippled_line_enable
            );
            match f {
                Some(f) => need(f, why),
                None => out.push((Need::Extension(LINE_FEATURES, "VK_KHR_line_rasterization"), why)),
            }
        }
        let mut need = |f: F, why: String| out.push((Need::Feature(f), why));
        match r.provoking_vertex_mode {
            Some(1) => need(F::PROVOKING_VERTEX_LAST, "rasterizationState.provokingVertexMode is LAST_VERTEX".into()),
            Some(m) => out.push((
                Need::Extension(F::PROVOKING_VERTEX_LAST, "VK_EXT_provoking_vertex"),
                format!("rasterizationState.provokingVertexMode is chained ({m})"),
            )),
            None => {}
        }
        let mut need = |f: F, why: String| out.push((Need::Feature(f), why));
        if r.conservative.is_some() {
            need(F::CONSERVATIVE_RASTERIZATION, "rasterizationState.conservative is chained".into());
        }
        if let Some(e) = r.depth_clip_enable {
            need(F::DEPTH_CLIP_ENABLE, format!("rasterizationState.depthClipEnable is chained ({e})"));
        }
        if let Some(s) = r.rasterization_stream {
            need(F::TRANSFORM_FEEDBACK, format!("rasterizationState.rasterizationStream is chained ({s})"));
            if s != 0 {
                need(F::GEOMETRY_STREAMS, format!("rasterizationState.rasterizationStream is {s}"));
            }
        }
    }
    let mut need = |f: F, why: String| out.push((Need::Feature(f), why));
    if let Some(m) = &g.multisample_state {
        if m.sample_shading_enable {
            need(F::SAMPLE_RATE_SHADING, "multisampleState.sampleShadingEnable is true".into());
        }
        if m.alpha_to_one_enable {
            need(F::ALPHA_TO_ONE, "multisampleState.alphaToOneEnable is true".into());
        }
    }
    if let Some(d) = &g.depth_stencil_state {
        if d.depth_bounds_test_enable {
            need(F::DEPTH_BOUNDS, "depthStencilState.depthBoundsTestEnable is true".into());
        }
    }
    if let Some(c) = &g.color_blend_state {
        if c.logic_op_enable {
            need(F::LOGIC_OP, "colorBlendState.logicOpEnable is true".into());
        }
        if let Some(first) = c.attachments.first() {
            if c.attachments.iter().any(|a| a != first) {
                need(F::INDEPENDENT_BLEND, "colorBlendState.attachments differ".into());
            }
        }
        for (i, a) in c.attachments.iter().enumerate() {
            let factors = [
                a.src_color_blend_factor,
                a.dst_color_blend_factor,
                a.src_alpha_blend_factor,
                a.dst_alpha_blend_factor,
            ];
            if a.blend_enable && factors.iter().any(|f| dual_source(*f)) {
                need(F::DUAL_SRC_BLEND, format!("colorBlendState.attachments[{i}] blends with a second source"));
            }
        }
    }
    if let Some(rp) = &g.render_pass {
        if let Some(i) = rp.subpasses.iter().position(|s| s.view_mask != 0) {
            need(F::MULTIVIEW, format!("renderPass.subpasses[{i}].viewMask is {:#x}", rp.subpasses[i].view_mask));
        }
    }
    if let Some(r) = g.rendering.as_ref().filter(|r| r.view_mask != 0) {
        need(F::MULTIVIEW, format!("rendering.viewMask is {:#x}", r.view_mask));
    }
    for (i, d) in g.dynamic_states.iter().enumerate() {
        let why = || format!("dynamicStates[{i}] is {:?}", vk::DynamicState::from_raw(*d as i32));
        if let Some(n) = dynamic_state_need(*d)? {
            out.push((n, why()));
            // A member whose state belongs to another extension needs that one too.
            if let Need::Eds3(m, _) = n {
                if let Some((_, mask, ext)) = EDS3_EXTENSION.iter().find(|(x, _, _)| *x == m) {
                    out.push((Need::Extension(*mask, ext), why()));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_name_the_features_they_need() {
        let mut w: Vec<u32> = vec![0x0723_0203, 0x0001_0000, 0, 100, 0];
        for cap in [1u32, 32, 4439, 4427, 9999] {
            w.extend([(2 << 16) | 17, cap]);
        }
        w.extend([(3 << 16) | 14, 0, 1]); // OpMemoryModel
        w.extend([(2 << 16) | 17, 10]); // still the preamble: read
        w.extend([(5 << 16) | 54, 1, 2, 0, 3]); // OpFunction: the preamble is over
        w.extend([(2 << 16) | 17, 11]); // never read
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        let feature = |n: Need| match n {
            Need::Feature(f) => f,
            other => panic!("{other:?}"),
        };
        let needs: Vec<DeviceFeatures> = required_by_spirv(&bytes).into_iter().map(|(n, _)| feature(n)).collect();
        assert_eq!(
            needs,
            [
                DeviceFeatures::SHADER_CLIP_DISTANCE,
                DeviceFeatures::MULTIVIEW,
                DeviceFeatures::SHADER_DRAW_PARAMETERS,
                DeviceFeatures::SHADER_FLOAT64
            ]
        );
        assert!(required_by_spirv(&bytes)[0].1.contains("ClipDistance"));
        assert!(required_by_spirv(b"not spirv at all").is_empty());
        assert!(required_by_spirv(&bytes[..22]).is_empty(), "a cut module needs nothing it did not say");
    }

    #[test]
    fn nv_ray_tracing_modules_are_refused_on_every_device_saying_what_to_do() {
        // The preamble of DXC's raytracingbasic/raygen.rgen in ../shared/corpora/willems:
        // `OpCapability RayTracingNV`, `OpExtension "SPV_NV_ray_tracing"`.
        let mut w: Vec<u32> = vec![0x0723_0203, 0x0001_0000, 0, 216, 0, (2 << 16) | 17, 5340];
        let ext = b"SPV_NV_ray_tracing\0\0";
        w.push(((1 + ext.len() as u32 / 4) << 16) | 10);
        w.extend(ext.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        w.extend([(3 << 16) | 14, 0, 1]);
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        let needs = required_by_spirv(&bytes);
        let never: Vec<&str> = needs
            .iter()
            .filter_map(|(n, why)| matches!(n, Need::Never("VK_NV_ray_tracing", _)).then_some(why.as_str()))
            .collect();
        assert_eq!(
            never,
            ["the SPIR-V declares capability RayTracingNV", "the SPIR-V declares extension SPV_NV_ray_tracing"]
        );
        let e = never_enabled(&needs).unwrap_err();
        assert!(e.starts_with("needs the VK_NV_ray_tracing extension (the SPIR-V declares capability RayTracingNV)"));
        assert!(
            e.contains("which granary does not enable") && e.contains("-fspv-extension=SPV_KHR_ray_tracing"),
            "{e}"
        );
        // A KHR module needs no such thing.
        assert!(never_enabled(&[]).is_ok());
    }

    #[test]
    fn real_modules_capabilities_and_extensions_need_their_features() {
        // What the DXC and slangc samples declare (docs/BENCHMARKS.md, "Real Vulkan input").
        let mut w: Vec<u32> = vec![0x0723_0203, 0x0001_0300, 0, 100, 0];
        for cap in [41u32, 5302, 5347, 5284, 12, 5254, 4422] {
            w.extend([(2 << 16) | 17, cap]);
        }
        let ext = b"SPV_KHR_fragment_shading_rate\0\0\0";
        w.push(((1 + ext.len() as u32 / 4) << 16) | 10);
        w.extend(ext.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        w.extend([(3 << 16) | 14, 0, 1]);
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        let needs: Vec<Need> = required_by_spirv(&bytes).into_iter().map(|(n, _)| n).collect();
        use DeviceFeatures as F;
        assert_eq!(
            needs,
            [
                Need::Feature(F::SHADER_RESOURCE_RESIDENCY),
                Need::Feature(F::RUNTIME_DESCRIPTOR_ARRAY),
                Need::Feature(F::BUFFER_DEVICE_ADDRESS),
                Need::Feature(F::FRAGMENT_SHADER_BARYCENTRIC),
                Need::AnyOf(F(F::SHADER_BUFFER_INT64_ATOMICS.0 | F::SHADER_SHARED_INT64_ATOMICS.0)),
                Need::Feature(F::SHADER_OUTPUT_VIEWPORT_INDEX),
                Need::Feature(F::SHADER_OUTPUT_LAYER),
                Need::AnyOf(F(F::PIPELINE_FRAGMENT_SHADING_RATE.0
                    | F::PRIMITIVE_FRAGMENT_SHADING_RATE.0
                    | F::ATTACHMENT_FRAGMENT_SHADING_RATE.0)),
                Need::Extension(
                    F(F::PIPELINE_FRAGMENT_SHADING_RATE.0
                        | F::PRIMITIVE_FRAGMENT_SHADING_RATE.0
                        | F::ATTACHMENT_FRAGMENT_SHADING_RATE.0),
                    "VK_KHR_fragment_shading_rate"
                ),
            ]
        );
        // Every SPIR-V extension names a device extension granary enables.
        for (spv, ext) in SPIRV_EXTENSIONS {
            assert!(EXTENSIONS.iter().any(|(n, _, _)| n.contains(&ext)), "{spv} → {ext}");
        }
    }

    #[test]
    fn every_known_feature_maps_both_ways() {
        // The core and Vulkan 1.1 features through `to_vk`/`from_vk`; every feature (the
        // native pipelines' too) through the chain that enables it.
        for (i, (f, name)) in DeviceFeatures::ALL.iter().enumerate() {
            let c = FeatureChain::enabling(*f, 0);
            let back = from_vk(&c.core.features, &c.v11);
            assert!(back == *f || (i >= 28 && back.is_empty()), "{name}: {back}");
        }
        for (f, name) in DeviceFeatures::ALL {
            assert_eq!(FeatureChain::enabling(f, u32::MAX).features(), f, "{name}");
        }
        let all = FeatureChain::enabling(DeviceFeatures::KNOWN, u32::MAX);
        assert_eq!(all.features(), DeviceFeatures::KNOWN);
        assert_eq!(all.eds3_members().count_ones() as usize, EDS3_MEMBERS.len());
        assert_eq!(FeatureChain::enabling(DeviceFeatures::NONE, u32::MAX).features(), DeviceFeatures::NONE);
        let core = DeviceFeatures((1 << 28) - 1);
        let c = FeatureChain::enabling(core, 0);
        assert_eq!(from_vk(&c.core.features, &c.v11), core);
        // Every bit is a structure member or an extension's own bit, exactly once.
        for (f, name) in DeviceFeatures::ALL {
            let members = MEMBERS.iter().filter(|(m, _)| *m == f).count();
            let rows = EXTENSIONS.iter().filter(|(_, _, b)| *b == Some(f)).count();
            let eds3 = usize::from(f == DeviceFeatures::EXTENDED_DYNAMIC_STATE3);
            assert_eq!(members + rows + eds3, 1, "{name}");
        }
        let none = (vk::PhysicalDeviceFeatures::default(), vk::PhysicalDeviceVulkan11Features::default());
        assert_eq!(from_vk(&none.0, &none.1), DeviceFeatures::NONE);
    }

    #[test]
    fn a_native_state_needs_what_each_of_its_fields_says() {
        let full = crate::native::tests::full();
        let needs = required_native(&full, &[ShaderStage::Vertex, ShaderStage::Fragment]).expect("known state");
        let has = |f: DeviceFeatures| needs.iter().any(|(n, _)| *n == Need::Feature(f));
        for f in [
            DeviceFeatures::SUBGROUP_SIZE_CONTROL,
            DeviceFeatures::SAMPLER_ANISOTROPY,
            DeviceFeatures::SAMPLER_FILTER_MINMAX,
            DeviceFeatures::DESCRIPTOR_BINDING_PARTIALLY_BOUND,
            DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR,
            DeviceFeatures::DEPTH_CLIP_CONTROL,
            DeviceFeatures::DEPTH_CLAMP,
            DeviceFeatures::FILL_MODE_NON_SOLID,
            DeviceFeatures::DEPTH_BIAS_CLAMP,
            DeviceFeatures::STIPPLED_BRESENHAM_LINES,
            DeviceFeatures::PROVOKING_VERTEX_LAST,
            DeviceFeatures::CONSERVATIVE_RASTERIZATION,
            DeviceFeatures::DEPTH_CLIP_ENABLE,
            DeviceFeatures::TRANSFORM_FEEDBACK,
            DeviceFeatures::SAMPLE_RATE_SHADING,
            DeviceFeatures::ALPHA_TO_ONE,
            DeviceFeatures::DEPTH_BOUNDS,
            DeviceFeatures::LOGIC_OP,
            DeviceFeatures::MULTIVIEW,
        ] {
            assert!(has(f), "{f} not needed: {needs:?}");
        }
        // Each need names its field.
        let why = |f: DeviceFeatures| needs.iter().find(|(n, _)| *n == Need::Feature(f)).map(|(_, w)| w.clone());
        assert_eq!(why(DeviceFeatures::DEPTH_BIAS_CLAMP).as_deref(), Some("rasterizationState.depthBiasClamp is 0.5"));
        assert!(!has(DeviceFeatures::GEOMETRY_SHADER) && !has(DeviceFeatures::GEOMETRY_STREAMS));
        // Stages need their shader features; a plain compute state needs nothing.
        let stages = [ShaderStage::Vertex, ShaderStage::Geometry, ShaderStage::Mesh, ShaderStage::TessellationControl];
        let needs = required_native(&full, &stages).expect("known state");
        assert!(
            needs
                .iter()
                .any(|(n, w)| *n == Need::Feature(DeviceFeatures::GEOMETRY_SHADER)
                    && w == "stages[1] is a geometry stage")
        );
        assert!(needs.iter().any(|(n, _)| *n == Need::Feature(DeviceFeatures::MESH_SHADER)));
        assert!(needs.iter().any(|(n, _)| *n == Need::Feature(DeviceFeatures::TESSELLATION_SHADER)));
        let compute = NativePipeline::default();
        assert_eq!(required_native(&compute, &[ShaderStage::Compute]), Ok(vec![]));
        // Dynamic states: core ones need nothing, EDS3 members their member (and extension),
        // an unknown one is refused by number.
        let mut p = full.clone();
        let g = p.graphics.as_mut().unwrap();
        g.dynamic_states = vec![0, 1000267000, 1000455019];
        let needs = required_native(&p, &[ShaderStage::Vertex]).expect("known");
        assert!(needs.iter().any(|(n, _)| matches!(n, Need::Eds3(17, _))));
        assert!(needs.iter().any(|(n, _)| matches!(n, Need::Extension(_, "VK_EXT_provoking_vertex"))));
        p.graphics.as_mut().unwrap().dynamic_states = vec![1000099000];
        assert!(required_native(&p, &[ShaderStage::Vertex]).unwrap_err().contains("1000099000"));
    }

    #[test]
    fn extensions_follow_their_features() {
        let all = |_: &str| true;
        assert!(extensions_for(DeviceFeatures::NONE, &all).is_empty());
        assert_eq!(extensions_for(DeviceFeatures::BRESENHAM_LINES, &all), ["VK_KHR_line_rasterization"]);
        let ext_only = |n: &str| n == "VK_EXT_line_rasterization";
        assert_eq!(extensions_for(DeviceFeatures::BRESENHAM_LINES, &ext_only), ["VK_EXT_line_rasterization"]);
        assert_eq!(extensions_for(DeviceFeatures::KNOWN, &all).len(), EXTENSIONS.len());
    }
}
