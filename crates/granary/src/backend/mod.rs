//! Layer 4 — per-pipeline compilation after the front end.
//!
//! A backend turns a pipeline's stage functions and fixed-function state into whatever the
//! target needs at pipeline level. `none` performs link checks only; a `vulkan` backend
//! (driver pipelines through `ash`, binaries captured per device) slots in behind the same
//! trait.
//!
//! Invariant: a backend is `Send + Sync` and keeps no per-call state between calls.

mod link;

pub use link::check as link_check;
pub use link::merge_layout;

use crate::descriptor::PipelineDescriptor;
use crate::frontend::StageFunction;
use std::sync::Arc;

/// Per-pipeline compilation.
///
/// Thread safety: implementations must be `Send + Sync`; `link` is called from many threads
/// at once.
pub trait Backend: Send + Sync {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// Checks and compiles one pipeline. Returns a message describing the failure.
    fn link(&self, desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String>;
}

/// The `none` backend: link checks only; the archive holds the front end's outputs.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoneBackend;

impl Backend for NoneBackend {
    fn name(&self) -> &'static str {
        "none"
    }
    fn link(&self, desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String> {
        link_check(desc, stages)
    }
}
