//! Granary's values to the Metal 4 script's: a pipeline's render state into its Metal
//! pipeline fields (what Metal keeps elsewhere recorded as dropped, with the reason), colour
//! attachments and specialization constants.

use super::names::{blend_factor, blend_op, pixel_format, vertex_format, write_mask};
use super::{Dropped, TOP_BUFFER_INDEX};
use crate::descriptor::{Constant, ConstantId, ConstantValue};
use granary_archive::RenderState;
use granary_archive::{Blend, ColorAttachment, CullMode, FrontFace, MaybeSpecialized, StepMode, Topology};
use serde_json::{json, Map, Value};

/// A constant as a `constant_values` entry: `@id(n)` by index, an override name by name.
pub(super) fn constant_value(c: &Constant) -> Value {
    let (id_type, id) = match &c.id {
        ConstantId::Id(i) => ("FunctionConstantIndex", json!(i)),
        ConstantId::Name(n) => ("FunctionConstantName", json!(n)),
    };
    let (value_type, value) = match c.value {
        ConstantValue::Bool(b) => ("ConstantBool", json!(b)),
        ConstantValue::I32(v) => ("ConstantInt", json!(v)),
        ConstantValue::U32(v) => ("ConstantUInt", json!(v)),
        ConstantValue::F32(v) => ("ConstantFloat", json!(v)),
    };
    json!({"id_type": id_type, "id": {"data": id}, "value_type": value_type, "value": {"data": value}})
}

/// Records that `field` is not carried into the Metal script, and why.
fn note_dropped(dropped: &mut Vec<Dropped>, field: &str, reason: &str) {
    dropped.push(Dropped { field: field.into(), reason: reason.into() });
}

/// The render state's Metal pipeline fields into `d`; what Metal keeps elsewhere into
/// `dropped`.
pub(super) fn render_state(s: &RenderState, d: &mut Map<String, Value>, dropped: &mut Vec<Dropped>) {
    if !s.vertex_buffers.is_empty() {
        let mut attributes = Vec::new();
        let mut layouts = Vec::new();
        for (slot, b) in s.vertex_buffers.iter().enumerate() {
            let index = TOP_BUFFER_INDEX.saturating_sub(slot as u32);
            layouts.push(json!({
                "index": index,
                "stride": b.stride,
                "step_function": if b.step == StepMode::Instance { "PerInstance" } else { "PerVertex" },
                "step_rate": 1,
            }));
            for a in &b.attributes {
                attributes.push(json!({
                    "index": a.location,
                    "format": vertex_format(a.format),
                    "offset": a.offset,
                    "buffer_index": index,
                }));
            }
        }
        d.insert("vertex_descriptor".into(), json!({"attributes": attributes, "layouts": layouts}));
    }
    let class = match s.primitive.topology {
        Topology::PointList => "Point",
        Topology::LineList | Topology::LineStrip => "Line",
        Topology::TriangleList | Topology::TriangleStrip => "Triangle",
    };
    d.insert("input_primitive_topology".into(), json!(class));
    if matches!(s.primitive.topology, Topology::LineStrip | Topology::TriangleStrip) {
        note_dropped(
            dropped,
            "primitive.topology",
            "list or strip is chosen per draw call in Metal; the pipeline keeps only the topology class",
        );
    }
    if s.primitive.strip_index_format.is_some() {
        note_dropped(dropped, "primitive.strip_index_format", "Metal gives the index type per draw call");
    }
    if s.primitive.cull != CullMode::None {
        note_dropped(dropped, "primitive.cull", "encoder state in Metal (setCullMode), not part of a pipeline");
    }
    if s.primitive.front_face != FrontFace::Ccw {
        note_dropped(
            dropped,
            "primitive.front_face",
            "encoder state in Metal (setFrontFacingWinding), not part of a pipeline",
        );
    }
    d.insert("raster_sample_count".into(), json!(s.sample_count));
    if s.alpha_to_coverage {
        d.insert("alpha_to_coverage_state".into(), json!("Enabled"));
    }
    if let Some(ds) = &s.depth_stencil {
        note_dropped(
            dropped,
            "depth_stencil",
            &format!(
                "MTL4RenderPipelineDescriptor has no depth/stencil attachment: the {} format is the render pass's, \
                 compare, write, stencil and bias are an MTLDepthStencilState and encoder state",
                ds.format_name()
            ),
        );
    }
    if !s.color_attachments.is_empty() {
        let c: Vec<Value> = s.color_attachments.iter().map(color_attachment).collect();
        d.insert("color_attachments".into(), Value::Array(c));
    }
}

trait FormatName {
    fn format_name(&self) -> String;
}

impl FormatName for granary_archive::DepthStencilState {
    fn format_name(&self) -> String {
        self.format.name().to_string()
    }
}

/// One colour attachment: every unspecialized part comes out as Metal 4's `Unspecialized`.
fn color_attachment(c: &ColorAttachment) -> Value {
    let mut m = Map::new();
    m.insert(
        "pixel_format".into(),
        json!(match c.format {
            MaybeSpecialized::Unspecialized => "Unspecialized",
            MaybeSpecialized::Is(f) => pixel_format(f),
        }),
    );
    match c.blend {
        MaybeSpecialized::Unspecialized => {
            m.insert("blending_state".into(), json!("Unspecialized"));
        }
        MaybeSpecialized::Is(Blend::Off) => {
            m.insert("blending_state".into(), json!("Disabled"));
        }
        MaybeSpecialized::Is(Blend::On(b)) => {
            m.insert("blending_state".into(), json!("Enabled"));
            m.insert("source_rgb_blend_factor".into(), json!(blend_factor(b.color.src)));
            m.insert("destination_rgb_blend_factor".into(), json!(blend_factor(b.color.dst)));
            m.insert("rgb_blend_operation".into(), json!(blend_op(b.color.op)));
            m.insert("source_alpha_blend_factor".into(), json!(blend_factor(b.alpha.src)));
            m.insert("destination_alpha_blend_factor".into(), json!(blend_factor(b.alpha.dst)));
            m.insert("alpha_blend_operation".into(), json!(blend_op(b.alpha.op)));
        }
    }
    m.insert(
        "write_mask".into(),
        json!(match c.write_mask {
            MaybeSpecialized::Unspecialized => "Unspecialized".to_string(),
            MaybeSpecialized::Is(w) => write_mask(w.0),
        }),
    );
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_unspecialized_attachment_stays_unspecialized() {
        let v = color_attachment(&ColorAttachment::unspecialized());
        assert_eq!(v["pixel_format"], "Unspecialized");
        assert_eq!(v["blending_state"], "Unspecialized");
        assert_eq!(v["write_mask"], "Unspecialized");
    }

    #[test]
    fn export_constants_keep_id_and_type() {
        let c = Constant { id: ConstantId::Id(3), value: ConstantValue::F32(0.5) };
        let v = constant_value(&c);
        assert_eq!(v["id_type"], "FunctionConstantIndex");
        assert_eq!(v["id"]["data"], 3);
        assert_eq!(v["value_type"], "ConstantFloat");
        assert_eq!(v["value"]["data"], 0.5);
        let c = Constant { id: ConstantId::Name("USE_FOG".into()), value: ConstantValue::Bool(true) };
        let v = constant_value(&c);
        assert_eq!(v["id_type"], "FunctionConstantName");
        assert_eq!(v["id"]["data"], "USE_FOG");
        assert_eq!(v["value"]["data"], true);
    }
}
