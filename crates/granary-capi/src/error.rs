//! What every function returns ([`GranaryResult`]), the failure behind an error code
//! ([`Failure`]: code, `VkResult`, message), and the thread-local last error it is kept in.

use granary_archive::vulkan::vulkanalia::vk;
use granary_archive::vulkan::{LoadError, LoadErrorKind, VulkanError};
use granary_archive::ArchiveError;
use std::cell::RefCell;
use std::ffi::CString;

/// What a granary function returns. `GRANARY_OK` and the other non-negative values are
/// statuses; every negative value is an error, whose message, `VkResult` and code
/// `granary_last_error` and `granary_last_error_message` give on the calling thread. The `GRANARY_ERROR_*` codes from `GRANARY_ERROR_UNSUPPORTED` on are the
/// kinds of a pipeline's failure (Rust's `LoadErrorKind`).
///
/// Values are never renumbered; new ones may be added (treat an unknown negative value as an
/// error).
#[allow(non_camel_case_types)]
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GranaryResult {
    /// Success; for a pipeline: it is ready.
    GRANARY_OK = 0,
    /// The pipeline is queued or being created (not an error).
    GRANARY_PENDING = 1,
    /// The archive holds no such pipeline or label (not an error of granary's).
    GRANARY_NOT_FOUND = 2,
    /// `granary_warmup_wait`: the time ran out before every ticket finished.
    GRANARY_TIMEOUT = 3,
    /// A NULL pointer where one is required, a string that is not UTF-8, an unknown name, an
    /// unknown flag bit, a ticket this warm-up did not issue.
    GRANARY_ERROR_INVALID_ARGUMENT = -1,
    /// A versioned struct's `struct_size` this version cannot take: smaller than its first
    /// version, or larger with non-zero bytes past the fields this version knows.
    GRANARY_ERROR_STRUCT_SIZE = -2,
    /// A panic inside granary, caught at the C boundary (a bug: please report the message).
    GRANARY_ERROR_PANIC = -3,
    /// A file could not be opened or read, or a thread could not be started.
    GRANARY_ERROR_IO = -4,
    /// The archive is damaged (the message says at which byte), or not an archive.
    GRANARY_ERROR_ARCHIVE = -5,
    /// Setting up on the device failed: a Vulkan call made while wrapping the device failed,
    /// or the device is not one granary can use (Vulkan 1.3 with dynamic rendering).
    GRANARY_ERROR_VULKAN = -6,
    /// The device lacks a feature, limit or extension the pipeline needs (refused before any
    /// driver call), or the caller asked for something this version does not do.
    GRANARY_ERROR_UNSUPPORTED = -7,
    /// The archive holds nothing for this device and compiling was not allowed.
    GRANARY_ERROR_DEVICE_MISMATCH = -8,
    /// The loader's pipeline cache could not be made (initial data for another device).
    GRANARY_ERROR_CACHE = -9,
    /// An application create info cannot be said in granary's state (reserved: the C API
    /// has no lookup by create info yet).
    GRANARY_ERROR_CREATE_INFO = -10,
    /// A stage has no SPIR-V in the archive to compile from.
    GRANARY_ERROR_MISSING_SPIRV = -11,
    /// The archive's binaries cannot be used and compiling was not allowed.
    GRANARY_ERROR_BINARIES_UNUSABLE = -12,
    /// Only creation from binaries was allowed, and this pipeline needs a compile.
    GRANARY_ERROR_WOULD_COMPILE = -13,
    /// The driver ran out of host or device memory.
    GRANARY_ERROR_OUT_OF_MEMORY = -14,
    /// The device was lost.
    GRANARY_ERROR_DEVICE_LOST = -15,
    /// Any other driver failure (see the `VkResult`).
    GRANARY_ERROR_DRIVER = -16,
    /// The engine's layout source gave no layout (reserved: the C API takes no layouts yet).
    GRANARY_ERROR_LAYOUT = -17,
    /// A failure of a kind this version of the C API does not name (the message says what).
    GRANARY_ERROR_UNKNOWN = -18,
}

use GranaryResult as R;

impl GranaryResult {
    /// Every value, for names and tests.
    pub const ALL: [GranaryResult; 22] = [
        R::GRANARY_OK,
        R::GRANARY_PENDING,
        R::GRANARY_NOT_FOUND,
        R::GRANARY_TIMEOUT,
        R::GRANARY_ERROR_INVALID_ARGUMENT,
        R::GRANARY_ERROR_STRUCT_SIZE,
        R::GRANARY_ERROR_PANIC,
        R::GRANARY_ERROR_IO,
        R::GRANARY_ERROR_ARCHIVE,
        R::GRANARY_ERROR_VULKAN,
        R::GRANARY_ERROR_UNSUPPORTED,
        R::GRANARY_ERROR_DEVICE_MISMATCH,
        R::GRANARY_ERROR_CACHE,
        R::GRANARY_ERROR_CREATE_INFO,
        R::GRANARY_ERROR_MISSING_SPIRV,
        R::GRANARY_ERROR_BINARIES_UNUSABLE,
        R::GRANARY_ERROR_WOULD_COMPILE,
        R::GRANARY_ERROR_OUT_OF_MEMORY,
        R::GRANARY_ERROR_DEVICE_LOST,
        R::GRANARY_ERROR_DRIVER,
        R::GRANARY_ERROR_LAYOUT,
        R::GRANARY_ERROR_UNKNOWN,
    ];

