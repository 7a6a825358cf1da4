//! Layer 4 — per-pipeline compilation after the front end.
//!
//! A backend turns a pipeline's stage functions and fixed-function state into whatever the
//! target needs at pipeline level. `none` performs link checks only; the Vulkan backend
//! (crate `granary-vulkan`: driver pipelines, binaries captured per device) implements the
//! same trait, so this crate never depends on a driver.
//!
//! Invariant: a backend is `Send + Sync`; what it keeps between calls (shader modules,
//! layouts, a pipeline cache) is shared, internally synchronized state, never per-call state.

mod link;

pub use link::check as link_check;
pub use link::merge_layout;

use crate::descriptor::{PipelineDescriptor, PipelineLayout};
use crate::frontend::StageFunction;
use granary_archive::{DeviceBinaries, DeviceCache};
use std::sync::Arc;

/// What a device backend did, for harvest summaries.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BackendReport {
    /// The backend's name.
    pub backend: String,
    /// The device, in words (its identity's `describe()`).
    pub device: String,
    /// `pipeline-binaries` (`VK_KHR_pipeline_binary`) or `cache-data` (`VkPipelineCache`).
    pub captures: String,
    /// Whether unspecialized colour attachments are compiled as graphics pipeline libraries.
    pub libraries: bool,
    /// Whole pipelines created on the device.
    pub pipelines_created: u64,
    /// Pipelines created as libraries (fragment output linked at run time).
    pub libraries_created: u64,
    /// Pipelines that got the capture of a driver-identical pipeline instead of a compile of
    /// their own (same SPIR-V, state and layout; see `VulkanOptions::share_identical`).
    pub pipelines_shared: u64,
    /// Shader modules created (one per unique stage function).
    pub shader_modules: u64,
    /// Seconds spent inside the driver's pipeline-creation calls, summed over threads.
    pub driver_seconds: f64,
    /// Seconds in `vkGetPipelineKeyKHR` for captured pipelines, summed over threads.
    pub key_seconds: f64,
    /// Seconds taking captured pipelines' binaries out of the driver (creating the binaries,
    /// fetching and interning their bytes), summed over threads.
    pub capture_seconds: f64,
    /// With `--reuse-binaries-by-key`: binaries whose bytes were not fetched because one of
    /// the same key and size had been.
    pub binary_fetches_skipped: u64,
    /// Fetched binaries whose key and size matched an earlier one but whose bytes did not
    /// (so reusing by key would not be exact on this device).
    pub binary_key_mismatches: u64,
    /// Pipelines whose creation feedback says a pipeline cache answered them
    /// (`APPLICATION_PIPELINE_CACHE_HIT`: the cache-data capture's shared cache, or the
    /// internal-cache experiment's).
    pub cache_hits: u64,
    /// Binaries captured.
    pub binaries: u64,
    /// Bytes of binary data captured (before deduplication in the archive).
    pub binary_bytes: u64,
    /// The pipelines were created in `--isolate` worker processes, each with its own device:
    /// the counters above are the harvesting process's own (zero), not the workers'.
    pub in_workers: bool,
}

/// Per-pipeline compilation.
///
/// Thread safety: implementations must be `Send + Sync`; `link` is called from many threads
/// at once.
pub trait Backend: Send + Sync {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// Checks that the stages and state of one pipeline fit together. Returns a message
    /// describing the failure. Default: the front end's interface checks ([`link_check`]),
    /// which every backend shipped runs unchanged.
    fn link(&self, desc: &PipelineDescriptor, stages: &[Arc<StageFunction>]) -> Result<(), String> {
        link_check(desc, stages)
    }
    /// Compiles one linked pipeline on a device and returns its binaries for that device
    /// (`None` for backends without a device). Called after [`Backend::link`] succeeded, with
    /// the pipeline's resource layout. An `Err` is the device's message; it fails this
    /// pipeline only.
    fn compile(
        &self,
        _desc: &PipelineDescriptor,
        _stages: &[Arc<StageFunction>],
        _layout: &PipelineLayout,
    ) -> Result<Option<DeviceBinaries>, String> {
        Ok(None)
    }
    /// Device-level data to store with the archive (a device's `VkPipelineCache` data), as it
    /// is now. May be called while compiles run. An `Err` (the driver failed to hand the data
    /// over) fails the archive write instead of writing one without it.
    fn device_caches(&self) -> Result<Vec<DeviceCache>, String> {
        Ok(Vec::new())
    }
    /// What the backend did so far (`None` for backends without a device).
    fn report(&self) -> Option<BackendReport> {
        None
    }
    /// Whether pipelines with unspecialized colour output must be expanded into specialized
    /// variants (the script's `expand_unspecialized`) because this backend cannot leave the
    /// output open (a device without graphics pipeline libraries). Default: no.
    fn expands_unspecialized(&self) -> bool {
        false
    }
    /// The device whose binaries [`Backend::compile`] returns (`None` without a device).
    fn device(&self) -> Option<Arc<granary_archive::DeviceIdentity>> {
        None
    }
}

/// The `none` backend: link checks only; the archive holds the front end's outputs.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoneBackend;

impl Backend for NoneBackend {
    fn name(&self) -> &'static str {
        "none"
    }
}

impl std::fmt::Debug for dyn Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Backend({})", self.name())
    }
}
