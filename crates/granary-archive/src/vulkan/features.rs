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
    let on = |b: vk::Bool32, x: DeviceFeatures| if b == vk::TRUE { x } else { DeviceFeatures::NONE };
    [
        on(f.depth_bias_clamp, DeviceFeatures::DEPTH_BIAS_CLAMP),
        on(f.independent_blend, DeviceFeatures::INDEPENDENT_BLEND),
        on(f.vertex_pipeline_stores_and_atomics, DeviceFeatures::VERTEX_PIPELINE_STORES_AND_ATOMICS),
        on(f.fragment_stores_and_atomics, DeviceFeatures::FRAGMENT_STORES_AND_ATOMICS),
        on(f.sample_rate_shading, DeviceFeatures::SAMPLE_RATE_SHADING),
        on(f.depth_clamp, DeviceFeatures::DEPTH_CLAMP),
        on(f.fill_mode_non_solid, DeviceFeatures::FILL_MODE_NON_SOLID),
        on(f.wide_lines, DeviceFeatures::WIDE_LINES),
        on(f.geometry_shader, DeviceFeatures::GEOMETRY_SHADER),
        on(f.tessellation_shader, DeviceFeatures::TESSELLATION_SHADER),
        on(f.dual_src_blend, DeviceFeatures::DUAL_SRC_BLEND),
        on(f.logic_op, DeviceFeatures::LOGIC_OP),
        on(f.depth_bounds, DeviceFeatures::DEPTH_BOUNDS),
        on(f.multi_viewport, DeviceFeatures::MULTI_VIEWPORT),
        on(f.shader_storage_image_read_without_format, DeviceFeatures::STORAGE_IMAGE_READ_WITHOUT_FORMAT),
        on(f.shader_storage_image_write_without_format, DeviceFeatures::STORAGE_IMAGE_WRITE_WITHOUT_FORMAT),
        on(f.shader_clip_distance, DeviceFeatures::SHADER_CLIP_DISTANCE),
        on(f.shader_cull_distance, DeviceFeatures::SHADER_CULL_DISTANCE),
        on(f.shader_float64, DeviceFeatures::SHADER_FLOAT64),
        on(f.shader_int64, DeviceFeatures::SHADER_INT64),
        on(f.shader_int16, DeviceFeatures::SHADER_INT16),
        on(f.image_cube_array, DeviceFeatures::IMAGE_CUBE_ARRAY),
        on(f.shader_image_gather_extended, DeviceFeatures::SHADER_IMAGE_GATHER_EXTENDED),
        on(f.shader_storage_image_multisample, DeviceFeatures::SHADER_STORAGE_IMAGE_MULTISAMPLE),
        on(f.shader_storage_image_extended_formats, DeviceFeatures::SHADER_STORAGE_IMAGE_EXTENDED_FORMATS),
        on(f.shader_resource_min_lod, DeviceFeatures::SHADER_RESOURCE_MIN_LOD),
        on(v11.multiview, DeviceFeatures::MULTIVIEW),
        on(v11.shader_draw_parameters, DeviceFeatures::SHADER_DRAW_PARAMETERS),
    ]
    .into_iter()
    .fold(DeviceFeatures::NONE, DeviceFeatures::union)
}

/// The `VkPhysicalDeviceVulkan11Features` that enables exactly `f`'s Vulkan 1.1 members.
pub(crate) fn to_vk11(f: DeviceFeatures) -> vk::PhysicalDeviceVulkan11Features {
    vk::PhysicalDeviceVulkan11Features {
        multiview: vk::Bool32::from(f.contains(DeviceFeatures::MULTIVIEW)),
        shader_draw_parameters: vk::Bool32::from(f.contains(DeviceFeatures::SHADER_DRAW_PARAMETERS)),
        ..Default::default()
    }
}

