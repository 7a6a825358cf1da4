//! `GranaryArchive`: an open archive (`granary_archive_open`, `granary_archive_open_memory`),
//! shared by every loader made from it, and its lookups.
//!
//! *Ownership:* the handle holds an `Arc<Archive>`; a loader takes its own reference, so
//! `granary_archive_close` may come right after `granary_loader_create` and the archive lives
//! until its last loader is destroyed.

use crate::abi::{self, read_optional, Out, Versioned};
use crate::diagnostics::guard;
use crate::error::{Failure, GranaryResult};
use granary_archive::{Archive, VerifyReport};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// An open archive. Opaque.
///
/// Thread safety: every function taking a `const GranaryArchive*` may run on any number of
/// threads at once; `granary_archive_close` must not run while any other call on the handle
/// does.
pub struct GranaryArchive {
    pub(crate) archive: Arc<Archive>,
}

/// `GranaryOpenOptions::flags`: copy the file into memory (Rust's `Archive::read`) instead of
/// mapping it, for a file that may be changed or truncated while it is open (a launcher
/// patching it, a network folder). A mapped file truncated underneath raises `SIGBUS`.
pub const GRANARY_OPEN_READ_INTO_MEMORY: u32 = 1;
/// `GranaryOpenOptions::flags`: check every byte of the archive (its checksums and records)
/// before returning; without it only the header and section table are checked at open and
/// each lookup checks what it touches.
pub const GRANARY_OPEN_VERIFY: u32 = 2;
const OPEN_FLAGS: u32 = GRANARY_OPEN_READ_INTO_MEMORY | GRANARY_OPEN_VERIFY;

/// How to open an archive. Zero-initialized (with `struct_size` set) is the default: mapped,
/// header checked.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GranaryOpenOptions {
    /// `sizeof(GranaryOpenOptions)`.
    pub struct_size: u32,
    /// `GRANARY_OPEN_*` bits; an unknown bit is refused.
    pub flags: u32,
}

// SAFETY: repr(C), `struct_size: u32` first; integers only.
unsafe impl Versioned for GranaryOpenOptions {
    const NAME: &'static str = "GranaryOpenOptions";
    const V1_SIZE: usize = std::mem::size_of::<GranaryOpenOptions>();
}

/// Called once when granary no longer needs bytes handed to `granary_archive_open_memory`:
/// `user_data` as given, and the `data` and `size` of that call.
pub type GranaryReleaseCallback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, data: *const c_void, size: usize)>;

fn flags_of(options: &GranaryOpenOptions, function: &str) -> Result<u32, Failure> {
    if options.flags & !OPEN_FLAGS != 0 {
        return Err(Failure::invalid(format!(
            "{function}: unknown GranaryOpenOptions flag bits {:#x}",
            options.flags & !OPEN_FLAGS
        )));
    }
    Ok(options.flags)
}

fn finish(archive: Archive, flags: u32, out: Out<*mut GranaryArchive>) -> Result<GranaryResult, Failure> {
    if flags & GRANARY_OPEN_VERIFY != 0 {
        let _: VerifyReport = archive.verify()?;
    }
    let handle = Box::into_raw(Box::new(GranaryArchive { archive: Arc::new(archive) }));
    // SAFETY: `out` was checked non-NULL; the caller's contract makes it writable.
    unsafe { out.set(handle) };
    Ok(GranaryResult::GRANARY_OK)
}

/// Opens the archive file at `path` (UTF-8, NUL-terminated) and writes its handle to `*out`.
/// `options` may be NULL (the defaults). The header and section table are checked; with
/// `GRANARY_OPEN_VERIFY` every byte. Returns `GRANARY_ERROR_IO` when the file cannot be
/// opened, `GRANARY_ERROR_ARCHIVE` when it is not a valid archive (the message names the byte
/// offset).
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string; `options` is NULL or a `GranaryOpenOptions`
/// with `struct_size` set; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_archive_open(
    path: *const c_char,
    options: *const GranaryOpenOptions,
    out: *mut *mut GranaryArchive,
) -> GranaryResult {
    const F: &str = "granary_archive_open";
    guard(F, || {
        let out = Out::new(out, F, "out")?;
        // SAFETY: the caller's promise.
        let path = unsafe { abi::str_in(path, F, "path")? };
        // SAFETY: the caller's promise.
        let flags = flags_of(&unsafe { read_optional(options, F)? }, F)?;
        let path = std::path::Path::new(path);
        let archive =
            if flags & GRANARY_OPEN_READ_INTO_MEMORY != 0 { Archive::read(path)? } else { Archive::open(path)? };
        finish(archive, flags, out)
    })
}

