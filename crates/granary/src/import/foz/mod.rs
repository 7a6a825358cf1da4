//! `granary import-foz`: Fossilize databases to a granary pipelines script plus the SPIR-V
//! modules it names (docs/FORMAT.md §4 has the mapping).
//!
//! Invariants:
//! - Never panics on any input; a damaged entry or a truncated tail is reported, not fatal.
//! - Every pipeline granary cannot represent is listed with the reason; nothing is guessed
//!   silently (the few lossy mappings are documented in docs/FORMAT.md §4).
//! - The output is deterministic: pipelines and modules in hash order.

pub mod container;
pub mod spirv;
mod vk;

use base64::Engine as _;
use container::tag;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Why an import could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A database could not be opened.
    #[error(transparent)]
    Container(#[from] container::ContainerError),
    /// The output could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
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
    pub pipelines: Vec<String>,
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
}

impl ImportReport {
    /// True when every entry was readable (pipelines may still have been skipped).
    pub fn intact(&self) -> bool {
        self.damaged.is_empty() && self.truncated.is_empty()
    }
}

/// Entries gathered from all databases, by kind and hash.
#[derive(Default)]
struct Collected {
    modules: BTreeMap<u64, Vec<u32>>,
    render_passes: HashMap<u64, Value>,
    graphics: BTreeMap<u64, Value>,
    compute: BTreeMap<u64, Value>,
    raytracing: BTreeSet<u64>,
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
        tag::SHADER_MODULE
            | tag::RENDER_PASS
            | tag::GRAPHICS_PIPELINE
            | tag::COMPUTE_PIPELINE
            | tag::RAYTRACING_PIPELINE
    );
    if !interesting {
        return Ok(());
    }
    let doc: Value = serde_json::from_slice(text).map_err(|e| format!("bad JSON: {e}"))?;
    match e.tag {
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
            for key in ["renderPasses", "renderPasses2"] {
                for (h, v) in members(&doc, key) {
                    out.render_passes.entry(h).or_insert_with(|| v.clone());
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
            out.raytracing.insert(e.hash);
        }
    }
    Ok(())
}

/// Imports `databases` into `out_dir` (`pipelines.json`, `modules/<hash>.spv`).
pub fn import(databases: &[PathBuf], out_dir: &Path) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport { script: out_dir.join("pipelines.json"), ..Default::default() };
    let mut c = Collected::default();
    for path in databases {
        let db = container::read(path)?;
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
    let mut pipelines = Vec::new();
    let conv = Converter { c: &c };
    for (&h, info) in &c.graphics {
        if info.get("flags").and_then(Value::as_u64).unwrap_or(0) & LIBRARY_BIT != 0 {
            report.libraries += 1;
            continue;
        }
        match conv.graphics(info) {
            Ok((body, modules)) => {
                used_modules.extend(modules);
                pipelines.push(json!({"label": format!("foz/{}", hex(h)), "render": body}));
            }
            Err(reason) => report.skipped.push(Skipped { kind: "graphics", hash: hex(h), reason }),
        }
    }
    for (&h, info) in &c.compute {
        match conv.compute(info) {
            Ok((body, modules)) => {
                used_modules.extend(modules);
                pipelines.push(json!({"label": format!("foz/{}", hex(h)), "compute": body}));
            }
            Err(reason) => report.skipped.push(Skipped { kind: "compute", hash: hex(h), reason }),
        }
    }
    for &h in &c.raytracing {
        report.skipped.push(Skipped {
            kind: "ray-tracing",
            hash: hex(h),
            reason: "ray tracing pipelines are not representable in a granary script".into(),
        });
    }
    let modules_dir = out_dir.join("modules");
    std::fs::create_dir_all(&modules_dir).map_err(|source| ImportError::Write { path: modules_dir.clone(), source })?;
    let mut libraries = Vec::new();
    for h in &used_modules {
        let words = &c.modules[h];
        let path = modules_dir.join(format!("{}.spv", hex(*h)));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, bytes).map_err(|source| ImportError::Write { path: path.clone(), source })?;
        libraries.push(json!({"name": hex(*h), "path": format!("modules/{}.spv", hex(*h))}));
    }
    report.modules = used_modules.len();
    report.imported = pipelines.len();
    report.pipelines = pipelines.iter().filter_map(|p| p["label"].as_str().map(String::from)).collect();
    let script = json!({"granary_script": 1, "libraries": libraries, "pipelines": pipelines});
    let text = serde_json::to_string_pretty(&script).expect("JSON values serialize") + "\n";
    std::fs::write(&report.script, text)
        .map_err(|source| ImportError::Write { path: report.script.clone(), source })?;
    Ok(report)
}

