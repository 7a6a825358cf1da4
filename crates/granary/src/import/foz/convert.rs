//! Fossilize's recorded create infos (Vulkan structures as JSON, numbers as Vulkan records
//! them) to native script entries (docs/FORMAT.md §2.6, §4): pipeline libraries folded into
//! the pipelines that link them, every stage with its module, `pName`, flags, required
//! subgroup size and `VkSpecializationInfo`, the pipeline layout with its set layouts and
//! immutable samplers looked up by handle and taken by value, the render pass by value (or the
//! dynamic-rendering formats), and every state structure (`state.rs`). Whatever granary's
//! native model does not have is an `Err` naming it; nothing is guessed or dropped, except
//! the create flags that name objects an archive cannot hold (`vk::DERIVATIVE_BIT` and the
//! library-linking bits of a folded pipeline).

use super::json::Obj;
use super::state::{self, PassVersion};
use super::vk::{self, stype};
use super::{hex, parse_hash, Collected};
use crate::descriptor::ShaderStage;
use crate::script::write::{Function, NativeStageEntry};
use base64::Engine as _;
use granary_archive::native::*;
use serde_json::Value;

/// How deep pipeline libraries may link further libraries.
const MAX_LIBRARY_DEPTH: usize = 8;

/// Members of a graphics create info a pipeline library can provide.
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
];

/// Create flags no imported pipeline keeps: it has no base pipeline, is no library and links
/// none.
const DROPPED_FLAGS: u32 =
    vk::DERIVATIVE_BIT | vk::LIBRARY_BIT | vk::LINK_TIME_OPTIMIZATION_BIT | vk::RETAIN_LINK_TIME_OPTIMIZATION_INFO_BIT;

/// Converts the create infos of one collection of databases (which holds the modules, render
/// passes, layouts, samplers and libraries they refer to).
pub(super) struct Converter<'a> {
    pub c: &'a Collected,
}

/// One converted pipeline: its stage entries, its state, and the shader modules it uses.
pub(super) struct Converted {
    /// The script's stage entries, in the application's order.
    pub stages: Vec<NativeStageEntry>,
    /// Everything else.
    pub state: NativePipeline,
    /// Fossilize hashes of the modules the stages use.
    pub modules: Vec<u64>,
}

/// A pipeline's stages: script entries, per-stage state and modules, in stage order.
#[derive(Default)]
struct Stages {
    entries: Vec<NativeStageEntry>,
    states: Vec<StageState>,
    modules: Vec<u64>,
}

/// `"pNext"` entries of `info` with an `sType` of `t` (Fossilize writes chained structures as
/// objects in a `pNext` array; its replayer picks them by `sType` alone).
fn pnext(info: &Value, t: u64) -> Option<&Value> {
    info.get("pNext")?.as_array()?.iter().find(|p| p.get("sType").and_then(Value::as_u64) == Some(t))
}

fn is_null_handle(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || parse_hash(v) == Some(0))
}

