//! Export to the Metal 4 pipelines script (`.mtl4-json`): the JSON that
//! `MTL4PipelineDataSetSerializer::serializeAsPipelinesScript` writes and `metal-tt` reads
//! to build a binary archive offline. docs/FORMAT.md §5 documents the mapping, its sources and
//! its limits; docs/mtl4-pipelines-script.schema.json the shape this module writes.
//!
//! Input is a granary archive (stages with MSL outputs and the render state, §1.11) or a
//! pipelines script (§2), compiled here to MSL with granary's own compiler. Every stage's MSL
//! is written as one `.metal` library next to the output; the script refers to it by a path
//! relative to the output's folder. Whatever Metal cannot take from a pipeline is listed with
//! the pipeline and the reason ([`ExportReport::pipelines`]); a pipeline that cannot be
//! exported at all is in [`ExportReport::skipped`], never silently left out.
//!
//! This module reads the input and writes the script; `metal_state.rs` converts render state,
//! colour attachments and constants, and `names.rs` holds Metal's names for granary's values.

mod metal_state;
mod names;

pub use names::{blend_factor, blend_op, pixel_format, vertex_format, write_mask};

use crate::compiler::{Compiler, CompilerOptions};
use crate::descriptor::{Constant, FunctionDescriptor};
use crate::script::{Script, ScriptError};
use granary_archive::{Archive, ArchiveError, PipelineKind, RenderState, ShaderStage, Target, TargetSet};
use metal_state::{constant_value, render_state};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// The `version` the output declares: what the serializer writes in public examples
/// (docs/FORMAT.md §5.1).
pub const SCRIPT_VERSION: (u32, u32, u32) = (0, 1, 0);

/// The `generator` the output declares.
pub const GENERATOR: &str = "granary";

/// Metal's buffer argument table has 31 entries (0..=30). Vertex buffer slot `i` is bound at
/// `30 - i`, from the top down, as docs/FORMAT.md §1.7 tells engines to bind them.
pub const TOP_BUFFER_INDEX: u32 = 30;

/// Why an export could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum Mtl4Error {
    /// The input could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The input.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The input is an archive and it is damaged.
    #[error("archive {path}: {source}")]
    Archive {
        /// The archive.
        path: PathBuf,
        /// What is wrong.
        source: ArchiveError,
    },
    /// The input is a pipelines script that cannot be read as one.
    #[error("{0}")]
    Script(#[from] ScriptError),
    /// An output file or folder could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The output path has no file name.
    #[error("output path {0} has no file name")]
    BadOutput(PathBuf),
    /// An archive without MSL outputs: harvest it with `--targets ...,msl`.
    #[error("archive {0} has no MSL outputs; harvest with --targets spirv,msl (or export the pipelines script)")]
    NoMsl(PathBuf),
    /// The script could not be serialized (not expected).
    #[error("internal: {0}")]
    Json(#[from] serde_json::Error),
}

/// Something of a pipeline that the Metal 4 script does not carry, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Dropped {
    /// The granary field (pipelines-script spelling, §2).
    pub field: String,
    /// Why it is not in the Metal pipeline descriptor.
    pub reason: String,
}

/// One exported pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct ExportedPipeline {
    /// Its label (`None`: unlabelled).
    pub label: Option<String>,
    /// Further labels of the same archived pipeline (the descriptor carries the first).
    pub other_labels: Vec<String>,
    /// `render` or `compute`.
    pub kind: &'static str,
    /// What Metal does not take from it.
    pub not_carried: Vec<Dropped>,
}

/// A pipeline that could not be exported.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// Its label, or `pipelines[i]` / the archive index.
    pub pipeline: String,
    /// Why.
    pub reason: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    /// The script written.
    pub output: PathBuf,
    /// The folder the MSL libraries were written to.
    pub libraries_dir: PathBuf,
    /// `archive` or `script`.
    pub input_kind: &'static str,
    /// MSL libraries written (one per distinct stage function).
    pub libraries: usize,
    /// Function descriptors (library and specialized).
    pub function_descriptors: usize,
    /// Render pipeline descriptors written.
    pub render_pipelines: usize,
    /// Compute pipeline descriptors written.
    pub compute_pipelines: usize,
    /// Every exported pipeline, with what Metal does not take from it.
    pub exported: Vec<ExportedPipeline>,
    /// Pipelines not exported, with the reason.
    pub skipped: Vec<Skipped>,
}

