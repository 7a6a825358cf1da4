//! The Vulkan layer's handles, in one place: every type that owns or wraps a Vulkan object.
//! Each module below calls the driver for one concern and states, at its top, the
//! object-lifetime rules it keeps and the specification's external-synchronization
//! requirements it meets; every other module of the crate denies `unsafe` code.
//!
//! | module | owns | calls |
//! |---|---|---|
//! | `instance` | [`Driver`], [`PhysicalInfo`] | loader, instance, physical-device queries (extensions, features, limits, identity) |
//! | `device` | [`Gpu`], [`OpenOptions`] | `vkCreateDevice` with its feature chain, the global pipeline key |
//! | `handles` | [`Module`], [`Layout`] | shader modules, descriptor-set and pipeline layouts |
//! | `pipeline` | [`Pipeline`], [`LinkedLibraries`], [`GraphicsInput`], [`How`] | create-info building, pipeline creation, libraries and linking, `vkGetPipelineKeyKHR` of a create info |
//! | `binary` | [`Binaries`] | pipeline binaries: capture, read, create from checked data |
//! | `cache` | [`Cache`] | pipeline caches: header checks, create, merge, read (with retries) |
//! | `validation` | the debug messenger | `VK_EXT_debug_utils` |
//!
//! # The lifetime rules together
//!
//! 1. Every object holds an `Arc` of what it was made from (`Gpu` → `Driver`; modules,
//!    layouts, pipelines, binaries, caches → `Gpu`), so nothing is destroyed before what was
//!    made from it.
//! 2. Shared objects (modules, layouts, fragment-output libraries, large binaries) are `Arc`s
//!    destroyed in `Drop`, when no creation can reach them.
//! 3. At capture, pipelines and binaries never outlive the creating call.
//! 4. A linked pipeline holds the libraries it was linked from until it is destroyed (also
//!    after [`Pipeline::into_raw`], through [`LinkedLibraries`]).
//! 5. Borrowed instances and devices are the application's: `unsafe` constructors whose
//!    `# Safety` sections say what it promises.

pub use super::binary::{Binaries, Intern, RawBinary};
pub use super::cache::{check_header, parse_header, Cache, CacheHeader, MergedCache};
pub use super::device::{Gpu, OpenOptions};
pub use super::handles::{Layout, Module};
pub use super::instance::{Driver, PhysicalInfo, Supports};
pub use super::pipeline::{CheckedBinaries, Created, DepthStencil, GraphicsInput, How, LinkedLibraries, Pipeline};

// `Driver`, `Gpu`, `Module` and `Layout` are `Send + Sync` without any `unsafe impl`:
// Vulkan handles are plain integers in vulkanalia and its `Instance`/`Device` are `Send + Sync`;
// what makes sharing them correct is the external-synchronization discipline above.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Driver>();
    assert_send_sync::<Gpu>();
    assert_send_sync::<Module>();
    assert_send_sync::<Layout>();
    assert_send_sync::<Pipeline>();
    assert_send_sync::<Binaries>();
    assert_send_sync::<Cache>();
};