/// `VK_PIPELINE_CREATE_LIBRARY_BIT_KHR`.
const LIBRARY_BIT: u64 = 0x800;
/// `VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO`.
const STYPE_RENDERING: u64 = 1000044002;
/// `VK_STRUCTURE_TYPE_PIPELINE_LIBRARY_CREATE_INFO_KHR`.
const STYPE_LIBRARY: u64 = 1000290000;
/// `VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT`.
const STYPE_GPL: u64 = 1000320002;
/// `VK_ATTACHMENT_UNUSED`.
const UNUSED: u64 = 0xffff_ffff;
/// How deep pipeline libraries may link further libraries.
const MAX_LIBRARY_DEPTH: usize = 8;

/// State blocks of a graphics create info that a library can provide.
const STATE_KEYS: &[&str] = &[
    "vertexInputState",
    "inputAssemblyState",
    "tessellationState",
    "viewportState",
    "rasterizationState",
    "multisampleState",
    "depthStencilState",
    "colorBlendState",
    "dynamicState",
    "renderPass",
    "subpass",
];

struct Converter<'a> {
    c: &'a Collected,
}

type Out = Result<(Value, Vec<u64>), String>;

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// The pipeline library info: Fossilize writes `VkPipelineLibraryCreateInfoKHR` into the
/// graphics create info's `pNext` array like every other chained struct, as an object with
/// `"sType": 1000290000` and a `libraries` array of pipeline hashes (16 hex digits); its
/// replayer picks the struct by `sType` alone.
fn library_info(info: &Value) -> Option<&Value> {
    pnext(info, STYPE_LIBRARY)
}

fn pnext(info: &Value, stype: u64) -> Option<&Value> {
    info.get("pNext")?.as_array()?.iter().find(|p| u(p, "sType") == stype)
}

