//! The keys of native pipelines (docs/FORMAT.md §1.5): what the harvest computes for a
//! `NativePipelineDescriptor` and the run-time lookup computes from the application's own
//! create info, in one place, so both sides agree byte for byte.
//!
//! - A SPIR-V library is known by [`spirv_library_hash`] of its bytes (the offline library's
//!   `Library::hash` of a SPIR-V library).
//! - A stage function by [`native_stage_key`]: the offline `stage_key` encoding of a library
//!   function without portable constants, followed, only when there is one, by the stage's
//!   `VkSpecializationInfo` ([`Specialization::encode`]).
//! - A pipeline by [`native_pipeline_key`]: a domain of its own, the stages (stage and key, in
//!   the create info's order), then [`NativePipeline::encode`].
//!
//! *Invariant:* pure functions of their arguments; pinned by `granary/tests/keys.rs`.

use super::{NativePipeline, Specialization};
use crate::key::{ContentHash, Encoder, KeyContext, PipelineKey, StageKey};
use crate::types::ShaderStage;

/// The offline library's `SourceKind::Spirv` as encoded in a library's identity.
const SPIRV_SOURCE_KIND: u8 = 2;

/// The content identity of a SPIR-V library with these bytes (kind, no GLSL stage, bytes).
pub fn spirv_library_hash(spirv: &[u8]) -> ContentHash {
    let mut e = Encoder::new(b"library");
    e.u8(SPIRV_SOURCE_KIND);
    e.option(None::<&u8>, |e, s| e.u8(*s));
    e.bytes(spirv);
    ContentHash(e.finish())
}

/// The key of entry point `entry` of the SPIR-V library `library` compiled for `stage` under
/// `ctx`, with the stage's `VkSpecializationInfo` (`None`: no specialization).
pub fn native_stage_key(
    library: ContentHash,
    entry: &str,
    stage: ShaderStage,
    specialization: Option<&Specialization>,
    ctx: &KeyContext,
) -> StageKey {
    let mut e = Encoder::new(b"stage");
    e.u128(library.0);
    e.str(entry);
    e.u8(stage as u8);
    // No portable constants: the empty list.
    e.u64(0);
    e.u128(ctx.target_options);
    if let Some(s) = specialization {
        e.u8(2);
        e.bytes(&s.encode());
    }
    StageKey(e.finish())
}

/// The key of a native pipeline with `stages` (each stage and its key, in the create info's
/// order) and `state`.
pub fn native_pipeline_key(stages: &[(ShaderStage, StageKey)], state: &NativePipeline) -> PipelineKey {
    let mut e = Encoder::new(b"native-pipeline");
    e.u64(stages.len() as u64);
    for (stage, key) in stages {
        e.u8(*stage as u8);
        e.u128(key.0);
    }
    e.bytes(&state.encode());
    PipelineKey(e.finish())
}
