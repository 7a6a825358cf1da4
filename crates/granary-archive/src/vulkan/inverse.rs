//! The application's own create info to granary's native state and key: the inverse of
//! `native.rs`'s builders. A `VkGraphicsPipelineCreateInfo`, `VkComputePipelineCreateInfo` or
//! `VkRayTracingPipelineCreateInfoKHR`
//! (with the handles it names resolved by an [`ObjectRecorder`]) becomes an [`AppPipeline`],
//! whose [`key`](AppPipeline::key) is the key a harvest of the same pipeline in the native form
//! gives (`native/key.rs`).
//!
//! Every member and every chained structure the native state models is read; anything else is
//! a [`CreateInfoError`] naming it (an unknown `sType`, a derivative pipeline, a flags value
//! past 32 bits, a handle not recorded), never dropped. What Vulkan says it ignores is not read
//! (it may be any pointer) and is absent from the state, as a capture layer records it:
//! `pTessellationState` without tessellation stages, `pViewports`/`pScissors` when the count is
//! dynamic or they are dynamic, `pMultisampleState`, `pDepthStencilState` and
//! `pColorBlendState` under rasterizer discard, `pDepthStencilState` without a depth or
//! stencil attachment, `pColorBlendState` without colour attachments, and the dynamic-rendering
//! structure when a render pass is given.
//!
//! No driver call here: the readers only read the application's memory (`unsafe`: the
//! application promises its create info is valid, as for the Vulkan call it will make).

use super::recorder::{find, module_code, only_next, slice, unsupported, CreateInfoError, ObjectRecorder};
use super::translate::stage_flag;
use crate::key::{ContentHash, KeyContext, PipelineKey, StageKey};
use crate::native::*;
use crate::types::ShaderStage;
use std::ffi::CStr;
use vulkanalia::vk::{self, Handle};

/// One stage of an application's pipeline: what its key is computed from.
#[derive(Clone, Debug, PartialEq)]
pub struct AppStage {
    /// The stage.
    pub stage: ShaderStage,
    /// The content hash of its SPIR-V (as a SPIR-V library's, [`spirv_library_hash`]).
    pub library: ContentHash,
    /// `pName`.
    pub entry: String,
    /// `pSpecializationInfo`, by value.
    pub specialization: Option<Specialization>,
    /// The SPIR-V, when the [`ObjectRecorder`] keeps code ([`ObjectRecorder::keeping_code`]):
    /// a `VkShaderModule`'s as recorded, a chained `VkShaderModuleCreateInfo`'s copied.
    pub code: Option<std::sync::Arc<[u8]>>,
}

/// An application's pipeline create info as granary's native form: its stages and everything
/// else the create info says ([`NativePipeline`]).
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Debug, PartialEq)]
pub struct AppPipeline {
    /// The stages, in `pStages` order.
    pub stages: Vec<AppStage>,
    /// The native state.
    pub state: NativePipeline,
}

impl AppPipeline {
    /// The stage keys under `ctx` (an archive's [`key_context`](crate::Archive::key_context)).
    pub fn stage_keys(&self, ctx: &KeyContext) -> Vec<StageKey> {
        self.stages
            .iter()
            .map(|s| native_stage_key(s.library, &s.entry, s.stage, s.specialization.as_ref(), ctx))
            .collect()
    }

    /// The pipeline key under `ctx`: what a harvest of this pipeline in the native form
    /// archived it under.
    pub fn key(&self, ctx: &KeyContext) -> PipelineKey {
        let stages: Vec<(ShaderStage, StageKey)> =
            self.stages.iter().map(|s| s.stage).zip(self.stage_keys(ctx)).collect();
        native_pipeline_key(&stages, &self.state)
    }
}

fn b(v: vk::Bool32) -> bool {
    v != vk::FALSE
}

fn raw<T: Into<i64>>(v: T) -> u32 {
    v.into() as u32
}

