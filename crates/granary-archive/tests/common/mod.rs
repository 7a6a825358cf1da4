//! Pieces of test archives shared by the integration tests of this crate.

#![allow(dead_code)] // each test uses what it needs

use granary_archive::{
    Blob, ColorAttachment, PrimitiveState, RenderState, ShaderStage, StageEntry, StageKey, Target, TargetOutputs,
};

/// A portable render state with one unspecialized colour attachment and defaults elsewhere.
pub fn unspecialized_render_state() -> RenderState {
    RenderState {
        vertex_buffers: Vec::new(),
        primitive: PrimitiveState::default(),
        color_attachments: vec![ColorAttachment::unspecialized()],
        depth_stencil: None,
        sample_count: 1,
        alpha_to_coverage: false,
    }
}

/// A stage with `spirv_len` bytes of SPIR-V-shaped data derived from `key` and a GLSL text
/// naming `entry_point` and `key`.
pub fn stage_with_outputs(key: u128, stage: ShaderStage, entry_point: &str, spirv_len: usize) -> StageEntry {
    let mut outputs = TargetOutputs::default();
    outputs.0[Target::Spirv as usize] = Some(Blob::new((0..spirv_len).map(|i| (i as u128 ^ key) as u8).collect()));
    outputs.0[Target::Glsl as usize] = Some(Blob::new(format!("#version 450\n// {entry_point} {key}\n").into_bytes()));
    StageEntry { key: StageKey(key), stage, entry_point: entry_point.into(), outputs, specialization: None }
}
