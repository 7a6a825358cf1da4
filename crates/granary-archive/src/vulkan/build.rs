//! An archived render state → the create-info input of one Vulkan pipeline. The harvest
//! backend and the run-time [`PipelineLoader`](super::PipelineLoader) both build their
//! pipelines here, so a pipeline is created at run time from exactly the state it was
//! captured with (a binary is only valid for the create info it was captured from).
//!
//! Everything the device cannot take comes back as a message naming the field, before any
//! driver call.

use super::device::Gpu;
use super::handles::DriverLayout;
use super::native::StageInput;
use super::pipeline::GraphicsInput;
use super::translate;
use crate::render_state::{CompareFunction, MaybeSpecialized, RenderState, TextureFormat, Topology};
use std::ffi::CString;
use vulkanalia::vk;

/// A stage's encoded `VkSpecializationInfo` (`GSP1`), decoded and checked
/// ([`Specialization::check`](crate::native::Specialization::check)); `None` without one. A
/// bad one is the pipeline's error naming the stage (`stage`, `entry`).
pub fn specialization_of(
    bytes: Option<&[u8]>,
    stage: crate::types::ShaderStage,
    entry: &str,
) -> Result<Option<crate::native::Specialization>, String> {
    let Some(bytes) = bytes else { return Ok(None) };
    let bad = |e: String| format!("{stage} function '{entry}': specialization: {e}");
    let s = crate::native::Specialization::decode(bytes).map_err(|e| bad(e.to_string()))?;
    s.check().map_err(bad)?;
    Ok(Some(s))
}

/// An entry-point name as a C string.
pub fn entry_name(name: &str) -> Result<CString, String> {
    CString::new(name).map_err(|_| format!("entry point {name:?} contains a NUL byte"))
}

fn device_format(gpu: &Gpu, f: TextureFormat, what: &str) -> Result<vk::Format, String> {
    gpu.format(f).ok_or_else(|| {
        format!(
            "{what}: format {} is not usable as an attachment on device '{}'",
            f.name(),
            gpu.info.identity.device_name
        )
    })
}

/// The colour attachments' formats and blend states. Unspecialized fields take, per
/// attachment `i`, `link_formats[i]` (or the last one given) as format, blending off and
/// every channel written; with no format to take, the attachment is refused by index.
pub fn color_output(
    gpu: &Gpu,
    r: &RenderState,
    link_formats: &[TextureFormat],
) -> Result<Vec<(vk::Format, vk::PipelineColorBlendAttachmentState)>, String> {
    let mut out = Vec::with_capacity(r.color_attachments.len());
    for (i, c) in r.color_attachments.iter().enumerate() {
        let format = match c.format {
            MaybeSpecialized::Is(f) => f,
            MaybeSpecialized::Unspecialized => *link_formats.get(i).or(link_formats.last()).ok_or_else(|| {
                format!("color_attachments[{i}] is unspecialized and no format was given to link it with")
            })?,
        };
        let f = device_format(gpu, format, &format!("color_attachments[{i}]"))?;
        out.push((f, translate::blend_state(c)));
    }
    Ok(out)
}

/// Refuses vertex input and colour attachments beyond the device's limits, naming the field
/// and the limit.
fn check_limits(
    gpu: &Gpu,
    r: &RenderState,
    bindings: &[vk::VertexInputBindingDescription],
    attributes: &[vk::VertexInputAttributeDescription],
) -> Result<(), String> {
    let l = &gpu.info.limits;
    let device = &gpu.info.identity.device_name;
    let over = |what: String, value: u64, limit: u32, name: &str| {
        Err(format!("{what} is {value}; device '{device}' allows at most {limit} ({name})"))
    };
    if bindings.len() as u64 > u64::from(l.max_vertex_input_bindings) {
        return over(
            "vertex_buffers.len()".into(),
            bindings.len() as u64,
            l.max_vertex_input_bindings,
            "maxVertexInputBindings",
        );
    }
    if attributes.len() as u64 > u64::from(l.max_vertex_input_attributes) {
        return over(
            "the number of vertex attributes".into(),
            attributes.len() as u64,
            l.max_vertex_input_attributes,
            "maxVertexInputAttributes",
        );
    }
    for (i, b) in bindings.iter().enumerate() {
        if b.stride > l.max_vertex_input_binding_stride {
            return over(
                format!("vertex_buffers[{i}].stride"),
                u64::from(b.stride),
                l.max_vertex_input_binding_stride,
                "maxVertexInputBindingStride",
            );
        }
    }
    for (k, a) in attributes.iter().enumerate() {
        if a.location >= l.max_vertex_input_attributes {
            return Err(format!(
                "vertex attribute {k}'s location is {}; device '{device}' has locations 0..{} (maxVertexInputAttributes)",
                a.location, l.max_vertex_input_attributes
            ));
        }
        if a.offset > l.max_vertex_input_attribute_offset {
            return over(
                format!("vertex_buffers[{}] attribute at location {} has offset", a.binding, a.location),
                u64::from(a.offset),
                l.max_vertex_input_attribute_offset,
                "maxVertexInputAttributeOffset",
            );
        }
    }
    if r.color_attachments.len() as u64 > u64::from(l.max_color_attachments) {
        return over(
            "color_attachments.len()".into(),
            r.color_attachments.len() as u64,
            l.max_color_attachments,
            "maxColorAttachments",
        );
    }
    Ok(())
}

