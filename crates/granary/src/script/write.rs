//! Writing pipelines scripts: the one owner of the format's spelling on the way out — its
//! version and top-level fields (`granary_script`, `libraries`, `pipelines`) and its library,
//! pipeline, stage-function and constant entries (the serde shapes of `raw.rs`, which the reader
//! shares). Every writer of scripts goes through here: a capture's export ([`script_json`]),
//! the Fossilize importer and granary-lab's generator.
//!
//! Two layouts, both a pure function of the values given in the order given:
//! - [`pretty`]: one indented document with object keys in sorted order (what a capture
//!   exports);
//! - [`LineWriter`]: streamed, `{"granary_script":1,` then one library or pipeline per line in
//!   declaration order (what the generator and `import-foz` write: tens of thousands of
//!   pipelines that diff and grep well, never all held in memory as one JSON document).
//!
//! A native Vulkan pipeline ([`Pipeline::vulkan`], docs/FORMAT.md §2.6) is spelled by
//! granary-archive's native types (their serde spelling), its stages by [`NativeStageEntry`].
//!
//! Fixed-function state is spelled by granary-archive's render-state types (their serde spelling). A writer that
//! builds it another way (the generator as its own compact structs, kept for byte-identical
//! output) hands it over as the state part of a [`Render`] body.

use super::raw::*;
use crate::descriptor::{
    Constant as ConstantDescriptor, ConstantId, ConstantValue, FunctionDescriptor, Library, PipelineDescriptor,
    ShaderStage, SourceKind,
};
use base64::Engine as _;
use granary_archive::native::{NativePipeline, Specialization};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

/// A stage function entry: `{"library", "function"}`, or `{"specialize", "constants", "name"?}`.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Function(RawFunction);

impl Function {
    /// Entry point `function` of the library named `library`.
    pub fn library(library: impl Into<String>, function: impl Into<String>) -> Self {
        Function(RawFunction {
            library: Some(library.into()),
            function: Some(function.into()),
            specialize: None,
            constants: None,
            name: None,
        })
    }

    /// `base` specialized with `constants` (in the order given), optionally named.
    pub fn specialized<'a>(
        base: Function,
        constants: impl IntoIterator<Item = &'a ConstantDescriptor>,
        name: Option<String>,
    ) -> Self {
        Function(RawFunction {
            library: None,
            function: None,
            specialize: Some(Box::new(base.0)),
            constants: Some(constants.into_iter().map(raw_constant).collect()),
            name,
        })
    }
}

/// One constant: `{"name": "X" | "id": 3, "bool" | "i32" | "u32" | "f32": value}`.
fn raw_constant(c: &ConstantDescriptor) -> RawConstant {
    let (name, id) = match &c.id {
        ConstantId::Name(n) => (Some(n.clone()), None),
        ConstantId::Id(i) => (None, Some(*i)),
    };
    let mut rc = RawConstant { name, id, bool: None, i32: None, u32: None, f32: None };
    match c.value {
        ConstantValue::Bool(v) => rc.bool = Some(v),
        ConstantValue::I32(v) => rc.i32 = Some(v),
        ConstantValue::U32(v) => rc.u32 = Some(v),
        ConstantValue::F32(v) => rc.f32 = Some(v),
    }
    rc
}

/// A library entry.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct LibraryEntry(RawLibrary);

impl LibraryEntry {
    /// `{"name", "path"}`: a library file, its kind (and GLSL stage) from its extension; the
    /// path is relative to the script.
    pub fn at_path(name: impl Into<String>, path: impl Into<String>) -> Self {
        LibraryEntry(RawLibrary {
            name: name.into(),
            kind: None,
            stage: None,
            path: Some(path.into()),
            source: None,
            spirv_base64: None,
        })
    }

    /// SPIR-V bytes written inline (base64) under `name`.
    pub fn spirv(name: impl Into<String>, spirv: &[u8]) -> Self {
        LibraryEntry(RawLibrary {
            name: name.into(),
            kind: Some(SourceKind::Spirv),
            stage: None,
            path: None,
            source: None,
            spirv_base64: Some(base64::engine::general_purpose::STANDARD.encode(spirv)),
        })
    }