impl Converter<'_> {
    /// Folds linked pipeline libraries into one create info: stages are joined, each state
    /// block comes from the first of the pipeline and its libraries (in order) that has it.
    fn flatten(&self, info: &Value, depth: usize) -> Result<Value, String> {
        let Some(lib) = library_info(info) else { return Ok(info.clone()) };
        if depth >= MAX_LIBRARY_DEPTH {
            return Err("pipeline libraries nested too deeply (or in a cycle)".into());
        }
        let mut out = info.as_object().cloned().unwrap_or_default();
        let mut stages: Vec<Value> = info.get("stages").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut rendering = pnext(info, STYPE_RENDERING).cloned();
        for h in lib.get("libraries").and_then(Value::as_array).into_iter().flatten() {
            let lh = parse_hash(h).ok_or("pipeline library reference is not a hash")?;
            let l = self
                .c
                .graphics
                .get(&lh)
                .ok_or_else(|| format!("pipeline library {} is not in the database(s)", hex(lh)))?;
            let l = self.flatten(l, depth + 1)?;
            stages.extend(l.get("stages").and_then(Value::as_array).cloned().unwrap_or_default());
            for k in STATE_KEYS {
                if !out.contains_key(*k)
                    || out[*k].is_null()
                    || (*k == "renderPass" && parse_hash(&out[*k]).unwrap_or(0) == 0)
                {
                    if let Some(v) = l.get(*k) {
                        out.insert((*k).to_string(), v.clone());
                    }
                }
            }
            if rendering.is_none() {
                rendering = pnext(&l, STYPE_RENDERING).cloned();
            }
        }
        out.insert("stages".into(), Value::Array(stages));
        let mut chain: Vec<Value> = info
            .get("pNext")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|p| ![STYPE_LIBRARY, STYPE_RENDERING, STYPE_GPL].contains(&u(p, "sType")))
            .cloned()
            .collect();
        chain.extend(rendering);
        out.insert("pNext".into(), Value::Array(chain));
        Ok(Value::Object(out))
    }

    /// A stage to a script function, and the module it uses.
    fn function(&self, stage: &Value) -> Result<(Value, u64), String> {
        let module = stage.get("module").and_then(parse_hash).ok_or("stage without a module hash")?;
        let words = self
            .c
            .modules
            .get(&module)
            .ok_or_else(|| format!("shader module {} is not in the database(s)", hex(module)))?;
        let name = stage.get("name").and_then(Value::as_str).unwrap_or("main");
        let base = json!({"library": hex(module), "function": name});
        let Some(spec) = stage.get("specializationInfo").filter(|s| !s.is_null()) else { return Ok((base, module)) };
        let data = match spec.get("data").and_then(Value::as_str) {
            Some(d) => base64::engine::general_purpose::STANDARD
                .decode(d)
                .map_err(|e| format!("specialization data is not base64: {e}"))?,
            None => Vec::new(),
        };
        let types = spirv::spec_types(words);
        let mut constants = Vec::new();
        for m in spec.get("mapEntries").and_then(Value::as_array).into_iter().flatten() {
            let id = u(m, "constantID");
            let (off, size) = (u(m, "offset") as usize, u(m, "size") as usize);
            let bytes = data
                .get(off..off.saturating_add(size))
                .ok_or_else(|| format!("specialization constant {id}: bytes {off}+{size} are outside the data"))?;
            let id16 = u16::try_from(id)
                .map_err(|_| format!("specialization constant id {id} does not fit granary's 16-bit ids"))?;
            let declared = types.get(&(id as u32)).copied();
            let Some(declared) = declared else {
                // A constant the module does not declare changes nothing: Vulkan ignores it.
                continue;
            };
            let word = match bytes {
                [a, b, c, d] => u32::from_le_bytes([*a, *b, *c, *d]),
                _ if declared == spirv::SpecType::Bool && size == 1 => u32::from(bytes[0]),
                _ => return Err(format!("specialization constant {id}: {size}-byte value is not representable (granary has 32-bit constants)")),
            };
            let c = match declared {
                spirv::SpecType::Bool => json!({"id": id16, "bool": word != 0}),
                spirv::SpecType::I32 => json!({"id": id16, "i32": word as i32}),
                spirv::SpecType::U32 => json!({"id": id16, "u32": word}),
                spirv::SpecType::F32 => json!({"id": id16, "f32": f32::from_bits(word)}),
                spirv::SpecType::Other(what) => {
                    return Err(format!("specialization constant {id} is a {what}, which granary cannot represent"))
                }
            };
            constants.push(c);
        }
        if constants.is_empty() {
            return Ok((base, module));
        }
        Ok((json!({"specialize": base, "constants": constants}), module))
    }

    fn compute(&self, info: &Value) -> Out {
        let stage = info.get("stage").ok_or("compute pipeline without a stage")?;
        if u(stage, "stage") != vk::stage::COMPUTE {
            return Err(format!("compute pipeline stage is {}", vk::stage::name(u(stage, "stage"))));
        }
        let (f, m) = self.function(stage)?;
        Ok((json!({"function": f}), vec![m]))
    }

    fn graphics(&self, info: &Value) -> Out {
        let info = self.flatten(info, 0)?;
        let mut body = Map::new();
        let mut modules = Vec::new();
        for s in info.get("stages").and_then(Value::as_array).into_iter().flatten() {
            let bit = u(s, "stage");
            let key = match bit {
                vk::stage::VERTEX => "vertex",
                vk::stage::FRAGMENT => "fragment",
                other => {
                    return Err(format!(
                        "{} stage is not representable (granary has vertex, fragment and compute)",
                        vk::stage::name(other)
                    ))
                }
            };
            if body.contains_key(key) {
                return Err(format!("two {key} stages"));
            }
            let (f, m) = self.function(s)?;
            body.insert(key.into(), f);
            modules.push(m);
        }
        if !body.contains_key("vertex") {
            return Err("no vertex stage (a library part alone, or mesh shading)".into());
        }
        for d in
            info.get("dynamicState").and_then(|d| d.get("dynamicState")).and_then(Value::as_array).into_iter().flatten()
        {
            if let Some(name) = d.as_u64().and_then(vk::unrepresentable_dynamic_state) {
                return Err(format!("dynamic state {name} leaves fixed-function state to draw time"));
            }
        }
        // Formats: dynamic rendering, else render pass + subpass.
        let (colors, depth, samples_rp) = self.formats(&info)?;
        // Vertex input.
        if let Some(vi) = info.get("vertexInputState").filter(|v| !v.is_null()) {
            body.insert("vertex_buffers".into(), vertex_buffers(vi)?);
        }
        // Input assembly.
        let mut primitive = Map::new();
        if let Some(ia) = info.get("inputAssemblyState").filter(|v| !v.is_null()) {
            let t = u(ia, "topology");
            let name = vk::topology(t)
                .ok_or_else(|| format!("topology {t} is not representable (fans, adjacency and patches are not)"))?;
            primitive.insert("topology".into(), name.into());
            if u(ia, "primitiveRestartEnable") != 0 && name.ends_with("strip") {
                primitive.insert("strip_index_format".into(), "uint32".into());
            }
        }
        // Rasterization.
        let rs = info.get("rasterizationState").filter(|v| !v.is_null()).ok_or("no rasterization state")?;
        if u(rs, "rasterizerDiscardEnable") != 0 {
            return Err("rasterizer discard is not representable".into());
        }
        if u(rs, "polygonMode") != 0 {
            return Err("polygon mode other than fill is not representable".into());
        }
        if u(rs, "depthClampEnable") != 0 {
            return Err("depth clamp is not representable".into());
        }
        primitive.insert(
            "cull".into(),
            match u(rs, "cullMode") {
                0 => "none",
                1 => "front",
                2 => "back",
                _ => return Err("cull mode FRONT_AND_BACK is not representable".into()),
            }
            .into(),
        );
        primitive.insert("front_face".into(), if u(rs, "frontFace") == 1 { "cw" } else { "ccw" }.into());
        body.insert("primitive".into(), Value::Object(primitive));
        // Multisample.
        let mut samples = samples_rp;
        if let Some(ms) = info.get("multisampleState").filter(|v| !v.is_null()) {
            samples = u(ms, "rasterizationSamples").max(1);
            if u(ms, "sampleShadingEnable") != 0 {
                return Err("sample shading is not representable".into());
            }
            if u(ms, "alphaToOneEnable") != 0 {
                return Err("alpha to one is not representable".into());
            }
            // Fossilize writes `pSampleMask` as an array of (samples + 31) / 32 words.
            if let Some(mask) = ms.get("sampleMask").and_then(Value::as_array) {
                for (i, word) in mask.iter().enumerate() {
                    let bits = samples.saturating_sub(32 * i as u64).min(32);
                    let full = (1u64 << bits) - 1;
                    if word.as_u64().unwrap_or(0) & full != full {
                        return Err("a partial sample mask is not representable".into());
                    }
                }
            }
            if u(ms, "alphaToCoverageEnable") != 0 {
                body.insert("alpha_to_coverage".into(), true.into());
            }
        }
        if !samples.is_power_of_two() || samples > 64 {
            return Err(format!("sample count {samples} is not representable"));
        }
        if samples != 1 {
            body.insert("sample_count".into(), samples.into());
        }
        // Depth/stencil.
        if let Some(fmt) = depth {
            body.insert("depth_stencil".into(), depth_stencil(fmt, info.get("depthStencilState"), rs)?);
        }
        // Colour attachments.
        if !colors.is_empty() {
            let cb = info.get("colorBlendState").filter(|v| !v.is_null());
            if cb.is_some_and(|cb| u(cb, "logicOpEnable") != 0) {
                return Err("logic ops are not representable".into());
            }
            let atts = cb.and_then(|cb| cb.get("attachments")).and_then(Value::as_array);
            let mut out = Vec::new();
            for (i, fmt) in colors.iter().enumerate() {
                let a = atts.and_then(|a| a.get(i));
                out.push(color_attachment(fmt, a)?);
            }
            body.insert("color_attachments".into(), Value::Array(out));
        }
        Ok((Value::Object(body), modules))
    }

    /// Colour formats, the depth/stencil format and the render pass's sample count.
    #[allow(clippy::type_complexity)]
    fn formats(&self, info: &Value) -> Result<(Vec<&'static str>, Option<&'static str>, u64), String> {
        let color = |f: u64| {
            vk::texture_format(f)
                .filter(|_| f != 0)
                .ok_or_else(|| format!("colour format {f} (VkFormat) is not representable"))
        };
        let depth_fmt = |f: u64| {
            vk::texture_format(f).ok_or_else(|| format!("depth/stencil format {f} (VkFormat) is not representable"))
        };
        let rp = info.get("renderPass").and_then(parse_hash).filter(|h| *h != 0);
        if let Some(h) = rp {
            let pass = self
                .c
                .render_passes
                .get(&h)
                .ok_or_else(|| format!("render pass {} is not in the database(s)", hex(h)))?;
            let sub = pass
                .get("subpasses")
                .and_then(Value::as_array)
                .and_then(|s| s.get(u(info, "subpass") as usize))
                .ok_or_else(|| format!("render pass {} has no subpass {}", hex(h), u(info, "subpass")))?;
            if u(sub, "viewMask") != 0 {
                return Err("multiview is not representable".into());
            }
            let atts = pass.get("attachments").and_then(Value::as_array).cloned().unwrap_or_default();
            let att = |r: &Value| -> Result<Option<&Value>, String> {
                let i = u(r, "attachment");
                if i == UNUSED {
                    return Ok(None);
                }
                atts.get(i as usize).map(Some).ok_or_else(|| format!("attachment {i} is not in render pass {}", hex(h)))
            };
            let mut colors = Vec::new();
            let mut samples = 1;
            for r in sub.get("colorAttachments").and_then(Value::as_array).into_iter().flatten() {
                let a = att(r)?.ok_or("an unused colour attachment slot is not representable")?;
                colors.push(color(u(a, "format"))?);
                samples = u(a, "samples").max(1);
            }
            let mut depth = None;
            if let Some(r) = sub.get("depthStencilAttachment").filter(|v| !v.is_null()) {
                if let Some(a) = att(r)? {
                    depth = Some(depth_fmt(u(a, "format"))?);
                    samples = u(a, "samples").max(1);
                }
            }
            return Ok((colors, depth, samples));
        }
        let Some(r) = pnext(info, STYPE_RENDERING) else { return Ok((Vec::new(), None, 1)) };
        if u(r, "viewMask") != 0 {
            return Err("multiview is not representable".into());
        }
        let mut colors = Vec::new();
        for f in r.get("colorAttachmentFormats").and_then(Value::as_array).into_iter().flatten() {
            let f = f.as_u64().unwrap_or(0);
            if f == 0 {
                return Err("an unused colour attachment slot (VK_FORMAT_UNDEFINED) is not representable".into());
            }
            colors.push(color(f)?);
        }
        let (d, s) = (u(r, "depthAttachmentFormat"), u(r, "stencilAttachmentFormat"));
        let depth = match (d, s) {
            (0, 0) => None,
            (0, s) => Some(depth_fmt(s)?),
            (d, s) if s == 0 || s == d => Some(depth_fmt(d)?),
            (d, s) => return Err(format!("separate depth ({d}) and stencil ({s}) formats are not representable")),
        };
        Ok((colors, depth, 1))
    }
}

