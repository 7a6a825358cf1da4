//! `GranaryWarmup`: Rust's `Warmup` (progressive, deduplicated, prioritized creation) with
//! tickets as integers, `try_get` for the frame's path, `pump`, owned workers, `wait`,
//! progress and statistics.
//!
//! *Ownership:* a pipeline a ticket made is granary's: it lives until the warm-up is destroyed
//! (the application must not destroy it, and must wait for the GPU to stop using it first).

use crate::abi::{self, check_out, write_out, Out, Versioned};
use crate::device::{VkPipeline, VkPipelineLayout, VkResult};
use crate::diagnostics::{guard, log, GRANARY_LOG_INFO};
use crate::error::{Failure, GranaryResult};
use crate::loader::GranaryLoader;
use crate::tickets::Table;
use granary_archive::vulkan::vulkanalia::vk::{self, Handle as _};
use granary_archive::vulkan::{Priority, Source, Status, Ticket, Warmup, Workers};
use granary_archive::PipelineKey;
use std::ffi::c_char;
use std::sync::Mutex;
use std::time::Duration;

/// A ticket: one requested pipeline of one warm-up (`1..`); `GRANARY_TICKET_NONE` is none.
pub type GranaryTicket = u32;
/// No ticket (a label the archive does not hold, in `granary_warmup_request_labels`).
pub const GRANARY_TICKET_NONE: GranaryTicket = 0;

/// Background warm-up of what may be needed later.
pub const GRANARY_PRIORITY_LOW: u32 = 0;
/// The default priority.
pub const GRANARY_PRIORITY_NORMAL: u32 = 100;
/// Needed soon (the next level).
pub const GRANARY_PRIORITY_HIGH: u32 = 200;
/// A draw is waiting for it now.
pub const GRANARY_PRIORITY_CRITICAL: u32 = 300;

/// `GranaryPipelineInfo::source`: not created (pending, failed, absent).
pub const GRANARY_SOURCE_NONE: u32 = 0;
/// Created from the archive's driver binaries.
pub const GRANARY_SOURCE_BINARIES: u32 = 1;
/// Compiled with a pipeline-cache hit.
pub const GRANARY_SOURCE_CACHE_HIT: u32 = 2;
/// Compiled.
pub const GRANARY_SOURCE_COMPILED: u32 = 3;

/// A warm-up over one loader. Opaque.
///
/// Thread safety: every function taking a `const GranaryWarmup*` may run on any number of
/// threads at once (`pump` too); `granary_warmup_destroy` must not run while any other call on
/// the handle does.
pub struct GranaryWarmup {
    warmup: Warmup,
    tickets: Table<PipelineKey, Ticket>,
    workers: Mutex<Vec<Workers>>,
}

/// A requested pipeline as `granary_warmup_try_get` finds it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GranaryPipelineInfo {
    /// `sizeof(GranaryPipelineInfo)`, set by the caller; granary sets it to the bytes it filled.
    pub struct_size: u32,
    /// `GRANARY_SOURCE_*`: how it was made.
    pub source: u32,
    /// The pipeline (`VK_NULL_HANDLE` unless ready). Granary's: valid until the warm-up is
    /// destroyed; never destroy it yourself.
    pub pipeline: VkPipeline,
    /// The layout it was created with, to bind descriptor sets and push constants with
    /// (`VK_NULL_HANDLE` unless ready). Granary's, like the pipeline.
    pub layout: VkPipelineLayout,
    /// For a failure, the driver's `VkResult` where a driver call failed; else 0.
    pub vk_result: VkResult,
    /// 1 if it was archived as a library and linked here.
    pub linked: u32,
    /// Driver binaries handed to the driver.
    pub binaries: u32,
    /// `VkPipelineCreationFeedback::flags`.
    pub feedback: u32,
    /// Time inside the driver's creating calls, ns.
    pub driver_time_ns: u64,
    /// Time of the whole creation, ns.
    pub total_time_ns: u64,
    /// The pipeline's 128-bit key, low 64 bits.
    pub key_lo: u64,
    /// The key's high 64 bits.
    pub key_hi: u64,
    /// 0 as first made; 1 once `granary_warmup_optimize_linked`'s whole re-creation of a
    /// fast-linked pipeline replaced it (the earlier pipeline stays valid until the warm-up is
    /// destroyed). Since the second version of this struct.
    pub generation: u32,
    /// 1 if it was archived as a library and created instead as the archive's whole variant
    /// for its link formats (`granary harvest --whole-variants`), so not linked; else 0
    /// (always 0 from granary versions before this field, which was reserved).
    pub variant: u32,
}

