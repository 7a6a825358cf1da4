//! The logical device: opening one with its extension and feature chain ([`Gpu::open`]), or
//! wrapping the application's ([`Gpu::borrowed`]); what it enabled; its identity.
//!
//! # Object lifetime rules
//!
//! [`Gpu`] owns the `VkDevice` ([`Gpu::open`]) or wraps the application's ([`Gpu::borrowed`],
//! never destroyed by granary), and owns its internal `VkPipelineCache` (harvests without
//! pipeline binaries). Every [`Module`](super::Module), [`DriverLayout`](super::DriverLayout),
//! [`Pipeline`](super::Pipeline), [`Binaries`](super::Binaries) and [`Cache`](super::Cache)
//! holds an `Arc<Gpu>`, so the device outlives every object made from it (for a borrowed
//! device: as long as the application keeps it alive, which is its side of the contract).
//!
//! # What is enabled
//!
//! Only what the physical device reports: extensions and feature structures are chained only
//! where present, core features are intersected with the supported ones, and
//! `dynamicRendering` is checked before the device is created. The enabled core features are
//! part of [`Gpu::identity`], the identity binaries are valid for.
//!
//! # Host memory
//!
//! A borrowed device may carry the application's `VkAllocationCallbacks`
//! ([`Gpu::borrowed_with_allocator`]): every Vulkan object granary then creates on it (shader
//! modules, samplers, descriptor-set and pipeline layouts, render passes, pipelines and
//! pipeline libraries, pipeline binaries, pipeline caches) is created and destroyed with those
//! callbacks, the same set for an object's create and its destroy, as Vulkan requires
//! (`VUID-vkDestroy*`: "If `VkAllocationCallbacks` were provided when … was created, a
//! compatible set of callbacks must be provided here"). Without them ([`Gpu::open`],
//! [`Gpu::borrowed`]) every call passes `NULL`. Instance-level calls never take them: the
//! instance is the application's.
//!
//! # External synchronization
//!
//! `vkGetPipelineKeyKHR(NULL)` has none; `vkDestroyDevice` and the cache's destruction run
//! only in `Drop`, after every object made from the device is gone.

use super::error::VulkanError;
use super::instance::{attachment_formats, Driver, PhysicalInfo};
use crate::device::{DeviceFeatures, DeviceIdentity};
use crate::render_state::TextureFormat;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;
use vulkanalia::prelude::v1_3::*;
use vulkanalia::vk::KhrPipelineBinaryExtensionDeviceCommands;

/// The bytes of a driver-written binary key: 1..=32 of them, or the driver broke the
/// specification (`VK_MAX_PIPELINE_BINARY_KEY_SIZE_KHR` is 32), which is an error rather than
/// something to truncate.
pub(super) fn key_bytes(key: &vk::PipelineBinaryKeyKHR, call: &'static str) -> Result<Vec<u8>, VulkanError> {
    let n = key.key_size as usize;
    if n == 0 || n > crate::device::MAX_BINARY_KEY {
        return Err(VulkanError::call(call, format!("driver returned a key of {n} bytes (1..=32)")));
    }
    Ok(key.key[..n].to_vec())
}

