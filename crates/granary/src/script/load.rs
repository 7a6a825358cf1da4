//! Reading a pipelines script into descriptors.

use super::error::{join_path, ScriptError};
use super::raw::*;
use crate::descriptor::{
    ComputePipelineDescriptor, Constant, ConstantId, ConstantValue, ExplicitLayout, FunctionDescriptor, Immediates,
    LayoutBinding, Library, PipelineDescriptor, RenderPipelineDescriptor, RenderState, SourceKind, StageMask,
};
use base64::Engine as _;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A parsed pipelines script. Each library and each pipeline carries its own result, so one
/// bad entry fails only the pipelines it affects.
#[derive(Debug)]
pub struct Script {
    /// The script file.
    pub path: PathBuf,
    /// Libraries in declaration order: name and the loaded library or why it could not be.
    pub libraries: Vec<(String, Result<Arc<Library>, ScriptError>)>,
    /// Pipelines in script order.
    pub pipelines: Vec<ScriptPipeline>,
    /// `expand_unspecialized`, if the script has one.
    pub expand_unspecialized: Option<super::expand::Expansion>,
}

/// One pipeline of a script.
#[derive(Debug)]
pub struct ScriptPipeline {
    /// Position in the script's `pipelines` array.
    pub index: usize,
    /// The label, if the entry had a readable one.
    pub label: Option<String>,
    /// Byte offset of the entry in the script file (see [`LineIndex`] for line and column).
    pub offset: usize,
    /// The descriptor, or what is wrong with this entry.
    pub descriptor: Result<PipelineDescriptor, ScriptError>,
}

impl ScriptPipeline {
    /// A name for messages: the label, or `pipelines[i]`.
    pub fn display_name(&self) -> String {
        match &self.label {
            Some(l) => l.clone(),
            None => format!("pipelines[{}]", self.index),
        }
    }
}