/// The `VkPhysicalDeviceFeatures` that enables exactly `f`'s core members (every other false).
pub(crate) fn to_vk(f: DeviceFeatures) -> vk::PhysicalDeviceFeatures {
    let b = |x: DeviceFeatures| vk::Bool32::from(f.contains(x));
    vk::PhysicalDeviceFeatures {
        depth_bias_clamp: b(DeviceFeatures::DEPTH_BIAS_CLAMP),
        independent_blend: b(DeviceFeatures::INDEPENDENT_BLEND),
        vertex_pipeline_stores_and_atomics: b(DeviceFeatures::VERTEX_PIPELINE_STORES_AND_ATOMICS),
        fragment_stores_and_atomics: b(DeviceFeatures::FRAGMENT_STORES_AND_ATOMICS),
        sample_rate_shading: b(DeviceFeatures::SAMPLE_RATE_SHADING),
        depth_clamp: b(DeviceFeatures::DEPTH_CLAMP),
        fill_mode_non_solid: b(DeviceFeatures::FILL_MODE_NON_SOLID),
        wide_lines: b(DeviceFeatures::WIDE_LINES),
        geometry_shader: b(DeviceFeatures::GEOMETRY_SHADER),
        tessellation_shader: b(DeviceFeatures::TESSELLATION_SHADER),
        dual_src_blend: b(DeviceFeatures::DUAL_SRC_BLEND),
        logic_op: b(DeviceFeatures::LOGIC_OP),
        depth_bounds: b(DeviceFeatures::DEPTH_BOUNDS),
        multi_viewport: b(DeviceFeatures::MULTI_VIEWPORT),
        shader_storage_image_read_without_format: b(DeviceFeatures::STORAGE_IMAGE_READ_WITHOUT_FORMAT),
        shader_storage_image_write_without_format: b(DeviceFeatures::STORAGE_IMAGE_WRITE_WITHOUT_FORMAT),
        shader_clip_distance: b(DeviceFeatures::SHADER_CLIP_DISTANCE),
        shader_cull_distance: b(DeviceFeatures::SHADER_CULL_DISTANCE),
        shader_float64: b(DeviceFeatures::SHADER_FLOAT64),
        shader_int64: b(DeviceFeatures::SHADER_INT64),
        shader_int16: b(DeviceFeatures::SHADER_INT16),
        image_cube_array: b(DeviceFeatures::IMAGE_CUBE_ARRAY),
        shader_image_gather_extended: b(DeviceFeatures::SHADER_IMAGE_GATHER_EXTENDED),
        shader_storage_image_multisample: b(DeviceFeatures::SHADER_STORAGE_IMAGE_MULTISAMPLE),
        shader_storage_image_extended_formats: b(DeviceFeatures::SHADER_STORAGE_IMAGE_EXTENDED_FORMATS),
        shader_resource_min_lod: b(DeviceFeatures::SHADER_RESOURCE_MIN_LOD),
        ..Default::default()
    }
}

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
/// appendix), by capability number, with the capability's name.
const CAPABILITY_FEATURES: [(u32, &str, DeviceFeatures); 24] = [
    (2, "Geometry", DeviceFeatures::GEOMETRY_SHADER),
    (3, "Tessellation", DeviceFeatures::TESSELLATION_SHADER),
    (10, "Float64", DeviceFeatures::SHADER_FLOAT64),
    (11, "Int64", DeviceFeatures::SHADER_INT64),
    (22, "Int16", DeviceFeatures::SHADER_INT16),
    (25, "ImageGatherExtended", DeviceFeatures::SHADER_IMAGE_GATHER_EXTENDED),
    (27, "StorageImageMultisample", DeviceFeatures::SHADER_STORAGE_IMAGE_MULTISAMPLE),
    (32, "ClipDistance", DeviceFeatures::SHADER_CLIP_DISTANCE),
    (33, "CullDistance", DeviceFeatures::SHADER_CULL_DISTANCE),
    (34, "ImageCubeArray", DeviceFeatures::IMAGE_CUBE_ARRAY),
    (35, "SampleRateShading", DeviceFeatures::SAMPLE_RATE_SHADING),
    (42, "MinLod", DeviceFeatures::SHADER_RESOURCE_MIN_LOD),
    (45, "SampledCubeArray", DeviceFeatures::IMAGE_CUBE_ARRAY),
    (48, "ImageMSArray", DeviceFeatures::SHADER_STORAGE_IMAGE_MULTISAMPLE),
    (49, "StorageImageExtendedFormats", DeviceFeatures::SHADER_STORAGE_IMAGE_EXTENDED_FORMATS),
    (52, "InterpolationFunction", DeviceFeatures::SAMPLE_RATE_SHADING),
    (55, "StorageImageReadWithoutFormat", DeviceFeatures::STORAGE_IMAGE_READ_WITHOUT_FORMAT),
    (56, "StorageImageWriteWithoutFormat", DeviceFeatures::STORAGE_IMAGE_WRITE_WITHOUT_FORMAT),
    (53, "TransformFeedback", DeviceFeatures::TRANSFORM_FEEDBACK),
    (54, "GeometryStreams", DeviceFeatures::GEOMETRY_STREAMS),
    (57, "MultiViewport", DeviceFeatures::MULTI_VIEWPORT),
    (4427, "DrawParameters", DeviceFeatures::SHADER_DRAW_PARAMETERS),
    (4439, "MultiView", DeviceFeatures::MULTIVIEW),
    (5283, "MeshShadingEXT", DeviceFeatures::MESH_SHADER),
];