    /// The value's C name (`"GRANARY_ERROR_DEVICE_LOST"`), NUL-terminated.
    pub fn name(self) -> &'static std::ffi::CStr {
        match self {
            R::GRANARY_OK => cstr!("GRANARY_OK"),
            R::GRANARY_PENDING => cstr!("GRANARY_PENDING"),
            R::GRANARY_NOT_FOUND => cstr!("GRANARY_NOT_FOUND"),
            R::GRANARY_TIMEOUT => cstr!("GRANARY_TIMEOUT"),
            R::GRANARY_ERROR_INVALID_ARGUMENT => cstr!("GRANARY_ERROR_INVALID_ARGUMENT"),
            R::GRANARY_ERROR_STRUCT_SIZE => cstr!("GRANARY_ERROR_STRUCT_SIZE"),
            R::GRANARY_ERROR_PANIC => cstr!("GRANARY_ERROR_PANIC"),
            R::GRANARY_ERROR_IO => cstr!("GRANARY_ERROR_IO"),
            R::GRANARY_ERROR_ARCHIVE => cstr!("GRANARY_ERROR_ARCHIVE"),
            R::GRANARY_ERROR_VULKAN => cstr!("GRANARY_ERROR_VULKAN"),
            R::GRANARY_ERROR_UNSUPPORTED => cstr!("GRANARY_ERROR_UNSUPPORTED"),
            R::GRANARY_ERROR_DEVICE_MISMATCH => cstr!("GRANARY_ERROR_DEVICE_MISMATCH"),
            R::GRANARY_ERROR_CACHE => cstr!("GRANARY_ERROR_CACHE"),
            R::GRANARY_ERROR_CREATE_INFO => cstr!("GRANARY_ERROR_CREATE_INFO"),
            R::GRANARY_ERROR_MISSING_SPIRV => cstr!("GRANARY_ERROR_MISSING_SPIRV"),
            R::GRANARY_ERROR_BINARIES_UNUSABLE => cstr!("GRANARY_ERROR_BINARIES_UNUSABLE"),
            R::GRANARY_ERROR_WOULD_COMPILE => cstr!("GRANARY_ERROR_WOULD_COMPILE"),
            R::GRANARY_ERROR_OUT_OF_MEMORY => cstr!("GRANARY_ERROR_OUT_OF_MEMORY"),
            R::GRANARY_ERROR_DEVICE_LOST => cstr!("GRANARY_ERROR_DEVICE_LOST"),
            R::GRANARY_ERROR_DRIVER => cstr!("GRANARY_ERROR_DRIVER"),
            R::GRANARY_ERROR_LAYOUT => cstr!("GRANARY_ERROR_LAYOUT"),
            R::GRANARY_ERROR_UNKNOWN => cstr!("GRANARY_ERROR_UNKNOWN"),
        }
    }

    /// The code of a pipeline failure of `kind`.
    pub fn of_kind(kind: LoadErrorKind) -> GranaryResult {
        match kind {
            LoadErrorKind::Archive => R::GRANARY_ERROR_ARCHIVE,
            LoadErrorKind::NotFound => R::GRANARY_NOT_FOUND,
            LoadErrorKind::DeviceMismatch => R::GRANARY_ERROR_DEVICE_MISMATCH,
            LoadErrorKind::Cache => R::GRANARY_ERROR_CACHE,
            LoadErrorKind::CreateInfo => R::GRANARY_ERROR_CREATE_INFO,
            LoadErrorKind::Unsupported => R::GRANARY_ERROR_UNSUPPORTED,
            LoadErrorKind::MissingSpirv => R::GRANARY_ERROR_MISSING_SPIRV,
            LoadErrorKind::BinariesUnusable => R::GRANARY_ERROR_BINARIES_UNUSABLE,
            LoadErrorKind::WouldCompile => R::GRANARY_ERROR_WOULD_COMPILE,
            LoadErrorKind::OutOfMemory => R::GRANARY_ERROR_OUT_OF_MEMORY,
            LoadErrorKind::DeviceLost => R::GRANARY_ERROR_DEVICE_LOST,
            LoadErrorKind::Driver => R::GRANARY_ERROR_DRIVER,
            LoadErrorKind::Layout => R::GRANARY_ERROR_LAYOUT,
            LoadErrorKind::Sidecar => R::GRANARY_ERROR_IO,
            _ => R::GRANARY_ERROR_UNKNOWN,
        }
    }
}