fn vertex_buffers(vi: &Value) -> Result<Value, String> {
    let mut bindings: Vec<&Value> = vi.get("bindings").and_then(Value::as_array).into_iter().flatten().collect();
    bindings.sort_by_key(|b| u(b, "binding"));
    let attrs: Vec<&Value> = vi.get("attributes").and_then(Value::as_array).into_iter().flatten().collect();
    if pnext(vi, 1000190001).is_some() {
        return Err("vertex attribute divisors are not representable".into());
    }
    let mut out = Vec::new();
    for (slot, b) in bindings.iter().enumerate() {
        if u(b, "binding") != slot as u64 {
            return Err(format!(
                "vertex bindings must be numbered 0..n (granary buffer slots); binding {} found at slot {slot}",
                u(b, "binding")
            ));
        }
        let mut attributes = Vec::new();
        for a in attrs.iter().filter(|a| u(a, "binding") == slot as u64) {
            let f = u(a, "format");
            let format =
                vk::vertex_format(f).ok_or_else(|| format!("vertex format {f} (VkFormat) is not representable"))?;
            attributes.push(json!({"location": u(a, "location"), "format": format, "offset": u(a, "offset")}));
        }
        attributes.sort_by_key(|a| a["location"].as_u64());
        let step = if u(b, "inputRate") == 1 { "instance" } else { "vertex" };
        out.push(json!({"stride": u(b, "stride"), "step": step, "attributes": attributes}));
    }
    if let Some(a) = attrs.iter().find(|a| u(a, "binding") as usize >= bindings.len()) {
        return Err(format!(
            "vertex attribute {} uses binding {}, which is not declared",
            u(a, "location"),
            u(a, "binding")
        ));
    }
    Ok(Value::Array(out))
}

