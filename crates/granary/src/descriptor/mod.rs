//! Layer 1 — plain data: libraries, function and pipeline descriptors, fixed-function state,
//! compiled entries, and their canonical encoding and keys. No I/O, no naga. The types an
//! archive stores (keys, stages, targets, compiled entries) are defined in `granary-archive`
//! and re-exported here, so both crates speak the same types.
//!
//! Invariants:
//! - A key is a pure function of the canonical encoding; labels, names, file paths and the
//!   order of constants or vertex attributes never change it.
//! - The encoding is versioned ([`key::KEY_ENCODING_VERSION`]) and pinned by tests.

mod function;
pub mod key;
mod layout;
mod library;
mod native;
mod pipeline;
mod state_key;

pub use function::{Constant, ConstantId, ConstantValue, FunctionDescriptor};
pub use granary_archive::{Blob, PipelineEntry, StageEntry, TargetOutputs};
pub use key::{ContentHash, KeyContext, PipelineKey, StageKey};
pub use layout::ExplicitLayout;
pub use library::{Library, SourceKind};
pub use native::{native_stage_key, NativePipelineDescriptor, NativeStage};
pub use pipeline::{stage_key, ComputePipelineDescriptor, PipelineDescriptor, RenderPipelineDescriptor};
pub use state_key::*;

pub use granary_archive::{BindingKind, Immediates, LayoutBinding, PipelineLayout, StageBindingMap, StageMask};
pub use granary_archive::{PipelineKind, ShaderStage, Target, TargetSet, TARGET_COUNT};