    /// `lib`'s source written inline under `name` (SPIR-V as base64), so the script needs no
    /// other file.
    pub fn inline(lib: &Library, name: impl Into<String>) -> Self {
        let (source, spirv_base64) = match lib.kind() {
            SourceKind::Spirv => (None, Some(base64::engine::general_purpose::STANDARD.encode(lib.source()))),
            _ => (Some(String::from_utf8_lossy(lib.source()).into_owned()), None),
        };
        LibraryEntry(RawLibrary {
            name: name.into(),
            kind: Some(lib.kind()),
            stage: lib.glsl_stage(),
            path: None,
            source,
            spirv_base64,
        })
    }
}

/// One stage of a native pipeline: `{"stage", "function", "specialization"?}`.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct NativeStageEntry(RawNativeStage);

impl NativeStageEntry {
    /// `function` (a `{"library", "function"}` entry of a SPIR-V library) as `stage`, created
    /// with `specialization` (the application's `VkSpecializationInfo`).
    pub fn new(stage: ShaderStage, function: Function, specialization: Option<Specialization>) -> Self {
        NativeStageEntry(RawNativeStage { stage, function: function.0, specialization })
    }
}

/// A render pipeline's body: `{"vertex", "fragment"?, …state}`, the fields of the state `S`
/// (spelled as granary-archive's render-state types spell them) following the stage functions.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Render<S: Serialize>(RawRenderWith<S>);

impl<S: Serialize> Render<S> {
    /// The stage functions and the fixed-function state.
    pub fn new(vertex: Function, fragment: Option<Function>, state: S) -> Self {
        Render(RawRenderWith { vertex: vertex.0, fragment: fragment.map(|f| f.0), state })
    }
}

/// A pipeline entry: `{"label"?, "render" | "compute" | "vulkan"}`.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Pipeline<S: Serialize>(RawPipeline<RawRenderWith<S>>);

impl<S: Serialize> Pipeline<S> {
    /// A render pipeline.
    pub fn render(label: Option<String>, body: Render<S>) -> Self {
        Pipeline(RawPipeline { label, render: Some(body.0), compute: None, vulkan: None, layout: None })
    }

    /// A compute pipeline of `function`.
    pub fn compute(label: Option<String>, function: Function) -> Self {
        Pipeline(RawPipeline {
            label,
            render: None,
            compute: Some(RawCompute { function: function.0 }),
            vulkan: None,
            layout: None,
        })
    }

    /// A pipeline in the native Vulkan form (docs/FORMAT.md §2.6): its stages and the rest of
    /// its create info, `state` (which has one `stages` entry per stage).
    pub fn vulkan(label: Option<String>, stages: Vec<NativeStageEntry>, state: NativePipeline) -> Self {
        Pipeline(RawPipeline {
            label,
            render: None,
            compute: None,
            vulkan: Some(RawNative { stages: stages.into_iter().map(|s| s.0).collect(), state }),
            layout: None,
        })
    }

    /// The label, if any.
    pub fn label(&self) -> Option<&str> {
        self.0.label.as_deref()
    }
}

/// The whole script as one indented document, object keys in sorted order, ending in a
/// newline. Fails only where a value does not serialize to JSON (a map with non-string keys).
pub fn pretty<L: Serialize, P: Serialize>(libraries: &[L], pipelines: &[P]) -> Result<String, serde_json::Error> {
    // A `Value` object keeps its keys sorted: that is the layout's key order.
    let mut top = serde_json::Map::new();
    top.insert("granary_script".into(), SCRIPT_VERSION.into());
    top.insert("libraries".into(), serde_json::to_value(libraries)?);
    top.insert("pipelines".into(), serde_json::to_value(pipelines)?);
    Ok(serde_json::to_string_pretty(&serde_json::Value::Object(top))? + "\n")
}

/// Why a [`LineWriter`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Writing the framing between entries failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Encoding (or writing) an entry failed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Writes a script as it goes, one entry per line: the libraries first, then
/// ([`LineWriter::pipelines`]) the pipelines. Each entry is compact JSON, its fields in
/// declaration order.
pub struct LineWriter<W: Write> {
    w: W,
    written: usize,
}

