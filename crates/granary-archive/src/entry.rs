//! Compiled results as plain data: pipeline entries (their bytes are [`Blob`]s), and with
//! `write` the entry to write with its labels and driver binaries.
//!
//! These are what the compiler hands to a capture and what an archive stores. They are
//! immutable once built and shared as `Arc`s, so an entry stays alive as long as anyone —
//! a compile call, a capture, a snapshot being written — can reach it.

use crate::blob::Blob;
#[cfg(feature = "write")]
use crate::device::DeviceBinaries;
use crate::key::{PipelineKey, StageKey};
use crate::native::{NativePipeline, Specialization};
use crate::types::{PipelineKind, ShaderStage, Target, TargetSet, TARGET_COUNT};
use std::sync::Arc;

/// Per-target outputs of one stage function; `None` for targets not produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetOutputs(pub [Option<Arc<Blob>>; TARGET_COUNT]);

impl TargetOutputs {
    /// The output for `target`.
    pub fn get(&self, target: Target) -> Option<&Arc<Blob>> {
        self.0[target as usize].as_ref()
    }
    /// The targets that have an output.
    pub fn targets(&self) -> TargetSet {
        TargetSet::of(&Target::ALL.into_iter().filter(|t| self.get(*t).is_some()).collect::<Vec<_>>())
    }
}

/// One stage of a compiled pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct StageEntry {
    /// The stage function's key.
    pub key: StageKey,
    /// Its stage.
    pub stage: ShaderStage,
    /// Entry point name.
    pub entry_point: String,
    /// Outputs per target.
    pub outputs: TargetOutputs,
    /// The stage's `VkSpecializationInfo`, encoded
    /// ([`Specialization::encode`](crate::native::Specialization::encode)), for a SPIR-V
    /// output that is the application's own module (its constants are applied by the driver,
    /// not by a rewrite); `None` when there is nothing to specialize.
    pub specialization: Option<Arc<Blob>>,
}

/// A compiled pipeline as captured and archived. Labels live beside it (see the capture), so
/// that the entry itself is a pure function of the key.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineEntry {
    /// The pipeline key.
    pub key: PipelineKey,
    /// Render or compute.
    pub kind: PipelineKind,
    /// Its stages, in pipeline order.
    pub stages: Vec<StageEntry>,
    /// The resource layout and per-stage binding maps, encoded
    /// ([`PipelineLayout::encode`](crate::PipelineLayout::encode)); `None` only for entries
    /// written without one (tools and tests).
    pub layout: Option<Arc<Blob>>,
    /// The pipeline's state, encoded in one of two forms ([`StateKind`]): a render pipeline's
    /// portable fixed-function state ([`RenderState::encode`](crate::RenderState::encode),
    /// `GST1`), or the native Vulkan state of a render or compute pipeline
    /// ([`NativePipeline::encode`](crate::native::NativePipeline::encode), `GNV1`: one
    /// [`StageState`](crate::native::StageState) per stage, a graphics state exactly for a
    /// render pipeline). `None` for portable compute pipelines and for entries written without
    /// one (tools and tests). [`PipelineEntry::check`] says whether a reader accepts it.
    pub state: Option<Arc<Blob>>,
}

/// The form of a pipeline's encoded state, named by the blob's magic (docs/FORMAT.md §1.2,
/// pipeline record `state`): what [`PipelineRef::state_kind`](crate::PipelineRef::state_kind)
/// answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateKind {
    /// A portable [`RenderState`](crate::RenderState) (`GST1`, §1.11), on a render pipeline:
    /// [`PipelineRef::state`](crate::PipelineRef::state).
    Portable,
    /// A native Vulkan [`NativePipeline`](crate::native::NativePipeline) (`GNV1`, §1.13), on a
    /// render or compute pipeline:
    /// [`PipelineRef::native_state`](crate::PipelineRef::native_state).
    Native,
}

