//! The core features and limits a pipeline needs, checked against what the device enabled
//! before any driver call: a pipeline that needs a feature the device lacks is refused naming
//! the feature, never handed to the driver (where it is undefined behaviour).

use super::device::Gpu;
use crate::layout::{BindingKind, PipelineLayout};
use crate::state::RenderState;
use crate::{DeviceFeatures, ShaderStage};
use vulkanalia::vk;

/// The features of `f` that granary knows (one bit per `VkBool32`).
pub fn from_vk(f: &vk::PhysicalDeviceFeatures) -> DeviceFeatures {
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
    ]
    .into_iter()
    .fold(DeviceFeatures::NONE, DeviceFeatures::union)
}

/// The `VkPhysicalDeviceFeatures` that enables exactly `f` (every other member false).
pub fn to_vk(f: DeviceFeatures) -> vk::PhysicalDeviceFeatures {
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
    let effective = |i: usize| super::build::blend_state(&r.color_attachments[i]);
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
pub fn required(layout: &PipelineLayout, state: Option<&RenderState>) -> Vec<(DeviceFeatures, String)> {
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
    let writes = |b: &&crate::LayoutBinding| matches!(b.kind, BindingKind::StorageBuffer | BindingKind::StorageTexture);
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

/// Refuses a pipeline that needs a feature `gpu` did not enable, naming the feature and why
/// the pipeline needs it.
pub fn check(gpu: &Gpu, layout: &PipelineLayout, state: Option<&RenderState>) -> Result<(), String> {
    let enabled = gpu.features();
    let missing: Vec<String> = required(layout, state)
        .into_iter()
        .filter(|(f, _)| !enabled.contains(*f))
        .map(|(f, why)| format!("{f} ({why})"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "needs the {} feature{} not enabled on device '{}'{}",
        missing.join(", "),
        if missing.len() == 1 { "" } else { "s" },
        gpu.info.identity.device_name,
        if gpu.is_borrowed() { " (the application's device)" } else { " (the device does not support it)" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_feature_maps_both_ways() {
        for (f, name) in DeviceFeatures::ALL {
            let v = to_vk(f);
            assert_eq!(from_vk(&v), f, "{name}");
        }
        assert_eq!(from_vk(&to_vk(DeviceFeatures::KNOWN)), DeviceFeatures::KNOWN);
        assert_eq!(from_vk(&vk::PhysicalDeviceFeatures::default()), DeviceFeatures::NONE);
    }
}