/// The create info's `flags`, or `VkPipelineCreateFlags2CreateInfo::flags` where chained (which
/// replaces them), refused past the 32 bits the native state holds and for derivatives.
fn pipeline_flags(
    flags: vk::PipelineCreateFlags,
    flags2: Option<&vk::PipelineCreateFlags2CreateInfo>,
) -> Result<u32, CreateInfoError> {
    let v = match flags2 {
        Some(f) => u32::try_from(f.flags.bits()).map_err(|_| {
            unsupported("VkPipelineCreateFlags2CreateInfo::flags", format!("{:#x} has bits past 32", f.flags.bits()))
        })?,
        None => flags.bits(),
    };
    if v & vk::PipelineCreateFlags::DERIVATIVE.bits() != 0 {
        return Err(unsupported("flags", "DERIVATIVE: a base pipeline is not part of the native state"));
    }
    Ok(v)
}

/// The stage of a `VkShaderStageFlagBits`.
fn stage_of(flags: vk::ShaderStageFlags, at: usize) -> Result<ShaderStage, CreateInfoError> {
    ShaderStage::ALL.iter().copied().find(|s| stage_flag(*s) == flags).ok_or_else(|| {
        unsupported(
            format!("pStages[{at}].stage"),
            format!("{:#x} is not one shader stage granary knows", flags.bits()),
        )
    })
}

/// One `VkPipelineShaderStageCreateInfo` as its stage and stage state.
///
/// # Safety
///
/// `s` and everything it points at are valid as Vulkan requires.
unsafe fn stage(
    recorder: &ObjectRecorder,
    s: &vk::PipelineShaderStageCreateInfo,
    at: usize,
) -> Result<(AppStage, StageState), CreateInfoError> {
    const SUBGROUP: vk::StructureType = vk::StructureType::PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO;
    const MODULE: vk::StructureType = vk::StructureType::SHADER_MODULE_CREATE_INFO;
    // SAFETY: the caller's promise: a valid chain.
    let chain = unsafe { only_next(s.next, "VkPipelineShaderStageCreateInfo", &[SUBGROUP, MODULE])? };
    // SAFETY: the chain's pointers are the structures their sTypes name.
    let subgroup: Option<&vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo> = unsafe { find(&chain, SUBGROUP) };
    // SAFETY: as above.
    let inline: Option<&vk::ShaderModuleCreateInfo> = unsafe { find(&chain, MODULE) };
    let (library, code) = match (s.module.is_null(), inline) {
        (false, _) => recorder.shader_module_code(s.module)?,
        (true, Some(m)) => {
            // SAFETY: the caller's promise: the chained create info's code is valid.
            let code = unsafe { module_code(m) }?;
            (spirv_library_hash(code), recorder.keeps_code().then(|| std::sync::Arc::from(code)))
        }
        (true, None) => {
            return Err(unsupported(format!("pStages[{at}].module"), "null, and no VkShaderModuleCreateInfo chained"))
        }
    };
    if s.name.is_null() {
        return Err(unsupported(format!("pStages[{at}].pName"), "null"));
    }
    // SAFETY: the caller's promise: `pName` is a null-terminated UTF-8 string.
    let entry = unsafe { CStr::from_ptr(s.name) }
        .to_str()
        .map_err(|_| unsupported(format!("pStages[{at}].pName"), "not UTF-8"))?
        .to_string();
    let specialization = if s.specialization_info.is_null() {
        None
    } else {
        // SAFETY: the caller's promise: a valid VkSpecializationInfo.
        let info = unsafe { &*s.specialization_info };
        // SAFETY: as above: `pMapEntries` holds `mapEntryCount` entries.
        let map_entries = unsafe { slice(info.map_entries, info.map_entry_count) }
            .iter()
            .map(|m| SpecializationMapEntry { constant_id: m.constant_id, offset: m.offset, size: m.size as u32 })
            .collect();
        let data = if info.data.is_null() || info.data_size == 0 {
            Vec::new()
        } else {
            // SAFETY: as above: `pData` holds `dataSize` bytes.
            unsafe { std::slice::from_raw_parts(info.data.cast::<u8>(), info.data_size) }.to_vec()
        };
        let sp = Specialization { map_entries, data };
        sp.check().map_err(|e| unsupported(format!("pStages[{at}].pSpecializationInfo"), e))?;
        Some(sp)
    };
    let app = AppStage { stage: stage_of(s.stage, at)?, library, entry, specialization, code };
    Ok((app, StageState { flags: s.flags.bits(), required_subgroup_size: subgroup.map(|g| g.required_subgroup_size) }))
}