impl Default for GranaryPipelineInfo {
    fn default() -> Self {
        GranaryPipelineInfo {
            struct_size: 0,
            source: GRANARY_SOURCE_NONE,
            pipeline: vk::Pipeline::null(),
            layout: vk::PipelineLayout::null(),
            vk_result: 0,
            linked: 0,
            binaries: 0,
            feedback: 0,
            driver_time_ns: 0,
            total_time_ns: 0,
            key_lo: 0,
            key_hi: 0,
            generation: 0,
            variant: 0,
        }
    }
}

// SAFETY: repr(C), `struct_size: u32` first; integers and handles (integers).
unsafe impl Versioned for GranaryPipelineInfo {
    const NAME: &'static str = "GranaryPipelineInfo";
    /// The first version ended at `key_hi`.
    const V1_SIZE: usize = std::mem::offset_of!(GranaryPipelineInfo, generation);
}

/// Where a warm-up's requests stand.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GranaryWarmupStats {
    /// `sizeof(GranaryWarmupStats)`, set by the caller; granary sets it to the bytes it filled.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Distinct requests made.
    pub requested: u64,
    /// Created.
    pub ready: u64,
    /// Failed.
    pub failed: u64,
    /// Not in the archive.
    pub absent: u64,
    /// Queued or being created (`requested - ready - failed - absent`).
    pub pending: u64,
    /// Requests whose first `try_get` found them not ready (each counted once): a frame that
    /// needed a pipeline before the warm-up had it.
    pub requested_too_late: u64,
    /// Being created now.
    pub in_flight: u64,
    /// Requests made again for a pipeline already requested.
    pub deduplicated: u64,
    /// Fast-linked pipelines made again whole and swapped in (`granary_warmup_optimize_linked`).
    /// Since the second version of this struct, like the two after it.
    pub optimized: u64,
    /// Of those re-creations, the ones that failed (the fast-linked pipeline stays).
    pub optimize_failed: u64,
    /// Re-creations queued or running.
    pub optimize_pending: u64,
}

// SAFETY: repr(C), `struct_size: u32` first; integers only.
unsafe impl Versioned for GranaryWarmupStats {
    const NAME: &'static str = "GranaryWarmupStats";
    /// The first version ended at `deduplicated`.
    const V1_SIZE: usize = std::mem::offset_of!(GranaryWarmupStats, optimized);
}

fn source_code(s: Source) -> u32 {
    match s {
        Source::Binaries => GRANARY_SOURCE_BINARIES,
        Source::CacheHit => GRANARY_SOURCE_CACHE_HIT,
        Source::Compiled => GRANARY_SOURCE_COMPILED,
    }
}

impl GranaryWarmup {
    fn ticket(&self, id: GranaryTicket, function: &str) -> Result<&Ticket, Failure> {
        self.tickets
            .get(id)
            .ok_or_else(|| Failure::invalid(format!("{function}: ticket {id} is not one this warm-up issued")))
    }

    /// The id of `key`'s request at `priority` (made now, or made again: the warm-up
    /// deduplicates and counts it and raises its priority).
    fn request(&self, key: PipelineKey, priority: Priority) -> Result<GranaryTicket, Failure> {
        let (id, new) = self.id_of(key, || self.warmup.request(key, priority))?;
        if !new {
            let _ = self.warmup.request(key, priority);
        }
        Ok(id)
    }