impl Script {
    /// Reads and parses the script at `path`; library paths resolve relative to its folder.
    ///
    /// Fails as a whole only when the file cannot be read or is not a JSON object of the right
    /// shape; problems inside one library or pipeline are kept with that entry.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| ScriptError::at(path, "", format!("cannot read script: {e}")))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, path, &base)
    }

    /// Parses script text. `path` names it in messages; `base_dir` resolves library paths.
    pub fn parse(text: &str, path: &Path, base_dir: &Path) -> Result<Script, ScriptError> {
        let top = RawScriptTop::parse(text, path)?;

        let mut libraries: Vec<(String, Result<Arc<Library>, ScriptError>)> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (i, raw) in top.libraries.iter().enumerate() {
            let jp = format!("libraries[{i}]");
            let raw: RawLibrary = match from_raw(raw, text, path, &jp) {
                Ok(r) => r,
                Err(e) => {
                    libraries.push((format!("<{jp}>"), Err(e)));
                    continue;
                }
            };
            let name = raw.name.clone();
            let loaded = if let Some(first) = by_name.get(&name) {
                Err(ScriptError::at(
                    path,
                    format!("{jp}.name"),
                    format!("duplicate library name '{name}' (first defined at libraries[{first}])"),
                ))
            } else {
                by_name.insert(name.clone(), i);
                load_library(&raw, path, base_dir, &jp)
            };
            libraries.push((name, loaded));
        }

        // A name defined twice is ambiguous: every pipeline naming it fails (never "the first
        // one wins"), while the script's other pipelines still load.
        let mut ambiguous: HashMap<String, ScriptError> = HashMap::new();
        for (i, (name, _)) in libraries.iter().enumerate() {
            if let Some(first) = by_name.get(name).filter(|first| **first != i) {
                ambiguous.entry(name.clone()).or_insert_with(|| {
                    ScriptError::at(
                        path,
                        format!("libraries[{i}].name"),
                        format!("library name '{name}' is defined twice (libraries[{first}] and libraries[{i}])"),
                    )
                });
            }
        }
        // Pipelines convert independently: split them over the available cores.
        let resolve = |name: &str| match ambiguous.get(name) {
            Some(e) => Some(Err(e.clone())),
            None => by_name.get(name).map(|i| libraries[*i].1.clone()),
        };
        let known = || by_name.keys().cloned().collect();
        let lines = std::sync::OnceLock::new();
        let cx = Ctx { path, library: &resolve, known: &known };
        let convert = |i: usize, raw: &serde_json::value::RawValue| {
            let jp = format!("pipelines[{i}]");
            match from_raw::<RawPipeline>(raw, text, path, &jp) {
                Ok(p) => {
                    (p.label.clone(), convert_pipeline(p, &cx, &jp).map_err(|e| locate(e, text, &lines, raw, &jp)))
                }
                Err(e) => {
                    let label = serde_json::from_str::<LabelOnly>(raw.get()).ok().and_then(|l| l.label);
                    (label, Err(e))
                }
            }
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(top.pipelines.len() / 256 + 1);
        let chunk = top.pipelines.len().div_ceil(threads).max(1);
        let converted: Vec<(Option<String>, Result<PipelineDescriptor, ScriptError>)> = std::thread::scope(|s| {
            let handles: Vec<_> = top
                .pipelines
                .chunks(chunk)
                .enumerate()
                .map(|(c, part)| {
                    let convert = &convert;
                    s.spawn(move || {
                        part.iter().enumerate().map(|(j, raw)| convert(c * chunk + j, raw)).collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        });
        if converted.len() != top.pipelines.len() {
            return Err(ScriptError::at(path, "pipelines", "internal error: a conversion thread failed"));
        }

        let mut pipelines = Vec::with_capacity(converted.len());
        let mut labels: HashMap<String, usize> = HashMap::new();
        for (i, (label, descriptor)) in converted.into_iter().enumerate() {
            let descriptor = match (&label, descriptor) {
                (Some(l), Ok(d)) => match labels.get(l) {
                    Some(first) => Err(ScriptError::at(
                        path,
                        format!("pipelines[{i}].label"),
                        format!("duplicate label '{l}' (first used by pipelines[{first}])"),
                    )),
                    None => {
                        labels.insert(l.clone(), i);
                        Ok(d)
                    }
                },
                (_, d) => d,
            };
            let offset = offset_in(text, top.pipelines[i].get()).unwrap_or(0);
            pipelines.push(ScriptPipeline { index: i, label, descriptor, offset });
        }
        Ok(Script { path: path.to_path_buf(), libraries, pipelines, expand_unspecialized: top.expand_unspecialized })
    }
}

/// Deserializes one entry from its raw text, reporting errors with the entry's JSON path and
/// the position in the whole file.
pub(super) fn from_raw<T: serde::de::DeserializeOwned>(
    raw: &serde_json::value::RawValue,
    text: &str,
    path: &Path,
    jp: &str,
) -> Result<T, ScriptError> {
    let de = &mut serde_json::Deserializer::from_str(raw.get());
    serde_path_to_error::deserialize(de).map_err(|e| {
        let inner_path = e.path().to_string();
        let inner = e.into_inner();
        let mut message = inner.to_string();
        if let Some(i) = message.rfind(" at line ") {
            message.truncate(i);
        }
        let (line, column) = position_in_file(text, raw.get(), inner.line(), inner.column());
        ScriptError {
            file: path.to_path_buf(),
            json_path: join_path(jp, if inner_path == "." { "" } else { &inner_path }),
            line,
            column,
            message,
        }
    })
}

/// Byte offset of `part`, a slice of `text`, within `text`.
pub(super) fn offset_in(text: &str, part: &str) -> Option<usize> {
    (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize).filter(|b| *b <= text.len())
}

/// Maps byte offsets of a text to 1-based line and column numbers.
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes the line starts of `text`.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }
    /// The 1-based (line, column) of byte `offset`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        (line, offset - self.starts[line - 1] + 1)
    }
}

/// Converts a (line, column) inside `part`, a slice of `text`, to one in `text`.
fn position_in_file(text: &str, part: &str, line: usize, column: usize) -> (Option<usize>, Option<usize>) {
    let base = offset_in(text, part);
    match (base, line) {
        (Some(base), 1..) => {
            let before = &text[..base];
            let base_line = before.matches('\n').count() + 1;
            let base_col = base - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            let col = if line == 1 { base_col + column.saturating_sub(1) } else { column };
            (Some(base_line + line - 1), Some(col))
        }
        _ => (None, None),
    }
}

pub(super) fn load_library(
    raw: &RawLibrary,
    path: &Path,
    base_dir: &Path,
    jp: &str,
) -> Result<Arc<Library>, ScriptError> {
    let err = |field: &str, msg: String| ScriptError::at(path, join_path(jp, field), msg);
    let sources = [raw.path.is_some(), raw.source.is_some(), raw.spirv_base64.is_some()];
    if sources.iter().filter(|b| **b).count() != 1 {
        return Err(err("", "a library needs exactly one of \"path\", \"source\" or \"spirv_base64\"".into()));
    }
    let (kind, stage_from_ext, bytes, origin) = if let Some(p) = &raw.path {
        let file = base_dir.join(p);
        let guessed = SourceKind::from_extension(&file);
        let kind = raw.kind.or(guessed.map(|g| g.0)).ok_or_else(|| {
            err(
                "kind",
                format!("cannot tell the language of '{p}' from its extension; set \"kind\" to wgsl, glsl or spirv"),
            )
        })?;
        let bytes = std::fs::read(&file)
            .map_err(|e| err("path", format!("cannot read library file '{}': {e}", file.display())))?;
        (kind, guessed.and_then(|g| g.1), bytes, Some(file))
    } else if let Some(s) = &raw.source {
        let kind = raw.kind.ok_or_else(|| err("kind", "an inline \"source\" needs \"kind\": wgsl or glsl".into()))?;
        if kind == SourceKind::Spirv {
            return Err(err("source", "SPIR-V is binary: give it as \"spirv_base64\" or \"path\"".into()));
        }
        (kind, None, s.clone().into_bytes(), None)
    } else {
        let b64 = raw.spirv_base64.as_deref().unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| err("spirv_base64", format!("not valid base64: {e}")))?;
        (SourceKind::Spirv, None, bytes, None)
    };
    let stage = raw.stage.or(stage_from_ext);
    if kind == SourceKind::Glsl && stage.is_none() {
        return Err(err(
            "stage",
            "a GLSL library needs \"stage\" (vertex, fragment or compute) or a .vert/.frag/.comp file name".into(),
        ));
    }
    Ok(Library::new(raw.name.clone(), kind, stage, bytes, origin))
}