/// The features the `OpCapability` declarations of a SPIR-V module need (as far as granary
/// knows them), each with the capability that needs it. Reads only the module's preamble
/// (capabilities come first); bytes that are not SPIR-V need nothing here (the module's own
/// checks refuse them).
pub(crate) fn required_by_spirv(spirv: &[u8]) -> Vec<(DeviceFeatures, String)> {
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
                if let Some(cap) = word(i + 1) {
                    if let Some((_, name, f)) = CAPABILITY_FEATURES.iter().find(|(c, _, _)| *c == cap) {
                        out.push((*f, format!("the SPIR-V declares capability {name}")));
                    }
                }
            }
            // OpExtension, OpExtInstImport, OpMemoryModel: still the preamble.
            10 | 11 | 14 => {}
            _ => break,
        }
        if len == 0 {
            break;
        }
        i += len;
    }
    out
}

/// The device extensions granary enables for native pipelines, each with the features whose
/// enabling needs it (an extension is enabled exactly when one of its features is: a
/// feature-less extension stands for itself by a bit of its own). Where a `KHR` and an `EXT`
/// name exist (same structures and values), the `KHR` one is preferred.
pub(crate) const EXTENSIONS: [(&[&str], DeviceFeatures); 11] = [
    (&["VK_EXT_mesh_shader"], DeviceFeatures(DeviceFeatures::TASK_SHADER.0 | DeviceFeatures::MESH_SHADER.0)),
    (
        &["VK_KHR_line_rasterization", "VK_EXT_line_rasterization"],
        DeviceFeatures(
            DeviceFeatures::RECTANGULAR_LINES.0
                | DeviceFeatures::BRESENHAM_LINES.0
                | DeviceFeatures::SMOOTH_LINES.0
                | DeviceFeatures::STIPPLED_RECTANGULAR_LINES.0
                | DeviceFeatures::STIPPLED_BRESENHAM_LINES.0
                | DeviceFeatures::STIPPLED_SMOOTH_LINES.0,
        ),
    ),
    (&["VK_EXT_provoking_vertex"], DeviceFeatures::PROVOKING_VERTEX_LAST),
    (&["VK_EXT_conservative_rasterization"], DeviceFeatures::CONSERVATIVE_RASTERIZATION),
    (&["VK_EXT_depth_clip_enable"], DeviceFeatures::DEPTH_CLIP_ENABLE),
    (&["VK_EXT_depth_clip_control"], DeviceFeatures::DEPTH_CLIP_CONTROL),
    (
        &["VK_EXT_transform_feedback"],
        DeviceFeatures(DeviceFeatures::GEOMETRY_STREAMS.0 | DeviceFeatures::TRANSFORM_FEEDBACK.0),
    ),
    (
        &["VK_KHR_vertex_attribute_divisor", "VK_EXT_vertex_attribute_divisor"],
        DeviceFeatures(
            DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR.0
                | DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR.0,
        ),
    ),
    (
        &["VK_EXT_extended_dynamic_state2"],
        DeviceFeatures(
            DeviceFeatures::EXTENDED_DYNAMIC_STATE2_LOGIC_OP.0
                | DeviceFeatures::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS.0,
        ),
    ),
    (&["VK_EXT_extended_dynamic_state3"], DeviceFeatures::EXTENDED_DYNAMIC_STATE3),
    (&["VK_EXT_vertex_input_dynamic_state"], DeviceFeatures::VERTEX_INPUT_DYNAMIC_STATE),
];