/// What to enable when opening a device ([`Gpu::open`]), or what the application enabled on
/// its own device ([`Gpu::borrowed`]).
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// Capture with `VK_KHR_pipeline_binary` (else keep `VkPipelineCache` data).
    pub pipeline_binaries: bool,
    /// Enable graphics pipeline libraries.
    pub libraries: bool,
    /// With pipeline binaries: leave the driver's internal cache on (where the driver lets it
    /// be switched off, `pipelineBinaryInternalCacheControl`, granary switches it off by
    /// default so that every capture is a real compile).
    pub internal_cache: bool,
    /// Features: with [`Gpu::open`], those to enable where the device supports them
    /// (default: every feature granary knows, [`DeviceFeatures::KNOWN`], core, Vulkan 1.1–1.3
    /// and the extension features of native pipelines, each extension enabled with its
    /// features); with [`Gpu::borrowed`], exactly those the application enabled (an extension
    /// feature implies its extension; `EXTENDED_DYNAMIC_STATE3` means every member of the
    /// structure the device supports). They are part of the
    /// device identity binaries are valid for, and a pipeline that needs one not enabled is
    /// refused naming it.
    pub features: DeviceFeatures,
    /// At capture, do not fetch the bytes of a binary whose key and size were fetched before on
    /// this device: reuse those ([`CaptureStats::fetches_skipped`]). Off (the default): every
    /// binary is fetched, and those whose bytes differ from the first of their key and size are
    /// counted ([`CaptureStats::key_mismatches`]). On NVIDIA 580 reuse made a 2,000-pipeline
    /// archive 25 % smaller and every pipeline still warmed from its binaries, but 28 % of the
    /// binaries had other bytes under an equal key, so it is not exact (docs/BENCHMARKS.md).
    pub reuse_binaries_by_key: bool,
    /// An experiment in capture (docs/BENCHMARKS.md): with pipeline binaries, compile each
    /// captured pipeline with one shared `VkPipelineCache` and without `CAPTURE_DATA`, then
    /// take its binaries from the driver's internal cache by create info
    /// (`vkCreatePipelineBinariesKHR` with `pPipelineCreateInfo`); a pipeline the internal
    /// cache does not hold fails (`VK_PIPELINE_BINARY_MISSING_KHR`). Leaves the internal cache
    /// on and graphics pipeline libraries off.
    pub capture_from_internal_cache: bool,
}

impl OpenOptions {
    /// What these options come to on `info`: (pipeline binaries, libraries, core features),
    /// each only where the device supports it; a device without Vulkan 1.3 dynamic rendering
    /// is refused (granary's pipelines need it).
    fn on(&self, info: &PhysicalInfo) -> Result<(bool, bool, DeviceFeatures), VulkanError> {
        if !info.supports.dynamic_rendering {
            return Err(VulkanError::Unsupported {
                device: info.identity.device_name.clone(),
                message: format!(
                    "Vulkan {} without dynamicRendering; granary needs Vulkan 1.3",
                    super::instance::api_string(info.identity.api_version)
                ),
            });
        }
        Ok((
            self.pipeline_binaries && info.supports.pipeline_binaries,
            self.libraries
                && info.supports.graphics_pipeline_library
                && !(self.capture_from_internal_cache && self.pipeline_binaries && info.supports.pipeline_binaries),
            self.features.intersection(info.identity.features).intersection(DeviceFeatures::KNOWN),
        ))
    }
}

impl Default for OpenOptions {
    /// Binaries and libraries where supported, the driver's internal cache off, every known
    /// feature.
    fn default() -> Self {
        OpenOptions {
            pipeline_binaries: true,
            libraries: true,
            internal_cache: false,
            features: DeviceFeatures::KNOWN,
            reuse_binaries_by_key: false,
            capture_from_internal_cache: false,
        }
    }
}

/// Binaries fetched on one device, by (key, size).
type SeenBinaries = std::collections::HashMap<(Vec<u8>, usize), std::sync::Arc<crate::blob::Blob>>;

/// The capture bookkeeping of one [`Gpu`]: binaries fetched so far by key, and counters.
///
/// Thread safety: `Send + Sync`; one short lock around the map.
pub(super) struct CaptureBook {
    #[cfg_attr(not(feature = "capture"), allow(dead_code))]
    pub(super) reuse_by_key: bool,
    /// [`OpenOptions::capture_from_internal_cache`](super::OpenOptions::capture_from_internal_cache).
    #[cfg_attr(not(feature = "capture"), allow(dead_code))]
    pub(super) from_internal_cache: bool,
    #[cfg_attr(not(feature = "capture"), allow(dead_code))]
    seen: std::sync::Mutex<SeenBinaries>,
    pub(super) key_nanos: std::sync::atomic::AtomicU64,
    pub(super) capture_nanos: std::sync::atomic::AtomicU64,
    pub(super) fetched: std::sync::atomic::AtomicU64,
    pub(super) skipped: std::sync::atomic::AtomicU64,
    pub(super) mismatches: std::sync::atomic::AtomicU64,
}

impl CaptureBook {
    pub(super) fn new(reuse_by_key: bool, from_internal_cache: bool) -> Self {
        CaptureBook {
            reuse_by_key,
            from_internal_cache,
            seen: Default::default(),
            key_nanos: Default::default(),
            capture_nanos: Default::default(),
            fetched: Default::default(),
            skipped: Default::default(),
            mismatches: Default::default(),
        }
    }

