//! The native Vulkan form of a script pipeline (docs/FORMAT.md §2.6) to a
//! [`NativePipelineDescriptor`]: each stage a SPIR-V library's entry point with the
//! application's `VkSpecializationInfo`, the rest granary-archive's `NativePipeline` as its
//! serde spelling read it. This file checks what serde cannot: the stage list against the
//! state's per-stage entries, the stage set against the pipeline's kind, the libraries' kind
//! and the specialization's bounds. Every error names the JSON path.

use super::error::{join_path, ScriptError};
use super::load::{convert_function, Ctx};
use super::raw::RawNative;
use crate::descriptor::{FunctionDescriptor, NativePipelineDescriptor, NativeStage, ShaderStage, SourceKind};
use std::sync::Arc;

/// Converts the body at `jp` (`pipelines[i].vulkan`).
pub(super) fn convert_native(
    raw: RawNative,
    label: Option<String>,
    cx: &Ctx<'_>,
    jp: &str,
) -> Result<NativePipelineDescriptor, ScriptError> {
    let at = |rest: &str, message: String| ScriptError::at(cx.path, join_path(jp, rest), message);
    if raw.stages.is_empty() {
        return Err(at("stages", "a native pipeline has at least one stage".into()));
    }
    if raw.state.stages.len() != raw.stages.len() {
        return Err(at(
            "state.stages",
            format!(
                "{} entries for {} stages (one VkPipelineShaderStageCreateInfo entry per stage, in stage order)",
                raw.state.stages.len(),
                raw.stages.len()
            ),
        ));
    }
    let compute = raw.state.is_compute();
    let ray_tracing = raw.state.is_ray_tracing();
    if ray_tracing && raw.state.graphics.is_some() {
        return Err(at("state", "a pipeline has \"graphics\" or \"rayTracing\", not both".into()));
    }
    let mut stages = Vec::with_capacity(raw.stages.len());
    for (i, s) in raw.stages.into_iter().enumerate() {
        let sp = format!("stages[{i}]");
        if compute && (s.stage != ShaderStage::Compute || i > 0) {
            return Err(at(
                &format!("{sp}.stage"),
                format!(
                    "a pipeline without \"state.graphics\" is a compute pipeline: exactly one compute stage, not {}",
                    if s.stage == ShaderStage::Compute { "two".to_string() } else { format!("a {} stage", s.stage) }
                ),
            ));
        }
        if !compute && s.stage == ShaderStage::Compute {
            return Err(at(
                &format!("{sp}.stage"),
                format!(
                    "a compute stage in a {} pipeline (\"state.{}\" is set)",
                    if ray_tracing { "ray-tracing" } else { "graphics" },
                    if ray_tracing { "rayTracing" } else { "graphics" }
                ),
            ));
        }
        if ray_tracing != s.stage.is_ray_tracing() {
            return Err(at(
                &format!("{sp}.stage"),
                if ray_tracing {
                    format!("a {} stage in a ray-tracing pipeline (\"state.rayTracing\" is set)", s.stage)
                } else {
                    format!("a {} stage in a pipeline without \"state.rayTracing\"", s.stage)
                },
            ));
        }
        // A ray-tracing pipeline has any number of stages of each kind (its groups name them).
        if let Some(first) =
            (!ray_tracing).then(|| stages.iter().position(|o: &NativeStage| o.stage == s.stage)).flatten()
        {
            return Err(at(
                &format!("{sp}.stage"),
                format!("the {} stage is given twice (stages[{first}] and stages[{i}])", s.stage),
            ));
        }
        let fp = join_path(jp, &format!("{sp}.function"));
        let function = convert_function(&s.function, cx, &fp)?;
        let FunctionDescriptor::Library { library, .. } = &function else {
            return Err(ScriptError::at(
                cx.path,
                fp,
                "a native stage's function is {\"library\", \"function\"}; its specialization constants are the stage's \"specialization\" (VkSpecializationInfo)",
            ));
        };
        if library.kind() != SourceKind::Spirv {
            return Err(ScriptError::at(
                cx.path,
                format!("{fp}.library"),
                format!(
                    "library '{}' is {}; a native stage runs the application's own SPIR-V (a library of kind spirv)",
                    library.name(),
                    format!("{:?}", library.kind()).to_lowercase()
                ),
            ));
        }
        if let Some(spec) = &s.specialization {
            spec.check().map_err(|m| at(&format!("{sp}.specialization"), m))?;
        }
        stages.push(NativeStage { stage: s.stage, function, specialization: s.specialization.map(Arc::new) });
    }
    if ray_tracing {
        let kinds: Vec<ShaderStage> = stages.iter().map(|s| s.stage).collect();
        raw.state.check_ray_tracing(&kinds).map_err(|m| at("state", m))?;
    }
    Ok(NativePipelineDescriptor { label, stages, state: Arc::new(raw.state) })
}
