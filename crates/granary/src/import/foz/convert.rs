//! Fossilize's recorded create infos (Vulkan structures as JSON, numbers as Vulkan records
//! them) to pipelines-script entries: pipeline libraries folded into the pipelines that link
//! them, stages to stage functions with their specialization constants, fixed-function state
//! to the script's state fields (docs/FORMAT.md §4 has the mapping). Every value granary
//! cannot represent is an `Err` naming it; nothing is guessed.
//!
//! The stage functions and entries are the script writer's ([`crate::script::write`]); the
//! state blocks are built here as JSON values in the spelling of granary-archive's render-state types,
//! with exactly the fields the importer has always written.

use super::{hex, parse_hash, spirv, vk, Collected};
use crate::descriptor::{Constant, ConstantId, ConstantValue};
use crate::script::write::{Function, Render};
use base64::Engine as _;
use granary_archive::{CompareFunction, CullMode, FrontFace, IndexFormat, StepMode};
use serde_json::{json, Map, Value};

/// `VK_PIPELINE_CREATE_LIBRARY_BIT_KHR`.
pub(super) const LIBRARY_BIT: u64 = 0x800;
/// `VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO`.
pub(super) const STYPE_RENDERING: u64 = 1000044002;
/// `VK_STRUCTURE_TYPE_PIPELINE_LIBRARY_CREATE_INFO_KHR`.
pub(super) const STYPE_LIBRARY: u64 = 1000290000;
/// `VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT`.
pub(super) const STYPE_GPL: u64 = 1000320002;
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

/// Converts the create infos of one collection of databases (which holds the modules, render
/// passes and libraries they refer to).
pub(super) struct Converter<'a> {
    pub c: &'a Collected,
}

/// A converted entry body and the shader modules it uses, or why it cannot be converted.
type Out<T> = Result<(T, Vec<u64>), String>;