    /// Adds `t` to the time in `vkGetPipelineKeyKHR`.
    pub(super) fn add_key_time(&self, t: std::time::Duration) {
        self.key_nanos.fetch_add(t.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    #[cfg(feature = "capture")]
    pub(super) fn seen(&self) -> std::sync::MutexGuard<'_, SeenBinaries> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The application's `VkAllocationCallbacks` for the objects granary creates on its borrowed
/// device ([`Gpu::borrowed_with_allocator`]).
///
/// Thread safety: `Send + Sync` (see the `unsafe impl`s): granary calls Vulkan, and so the
/// callbacks, from any of its threads, at the same time.
#[derive(Clone, Copy)]
pub(super) struct HostAllocator(vk::AllocationCallbacks);

// SAFETY: the value is function pointers and the application's `pUserData`, only ever handed
// to Vulkan commands (never dereferenced or called by granary). The Vulkan specification
// (§11.1 "Host Memory") has the implementation call the callbacks only during a command that
// was passed them, "from the same thread that called the provoking API command", and says it
// "should not synchronize calls to any of the callbacks. If synchronization is needed, the
// callbacks must provide it themselves": so a set of callbacks handed to commands running on
// several threads must already be safe to call from any thread at once, which is exactly what
// moving and sharing this value between granary's threads requires. That the application's
// callbacks are so (and outlive every object made with them) is the contract of
// `Gpu::borrowed_with_allocator`, whose caller promises it.
unsafe impl Send for HostAllocator {}
// SAFETY: as for `Send`: shared references only copy the callbacks into Vulkan commands.
unsafe impl Sync for HostAllocator {}

/// One logical device with its pipeline cache.
///
/// Thread safety: `Send + Sync`. Every method may be called from any number of threads at
/// once (see the module's synchronization notes).
pub struct Gpu {
    pub(super) driver: Arc<Driver>,
    pub(super) device: Device,
    /// Whether granary created the device (and destroys it in `Drop`).
    pub(super) owned: bool,
    /// The Vulkan format of each texture format the device can use as an attachment of its
    /// kind (colour, or depth/stencil); absent: it cannot.
    pub(super) formats: HashMap<TextureFormat, vk::Format>,
    /// The physical device.
    pub info: PhysicalInfo,
    pub(super) cache: vk::PipelineCache,
    pub(super) binaries: bool,
    pub(super) libraries: bool,
    pub(super) global_key: Vec<u8>,
    /// The features enabled on the device (of the ones granary knows).
    pub(super) features: DeviceFeatures,
    /// The `VK_EXT_extended_dynamic_state3` members enabled (bit per member index), where
    /// `features` has `EXTENDED_DYNAMIC_STATE3`.
    pub(super) eds3: u32,
    /// The native-pipeline extensions enabled (besides the library and binary ones).
    pub(super) extensions: Vec<&'static str>,
    /// What capturing binaries on this device has fetched and timed.
    pub(super) capture: CaptureBook,
    /// The application's allocation callbacks for every object granary creates on its
    /// borrowed device (`None`: `NULL`, always for a device granary opened).
    pub(super) allocator: Option<HostAllocator>,
}

impl Gpu {
    /// Opens `info` as a logical device with the extensions `options` asks for where the
    /// device supports them, Vulkan 1.3 `dynamicRendering` (refused if unsupported), and the
    /// core features of `options.features` the device supports.
    pub fn open(driver: Arc<Driver>, info: PhysicalInfo, options: OpenOptions) -> Result<Arc<Gpu>, VulkanError> {
        let (binaries, libraries, features) = options.on(&info)?;
        let eds3 = info.extended_dynamic_state3;
        let mut ext: Vec<*const i8> = Vec::new();
        if libraries {
            ext.push(vk::KHR_PIPELINE_LIBRARY_EXTENSION.name.as_ptr());
            ext.push(vk::EXT_GRAPHICS_PIPELINE_LIBRARY_EXTENSION.name.as_ptr());
        }
        if binaries {
            ext.push(vk::KHR_MAINTENANCE5_EXTENSION.name.as_ptr());
            ext.push(vk::KHR_PIPELINE_BINARY_EXTENSION.name.as_ptr());
        }
        let priority = 1.0f32;
        let queue = vk::DeviceQueueCreateInfo {
            queue_family_index: 0,
            queue_count: 1,
            queue_priorities: &priority,
            ..Default::default()
        };
        // The extensions the enabled native-pipeline features need (an extension is enabled
        // exactly when one of its features is; `features` holds only supported ones).
        let native_ext = super::features::extensions_for(features, &|n| info.extensions.contains(n));
        let native_ext_c: Vec<std::ffi::CString> =
            native_ext.iter().filter_map(|n| std::ffi::CString::new(*n).ok()).collect();
        ext.extend(native_ext_c.iter().map(|c| c.as_ptr()));
        // The feature chain: core, Vulkan 1.1–1.3 (dynamic rendering) and the extension
        // features (exactly `features`, and the supported extended-dynamic-state-3 members)
        // → [graphics pipeline library] → [maintenance5, pipeline binaries] → [internal cache
        // control]. Each extension struct is linked only when its extension is enabled.
        let mut chain = super::features::FeatureChain::enabling(features, info.extended_dynamic_state3);
        let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT {
            graphics_pipeline_library: vk::TRUE,
            ..Default::default()
        };
        let mut m5 = vk::PhysicalDeviceMaintenance5Features { maintenance5: vk::TRUE, ..Default::default() };
        let mut pb = vk::PhysicalDevicePipelineBinaryFeaturesKHR { pipeline_binaries: vk::TRUE, ..Default::default() };
        let mut cache_control =
            vk::DevicePipelineBinaryInternalCacheControlKHR { disable_internal_cache: vk::TRUE, ..Default::default() };
        let mut tail: *mut c_void = std::ptr::null_mut();
        if libraries {
            gpl.next = tail;
            tail = (&mut gpl as *mut vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT).cast();
        }
        if binaries {
            m5.next = tail;
            tail = (&mut m5 as *mut vk::PhysicalDeviceMaintenance5Features).cast();
            pb.next = tail;
            tail = (&mut pb as *mut vk::PhysicalDevicePipelineBinaryFeaturesKHR).cast();
            if info.supports.internal_cache_control && !options.internal_cache && !options.capture_from_internal_cache {
                // Harvests measure (and capture) real compiles: the driver's own cache is off.
                cache_control.next = tail as *const c_void;
                tail = (&mut cache_control as *mut vk::DevicePipelineBinaryInternalCacheControlKHR).cast();
            }
        }
        let head = chain.link(tail);
        let create = vk::DeviceCreateInfo {
            next: head.cast_const(),
            queue_create_info_count: 1,
            queue_create_infos: &queue,
            enabled_extension_count: ext.len() as u32,
            enabled_extension_names: ext.as_ptr(),
            // `pEnabledFeatures` stays null: the core features travel in `features2`.
            ..Default::default()
        };
        // SAFETY: `info.handle` came from `driver`'s instance; `create` and its chain point
        // only at locals (features, queue, extension names from 'static constants) that live
        // until the call returns; only supported extensions and features are enabled
        // (`PhysicalInfo` was queried from this device: extensions and feature structs are
        // linked only where present, core features are intersected with the supported ones,
        // dynamic rendering was checked above).
        let device = unsafe { driver.instance().create_device(info.handle, &create, None) }
            .map_err(|e| VulkanError::call("vkCreateDevice", e))?;
        let capture_internal = binaries && options.capture_from_internal_cache;
        let cache = if binaries && !capture_internal {
            vk::PipelineCache::null()
        } else {
            let ci = vk::PipelineCacheCreateInfo::default();
            // SAFETY: `device` is valid; the cache is internally synchronized (no flags).
            match unsafe { device.create_pipeline_cache(&ci, None) } {
                Ok(c) => c,
                Err(e) => {
                    // SAFETY: nothing was made from the device yet.
                    unsafe { device.destroy_device(None) };
                    return Err(VulkanError::call("vkCreatePipelineCache", e));
                }
            }
        };
        let gpu = Gpu {
            driver,
            device,
            owned: true,
            formats: HashMap::new(),
            info,
            cache,
            binaries,
            libraries,
            global_key: Vec::new(),
            features,
            eds3,
            extensions: native_ext,
            capture: CaptureBook::new(options.reuse_binaries_by_key, capture_internal),
            allocator: None,
        };
        // On error `gpu`'s Drop destroys the cache and the device.
        gpu.finish_open()
    }

    /// What `open` and `borrowed` share once the device exists: the pipeline-binary global
    /// key and the attachment formats.
    fn finish_open(mut self) -> Result<Arc<Gpu>, VulkanError> {
        if self.binaries {
            self.global_key = self.read_global_key()?;
        }
        self.formats = attachment_formats(&self.driver, self.info.handle);
        Ok(Arc::new(self))
    }

    /// `vkGetPipelineKeyKHR(NULL)`: the key that applies to every pipeline. A key of 0 or
    /// more than 32 bytes is a driver error, not something to truncate.
    fn read_global_key(&self) -> Result<Vec<u8>, VulkanError> {
        let mut key = vk::PipelineBinaryKeyKHR::default();
        // SAFETY: the extension is enabled on the device (`self.binaries`); a null create info
        // asks for the global key; `key` lives until the call returns.
        unsafe { self.device.get_pipeline_key_khr(None, &mut key) }
            .map_err(|e| VulkanError::call("vkGetPipelineKeyKHR", e))?;
        key_bytes(&key, "vkGetPipelineKeyKHR (global key)")
    }

    /// Wraps the application's own device, created from `driver`'s instance (see
    /// [`Driver::borrowed`]) with the extensions and features `enabled` names (pipeline
    /// binaries: `VK_KHR_pipeline_binary` + `VK_KHR_maintenance5` with `pipelineBinaries`;
    /// libraries: `VK_KHR_pipeline_library` + `VK_EXT_graphics_pipeline_library`;
    /// `enabled.features`: the features it enabled; always Vulkan 1.3 `dynamicRendering` and
    /// `maintenance4`, which every 1.3 device supports). Granary never destroys it.
    ///
    /// # Safety
    ///
    /// `device` must have been created from `info.handle` of `driver`'s instance with at
    /// least what `enabled` says (an extension or feature granary believes enabled but is not
    /// is undefined behaviour in the driver), and the application must keep it alive until
    /// this value and everything made from it are dropped.
    pub unsafe fn borrowed(
        driver: Arc<Driver>,
        info: PhysicalInfo,
        device: &Device,
        enabled: OpenOptions,
    ) -> Result<Arc<Gpu>, VulkanError> {
        // SAFETY: the caller's promise, passed on; no allocation callbacks.
        unsafe { Gpu::borrowed_with_allocator(driver, info, device, enabled, None) }
    }

    /// [`Gpu::borrowed`], with the application's allocation callbacks: every Vulkan object
    /// granary creates on the device (shader modules, samplers, descriptor-set and pipeline
    /// layouts, render passes, pipelines and pipeline libraries, pipeline binaries, pipeline
    /// caches) is created with `allocator` and destroyed with the same callbacks (a copy of
    /// `allocator` is kept; the structure itself need not outlive the call). `None` is
    /// [`Gpu::borrowed`]. Instance-level calls are not given them (granary makes none that
    /// creates an object on a borrowed instance).
    ///
    /// # Safety
    ///
    /// As [`Gpu::borrowed`], and: `allocator` is a valid `VkAllocationCallbacks`
    /// (`pfnAllocation`, `pfnReallocation` and `pfnFree` set; `pfnInternalAllocation` and
    /// `pfnInternalFree` both set or both not). Its callbacks are **thread-safe**: Vulkan calls
    /// them on the thread of the command granary is running, without synchronizing them
    /// (specification §11.1), and granary creates and destroys objects from any number of
    /// threads at once (its warm-up workers, the application's threads calling the loader,
    /// the thread dropping the last reference). The callbacks and their `pUserData` stay valid
    /// until this value and everything made from it are dropped (the last objects are
    /// destroyed, through them, then); a pipeline taken with
    /// [`Pipeline::into_raw`](super::Pipeline::into_raw) is destroyed by the application with
    /// a compatible set ([`Gpu::allocator`]).
    pub unsafe fn borrowed_with_allocator(
        driver: Arc<Driver>,
        info: PhysicalInfo,
        device: &Device,
        enabled: OpenOptions,
        allocator: Option<&vk::AllocationCallbacks>,
    ) -> Result<Arc<Gpu>, VulkanError> {
        let (binaries, libraries, features) = enabled.on(&info)?;
        let eds3 = info.extended_dynamic_state3;
        let extensions = super::features::extensions_for(features, &|n| info.extensions.contains(n));
        Gpu {
            driver,
            device: device.clone(),
            owned: false,
            formats: HashMap::new(),
            info,
            cache: vk::PipelineCache::null(),
            binaries,
            libraries,
            global_key: Vec::new(),
            features,
            eds3,
            extensions,
            capture: CaptureBook::new(enabled.reuse_binaries_by_key, false),
            allocator: allocator.map(|a| HostAllocator(*a)),
        }
        .finish_open()
    }

    /// The allocation callbacks granary creates and destroys its objects on this device with
    /// (the application's, from [`Gpu::borrowed_with_allocator`]; `None`: `NULL`). A pipeline
    /// taken with [`Pipeline::into_raw`](super::Pipeline::into_raw) was created with them:
    /// destroy it with a compatible set.
    pub fn allocator(&self) -> Option<&vk::AllocationCallbacks> {
        self.allocator.as_ref().map(|a| &a.0)
    }

    /// The identity binaries made on this device are valid for: the physical device's, with
    /// the global key and the features enabled on this logical device.
    pub fn identity(&self) -> DeviceIdentity {
        DeviceIdentity {
            binary_global_key: self.global_key.clone(),
            features: self.features,
            ..self.info.identity.clone()
        }
    }

    /// The features enabled on the device (of the ones granary knows).
    pub fn features(&self) -> DeviceFeatures {
        self.features
    }

    /// Whether the device is the application's ([`Gpu::borrowed`]).
    pub fn is_borrowed(&self) -> bool {
        !self.owned
    }

    /// The Vulkan format standing for `f` as an attachment on this device, if any.
    pub fn format(&self, f: TextureFormat) -> Option<vk::Format> {
        self.formats.get(&f).copied()
    }

    /// Whether binaries are captured with `VK_KHR_pipeline_binary`.
    pub fn captures_binaries(&self) -> bool {
        self.binaries
    }

    /// Whether graphics pipeline libraries are enabled.
    pub fn libraries(&self) -> bool {
        self.libraries
    }

    /// The device extensions enabled for native pipelines' state (besides those of pipeline
    /// binaries and libraries), in granary's table order.
    pub fn extensions(&self) -> &[&'static str] {
        &self.extensions
    }

    /// The pipeline-binary global key (empty without the extension).
    pub fn global_key(&self) -> &[u8] {
        &self.global_key
    }

    /// The `VkDevice` and its function table, for the application's own calls on a device
    /// granary opened (its own shader modules, layouts and pipelines; `vkGetPipelineKeyKHR`
    /// of its own create infos). Calling through it is `unsafe`, with Vulkan's rules and two
    /// of granary's: never destroy the device (granary does, in `Drop`, once every object made
    /// from it is gone), and destroy every object you create from it before this `Gpu` is
    /// dropped. Granary holds no Vulkan object that needs external synchronization across
    /// threads except its internal pipeline cache, which it never hands out.
    pub fn raw_device(&self) -> &Device {
        &self.device
    }

    /// The `VkInstance` the device was made from and its function table, for the
    /// application's instance-level queries about [`info.handle`](PhysicalInfo::handle) (its
    /// memory types, limits, format properties) on a device granary opened. Calling through
    /// it is `unsafe`, with Vulkan's rules and one of granary's: never destroy the instance
    /// (one granary created is destroyed with its last [`Driver`] and `Gpu`; a borrowed one
    /// stays the application's).
    pub fn raw_instance(&self) -> &Instance {
        self.driver.instance()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: every module, layout, pipeline, binary and cache holds an `Arc<Gpu>`, so no
        // object made from the device is left; no other thread can reach `self`. A borrowed
        // device is the application's to destroy.
        unsafe {
            if !self.cache.is_null() {
                self.device.destroy_pipeline_cache(self.cache, None);
            }
            if self.owned {
                self.device.destroy_device(None);
            }
        }
    }
}
