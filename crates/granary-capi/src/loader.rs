//! `GranaryLoader`: Rust's `PipelineLoader` over an archive and the application's device, its
//! options, what it found for the device, and its statistics.

use crate::abi::{self, read_optional, write_out, Out, Versioned};
use crate::archive::GranaryArchive;
use crate::device::{gpu_of, GranaryVulkanDevice};
use crate::diagnostics::{guard, log, GRANARY_LOG_INFO, GRANARY_LOG_WARN};
use crate::error::{Failure, GranaryResult};
use granary_archive::vulkan::{Latency, LoaderOptions, LoaderStats, PipelineLoader, SidecarStatus};
use granary_archive::TextureFormat;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// A pipeline loader on the application's device. Opaque.
///
/// Thread safety: every function taking a `const GranaryLoader*` may run on any number of
/// threads at once; `granary_loader_destroy` must not run while any other call on the handle
/// does.
pub struct GranaryLoader {
    pub(crate) loader: Arc<PipelineLoader>,
}

/// `GranaryLoaderOptions::flags`: never use the archive's driver binaries (measure the
/// compile paths).
pub const GRANARY_LOADER_NO_BINARIES: u32 = 1;
/// `GranaryLoaderOptions::flags`: where the archive's binaries cannot be used (another device
/// or driver, a damaged binary) fail the pipeline instead of compiling its SPIR-V.
pub const GRANARY_LOADER_NO_FALLBACK_COMPILE: u32 = 2;
/// `GranaryLoaderOptions::flags`: a pipeline without binaries for this device is an error, not
/// a compile.
pub const GRANARY_LOADER_REQUIRE_BINARIES: u32 = 4;
/// `GranaryLoaderOptions::flags`: do not seed the compile path's pipeline cache with the
/// archive's cache data.
pub const GRANARY_LOADER_NO_ARCHIVE_CACHE: u32 = 8;
/// `GranaryLoaderOptions::flags`: compile the library parts of pipelines archived as libraries
/// instead of creating them from binaries (the workaround for drivers that crash linking them).
pub const GRANARY_LOADER_COMPILE_LIBRARY_PARTS: u32 = 16;
/// `GranaryLoaderOptions::flags`: link libraries from binaries even when their set carries a
/// shared dictionary binary (crashes NVIDIA 580.159; off by default).
pub const GRANARY_LOADER_LINK_SHARED_LIBRARY_BINARIES: u32 = 32;
/// `GranaryLoaderOptions::flags`: create whole pipelines from binaries even when their set
/// carries a shared dictionary binary (drawing with them crashes NVIDIA 580.159; off by
/// default: such pipelines are compiled).
pub const GRANARY_LOADER_WHOLE_DICTIONARY_BINARIES: u32 = 64;
const LOADER_FLAGS: u32 = GRANARY_LOADER_NO_BINARIES
    | GRANARY_LOADER_NO_FALLBACK_COMPILE
    | GRANARY_LOADER_REQUIRE_BINARIES
    | GRANARY_LOADER_NO_ARCHIVE_CACHE
    | GRANARY_LOADER_COMPILE_LIBRARY_PARTS
    | GRANARY_LOADER_LINK_SHARED_LIBRARY_BINARIES
    | GRANARY_LOADER_WHOLE_DICTIONARY_BINARIES;

