//! The C boundary's guard ([`guard`]: panics caught, failures recorded), the log callback,
//! and the functions that read the last error.

use crate::abi::{write_out, Versioned};
use crate::error::{panic_message, set_last, with_last, Failure, GranaryResult};
use std::ffi::{c_char, c_void, CString};
use std::sync::RwLock;

/// The version of this C API: `GRANARY_CAPI_VERSION_MAJOR << 16 | GRANARY_CAPI_VERSION_MINOR`.
/// A new minor version only adds (functions, result codes, fields at the end of structs); a
/// new major version may change what exists.
pub const GRANARY_CAPI_VERSION_MAJOR: u32 = 0;
/// See `GRANARY_CAPI_VERSION_MAJOR`.
pub const GRANARY_CAPI_VERSION_MINOR: u32 = 2;

/// A message's severity (`GranaryLogCallback`'s `level`).
pub const GRANARY_LOG_ERROR: u32 = 1;
/// A warning: something the engine should know (the archive was built for another driver, a
/// cache blob was skipped, allocation callbacks were ignored).
pub const GRANARY_LOG_WARN: u32 = 2;
/// Information (what a loader found for the device, workers started).
pub const GRANARY_LOG_INFO: u32 = 3;

/// A log callback: `level` is one of `GRANARY_LOG_*`, `message` a NUL-terminated UTF-8 string
/// valid only during the call. It is called on the thread of the granary call that logs (never
/// from granary's worker threads) and must not call `granary_set_log_callback`.
pub type GranaryLogCallback = Option<unsafe extern "C" fn(user_data: *mut c_void, level: u32, message: *const c_char)>;

#[derive(Clone, Copy)]
struct Sink {
    callback: unsafe extern "C" fn(*mut c_void, u32, *const c_char),
    user_data: usize,
    max_level: u32,
}

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Sends `message` to the log callback, if one is set and takes `level`.
pub fn log(level: u32, message: &str) {
    let sink = *SINK.read().unwrap_or_else(|p| p.into_inner());
    let Some(sink) = sink.filter(|s| level <= s.max_level) else { return };
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: the callback and its user data are the application's (`granary_set_log_callback`'s
    // contract: callable from any thread with these arguments); `text` lives for the call.
    unsafe { (sink.callback)(sink.user_data as *mut c_void, level, text.as_ptr()) }
}

/// Runs the body of an exported function: a panic becomes `GRANARY_ERROR_PANIC`, a
/// [`Failure`] its code; either is recorded as this thread's last error and logged.
///
/// Every exported function's body is one call of this (`tests/api.rs` checks the source).
pub fn guard(function: &str, body: impl FnOnce() -> Result<GranaryResult, Failure>) -> GranaryResult {
    let failure = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(Ok(r)) => return r,
        Ok(Err(f)) => f,
        Err(payload) => Failure::new(
            GranaryResult::GRANARY_ERROR_PANIC,
            format!("{function}: granary panicked (a bug; please report it): {}", panic_message(&*payload)),
        ),
    };
    let result = failure.result;
    // Logging and recording must not unwind into C either.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        log(GRANARY_LOG_ERROR, &failure.message);
        set_last(failure);
    }));
    result
}

/// [`guard`] for a function returning something other than a result: `fallback` on a panic.
pub fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The last error on a thread (`granary_last_error`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GranaryErrorInfo {
    /// `sizeof(GranaryErrorInfo)`, set by the caller.
    pub struct_size: u32,
    /// The code the failing call returned (`GRANARY_OK` if no call on this thread failed).
    pub result: i32,
    /// The driver's `VkResult` where a driver call failed, else 0 (`VK_SUCCESS`).
    pub vk_result: i32,
    /// The message, NUL-terminated UTF-8, valid until the next failing granary call on this
    /// thread ("" if none failed).
    pub message: *const c_char,
}

impl Default for GranaryErrorInfo {
    fn default() -> Self {
        GranaryErrorInfo { struct_size: 0, result: 0, vk_result: 0, message: std::ptr::null() }
    }
}

// SAFETY: repr(C), `struct_size: u32` first; integers and a raw pointer.
unsafe impl Versioned for GranaryErrorInfo {
    const NAME: &'static str = "GranaryErrorInfo";
    const V1_SIZE: usize = std::mem::size_of::<GranaryErrorInfo>();
}

/// The version of the C API this library implements (`GRANARY_CAPI_VERSION_MAJOR << 16 |
/// GRANARY_CAPI_VERSION_MINOR`); compare with the header's constants.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn granary_capi_version() -> u32 {
    guard_value(0, || GRANARY_CAPI_VERSION_MAJOR << 16 | GRANARY_CAPI_VERSION_MINOR)
}