    /// The id of the ticket for `key` and whether it is new, `make` giving the ticket then.
    fn id_of(&self, key: PipelineKey, make: impl FnOnce() -> Ticket) -> Result<(GranaryTicket, bool), Failure> {
        self.tickets
            .insert(key, || Some(make()))
            .map_err(|e| Failure::new(GranaryResult::GRANARY_ERROR_UNSUPPORTED, e))?
            .ok_or_else(|| Failure::new(GranaryResult::GRANARY_ERROR_PANIC, "a ticket table entry without a value"))
    }
}

/// Makes a warm-up over `loader` (which it keeps alive) with an empty queue, and writes its
/// handle to `*out`. It spawns nothing: drive it with `granary_warmup_pump` from your job
/// system, or `granary_warmup_spawn_workers`.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `loader` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_create(
    loader: *const GranaryLoader,
    out: *mut *mut GranaryWarmup,
) -> GranaryResult {
    const F: &str = "granary_warmup_create";
    guard(F, || {
        let out = Out::new(out, F, "out")?;
        // SAFETY: the caller's promise.
        let l = unsafe { abi::handle(loader, F, "loader")? };
        let w = GranaryWarmup {
            warmup: Warmup::new(l.loader.clone()),
            tickets: Table::default(),
            workers: Mutex::new(Vec::new()),
        };
        // SAFETY: checked non-NULL; writable by the caller's promise.
        unsafe { out.set(Box::into_raw(Box::new(w))) };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Stops the warm-up's workers (each finishes the creation it is in), then destroys it and
/// every pipeline it made: wait until the GPU no longer uses them. NULL is ignored.
///
/// Thread safety: no other call on this handle may run at the same time or after.
///
/// # Safety
///
/// `warmup` is NULL or a handle from `granary_warmup_create` not destroyed before.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_destroy(warmup: *mut GranaryWarmup) {
    guard("granary_warmup_destroy", || {
        if !warmup.is_null() {
            // SAFETY: made by `Box::into_raw` in `granary_warmup_create`, not destroyed before.
            let w = unsafe { Box::from_raw(warmup) };
            // Workers first (dropping one joins its threads), then the pipelines.
            w.workers.lock().unwrap_or_else(|p| p.into_inner()).clear();
            drop(w);
        }
        Ok(GranaryResult::GRANARY_OK)
    });
}

/// Requests the pipeline with the 128-bit key `key_lo | key_hi << 64` (as `granary ls --keys
/// c` prints it) at `priority` (`GRANARY_PRIORITY_*` or any value: higher first) and writes
/// its ticket to `*ticket`. Asking again gives the same ticket (raising its priority if the
/// new one is higher). Never waits for a creation. A key the archive does not hold gets a
/// ticket that finishes as `GRANARY_NOT_FOUND`.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `ticket` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_request_key(
    warmup: *const GranaryWarmup,
    key_lo: u64,
    key_hi: u64,
    priority: u32,
    ticket: *mut GranaryTicket,
) -> GranaryResult {
    const F: &str = "granary_warmup_request_key";
    guard(F, || {
        let out = Out::new(ticket, F, "ticket")?;
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let id = w.request(PipelineKey(u128::from(key_lo) | u128::from(key_hi) << 64), Priority(priority))?;
        // SAFETY: checked non-NULL; writable by the caller's promise.
        unsafe { out.set(id) };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Requests the `count` pipelines labelled `labels` at `priority`, writing ticket `i` to
/// `tickets[i]` (`GRANARY_TICKET_NONE` for a label the archive does not hold). Returns
/// `GRANARY_NOT_FOUND` when some label was not found, else `GRANARY_OK`.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `labels` is NULL or `count` NUL-terminated strings;
/// `tickets` is NULL or `count` writable tickets.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_request_labels(
    warmup: *const GranaryWarmup,
    labels: *const *const c_char,
    count: u32,
    priority: u32,
    tickets: *mut GranaryTicket,
) -> GranaryResult {
    const F: &str = "granary_warmup_request_labels";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        // SAFETY: the caller's promise.
        let labels = unsafe { abi::strs_in(labels, count, F, "labels")? };
        if count > 0 && tickets.is_null() {
            return Err(Failure::null(F, "tickets"));
        }
        let archive = w.warmup.loader().archive().clone();
        let mut result = GranaryResult::GRANARY_OK;
        for (i, label) in labels.iter().enumerate() {
            let id = match archive.lookup_label(label)? {
                Some(p) => w.request(p.key(), Priority(priority))?,
                None => {
                    result = GranaryResult::GRANARY_NOT_FOUND;
                    GRANARY_TICKET_NONE
                }
            };
            // SAFETY: `i < count` and `tickets` holds `count` writable tickets (the caller's promise).
            unsafe { tickets.add(i).write_unaligned(id) };
        }
        Ok(result)
    })
}

/// Requests every pipeline whose label starts with `prefix` (every pipeline for `""`), in
/// label order, at `priority`. Writes the first `capacity` tickets to `tickets` (NULL allowed
/// when `capacity` is 0) and the number of labels matched to `*count` (may be NULL; a pipeline
/// with two matching labels is counted, and its ticket written, twice). Every match is
/// requested whatever `capacity` is; calling again with room for `*count` gives the same
/// tickets.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `prefix` is NULL or a NUL-terminated string; `tickets`
/// is NULL or `capacity` writable tickets; `count` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_request_prefix(
    warmup: *const GranaryWarmup,
    prefix: *const c_char,
    priority: u32,
    tickets: *mut GranaryTicket,
    capacity: usize,
    count: *mut usize,
) -> GranaryResult {
    const F: &str = "granary_warmup_request_prefix";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        // SAFETY: the caller's promise.
        let prefix = unsafe { abi::str_in(prefix, F, "prefix")? };
        if capacity > 0 && tickets.is_null() {
            return Err(Failure::invalid(format!("{F}: `tickets` is NULL but its capacity is {capacity}")));
        }
        let made = w.warmup.request_prefix(prefix, Priority(priority))?;
        for (i, t) in made.iter().enumerate() {
            let (id, _) = w.id_of(t.key(), || t.clone())?;
            if i < capacity {
                // SAFETY: `i < capacity` writable tickets (the caller's promise).
                unsafe { tickets.add(i).write_unaligned(id) };
            }
        }
        // SAFETY: the caller's promise.
        unsafe { abi::set_optional(count, made.len()) };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// After a driver update (`granary_loader_needs_sidecar`): requests every pipeline of the
/// archive at `priority` (a low one, so frames' requests go first) and arms the sidecar write,
/// which the worker or `granary_warmup_pump` caller that finishes the last request of this
/// warm-up performs (`granary_warmup_sidecar_saved` says how it went). `*requested` (may be
/// NULL) is the number of pipelines requested: 0 when nothing is needed. If everything
/// requested has already finished, the sidecar is written before this returns.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `requested` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_refresh_sidecar(
    warmup: *const GranaryWarmup,
    priority: u32,
    requested: *mut usize,
) -> GranaryResult {
    const F: &str = "granary_warmup_refresh_sidecar";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let made = w.warmup.refresh_sidecar(Priority(priority))?.unwrap_or_default();
        for t in &made {
            w.id_of(t.key(), || t.clone())?;
        }
        // SAFETY: the caller's promise.
        unsafe { abi::set_optional(requested, made.len()) };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// What the sidecar write armed by `granary_warmup_refresh_sidecar` came to: `GRANARY_OK` with
/// the bytes of cache data written in `*bytes` (may be NULL), `GRANARY_PENDING` while it has
/// not run, or the error of the write (this thread's last error says why).
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `bytes` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_sidecar_saved(warmup: *const GranaryWarmup, bytes: *mut u64) -> GranaryResult {
    const F: &str = "granary_warmup_sidecar_saved";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        match w.warmup.sidecar_saved() {
            None => Ok(GranaryResult::GRANARY_PENDING),
            Some(Ok(n)) => {
                // SAFETY: the caller's promise.
                unsafe { abi::set_optional(bytes, n) };
                Ok(GranaryResult::GRANARY_OK)
            }
            Some(Err(e)) => Err(Failure::from(&*e)),
        }
    })
}