/// A library as loaded from a script entry, or why it could not be.
pub(super) type LoadedLibrary = Result<Arc<Library>, ScriptError>;

/// What converting a pipeline needs: the script's path (for messages) and a way to resolve a
/// library name (`None`: no such library).
pub(super) struct Ctx<'a> {
    pub path: &'a Path,
    pub library: &'a (dyn Fn(&str) -> Option<LoadedLibrary> + Sync),
    /// The script's library names, for the message about an unknown one (called only then).
    pub known: &'a (dyn Fn() -> Vec<String> + Sync),
}

/// The message for a library name the script does not define: the names it does (sorted, the
/// first [`KNOWN_SHOWN`]) and the closest one when it is a likely typo.
pub(super) fn unknown_library(name: &str, mut known: Vec<String>) -> String {
    known.sort();
    if known.is_empty() {
        return format!("unknown library '{name}': the script defines no libraries");
    }
    let close = known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, k)| *d <= (k.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| format!(" (did you mean '{k}'?)"))
        .unwrap_or_default();
    let shown: Vec<String> = known.iter().take(KNOWN_SHOWN).map(|k| format!("'{k}'")).collect();
    let more =
        if known.len() > KNOWN_SHOWN { format!(" and {} more", known.len() - KNOWN_SHOWN) } else { String::new() };
    format!("unknown library '{name}'{close}; the script's libraries are {}{more}", shown.join(", "))
}

/// How many known library names an "unknown library" message lists.
const KNOWN_SHOWN: usize = 12;

/// Levenshtein distance over chars (names are short: O(|a|·|b|) is nothing).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Gives an error found after parsing (a [`ScriptError::at`], which knows only its JSON path)
/// the line and column of that path's value in the file, when `raw` (the entry at JSON path
/// `jp`, a slice of `text`) contains it. `lines` indexes `text` once for every error of the
/// script (filled on the first).
pub(super) fn locate(
    mut e: ScriptError,
    text: &str,
    lines: &std::sync::OnceLock<LineIndex>,
    raw: &serde_json::value::RawValue,
    jp: &str,
) -> ScriptError {
    if e.line.is_some() {
        return e;
    }
    let Some(rest) = e.json_path.strip_prefix(jp) else { return e };
    if let Some(offset) = value_at(raw, rest).and_then(|v| offset_in(text, v.get())) {
        let (l, c) = lines.get_or_init(|| LineIndex::new(text)).line_col(offset);
        (e.line, e.column) = (Some(l), Some(c));
    }
    e
}

