//! `granary import-foz`: Fossilize databases to a granary pipelines script of native Vulkan
//! pipelines (docs/FORMAT.md §2.6) plus the SPIR-V modules it names (§4 has the mapping).
//!
//! Invariants:
//! - Never panics on any input; a damaged entry or a truncated tail is reported, not fatal, and
//!   so is a database that cannot be read at all (bad magic, unknown version): the others
//!   still import.
//! - Full fidelity: every pipeline is written with everything its create info says (stages,
//!   layout by value, render pass by value, every state and extension structure) as Vulkan's
//!   numbers; one granary's native model cannot hold is listed with the reason (naming the
//!   field or the `pNext` structure's `sType`), never approximated.
//! - The output is deterministic: pipelines and modules in hash order; each pipeline is
//!   labelled `foz/<its Fossilize hash>`.
//!
//! This module reads the databases and writes the result; `convert.rs` turns each recorded
//! create info into a native script entry (`state.rs` the state structures, `json.rs` the typed
//! reads), and the script itself is written by [`crate::script::write`].

pub mod container;
mod convert;
mod json;
pub mod spirv;
mod state;
mod vk;

use crate::script::write::{self, LibraryEntry, Pipeline};
use base64::Engine as _;
use container::tag;
use convert::Converter;
use serde_json::Value;
use state::PassVersion;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Why an import could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The script could not be encoded as JSON.
    #[error("{}: cannot encode the script: {source}", path.display())]
    Encode {
        /// The script file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The output could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// A database that was not read at all (it cannot be read, or has a bad magic or an unknown
/// version); the others still import.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SkippedDatabase {
    /// The database file.
    pub file: PathBuf,
    /// Why, with the file and offset (`…: offset 15: unsupported Fossilize format version 9`).
    pub reason: String,
}

/// A pipeline that was not imported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    /// `graphics`, `compute` or `ray-tracing`.
    pub kind: &'static str,
    /// The Fossilize hash (16 hex digits).
    pub hash: String,
    /// Why granary cannot represent it.
    pub reason: String,
}

/// A truncated tail, ignored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Truncated {
    /// The database file.
    pub file: PathBuf,
    /// Offset of the entry that runs past the end of the file.
    pub offset: u64,
}

/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    /// The script written.
    pub script: PathBuf,
    /// Entries read, over all databases.
    pub entries: usize,
    /// Pipelines written to the script.
    pub imported: usize,
    /// Their labels (`foz/<hash>`).
    pub labels: Vec<String>,
    /// SPIR-V modules written (those the imported pipelines use).
    pub modules: usize,
    /// Pipeline libraries (`VK_PIPELINE_CREATE_LIBRARY_BIT_KHR`) folded into the pipelines
    /// that link them instead of being imported on their own.
    pub libraries: usize,
    /// Pipelines not imported, with the reason.
    pub skipped: Vec<Skipped>,
    /// Entries skipped as damaged (CRC, deflate, JSON, SPIR-V).
    pub damaged: Vec<container::Damaged>,
    /// Truncated tails ignored.
    pub truncated: Vec<Truncated>,
    /// Databases not read at all.
    pub databases_skipped: Vec<SkippedDatabase>,
}

impl ImportReport {
    /// True when every database and entry was readable (pipelines may still have been skipped).
    pub fn intact(&self) -> bool {
        self.damaged.is_empty() && self.truncated.is_empty() && self.databases_skipped.is_empty()
    }
}

/// Entries gathered from all databases, by kind and hash (the first database holding a hash
/// wins).
#[derive(Default, Clone)]
struct Collected {
    modules: BTreeMap<u64, Vec<u32>>,
    samplers: HashMap<u64, Value>,
    set_layouts: HashMap<u64, Value>,
    pipeline_layouts: HashMap<u64, Value>,
    render_passes: HashMap<u64, (PassVersion, Value)>,
    graphics: BTreeMap<u64, Value>,
    compute: BTreeMap<u64, Value>,
    raytracing: BTreeMap<u64, Value>,
}

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

fn parse_hash(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?, 16).ok()
}

/// Splits a payload into its JSON text and the binary tail after a NUL, if any.
fn split_payload(p: &[u8]) -> (&[u8], &[u8]) {
    match p.iter().position(|&b| b == 0) {
        Some(i) => (&p[..i], &p[i + 1..]),
        None => (p, &[]),
    }
}