fn stencil_face(f: &Value) -> Result<Value, String> {
    let op = |k: &str| vk::stencil_op(u(f, k)).ok_or_else(|| format!("stencil op {} is not valid", u(f, k)));
    Ok(json!({
        "compare": vk::compare(u(f, "compareOp")).ok_or("bad stencil compare op")?,
        "fail_op": op("failOp")?,
        "depth_fail_op": op("depthFailOp")?,
        "pass_op": op("passOp")?,
    }))
}

fn depth_stencil(format: &str, ds: Option<&Value>, rs: &Value) -> Result<Value, String> {
    let mut out = Map::new();
    out.insert("format".into(), format.into());
    if let Some(ds) = ds.filter(|v| !v.is_null()) {
        if u(ds, "depthBoundsTestEnable") != 0 {
            return Err("depth bounds test is not representable".into());
        }
        let test = u(ds, "depthTestEnable") != 0;
        let compare = if test { vk::compare(u(ds, "depthCompareOp")).ok_or("bad depth compare op")? } else { "always" };
        out.insert("depth_compare".into(), compare.into());
        out.insert("depth_write".into(), (test && u(ds, "depthWriteEnable") != 0).into());
        if u(ds, "stencilTestEnable") != 0 {
            let (front, back) =
                (ds.get("front").ok_or("no front stencil state")?, ds.get("back").ok_or("no back stencil state")?);
            if u(front, "compareMask") != u(back, "compareMask") || u(front, "writeMask") != u(back, "writeMask") {
                return Err("different front and back stencil masks are not representable".into());
            }
            out.insert(
                "stencil".into(),
                json!({"front": stencil_face(front)?, "back": stencil_face(back)?,
                       "read_mask": u(front, "compareMask"), "write_mask": u(front, "writeMask")}),
            );
        }
    }
    if u(rs, "depthBiasEnable") != 0 {
        let f = |k: &str| rs.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let constant = f("depthBiasConstantFactor");
        if constant.fract() != 0.0 || constant.abs() > f64::from(i32::MAX) {
            return Err(format!("depth bias constant {constant} is not an integer (granary's depth_bias is)"));
        }
        out.insert("depth_bias".into(), (constant as i32).into());
        out.insert("depth_bias_slope_scale".into(), f("depthBiasSlopeFactor").into());
        out.insert("depth_bias_clamp".into(), f("depthBiasClamp").into());
    }
    Ok(Value::Object(out))
}