impl<W: Write> LineWriter<W> {
    /// Starts a script on `w`: the version, then the libraries.
    pub fn new(mut w: W) -> Result<Self, WriteError> {
        write!(w, "{{\"granary_script\":{SCRIPT_VERSION},\n\"libraries\":[\n")?;
        Ok(LineWriter { w, written: 0 })
    }

    /// Appends one library.
    pub fn library(&mut self, library: &LibraryEntry) -> Result<(), WriteError> {
        self.entry(library)
    }

    /// Ends the libraries; pipelines follow.
    pub fn pipelines(mut self) -> Result<PipelineLines<W>, WriteError> {
        self.w.write_all(b"\n],\n\"pipelines\":[\n")?;
        Ok(PipelineLines(LineWriter { w: self.w, written: 0 }))
    }

    fn entry(&mut self, value: &impl Serialize) -> Result<(), WriteError> {
        if self.written > 0 {
            self.w.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.w, value)?;
        self.written += 1;
        Ok(())
    }
}

/// The pipelines part of a [`LineWriter`]'s script.
pub struct PipelineLines<W: Write>(LineWriter<W>);

impl<W: Write> PipelineLines<W> {
    /// Appends one pipeline.
    pub fn pipeline<S: Serialize>(&mut self, pipeline: &Pipeline<S>) -> Result<(), WriteError> {
        self.0.entry(pipeline)
    }

    /// Pipelines written so far.
    pub fn written(&self) -> usize {
        self.0.written
    }

    /// Closes the script and flushes `w`, which it returns.
    pub fn finish(self) -> Result<W, WriteError> {
        let mut w = self.0.w;
        w.write_all(b"\n]}\n")?;
        w.flush()?;
        Ok(w)
    }
}

/// Renders pipelines as a self-contained script: every library's source is written inline, so
/// the file can be replayed anywhere. Output is deterministic for a given input order; library
/// names that clash between different contents get a `~N` suffix.
pub fn script_json(pipelines: &[(Option<String>, &PipelineDescriptor)]) -> String {
    let mut libs = Libraries::default();
    let raw_pipelines: Vec<RawPipeline> = pipelines
        .iter()
        .map(|(label, d)| match d {
            PipelineDescriptor::Render(r) => RawPipeline {
                label: label.clone(),
                render: Some(RawRender {
                    vertex: libs.function(&r.vertex).0,
                    fragment: r.fragment.as_ref().map(|f| libs.function(f).0),
                    vertex_buffers: r.state.vertex_buffers.clone(),
                    primitive: r.state.primitive.clone(),
                    color_attachments: r.state.color_attachments.clone(),
                    depth_stencil: r.state.depth_stencil.clone(),
                    sample_count: r.state.sample_count,
                    alpha_to_coverage: r.state.alpha_to_coverage,
                }),
                compute: None,
                vulkan: None,
                layout: r.layout.as_deref().map(raw_layout),
            },
            PipelineDescriptor::Native(n) => RawPipeline {
                label: label.clone(),
                render: None,
                compute: None,
                vulkan: Some(RawNative {
                    stages: n
                        .stages
                        .iter()
                        .map(|s| RawNativeStage {
                            stage: s.stage,
                            function: libs.function(&s.function).0,
                            specialization: s.specialization.as_deref().cloned(),
                        })
                        .collect(),
                    state: (*n.state).clone(),
                }),
                layout: None,
            },
            PipelineDescriptor::Compute(c) => RawPipeline {
                label: label.clone(),
                render: None,
                compute: Some(RawCompute { function: libs.function(&c.compute).0 }),
                vulkan: None,
                layout: c.layout.as_deref().map(raw_layout),
            },
        })
        .collect();
    let libraries: Vec<LibraryEntry> =
        libs.by_name.into_values().map(|(lib, name)| LibraryEntry::inline(&lib, name)).collect();
    // Derive-serialized shapes with string keys always serialize.
    pretty(&libraries, &raw_pipelines).unwrap_or_default()
}

#[derive(Default)]
struct Libraries {
    /// name → (library, chosen name)
    by_name: BTreeMap<String, (Arc<Library>, String)>,
    by_hash: BTreeMap<u128, String>,
}