/// `granary_warmup_optimize_linked`'s `priority` that turns the re-creation off.
pub const GRANARY_OPTIMIZE_OFF: u32 = u32::MAX;

/// Turns on (a `GRANARY_PRIORITY_*`, usually `GRANARY_PRIORITY_LOW`) or off
/// (`GRANARY_OPTIMIZE_OFF`) the optimized re-creation of fast-linked pipelines: a pipeline the
/// archive holds as a graphics pipeline library is fast-linked when requested; with this on,
/// each such request that becomes ready queues the same pipeline created whole (its link
/// formats known, so the driver optimizes across all its stages) at `priority`, behind every
/// request of a higher one, and `granary_warmup_try_get` returns that one once it is made
/// (`GranaryPipelineInfo::generation` 1). The fast-linked pipeline stays valid until the
/// warm-up is destroyed. Applies to requests that become ready after the call; re-creations
/// are counted in `GranaryWarmupStats::optimized` (not in `requested`).
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_optimize_linked(warmup: *const GranaryWarmup, priority: u32) -> GranaryResult {
    const F: &str = "granary_warmup_optimize_linked";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        w.warmup.optimize_linked((priority != GRANARY_OPTIMIZE_OFF).then_some(Priority(priority)));
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Raises a queued request to `priority` (a lower one, or a request running or done, is left
/// as it is). Never waits.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_boost(
    warmup: *const GranaryWarmup,
    ticket: GranaryTicket,
    priority: u32,
) -> GranaryResult {
    const F: &str = "granary_warmup_boost";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        w.warmup.boost(w.ticket(ticket, F)?, Priority(priority));
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Where the request stands, for the frame's path: never waits, never creates, takes no lock
/// (an atomic load and a few once-cell reads). Returns `GRANARY_OK` (ready: `info` holds the
/// pipeline and its layout), `GRANARY_PENDING` (queued or being created: skip the draw or use
/// your fallback, perhaps `granary_warmup_boost` it), `GRANARY_NOT_FOUND` (not in the archive)
/// or the failure's `GRANARY_ERROR_*` kind (`info->vk_result` holds its `VkResult`;
/// `granary_warmup_failure` its message). A failure of the pipeline is not recorded as the
/// thread's last error; a bad argument is. `info` may be NULL (the status alone).
///
/// Thread safety: any thread, any number at once, also while other threads pump.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `info` is NULL or a writable `GranaryPipelineInfo` with
/// `struct_size` set.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_try_get(
    warmup: *const GranaryWarmup,
    ticket: GranaryTicket,
    info: *mut GranaryPipelineInfo,
) -> GranaryResult {
    const F: &str = "granary_warmup_try_get";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        if !info.is_null() {
            // SAFETY: the caller's promise.
            unsafe { check_out(info, F)? };
        }
        let t = w.ticket(ticket, F)?;
        let key = t.key().0;
        let mut value =
            GranaryPipelineInfo { key_lo: key as u64, key_hi: (key >> 64) as u64, ..GranaryPipelineInfo::default() };
        let result = match w.warmup.try_get(t) {
            Status::Ready(l) => {
                value.source = source_code(l.source);
                value.pipeline = l.pipeline.handle();
                value.layout = l.pipeline.layout().unwrap_or_else(vk::PipelineLayout::null);
                value.linked = u32::from(l.linked);
                value.binaries = u32::try_from(l.binaries).unwrap_or(u32::MAX);
                value.feedback = l.feedback;
                value.driver_time_ns = l.driver_time.as_nanos() as u64;
                value.total_time_ns = l.total_time.as_nanos() as u64;
                value.generation = l.generation;
                value.variant = u32::from(l.variant);
                GranaryResult::GRANARY_OK
            }
            Status::Pending => GranaryResult::GRANARY_PENDING,
            Status::Absent => GranaryResult::GRANARY_NOT_FOUND,
            Status::Failed(e) => {
                let f = Failure::from(&*e);
                value.vk_result = f.vk_result;
                f.result
            }
        };
        if !info.is_null() {
            // SAFETY: the caller's promise.
            unsafe { write_out(info, value, F)? };
        }
        Ok(result)
    })
}

