//! Pipeline binaries (`VK_KHR_pipeline_binary`): capture from a pipeline, read their keys and
//! bytes, create them from archived bytes, and the pipeline key of a create info.
//!
//! # Object lifetime rules
//!
//! - At capture, binaries live only inside [`Gpu::capture`]: created from the pipeline,
//!   their keys and bytes copied out, destroyed by a guard on every path. The pipeline's
//!   captured data is not released separately: the pipeline itself is destroyed right after
//!   (`vkDestroyPipeline` frees it), so a failing `vkReleaseCapturedPipelineDataKHR` can never
//!   throw away binaries already copied.
//! - [`Binaries`] made from archived data ([`Gpu::binaries_from_data`]) are destroyed when
//!   dropped, after every pipeline made from them exists (a pipeline does not reference its
//!   binaries once created).
//! - Binaries, and the pipelines `PipelineCreateInfo::create` makes, are created and destroyed
//!   with the device's allocation callbacks ([`Gpu::allocator`]), the same set for both.
//!
//! # External synchronization
//!
//! `vkCreatePipelineBinariesKHR`, `vkGetPipelineBinaryDataKHR`, `vkGetPipelineKeyKHR`: no
//! externally synchronized parameter. `vkDestroyPipelineBinaryKHR`: the binary is owned by one
//! value ([`Binaries`] or the capture guard) and destroyed only in its `Drop`.

use super::device::{key_bytes, Gpu};
use super::error::VulkanError;
use crate::blob::Blob;
use std::ffi::c_void;
use std::sync::Arc;
use vulkanalia::prelude::v1_3::*;
use vulkanalia::vk::KhrPipelineBinaryExtensionDeviceCommands;

/// `(key, data)` of one pipeline binary, as the driver returned it (the bytes interned by
/// content: see [`BlobInterner`]).
pub type RawBinary = (Vec<u8>, Arc<Blob>);

/// Turns a binary's bytes into the one shared in-memory copy of those bytes. NVIDIA returns
/// the same dictionary binary (hundreds of KB) with every pipeline after its first few hundred
/// compiles: the bytes are read into a reused per-thread buffer and copied only when new.
#[cfg(feature = "capture")]
pub type BlobInterner<'a> = &'a (dyn Fn(&[u8]) -> Arc<Blob> + Sync);

/// Most binaries one pipeline may have (the archive's per-set cap).
const MAX_BINARIES: usize = crate::device::MAX_BINARIES_PER_SET;
/// Times `vkCreatePipelineBinariesKHR` is asked again after `VK_INCOMPLETE`.
#[cfg(feature = "capture")]
const BINARY_COUNT_TRIES: usize = 8;
/// Largest binary granary reads from a driver.
#[cfg(feature = "capture")]
const MAX_BINARY_BYTES: usize = 64 << 20;