/// Calls the release callback exactly once, when dropped (also on an early return or a panic).
struct Release {
    callback: GranaryReleaseCallback,
    user_data: *mut c_void,
    data: *const c_void,
    size: usize,
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(release) = self.callback.take() {
            // SAFETY: the application's callback with the arguments it gave
            // (`granary_archive_open_memory`'s contract); called once (`take`).
            unsafe { release(self.user_data, self.data, self.size) }
        }
    }
}

/// Opens an archive from `size` bytes at `data` (a pak file's entry, memory the engine's own
/// file system read) and writes its handle to `*out`. The bytes are the caller's until
/// granary calls `release(user_data, data, size)`, exactly once for every call of this
/// function whatever it returns (when `release` is not NULL). This version copies the bytes
/// and calls `release` before returning; a later version may keep them until the archive's
/// last loader is destroyed and call it then, from whichever thread destroys it: write
/// `release` to work either way.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `data` is NULL or points at `size` readable bytes that stay unchanged until `release` is
/// called; `release` is NULL or callable once with `user_data`; `options` is NULL or a
/// `GranaryOpenOptions` with `struct_size` set; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_archive_open_memory(
    data: *const c_void,
    size: usize,
    release: GranaryReleaseCallback,
    user_data: *mut c_void,
    options: *const GranaryOpenOptions,
    out: *mut *mut GranaryArchive,
) -> GranaryResult {
    const F: &str = "granary_archive_open_memory";
    guard(F, move || {
        // Released when dropped: on every return and on a panic's unwinding.
        let release = Release { callback: release, user_data, data, size };
        let out = Out::new(out, F, "out")?;
        // SAFETY: the caller's promise.
        let flags = flags_of(&unsafe { read_optional(options, F)? }, F)?;
        // SAFETY: `size` bytes at `data`, unchanged until `release` runs (below, after the copy).
        let bytes = unsafe { abi::bytes_in(data, size, F, "data")? }.to_vec();
        drop(release);
        finish(Archive::from_bytes(bytes)?, flags, out)
    })
}

/// Closes the handle. The archive itself lives on while loaders made from it do. NULL is
/// ignored.
///
/// Thread safety: no other call on this handle may run at the same time or after.
///
/// # Safety
///
/// `archive` is NULL or a handle from `granary_archive_open*` not closed before.
#[no_mangle]
pub unsafe extern "C" fn granary_archive_close(archive: *mut GranaryArchive) {
    guard("granary_archive_close", || {
        if !archive.is_null() {
            // SAFETY: a handle made by `Box::into_raw` in this module and not closed before.
            drop(unsafe { Box::from_raw(archive) });
        }
        Ok(GranaryResult::GRANARY_OK)
    });
}

/// Writes the number of pipelines in the archive to `*count`.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `archive` is NULL or a live handle; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_archive_pipeline_count(
    archive: *const GranaryArchive,
    count: *mut usize,
) -> GranaryResult {
    const F: &str = "granary_archive_pipeline_count";
    guard(F, || {
        let out = Out::new(count, F, "count")?;
        // SAFETY: the caller's promise.
        let a = unsafe { abi::handle(archive, F, "archive")? };
        // SAFETY: checked non-NULL, writable by the caller's promise.
        unsafe { out.set(a.archive.len()) };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Looks the pipeline labelled `label` up and writes its 128-bit key (as `granary ls --keys c`
/// prints it: low and high 64 bits) to `*key_lo` and `*key_hi`. `GRANARY_NOT_FOUND` when no
/// pipeline has the label.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `archive` is NULL or a live handle; `label` is NULL or a NUL-terminated string; `key_lo`
/// and `key_hi` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_archive_lookup_label(
    archive: *const GranaryArchive,
    label: *const c_char,
    key_lo: *mut u64,
    key_hi: *mut u64,
) -> GranaryResult {
    const F: &str = "granary_archive_lookup_label";
    guard(F, || {
        let (lo, hi) = (Out::new(key_lo, F, "key_lo")?, Out::new(key_hi, F, "key_hi")?);
        // SAFETY: the caller's promise.
        let a = unsafe { abi::handle(archive, F, "archive")? };
        // SAFETY: the caller's promise.
        let label = unsafe { abi::str_in(label, F, "label")? };
        let Some(p) = a.archive.lookup_label(label)? else { return Ok(GranaryResult::GRANARY_NOT_FOUND) };
        let key = p.key().0;
        // SAFETY: checked non-NULL, writable by the caller's promise.
        unsafe {
            lo.set(key as u64);
            hi.set((key >> 64) as u64);
        }
        Ok(GranaryResult::GRANARY_OK)
    })
}
