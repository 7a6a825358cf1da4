//! The JSON the generator writes: a pipelines script v1 (docs/FORMAT.md §2), one library or
//! pipeline per line so that the file diffs and greps well.

use super::catalog::{Constant, Value};
use granary::descriptor::{
    ColorAttachment, CompareFunction, CullMode, FrontFace, IndexFormat, TextureFormat, Topology, VertexBufferLayout,
};
use serde::Serialize;

/// `{"name", "path"}`.
#[derive(Serialize)]
pub(crate) struct LibraryJson<'a> {
    pub name: &'a str,
    pub path: &'a str,
}

/// `{"library", "function"}`.
#[derive(Serialize)]
pub(crate) struct PlainJson<'a> {
    pub library: &'a str,
    pub function: &'a str,
}

/// A stage function: plain, or specialized with constants.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum FunctionJson<'a> {
    /// `{"library", "function"}`.
    Plain(PlainJson<'a>),
    /// `{"specialize", "constants", "name"}`.
    Specialized { specialize: PlainJson<'a>, constants: Vec<ConstJson>, name: String },
}

/// One constant.
#[derive(Serialize)]
pub(crate) struct ConstJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bool: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    u32: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    f32: Option<f32>,
}

impl From<&Constant> for ConstJson {
    fn from(c: &Constant) -> Self {
        let (mut b, mut u, mut f) = (None, None, None);
        match c.value {
            Value::Bool(v) => b = Some(v),
            Value::U32(v) => u = Some(v),
            Value::F32(v) => f = Some(v),
        }
        ConstJson { name: c.name, id: c.id, bool: b, u32: u, f32: f }
    }
}

/// `{"label", "render"}`.
#[derive(Serialize)]
pub(crate) struct PipelineJson<'a> {
    pub label: String,
    pub render: RenderJson<'a>,
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

/// A render pipeline.
#[derive(Serialize)]
pub(crate) struct RenderJson<'a> {
    pub vertex: FunctionJson<'a>,
    pub fragment: FunctionJson<'a>,
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
