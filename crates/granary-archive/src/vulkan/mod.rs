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
//! - The types that own or wrap a Vulkan object ([`Driver`], [`Gpu`], [`Module`],
//!   [`DriverLayout`], [`Pipeline`], [`Binaries`], [`Cache`]), made by the modules that call
//!   the driver (table below), each with its object-lifetime and external-synchronization
//!   rules at its top; the only modules of the crate where `unsafe` is allowed (besides the
//!   reader's memory map and the loader's vouching for checked binaries).
//! - Lookup by the application's own create info: an [`ObjectRecorder`] learns what the
//!   application's render passes, layouts, samplers and shader modules are;
//!   [`PipelineLoader::lookup_graphics`] / [`lookup_compute`](PipelineLoader::lookup_compute)
//!   turn a raw `VkGraphicsPipelineCreateInfo` / `VkComputePipelineCreateInfo` into granary's
//!   native state and key ([`AppPipeline`]) and say what the archive offers for it ([`Offer`]),
//!   and [`create_graphics`](PipelineLoader::create_graphics) /
//!   [`create_compute`](PipelineLoader::create_compute) create it from the archived binaries
//!   when the driver's pipeline key of that create info equals the archived one
//!   (`crates/granary-vulkan/examples/lookup.rs` runs it end to end).
//! - `features` (private): the core features and [`Limits`] a pipeline needs, checked before
//!   any driver call ([`check_features`], [`check_spirv`]).
//! - `translate` (private): pure mappings of granary's pipeline state and layouts to Vulkan
//!   values ([`layout_desc`], [`stage_flag`] are the ones the harvest backend calls).
//! - `build` (private): an archived render state to the create-info input of one pipeline
//!   ([`graphics_input`]), shared by the harvest backend and the loader.
//! - `native` (private): a native Vulkan state ([`crate::native::NativePipeline`]) to its
//!   create info with every chained structure ([`NativeInput`]), the stage create infos of
//!   both forms with their `VkSpecializationInfo` ([`StageInput`]), and [`NativeObjects`],
//!   the render passes, layouts and immutable samplers shared per device by content.
//! - `variants` (private): the whole variants `harvest --whole-variants` archives beside a
//!   library pipeline, found for the formats it is linked with and used only when provably
//!   that pipeline.
//! - Feature `capture` (implies `vulkan`, enabled by `granary-vulkan`): the harvest half —
//!   [`CreateMode::Capture`], [`BlobInterner`], binary capture, [`Gpu::cache_data`]. A game
//!   builds without it.
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
//! let loader = PipelineLoader::new(archive, gpu, LoaderOptions::default())?;
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
//!
//! # The modules that call the driver
//!
//! | module | owns | calls |
//! |---|---|---|
//! | `instance` | [`Driver`], [`PhysicalInfo`] | loader, instance, physical-device queries (extensions, features, limits, identity) |
//! | `device` | [`Gpu`], [`OpenOptions`] | `vkCreateDevice` with its feature chain, the global pipeline key |
//! | `handles` | [`Module`], [`DriverLayout`], [`Sampler`], [`RenderPass`] | shader modules, descriptor-set and pipeline layouts (also a native state's, with binding flags and immutable samplers), samplers, render passes (`vkCreateRenderPass2`) |
//! | `pipeline` | [`Pipeline`], [`Retained`], [`GraphicsInput`], [`CreateMode`] | create-info building, pipeline creation, libraries and linking, `vkGetPipelineKeyKHR` of a create info |
//! | `binary` | [`Binaries`] | pipeline binaries: capture, read, create from checked data |
//! | `cache` | [`Cache`] | pipeline caches: header checks, create, merge, read (with retries) |
//! | `validation` | the debug messenger | `VK_EXT_debug_utils` |
//! | `recorder`, `inverse` | [`ObjectRecorder`], [`AppPipeline`] | none: they read the application's own create infos (raw pointers, `unsafe`) |
//! | `lookup` | [`AppLookup`], [`Offer`] | `vkGetPipelineKeyKHR` and pipeline creation of the application's own create info (through `pipeline`) |
//!
//! # The lifetime rules together
//!
//! 1. Every object holds an `Arc` of what it was made from (`Gpu` → `Driver`; modules,
//!    layouts, pipelines, binaries, caches → `Gpu`), so nothing is destroyed before what was
//!    made from it.
//! 2. Shared objects (modules, layouts, fragment-output libraries, large binaries, and a
//!    native state's render passes and immutable samplers, [`NativeObjects`]) are `Arc`s
//!    destroyed in `Drop`, when no creation can reach them; a layout holds the samplers its
//!    set layouts were made with.
//! 3. At capture, pipelines and binaries never outlive the creating call.
//! 4. A linked pipeline holds the libraries it was linked from until it is destroyed (also
//!    after [`Pipeline::into_raw`], through [`Retained`]).
//! 5. Borrowed instances and devices are the application's: `unsafe` constructors whose
//!    `# Safety` sections say what it promises.
//! 6. A pipeline the loader made holds its pipeline layout until it is destroyed (through
//!    [`Retained`] after `into_raw`): dropping the loader never destroys a layout a live
//!    pipeline was created with, with or without `maintenance4`.

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
// Reads the application's own create infos (raw pointers) and creates them.
#[allow(unsafe_code)]
mod inverse;
#[allow(unsafe_code)]
mod lookup;
#[allow(unsafe_code)]
mod recorder;