/// How the loader creates pipelines. Zero-initialized (with `struct_size` set) is the
/// default: binaries where usable, compile otherwise, the archive's cache data, libraries
/// linked with `rgba8unorm`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GranaryLoaderOptions {
    /// `sizeof(GranaryLoaderOptions)`.
    pub struct_size: u32,
    /// `GRANARY_LOADER_*` bits; an unknown bit is refused.
    pub flags: u32,
    /// Colour formats for the attachments of pipelines archived as libraries, by granary's
    /// names (`"rgba8unorm"`, `"bgra8unorm-srgb"`, … as in the pipelines script): attachment
    /// `i` takes `link_formats[i]`, or the last one. None: `rgba8unorm`.
    pub link_formats: *const *const c_char,
    /// How many names `link_formats` holds.
    pub link_format_count: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// A pipeline cache the application saved (`vkGetPipelineCacheData`), merged with the
    /// archive's; copied during `granary_loader_create`. A header for another device is
    /// refused (`GRANARY_ERROR_CACHE`). NULL: none.
    pub initial_cache: *const c_void,
    /// Bytes at `initial_cache`.
    pub initial_cache_size: usize,
    /// The after-update sidecar (UTF-8 path, NUL-terminated; docs/FORMAT.md §7): a file in the
    /// game's writable data holding this device's pipeline-cache data for an archive that has
    /// nothing for it (a driver update). Read here when present and written on this device
    /// (`granary_loader_sidecar_status`); written by `granary_warmup_refresh_sidecar` once
    /// every pipeline is compiled. NULL: none.
    pub sidecar_path: *const c_char,
    /// A use record to append to (UTF-8 path, NUL-terminated; docs/FORMAT.md §6), created when
    /// missing: every pipeline the loader creates from the archive once (a warm-up's at the
    /// first `granary_warmup_try_get` of its ticket), and every key or label asked for that
    /// the archive lacks, for `granary harvest --add-recorded`. The calling thread only queues;
    /// a thread of the recorder appends and syncs every 100 ms and when the last handle using
    /// the loader is destroyed. A file that is not a record is refused (`GRANARY_ERROR_IO`).
    /// NULL: none.
    pub record_path: *const c_char,
}

impl Default for GranaryLoaderOptions {
    fn default() -> Self {
        GranaryLoaderOptions {
            struct_size: 0,
            flags: 0,
            link_formats: std::ptr::null(),
            link_format_count: 0,
            reserved: 0,
            initial_cache: std::ptr::null(),
            initial_cache_size: 0,
            sidecar_path: std::ptr::null(),
            record_path: std::ptr::null(),
        }
    }
}

// SAFETY: repr(C), `struct_size: u32` first; integers and raw pointers.
unsafe impl Versioned for GranaryLoaderOptions {
    const NAME: &'static str = "GranaryLoaderOptions";
    const V1_SIZE: usize = std::mem::size_of::<GranaryLoaderOptions>();
}

/// Rust's options from C's.
///
/// # Safety
///
/// `o`'s pointers are NULL or point at what their fields say.
unsafe fn options_of(o: &GranaryLoaderOptions, function: &str) -> Result<LoaderOptions, Failure> {
    if o.flags & !LOADER_FLAGS != 0 {
        return Err(Failure::invalid(format!(
            "{function}: unknown GranaryLoaderOptions flag bits {:#x}",
            o.flags & !LOADER_FLAGS
        )));
    }
    let mut options = LoaderOptions::default();
    // SAFETY: the caller's promise.
    let names = unsafe { abi::strs_in(o.link_formats, o.link_format_count, function, "link_formats")? };
    if !names.is_empty() {
        options.link_formats = names
            .iter()
            .map(|n| {
                TextureFormat::from_name(n).ok_or_else(|| {
                    Failure::invalid(format!("{function}: unknown texture format '{n}' in link_formats"))
                })
            })
            .collect::<Result<_, _>>()?;
    }
    // SAFETY: the caller's promise.
    let cache = unsafe { abi::bytes_in(o.initial_cache, o.initial_cache_size, function, "initial_cache")? };
    options.initial_cache = (!cache.is_empty()).then(|| cache.to_vec());
    if !o.sidecar_path.is_null() {
        // SAFETY: the caller's promise: a NUL-terminated string.
        options.sidecar =
            Some(std::path::PathBuf::from(unsafe { abi::str_in(o.sidecar_path, function, "sidecar_path")? }));
    }
    if !o.record_path.is_null() {
        // SAFETY: the caller's promise: a NUL-terminated string.
        let path = std::path::PathBuf::from(unsafe { abi::str_in(o.record_path, function, "record_path")? });
        let recorder = granary_archive::record::Recorder::open(&path, Default::default())
            .map_err(|e| Failure::new(GranaryResult::GRANARY_ERROR_IO, format!("{function}: record_path: {e}")))?;
        options.recorder = Some(Arc::new(recorder));
    }
    let on = |flag: u32| o.flags & flag != 0;
    options.use_binaries = !on(GRANARY_LOADER_NO_BINARIES);
    options.fallback_compile = !on(GRANARY_LOADER_NO_FALLBACK_COMPILE);
    options.require_binaries = on(GRANARY_LOADER_REQUIRE_BINARIES);
    options.use_archive_cache = !on(GRANARY_LOADER_NO_ARCHIVE_CACHE);
    options.library_binaries = !on(GRANARY_LOADER_COMPILE_LIBRARY_PARTS);
    options.link_shared_library_binaries = on(GRANARY_LOADER_LINK_SHARED_LIBRARY_BINARIES);
    options.whole_dictionary_binaries = on(GRANARY_LOADER_WHOLE_DICTIONARY_BINARIES);
    Ok(options)
}

