//! Create pipelines on a Vulkan device from an archive (feature `vulkan`): from the driver
//! binaries captured for this exact device, from its pipeline-cache data, or by compiling the
//! archive's SPIR-V, from any number of threads; and the Vulkan layer granary's harvest
//! backend (crate `granary-vulkan`) is built on, so the pipeline created at run time is
//! created from the same state, by the same code, as the one captured.
//!
//! - [`PipelineLoader`]: the run-time entry point. It checks the device's identity against the
//!   archive's device sections once ("built for X, this device is Y" if they differ), then
//!   creates each pipeline by label or key, linking the fragment-output part of library
//!   pipelines with the formats the caller gives, and says how each was made ([`Source`]).
//! - [`raw`]: every type that owns or wraps a Vulkan object, and the map of the modules that
//!   call the driver — `instance`, `device`, `handles`, `pipeline`, `binary`, `cache`,
//!   `validation` — each with its object-lifetime and external-synchronization rules at its
//!   top; the only modules of the crate where `unsafe` is allowed (besides the reader's
//!   memory map and the loader's vouching for checked binaries).
//! - [`features`]: the core features and limits a pipeline needs, checked before any driver
//!   call.
//! - [`state`]: pure mappings of granary's pipeline state and layouts to Vulkan values.
//! - [`build`]: an archived render state to the create-info input of one pipeline.
//!
//! The Vulkan library is loaded at run time ([`Driver::load`]) or the application's own
//! instance and device are wrapped ([`Driver::borrowed`], [`Gpu::borrowed`]).
//!
//! # Example
//!
//! ```no_run
//! use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
//! use granary_archive::vulkan::{Driver, Gpu, LoaderOptions, OpenOptions, PipelineLoader, Source};
//! use granary_archive::Archive;
//! # fn f(instance: &Instance, physical: vk::PhysicalDevice, device: &Device) -> Result<(), Box<dyn std::error::Error>> {
//! let archive = Archive::open(std::path::Path::new("game.granary"))?;
//! // The application's instance and device, with what it enabled (here: VK_KHR_pipeline_binary
//! // + maintenance5, and graphics pipeline libraries).
//! // SAFETY: the application's Vulkan 1.3 instance, alive until the loader is dropped.
//! let driver = unsafe { Driver::borrowed(instance) };
//! let info = driver.physical_device(physical)?;
//! // …and the core features it enabled (granary refuses a pipeline needing one it did not).
//! let enabled = OpenOptions { pipeline_binaries: true, libraries: true, ..OpenOptions::default() };
//! // SAFETY: `device` was created from `physical` of `instance` with what `enabled` says, and
//! // outlives the loader.
//! let gpu = unsafe { Gpu::borrowed(driver, info, device, enabled)? };
//! let loader = PipelineLoader::new(&archive, gpu, LoaderOptions::default())?;
//! if let Some(why) = loader.mismatch() {
//!     // "built for NVIDIA H200 … 580.159.04 …, this device is …: driver_version … vs …"
//!     eprintln!("compiling from SPIR-V: {why}");
//! }
//! let made = loader.load_label("forward/high/skinned/opaque")?; // from any thread
//! assert!(matches!(made.source, Source::Binaries | Source::CacheHit | Source::Compiled));
//! // Now the application's to destroy; `libraries` (what it was linked from) must outlive it.
//! let (pipeline, libraries): (vk::Pipeline, _) = made.pipeline.into_raw();
//! # let _ = (pipeline, libraries); Ok(()) }
//! ```

// The modules that call the driver (`allow(unsafe_code)`); every other module of the crate
// denies `unsafe`.
#[allow(unsafe_code)]
mod binary;
#[allow(unsafe_code)]
mod cache;
#[allow(unsafe_code)]
mod device;
#[allow(unsafe_code)]
mod handles;
#[allow(unsafe_code)]
mod instance;
#[allow(unsafe_code)]
mod pipeline;
#[allow(unsafe_code)]
pub mod validation;
// The loader vouches for checked binaries (`CheckedBinaries::new`, `binaries_from_data`).
#[allow(unsafe_code)]
mod loader;

pub mod build;
mod devices;
mod error;
pub mod features;
pub mod probe;
pub mod raw;
pub mod shared;
pub mod state;

pub use devices::{api_string, identity_of, list_devices, select_device, DeviceInfo};
pub use error::VulkanError;
pub use loader::{LoadError, Loaded, LoaderOptions, PipelineLoader, Source, FEEDBACK_CACHE_HIT, FEEDBACK_VALID};
pub use raw::{Driver, Gpu, OpenOptions, PhysicalInfo, Supports};
/// The Vulkan bindings this module speaks (vulkanalia), for callers that wrap their own
/// instance and device.
pub use vulkanalia;
