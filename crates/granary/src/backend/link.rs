//! Link checks: do a pipeline's stages and fixed-function state fit together?

use crate::descriptor::{MaybeSpecialized, PipelineDescriptor, ScalarKind, ShaderStage};
use crate::frontend::StageFunction;
use std::sync::Arc;

/// Checks, for a render pipeline:
/// - every vertex input `@location` is fed by exactly one vertex attribute of the same scalar
///   kind (component counts may differ, as in Metal and Vulkan);
/// - every fragment input `@location` is a vertex output of the same type;
/// - every fragment output `@location(n)` has colour attachment `n`, whose format, when
///   specialized, takes that scalar kind (an unspecialized format accepts any).
///
/// Stage-versus-slot mismatches are caught earlier, when the entry point is looked up.
///
/// For render and compute pipelines alike, no SPIR-V stage may declare two resources at one
/// binding that no one Vulkan descriptor type serves ([`check_one_type_per_binding`]).
///
/// A native Vulkan pipeline gets [`check_native`] instead: only what granary needs to build it.
/// Its interfaces and fixed-function state are not compared: they are exactly what the
/// application created the pipeline with, Vulkan allows much that these checks refuse (unused
/// outputs, components split across variables, attributes a stage does not read), and the
/// driver — under `--validate`, the Khronos validation layer — is the judge of the rest.
pub fn check(desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String> {
    let r = match desc {
        PipelineDescriptor::Render(r) => r,
        PipelineDescriptor::Native(n) => return check_native(n),
        PipelineDescriptor::Compute(_) => return check_one_type_per_binding(stages),
    };
    check_one_type_per_binding(stages)?;
    let vs = stages.iter().find(|s| s.stage == ShaderStage::Vertex);
    let fs = stages.iter().find(|s| s.stage == ShaderStage::Fragment);
    let Some(vs) = vs else {
        return Err("render pipeline has no vertex stage".into());
    };
    // Entry points alone identify nothing (every GLSL and SPIR-V entry point is `main`):
    // messages name each function's library and file.
    let vname = name_of(r.vertex.base(), &vs.entry_point);
    let fname = r.fragment.as_ref().map(|f| name_of(f.base(), f.base().1)).unwrap_or_default();

    let mut attrs = std::collections::HashMap::new();
    for (b, buf) in r.state.vertex_buffers.iter().enumerate() {
        for a in &buf.attributes {
            if let Some(prev) = attrs.insert(a.location, (b, a.format)) {
                return Err(format!(
                    "vertex attribute location {} is defined twice (buffers {} and {b})",
                    a.location, prev.0
                ));
            }
        }
    }
    for (loc, ty) in &vs.interface.inputs {
        match attrs.get(loc) {
            None => {
                return Err(format!(
                    "vertex function {vname} reads @location({loc}) ({ty}) but no vertex buffer attribute has location {loc}"
                ))
            }
            Some((b, f)) => {
                let (kind, _) = f.shader_type();
                if kind != ty.kind {
                    return Err(format!(
                        "vertex attribute {loc} in buffer {b} is {f:?} ({kind:?} data) but vertex function {vname} reads it as {ty}"
                    ));
                }
            }
        }
    }

    let Some(fs) = fs else {
        return Ok(());
    };
    for (loc, ty) in &fs.interface.inputs {
        match vs.interface.outputs.iter().find(|(l, _)| l == loc) {
            None => {
                return Err(format!(
                "fragment function {fname} reads @location({loc}) ({ty}) but vertex function {vname} does not write it"
            ))
            }
            Some((_, vty)) if vty != ty => {
                return Err(format!(
                    "@location({loc}) is {vty} out of vertex function {vname} but {ty} into fragment function {fname}"
                ))
            }
            _ => {}
        }
    }
    for (loc, ty) in &fs.interface.outputs {
        let Some(att) = r.state.color_attachments.get(*loc as usize) else {
            return Err(format!(
                "fragment function {fname} writes @location({loc}) but the pipeline has {} colour attachment(s)",
                r.state.color_attachments.len()
            ));
        };
        if let MaybeSpecialized::Is(format) = att.format {
            let want = format.color_scalar_kind().unwrap_or(ScalarKind::Float);
            if want != ty.kind {
                return Err(format!(
                    "colour attachment {loc} is {format:?} ({want:?}) but fragment function {fname} writes {ty}"
                ));
            }
        }
    }
    Ok(())
}

/// The structural checks of a native pipeline, Vulkan's own rules for its stages: one
/// `StageState` per stage; a compute state with exactly one compute stage; a graphics state
/// without a compute stage, each stage at most once, tessellation control and evaluation
/// together, a task stage only with a mesh stage, a mesh stage without vertex, tessellation
/// or geometry stages, and — unless it is a pipeline library (`VK_PIPELINE_CREATE_LIBRARY_BIT_KHR`),
/// which may hold only some stages — a vertex or mesh stage; a ray-tracing state as
/// [`NativePipeline::check_ray_tracing`](granary_archive::native::NativePipeline::check_ray_tracing) says.
pub fn check_native(n: &crate::descriptor::NativePipelineDescriptor) -> Result<(), String> {
    use ShaderStage::*;
    const LIBRARY_BIT: u32 = 0x800;
    if n.state.stages.len() != n.stages.len() {
        return Err(format!(
            "the native state has {} stage record(s) for {} stage(s)",
            n.state.stages.len(),
            n.stages.len()
        ));
    }
    let has = |s: ShaderStage| n.stages.iter().any(|x| x.stage == s);
    if n.state.is_ray_tracing() || n.stages.iter().any(|s| s.stage.is_ray_tracing()) {
        return n.state.check_ray_tracing(&n.stages.iter().map(|s| s.stage).collect::<Vec<_>>());
    }
    if n.state.is_compute() {
        return match &n.stages[..] {
            [s] if s.stage == Compute => Ok(()),
            _ => Err(format!(
                "a compute pipeline has exactly one compute stage, this one has {}",
                n.stages.iter().map(|s| s.stage.name()).collect::<Vec<_>>().join(", ")
            )),
        };
    }
    if has(Compute) {
        return Err("a graphics pipeline (it has graphics state) has a compute stage".into());
    }
    for (i, s) in n.stages.iter().enumerate() {
        if n.stages[..i].iter().any(|x| x.stage == s.stage) {
            return Err(format!("the {} stage is given twice", s.stage));
        }
    }
    if has(TessellationControl) != has(TessellationEvaluation) {
        return Err("a tessellation control stage needs a tessellation evaluation stage and the other way round".into());
    }
    if has(Task) && !has(Mesh) {
        return Err("a task stage needs a mesh stage".into());
    }
    if has(Mesh) && [Vertex, TessellationControl, TessellationEvaluation, Geometry].into_iter().any(has) {
        return Err("a mesh pipeline has no vertex, tessellation or geometry stage".into());
    }
    if n.state.flags & LIBRARY_BIT == 0 && !has(Vertex) && !has(Mesh) {
        return Err("a graphics pipeline has a vertex or a mesh stage".into());
    }
    Ok(())
}

/// `'main' of library 'mesh' (shaders/mesh.vert)`; the file is left out when the library has
/// none (inline source).
fn name_of((lib, _): (&Arc<crate::descriptor::Library>, &str), entry: &str) -> String {
    match lib.origin() {
        Some(path) => format!("'{entry}' of library '{}' ({})", lib.name(), path.display()),
        None => format!("'{entry}' of library '{}'", lib.name()),
    }
}

/// Merges the resource layouts the stages reflected into the pipeline's layout, with each
/// stage's binding map. A binding two stages declare with a different kind or array size is
/// an error naming both stage functions. With an explicit layout in the descriptor, that is
/// the pipeline's layout, and it must hold every binding each stage uses (same kind and array
/// size, visible to that stage) and an immediates block at least as large as each stage's,
/// visible to it; otherwise the error names the stage, library and binding.
pub fn merge_layout(
    desc: &PipelineDescriptor,
    stages: &[Arc<StageFunction>],
) -> Result<granary_archive::PipelineLayout, String> {
    use granary_archive::{Immediates, LayoutBinding, PipelineLayout};
    let names: Vec<String> = desc.stages().into_iter().map(|(_, f)| name_of(f.base(), f.base().1)).collect();
    let mut merged: std::collections::BTreeMap<(u32, u32), (LayoutBinding, usize)> = Default::default();
    let mut immediates: Option<Immediates> = None;
    let mut maps = Vec::with_capacity(stages.len());
    for (i, s) in stages.iter().enumerate() {
        let here = names.get(i).cloned().unwrap_or_else(|| format!("'{}'", s.entry_point));
        for b in &s.resources.bindings {
            match merged.get_mut(&(b.group, b.binding)) {
                None => {
                    merged.insert((b.group, b.binding), (*b, i));
                }
                Some((m, first)) if m.kind == b.kind && m.count == b.count => {
                    m.visibility = m.visibility.union(b.visibility);
                    let _ = first;
                }
                Some((m, first)) => {
                    let there = names.get(*first).cloned().unwrap_or_default();
                    let arr = |c: u32| match c {
                        0 => String::new(),
                        u32::MAX => " (unsized array)".into(),
                        n => format!(" (array of {n})"),
                    };
                    return Err(format!(
                        "stages disagree about @group({}) @binding({}): {} function {there} declares {}{} but {} function {here} declares {}{}",
                        b.group,
                        b.binding,
                        stages[*first].stage,
                        m.kind,
                        arr(m.count),
                        s.stage,
                        b.kind,
                        arr(b.count)
                    ));
                }
            }
        }
        if let Some(size) = s.resources.immediates {
            let vis = granary_archive::StageMask::of(s.stage);
            immediates = Some(match immediates {
                None => Immediates { size, visibility: vis },
                Some(m) => Immediates { size: m.size.max(size), visibility: m.visibility.union(vis) },
            });
        }
        maps.push(s.resources.map.clone());
    }
    if let Some(x) = desc.explicit_layout() {
        for (i, s) in stages.iter().enumerate() {
            let here = names.get(i).cloned().unwrap_or_else(|| format!("'{}'", s.entry_point));
            for b in &s.resources.bindings {
                let at = format!("@group({}) @binding({})", b.group, b.binding);
                match x.bindings.iter().find(|e| (e.group, e.binding) == (b.group, b.binding)) {
                    None => {
                        return Err(format!(
                            "{} function {here} uses {at} ({}) but the pipeline's explicit layout does not have it",
                            s.stage, b.kind
                        ))
                    }
                    Some(e) if e.kind != b.kind || e.count != b.count => {
                        return Err(format!(
                            "{} function {here} uses {at} as {} (array size {}) but the explicit layout declares {} (array size {})",
                            s.stage, b.kind, b.count, e.kind, e.count
                        ))
                    }
                    Some(e) if !e.visibility.contains(s.stage) => {
                        return Err(format!(
                            "{} function {here} uses {at} but the explicit layout does not make it visible to the {} stage",
                            s.stage, s.stage
                        ))
                    }
                    Some(_) => {}
                }
            }
            if let Some(size) = s.resources.immediates {
                match x.immediates {
                    Some(m) if m.size >= size && m.visibility.contains(s.stage) => {}
                    _ => {
                        return Err(format!(
                            "{} function {here} uses {size} bytes of immediates but the explicit layout has no immediates block of at least that size visible to it",
                            s.stage
                        ))
                    }
                }
            }
        }
        return Ok(PipelineLayout { bindings: x.bindings.clone(), immediates: x.immediates, stages: maps });
    }
    Ok(PipelineLayout { bindings: merged.into_values().map(|(b, _)| b).collect(), immediates, stages: maps })
}

/// A portable pipeline's layout is derived from its stages, one descriptor type per binding:
/// a SPIR-V stage declaring, at one binding, resources of two kinds that no one descriptor
/// type serves (glslang's HLSL front end puts `$Global` and a `RWStructuredBuffer` both at
/// binding 0 without register shifts) has no valid derived layout, and the driver would be
/// handed a mismatch (`VUID-VkGraphicsPipelineCreateInfo-layout-07990`). Refused here, naming
/// the stage, file, binding and kinds. (The native form takes the application's own layout,
/// which may make such a binding `VK_DESCRIPTOR_TYPE_MUTABLE_EXT`.)
pub fn check_one_type_per_binding(stages: &[Arc<StageFunction>]) -> Result<(), String> {
    for s in stages {
        let Some(r) = &s.spirv else { continue };
        if let Some((set, binding, kept, other)) = r.conflicts.first() {
            return Err(format!(
                "{} function '{}': set {set} binding {binding} is declared as both {} and {}, which no one Vulkan \
                 descriptor type serves; a derived layout gives each binding one type (write the pipeline in the \
                 native form with the application's layout, or give the resources distinct bindings)",
                s.stage,
                s.entry_point,
                kept.name(),
                other.name()
            ));
        }
    }
    Ok(())
}
