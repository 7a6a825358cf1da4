//! Link checks: do a pipeline's stages and fixed-function state fit together?

use crate::descriptor::{PipelineDescriptor, ScalarKind, ShaderStage, Spec};
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
pub fn check(desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String> {
    let PipelineDescriptor::Render(r) = desc else {
        return Ok(());
    };
    let vs = stages.iter().find(|s| s.stage == ShaderStage::Vertex);
    let fs = stages.iter().find(|s| s.stage == ShaderStage::Fragment);
    let Some(vs) = vs else {
        return Err("render pipeline has no vertex stage".into());
    };

    let mut attrs = std::collections::HashMap::new();
    for (b, buf) in r.vertex_buffers.iter().enumerate() {
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
                    "vertex function '{}' reads @location({loc}) ({ty}) but no vertex buffer attribute has location {loc}",
                    vs.entry_point
                ))
            }
            Some((b, f)) => {
                let (kind, _) = f.shader_type();
                if kind != ty.kind {
                    return Err(format!(
                        "vertex attribute {loc} in buffer {b} is {f:?} ({kind:?} data) but vertex function '{}' reads it as {ty}",
                        vs.entry_point
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
                    "fragment function '{}' reads @location({loc}) ({ty}) but vertex function '{}' does not write it",
                    fs.entry_point, vs.entry_point
                ))
            }
            Some((_, vty)) if vty != ty => {
                return Err(format!(
                    "@location({loc}) is {vty} out of vertex function '{}' but {ty} into fragment function '{}'",
                    vs.entry_point, fs.entry_point
                ))
            }
            _ => {}
        }
    }
    for (loc, ty) in &fs.interface.outputs {
        let Some(att) = r.color_attachments.get(*loc as usize) else {
            return Err(format!(
                "fragment function '{}' writes @location({loc}) but the pipeline has {} colour attachment(s)",
                fs.entry_point,
                r.color_attachments.len()
            ));
        };
        if let Spec::Is(format) = att.format {
            let want = format.color_scalar_kind().unwrap_or(ScalarKind::Float);
            if want != ty.kind {
                return Err(format!(
                    "colour attachment {loc} is {format:?} ({want:?}) but fragment function '{}' writes {ty}",
                    fs.entry_point
                ));
            }
        }
    }
    Ok(())
}