/// The C name of a result code (`"GRANARY_ERROR_DEVICE_LOST"`), or `"unknown GranaryResult"`
/// for a value this version does not define. The string is static.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn granary_result_name(result: i32) -> *const c_char {
    guard_value(cstr!("unknown GranaryResult").as_ptr(), || {
        GranaryResult::ALL
            .iter()
            .find(|r| **r as i32 == result)
            .map_or(cstr!("unknown GranaryResult").as_ptr(), |r| r.name().as_ptr())
    })
}

/// The message of the last failing granary call on this thread, NUL-terminated UTF-8; `""`
/// if none has failed. Valid until the next failing granary call on this thread. A call that
/// succeeds leaves it as it was.
///
/// Thread safety: any thread; each thread has its own last error.
#[no_mangle]
pub extern "C" fn granary_last_error_message() -> *const c_char {
    // The pointer stays valid after `with_last` returns: it points into the thread-local's
    // `CString`, replaced only by the next `set_last` on this thread.
    guard_value(cstr!("").as_ptr(), || with_last(|l| l.map_or(cstr!("").as_ptr(), |l| l.message.as_ptr())))
}

/// Fills `info` (its `struct_size` set by the caller) with this thread's last error: code,
/// `VkResult` and message (see `granary_last_error_message` for how long it is valid).
///
/// Thread safety: any thread; each thread has its own last error.
///
/// # Safety
///
/// `info` is NULL or points at a writable `GranaryErrorInfo` whose `struct_size` is set.
#[no_mangle]
pub unsafe extern "C" fn granary_last_error(info: *mut GranaryErrorInfo) -> GranaryResult {
    guard("granary_last_error", || {
        let value = with_last(|l| match l {
            Some(l) => GranaryErrorInfo {
                struct_size: 0,
                result: l.failure.result as i32,
                vk_result: l.failure.vk_result,
                message: l.message.as_ptr(),
            },
            None => GranaryErrorInfo { message: cstr!("").as_ptr(), ..GranaryErrorInfo::default() },
        });
        // SAFETY: the caller's promise.
        unsafe { write_out(info, value, "granary_last_error")? };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Sets the process-wide log callback (NULL: none, the default) with its `user_data`, taking
/// messages of `max_level` and more severe (`GRANARY_LOG_ERROR` .. `GRANARY_LOG_INFO`). Every
/// error a granary function returns is logged at `GRANARY_LOG_ERROR` with its message.
///
/// Thread safety: any thread; the callback may then be called from any thread that calls
/// granary, also at the same time, so it must be thread-safe. Never call this from inside the
/// callback.
///
/// # Safety
///
/// `callback` is NULL or a function that may be called with `user_data` from any thread
/// until it is replaced (and until every granary call running at that moment has returned).
#[no_mangle]
pub unsafe extern "C" fn granary_set_log_callback(
    callback: GranaryLogCallback,
    user_data: *mut c_void,
    max_level: u32,
) -> GranaryResult {
    guard("granary_set_log_callback", || {
        let sink = callback.map(|callback| Sink { callback, user_data: user_data as usize, max_level });
        *SINK.write().unwrap_or_else(|p| p.into_inner()) = sink;
        Ok(GranaryResult::GRANARY_OK)
    })
}
