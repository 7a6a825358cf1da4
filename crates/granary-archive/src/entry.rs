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
    /// A render pipeline's fixed-function state, encoded
    /// ([`RenderState::encode`](crate::RenderState::encode)); `None` for compute pipelines and
    /// for entries written without one (tools and tests).
    pub state: Option<Arc<Blob>>,
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