/// The members of `doc[key]` as `(hash, value)`.
fn members<'a>(doc: &'a Value, key: &str) -> Vec<(u64, &'a Value)> {
    doc.get(key)
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((u64::from_str_radix(k, 16).ok()?, v))).collect())
        .unwrap_or_default()
}

fn decode_module(m: &Value, tail: &[u8]) -> Result<Vec<u32>, String> {
    let size = m.get("codeSize").and_then(Value::as_u64).ok_or("shader module without codeSize")?;
    if size % 4 != 0 || size == 0 {
        return Err(format!("codeSize {size} is not a positive multiple of 4"));
    }
    let words = usize::try_from(size / 4).map_err(|_| "codeSize too large")?;
    if let (Some(off), Some(len)) =
        (m.get("varintOffset").and_then(Value::as_u64), m.get("varintSize").and_then(Value::as_u64))
    {
        let bytes = usize::try_from(off)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(o, l)| tail.get(o..o.checked_add(l)?))
            .ok_or_else(|| format!("varint range {off}+{len} is outside the {}-byte binary tail", tail.len()))?;
        return spirv::decode_varint(bytes, words).ok_or_else(|| "damaged varint SPIR-V".to_string());
    }
    let code = m.get("code").and_then(Value::as_str).ok_or("shader module without code or varintOffset")?;
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(code).map_err(|e| format!("code is not base64: {e}"))?;
    if bytes.len() != words * 4 {
        return Err(format!("code holds {} bytes, codeSize says {size}", bytes.len()));
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn collect_entry(e: &container::Entry, out: &mut Collected) -> Result<(), String> {
    let (text, tail) = split_payload(&e.payload);
    let interesting = matches!(
        e.tag,
        tag::SAMPLER
            | tag::DESCRIPTOR_SET_LAYOUT
            | tag::PIPELINE_LAYOUT
            | tag::SHADER_MODULE
            | tag::RENDER_PASS
            | tag::GRAPHICS_PIPELINE
            | tag::COMPUTE_PIPELINE
            | tag::RAYTRACING_PIPELINE
    );
    if !interesting {
        return Ok(());
    }
    let doc: Value = serde_json::from_slice(text).map_err(|e| format!("bad JSON: {e}"))?;
    let keep = |map: &mut HashMap<u64, Value>, key: &str| {
        for (h, v) in members(&doc, key) {
            map.entry(h).or_insert_with(|| v.clone());
        }
    };
    match e.tag {
        tag::SAMPLER => keep(&mut out.samplers, "samplers"),
        tag::DESCRIPTOR_SET_LAYOUT => keep(&mut out.set_layouts, "setLayouts"),
        tag::PIPELINE_LAYOUT => keep(&mut out.pipeline_layouts, "pipelineLayouts"),
        tag::SHADER_MODULE => {
            for (h, m) in members(&doc, "shaderModules") {
                let words = decode_module(m, tail).map_err(|r| format!("shader module {}: {r}", hex(h)))?;
                if words.first() != Some(&0x0723_0203) {
                    return Err(format!("shader module {}: not SPIR-V (bad magic)", hex(h)));
                }
                out.modules.entry(h).or_insert(words);
            }
        }
        tag::RENDER_PASS => {
            for (key, version) in [("renderPasses", PassVersion::V1), ("renderPasses2", PassVersion::V2)] {
                for (h, v) in members(&doc, key) {
                    out.render_passes.entry(h).or_insert_with(|| (version, v.clone()));
                }
            }
        }
        tag::GRAPHICS_PIPELINE => {
            for (h, v) in members(&doc, "graphicsPipelines") {
                out.graphics.entry(h).or_insert_with(|| v.clone());
            }
        }
        tag::COMPUTE_PIPELINE => {
            for (h, v) in members(&doc, "computePipelines") {
                out.compute.entry(h).or_insert_with(|| v.clone());
            }
        }
        _ => {
            for (h, v) in members(&doc, "raytracingPipelines") {
                out.raytracing.entry(h).or_insert_with(|| v.clone());
            }
        }
    }
    Ok(())
}

/// Imports `databases` into `out_dir` (`pipelines.json`, `modules/<hash>.spv`). A database
/// that cannot be read is skipped and reported ([`ImportReport::databases_skipped`]); only
/// writing the output can fail the import.
pub fn import(databases: &[PathBuf], out_dir: &Path) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport { script: out_dir.join("pipelines.json"), ..Default::default() };
    let mut c = Collected::default();
    for path in databases {
        let db = match container::read(path) {
            Ok(db) => db,
            Err(e) => {
                report.databases_skipped.push(SkippedDatabase { file: path.clone(), reason: e.to_string() });
                continue;
            }
        };
        report.entries += db.entries.len();
        report.damaged.extend(db.damaged);
        if let Some(offset) = db.truncated_at {
            report.truncated.push(Truncated { file: path.clone(), offset });
        }
        for e in &db.entries {
            if let Err(reason) = collect_entry(e, &mut c) {
                report.damaged.push(container::Damaged {
                    file: path.clone(),
                    offset: e.offset,
                    name: format!("{:024x}{:016x}", e.tag, e.hash),
                    reason,
                });
            }
        }
    }
    let mut used_modules = BTreeSet::new();
    let mut pipelines: Vec<Pipeline<()>> = Vec::new();
    let conv = Converter { c: &c };
    let mut land =
        |kind: &'static str, h: u64, r: Result<convert::Converted, String>, report: &mut ImportReport| match r {
            Ok(p) => {
                used_modules.extend(p.modules);
                pipelines.push(Pipeline::vulkan(Some(format!("foz/{}", hex(h))), p.stages, p.state));
            }
            Err(reason) => report.skipped.push(Skipped { kind, hash: hex(h), reason }),
        };
    for (&h, info) in &c.graphics {
        if info.get("flags").and_then(Value::as_u64).unwrap_or(0) & u64::from(vk::LIBRARY_BIT) != 0 {
            report.libraries += 1;
            continue;
        }
        land("graphics", h, conv.graphics(info), &mut report);
    }
    for (&h, info) in &c.compute {
        land("compute", h, conv.compute(info), &mut report);
    }
    for (&h, info) in &c.raytracing {
        // A library is folded into each pipeline that links it (`Converter::ray_tracing`).
        if info.get("flags").and_then(Value::as_u64).unwrap_or(0) & u64::from(vk::LIBRARY_BIT) != 0 {
            report.libraries += 1;
            continue;
        }
        land("ray-tracing", h, conv.ray_tracing(info), &mut report);
    }
    let modules_dir = out_dir.join("modules");
    std::fs::create_dir_all(&modules_dir).map_err(|source| ImportError::Write { path: modules_dir.clone(), source })?;
    let mut libraries = Vec::new();
    for h in &used_modules {
        let words = &c.modules[h];
        let path = modules_dir.join(format!("{}.spv", hex(*h)));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, bytes).map_err(|source| ImportError::Write { path: path.clone(), source })?;
        libraries.push(LibraryEntry::at_path(hex(*h), format!("modules/{}.spv", hex(*h))));
    }
    report.modules = used_modules.len();
    report.imported = pipelines.len();
    report.labels = pipelines.iter().filter_map(|p| p.label().map(String::from)).collect();
    write_script(&report.script, &libraries, &pipelines)?;
    Ok(report)
}