#[cfg(feature = "capture")]
thread_local! {
    /// The buffer `vkGetPipelineBinaryDataKHR` writes into, reused by every capture on the
    /// thread (no allocation per binary, so no allocator churn of large blocks).
    static BINARY_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What capturing binaries on one device fetched and how long it took, summed over threads
/// ([`Gpu::capture_stats`]).
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CaptureStats {
    /// Seconds in `vkGetPipelineKeyKHR` of captured pipelines' create infos.
    pub key_seconds: f64,
    /// Seconds from a captured pipeline's creation to its binaries in memory:
    /// `vkCreatePipelineBinariesKHR`, `vkGetPipelineBinaryDataKHR` (size and data), copying
    /// and interning the bytes, destroying the binaries.
    pub capture_seconds: f64,
    /// Binaries whose bytes were fetched.
    pub fetched: u64,
    /// With [`OpenOptions::reuse_binaries_by_key`](super::OpenOptions::reuse_binaries_by_key):
    /// binaries whose bytes were not fetched (a binary of the same key and size had been
    /// fetched on this device before, and its bytes were used).
    pub fetches_skipped: u64,
    /// Fetched binaries whose key and size equal an earlier binary's on this device but whose
    /// bytes differ (NVIDIA 580: about 28 % of a 2,000-pipeline harvest's binaries), so a
    /// binary key does not name its bytes and reusing by key
    /// ([`OpenOptions::reuse_binaries_by_key`](super::OpenOptions::reuse_binaries_by_key)) is
    /// not exact.
    pub key_mismatches: u64,
}

impl Gpu {
    /// What capturing binaries on this device has fetched and timed so far.
    pub fn capture_stats(&self) -> CaptureStats {
        use std::sync::atomic::Ordering::Relaxed;
        let c = &self.capture;
        CaptureStats {
            key_seconds: c.key_nanos.load(Relaxed) as f64 / 1e9,
            capture_seconds: c.capture_nanos.load(Relaxed) as f64 / 1e9,
            fetched: c.fetched.load(Relaxed),
            fetches_skipped: c.skipped.load(Relaxed),
            key_mismatches: c.mismatches.load(Relaxed),
        }
    }
}

/// Pipeline binaries made from archived data ([`Gpu::binaries_from_data`]), destroyed on
/// drop (a pipeline created from them does not need them afterwards).
///
/// Thread safety: `Send + Sync`; the handles are only read by pipeline creation.
pub struct Binaries {
    gpu: Arc<Gpu>,
    handles: Vec<vk::PipelineBinaryKHR>,
}

impl Binaries {
    /// The handles, in the driver's order.
    pub fn handles(&self) -> &[vk::PipelineBinaryKHR] {
        &self.handles
    }
}

impl Drop for Binaries {
    fn drop(&mut self) {
        for h in &self.handles {
            if !h.is_null() {
                // SAFETY: the binaries are owned by this value; pipeline creation reads them
                // only during the call. The callbacks are the ones they were created with.
                unsafe { self.gpu.device.destroy_pipeline_binary_khr(*h, self.gpu.allocator()) }
            }
        }
    }
}

/// Destroys pipeline binaries when the capturing call ends.
#[cfg(feature = "capture")]
struct BinaryGuard<'a> {
    gpu: &'a Gpu,
    handles: Vec<vk::PipelineBinaryKHR>,
}

#[cfg(feature = "capture")]
impl Drop for BinaryGuard<'_> {
    fn drop(&mut self) {
        for h in &self.handles {
            if !h.is_null() {
                // SAFETY: the binaries are local to the capturing call, created with these
                // callbacks (`binaries_of`).
                unsafe { self.gpu.device.destroy_pipeline_binary_khr(*h, self.gpu.allocator()) }
            }
        }
    }
}

/// The create infos `vkGetPipelineKeyKHR` takes, through `VkPipelineCreateInfoKHR::pNext`,
/// with what creating one of an application's own needs: its chain and its create call.
pub(super) trait PipelineCreateInfo: Copy {
    /// The create call, for messages.
    const CALL: &'static str;
    /// `pNext`.
    fn next(&self) -> *const std::ffi::c_void;
    /// This create info with `pNext` replaced.
    fn with_next(self, next: *const std::ffi::c_void) -> Self;
    /// This create info with `VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT` added
    /// to its `flags`.
    fn with_fail_on_compile(&self) -> Self;
    /// `vkCreate*Pipelines` of this one create info, with `allocator` (the device's
    /// [`Gpu::allocator`], which the pipeline is destroyed with).
    ///
    /// # Safety
    ///
    /// What that call requires of `self` (a valid create info and chain whose objects are
    /// alive), of `cache` and of `allocator`.
    unsafe fn create(
        self,
        device: &Device,
        cache: vk::PipelineCache,
        allocator: Option<&vk::AllocationCallbacks>,
    ) -> vulkanalia::VkSuccessResult<Vec<vk::Pipeline>>;
}