/// What happened to a request, for a person: the failure's message (or why it is absent)
/// copied into `buffer` (at most `capacity - 1` bytes and a NUL; `buffer` may be NULL when
/// `capacity` is 0), its full length to `*length` (may be NULL); "" while pending or when
/// ready. Returns what `granary_warmup_try_get` would.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `buffer` is NULL or `capacity` writable bytes; `length`
/// is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_failure(
    warmup: *const GranaryWarmup,
    ticket: GranaryTicket,
    buffer: *mut c_char,
    capacity: usize,
    length: *mut usize,
) -> GranaryResult {
    const F: &str = "granary_warmup_failure";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let t = w.ticket(ticket, F)?;
        let (result, text) = match w.warmup.try_get(t) {
            Status::Ready(_) => (GranaryResult::GRANARY_OK, String::new()),
            Status::Pending => (GranaryResult::GRANARY_PENDING, String::new()),
            Status::Absent => {
                (GranaryResult::GRANARY_NOT_FOUND, format!("no pipeline with key {} in the archive", t.key().to_hex()))
            }
            Status::Failed(e) => (Failure::from(&*e).result, e.to_string()),
        };
        // SAFETY: the caller's promise.
        unsafe { abi::copy_str(&text, buffer, capacity, length, F)? };
        Ok(result)
    })
}

