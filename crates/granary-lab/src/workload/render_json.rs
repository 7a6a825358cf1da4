//! The generator's part of the script it writes: the fixed-function state of a render body, in
//! the compact shape this generator has always written (every block present, fields in this
//! order, no stencil). The script itself — version, libraries, pipelines, stage functions and
//! constants — is spelled by `granary::script::write`; the field names here are
//! granary-archive's render-state types'.

use super::catalog::{Constant, Override, Value};
use granary::descriptor::{
    ColorAttachment, CompareFunction, ConstantId, ConstantValue, CullMode, FrontFace, IndexFormat, TextureFormat,
    Topology, VertexBufferLayout,
};
use serde::Serialize;

impl From<&Constant> for granary::descriptor::Constant {
    fn from(c: &Constant) -> Self {
        let id = match c.which {
            Override::Name(n) => ConstantId::Name(n.to_string()),
            Override::Id(i) => ConstantId::Id(i),
        };
        let value = match c.value {
            Value::Bool(v) => ConstantValue::Bool(v),
            Value::U32(v) => ConstantValue::U32(v),
            Value::F32(v) => ConstantValue::F32(v),
        };
        granary::descriptor::Constant { id, value }
    }
}

fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_false(v: &bool) -> bool {
    !*v
}
fn is_zero(v: &i32) -> bool {
    *v == 0
}
fn is_zero_f(v: &f32) -> bool {
    *v == 0.0
}

/// A render pipeline's fixed-function state (the stage functions precede it in the body).
#[derive(Serialize)]
pub(crate) struct RenderStateJson<'a> {
    pub vertex_buffers: &'a [VertexBufferLayout],
    pub primitive: PrimitiveJson,
    pub color_attachments: Vec<ColorAttachment>,
    pub depth_stencil: DepthJson,
    #[serde(skip_serializing_if = "is_one")]
    pub sample_count: u32,
    #[serde(skip_serializing_if = "is_false")]
    pub alpha_to_coverage: bool,
}

/// Primitive state.
#[derive(Serialize)]
pub(crate) struct PrimitiveJson {
    pub topology: Topology,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strip_index_format: Option<IndexFormat>,
    pub cull: CullMode,
    pub front_face: FrontFace,
}

/// Depth state (no stencil).
#[derive(Serialize)]
pub(crate) struct DepthJson {
    pub format: TextureFormat,
    pub depth_write: bool,
    pub depth_compare: CompareFunction,
    #[serde(skip_serializing_if = "is_zero")]
    pub depth_bias: i32,
    #[serde(skip_serializing_if = "is_zero_f")]
    pub depth_bias_slope_scale: f32,
}