fn color_attachment(format: &str, a: Option<&Value>) -> Result<Value, String> {
    let Some(a) = a else { return Ok(json!({"format": format, "blend": "off", "write_mask": "rgba"})) };
    let mask = u(a, "colorWriteMask") & 0xf;
    let mask: String =
        [(1, 'r'), (2, 'g'), (4, 'b'), (8, 'a')].iter().filter(|(b, _)| mask & b != 0).map(|(_, c)| *c).collect();
    let blend = if u(a, "blendEnable") == 0 {
        json!("off")
    } else {
        let fac =
            |k: &str| vk::blend_factor(u(a, k)).ok_or_else(|| format!("blend factor {} is not representable", u(a, k)));
        let op = |k: &str| vk::blend_op(u(a, k)).ok_or_else(|| format!("blend op {} is not representable", u(a, k)));
        json!({
            "color": {"src": fac("srcColorBlendFactor")?, "dst": fac("dstColorBlendFactor")?, "op": op("colorBlendOp")?},
            "alpha": {"src": fac("srcAlphaBlendFactor")?, "dst": fac("dstAlphaBlendFactor")?, "op": op("alphaBlendOp")?},
        })
    };
    Ok(json!({"format": format, "blend": blend, "write_mask": mask}))
}

#[cfg(test)]
pub(crate) mod tests;