/// The value at the relative JSON path `path` (`.render.vertex.library`, `.layout.bindings[2]`)
/// inside `raw`; `None` where a step is missing or the text is not the shape the path says.
fn value_at<'t>(raw: &'t serde_json::value::RawValue, path: &str) -> Option<&'t serde_json::value::RawValue> {
    use serde_json::value::RawValue;
    let mut here = raw;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (key, indices) = segment.split_once('[').map_or((segment, ""), |(k, i)| (k, i));
        if !key.is_empty() {
            let map: HashMap<&str, &'t RawValue> = serde_json::from_str(here.get()).ok()?;
            here = map.get(key).copied()?;
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            let i: usize = index.strip_suffix(']')?.parse().ok()?;
            let list: Vec<&'t RawValue> = serde_json::from_str(here.get()).ok()?;
            here = list.get(i).copied()?;
        }
    }
    Some(here)
}

/// An explicit layout from the script: bindings sorted, each (group, binding) once, array
/// sizes and visibilities valid.
fn convert_layout(raw: &RawLayout, cx: &Ctx<'_>, jp: &str) -> Result<ExplicitLayout, ScriptError> {
    let mask = |v: &[crate::descriptor::ShaderStage]| v.iter().fold(StageMask(0), |m, s| m.union(StageMask::of(*s)));
    let mut bindings = Vec::with_capacity(raw.bindings.len());
    for (i, b) in raw.bindings.iter().enumerate() {
        let at = format!("{jp}.layout.bindings[{i}]");
        if b.count == Some(0) {
            return Err(ScriptError::at(cx.path, format!("{at}.count"), "an array size is at least 1".to_string()));
        }
        if b.visibility.is_empty() {
            return Err(ScriptError::at(cx.path, format!("{at}.visibility"), "name at least one stage".to_string()));
        }
        if let Some(s) = b.visibility.iter().find(|s| s.is_ray_tracing()) {
            return Err(ScriptError::at(
                cx.path,
                format!("{at}.visibility"),
                format!("a {s} stage in a portable layout (ray-tracing pipelines are written in the native form)"),
            ));
        }
        bindings.push(LayoutBinding {
            group: b.group,
            binding: b.binding,
            kind: b.kind,
            count: b.count.unwrap_or(0),
            visibility: mask(&b.visibility),
        });
    }
    bindings.sort();
    if let Some(w) = bindings.windows(2).find(|w| (w[0].group, w[0].binding) == (w[1].group, w[1].binding)) {
        return Err(ScriptError::at(
            cx.path,
            format!("{jp}.layout.bindings"),
            format!("@group({}) @binding({}) is listed twice", w[0].group, w[0].binding),
        ));
    }
    if let Some(s) = raw.immediates.iter().flat_map(|i| &i.visibility).find(|s| s.is_ray_tracing()) {
        return Err(ScriptError::at(
            cx.path,
            format!("{jp}.layout.immediates.visibility"),
            format!("a {s} stage in a portable layout (ray-tracing pipelines are written in the native form)"),
        ));
    }
    let immediates = raw.immediates.as_ref().map(|i| Immediates { size: i.size, visibility: mask(&i.visibility) });
    Ok(ExplicitLayout { bindings, immediates })
}