/// `PipelineCreateInfo` for a create info type whose `next` and `flags` are its chain and
/// create flags, created by `$create` (`$device`, `$cache`, `$info`, `$allocator` bound for
/// it).
macro_rules! pipeline_create_info {
    ($t:ty, $call:literal, |$device:ident, $cache:ident, $info:ident, $allocator:ident| $create:expr) => {
        impl PipelineCreateInfo for $t {
            const CALL: &'static str = $call;
            fn next(&self) -> *const std::ffi::c_void {
                self.next
            }
            fn with_next(self, next: *const std::ffi::c_void) -> Self {
                Self { next, ..self }
            }
            fn with_fail_on_compile(&self) -> Self {
                Self { flags: self.flags | vk::PipelineCreateFlags::FAIL_ON_PIPELINE_COMPILE_REQUIRED, ..*self }
            }
            unsafe fn create(
                self,
                $device: &Device,
                $cache: vk::PipelineCache,
                $allocator: Option<&vk::AllocationCallbacks>,
            ) -> vulkanalia::VkSuccessResult<Vec<vk::Pipeline>> {
                let $info = self;
                $create
            }
        }
    };
}

pipeline_create_info!(vk::GraphicsPipelineCreateInfo, "vkCreateGraphicsPipelines", |device, cache, info, allocator| {
    // SAFETY: the caller's promise (the trait method's contract).
    unsafe { device.create_graphics_pipelines(cache, &[info], allocator) }
});

pipeline_create_info!(vk::ComputePipelineCreateInfo, "vkCreateComputePipelines", |device, cache, info, allocator| {
    // SAFETY: the caller's promise (the trait method's contract).
    unsafe { device.create_compute_pipelines(cache, &[info], allocator) }
});

pipeline_create_info!(
    vk::RayTracingPipelineCreateInfoKHR,
    "vkCreateRayTracingPipelinesKHR",
    |device, cache, info, allocator| {
        use vulkanalia::vk::KhrRayTracingPipelineExtensionDeviceCommands;
        // SAFETY: the caller's promise (the trait method's contract), which includes that the
        // device has `VK_KHR_ray_tracing_pipeline` enabled (a ray-tracing create info is built only
        // after `check_native` found `rayTracingPipeline` enabled). No deferred operation: granary's
        // own threads are its parallelism.
        unsafe { device.create_ray_tracing_pipelines_khr(vk::DeferredOperationKHR::null(), cache, &[info], allocator) }
    }
);

impl Gpu {
    /// `vkGetPipelineKeyKHR` of `info`: the key that decides which binaries are valid for it.
    pub(super) fn pipeline_key_of<T: PipelineCreateInfo>(&self, info: &T) -> Result<Vec<u8>, VulkanError> {
        let create = vk::PipelineCreateInfoKHR { next: (info as *const T as *mut T).cast(), ..Default::default() };
        let mut key = vk::PipelineBinaryKeyKHR::default();
        // SAFETY: the extension is enabled (callers check `self.binaries`); `create` points at
        // `info`, a graphics, compute or ray-tracing create info (the trait admits only those) whose chain
        // the caller keeps alive for this call; `key` lives until return.
        unsafe { self.device.get_pipeline_key_khr(Some(&create), &mut key) }
            .map_err(|e| VulkanError::call("vkGetPipelineKeyKHR", e))?;
        key_bytes(&key, "vkGetPipelineKeyKHR")
    }