/// The stages of a create info.
///
/// # Safety
///
/// As [`stage`], for every element.
unsafe fn stages(
    recorder: &ObjectRecorder,
    infos: &[vk::PipelineShaderStageCreateInfo],
) -> Result<(Vec<AppStage>, Vec<StageState>), CreateInfoError> {
    let mut out = (Vec::with_capacity(infos.len()), Vec::with_capacity(infos.len()));
    for (i, s) in infos.iter().enumerate() {
        // SAFETY: the caller's promise, per element.
        let (a, st) = unsafe { stage(recorder, s, i)? };
        out.0.push(a);
        out.1.push(st);
    }
    Ok(out)
}

/// The application's compute create info as an [`AppPipeline`].
///
/// # Safety
///
/// `info` is a valid `VkComputePipelineCreateInfo` as `vkCreateComputePipelines` requires
/// (every pointer, count and chain), readable during the call.
pub unsafe fn compute_pipeline(
    recorder: &ObjectRecorder,
    info: &vk::ComputePipelineCreateInfo,
) -> Result<AppPipeline, CreateInfoError> {
    const FLAGS2: vk::StructureType = vk::StructureType::PIPELINE_CREATE_FLAGS_2_CREATE_INFO;
    const FEEDBACK: vk::StructureType = vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO;
    // SAFETY: the caller's promise: a valid chain.
    let chain = unsafe { only_next(info.next, "VkComputePipelineCreateInfo", &[FLAGS2, FEEDBACK])? };
    // SAFETY: the chain's pointers are the structures their sTypes name.
    let flags = pipeline_flags(info.flags, unsafe { find(&chain, FLAGS2) })?;
    // SAFETY: the caller's promise: the stage is valid.
    let (stages, stage_states) = unsafe { stages(recorder, std::slice::from_ref(&info.stage))? };
    if stages[0].stage != ShaderStage::Compute {
        return Err(unsupported("stage.stage", "a compute pipeline's stage is not COMPUTE"));
    }
    let layout = (*recorder.pipeline_layout(info.layout)?).clone();
    Ok(AppPipeline {
        stages,
        state: NativePipeline { flags, stages: stage_states, layout, graphics: None, ray_tracing: None },
    })
}

/// `pDynamicState`'s states (empty for a null pointer).
///
/// # Safety
///
/// `state` is null or a valid `VkPipelineDynamicStateCreateInfo` with its chain and array.
unsafe fn dynamic_states(state: *const vk::PipelineDynamicStateCreateInfo) -> Result<Vec<u32>, CreateInfoError> {
    if state.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller's promise: a valid structure.
    let d = unsafe { &*state };
    // SAFETY: as above.
    unsafe { only_next(d.next, "VkPipelineDynamicStateCreateInfo", &[])? };
    // SAFETY: as above: the array holds the count.
    Ok(unsafe { slice(d.dynamic_states, d.dynamic_state_count) }.iter().map(|s| s.as_raw() as u32).collect())
}

