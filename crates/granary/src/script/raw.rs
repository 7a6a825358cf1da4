//! The JSON shapes of the pipelines script, as serde types (docs/FORMAT.md, "Pipelines script"):
//! the one spelling of its field names, read by `load.rs`/`lazy.rs` and written through
//! `write.rs` (fixed-function state is spelled by granary-archive's render-state types, a native
//! pipeline's state by its native types: their serde spelling).

use crate::descriptor::{
    ColorAttachment, DepthStencilState, PrimitiveState, ShaderStage, SourceKind, VertexBufferLayout,
};
use granary_archive::native::{NativePipeline, Specialization};
use serde::{Deserialize, Serialize};

/// Current script format version.
pub const SCRIPT_VERSION: u32 = 1;

/// Top level: each library and pipeline is kept as raw JSON text (borrowed from the file, no
/// copy) so that each can be checked on its own, in parallel, with its position in the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScriptTop<'a> {
    pub granary_script: u32,
    #[serde(default, borrow)]
    pub libraries: Vec<&'a serde_json::value::RawValue>,
    #[serde(default, borrow)]
    pub pipelines: Vec<&'a serde_json::value::RawValue>,
    /// For device backends without graphics pipeline libraries: what to expand unspecialized
    /// colour attachments over (docs/FORMAT.md §2).
    #[serde(default)]
    pub expand_unspecialized: Option<super::expand::Expansion>,
}

impl<'a> RawScriptTop<'a> {
    /// Parses the top level of script `text` (named `path` in messages) and checks its
    /// version.
    pub(crate) fn parse(text: &'a str, path: &std::path::Path) -> Result<Self, super::error::ScriptError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let top: RawScriptTop<'a> =
            serde_path_to_error::deserialize(de).map_err(|e| super::error::ScriptError::from_serde(path, "", e))?;
        if top.granary_script != SCRIPT_VERSION {
            return Err(super::error::ScriptError::at(
                path,
                "granary_script",
                format!("unsupported script version {} (this granary reads {SCRIPT_VERSION})", top.granary_script),
            ));
        }
        Ok(top)
    }
}

/// Just the label of a pipeline entry, read leniently to name an entry that fails to parse.
#[derive(Deserialize)]
pub(crate) struct LabelOnly {
    #[serde(default)]
    pub label: Option<String>,
}

/// One library.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLibrary {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<SourceKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<ShaderStage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spirv_base64: Option<String>,
}

/// A stage function: `{library, function}` or `{specialize, constants, name?}`.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFunction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specialize: Option<Box<RawFunction>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constants: Option<Vec<RawConstant>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One constant: `{"name": "X" | "id": 3, "bool" | "i32" | "u32" | "f32": value}`.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConstant {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub i32: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u32: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f32: Option<f32>,
}

/// One pipeline: a label and exactly one of `render` / `compute` / `vulkan`. The render body
/// is [`RawRender`] when read; a writer may give its own body `R` (see [`RawRenderWith`]).
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields, bound(deserialize = "R: Deserialize<'de>", serialize = "R: Serialize"))]
pub(crate) struct RawPipeline<R = RawRender> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<R>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<RawCompute>,
    /// The native Vulkan form (docs/FORMAT.md §2.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vulkan: Option<RawNative>,
    /// An explicit resource layout (docs/FORMAT.md §2.1); absent: derived from the shaders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<RawLayout>,
}

/// An explicit resource layout.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLayout {
    #[serde(default)]
    pub bindings: Vec<RawBinding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immediates: Option<RawImmediates>,
}

/// One binding of an explicit layout.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBinding {
    pub group: u32,
    pub binding: u32,
    pub kind: granary_archive::BindingKind,
    /// Array size of a `binding_array`; absent for a single resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    pub visibility: Vec<ShaderStage>,
}

/// The immediate-data (push-constant) block of an explicit layout.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawImmediates {
    pub size: u32,
    pub visibility: Vec<ShaderStage>,
}

fn one() -> u32 {
    1
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn is_false(v: &bool) -> bool {
    !*v
}
fn is_default_primitive(p: &PrimitiveState) -> bool {
    *p == PrimitiveState::default()
}

/// A render pipeline's body.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRender {
    pub vertex: RawFunction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment: Option<RawFunction>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vertex_buffers: Vec<VertexBufferLayout>,
    #[serde(default, skip_serializing_if = "is_default_primitive")]
    pub primitive: PrimitiveState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub color_attachments: Vec<ColorAttachment>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth_stencil: Option<DepthStencilState>,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub sample_count: u32,
    #[serde(default, skip_serializing_if = "is_false")]
    pub alpha_to_coverage: bool,
}

/// A render pipeline's body as a writer that spells the fixed-function state itself gives it:
/// the stage functions, then the state fields of `S` (`vertex_buffers`, `primitive`, …, in
/// `S`'s order) at the same level. Write-only: [`RawRender`] is what the reader checks.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct RawRenderWith<S> {
    pub vertex: RawFunction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragment: Option<RawFunction>,
    #[serde(flatten)]
    pub state: S,
}

/// A compute pipeline's body.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCompute {
    pub function: RawFunction,
}

/// A native Vulkan pipeline's body (docs/FORMAT.md §2.6): the stage functions, then every
/// other part of the create info as granary-archive's [`NativePipeline`] spells it (Vulkan's
/// member names in camelCase, Vulkan's numbers), so that type's serde is the one field list.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNative {
    /// One per `VkPipelineShaderStageCreateInfo`, in the application's order.
    pub stages: Vec<RawNativeStage>,
    /// `NativePipeline`: `flags`, `stages` (one entry per stage above), `layout`, `graphics`.
    #[serde(default)]
    pub state: NativePipeline,
}

/// One stage of a native pipeline: granary's stage name, a SPIR-V library's entry point and
/// the application's `VkSpecializationInfo`.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNativeStage {
    pub stage: ShaderStage,
    pub function: RawFunction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specialization: Option<Specialization>,
}