/// The input of one graphics pipeline of state `r` with `stages` (in pipeline order) and
/// `layout`. With `library`, the pipeline is a library of the vertex-input,
/// pre-rasterization and fragment-shader parts, its fragment output left to
/// [`Gpu::link`](super::Gpu::link); otherwise unspecialized colour attachments take
/// `link_formats` (see `color_output`; the harvest gives none, so they are refused).
pub fn graphics_input<'a>(
    gpu: &Gpu,
    r: &RenderState,
    stages: Vec<StageInput<'a>>,
    layout: &'a DriverLayout,
    library: bool,
    link_formats: &[TextureFormat],
) -> Result<GraphicsInput<'a>, String> {
    let device = &gpu.info.identity.device_name;
    let (bindings, attributes) = translate::vertex_input(&r.vertex_buffers)?;
    check_limits(gpu, r, &bindings, &attributes)?;
    let samples = translate::samples(r.sample_count)?;
    if samples.bits() & gpu.info.sample_counts == 0 {
        return Err(format!("sample_count {} is not supported by device '{device}'", r.sample_count));
    }
    let output = if library {
        if !gpu.libraries() {
            let which = r.color_attachments.iter().position(|c| c.is_unspecialized()).unwrap_or(0);
            return Err(format!(
                "color_attachments[{which}] is unspecialized and device '{device}' has no graphics pipeline \
                 libraries (VK_EXT_graphics_pipeline_library) to leave the fragment output open; \
                 specialize its format, blend and write_mask, or give the script an \
                 expand_unspecialized list of formats to compile it for"
            ));
        }
        None
    } else {
        Some(color_output(gpu, r, link_formats)?)
    };
    let (mut depth_format, mut stencil_format) = (vk::Format::UNDEFINED, vk::Format::UNDEFINED);
    let mut depth_bias = None;
    let depth_stencil = match &r.depth_stencil {
        None => None,
        Some(ds) => {
            let f = device_format(gpu, ds.format, "depth_stencil")?;
            let (has_depth, has_stencil) = translate::depth_stencil_aspects(ds.format);
            if has_depth {
                depth_format = f;
            }
            if has_stencil {
                stencil_format = f;
            }
            if ds.depth_bias != 0 || ds.depth_bias_slope_scale != 0.0 || ds.depth_bias_clamp != 0.0 {
                depth_bias = Some((true, ds.depth_bias as f32, ds.depth_bias_slope_scale, ds.depth_bias_clamp));
            }
            let depth_test = has_depth && (ds.depth_compare != CompareFunction::Always || ds.depth_write);
            let mut s = vk::PipelineDepthStencilStateCreateInfo {
                depth_test_enable: vk::Bool32::from(depth_test),
                depth_write_enable: vk::Bool32::from(has_depth && ds.depth_write),
                depth_compare_op: translate::compare(ds.depth_compare),
                max_depth_bounds: 1.0,
                ..Default::default()
            };
            if let Some(st) = ds.stencil.filter(|_| has_stencil) {
                s.stencil_test_enable = vk::TRUE;
                s.front = translate::stencil_face(st.front, st.read_mask, st.write_mask);
                s.back = translate::stencil_face(st.back, st.read_mask, st.write_mask);
            }
            Some(s)
        }
    };
    let strip = matches!(r.primitive.topology, Topology::LineStrip | Topology::TriangleStrip);
    Ok(GraphicsInput {
        stages,
        bindings,
        attributes,
        topology: translate::topology(r.primitive.topology),
        primitive_restart: strip && r.primitive.strip_index_format.is_some(),
        cull: translate::cull(r.primitive.cull),
        front_face: translate::front_face(r.primitive.front_face),
        depth_bias,
        samples,
        alpha_to_coverage: r.alpha_to_coverage,
        depth_stencil,
        depth_format,
        stencil_format,
        output,
        layout,
    })
}