impl Converter<'_> {
    /// Folds linked pipeline libraries into one create info: stages are joined in order (the
    /// pipeline's, then each library's), each state block comes from the first of the pipeline
    /// and its libraries that has it, the render pass (with its subpass) and the layout from
    /// the first that names one, and every library's other `pNext` structures join the
    /// pipeline's (so one the model lacks still skips the pipeline).
    fn flatten(&self, info: &Value, depth: usize) -> Result<Value, String> {
        let Some(lib) = pnext(info, stype::LIBRARY) else { return Ok(info.clone()) };
        if depth >= MAX_LIBRARY_DEPTH {
            return Err("pipeline libraries nested too deeply (or in a cycle)".into());
        }
        let mut out = info.as_object().cloned().unwrap_or_default();
        let mut stages: Vec<Value> = info.get("stages").and_then(Value::as_array).cloned().unwrap_or_default();
        let keep =
            |p: &&Value| !matches!(p.get("sType").and_then(Value::as_u64), Some(stype::LIBRARY) | Some(stype::GPL));
        let mut chain: Vec<Value> =
            info.get("pNext").and_then(Value::as_array).into_iter().flatten().filter(keep).cloned().collect();
        for h in lib.get("libraries").and_then(Value::as_array).into_iter().flatten() {
            let lh = parse_hash(h).ok_or_else(|| format!("pipeline library reference {h} is not a hash"))?;
            let l = self
                .c
                .graphics
                .get(&lh)
                .ok_or_else(|| format!("pipeline library {} is not in the database(s)", hex(lh)))?;
            let l = self.flatten(l, depth + 1)?;
            stages.extend(l.get("stages").and_then(Value::as_array).cloned().unwrap_or_default());
            for k in STATE_KEYS {
                if out.get(*k).is_none_or(Value::is_null) {
                    if let Some(v) = l.get(*k) {
                        out.insert((*k).to_string(), v.clone());
                    }
                }
            }
            if is_null_handle(out.get("renderPass")) && !is_null_handle(l.get("renderPass")) {
                out.insert("renderPass".into(), l["renderPass"].clone());
                out.insert("subpass".into(), l.get("subpass").cloned().unwrap_or(Value::from(0)));
            }
            if is_null_handle(out.get("layout")) && !is_null_handle(l.get("layout")) {
                out.insert("layout".into(), l["layout"].clone());
            }
            for p in l.get("pNext").and_then(Value::as_array).into_iter().flatten().filter(keep) {
                let t = p.get("sType").and_then(Value::as_u64);
                let have = chain.iter().any(|c| c.get("sType").and_then(Value::as_u64) == t);
                // Dynamic-rendering formats: the pipeline's own, else the first library's.
                if !(have && t == Some(stype::RENDERING)) {
                    chain.push(p.clone());
                }
            }
        }
        out.insert("stages".into(), Value::Array(stages));
        out.insert("pNext".into(), Value::Array(chain));
        Ok(Value::Object(out))
    }

    /// One `VkPipelineShaderStageCreateInfo`: its script entry, its per-stage state and the
    /// module it uses.
    fn stage(&self, s: &Obj<'_>) -> Result<(NativeStageEntry, StageState, u64), String> {
        let bit = u64::from(s.u32("stage")?);
        let stage = vk::stage(bit).ok_or_else(|| {
            format!("{}: stage bit {bit:#x} is not a VkShaderStageFlagBits granary knows", s.at("stage"))
        })?;
        let module = s.handle("module")?;
        if !self.c.modules.contains_key(&module) {
            return Err(format!("{}: shader module {} is not in the database(s)", s.at("module"), hex(module)));
        }
        let name = s.str("name")?;
        let chain = s.chain(&[stype::REQUIRED_SUBGROUP_SIZE])?;
        let state = StageState {
            flags: s.u32("flags")?,
            required_subgroup_size: chain
                .get(stype::REQUIRED_SUBGROUP_SIZE)
                .map(|r| r.u32("requiredSubgroupSize"))
                .transpose()?,
        };
        let specialization = s.opt_obj("specializationInfo")?.map(|o| specialization(&o)).transpose()?;
        Ok((NativeStageEntry::new(stage, Function::library(hex(module), name), specialization), state, module))
    }

    /// Every stage of `list`, in order.
    fn stages(&self, list: &[Obj<'_>]) -> Result<Stages, String> {
        let mut out = Stages::default();
        for s in list {
            let (entry, state, module) = self.stage(s)?;
            out.entries.push(entry);
            out.states.push(state);
            out.modules.push(module);
        }
        Ok(out)
    }

    /// A compute pipeline's create info.
    pub(super) fn compute(&self, info: &Value) -> Result<Converted, String> {
        let o = Obj::new(info, "")?;
        o.chain(&[])?;
        let s = o.obj("stage")?;
        let bit = s.u32("stage")?;
        if bit != 0x20 {
            return Err(format!("{}: a compute pipeline's stage is {bit:#x}, not COMPUTE (0x20)", s.at("stage")));
        }
        let (entry, stage, module) = self.stage(&s)?;
        let state = NativePipeline {
            flags: o.u32("flags")? & !DROPPED_FLAGS,
            stages: vec![stage],
            layout: self.layout(&o)?,
            graphics: None,
            ray_tracing: None,
        };
        Ok(Converted { stages: vec![entry], state, modules: vec![module] })
    }

    /// A graphics pipeline's create info, its libraries folded in.
    pub(super) fn graphics(&self, info: &Value) -> Result<Converted, String> {
        let flat = self.flatten(info, 0)?;
        let o = Obj::new(&flat, "")?;
        let chain = o.chain(&[stype::RENDERING, stype::GPL])?;
        let Stages { entries: stages, states: stage_states, modules } = self.stages(&o.objs("stages")?)?;
        if stages.is_empty() {
            return Err("no stages (a library part alone?)".into());
        }
        let kinds: Vec<ShaderStage> =
            o.objs("stages")?.iter().filter_map(|s| s.u32("stage").ok()).filter_map(|b| vk::stage(b.into())).collect();
        for (i, k) in kinds.iter().enumerate() {
            if *k == ShaderStage::Compute || k.is_ray_tracing() {
                return Err(format!("stages[{i}].stage: a {k} stage in a graphics pipeline"));
            }
            if let Some(first) = kinds[..i].iter().position(|o| o == k) {
                return Err(format!("stages[{i}].stage: a second {k} stage (the first is stages[{first}])"));
            }
        }
        let render_pass = match o.handle("renderPass")? {
            0 => None,
            h => Some(self.render_pass(h, o.u32("subpass")?)?),
        };
        let rendering = chain
            .get(stype::RENDERING)
            .map(|r| {
                r.chain(&[])?;
                Ok::<_, String>(RenderingState {
                    view_mask: r.u32("viewMask")?,
                    color_attachment_formats: r.u32s("colorAttachmentFormats")?,
                    depth_attachment_format: r.u32("depthAttachmentFormat")?,
                    stencil_attachment_format: r.u32("stencilAttachmentFormat")?,
                })
            })
            .transpose()?;
        let part = |k: &str| o.opt_obj(k);
        let graphics = GraphicsState {
            vertex_input_state: part("vertexInputState")?.map(|s| state::vertex_input(&s)).transpose()?,
            input_assembly_state: part("inputAssemblyState")?.map(|s| state::input_assembly(&s)).transpose()?,
            tessellation_state: part("tessellationState")?.map(|s| state::tessellation(&s)).transpose()?,
            viewport_state: part("viewportState")?.map(|s| state::viewport(&s)).transpose()?,
            rasterization_state: part("rasterizationState")?.map(|s| state::rasterization(&s)).transpose()?,
            multisample_state: part("multisampleState")?.map(|s| state::multisample(&s)).transpose()?,
            depth_stencil_state: part("depthStencilState")?.map(|s| state::depth_stencil(&s)).transpose()?,
            color_blend_state: part("colorBlendState")?.map(|s| state::color_blend(&s)).transpose()?,
            dynamic_states: part("dynamicState")?.map(|s| state::dynamic_states(&s)).transpose()?.unwrap_or_default(),
            render_pass,
            subpass: o.u32("subpass")?,
            rendering,
        };
        let state = NativePipeline {
            flags: o.u32("flags")? & !DROPPED_FLAGS,
            stages: stage_states,
            layout: self.layout(&o)?,
            graphics: Some(graphics),
            ray_tracing: None,
        };
        Ok(Converted { stages, state, modules })
    }

    /// A ray-tracing pipeline's create info, its libraries folded in: its stages and then each
    /// library's (depth first, in `pLibraries` order), its groups and then each library's, the
    /// library's stage indices moved past the stages before it — the order in which Vulkan
    /// numbers the shader groups of a pipeline that links libraries, so the group handles an
    /// engine fetches are the same. The folded pipeline links nothing, so it keeps no library
    /// interface.
    pub(super) fn ray_tracing(&self, info: &Value) -> Result<Converted, String> {
        let o = Obj::new(info, "")?;
        o.chain(&[])?;
        let (stage_list, groups) = self.ray_tracing_parts(&o, 0)?;
        let stage_objs = stage_list
            .iter()
            .enumerate()
            .map(|(i, s)| Obj::new(s, format!("stages[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let Stages { entries: stages, states: stage_states, modules } = self.stages(&stage_objs)?;
        let dynamic_states =
            o.opt_obj("dynamicState")?.map(|s| state::dynamic_states(&s)).transpose()?.unwrap_or_default();
        let state = NativePipeline {
            flags: o.u32("flags")? & !DROPPED_FLAGS,
            stages: stage_states,
            layout: self.layout(&o)?,
            graphics: None,
            ray_tracing: Some(RayTracingState {
                groups,
                max_pipeline_ray_recursion_depth: o.u32("maxPipelineRayRecursionDepth")?,
                library_interface: None,
                dynamic_states,
            }),
        };
        let kinds: Vec<ShaderStage> = stage_objs
            .iter()
            .map(|s| s.u32("stage").ok().and_then(|b| vk::stage(b.into())))
            .collect::<Option<_>>()
            .ok_or("a stage without a known stage bit")?;
        state.check_ray_tracing(&kinds)?;
        Ok(Converted { stages, state, modules })
    }

    /// The stages and shader groups of ray-tracing create info `o` with the libraries it
    /// links (`libraryInfo.libraries`), folded as [`ray_tracing`](Self::ray_tracing) says.
    fn ray_tracing_parts(&self, o: &Obj<'_>, depth: usize) -> Result<(Vec<Value>, Vec<ShaderGroup>), String> {
        if depth >= MAX_LIBRARY_DEPTH {
            return Err("ray-tracing pipeline libraries nested too deeply (or in a cycle)".into());
        }
        let mut stages: Vec<Value> = o.opt("stages").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut groups = Vec::new();
        for g in o.objs("groups")? {
            g.chain(&[])?;
            if !is_null_handle(g.opt("pShaderGroupCaptureReplayHandle")) {
                return Err(format!(
                    "{}: a shader group capture-replay handle is not in granary's native model",
                    g.at("pShaderGroupCaptureReplayHandle")
                ));
            }
            groups.push(ShaderGroup {
                group_type: g.u32("type")?,
                general_shader: g.u32("generalShader")?,
                closest_hit_shader: g.u32("closestHitShader")?,
                any_hit_shader: g.u32("anyHitShader")?,
                intersection_shader: g.u32("intersectionShader")?,
            });
        }
        if let Some(lib) = o.opt_obj("libraryInfo")? {
            for lh in lib.handles("libraries")? {
                let l = self
                    .c
                    .raytracing
                    .get(&lh)
                    .ok_or_else(|| format!("ray-tracing pipeline library {} is not in the database(s)", hex(lh)))?;
                let l = Obj::new(l, format!("raytracingPipelines.{}", hex(lh)))?;
                l.chain(&[])?;
                let (lib_stages, lib_groups) = self.ray_tracing_parts(&l, depth + 1)?;
                let offset = stages.len() as u32;
                let moved = |i: u32| if i == SHADER_UNUSED { i } else { i + offset };
                groups.extend(lib_groups.into_iter().map(|g| ShaderGroup {
                    general_shader: moved(g.general_shader),
                    closest_hit_shader: moved(g.closest_hit_shader),
                    any_hit_shader: moved(g.any_hit_shader),
                    intersection_shader: moved(g.intersection_shader),
                    ..g
                }));
                stages.extend(lib_stages);
            }
        }
        Ok((stages, groups))
    }

    /// The render pass `h` (either version) by value; `subpass` must be one of its subpasses.
    fn render_pass(&self, h: u64, subpass: u32) -> Result<RenderPassState, String> {
        let (version, v) =
            self.c.render_passes.get(&h).ok_or_else(|| format!("render pass {} is not in the database(s)", hex(h)))?;
        let key = match version {
            PassVersion::V1 => "renderPasses",
            PassVersion::V2 => "renderPasses2",
        };
        let pass = state::render_pass(&Obj::new(v, format!("{key}.{}", hex(h)))?, *version)?;
        if subpass as usize >= pass.subpasses.len() {
            return Err(format!("subpass {subpass} is not one of render pass {}'s {}", hex(h), pass.subpasses.len()));
        }
        Ok(pass)
    }

    /// The create info's `layout`, looked up and taken by value.
    fn layout(&self, o: &Obj<'_>) -> Result<NativeLayout, String> {
        let h = o.handle("layout")?;
        if h == 0 {
            return Err(format!("{}: no pipeline layout (VK_NULL_HANDLE)", o.at("layout")));
        }
        let v = self
            .c
            .pipeline_layouts
            .get(&h)
            .ok_or_else(|| format!("pipeline layout {} is not in the database(s)", hex(h)))?;
        let l = Obj::new(v, format!("pipelineLayouts.{}", hex(h)))?;
        l.chain(&[])?;
        let mut set_layouts = Vec::new();
        for (i, s) in l.handles("setLayouts")?.into_iter().enumerate() {
            if s == 0 {
                return Err(format!(
                    "{}[{i}]: a null descriptor set layout (independent sets) is not in granary's native model",
                    l.at("setLayouts")
                ));
            }
            set_layouts.push(self.set_layout(s)?);
        }
        Ok(NativeLayout {
            flags: l.u32("flags")?,
            set_layouts,
            push_constant_ranges: l
                .objs("pushConstantRanges")?
                .iter()
                .map(|r| {
                    Ok(PushConstantRange {
                        stage_flags: r.u32("stageFlags")?,
                        offset: r.u32("offset")?,
                        size: r.u32("size")?,
                    })
                })
                .collect::<Result<_, String>>()?,
        })
    }

    /// Descriptor set layout `h` by value, immutable samplers looked up, binding flags from
    /// its `VkDescriptorSetLayoutBindingFlagsCreateInfo`.
    fn set_layout(&self, h: u64) -> Result<SetLayout, String> {
        let v = self
            .c
            .set_layouts
            .get(&h)
            .ok_or_else(|| format!("descriptor set layout {} is not in the database(s)", hex(h)))?;
        let o = Obj::new(v, format!("setLayouts.{}", hex(h)))?;
        let chain = o.chain(&[stype::BINDING_FLAGS])?;
        let list = o.objs("bindings")?;
        let flags = match chain.get(stype::BINDING_FLAGS) {
            None => vec![0; list.len()],
            Some(f) => match f.u32s("bindingFlags")? {
                v if v.is_empty() => vec![0; list.len()],
                v if v.len() == list.len() => v,
                v => {
                    return Err(format!(
                        "{}: {} binding flags for {} bindings",
                        f.at("bindingFlags"),
                        v.len(),
                        list.len()
                    ))
                }
            },
        };
        let mut bindings = Vec::with_capacity(list.len());
        for (b, binding_flags) in list.iter().zip(flags) {
            let mut immutable_samplers = Vec::new();
            for (i, s) in b.handles("immutableSamplers")?.into_iter().enumerate() {
                let v = self.c.samplers.get(&s).ok_or_else(|| {
                    format!("{}[{i}]: sampler {} is not in the database(s)", b.at("immutableSamplers"), hex(s))
                })?;
                immutable_samplers.push(state::sampler(&Obj::new(v, format!("samplers.{}", hex(s)))?)?);
            }
            bindings.push(SetLayoutBinding {
                binding: b.u32("binding")?,
                descriptor_type: b.u32("descriptorType")?,
                descriptor_count: b.u32("descriptorCount")?,
                stage_flags: b.u32("stageFlags")?,
                immutable_samplers,
                binding_flags,
            });
        }
        Ok(SetLayout { flags: o.u32("flags")?, bindings })
    }
}

/// A recorded `VkSpecializationInfo`: map entries in the application's order, the data bytes
/// (base64 in Fossilize), checked as Vulkan requires.
fn specialization(o: &Obj<'_>) -> Result<Specialization, String> {
    let data = match o.opt("data") {
        None => Vec::new(),
        Some(_) => base64::engine::general_purpose::STANDARD
            .decode(o.str("data")?)
            .map_err(|e| format!("{}: not base64: {e}", o.at("data")))?,
    };
    if let Some(n) = o.opt("dataSize") {
        if n.as_u64() != Some(data.len() as u64) {
            return Err(format!("{}: {n} for {} data bytes", o.at("dataSize"), data.len()));
        }
    }
    let map_entries = o
        .objs("mapEntries")?
        .iter()
        .map(|m| {
            Ok(SpecializationMapEntry {
                constant_id: m.u32("constantID")?,
                offset: m.u32("offset")?,
                size: m.u32("size")?,
            })
        })
        .collect::<Result<_, String>>()?;
    let s = Specialization { map_entries, data };
    s.check().map_err(|m| format!("{}: {m}", o.path()))?;
    Ok(s)
}