mod build;
mod devices;
mod error;
mod feature_check;
mod features;
mod native;
// The fuzz harness's observer of driver-bound bytes (inert without the test-only `fault`
// feature): not API.
#[doc(hidden)]
pub mod probe;
mod retire;
mod shared;
mod sidecar;
mod stats;
mod translate;
mod variants;
mod warmup;

#[cfg(feature = "capture")]
pub use binary::BlobInterner;
pub use binary::{Binaries, CaptureStats, RawBinary};
pub use build::{entry_name, graphics_input, specialization_of};
pub use cache::{Cache, EngineCache, MergedCache};
pub use device::{Gpu, OpenOptions};
pub use devices::{identity_of, list_devices, select_device, DeviceInfo};
pub use error::VulkanError;
pub use feature_check::{check_features, check_native, check_spirv};
pub use features::{from_vk as device_features_of, Limits};
pub use handles::{DriverLayout, Module, RenderPass, Sampler};
pub use instance::{api_string, Driver, PhysicalInfo, Supports};
pub use inverse::{compute_pipeline, graphics_pipeline, ray_tracing_pipeline, AppPipeline, AppStage};
pub use loader::{
    EngineLayouts, LayoutRequest, LayoutSource, LoadError, LoadErrorKind, Loaded, LoaderOptions, PipelineLoader,
    Source, DICTIONARY_MIN_BYTES, FEEDBACK_CACHE_HIT, FEEDBACK_VALID,
};
pub use lookup::{AppLookup, Offer};
pub use native::{check_structure, NativeInput, NativeObjects, StageInput};
pub use pipeline::{CheckedBinaries, CreateMode, CreateOutcome, DepthStencil, GraphicsInput, Pipeline, Retained};
pub use recorder::{CreateInfoError, ObjectRecorder};
pub use retire::RetireQueue;
pub use shared::Shared;
pub use sidecar::{SidecarStatus, SIDECAR_HEADER_LEN, SIDECAR_MAGIC, SIDECAR_VERSION};
pub use stats::{Latency, LoaderStats};
pub use translate::{layout_desc, stage_flag, LayoutDesc, SetBinding};
/// The Vulkan bindings this module speaks (vulkanalia), for callers that wrap their own
/// instance and device.
pub use vulkanalia;
pub use warmup::{Priority, Status, Ticket, Warmup, WarmupProgress, WarmupStats, Workers};

// `Driver`, `Gpu`, `Module` and `DriverLayout` are `Send + Sync` without any `unsafe impl`:
// Vulkan handles are plain integers in vulkanalia and its `Instance`/`Device` are `Send + Sync`;
// what makes sharing them correct is the external-synchronization discipline above.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Driver>();
    assert_send_sync::<Gpu>();
    assert_send_sync::<Module>();
    assert_send_sync::<DriverLayout>();
    assert_send_sync::<Pipeline>();
    assert_send_sync::<Binaries>();
    assert_send_sync::<Cache>();
    assert_send_sync::<ObjectRecorder>();
    assert_send_sync::<AppPipeline>();
    assert_send_sync::<PipelineLoader>();
    assert_send_sync::<Warmup>();
    assert_send_sync::<RetireQueue<Pipeline>>();
};
