//! The native Vulkan pipeline form: the application's SPIR-V stages with their own
//! `VkSpecializationInfo`, and the whole create-info state as granary-archive's
//! [`NativePipeline`] (docs/FORMAT.md §2.6 spells it in the script).

use super::function::FunctionDescriptor;
use super::key::{KeyContext, PipelineKey, StageKey};
use super::ShaderStage;
use granary_archive::native::{NativePipeline, Specialization};
use std::sync::Arc;

/// One stage of a native pipeline: a SPIR-V entry point and the application's specialization.
#[derive(Clone, Debug)]
pub struct NativeStage {
    /// Its stage.
    pub stage: ShaderStage,
    /// The function: a [`FunctionDescriptor::Library`] of a SPIR-V library.
    pub function: FunctionDescriptor,
    /// `VkSpecializationInfo`, exactly as the application gave it.
    pub specialization: Option<Arc<Specialization>>,
}

/// A pipeline in the native Vulkan form (graphics with any stages, or compute).
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Debug)]
pub struct NativePipelineDescriptor {
    /// A name for lookup and messages; never part of the key.
    pub label: Option<String>,
    /// The stages, in the application's order (`NativePipeline::stages` has one entry per stage).
    pub stages: Vec<NativeStage>,
    /// Everything else the create info says (shared: descriptors are cloned freely).
    pub state: Arc<NativePipeline>,
}

/// The key of a stage function with a native specialization: [`super::stage_key`]'s encoding
/// followed, only when there is one, by the specialization's canonical bytes (so keys of
/// stage functions without one are unchanged).
pub fn native_stage_key(
    function: &FunctionDescriptor,
    stage: ShaderStage,
    specialization: Option<&Specialization>,
    ctx: &KeyContext,
) -> StageKey {
    let (library, entry) = function.base();
    if function.resolved_constants().is_empty() {
        // The native form's one derivation, shared with the run-time lookup by create info.
        return granary_archive::native::native_stage_key(library.hash(), entry, stage, specialization, ctx);
    }
    let mut e = super::pipeline::stage_key_encoder(function, stage, ctx);
    if let Some(s) = specialization {
        e.u8(2);
        e.bytes(&s.encode());
    }
    StageKey(e.finish())
}

impl NativePipelineDescriptor {
    /// The stage keys under `ctx`, in stage order.
    pub fn stage_keys(&self, ctx: &KeyContext) -> Vec<StageKey> {
        self.stages.iter().map(|s| native_stage_key(&s.function, s.stage, s.specialization.as_deref(), ctx)).collect()
    }

    /// The pipeline key given its stage keys: a domain of its own, the stages, then the
    /// native state's canonical bytes (what the driver is handed besides the modules).
    pub fn key_with_stage_keys(&self, stage_keys: &[StageKey]) -> PipelineKey {
        let stages: Vec<(ShaderStage, StageKey)> =
            self.stages.iter().map(|s| s.stage).zip(stage_keys.iter().copied()).collect();
        granary_archive::native::native_pipeline_key(&stages, &self.state)
    }
}