/// The extension names to enable for `features` on a device that has `available`.
pub(crate) fn extensions_for(features: DeviceFeatures, available: &dyn Fn(&str) -> bool) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (names, bits) in EXTENSIONS {
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
#[derive(Default)]
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
    /// Which extension structures are linked: the extensions the device has (query) or
    /// enables (create), by [`EXTENSIONS`] row.
    present: [bool; 11],
    /// `VK_EXT_conservative_rasterization` (no structure).
    conservative: bool,
}

impl FeatureChain {
    /// A chain for a device whose extensions `has` answers (query: structures of absent
    /// extensions are not linked).
    pub(crate) fn for_extensions(has: &dyn Fn(&str) -> bool) -> FeatureChain {
        let mut c = FeatureChain::default();
        for (i, (names, _)) in EXTENSIONS.iter().enumerate() {
            c.present[i] = names.iter().any(|n| has(n));
        }
        c.conservative = has("VK_EXT_conservative_rasterization");
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
        let p = self.present;
        if p[0] {
            push!(self.mesh);
        }
        if p[1] {
            push!(self.line);
        }
        if p[2] {
            push!(self.provoking);
        }
        if p[4] {
            push!(self.clip_enable);
        }
        if p[5] {
            push!(self.clip_control);
        }
        if p[6] {
            push!(self.xfb);
        }
        if p[7] {
            push!(self.divisor);
        }
        if p[8] {
            push!(self.eds2);
        }
        if p[9] {
            push!(self.eds3);
        }
        if p[10] {
            push!(self.vids);
        }
        push!(self.v13);
        push!(self.v12);
        push!(self.v11);
        push!(self.core);
        tail
    }