impl Libraries {
    fn name_for(&mut self, lib: &Arc<Library>) -> String {
        if let Some(n) = self.by_hash.get(&lib.hash().0) {
            return n.clone();
        }
        let mut name = lib.name().to_string();
        let mut n = 2;
        while self.by_name.contains_key(&name) {
            name = format!("{}~{n}", lib.name());
            n += 1;
        }
        self.by_hash.insert(lib.hash().0, name.clone());
        self.by_name.insert(name.clone(), (lib.clone(), name.clone()));
        name
    }

    fn function(&mut self, f: &FunctionDescriptor) -> Function {
        match f {
            FunctionDescriptor::Library { library, name } => Function::library(self.name_for(library), name.clone()),
            FunctionDescriptor::Specialized { function, constants, specialized_name } => {
                Function::specialized(self.function(function), constants.iter(), specialized_name.clone())
            }
        }
    }
}

fn raw_layout(l: &crate::descriptor::ExplicitLayout) -> RawLayout {
    let stages = |m: crate::descriptor::StageMask| m.stages().collect::<Vec<_>>();
    RawLayout {
        bindings: l
            .bindings
            .iter()
            .map(|b| RawBinding {
                group: b.group,
                binding: b.binding,
                kind: b.kind,
                count: (b.count != 0).then_some(b.count),
                visibility: stages(b.visibility),
            })
            .collect(),
        immediates: l.immediates.map(|i| RawImmediates { size: i.size, visibility: stages(i.visibility) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::Constant;

    #[test]
    fn script_line_writer_frames_one_entry_per_line() {
        let mut w = LineWriter::new(Vec::new()).unwrap();
        w.library(&LibraryEntry::at_path("vs", "shaders/vs.wgsl")).unwrap();
        w.library(&LibraryEntry::at_path("fs", "shaders/fs.wgsl")).unwrap();
        let mut p = w.pipelines().unwrap();
        let c = Constant { id: ConstantId::Name("FOG".into()), value: ConstantValue::Bool(true) };
        let fs = Function::specialized(Function::library("fs", "main"), [&c], Some("fs#1".into()));
        let body = Render::new(Function::library("vs", "main"), Some(fs), serde_json::json!({"sample_count": 4}));
        p.pipeline(&Pipeline::render(Some("a".into()), body)).unwrap();
        p.pipeline(&Pipeline::<()>::compute(None, Function::library("vs", "cs"))).unwrap();
        assert_eq!(p.written(), 2);
        let text = String::from_utf8(p.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "{\"granary_script\":1,\n\"libraries\":[\n\
             {\"name\":\"vs\",\"path\":\"shaders/vs.wgsl\"},\n{\"name\":\"fs\",\"path\":\"shaders/fs.wgsl\"}\n],\n\"pipelines\":[\n\
             {\"label\":\"a\",\"render\":{\"vertex\":{\"library\":\"vs\",\"function\":\"main\"},\
             \"fragment\":{\"specialize\":{\"library\":\"fs\",\"function\":\"main\"},\
             \"constants\":[{\"name\":\"FOG\",\"bool\":true}],\"name\":\"fs#1\"},\"sample_count\":4}},\n\
             {\"compute\":{\"function\":{\"library\":\"vs\",\"function\":\"cs\"}}}\n]}\n"
        );
        let empty = String::from_utf8(LineWriter::new(Vec::new()).unwrap().pipelines().unwrap().finish().unwrap());
        assert_eq!(empty.unwrap(), "{\"granary_script\":1,\n\"libraries\":[\n\n],\n\"pipelines\":[\n\n]}\n");
    }

    #[test]
    fn script_pretty_sorts_keys_and_reads_back() {
        let libs = [LibraryEntry::at_path("vs", "vs.wgsl")];
        let pipelines = [Pipeline::<()>::compute(Some("c".into()), Function::library("vs", "cs"))];
        let text = pretty(&libs, &pipelines).unwrap();
        assert!(text.starts_with("{\n  \"granary_script\": 1,\n  \"libraries\": [\n"), "{text}");
        assert!(text.contains("\"function\": \"cs\",\n          \"library\": \"vs\""), "{text}");
        assert!(text.ends_with("}\n"));
        let top = RawScriptTop::parse(&text, std::path::Path::new("s.json")).unwrap();
        assert_eq!((top.libraries.len(), top.pipelines.len()), (1, 1));
    }
}