/// Streams the script to `path` one entry per line ([`write::LineWriter`]): a pipeline's
/// native state holds its whole layout and render pass, so a database of tens of thousands of
/// pipelines is never built up as one JSON document in memory.
fn write_script(path: &Path, libraries: &[LibraryEntry], pipelines: &[Pipeline<()>]) -> Result<(), ImportError> {
    let io = |source| ImportError::Write { path: path.to_path_buf(), source };
    let fail = |e: write::WriteError| match e {
        write::WriteError::Io(source) => ImportError::Write { path: path.to_path_buf(), source },
        write::WriteError::Json(source) if source.is_io() => {
            ImportError::Write { path: path.to_path_buf(), source: source.into() }
        }
        write::WriteError::Json(source) => ImportError::Encode { path: path.to_path_buf(), source },
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = write::LineWriter::new(std::io::BufWriter::new(file)).map_err(fail)?;
    for l in libraries {
        w.library(l).map_err(fail)?;
    }
    let mut lines = w.pipelines().map_err(fail)?;
    for p in pipelines {
        lines.pipeline(p).map_err(fail)?;
    }
    lines.finish().map_err(fail)?.into_inner().map_err(|e| io(e.into_error()))?;
    Ok(())
}

#[cfg(test)]
mod fidelity_tests;
#[cfg(test)]
pub(crate) mod tests;
