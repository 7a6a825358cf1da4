//! The core features and limits a pipeline needs, checked against what the device enabled
//! before any driver call: a pipeline that needs a feature the device lacks is refused naming
//! the feature, never handed to the driver (where it is undefined behaviour).

use crate::device::DeviceFeatures;
use crate::layout::{BindingKind, PipelineLayout};
use crate::render_state::RenderState;
use crate::types::ShaderStage;
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
}

impl Limits {
    /// The limits granary checks, from the device's `VkPhysicalDeviceLimits`.
    pub fn from_vk(l: &vk::PhysicalDeviceLimits) -> Limits {
        Limits {
            max_bound_descriptor_sets: l.max_bound_descriptor_sets,
            max_push_constants_size: l.max_push_constants_size,
            max_vertex_input_bindings: l.max_vertex_input_bindings,
            max_vertex_input_attributes: l.max_vertex_input_attributes,
            max_vertex_input_binding_stride: l.max_vertex_input_binding_stride,
            max_vertex_input_attribute_offset: l.max_vertex_input_attribute_offset,
            max_color_attachments: l.max_color_attachments,
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
const CAPABILITY_FEATURES: [(u32, &str, DeviceFeatures); 20] = [
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
    (4427, "DrawParameters", DeviceFeatures::SHADER_DRAW_PARAMETERS),
    (4439, "MultiView", DeviceFeatures::MULTIVIEW),
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
        for (f, name) in DeviceFeatures::ALL {
            assert_eq!(from_vk(&to_vk(f), &to_vk11(f)), f, "{name}");
        }
        let all = DeviceFeatures::KNOWN;
        assert_eq!(from_vk(&to_vk(all), &to_vk11(all)), all);
        let none = (vk::PhysicalDeviceFeatures::default(), vk::PhysicalDeviceVulkan11Features::default());
        assert_eq!(from_vk(&none.0, &none.1), DeviceFeatures::NONE);
    }
}