/// Why a call failed: the code it returns, the driver's `VkResult` (0, `VK_SUCCESS`, where no
/// driver call failed) and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The code returned.
    pub result: GranaryResult,
    /// The driver's `VkResult`, or 0.
    pub vk_result: i32,
    /// What went wrong, for a person.
    pub message: String,
}

impl Failure {
    /// A failure of `result` with no driver result.
    pub fn new(result: GranaryResult, message: impl Into<String>) -> Failure {
        Failure { result, vk_result: 0, message: message.into() }
    }

    /// `GRANARY_ERROR_INVALID_ARGUMENT`.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(R::GRANARY_ERROR_INVALID_ARGUMENT, message)
    }

    /// A required pointer argument `what` of `function` was NULL.
    pub fn null(function: &str, what: &str) -> Failure {
        Failure::invalid(format!("{function}: `{what}` is NULL"))
    }
}

impl From<&LoadError> for Failure {
    fn from(e: &LoadError) -> Failure {
        let result = match e {
            LoadError::Archive(a) => return Failure::from(a),
            _ => GranaryResult::of_kind(e.kind()),
        };
        Failure { result, vk_result: e.vk_result().map_or(0, vk::Result::as_raw), message: e.to_string() }
    }
}

impl From<LoadError> for Failure {
    fn from(e: LoadError) -> Failure {
        Failure::from(&e)
    }
}

impl From<&ArchiveError> for Failure {
    fn from(e: &ArchiveError) -> Failure {
        let result = match e {
            ArchiveError::Io { .. } => R::GRANARY_ERROR_IO,
            _ => R::GRANARY_ERROR_ARCHIVE,
        };
        Failure::new(result, e.to_string())
    }
}

impl From<ArchiveError> for Failure {
    fn from(e: ArchiveError) -> Failure {
        Failure::from(&e)
    }
}

impl From<VulkanError> for Failure {
    fn from(e: VulkanError) -> Failure {
        let vk_result = e.result();
        let result = match (&e, vk_result) {
            (VulkanError::Unsupported { .. }, _) => R::GRANARY_ERROR_UNSUPPORTED,
            (VulkanError::CacheHeader { .. }, _) => R::GRANARY_ERROR_CACHE,
            (_, Some(vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)) => {
                R::GRANARY_ERROR_OUT_OF_MEMORY
            }
            (_, Some(vk::Result::ERROR_DEVICE_LOST)) => R::GRANARY_ERROR_DEVICE_LOST,
            _ => R::GRANARY_ERROR_VULKAN,
        };
        Failure { result, vk_result: vk_result.map_or(0, vk::Result::as_raw), message: e.to_string() }
    }
}

/// The last failure on this thread, with its message as a C string.
pub struct LastError {
    /// The failure.
    pub failure: Failure,
    /// `failure.message` NUL-terminated (interior NULs replaced).
    pub message: CString,
}

thread_local! {
    static LAST: RefCell<Option<LastError>> = const { RefCell::new(None) };
}

/// Makes `failure` this thread's last error.
pub fn set_last(failure: Failure) {
    let message = CString::new(failure.message.replace('\0', "\\0")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = Some(LastError { failure, message }));
}

/// Runs `f` on this thread's last error (`None` if no call on this thread has failed).
pub fn with_last<T>(f: impl FnOnce(Option<&LastError>) -> T) -> T {
    LAST.with(|l| f(l.borrow().as_ref()))
}

/// A panic's payload as text.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_code_and_every_code_its_name() {
        for r in GranaryResult::ALL {
            let name = r.name().to_str().unwrap();
            assert!(name.starts_with("GRANARY_"), "{name}");
            assert_eq!(name.contains("ERROR"), (r as i32) < 0, "{name}");
        }
        assert_eq!(GranaryResult::of_kind(LoadErrorKind::DeviceLost), R::GRANARY_ERROR_DEVICE_LOST);
        assert_eq!(GranaryResult::of_kind(LoadErrorKind::NotFound), R::GRANARY_NOT_FOUND);
        let f = Failure::from(LoadError::NotFound("labelled 'x'".into()));
        assert_eq!((f.result, f.vk_result), (R::GRANARY_NOT_FOUND, 0));
    }

    #[test]
    fn the_last_error_is_per_thread() {
        set_last(Failure::invalid("here"));
        std::thread::spawn(|| assert!(with_last(|l| l.is_none()))).join().unwrap();
        assert_eq!(with_last(|l| l.map(|l| l.message.to_str().unwrap().to_string())), Some("here".into()));
    }
}