/// The application's ray-tracing create info as an [`AppPipeline`]. A create info that links
/// pipeline libraries (`pLibraryInfo`) is refused: the archive holds such a pipeline with its
/// libraries' stages and groups folded in (docs/RAY_TRACING.md), which is another create info.
///
/// # Safety
///
/// `info` is a valid `VkRayTracingPipelineCreateInfoKHR` as `vkCreateRayTracingPipelinesKHR`
/// requires (every pointer, count and chain), readable during the call.
pub unsafe fn ray_tracing_pipeline(
    recorder: &ObjectRecorder,
    info: &vk::RayTracingPipelineCreateInfoKHR,
) -> Result<AppPipeline, CreateInfoError> {
    use vk::StructureType as S;
    const PARENT: &str = "VkRayTracingPipelineCreateInfoKHR";
    // SAFETY: the caller's promise: a valid chain.
    let chain = unsafe {
        only_next(
            info.next,
            PARENT,
            &[S::PIPELINE_CREATE_FLAGS_2_CREATE_INFO, S::PIPELINE_CREATION_FEEDBACK_CREATE_INFO],
        )?
    };
    // SAFETY: the chain's pointers are the structures their sTypes name.
    let flags = pipeline_flags(info.flags, unsafe { find(&chain, S::PIPELINE_CREATE_FLAGS_2_CREATE_INFO) })?;
    if !info.library_info.is_null() {
        // SAFETY: the caller's promise: a valid structure.
        let libraries = unsafe { &*info.library_info };
        if libraries.library_count > 0 {
            return Err(unsupported(
                "pLibraryInfo",
                "linked pipeline libraries: the archive holds such a pipeline with its libraries folded in",
            ));
        }
    }
    // SAFETY: the caller's promise: `pStages` holds `stageCount` valid stages.
    let (stages, stage_states) = unsafe { stages(recorder, slice(info.stages, info.stage_count))? };
    // SAFETY: as above: `pGroups` holds `groupCount` groups.
    let groups = unsafe { slice(info.groups, info.group_count) }
        .iter()
        .enumerate()
        .map(|(i, g)| {
            // SAFETY: as above: each group's chain is valid.
            unsafe { only_next(g.next, "VkRayTracingShaderGroupCreateInfoKHR", &[])? };
            if !g.shader_group_capture_replay_handle.is_null() {
                return Err(unsupported(
                    format!("pGroups[{i}].pShaderGroupCaptureReplayHandle"),
                    "group handle capture and replay is not part of the native state",
                ));
            }
            Ok(ShaderGroup {
                group_type: g.type_.as_raw() as u32,
                general_shader: g.general_shader,
                closest_hit_shader: g.closest_hit_shader,
                any_hit_shader: g.any_hit_shader,
                intersection_shader: g.intersection_shader,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let library_interface = if info.library_interface.is_null() {
        None
    } else {
        // SAFETY: the caller's promise: a valid structure.
        let l = unsafe { &*info.library_interface };
        // SAFETY: as above.
        unsafe { only_next(l.next, "VkRayTracingPipelineInterfaceCreateInfoKHR", &[])? };
        Some(RayTracingInterface {
            max_pipeline_ray_payload_size: l.max_pipeline_ray_payload_size,
            max_pipeline_ray_hit_attribute_size: l.max_pipeline_ray_hit_attribute_size,
        })
    };
    // SAFETY: the caller's promise: null or a valid structure.
    let dynamic_states = unsafe { dynamic_states(info.dynamic_state)? };
    let layout = (*recorder.pipeline_layout(info.layout)?).clone();
    let ray_tracing = RayTracingState {
        groups,
        max_pipeline_ray_recursion_depth: info.max_pipeline_ray_recursion_depth,
        library_interface,
        dynamic_states,
    };
    let state = NativePipeline { flags, stages: stage_states, layout, graphics: None, ray_tracing: Some(ray_tracing) };
    let kinds: Vec<ShaderStage> = stages.iter().map(|s| s.stage).collect();
    state.check_ray_tracing(&kinds).map_err(|e| unsupported(PARENT, e))?;
    Ok(AppPipeline { stages, state })
}

/// The application's graphics create info as an [`AppPipeline`].
///
/// # Safety
///
/// `info` is a valid `VkGraphicsPipelineCreateInfo` as `vkCreateGraphicsPipelines` requires
/// (every pointer Vulkan reads, with its count and chain), readable during the call. Pointers
/// Vulkan ignores (see the module documentation) are not read.
pub unsafe fn graphics_pipeline(
    recorder: &ObjectRecorder,
    info: &vk::GraphicsPipelineCreateInfo,
) -> Result<AppPipeline, CreateInfoError> {
    use vk::StructureType as S;
    const PARENT: &str = "VkGraphicsPipelineCreateInfo";
    // SAFETY: the caller's promise: a valid chain.
    let chain = unsafe {
        only_next(
            info.next,
            PARENT,
            &[
                S::PIPELINE_CREATE_FLAGS_2_CREATE_INFO,
                S::PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
                S::PIPELINE_RENDERING_CREATE_INFO,
            ],
        )?
    };
    // SAFETY: (both finds) the chain's pointers are the structures their sTypes name.
    let flags = pipeline_flags(info.flags, unsafe { find(&chain, S::PIPELINE_CREATE_FLAGS_2_CREATE_INFO) })?;
    if flags & vk::PipelineCreateFlags::LIBRARY_KHR.bits() != 0 {
        return Err(unsupported(
            "flags",
            "LIBRARY_KHR: graphics pipeline library parts are not part of the native state",
        ));
    }
    // SAFETY: as above.
    let rendering_info: Option<&vk::PipelineRenderingCreateInfo> =
        unsafe { find(&chain, S::PIPELINE_RENDERING_CREATE_INFO) };
    // SAFETY: the caller's promise: `pStages` holds `stageCount` valid stages.
    let (stages, stage_states) = unsafe { stages(recorder, slice(info.stages, info.stage_count))? };
    let kinds: Vec<ShaderStage> = stages.iter().map(|s| s.stage).collect();
    let layout = (*recorder.pipeline_layout(info.layout)?).clone();
    let (render_pass, rendering) = if info.render_pass.is_null() {
        let r = match rendering_info {
            Some(r) => {
                // SAFETY: the caller's promise: the structure's own chain is valid.
                unsafe { only_next(r.next, "VkPipelineRenderingCreateInfo", &[])? };
                RenderingState {
                    view_mask: r.view_mask,
                    // SAFETY: the caller's promise: the formats array holds the count.
                    color_attachment_formats: unsafe { slice(r.color_attachment_formats, r.color_attachment_count) }
                        .iter()
                        .map(|f| f.as_raw() as u32)
                        .collect(),
                    depth_attachment_format: r.depth_attachment_format.as_raw() as u32,
                    stencil_attachment_format: r.stencil_attachment_format.as_raw() as u32,
                }
            }
            // Vulkan: as if the structure were there with every member zero.
            None => RenderingState::default(),
        };
        (None, Some(r))
    } else {
        ((Some((*recorder.render_pass(info.render_pass)?).clone())), None)
    };
    // What the subpass or the rendering formats attach.
    let (colour, depth_stencil) = match (&render_pass, &rendering) {
        (Some(rp), _) => {
            let sp = rp.subpasses.get(info.subpass as usize).ok_or_else(|| {
                unsupported(
                    "subpass",
                    format!("{} is not a subpass of a render pass of {}", info.subpass, rp.subpasses.len()),
                )
            })?;
            let used = |r: &AttachmentReference| r.attachment != vk::ATTACHMENT_UNUSED;
            (sp.color_attachments.iter().any(used), sp.depth_stencil_attachment.as_ref().is_some_and(used))
        }
        (None, Some(r)) => {
            (!r.color_attachment_formats.is_empty(), r.depth_attachment_format != 0 || r.stencil_attachment_format != 0)
        }
        (None, None) => (false, false),
    };

    // Dynamic state first: it decides which pointers Vulkan reads.
    // SAFETY: the caller's promise: null or a valid structure.
    let dynamic_states = unsafe { dynamic_states(info.dynamic_state)? };
    let dynamic = |s: vk::DynamicState| dynamic_states.contains(&(s.as_raw() as u32));

    // SAFETY: the caller's promise: each non-null state pointer below is valid with its chain
    // and arrays (Vulkan reads it: the ignored ones are skipped).
    let rasterization_state = unsafe { rasterization(info.rasterization_state)? };
    let discard = rasterization_state.as_ref().is_some_and(|r| r.rasterizer_discard_enable)
        && !dynamic(vk::DynamicState::RASTERIZER_DISCARD_ENABLE);
    let tessellated =
        kinds.iter().any(|k| matches!(k, ShaderStage::TessellationControl | ShaderStage::TessellationEvaluation));
    // Vulkan ignores the vertex input and input assembly of a mesh pipeline, and the vertex
    // input when it is dynamic.
    let mesh = kinds.contains(&ShaderStage::Mesh);
    let vertex_input_ignored = mesh || dynamic(vk::DynamicState::VERTEX_INPUT_EXT);
    let graphics = GraphicsState {
        vertex_input_state: if vertex_input_ignored {
            None
        } else {
            // SAFETY: as above.
            unsafe { vertex_input(info.vertex_input_state)? }
        },
        // SAFETY: as above.
        input_assembly_state: if mesh { None } else { unsafe { input_assembly(info.input_assembly_state)? } },
        // SAFETY: as above.
        tessellation_state: if tessellated { unsafe { tessellation(info.tessellation_state)? } } else { None },
        viewport_state: if discard {
            None
        } else {
            // SAFETY: as above.
            unsafe { viewport(info.viewport_state, &dynamic)? }
        },
        rasterization_state,
        // SAFETY: as above.
        multisample_state: if discard { None } else { unsafe { multisample(info.multisample_state)? } },
        depth_stencil_state: if discard || !depth_stencil {
            None
        } else {
            // SAFETY: as above.
            unsafe { depth_stencil_state(info.depth_stencil_state)? }
        },
        // SAFETY: as above.
        color_blend_state: if discard || !colour { None } else { unsafe { color_blend(info.color_blend_state)? } },
        dynamic_states,
        render_pass,
        subpass: info.subpass,
        rendering,
    };
    Ok(AppPipeline {
        stages,
        state: NativePipeline { flags, stages: stage_states, layout, graphics: Some(graphics), ray_tracing: None },
    })
}

/// # Safety
///
/// `p` is null or a valid structure with its arrays and chain.
unsafe fn vertex_input(
    p: *const vk::PipelineVertexInputStateCreateInfo,
) -> Result<Option<VertexInputState>, CreateInfoError> {
    const DIVISOR: vk::StructureType = vk::StructureType::PIPELINE_VERTEX_INPUT_DIVISOR_STATE_CREATE_INFO;
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: (this block) the caller's promise.
    unsafe {
        let v = &*p;
        let chain = only_next(v.next, "VkPipelineVertexInputStateCreateInfo", &[DIVISOR])?;
        let divisors =
            find::<vk::PipelineVertexInputDivisorStateCreateInfo>(&chain, DIVISOR).map_or_else(Vec::new, |d| {
                slice(d.vertex_binding_divisors, d.vertex_binding_divisor_count)
                    .iter()
                    .map(|x| VertexDivisor { binding: x.binding, divisor: x.divisor })
                    .collect()
            });
        Ok(Some(VertexInputState {
            flags: v.flags.bits(),
            bindings: slice(v.vertex_binding_descriptions, v.vertex_binding_description_count)
                .iter()
                .map(|x| VertexBinding { binding: x.binding, stride: x.stride, input_rate: raw(x.input_rate.as_raw()) })
                .collect(),
            attributes: slice(v.vertex_attribute_descriptions, v.vertex_attribute_description_count)
                .iter()
                .map(|a| VertexAttribute {
                    location: a.location,
                    binding: a.binding,
                    format: raw(a.format.as_raw()),
                    offset: a.offset,
                })
                .collect(),
            divisors,
        }))
    }
}

/// # Safety
///
/// As [`vertex_input`].
unsafe fn input_assembly(
    p: *const vk::PipelineInputAssemblyStateCreateInfo,
) -> Result<Option<InputAssemblyState>, CreateInfoError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's promise.
    let a = unsafe { &*p };
    // SAFETY: as above.
    unsafe { only_next(a.next, "VkPipelineInputAssemblyStateCreateInfo", &[])? };
    Ok(Some(InputAssemblyState {
        flags: a.flags.bits(),
        topology: raw(a.topology.as_raw()),
        primitive_restart_enable: b(a.primitive_restart_enable),
    }))
}

/// # Safety
///
/// As [`vertex_input`].
unsafe fn tessellation(
    p: *const vk::PipelineTessellationStateCreateInfo,
) -> Result<Option<TessellationState>, CreateInfoError> {
    const DOMAIN: vk::StructureType = vk::StructureType::PIPELINE_TESSELLATION_DOMAIN_ORIGIN_STATE_CREATE_INFO;
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: (this block) the caller's promise.
    unsafe {
        let t = &*p;
        let chain = only_next(t.next, "VkPipelineTessellationStateCreateInfo", &[DOMAIN])?;
        let domain = find::<vk::PipelineTessellationDomainOriginStateCreateInfo>(&chain, DOMAIN);
        Ok(Some(TessellationState {
            flags: t.flags.bits(),
            patch_control_points: t.patch_control_points,
            domain_origin: domain.map(|d| raw(d.domain_origin.as_raw())),
        }))
    }
}

/// # Safety
///
/// As [`vertex_input`]; `pViewports`/`pScissors` are read only where `dynamic` says Vulkan
/// reads them.
unsafe fn viewport(
    p: *const vk::PipelineViewportStateCreateInfo,
    dynamic: &dyn Fn(vk::DynamicState) -> bool,
) -> Result<Option<ViewportState>, CreateInfoError> {
    const CLIP: vk::StructureType = vk::StructureType::PIPELINE_VIEWPORT_DEPTH_CLIP_CONTROL_CREATE_INFO_EXT;
    if p.is_null() {
        return Ok(None);
    }
    use vk::DynamicState as D;
    // SAFETY: (this block) the caller's promise.
    unsafe {
        let v = &*p;
        let chain = only_next(v.next, "VkPipelineViewportStateCreateInfo", &[CLIP])?;
        let clip = find::<vk::PipelineViewportDepthClipControlCreateInfoEXT>(&chain, CLIP);
        let viewport_dynamic = dynamic(D::VIEWPORT) || dynamic(D::VIEWPORT_WITH_COUNT);
        let scissor_dynamic = dynamic(D::SCISSOR) || dynamic(D::SCISSOR_WITH_COUNT);
        let viewports = if viewport_dynamic { &[][..] } else { slice(v.viewports, v.viewport_count) };
        let scissors = if scissor_dynamic { &[][..] } else { slice(v.scissors, v.scissor_count) };
        Ok(Some(ViewportState {
            flags: v.flags.bits(),
            viewport_count: v.viewport_count,
            viewports: viewports
                .iter()
                .map(|x| Viewport {
                    x: x.x,
                    y: x.y,
                    width: x.width,
                    height: x.height,
                    min_depth: x.min_depth,
                    max_depth: x.max_depth,
                })
                .collect(),
            scissor_count: v.scissor_count,
            scissors: scissors
                .iter()
                .map(|r| Rect2D { x: r.offset.x, y: r.offset.y, width: r.extent.width, height: r.extent.height })
                .collect(),
            negative_one_to_one: clip.map(|c| b(c.negative_one_to_one)),
        }))
    }
}

/// # Safety
///
/// As [`vertex_input`].
unsafe fn rasterization(
    p: *const vk::PipelineRasterizationStateCreateInfo,
) -> Result<Option<RasterizationState>, CreateInfoError> {
    use vk::StructureType as S;
    if p.is_null() {
        return Ok(None);
    }
    let allowed = [
        S::PIPELINE_RASTERIZATION_LINE_STATE_CREATE_INFO,
        S::PIPELINE_RASTERIZATION_PROVOKING_VERTEX_STATE_CREATE_INFO_EXT,
        S::PIPELINE_RASTERIZATION_CONSERVATIVE_STATE_CREATE_INFO_EXT,
        S::PIPELINE_RASTERIZATION_DEPTH_CLIP_STATE_CREATE_INFO_EXT,
        S::PIPELINE_RASTERIZATION_STATE_STREAM_CREATE_INFO_EXT,
    ];
    // SAFETY: (this block) the caller's promise.
    unsafe {
        let r = &*p;
        let chain = only_next(r.next, "VkPipelineRasterizationStateCreateInfo", &allowed)?;
        let line = find::<vk::PipelineRasterizationLineStateCreateInfo>(&chain, allowed[0]);
        let provoking = find::<vk::PipelineRasterizationProvokingVertexStateCreateInfoEXT>(&chain, allowed[1]);
        let conservative = find::<vk::PipelineRasterizationConservativeStateCreateInfoEXT>(&chain, allowed[2]);
        let clip = find::<vk::PipelineRasterizationDepthClipStateCreateInfoEXT>(&chain, allowed[3]);
        let stream = find::<vk::PipelineRasterizationStateStreamCreateInfoEXT>(&chain, allowed[4]);
        Ok(Some(RasterizationState {
            flags: r.flags.bits(),
            depth_clamp_enable: b(r.depth_clamp_enable),
            rasterizer_discard_enable: b(r.rasterizer_discard_enable),
            polygon_mode: raw(r.polygon_mode.as_raw()),
            cull_mode: r.cull_mode.bits(),
            front_face: raw(r.front_face.as_raw()),
            depth_bias_enable: b(r.depth_bias_enable),
            depth_bias_constant_factor: r.depth_bias_constant_factor,
            depth_bias_clamp: r.depth_bias_clamp,
            depth_bias_slope_factor: r.depth_bias_slope_factor,
            line_width: r.line_width,
            line: line.map(|l| LineState {
                line_rasterization_mode: raw(l.line_rasterization_mode.as_raw()),
                stippled_line_enable: b(l.stippled_line_enable),
                line_stipple_factor: l.line_stipple_factor,
                line_stipple_pattern: u32::from(l.line_stipple_pattern),
            }),
            provoking_vertex_mode: provoking.map(|p| raw(p.provoking_vertex_mode.as_raw())),
            conservative: conservative.map(|c| ConservativeState {
                flags: c.flags.bits(),
                conservative_rasterization_mode: raw(c.conservative_rasterization_mode.as_raw()),
                extra_primitive_overestimation_size: c.extra_primitive_overestimation_size,
            }),
            depth_clip_enable: clip.map(|c| b(c.depth_clip_enable)),
            rasterization_stream: stream.map(|s| s.rasterization_stream),
        }))
    }
}

/// # Safety
///
/// As [`vertex_input`].
unsafe fn multisample(
    p: *const vk::PipelineMultisampleStateCreateInfo,
) -> Result<Option<MultisampleState>, CreateInfoError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: (this block) the caller's promise; `pSampleMask` holds ⌈samples / 32⌉ words.
    unsafe {
        let m = &*p;
        only_next(m.next, "VkPipelineMultisampleStateCreateInfo", &[])?;
        let samples = m.rasterization_samples.bits();
        let words = samples.div_ceil(32);
        Ok(Some(MultisampleState {
            flags: m.flags.bits(),
            rasterization_samples: samples,
            sample_shading_enable: b(m.sample_shading_enable),
            min_sample_shading: m.min_sample_shading,
            sample_mask: slice(m.sample_mask, words).to_vec(),
            alpha_to_coverage_enable: b(m.alpha_to_coverage_enable),
            alpha_to_one_enable: b(m.alpha_to_one_enable),
        }))
    }
}

fn stencil(s: &vk::StencilOpState) -> StencilOpState {
    StencilOpState {
        fail_op: raw(s.fail_op.as_raw()),
        pass_op: raw(s.pass_op.as_raw()),
        depth_fail_op: raw(s.depth_fail_op.as_raw()),
        compare_op: raw(s.compare_op.as_raw()),
        compare_mask: s.compare_mask,
        write_mask: s.write_mask,
        reference: s.reference,
    }
}

/// # Safety
///
/// As [`vertex_input`].
unsafe fn depth_stencil_state(
    p: *const vk::PipelineDepthStencilStateCreateInfo,
) -> Result<Option<DepthStencilState>, CreateInfoError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's promise.
    let d = unsafe { &*p };
    // SAFETY: as above.
    unsafe { only_next(d.next, "VkPipelineDepthStencilStateCreateInfo", &[])? };
    Ok(Some(DepthStencilState {
        flags: d.flags.bits(),
        depth_test_enable: b(d.depth_test_enable),
        depth_write_enable: b(d.depth_write_enable),
        depth_compare_op: raw(d.depth_compare_op.as_raw()),
        depth_bounds_test_enable: b(d.depth_bounds_test_enable),
        stencil_test_enable: b(d.stencil_test_enable),
        front: stencil(&d.front),
        back: stencil(&d.back),
        min_depth_bounds: d.min_depth_bounds,
        max_depth_bounds: d.max_depth_bounds,
    }))
}

/// # Safety
///
/// As [`vertex_input`].
unsafe fn color_blend(
    p: *const vk::PipelineColorBlendStateCreateInfo,
) -> Result<Option<ColorBlendState>, CreateInfoError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: (this block) the caller's promise.
    unsafe {
        let c = &*p;
        only_next(c.next, "VkPipelineColorBlendStateCreateInfo", &[])?;
        Ok(Some(ColorBlendState {
            flags: c.flags.bits(),
            logic_op_enable: b(c.logic_op_enable),
            logic_op: raw(c.logic_op.as_raw()),
            attachment_count: c.attachment_count,
            attachments: slice(c.attachments, c.attachment_count)
                .iter()
                .map(|a| ColorBlendAttachment {
                    blend_enable: b(a.blend_enable),
                    src_color_blend_factor: raw(a.src_color_blend_factor.as_raw()),
                    dst_color_blend_factor: raw(a.dst_color_blend_factor.as_raw()),
                    color_blend_op: raw(a.color_blend_op.as_raw()),
                    src_alpha_blend_factor: raw(a.src_alpha_blend_factor.as_raw()),
                    dst_alpha_blend_factor: raw(a.dst_alpha_blend_factor.as_raw()),
                    alpha_blend_op: raw(a.alpha_blend_op.as_raw()),
                    color_write_mask: a.color_write_mask.bits(),
                })
                .collect(),
            blend_constants: c.blend_constants,
        }))
    }
}