/// Runs queued creations, highest priority first, until the queue is empty or `budget_ns`
/// nanoseconds have passed, checked after each creation (one runs even with a budget of 0;
/// the last may end past the budget). Spawns nothing. Writes the number of requests it
/// finished to `*finished` (may be NULL). Returns `GRANARY_PENDING` while requests are still
/// queued, `GRANARY_OK` when none is (others may still be running on other threads).
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `finished` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_pump(
    warmup: *const GranaryWarmup,
    budget_ns: u64,
    finished: *mut usize,
) -> GranaryResult {
    const F: &str = "granary_warmup_pump";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let p = w.warmup.pump(Duration::from_nanos(budget_ns));
        // SAFETY: the caller's promise.
        unsafe { abi::set_optional(finished, p.finished) };
        Ok(if p.more { GranaryResult::GRANARY_PENDING } else { GranaryResult::GRANARY_OK })
    })
}

/// Starts `threads` (at least 1) worker threads owned by the warm-up that run its queue until
/// `granary_warmup_stop_workers` or `granary_warmup_destroy`; each waits for work without
/// spinning. Calling it again adds threads.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_spawn_workers(warmup: *const GranaryWarmup, threads: u32) -> GranaryResult {
    const F: &str = "granary_warmup_spawn_workers";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let workers = w
            .warmup
            .spawn_workers(threads as usize)
            .map_err(|e| Failure::new(GranaryResult::GRANARY_ERROR_IO, format!("{F}: cannot start a thread: {e}")))?;
        w.workers.lock().unwrap_or_else(|p| p.into_inner()).push(workers);
        log(GRANARY_LOG_INFO, &format!("{F}: {} worker threads started", threads.max(1)));
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Stops every worker thread (each finishes the creation it is in) and waits for them; queued
/// requests stay queued for `granary_warmup_pump` or new workers.
///
/// Thread safety: any thread, any number at once (it blocks until the workers have stopped).
///
/// # Safety
///
/// `warmup` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_stop_workers(warmup: *const GranaryWarmup) -> GranaryResult {
    const F: &str = "granary_warmup_stop_workers";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let stopping = std::mem::take(&mut *w.workers.lock().unwrap_or_else(|p| p.into_inner()));
        drop(stopping); // joins, outside the lock
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Waits until each of the `count` tickets has finished (ready, failed or absent), or until
/// `timeout_ns` nanoseconds have passed: `GRANARY_OK` or `GRANARY_TIMEOUT`. `tickets` NULL with
/// `count` 0 waits for every request made so far. Creations must run meanwhile (workers, or
/// `granary_warmup_pump` on other threads). For loading screens: never on a frame's path.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `tickets` is NULL or `count` readable tickets.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_wait(
    warmup: *const GranaryWarmup,
    tickets: *const GranaryTicket,
    count: usize,
    timeout_ns: u64,
) -> GranaryResult {
    const F: &str = "granary_warmup_wait";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let chosen: Vec<Ticket> = if count == 0 {
            w.tickets.all().into_iter().cloned().collect()
        } else {
            if tickets.is_null() {
                return Err(Failure::invalid(format!("{F}: `tickets` is NULL but its count is {count}")));
            }
            // SAFETY: `count` readable tickets (the caller's promise).
            let ids = unsafe { std::slice::from_raw_parts(tickets, count) };
            ids.iter().map(|id| w.ticket(*id, F).cloned()).collect::<Result<_, _>>()?
        };
        let done = w.warmup.wait(&chosen, Duration::from_nanos(timeout_ns));
        Ok(if done { GranaryResult::GRANARY_OK } else { GranaryResult::GRANARY_TIMEOUT })
    })
}