/// Makes a loader for `archive` on the application's device and writes its handle to `*out`.
/// `options` may be NULL (the defaults). The device's identity is compared with the archive's
/// device sections here, once: an archive built for another GPU or driver is compiled from its
/// SPIR-V (logged as a warning; `granary_loader_mismatch` says what differs) unless
/// `GRANARY_LOADER_NO_FALLBACK_COMPILE`. The loader keeps its own reference to the archive.
///
/// The application keeps its instance and device alive, and the allocation callbacks of
/// `device->allocator` (if any) valid and callable from any thread, until the loader, every
/// warm-up made from it, and every pipeline they made are destroyed.
///
/// Thread safety: any thread, any number at once (also on one archive).
///
/// # Safety
///
/// `archive` is NULL or a live handle; `device` is NULL or a `GranaryVulkanDevice` with
/// `struct_size` set whose handles and pointers are valid as its fields say; `options` is NULL
/// or a `GranaryLoaderOptions` with `struct_size` set; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_create(
    archive: *const GranaryArchive,
    device: *const GranaryVulkanDevice,
    options: *const GranaryLoaderOptions,
    out: *mut *mut GranaryLoader,
) -> GranaryResult {
    const F: &str = "granary_loader_create";
    guard(F, || {
        let out = Out::new(out, F, "out")?;
        // SAFETY: the caller's promise.
        let archive = unsafe { abi::handle(archive, F, "archive")? };
        // SAFETY: the caller's promise.
        let device = unsafe { abi::read_in(device, F)? };
        // SAFETY: the caller's promise.
        let options = unsafe { options_of(&read_optional(options, F)?, F)? };
        // SAFETY: the caller's promise: live handles as `device` says, kept alive as stated.
        let gpu = unsafe { gpu_of(&device, F)? };
        let loader = PipelineLoader::new(archive.archive.clone(), gpu, options)?;
        if let Some(m) = loader.mismatch() {
            log(
                GRANARY_LOG_WARN,
                &format!("{F}: the archive holds nothing for this device ({m}); compiling from SPIR-V"),
            );
        }
        match loader.sidecar() {
            SidecarStatus::Refused { why } => log(GRANARY_LOG_WARN, &format!("{F}: sidecar refused: {why}")),
            SidecarStatus::Loaded { bytes, .. } => {
                log(GRANARY_LOG_INFO, &format!("{F}: sidecar read: {bytes} bytes of pipeline-cache data merged"))
            }
            _ => {}
        }
        for (i, why) in loader.skipped_caches() {
            log(GRANARY_LOG_WARN, &format!("{F}: the archive's pipeline-cache blob {i} is not for this device: {why}"));
        }
        log(
            GRANARY_LOG_INFO,
            &format!(
                "{F}: {} pipelines; binaries for this device: {}; {} pipeline-cache blobs merged",
                archive.archive.len(),
                if loader.has_binaries() { "yes" } else { "no" },
                loader.cache_blobs()
            ),
        );
        let handle = Box::into_raw(Box::new(GranaryLoader { loader: Arc::new(loader) }));
        // SAFETY: checked non-NULL; writable by the caller's promise.
        unsafe { out.set(handle) };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Destroys the handle. Warm-ups made from it keep the loader alive until they are destroyed;
/// pipelines already handed out stay valid as long as their warm-up lives. NULL is ignored.
///
/// Thread safety: no other call on this handle may run at the same time or after.
///
/// # Safety
///
/// `loader` is NULL or a handle from `granary_loader_create` not destroyed before.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_destroy(loader: *mut GranaryLoader) {
    guard("granary_loader_destroy", || {
        if !loader.is_null() {
            // SAFETY: made by `Box::into_raw` in `granary_loader_create`, not destroyed before.
            drop(unsafe { Box::from_raw(loader) });
        }
        Ok(GranaryResult::GRANARY_OK)
    });
}

/// Why the archive holds nothing for this device ("built for X, this device is Y: …"), copied
/// into `buffer` (at most `capacity - 1` bytes and a NUL; `buffer` may be NULL when
/// `capacity` is 0), its full length to `*length` (may be NULL). Returns `GRANARY_OK` when
/// there is a mismatch, `GRANARY_NOT_FOUND` (and "") when the archive has a section for the
/// device.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `loader` is NULL or a live handle; `buffer` is NULL or `capacity` writable bytes; `length`
/// is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_mismatch(
    loader: *const GranaryLoader,
    buffer: *mut c_char,
    capacity: usize,
    length: *mut usize,
) -> GranaryResult {
    const F: &str = "granary_loader_mismatch";
    guard(F, || {
        // SAFETY: the caller's promise.
        let l = unsafe { abi::handle(loader, F, "loader")? };
        let text = l.loader.mismatch().map(|m| m.to_string());
        // SAFETY: the caller's promise.
        unsafe { abi::copy_str(text.as_deref().unwrap_or(""), buffer, capacity, length, F)? };
        Ok(if text.is_some() { GranaryResult::GRANARY_OK } else { GranaryResult::GRANARY_NOT_FOUND })
    })
}

/// `granary_loader_sidecar_status`: no sidecar configured.
pub const GRANARY_SIDECAR_OFF: u32 = 0;
/// `granary_loader_sidecar_status`: none at the path yet.
pub const GRANARY_SIDECAR_ABSENT: u32 = 1;
/// `granary_loader_sidecar_status`: read and merged into the loader's cache (written for this
/// archive).
pub const GRANARY_SIDECAR_LOADED: u32 = 2;
/// `granary_loader_sidecar_status`: read and merged, written for an earlier archive.
pub const GRANARY_SIDECAR_LOADED_OTHER_ARCHIVE: u32 = 3;
/// `granary_loader_sidecar_status`: present but refused (damaged, another device or driver);
/// the reason was logged as a warning when the loader was made. It never reached the driver.
pub const GRANARY_SIDECAR_REFUSED: u32 = 4;

/// What became of `GranaryLoaderOptions::sidecar_path` when the loader was made: one of
/// `GRANARY_SIDECAR_*`, and in `*bytes` (may be NULL) the bytes merged when loaded. Writes
/// `GRANARY_SIDECAR_OFF` for a NULL loader.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `loader` is NULL or a live handle; `bytes` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_sidecar_status(loader: *const GranaryLoader, bytes: *mut u64) -> u32 {
    crate::diagnostics::guard_value(GRANARY_SIDECAR_OFF, || {
        // SAFETY: the caller's promise.
        let Some(l) = (unsafe { loader.as_ref() }) else { return GRANARY_SIDECAR_OFF };
        let (status, n) = match l.loader.sidecar() {
            SidecarStatus::Absent => (GRANARY_SIDECAR_ABSENT, 0),
            SidecarStatus::Loaded { bytes, same_archive: true } => (GRANARY_SIDECAR_LOADED, *bytes),
            SidecarStatus::Loaded { bytes, .. } => (GRANARY_SIDECAR_LOADED_OTHER_ARCHIVE, *bytes),
            SidecarStatus::Refused { .. } => (GRANARY_SIDECAR_REFUSED, 0),
            _ => (GRANARY_SIDECAR_OFF, 0),
        };
        // SAFETY: the caller's promise.
        unsafe { abi::set_optional(bytes, n) };
        status
    })
}

