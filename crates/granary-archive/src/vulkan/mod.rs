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
//! - [`raw`]: every Vulkan call and every `unsafe` block, with the object-lifetime and
//!   external-synchronization rules written down in its header.
//! - [`state`]: pure mappings of granary's pipeline state and layouts to Vulkan values.
//! - [`build`]: an archived render state to the create-info input of one pipeline.
//!
//! The Vulkan library is loaded at run time ([`Driver::load`]) or the application's own
//! instance and device are wrapped ([`Driver::borrowed`], [`Gpu::borrowed`]).

pub mod build;
mod devices;
mod error;
mod loader;
pub mod raw;
pub mod state;

pub use devices::{api_string, identity_of, list_devices, select_device, DeviceInfo};
pub use error::VulkanError;
pub use loader::{LoadError, Loaded, LoaderOptions, PipelineLoader, Source, FEEDBACK_CACHE_HIT, FEEDBACK_VALID};
pub use raw::{Driver, Gpu, OpenOptions, PhysicalInfo};
/// The Vulkan bindings this module speaks (vulkanalia), for callers that wrap their own
/// instance and device.
pub use vulkanalia;