/// Field `key` of a recorded structure as an unsigned number; 0 when absent or not one.
fn u64_field(v: &Value, key: &str) -> u64 {
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
    info.get("pNext")?.as_array()?.iter().find(|p| u64_field(p, "sType") == stype)
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
            .filter(|p| ![STYPE_LIBRARY, STYPE_RENDERING, STYPE_GPL].contains(&u64_field(p, "sType")))
            .cloned()
            .collect();
        chain.extend(rendering);
        out.insert("pNext".into(), Value::Array(chain));
        Ok(Value::Object(out))
    }

    /// A stage to a script function, and the module it uses.
    pub(super) fn function(&self, stage: &Value) -> Result<(Function, u64), String> {
        let module = stage.get("module").and_then(parse_hash).ok_or("stage without a module hash")?;
        let words = self
            .c
            .modules
            .get(&module)
            .ok_or_else(|| format!("shader module {} is not in the database(s)", hex(module)))?;
        let name = stage.get("name").and_then(Value::as_str).unwrap_or("main");
        let base = Function::library(hex(module), name);
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
            let id = u64_field(m, "constantID");
            let (off, size) = (u64_field(m, "offset") as usize, u64_field(m, "size") as usize);
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
            let value = match declared {
                spirv::SpecType::Bool => ConstantValue::Bool(word != 0),
                spirv::SpecType::I32 => ConstantValue::I32(word as i32),
                spirv::SpecType::U32 => ConstantValue::U32(word),
                spirv::SpecType::F32 => ConstantValue::F32(f32::from_bits(word)),
                spirv::SpecType::Other(what) => {
                    return Err(format!("specialization constant {id} is a {what}, which granary cannot represent"))
                }
            };
            constants.push(Constant { id: ConstantId::Id(id16), value });
        }
        if constants.is_empty() {
            return Ok((base, module));
        }
        Ok((Function::specialized(base, &constants, None), module))
    }

    /// A compute pipeline's create info to its stage function.
    pub(super) fn compute(&self, info: &Value) -> Out<Function> {
        let stage = info.get("stage").ok_or("compute pipeline without a stage")?;
        if u64_field(stage, "stage") != vk::stage::COMPUTE {
            return Err(format!("compute pipeline stage is {}", vk::stage::name(u64_field(stage, "stage"))));
        }
        let (f, m) = self.function(stage)?;
        Ok((f, vec![m]))
    }

    /// A graphics pipeline's create info (its libraries folded in) to a render body.
    pub(super) fn graphics(&self, info: &Value) -> Out<Render<Map<String, Value>>> {
        let info = self.flatten(info, 0)?;
        let (mut vertex, mut fragment) = (None, None);
        let mut body = Map::new();
        let mut modules = Vec::new();
        for s in info.get("stages").and_then(Value::as_array).into_iter().flatten() {
            let bit = u64_field(s, "stage");
            let (slot, what) = match bit {
                vk::stage::VERTEX => (&mut vertex, "vertex"),
                vk::stage::FRAGMENT => (&mut fragment, "fragment"),
                other => {
                    return Err(format!(
                        "{} stage is not representable (granary has vertex, fragment and compute)",
                        vk::stage::name(other)
                    ))
                }
            };
            if slot.is_some() {
                return Err(format!("two {what} stages"));
            }
            let (f, m) = self.function(s)?;
            *slot = Some(f);
            modules.push(m);
        }
        let Some(vertex) = vertex else {
            return Err("no vertex stage (a library part alone, or mesh shading)".into());
        };
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
            let t = u64_field(ia, "topology");
            let name = vk::topology(t)
                .map(|v| v.name())
                .ok_or_else(|| format!("topology {t} is not representable (fans, adjacency and patches are not)"))?;
            primitive.insert("topology".into(), name.into());
            if u64_field(ia, "primitiveRestartEnable") != 0 && name.ends_with("strip") {
                primitive.insert("strip_index_format".into(), IndexFormat::Uint32.name().into());
            }
        }
        // Rasterization.
        let rs = info.get("rasterizationState").filter(|v| !v.is_null()).ok_or("no rasterization state")?;
        if u64_field(rs, "rasterizerDiscardEnable") != 0 {
            return Err("rasterizer discard is not representable".into());
        }
        if u64_field(rs, "polygonMode") != 0 {
            return Err("polygon mode other than fill is not representable".into());
        }
        if u64_field(rs, "depthClampEnable") != 0 {
            return Err("depth clamp is not representable".into());
        }
        primitive.insert(
            "cull".into(),
            match u64_field(rs, "cullMode") {
                0 => CullMode::None.name(),
                1 => CullMode::Front.name(),
                2 => CullMode::Back.name(),
                _ => return Err("cull mode FRONT_AND_BACK is not representable".into()),
            }
            .into(),
        );
        primitive.insert(
            "front_face".into(),
            if u64_field(rs, "frontFace") == 1 { FrontFace::Cw } else { FrontFace::Ccw }.name().into(),
        );
        body.insert("primitive".into(), Value::Object(primitive));
        // Multisample.
        let mut samples = samples_rp;
        if let Some(ms) = info.get("multisampleState").filter(|v| !v.is_null()) {
            samples = u64_field(ms, "rasterizationSamples").max(1);
            if u64_field(ms, "sampleShadingEnable") != 0 {
                return Err("sample shading is not representable".into());
            }
            if u64_field(ms, "alphaToOneEnable") != 0 {
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
            if u64_field(ms, "alphaToCoverageEnable") != 0 {
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
            if cb.is_some_and(|cb| u64_field(cb, "logicOpEnable") != 0) {
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
        Ok((Render::new(vertex, fragment, body), modules))
    }

    /// Colour formats, the depth/stencil format and the render pass's sample count.
    #[allow(clippy::type_complexity)]
    fn formats(&self, info: &Value) -> Result<(Vec<&'static str>, Option<&'static str>, u64), String> {
        let color = |f: u64| {
            vk::texture_format(f)
                .map(|v| v.name())
                .filter(|_| f != 0)
                .ok_or_else(|| format!("colour format {f} (VkFormat) is not representable"))
        };
        let depth_fmt = |f: u64| {
            vk::texture_format(f)
                .map(|v| v.name())
                .ok_or_else(|| format!("depth/stencil format {f} (VkFormat) is not representable"))
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
                .and_then(|s| s.get(u64_field(info, "subpass") as usize))
                .ok_or_else(|| format!("render pass {} has no subpass {}", hex(h), u64_field(info, "subpass")))?;
            if u64_field(sub, "viewMask") != 0 {
                return Err("multiview is not representable".into());
            }
            let atts = pass.get("attachments").and_then(Value::as_array).cloned().unwrap_or_default();
            let att = |r: &Value| -> Result<Option<&Value>, String> {
                let i = u64_field(r, "attachment");
                if i == UNUSED {
                    return Ok(None);
                }
                atts.get(i as usize).map(Some).ok_or_else(|| format!("attachment {i} is not in render pass {}", hex(h)))
            };
            let mut colors = Vec::new();
            let mut samples = 1;
            for r in sub.get("colorAttachments").and_then(Value::as_array).into_iter().flatten() {
                let a = att(r)?.ok_or("an unused colour attachment slot is not representable")?;
                colors.push(color(u64_field(a, "format"))?);
                samples = u64_field(a, "samples").max(1);
            }
            let mut depth = None;
            if let Some(r) = sub.get("depthStencilAttachment").filter(|v| !v.is_null()) {
                if let Some(a) = att(r)? {
                    depth = Some(depth_fmt(u64_field(a, "format"))?);
                    samples = u64_field(a, "samples").max(1);
                }
            }
            return Ok((colors, depth, samples));
        }
        let Some(r) = pnext(info, STYPE_RENDERING) else { return Ok((Vec::new(), None, 1)) };
        if u64_field(r, "viewMask") != 0 {
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
        let (d, s) = (u64_field(r, "depthAttachmentFormat"), u64_field(r, "stencilAttachmentFormat"));
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
    bindings.sort_by_key(|b| u64_field(b, "binding"));
    let attrs: Vec<&Value> = vi.get("attributes").and_then(Value::as_array).into_iter().flatten().collect();
    if pnext(vi, 1000190001).is_some() {
        return Err("vertex attribute divisors are not representable".into());
    }
    let mut out = Vec::new();
    for (slot, b) in bindings.iter().enumerate() {
        if u64_field(b, "binding") != slot as u64 {
            return Err(format!(
                "vertex bindings must be numbered 0..n (granary buffer slots); binding {} found at slot {slot}",
                u64_field(b, "binding")
            ));
        }
        let mut attributes = Vec::new();
        for a in attrs.iter().filter(|a| u64_field(a, "binding") == slot as u64) {
            let f = u64_field(a, "format");
            let format = vk::vertex_format(f)
                .map(|v| v.name())
                .ok_or_else(|| format!("vertex format {f} (VkFormat) is not representable"))?;
            attributes.push(
                json!({"location": u64_field(a, "location"), "format": format, "offset": u64_field(a, "offset")}),
            );
        }
        attributes.sort_by_key(|a| a["location"].as_u64());
        let step = if u64_field(b, "inputRate") == 1 { StepMode::Instance } else { StepMode::Vertex }.name();
        out.push(json!({"stride": u64_field(b, "stride"), "step": step, "attributes": attributes}));
    }
    if let Some(a) = attrs.iter().find(|a| u64_field(a, "binding") as usize >= bindings.len()) {
        return Err(format!(
            "vertex attribute {} uses binding {}, which is not declared",
            u64_field(a, "location"),
            u64_field(a, "binding")
        ));
    }
    Ok(Value::Array(out))
}

fn stencil_face(f: &Value) -> Result<Value, String> {
    let op = |k: &str| {
        vk::stencil_op(u64_field(f, k))
            .map(|v| v.name())
            .ok_or_else(|| format!("stencil op {} is not valid", u64_field(f, k)))
    };
    Ok(json!({
        "compare": vk::compare(u64_field(f, "compareOp")).map(|v| v.name()).ok_or("bad stencil compare op")?,
        "fail_op": op("failOp")?,
        "depth_fail_op": op("depthFailOp")?,
        "pass_op": op("passOp")?,
    }))
}

fn depth_stencil(format: &str, ds: Option<&Value>, rs: &Value) -> Result<Value, String> {
    let mut out = Map::new();
    out.insert("format".into(), format.into());
    if let Some(ds) = ds.filter(|v| !v.is_null()) {
        if u64_field(ds, "depthBoundsTestEnable") != 0 {
            return Err("depth bounds test is not representable".into());
        }
        let test = u64_field(ds, "depthTestEnable") != 0;
        let compare = if test {
            vk::compare(u64_field(ds, "depthCompareOp")).map(|v| v.name()).ok_or("bad depth compare op")?
        } else {
            CompareFunction::Always.name()
        };
        out.insert("depth_compare".into(), compare.into());
        out.insert("depth_write".into(), (test && u64_field(ds, "depthWriteEnable") != 0).into());
        if u64_field(ds, "stencilTestEnable") != 0 {
            let (front, back) =
                (ds.get("front").ok_or("no front stencil state")?, ds.get("back").ok_or("no back stencil state")?);
            if u64_field(front, "compareMask") != u64_field(back, "compareMask")
                || u64_field(front, "writeMask") != u64_field(back, "writeMask")
            {
                return Err("different front and back stencil masks are not representable".into());
            }
            out.insert(
                "stencil".into(),
                json!({"front": stencil_face(front)?, "back": stencil_face(back)?,
                       "read_mask": u64_field(front, "compareMask"), "write_mask": u64_field(front, "writeMask")}),
            );
        }
    }
    if u64_field(rs, "depthBiasEnable") != 0 {
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
    let mask = u64_field(a, "colorWriteMask") & 0xf;
    let mask: String =
        [(1, 'r'), (2, 'g'), (4, 'b'), (8, 'a')].iter().filter(|(b, _)| mask & b != 0).map(|(_, c)| *c).collect();
    let blend = if u64_field(a, "blendEnable") == 0 {
        json!("off")
    } else {
        let fac = |k: &str| {
            vk::blend_factor(u64_field(a, k))
                .map(|v| v.name())
                .ok_or_else(|| format!("blend factor {} is not representable", u64_field(a, k)))
        };
        let op = |k: &str| {
            vk::blend_op(u64_field(a, k))
                .map(|v| v.name())
                .ok_or_else(|| format!("blend op {} is not representable", u64_field(a, k)))
        };
        json!({
            "color": {"src": fac("srcColorBlendFactor")?, "dst": fac("dstColorBlendFactor")?, "op": op("colorBlendOp")?},
            "alpha": {"src": fac("srcAlphaBlendFactor")?, "dst": fac("dstAlphaBlendFactor")?, "op": op("alphaBlendOp")?},
        })
    };
    Ok(json!({"format": format, "blend": blend, "write_mask": mask}))
}