impl StateKind {
    /// The form of encoded state `bytes`, by their magic; `None` for neither.
    pub fn of(bytes: &[u8]) -> Option<StateKind> {
        match bytes.get(..4) {
            Some(m) if m == crate::render_state::codec::STATE_MAGIC => Some(StateKind::Portable),
            Some(m) if m == crate::native::NATIVE_MAGIC => Some(StateKind::Native),
            _ => None,
        }
    }
}

/// Whether a decoded native state fits a pipeline of `kind` with `stages` stages: one
/// [`StageState`](crate::native::StageState) per stage, a graphics state exactly for a render
/// pipeline and a ray-tracing state exactly for a ray-tracing pipeline. The reader and the
/// writer apply this one rule.
pub(crate) fn native_fits(state: &NativePipeline, kind: PipelineKind, stages: usize) -> Result<(), String> {
    if state.stages.len() != stages {
        return Err(format!("the native Vulkan state has {} stages but the pipeline has {stages}", state.stages.len()));
    }
    if state.kind() != kind {
        return Err(format!("a native Vulkan state of a {} pipeline on a {kind} pipeline", state.kind()));
    }
    Ok(())
}

/// Checks encoded state `bytes` for a pipeline of `kind` with `stages` stages as the reader
/// does: its form, that it decodes, and (portable) that the pipeline is a render pipeline or
/// (native) [`native_fits`].
pub(crate) fn check_state(bytes: &[u8], kind: PipelineKind, stages: usize) -> Result<StateKind, String> {
    match StateKind::of(bytes) {
        Some(StateKind::Portable) if kind != PipelineKind::Render => {
            Err("a render state (GST1) on a compute pipeline (only a native state may describe one)".to_string())
        }
        Some(StateKind::Portable) => {
            crate::render_state::RenderState::decode(bytes).map_err(|e| e.to_string())?;
            Ok(StateKind::Portable)
        }
        Some(StateKind::Native) => {
            let state = NativePipeline::decode(bytes).map_err(|e| e.to_string())?;
            native_fits(&state, kind, stages)?;
            Ok(StateKind::Native)
        }
        None => Err("the state is neither a render state (GST1) nor a native Vulkan state (GNV1)".to_string()),
    }
}

/// Decodes an encoded specialization and checks its map entries
/// ([`Specialization::check`]), as the reader does.
pub(crate) fn check_specialization(bytes: &[u8]) -> Result<Specialization, String> {
    let s = Specialization::decode(bytes).map_err(|e| e.to_string())?;
    s.check()?;
    Ok(s)
}

impl PipelineEntry {
    /// Whether an archive reader accepts this entry's state and stage specializations (what
    /// `verify` checks of them, docs/FORMAT.md §1.3): the state decodes in its form and fits
    /// the pipeline, and every specialization decodes with its map entries inside its data.
    /// The message names the stage at fault. The archive writer's checked paths
    /// ([`write_entries`](crate::write_entries), the journal) refuse an entry that fails.
    pub fn check(&self) -> Result<(), String> {
        if let Some(state) = &self.state {
            check_state(state.bytes(), self.kind, self.stages.len())?;
        }
        for (i, s) in self.stages.iter().enumerate() {
            if let Some(b) = &s.specialization {
                check_specialization(b.bytes())
                    .map_err(|e| format!("stage {i} ({} '{}'): specialization: {e}", s.stage, s.entry_point))?;
            }
        }
        Ok(())
    }
}

#[cfg(feature = "write")]
/// One pipeline to write, with its labels (feature `write`).
#[derive(Clone, Debug)]
pub struct WriteEntry {
    /// The compiled pipeline.
    pub entry: Arc<PipelineEntry>,
    /// Its labels (any order, duplicates allowed).
    pub labels: Arc<[String]>,
    /// Driver binaries of the pipeline, per device (any order). Where one device has several
    /// sets (two harvests, two duplicates of the entry), the writer keeps the set with the
    /// smaller [`BinarySet::hash`](crate::BinarySet::hash): driver binaries are not
    /// reproducible run to run, so that is normal, not a conflict.
    pub binaries: Vec<DeviceBinaries>,
}
