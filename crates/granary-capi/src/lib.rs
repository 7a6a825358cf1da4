#![warn(missing_docs)]
// `unsafe` (and `#[no_mangle]`) only in the modules that export functions or read what C hands
// in; every block carries a `// SAFETY:` argument.
#![deny(unsafe_code)]
//! granary's C API: the run-time loader of `granary-archive` (feature `vulkan`) for engines
//! written in C or C++. The header is `include/granary.h`, generated from this crate by
//! `cbindgen` (`cbindgen.toml`) and checked current by `.ci/run`; docs/C-API.md says how to
//! link it, the ownership rules and a walk-through of `examples/warm.c`.
//!
//! The shape is Rust's (README, "Using granary in your engine"): open an archive
//! (`granary_archive_open`, `granary_archive_open_memory`), hand over the application's
//! `VkInstance`, `VkPhysicalDevice`, `VkDevice`, `vkGetInstanceProcAddr` and what it enabled
//! (`GranaryVulkanDevice`), make a loader (`granary_loader_create`) and a warm-up
//! (`granary_warmup_create`), request pipelines (tickets), drive creation
//! (`granary_warmup_pump` or `granary_warmup_spawn_workers`), and on the frame's path only
//! `granary_warmup_try_get`.
//!
//! Rules every function keeps:
//! - it returns a [`GranaryResult`] (or a plain value documented as such); a negative one is an
//!   error whose code, `VkResult` and message are this thread's last error
//!   (`granary_last_error`, `granary_last_error_message`) and are sent to the log callback;
//! - it catches every panic (`GRANARY_ERROR_PANIC`), so no unwinding crosses into C (a build
//!   with `panic = "abort"` aborts instead);
//! - NULL where a pointer is required, a `struct_size` it cannot take, a string that is not
//!   UTF-8, an unknown name or flag are errors, never undefined behaviour;
//! - its doc comment says from which threads it may be called.

/// A `&'static CStr` of a string literal. (Not `c"…"`: cbindgen 0.24, which writes the
/// header, cannot parse C-string literals.)
macro_rules! cstr {
    ($s:literal) => {
        match std::ffi::CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("a literal with a NUL"),
        }
    };
}

#[allow(unsafe_code)]
mod abi;
#[allow(unsafe_code)]
mod archive;
#[allow(unsafe_code)]
mod device;
#[allow(unsafe_code)]
mod diagnostics;
mod error;
#[allow(unsafe_code)]
mod loader;
mod tickets;
#[allow(unsafe_code)]
mod warmup;

pub use archive::*;
pub use device::*;
pub use diagnostics::{
    granary_capi_version, granary_last_error, granary_last_error_message, granary_result_name,
    granary_set_log_callback, GranaryErrorInfo, GranaryLogCallback, GRANARY_CAPI_VERSION_MAJOR,
    GRANARY_CAPI_VERSION_MINOR, GRANARY_LOG_ERROR, GRANARY_LOG_INFO, GRANARY_LOG_WARN,
};
pub use error::GranaryResult;
pub use loader::*;
pub use warmup::*;

/// The boundary's guard, for the crate's own tests (a panic inside it must come back as
/// `GRANARY_ERROR_PANIC`): not part of the C API.
#[doc(hidden)]
pub use diagnostics::guard as __guard;
/// See [`__guard`].
#[doc(hidden)]
pub use error::Failure as __Failure;