/// Whether this device needs its sidecar written (1) or not (0): a sidecar is configured, the
/// archive holds nothing for this device, and no sidecar written for this archive here was
/// read. 0 for a NULL loader.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `loader` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_needs_sidecar(loader: *const GranaryLoader) -> u32 {
    crate::diagnostics::guard_value(0, || {
        // SAFETY: the caller's promise.
        unsafe { loader.as_ref() }.is_some_and(|l| l.loader.needs_sidecar()) as u32
    })
}

/// Whether the archive holds driver binaries this device can take (1) or not (0): with 0
/// every pipeline is compiled (with the archive's pipeline-cache data where it has some).
/// 0 for a NULL loader.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `loader` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_has_binaries(loader: *const GranaryLoader) -> u32 {
    crate::diagnostics::guard_value(0, || {
        // SAFETY: the caller's promise.
        unsafe { loader.as_ref() }.is_some_and(|l| l.loader.has_binaries()) as u32
    })
}

/// Latencies of one kind of creation: how many, median and 99th percentile in nanoseconds
/// (each the upper bound of its histogram bucket: within 19 %).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GranaryLatency {
    /// Creations counted.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
}

impl From<Latency> for GranaryLatency {
    fn from(l: Latency) -> Self {
        GranaryLatency { count: l.count, p50_ns: l.p50.as_nanos() as u64, p99_ns: l.p99.as_nanos() as u64 }
    }
}