/// One stage, whichever the input.
struct StageIn {
    stage: ShaderStage,
    key_hex: String,
    entry_point: String,
    msl: Vec<u8>,
    constants: Vec<Constant>,
}

/// One pipeline, whichever the input.
struct PipelineIn {
    labels: Vec<String>,
    kind: PipelineKind,
    stages: Vec<StageIn>,
    state: Option<RenderState>,
}

/// Exports `input` (an archive, or a pipelines script: a file whose first non-blank byte is
/// `{`) to the Metal 4 pipelines script `out`, writing the MSL libraries to
/// `<out>.libraries/`.
pub fn export(input: &Path, out: &Path) -> Result<ExportReport, Mtl4Error> {
    if is_json(input)? {
        export_script(input, out)
    } else {
        export_archive(input, out)
    }
}

fn is_json(path: &Path) -> Result<bool, Mtl4Error> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|source| Mtl4Error::Read { path: path.into(), source })?;
    let mut buf = [0u8; 256];
    let n = f.read(&mut buf).map_err(|source| Mtl4Error::Read { path: path.into(), source })?;
    Ok(buf[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

/// Exports every pipeline of the archive at `path` (which must hold MSL outputs).
pub fn export_archive(path: &Path, out: &Path) -> Result<ExportReport, Mtl4Error> {
    let err = |source| Mtl4Error::Archive { path: path.into(), source };
    let archive = Archive::open(path).map_err(err)?;
    if !archive.targets().contains(Target::Msl) && !archive.is_empty() {
        return Err(Mtl4Error::NoMsl(path.into()));
    }
    let mut labels: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (label, i) in archive.labels().map_err(err)? {
        labels.entry(i).or_default().push(label.to_string());
    }
    let mut pipelines = Vec::new();
    let mut skipped = Vec::new();
    for p in archive.iter() {
        let p = p.map_err(err)?;
        let names = labels.remove(&p.index()).unwrap_or_default();
        let display = names.first().cloned().unwrap_or_else(|| format!("pipeline {}", p.key()));
        let mut stages = Vec::new();
        let mut missing = None;
        for s in p.stages().map_err(err)? {
            match s.output(Target::Msl).map_err(err)? {
                Some(msl) => stages.push(StageIn {
                    stage: s.stage,
                    key_hex: s.key.to_hex(),
                    entry_point: s.entry_point.to_string(),
                    msl: msl.to_vec(),
                    constants: Vec::new(),
                }),
                None => missing = Some(format!("{} stage {} has no MSL output", s.stage.name(), s.entry_point)),
            }
        }
        if let Some(reason) = missing {
            skipped.push(Skipped { pipeline: display, reason });
            continue;
        }
        let state = p.state().map_err(err)?;
        pipelines.push(PipelineIn { labels: names, kind: p.kind(), stages, state });
    }
    write_export(out, "archive", pipelines, skipped)
}

/// Compiles every pipeline of the pipelines script at `path` to MSL and exports it.
pub fn export_script(path: &Path, out: &Path) -> Result<ExportReport, Mtl4Error> {
    let script = Script::load(path)?;
    let compiler = Compiler::new(CompilerOptions { targets: TargetSet::of(&[Target::Msl]), ..Default::default() });
    let mut pipelines = Vec::new();
    let mut skipped = Vec::new();
    for sp in &script.pipelines {
        let desc = match &sp.descriptor {
            Ok(d) => d,
            Err(e) => {
                skipped.push(Skipped { pipeline: sp.display_name(), reason: e.to_string() });
                continue;
            }
        };
        let entry = match compiler.compile(desc) {
            Ok(e) => e,
            Err(e) => {
                skipped.push(Skipped { pipeline: sp.display_name(), reason: e.to_string() });
                continue;
            }
        };
        let functions = desc.stages();
        let mut stages = Vec::new();
        let mut missing = None;
        for (s, (_, function)) in entry.stages.iter().zip(functions.iter()) {
            match s.outputs.get(Target::Msl) {
                Some(msl) => stages.push(StageIn {
                    stage: s.stage,
                    key_hex: s.key.to_hex(),
                    entry_point: s.entry_point.clone(),
                    msl: msl.bytes().to_vec(),
                    constants: function_constants(function),
                }),
                None => missing = Some(format!("{} stage {} has no MSL output", s.stage.name(), s.entry_point)),
            }
        }
        if let Some(reason) = missing {
            skipped.push(Skipped { pipeline: sp.display_name(), reason });
            continue;
        }
        let state = match desc {
            crate::descriptor::PipelineDescriptor::Render(r) => Some(r.state.clone()),
            crate::descriptor::PipelineDescriptor::Compute(_) => None,
            crate::descriptor::PipelineDescriptor::Native(_) => {
                skipped.push(Skipped {
                    pipeline: sp.display_name(),
                    reason: "a native Vulkan pipeline has no Metal 4 descriptor (its state is Vulkan's)".into(),
                });
                continue;
            }
        };
        pipelines.push(PipelineIn { labels: sp.label.iter().cloned().collect(), kind: desc.kind(), stages, state });
    }
    write_export(out, "script", pipelines, skipped)
}

fn function_constants(f: &FunctionDescriptor) -> Vec<Constant> {
    f.resolved_constants()
}

/// The entry point's name in naga's MSL output: the identifier before `(` on the line that
/// starts with `vertex`, `fragment` or `kernel` (naga may rename an entry point that clashes
/// with an MSL keyword, e.g. `main`); the source name if no such line is found.
pub fn msl_entry_name(msl: &str, fallback: &str) -> String {
    for line in msl.lines() {
        let t = line.trim_start();
        if ["vertex ", "fragment ", "kernel "].iter().any(|p| t.starts_with(p)) {
            if let Some(open) = t.find('(') {
                if let Some(name) = t[..open].split_whitespace().last() {
                    return name.to_string();
                }
            }
        }
    }
    fallback.to_string()
}

fn write_export(
    out: &Path,
    input_kind: &'static str,
    pipelines: Vec<PipelineIn>,
    mut skipped: Vec<Skipped>,
) -> Result<ExportReport, Mtl4Error> {
    // Metal's buffer table has TOP_BUFFER_INDEX + 1 entries: more vertex buffers cannot bind.
    let (pipelines, too_many): (Vec<_>, Vec<_>) = pipelines
        .into_iter()
        .partition(|p| p.state.as_ref().is_none_or(|s| s.vertex_buffers.len() <= TOP_BUFFER_INDEX as usize + 1));
    for p in too_many {
        skipped.push(Skipped {
            pipeline: p.labels.first().cloned().unwrap_or_else(|| "unlabelled pipeline".into()),
            reason: format!("more than {} vertex buffers: Metal's buffer table has no room", TOP_BUFFER_INDEX + 1),
        });
    }
    let file_name = out.file_name().ok_or_else(|| Mtl4Error::BadOutput(out.into()))?.to_string_lossy().into_owned();
    let dir_name = format!("{file_name}.libraries");
    let parent = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let lib_dir = parent.join(&dir_name);
    std::fs::create_dir_all(&lib_dir).map_err(|source| Mtl4Error::Write { path: lib_dir.clone(), source })?;

    let mut libraries = Vec::new();
    let mut library_functions = Vec::new();
    let mut specialized = Vec::new();
    let mut seen_lib = HashSet::new();
    let mut seen_spec = HashSet::new();
    let mut render = Vec::new();
    let mut compute = Vec::new();
    let mut exported = Vec::new();

    for p in &pipelines {
        let mut refs = Vec::new();
        for s in &p.stages {
            let fn_label = format!("fn-{}", s.key_hex);
            if seen_lib.insert(s.key_hex.clone()) {
                let file = lib_dir.join(format!("{}.metal", s.key_hex));
                std::fs::write(&file, &s.msl).map_err(|source| Mtl4Error::Write { path: file.clone(), source })?;
                libraries.push(json!({"label": s.key_hex, "path": format!("{dir_name}/{}.metal", s.key_hex)}));
                let name = msl_entry_name(&String::from_utf8_lossy(&s.msl), &s.entry_point);
                library_functions.push(json!({"label": fn_label, "name": name, "library": s.key_hex}));
            }
            if s.constants.is_empty() {
                refs.push(format!("fnd:{fn_label}"));
            } else {
                let spec_label = format!("spec-{}", s.key_hex);
                if seen_spec.insert(s.key_hex.clone()) {
                    let values: Vec<Value> = s.constants.iter().map(constant_value).collect();
                    specialized.push(json!({
                        "label": spec_label,
                        "function_descriptor": format!("fnd:{fn_label}"),
                        "constant_values": values,
                    }));
                }
                refs.push(format!("fnd:{spec_label}"));
            }
        }
        let label = p.labels.first().cloned();
        let mut dropped = Vec::new();
        let mut d = Map::new();
        if let Some(l) = &label {
            d.insert("label".into(), json!(l));
        }
        match p.kind {
            PipelineKind::Compute => {
                d.insert("compute_function_descriptor".into(), json!(refs[0]));
                compute.push(Value::Object(d));
            }
            _ => {
                for (s, r) in p.stages.iter().zip(&refs) {
                    let key = match s.stage {
                        ShaderStage::Fragment => "fragment_function_descriptor",
                        _ => "vertex_function_descriptor",
                    };
                    d.insert(key.into(), json!(r));
                }
                if let Some(state) = &p.state {
                    render_state(state, &mut d, &mut dropped);
                }
                render.push(Value::Object(d));
            }
        }
        exported.push(ExportedPipeline {
            label,
            other_labels: p.labels.iter().skip(1).cloned().collect(),
            kind: if p.kind == PipelineKind::Compute { "compute" } else { "render" },
            not_carried: dropped,
        });
    }

    let mut function_descriptors = Map::new();
    function_descriptors.insert("library_function_descriptors".into(), Value::Array(library_functions.clone()));
    if !specialized.is_empty() {
        function_descriptors.insert("specialized_function_descriptors".into(), Value::Array(specialized.clone()));
    }
    let mut pipeline_descriptors = Map::new();
    pipeline_descriptors.insert("render_pipeline_descriptors".into(), Value::Array(render.clone()));
    pipeline_descriptors.insert("compute_pipeline_descriptors".into(), Value::Array(compute.clone()));
    let doc = json!({
        "version": {"major": SCRIPT_VERSION.0, "minor": SCRIPT_VERSION.1, "sub_minor": SCRIPT_VERSION.2},
        "generator": GENERATOR,
        "libraries": libraries,
        "function_descriptors": function_descriptors,
        "pipeline_descriptors": pipeline_descriptors,
    });
    let mut text = serde_json::to_string_pretty(&doc)?;
    text.push('\n');
    std::fs::write(out, text).map_err(|source| Mtl4Error::Write { path: out.into(), source })?;
    Ok(ExportReport {
        output: out.into(),
        libraries_dir: lib_dir,
        input_kind,
        libraries: libraries.len(),
        function_descriptors: library_functions.len() + specialized.len(),
        render_pipelines: render.len(),
        compute_pipelines: compute.len(),
        exported,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_entry_name_is_read_from_msl() {
        let msl = "#include <metal_stdlib>\nstruct main_Output {};\nvertex main_Output main_(\n  uint vi [[vertex_id]]\n) {}\n";
        assert_eq!(msl_entry_name(msl, "main"), "main_");
        assert_eq!(msl_entry_name("kernel void cs(uint3 id) {}", "x"), "cs");
        assert_eq!(msl_entry_name("nothing here", "fallback"), "fallback");
    }
}
