//! Compiled results as plain data: content-addressed blobs and pipeline entries.
//!
//! These are what the compiler hands to a capture and what an archive stores. They are
//! immutable once built and shared as `Arc`s, so an entry stays alive as long as anyone —
//! a compile call, a capture, a snapshot being written — can reach it.

use crate::key::{content_hash, ContentHash, PipelineKey, StageKey};
use crate::types::{PipelineKind, ShaderStage, Target, TargetSet, TARGET_COUNT};
use std::sync::Arc;

/// Immutable bytes identified by their content hash (one stage output for one target).
#[derive(Debug, PartialEq, Eq)]
pub struct Blob {
    hash: ContentHash,
    bytes: Box<[u8]>,
}

impl Blob {
    /// Wraps bytes, hashing them.
    pub fn new(bytes: Vec<u8>) -> Arc<Blob> {
        Arc::new(Blob { hash: content_hash(&bytes), bytes: bytes.into_boxed_slice() })
    }
    /// The content address.
    pub fn hash(&self) -> ContentHash {
        self.hash
    }
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

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