    /// The features granary knows that this (queried) chain reports.
    pub(crate) fn features(&self) -> DeviceFeatures {
        let on = |b: vk::Bool32, x: DeviceFeatures| if b == vk::TRUE { x } else { DeviceFeatures::NONE };
        let (m, l, v12, v13) = (&self.mesh, &self.line, &self.v12, &self.v13);
        let mut eds3 = self.eds3;
        let eds3_any = self.present[9]
            && EDS3_MEMBERS.iter().any(|(i, _, _)| eds3_member(&mut eds3, *i).is_some_and(|b| *b == vk::TRUE));
        [
            from_vk(&self.core.features, &self.v11),
            on(self.core.features.alpha_to_one, DeviceFeatures::ALPHA_TO_ONE),
            on(self.core.features.large_points, DeviceFeatures::LARGE_POINTS),
            on(self.core.features.sampler_anisotropy, DeviceFeatures::SAMPLER_ANISOTROPY),
            on(m.task_shader, DeviceFeatures::TASK_SHADER),
            on(m.mesh_shader, DeviceFeatures::MESH_SHADER),
            on(l.rectangular_lines, DeviceFeatures::RECTANGULAR_LINES),
            on(l.bresenham_lines, DeviceFeatures::BRESENHAM_LINES),
            on(l.smooth_lines, DeviceFeatures::SMOOTH_LINES),
            on(l.stippled_rectangular_lines, DeviceFeatures::STIPPLED_RECTANGULAR_LINES),
            on(l.stippled_bresenham_lines, DeviceFeatures::STIPPLED_BRESENHAM_LINES),
            on(l.stippled_smooth_lines, DeviceFeatures::STIPPLED_SMOOTH_LINES),
            on(self.provoking.provoking_vertex_last, DeviceFeatures::PROVOKING_VERTEX_LAST),
            on(vk::Bool32::from(self.conservative), DeviceFeatures::CONSERVATIVE_RASTERIZATION),
            on(self.clip_enable.depth_clip_enable, DeviceFeatures::DEPTH_CLIP_ENABLE),
            on(self.clip_control.depth_clip_control, DeviceFeatures::DEPTH_CLIP_CONTROL),
            on(self.xfb.geometry_streams, DeviceFeatures::GEOMETRY_STREAMS),
            on(self.xfb.transform_feedback, DeviceFeatures::TRANSFORM_FEEDBACK),
            on(
                self.divisor.vertex_attribute_instance_rate_divisor,
                DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR,
            ),
            on(
                self.divisor.vertex_attribute_instance_rate_zero_divisor,
                DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR,
            ),
            on(self.eds2.extended_dynamic_state2_logic_op, DeviceFeatures::EXTENDED_DYNAMIC_STATE2_LOGIC_OP),
            on(
                self.eds2.extended_dynamic_state2_patch_control_points,
                DeviceFeatures::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS,
            ),
            on(vk::Bool32::from(eds3_any), DeviceFeatures::EXTENDED_DYNAMIC_STATE3),
            on(self.vids.vertex_input_dynamic_state, DeviceFeatures::VERTEX_INPUT_DYNAMIC_STATE),
            on(v12.sampler_filter_minmax, DeviceFeatures::SAMPLER_FILTER_MINMAX),
            on(v12.sampler_mirror_clamp_to_edge, DeviceFeatures::SAMPLER_MIRROR_CLAMP_TO_EDGE),
            on(v12.descriptor_binding_partially_bound, DeviceFeatures::DESCRIPTOR_BINDING_PARTIALLY_BOUND),
            on(
                v12.descriptor_binding_variable_descriptor_count,
                DeviceFeatures::DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT,
            ),
            on(
                v12.descriptor_binding_update_unused_while_pending,
                DeviceFeatures::DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING,
            ),
            on(
                v12.descriptor_binding_uniform_buffer_update_after_bind,
                DeviceFeatures::DESCRIPTOR_BINDING_UNIFORM_BUFFER_UPDATE_AFTER_BIND,
            ),
            on(
                v12.descriptor_binding_sampled_image_update_after_bind,
                DeviceFeatures::DESCRIPTOR_BINDING_SAMPLED_IMAGE_UPDATE_AFTER_BIND,
            ),
            on(
                v12.descriptor_binding_storage_image_update_after_bind,
                DeviceFeatures::DESCRIPTOR_BINDING_STORAGE_IMAGE_UPDATE_AFTER_BIND,
            ),
            on(
                v12.descriptor_binding_storage_buffer_update_after_bind,
                DeviceFeatures::DESCRIPTOR_BINDING_STORAGE_BUFFER_UPDATE_AFTER_BIND,
            ),
            on(
                v12.descriptor_binding_uniform_texel_buffer_update_after_bind,
                DeviceFeatures::DESCRIPTOR_BINDING_UNIFORM_TEXEL_BUFFER_UPDATE_AFTER_BIND,
            ),
            on(
                v12.descriptor_binding_storage_texel_buffer_update_after_bind,
                DeviceFeatures::DESCRIPTOR_BINDING_STORAGE_TEXEL_BUFFER_UPDATE_AFTER_BIND,
            ),
            on(v13.subgroup_size_control, DeviceFeatures::SUBGROUP_SIZE_CONTROL),
            on(v13.compute_full_subgroups, DeviceFeatures::COMPUTE_FULL_SUBGROUPS),
        ]
        .into_iter()
        .fold(DeviceFeatures::NONE, DeviceFeatures::union)
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
        let b = |x: DeviceFeatures| vk::Bool32::from(f.contains(x));
        let mut c = FeatureChain::default();
        for (i, (_, bits)) in EXTENSIONS.iter().enumerate() {
            c.present[i] = !f.intersection(*bits).is_empty();
        }
        c.conservative = f.contains(DeviceFeatures::CONSERVATIVE_RASTERIZATION);
        c.core.features = to_vk(f);
        c.core.features.alpha_to_one = b(DeviceFeatures::ALPHA_TO_ONE);
        c.core.features.large_points = b(DeviceFeatures::LARGE_POINTS);
        c.core.features.sampler_anisotropy = b(DeviceFeatures::SAMPLER_ANISOTROPY);
        c.v11 = to_vk11(f);
        c.v13.dynamic_rendering = vk::TRUE;
        // Required of every Vulkan 1.3 device, like dynamic rendering; SPIR-V with the
        // `LocalSizeId` execution mode needs it (VUID-RuntimeSpirv-LocalSizeId-06434).
        c.v13.maintenance4 = vk::TRUE;
        c.v13.subgroup_size_control = b(DeviceFeatures::SUBGROUP_SIZE_CONTROL);
        c.v13.compute_full_subgroups = b(DeviceFeatures::COMPUTE_FULL_SUBGROUPS);
        let v12 = &mut c.v12;
        v12.sampler_filter_minmax = b(DeviceFeatures::SAMPLER_FILTER_MINMAX);
        v12.sampler_mirror_clamp_to_edge = b(DeviceFeatures::SAMPLER_MIRROR_CLAMP_TO_EDGE);
        v12.descriptor_binding_partially_bound = b(DeviceFeatures::DESCRIPTOR_BINDING_PARTIALLY_BOUND);
        v12.descriptor_binding_variable_descriptor_count =
            b(DeviceFeatures::DESCRIPTOR_BINDING_VARIABLE_DESCRIPTOR_COUNT);
        v12.descriptor_binding_update_unused_while_pending =
            b(DeviceFeatures::DESCRIPTOR_BINDING_UPDATE_UNUSED_WHILE_PENDING);
        v12.descriptor_binding_uniform_buffer_update_after_bind =
            b(DeviceFeatures::DESCRIPTOR_BINDING_UNIFORM_BUFFER_UPDATE_AFTER_BIND);
        v12.descriptor_binding_sampled_image_update_after_bind =
            b(DeviceFeatures::DESCRIPTOR_BINDING_SAMPLED_IMAGE_UPDATE_AFTER_BIND);
        v12.descriptor_binding_storage_image_update_after_bind =
            b(DeviceFeatures::DESCRIPTOR_BINDING_STORAGE_IMAGE_UPDATE_AFTER_BIND);
        v12.descriptor_binding_storage_buffer_update_after_bind =
            b(DeviceFeatures::DESCRIPTOR_BINDING_STORAGE_BUFFER_UPDATE_AFTER_BIND);
        v12.descriptor_binding_uniform_texel_buffer_update_after_bind =
            b(DeviceFeatures::DESCRIPTOR_BINDING_UNIFORM_TEXEL_BUFFER_UPDATE_AFTER_BIND);
        v12.descriptor_binding_storage_texel_buffer_update_after_bind =
            b(DeviceFeatures::DESCRIPTOR_BINDING_STORAGE_TEXEL_BUFFER_UPDATE_AFTER_BIND);
        c.mesh.task_shader = b(DeviceFeatures::TASK_SHADER);
        c.mesh.mesh_shader = b(DeviceFeatures::MESH_SHADER);
        c.line.rectangular_lines = b(DeviceFeatures::RECTANGULAR_LINES);
        c.line.bresenham_lines = b(DeviceFeatures::BRESENHAM_LINES);
        c.line.smooth_lines = b(DeviceFeatures::SMOOTH_LINES);
        c.line.stippled_rectangular_lines = b(DeviceFeatures::STIPPLED_RECTANGULAR_LINES);
        c.line.stippled_bresenham_lines = b(DeviceFeatures::STIPPLED_BRESENHAM_LINES);
        c.line.stippled_smooth_lines = b(DeviceFeatures::STIPPLED_SMOOTH_LINES);
        c.provoking.provoking_vertex_last = b(DeviceFeatures::PROVOKING_VERTEX_LAST);
        c.clip_enable.depth_clip_enable = b(DeviceFeatures::DEPTH_CLIP_ENABLE);
        c.clip_control.depth_clip_control = b(DeviceFeatures::DEPTH_CLIP_CONTROL);
        c.xfb.geometry_streams = b(DeviceFeatures::GEOMETRY_STREAMS);
        c.xfb.transform_feedback = b(DeviceFeatures::TRANSFORM_FEEDBACK);
        c.divisor.vertex_attribute_instance_rate_divisor = b(DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR);
        c.divisor.vertex_attribute_instance_rate_zero_divisor =
            b(DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_ZERO_DIVISOR);
        c.eds2.extended_dynamic_state2_logic_op = b(DeviceFeatures::EXTENDED_DYNAMIC_STATE2_LOGIC_OP);
        c.eds2.extended_dynamic_state2_patch_control_points =
            b(DeviceFeatures::EXTENDED_DYNAMIC_STATE2_PATCH_CONTROL_POINTS);
        if f.contains(DeviceFeatures::EXTENDED_DYNAMIC_STATE3) {
            for (i, _, _) in EDS3_MEMBERS {
                if eds3 & (1 << i) != 0 {
                    if let Some(m) = eds3_member(&mut c.eds3, i) {
                        *m = vk::TRUE;
                    }
                }
            }
        }
        c.vids.vertex_input_dynamic_state = b(DeviceFeatures::VERTEX_INPUT_DYNAMIC_STATE);
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
}

const LINE_FEATURES: DeviceFeatures = DeviceFeatures(
    DeviceFeatures::RECTANGULAR_LINES.0
        | DeviceFeatures::BRESENHAM_LINES.0
        | DeviceFeatures::SMOOTH_LINES.0
        | DeviceFeatures::STIPPLED_RECTANGULAR_LINES.0
        | DeviceFeatures::STIPPLED_BRESENHAM_LINES.0
        | DeviceFeatures::STIPPLED_SMOOTH_LINES.0,
);

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
            _ => None,
        };
        if let Some(f) = f {
            need(f, format!("stages[{i}] is a {s} stage"));
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
        let needs: Vec<DeviceFeatures> = required_by_spirv(&bytes).into_iter().map(|(f, _)| f).collect();
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
    fn every_known_feature_maps_both_ways() {
        // The core and Vulkan 1.1 features through `to_vk`/`from_vk`; every feature (the
        // native pipelines' too) through the chain that enables it.
        for (f, name) in &DeviceFeatures::ALL[..28] {
            assert_eq!(from_vk(&to_vk(*f), &to_vk11(*f)), *f, "{name}");
        }
        for (f, name) in DeviceFeatures::ALL {
            assert_eq!(FeatureChain::enabling(f, u32::MAX).features(), f, "{name}");
        }
        let all = FeatureChain::enabling(DeviceFeatures::KNOWN, u32::MAX);
        assert_eq!(all.features(), DeviceFeatures::KNOWN);
        assert_eq!(all.eds3_members().count_ones() as usize, EDS3_MEMBERS.len());
        assert_eq!(FeatureChain::enabling(DeviceFeatures::NONE, u32::MAX).features(), DeviceFeatures::NONE);
        let core = DeviceFeatures((1 << 28) - 1);
        assert_eq!(from_vk(&to_vk(core), &to_vk11(core)), core);
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