pub(super) fn convert_pipeline(raw: RawPipeline, cx: &Ctx<'_>, jp: &str) -> Result<PipelineDescriptor, ScriptError> {
    if let Some(v) = raw.vulkan {
        if raw.render.is_some() || raw.compute.is_some() {
            return Err(ScriptError::at(
                cx.path,
                jp,
                "a pipeline needs exactly one of \"render\" or \"compute\" (or \"vulkan\", the native form)",
            ));
        }
        if raw.layout.is_some() {
            return Err(ScriptError::at(
                cx.path,
                format!("{jp}.layout"),
                "a native pipeline's layout is its \"vulkan.state.layout\" (VkPipelineLayoutCreateInfo), not an explicit \"layout\"",
            ));
        }
        return super::native::convert_native(v, raw.label, cx, &format!("{jp}.vulkan"))
            .map(PipelineDescriptor::Native);
    }
    let layout = match &raw.layout {
        Some(l) => Some(Arc::new(convert_layout(l, cx, jp)?)),
        None => None,
    };
    match (raw.render, raw.compute) {
        (Some(r), None) => {
            let vertex = convert_function(&r.vertex, cx, &format!("{jp}.render.vertex"))?;
            let fragment = match &r.fragment {
                Some(f) => Some(convert_function(f, cx, &format!("{jp}.render.fragment"))?),
                None => None,
            };
            if r.sample_count == 0 || !r.sample_count.is_power_of_two() || r.sample_count > 64 {
                return Err(ScriptError::at(
                    cx.path,
                    format!("{jp}.render.sample_count"),
                    format!("sample count {} is not a power of two from 1 to 64", r.sample_count),
                ));
            }
            if let Some(ds) = &r.depth_stencil {
                if !ds.format.is_depth_stencil() {
                    return Err(ScriptError::at(
                        cx.path,
                        format!("{jp}.render.depth_stencil.format"),
                        format!("{:?} is not a depth or stencil format", ds.format),
                    ));
                }
            }
            for (i, c) in r.color_attachments.iter().enumerate() {
                if let crate::descriptor::MaybeSpecialized::Is(f) = c.format {
                    if f.is_depth_stencil() {
                        return Err(ScriptError::at(
                            cx.path,
                            format!("{jp}.render.color_attachments[{i}].format"),
                            format!("{f:?} is a depth/stencil format, not a colour format"),
                        ));
                    }
                }
            }
            Ok(PipelineDescriptor::Render(RenderPipelineDescriptor {
                label: raw.label,
                vertex,
                fragment,
                state: RenderState {
                    vertex_buffers: r.vertex_buffers,
                    primitive: r.primitive,
                    color_attachments: r.color_attachments,
                    depth_stencil: r.depth_stencil,
                    sample_count: r.sample_count,
                    alpha_to_coverage: r.alpha_to_coverage,
                },
                layout,
            }))
        }
        (None, Some(c)) => Ok(PipelineDescriptor::Compute(ComputePipelineDescriptor {
            label: raw.label,
            compute: convert_function(&c.function, cx, &format!("{jp}.compute.function"))?,
            layout,
        })),
        _ => Err(ScriptError::at(
            cx.path,
            jp,
            "a pipeline needs exactly one of \"render\" or \"compute\" (or \"vulkan\", the native form)",
        )),
    }
}

pub(super) fn convert_function(raw: &RawFunction, cx: &Ctx<'_>, jp: &str) -> Result<FunctionDescriptor, ScriptError> {
    let err = |field: &str, msg: String| ScriptError::at(cx.path, join_path(jp, field), msg);
    match (&raw.library, &raw.function, &raw.specialize) {
        (Some(lib), Some(func), None) => {
            if raw.constants.is_some() || raw.name.is_some() {
                return Err(err("", "\"constants\" and \"name\" belong in a {\"specialize\": …} function".into()));
            }
            let found = (cx.library)(lib).ok_or_else(|| err("library", unknown_library(lib, (cx.known)())))?;
            let library = match found {
                Ok(l) => l,
                Err(e) => return Err(err("library", format!("library '{lib}' is unavailable: {}", e.message))),
            };
            Ok(FunctionDescriptor::library(library, func.clone()))
        }
        (None, None, Some(inner)) => {
            let function = convert_function(inner, cx, &join_path(jp, "specialize"))?;
            let mut constants: Vec<Constant> = Vec::new();
            for (i, c) in raw.constants.iter().flatten().enumerate() {
                let cjp = format!("constants[{i}]");
                let constant = convert_constant(c).map_err(|m| err(&cjp, m))?;
                if constants.iter().any(|o| o.id == constant.id) {
                    return Err(err(&cjp, format!("constant {} is set twice", constant.id)));
                }
                constants.push(constant);
            }
            Ok(FunctionDescriptor::Specialized {
                function: Box::new(function),
                constants,
                specialized_name: raw.name.clone(),
            })
        }
        _ => Err(err("", "a function is either {\"library\", \"function\"} or {\"specialize\", \"constants\"}".into())),
    }
}

fn convert_constant(c: &RawConstant) -> Result<Constant, String> {
    let id = match (&c.name, c.id) {
        (Some(n), None) => ConstantId::Name(n.clone()),
        (None, Some(i)) => ConstantId::Id(i),
        _ => return Err("a constant needs exactly one of \"name\" or \"id\"".into()),
    };
    let values = [
        c.bool.map(ConstantValue::Bool),
        c.i32.map(ConstantValue::I32),
        c.u32.map(ConstantValue::U32),
        c.f32.map(ConstantValue::F32),
    ];
    let mut set = values.into_iter().flatten();
    match (set.next(), set.next()) {
        (Some(value), None) => Ok(Constant { id, value }),
        _ => Err(format!("constant {id} needs exactly one typed value: \"bool\", \"i32\", \"u32\" or \"f32\"")),
    }
}