    /// Creates pipeline binaries from `(key, data)` pairs in the driver's order (the order
    /// `vkCreatePipelineBinariesKHR` returned them at capture), to hand to
    /// [`CreateMode::Keep`](super::CreateMode::Keep) through [`CheckedBinaries`](super::pipeline::CheckedBinaries).
    ///
    /// # Safety
    ///
    /// Drivers do not validate binary data. Every `data` must be bytes this device's driver
    /// returned from `vkGetPipelineBinaryDataKHR` under that `key` (for an archive: bytes
    /// checked against their content hash, from a device section whose identity and global
    /// key equal this device's), never unchecked file bytes.
    pub unsafe fn binaries_from_data(self: &Arc<Self>, binaries: &[(&[u8], &[u8])]) -> Result<Binaries, VulkanError> {
        if !self.binaries {
            return Err(VulkanError::Unsupported {
                device: self.info.identity.device_name.clone(),
                message: "VK_KHR_pipeline_binary is not enabled".into(),
            });
        }
        if binaries.is_empty() || binaries.len() > MAX_BINARIES {
            return Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("{} binaries", binaries.len())));
        }
        let mut keys = Vec::with_capacity(binaries.len());
        let mut data = Vec::with_capacity(binaries.len());
        for (key, bytes) in binaries {
            if key.is_empty() || key.len() > crate::device::MAX_BINARY_KEY || bytes.is_empty() {
                return Err(VulkanError::call("vkCreatePipelineBinariesKHR", "empty or oversized key, or empty data"));
            }
            let mut bytes32 = [0u8; 32];
            bytes32[..key.len()].copy_from_slice(key);
            keys.push(vk::PipelineBinaryKeyKHR {
                key_size: key.len() as u32,
                key: bytes32.into(),
                ..Default::default()
            });
            // The driver only reads `data` (the structure's pointer is `*mut` in the C API).
            data.push(vk::PipelineBinaryDataKHR { data_size: bytes.len(), data: bytes.as_ptr() as *mut c_void });
        }
        super::probe::observe_binaries(binaries);
        let keys_and_data = vk::PipelineBinaryKeysAndDataKHR {
            binary_count: binaries.len() as u32,
            pipeline_binary_keys: keys.as_ptr(),
            pipeline_binary_data: data.as_ptr(),
        };
        let create = vk::PipelineBinaryCreateInfoKHR { keys_and_data_info: &keys_and_data, ..Default::default() };
        let mut raw = vec![vk::PipelineBinaryKHR::null(); binaries.len()];
        let mut handles = vk::PipelineBinaryHandlesInfoKHR {
            pipeline_binary_count: raw.len() as u32,
            pipeline_binaries: raw.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: `keys`, `data` (pointing into the caller's byte slices, valid per this
        // function's contract), `raw` and the info structures live until the call returns;
        // `raw` has room for every handle.
        let r = unsafe { self.device.create_pipeline_binaries_khr(&create, self.allocator(), &mut handles) };
        let made = (handles.pipeline_binary_count as usize).min(raw.len());
        raw.truncate(made);
        let out = Binaries { gpu: self.clone(), handles: raw };
        match r {
            Ok(vk::SuccessCode::SUCCESS) if made == binaries.len() => Ok(out),
            Ok(other) => Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("{other:?}, {made} made"))),
            Err(e) => Err(VulkanError::call("vkCreatePipelineBinariesKHR", e)),
        }
    }

    /// The pipeline's binaries (`VK_KHR_pipeline_binary`), copied out; the binaries are
    /// destroyed before returning (the caller destroys the pipeline, which frees its captured
    /// data). Takes the raw handle so this module does not depend on `pipeline`.
    ///
    /// # Safety
    ///
    /// `pipeline` is a live pipeline of this device, created with `CAPTURE_DATA`, that the
    /// caller keeps alive (and does not destroy) until this returns.
    #[cfg(feature = "capture")]
    pub(super) unsafe fn capture(
        &self,
        pipeline: vk::Pipeline,
        intern: BlobInterner<'_>,
    ) -> Result<Vec<RawBinary>, VulkanError> {
        if !self.binaries {
            return Ok(Vec::new());
        }
        let start = std::time::Instant::now();
        // SAFETY: the caller's contract, passed on.
        let r = unsafe { self.capture_timed(pipeline, intern) };
        self.capture.capture_nanos.fetch_add(start.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
        r
    }

    /// [`capture`](Self::capture) of a binaries device, untimed.
    ///
    /// # Safety
    ///
    /// As [`capture`](Self::capture).
    #[cfg(feature = "capture")]
    unsafe fn capture_timed(
        &self,
        pipeline: vk::Pipeline,
        intern: BlobInterner<'_>,
    ) -> Result<Vec<RawBinary>, VulkanError> {
        let create = vk::PipelineBinaryCreateInfoKHR { pipeline, ..Default::default() };
        // SAFETY: the caller's contract: a live pipeline created with CAPTURE_DATA.
        unsafe { self.binaries_of(&create, intern) }
    }

    /// The experiment of [`OpenOptions::capture_from_internal_cache`](super::OpenOptions::capture_from_internal_cache):
    /// the binaries of `info` from the driver's internal cache, copied out (timed as a
    /// capture). `VK_PIPELINE_BINARY_MISSING_KHR` is an error naming it.
    #[cfg(feature = "capture")]
    pub(super) fn capture_from_internal_cache<T: PipelineCreateInfo>(
        &self,
        info: &T,
        intern: BlobInterner<'_>,
    ) -> Result<Vec<RawBinary>, VulkanError> {
        let start = std::time::Instant::now();
        let create_info = vk::PipelineCreateInfoKHR { next: (info as *const T as *mut T).cast(), ..Default::default() };
        let create = vk::PipelineBinaryCreateInfoKHR { pipeline_create_info: &create_info, ..Default::default() };
        // SAFETY: `create_info` points at `info`, a graphics or compute create info whose chain
        // the caller keeps alive for this call (the trait admits only those); no pipeline
        // handle is passed.
        let r = unsafe { self.binaries_of(&create, intern) };
        self.capture.capture_nanos.fetch_add(start.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
        r
    }

    /// `vkCreatePipelineBinariesKHR(create)` (count, then handles), each binary's bytes copied
    /// out, the binaries destroyed.
    ///
    /// # Safety
    ///
    /// `create` is a valid `VkPipelineBinaryCreateInfoKHR` whose pointers and pipeline are
    /// alive for this call.
    #[cfg(feature = "capture")]
    unsafe fn binaries_of(
        &self,
        create: &vk::PipelineBinaryCreateInfoKHR,
        intern: BlobInterner<'_>,
    ) -> Result<Vec<RawBinary>, VulkanError> {
        let create = *create;
        // Count, then handles; a driver whose count grew in between (the internal cache of the
        // experiment, shared by every thread) says VK_INCOMPLETE: ask again, a few times.
        for _ in 0..BINARY_COUNT_TRIES {
            let mut handles = vk::PipelineBinaryHandlesInfoKHR::default();
            // SAFETY: `create` is valid with everything it points at alive (the function's
            // contract); a null `pipeline_binaries` asks for the count.
            let r = unsafe { self.device.create_pipeline_binaries_khr(&create, self.allocator(), &mut handles) };
            let code = r.map_err(|e| VulkanError::call("vkCreatePipelineBinariesKHR (count)", e))?;
            if code == vk::SuccessCode::PIPELINE_BINARY_MISSING_KHR {
                return Err(VulkanError::call(
                    "vkCreatePipelineBinariesKHR",
                    "VK_PIPELINE_BINARY_MISSING_KHR: the driver's internal cache does not hold this pipeline",
                ));
            }
            let count = handles.pipeline_binary_count as usize;
            if count == 0 || count > MAX_BINARIES {
                return Err(VulkanError::call(
                    "vkCreatePipelineBinariesKHR",
                    format!("driver reported {count} binaries"),
                ));
            }
            let mut raw = vec![vk::PipelineBinaryKHR::null(); count];
            handles.pipeline_binaries = raw.as_mut_ptr();
            // SAFETY: `raw` has room for `pipeline_binary_count` handles and lives until return.
            let r = unsafe { self.device.create_pipeline_binaries_khr(&create, self.allocator(), &mut handles) };
            // Only the slots the driver says it filled are binaries (the rest stay null); the
            // guard destroys them on every path.
            raw.truncate((handles.pipeline_binary_count as usize).min(count));
            let guard = BinaryGuard { gpu: self, handles: raw };
            match r {
                Ok(vk::SuccessCode::SUCCESS) => {}
                Ok(vk::SuccessCode::INCOMPLETE) => continue,
                Ok(other) => {
                    return Err(VulkanError::call("vkCreatePipelineBinariesKHR", format!("{other:?}")));
                }
                Err(e) => return Err(VulkanError::call("vkCreatePipelineBinariesKHR", e)),
            }
            if guard.handles.len() != count {
                return Err(VulkanError::call(
                    "vkCreatePipelineBinariesKHR",
                    format!("driver made {} of {count} binaries", guard.handles.len()),
                ));
            }
            let mut out = Vec::with_capacity(count);
            for &binary in &guard.handles {
                out.push(self.binary_data(binary, intern)?);
            }
            return Ok(out);
        }
        Err(VulkanError::call(
            "vkCreatePipelineBinariesKHR",
            format!("VK_INCOMPLETE {BINARY_COUNT_TRIES} times: the number of binaries kept changing"),
        ))
    }

    #[cfg(feature = "capture")]
    fn binary_data(&self, binary: vk::PipelineBinaryKHR, intern: BlobInterner<'_>) -> Result<RawBinary, VulkanError> {
        let info = vk::PipelineBinaryDataInfoKHR { pipeline_binary: binary, ..Default::default() };
        let mut key = vk::PipelineBinaryKeyKHR::default();
        let mut size = 0usize;
        let get = self.device.commands().get_pipeline_binary_data_khr;
        // SAFETY: the raw command is called with a valid key pointer on both calls (a null key
        // on the size query crashes some drivers); a null data pointer asks for the size.
        let r = unsafe { get(self.device.handle(), &info, &mut key, &mut size, std::ptr::null_mut()) };
        if r != vk::Result::SUCCESS {
            return Err(VulkanError::call("vkGetPipelineBinaryDataKHR (size)", r));
        }
        if size == 0 || size > MAX_BINARY_BYTES {
            return Err(VulkanError::call("vkGetPipelineBinaryDataKHR", format!("driver reported {size} bytes")));
        }
        use std::sync::atomic::Ordering::Relaxed;
        let key = key_bytes(&key, "vkGetPipelineBinaryDataKHR")?;
        // The specification asks a key to be "large enough to uniquely identify a pipeline
        // binary" (a should, not a must), and NVIDIA returns equal keys and sizes with other
        // bytes: so by default every binary is fetched, and compared with the first of its key
        // and size (differences counted). Only with `reuse_by_key` is a binary of a key and
        // size seen before on this device not fetched again.
        let earlier = self.capture.seen().get(&(key.clone(), size)).cloned();
        if let (Some(b), true) = (&earlier, self.capture.reuse_by_key) {
            self.capture.skipped.fetch_add(1, Relaxed);
            return Ok((key, b.clone()));
        }
        let mut key_out = vk::PipelineBinaryKeyKHR::default();
        let data = BINARY_BUFFER.with_borrow_mut(|buf| {
            buf.clear();
            buf.resize(size, 0);
            let mut got = size;
            // SAFETY: `buf` has `size` writable bytes; the driver writes at most `got` of them.
            let r = unsafe { get(self.device.handle(), &info, &mut key_out, &mut got, buf.as_mut_ptr().cast()) };
            if r != vk::Result::SUCCESS {
                return Err(VulkanError::call("vkGetPipelineBinaryDataKHR", r));
            }
            if got != size {
                return Err(VulkanError::call(
                    "vkGetPipelineBinaryDataKHR",
                    format!("driver wrote {got} bytes of the {size} it reported"),
                ));
            }
            Ok(intern(&buf[..size]))
        })?;
        self.capture.fetched.fetch_add(1, Relaxed);
        let fetched_key = key_bytes(&key_out, "vkGetPipelineBinaryDataKHR")?;
        if fetched_key != key {
            // The data call's key is the binary's (as before any key was remembered); nothing
            // is remembered under a key the driver did not repeat.
            return Ok((fetched_key, data));
        }
        match earlier {
            // Interned by content: equal bytes are the same blob.
            Some(b) if !Arc::ptr_eq(&b, &data) => {
                self.capture.mismatches.fetch_add(1, Relaxed);
            }
            Some(_) => {}
            None => {
                self.capture.seen().insert((key.clone(), size), data.clone());
            }
        }
        Ok((key, data))
    }
}