/// What a loader has done so far (`granary_loader_stats`): a snapshot of relaxed counters
/// (two read together may be one creation apart).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GranaryLoaderStats {
    /// `sizeof(GranaryLoaderStats)`, set by the caller; granary sets it to the bytes it filled.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Pipelines created from the archive's driver binaries.
    pub from_binaries: u64,
    /// Pipelines compiled with a pipeline-cache hit.
    pub cache_hits: u64,
    /// Pipelines compiled (no binaries, no cache hit).
    pub compiled: u64,
    /// Creations that failed (not counting "not found" and "would compile").
    pub failed: u64,
    /// Lookups that found no pipeline.
    pub not_found: u64,
    /// Creations running now.
    pub in_flight: u64,
    /// Creations whose archived pipeline key differed from the create info's (compiled).
    pub key_mismatches: u64,
    /// Bytes of driver binaries held for sharing (NVIDIA's dictionary).
    pub shared_binary_bytes: u64,
    /// Creations from binaries.
    pub binaries_latency: GranaryLatency,
    /// Creations that hit the pipeline cache.
    pub cache_hit_latency: GranaryLatency,
    /// Creations that compiled.
    pub compile_latency: GranaryLatency,
}

// SAFETY: repr(C), `struct_size: u32` first; integers only.
unsafe impl Versioned for GranaryLoaderStats {
    const NAME: &'static str = "GranaryLoaderStats";
    const V1_SIZE: usize = std::mem::size_of::<GranaryLoaderStats>();
}

impl From<LoaderStats> for GranaryLoaderStats {
    fn from(s: LoaderStats) -> Self {
        GranaryLoaderStats {
            struct_size: 0,
            reserved: 0,
            from_binaries: s.from_binaries,
            cache_hits: s.cache_hits,
            compiled: s.compiled,
            failed: s.failed,
            not_found: s.not_found,
            in_flight: s.in_flight,
            key_mismatches: s.key_mismatches,
            shared_binary_bytes: s.shared_binary_bytes,
            binaries_latency: s.binaries_latency.into(),
            cache_hit_latency: s.cache_hit_latency.into(),
            compile_latency: s.compile_latency.into(),
        }
    }
}

/// Fills `stats` (its `struct_size` set by the caller) with the loader's statistics: a few
/// dozen relaxed atomic loads, no lock: cheap enough for every frame.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `loader` is NULL or a live handle; `stats` is NULL or a writable `GranaryLoaderStats`
/// with `struct_size` set.
#[no_mangle]
pub unsafe extern "C" fn granary_loader_stats(
    loader: *const GranaryLoader,
    stats: *mut GranaryLoaderStats,
) -> GranaryResult {
    const F: &str = "granary_loader_stats";
    guard(F, || {
        // SAFETY: the caller's promise.
        let l = unsafe { abi::handle(loader, F, "loader")? };
        // SAFETY: the caller's promise.
        unsafe { write_out(stats, l.loader.stats().into(), F)? };
        Ok(GranaryResult::GRANARY_OK)
    })
}