/// Fills `stats` (its `struct_size` set by the caller) with where the requests stand and the
/// warm-up's counters: relaxed atomic loads, no lock: cheap enough for every frame.
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `stats` is NULL or a writable `GranaryWarmupStats` with
/// `struct_size` set.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_stats(
    warmup: *const GranaryWarmup,
    stats: *mut GranaryWarmupStats,
) -> GranaryResult {
    const F: &str = "granary_warmup_stats";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        let s = w.warmup.stats();
        let p = s.progress;
        let value = GranaryWarmupStats {
            struct_size: 0,
            reserved: 0,
            requested: p.requested,
            ready: p.ready,
            failed: p.failed,
            absent: p.absent,
            pending: p.pending(),
            requested_too_late: s.requested_too_late,
            in_flight: s.in_flight,
            deduplicated: s.deduplicated,
            optimized: s.optimized,
            optimize_failed: s.optimize_failed,
            optimize_pending: s.optimize_pending,
        };
        // SAFETY: the caller's promise.
        unsafe { write_out(stats, value, F)? };
        Ok(GranaryResult::GRANARY_OK)
    })
}

/// Fills `stats` (its `struct_size` set by the caller) with the statistics of the loader the
/// warm-up creates with, as `granary_loader_stats` does (the warm-up keeps the loader alive,
/// so this works after `granary_loader_destroy`).
///
/// Thread safety: any thread, any number at once.
///
/// # Safety
///
/// `warmup` is NULL or a live handle; `stats` is NULL or a writable `GranaryLoaderStats` with
/// `struct_size` set.
#[no_mangle]
pub unsafe extern "C" fn granary_warmup_loader_stats(
    warmup: *const GranaryWarmup,
    stats: *mut crate::loader::GranaryLoaderStats,
) -> GranaryResult {
    const F: &str = "granary_warmup_loader_stats";
    guard(F, || {
        // SAFETY: the caller's promise.
        let w = unsafe { abi::handle(warmup, F, "warmup")? };
        // SAFETY: the caller's promise.
        unsafe { write_out(stats, w.warmup.loader().stats().into(), F)? };
        Ok(GranaryResult::GRANARY_OK)
    })
}
