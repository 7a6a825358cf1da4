//! Pipeline caches: create one (its initial data's header checked first), merge several, read
//! one back (retrying while other threads grow it).
//!
//! # Object lifetime rules
//!
//! A [`Cache`] owns its `VkPipelineCache` and destroys it in `Drop`; every creation using it
//! borrows the value, so none can still run. The one exception is the engine's own cache
//! ([`EngineCache`]), which a `Cache` only holds: granary merges into it
//! while the loader is made and creates into it, and never destroys it. The device's own harvest cache is owned by
//! [`Gpu`] and destroyed in its `Drop`.
//!
//! # External synchronization
//!
//! Every cache is created without `VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT`:
//! creation into it and `vkGetPipelineCacheData` may run from any number of threads at once.
//! `vkMergePipelineCaches` needs its destination externally synchronized: granary merges only
//! in [`Gpu::pipeline_cache_merged`], into a cache created in the same call and not yet
//! returned, so no other thread can reach it.
//!
//! # What reaches the driver
//!
//! Initial data reaches `vkCreatePipelineCache` only after its `VkPipelineCacheHeaderVersionOne`
//! (`check_header`) matches this device: header size at least 32 and within the data,
//! header version 1, vendor and device id, `pipelineCacheUUID`. A driver must ignore
//! mismatching data, but granary does not hand unchecked bytes to a driver.

use super::device::Gpu;
use super::error::VulkanError;
use crate::device::DeviceIdentity;
use std::sync::Arc;
use vulkanalia::prelude::v1_3::*;

/// Bytes of `VkPipelineCacheHeaderVersionOne`.
pub const CACHE_HEADER_LEN: usize = 32;
/// `VK_PIPELINE_CACHE_HEADER_VERSION_ONE`.
pub const CACHE_HEADER_VERSION_ONE: u32 = 1;
/// How often [`Gpu::cache_data`] re-reads a cache that grew between its size query and the read.
const CACHE_READ_TRIES: usize = 16;

/// A `VkPipelineCacheHeaderVersionOne`, as read from the first 32 bytes of cache data.
///
/// Thread safety: plain data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheHeader {
    /// `headerSize`.
    pub header_size: u32,
    /// `headerVersion`.
    pub header_version: u32,
    /// `vendorID`.
    pub vendor_id: u32,
    /// `deviceID`.
    pub device_id: u32,
    /// `pipelineCacheUUID`.
    pub pipeline_cache_uuid: [u8; 16],
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parses the header of `data`: refused, naming the field, when `data` is shorter than a
/// header, `headerSize` is under 32 or past the data, or `headerVersion` is not 1.
pub fn parse_header(data: &[u8]) -> Result<CacheHeader, String> {
    if data.len() < CACHE_HEADER_LEN {
        return Err(format!("{} bytes, shorter than a pipeline-cache header ({CACHE_HEADER_LEN})", data.len()));
    }
    let u32_at = |o: usize| u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&data[16..32]);
    let h = CacheHeader {
        header_size: u32_at(0),
        header_version: u32_at(4),
        vendor_id: u32_at(8),
        device_id: u32_at(12),
        pipeline_cache_uuid: uuid,
    };
    if (h.header_size as usize) < CACHE_HEADER_LEN || h.header_size as usize > data.len() {
        return Err(format!(
            "headerSize {} (at least {CACHE_HEADER_LEN} and at most the {} bytes of data)",
            h.header_size,
            data.len()
        ));
    }
    if h.header_version != CACHE_HEADER_VERSION_ONE {
        return Err(format!("headerVersion {} (expected {CACHE_HEADER_VERSION_ONE})", h.header_version));
    }
    Ok(h)
}

/// Checks that `data` is pipeline-cache data of `device`: its header parses and its vendor,
/// device and `pipelineCacheUUID` equal the device's. The error names the first field that
/// differs, with both values.
pub fn check_header(data: &[u8], device: &DeviceIdentity) -> Result<(), String> {
    let h = parse_header(data)?;
    if h.vendor_id != device.vendor_id {
        return Err(format!("vendorID {:#06x}, this device's is {:#06x}", h.vendor_id, device.vendor_id));
    }
    if h.device_id != device.device_id {
        return Err(format!("deviceID {:#06x}, this device's is {:#06x}", h.device_id, device.device_id));
    }
    if h.pipeline_cache_uuid != device.pipeline_cache_uuid {
        return Err(format!(
            "pipelineCacheUUID {}, this device's is {}",
            hex(&h.pipeline_cache_uuid),
            hex(&device.pipeline_cache_uuid)
        ));
    }
    Ok(())
}

/// The engine's own `VkPipelineCache`, for [`LoaderOptions::engine_cache`](super::LoaderOptions::engine_cache).
///
/// Thread safety: a plain handle (`Copy`, `Send + Sync`); what may use it when is the
/// contract of [`EngineCache::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineCache(vk::PipelineCache);

impl EngineCache {
    /// Wraps the engine's pipeline cache `handle`.
    ///
    /// # Safety
    ///
    /// - `handle` is a `VkPipelineCache` of the device of every [`Gpu`] a loader with these
    ///   options is made for;
    /// - it was created without `VK_PIPELINE_CACHE_CREATE_EXTERNALLY_SYNCHRONIZED_BIT`:
    ///   granary creates pipelines into it from any number of threads at once;
    /// - while [`PipelineLoader::new`](super::PipelineLoader::new) runs with it, no other thread uses it: the archive's
    ///   cache data is merged into it (`vkMergePipelineCaches`, whose destination must be
    ///   externally synchronized);
    /// - it stays valid until every loader made with it is dropped (with every
    ///   [`Warmup`](super::Warmup) and [`AppLookup`](super::AppLookup) over one); granary
    ///   never destroys it.
    pub unsafe fn new(handle: vk::PipelineCache) -> Self {
        EngineCache(handle)
    }

    /// The handle.
    pub fn handle(self) -> vk::PipelineCache {
        self.0
    }
}

/// What [`Gpu::pipeline_cache_merged`] made.
pub struct MergedCache {
    /// The cache.
    pub cache: Cache,
    /// How many blobs seeded it.
    pub seeded: usize,
    /// Each blob skipped because its header is not this device's: `(index, why)`.
    pub skipped: Vec<(usize, String)>,
}

/// An internally synchronized `VkPipelineCache` ([`Gpu::pipeline_cache`]).
///
/// Thread safety: `Send + Sync`; any number of threads may create pipelines with it and read
/// it at once.
pub struct Cache {
    gpu: Arc<Gpu>,
    pub(super) handle: vk::PipelineCache,
    /// Whether this value created the cache and destroys it (`false`: the engine's own,
    /// [`EngineCache`]).
    owned: bool,
}

impl Cache {
    /// `vkGetPipelineCacheData`, retried while other threads grow the cache.
    pub fn data(&self) -> Result<Vec<u8>, VulkanError> {
        self.gpu.read_cache(self.handle)
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        if !self.owned {
            return; // The engine's: it destroys it after every loader made with it.
        }
        // SAFETY: no creation can still use the cache: every user borrows this value. The
        // callbacks are the ones it was created with (`Gpu::pipeline_cache`).
        unsafe { self.gpu.device.destroy_pipeline_cache(self.handle, self.gpu.allocator()) }
    }
}

impl Gpu {
    /// Creates an internally synchronized `VkPipelineCache`, seeded with `initial` (data from
    /// `vkGetPipelineCacheData` of this device). Data whose header does not match this device
    /// (`check_header`) is refused before the driver sees it ([`VulkanError::CacheHeader`]).
    pub fn pipeline_cache(self: &Arc<Self>, initial: &[u8]) -> Result<Cache, VulkanError> {
        if !initial.is_empty() {
            check_header(initial, &self.info.identity).map_err(|why| VulkanError::CacheHeader { why })?;
            super::probe::observe(super::probe::Data::CacheInitial, initial);
        }
        let info = vk::PipelineCacheCreateInfo {
            initial_data_size: initial.len(),
            initial_data: if initial.is_empty() { std::ptr::null() } else { initial.as_ptr().cast() },
            ..Default::default()
        };
        // SAFETY: `initial` lives until the call returns and its header matches this device;
        // no flags: internally synchronized.
        let handle = unsafe { self.device.create_pipeline_cache(&info, self.allocator()) }
            .map_err(|e| VulkanError::call("vkCreatePipelineCache", e))?;
        Ok(Cache { gpu: self.clone(), handle, owned: true })
    }

    /// A cache seeded with every blob of `blobs` whose header matches this device: the first
    /// seeds the cache, each further one seeds a temporary cache that `vkMergePipelineCaches`
    /// adds to it (an archive holds several blobs for one device where shards or `--isolate`
    /// workers each wrote one).
    pub fn pipeline_cache_merged(self: &Arc<Self>, blobs: &[&[u8]]) -> Result<MergedCache, VulkanError> {
        self.merged(None, blobs)
    }

    /// Like [`pipeline_cache_merged`](Self::pipeline_cache_merged), into `engine` (the
    /// application's own cache) instead of a new one: every blob whose header matches is
    /// merged into it.
    pub(super) fn engine_cache_merged(
        self: &Arc<Self>,
        engine: EngineCache,
        blobs: &[&[u8]],
    ) -> Result<MergedCache, VulkanError> {
        self.merged(Some(engine), blobs)
    }

    fn merged(self: &Arc<Self>, engine: Option<EngineCache>, blobs: &[&[u8]]) -> Result<MergedCache, VulkanError> {
        let mut skipped = Vec::new();
        let mut good: Vec<&[u8]> = Vec::new();
        for (i, b) in blobs.iter().enumerate() {
            match check_header(b, &self.info.identity) {
                Ok(()) => good.push(b),
                Err(why) => skipped.push((i, why)),
            }
        }
        let (cache, rest) = match engine {
            Some(e) => (Cache { gpu: self.clone(), handle: e.handle(), owned: false }, &good[..]),
            None => {
                (self.pipeline_cache(good.first().copied().unwrap_or_default())?, good.get(1..).unwrap_or_default())
            }
        };
        if !rest.is_empty() {
            let sources = rest.iter().map(|b| self.pipeline_cache(b)).collect::<Result<Vec<_>, _>>()?;
            let handles: Vec<vk::PipelineCache> = sources.iter().map(|c| c.handle).collect();
            // SAFETY: the destination is a cache of this device that no other thread uses
            // during this call (the spec requires host access to it be externally
            // synchronized): one created just above and not handed out yet, or the engine's,
            // whose `EngineCache::new` contract promises no other use while a loader is made
            // with it. The sources are distinct caches of this device, created here, alive
            // until `sources` drops after the call.
            unsafe { self.device.merge_pipeline_caches(cache.handle, &handles) }
                .map_err(|e| VulkanError::call("vkMergePipelineCaches", e))?;
        }
        Ok(MergedCache { cache, seeded: good.len(), skipped })
    }

    /// The device's own harvest `VkPipelineCache` data (empty when binaries are captured
    /// instead).
    /// Feature `capture`.
    #[cfg(feature = "capture")]
    pub fn cache_data(&self) -> Result<Vec<u8>, VulkanError> {
        // A binaries device archives binaries, not cache data (its cache, if any, is the
        // internal-cache experiment's compile cache).
        if self.cache.is_null() || self.binaries {
            return Ok(Vec::new());
        }
        self.read_cache(self.cache)
    }

    /// `vkGetPipelineCacheData` of `cache`: size query, then read; when other threads grew
    /// the cache in between, the read says `VK_INCOMPLETE` and is retried with the new size
    /// (up to 16 times). Every error is returned, never swallowed.
    fn read_cache(&self, cache: vk::PipelineCache) -> Result<Vec<u8>, VulkanError> {
        let get = self.device.commands().get_pipeline_cache_data;
        for _ in 0..CACHE_READ_TRIES {
            let mut size = 0usize;
            // SAFETY: `cache` is alive (its owner borrows it for this call) and internally
            // synchronized; a null data pointer asks for the size.
            let r = unsafe { get(self.device.handle(), cache, &mut size, std::ptr::null_mut()) };
            if r != vk::Result::SUCCESS {
                return Err(VulkanError::call("vkGetPipelineCacheData (size)", r));
            }
            let mut data = vec![0u8; size];
            let mut got = size;
            // SAFETY: `data` has `size` writable bytes; the driver writes at most `got`.
            let r = unsafe { get(self.device.handle(), cache, &mut got, data.as_mut_ptr().cast()) };
            match r {
                vk::Result::SUCCESS => {
                    data.truncate(got.min(size));
                    return Ok(data);
                }
                vk::Result::INCOMPLETE => continue,
                e => return Err(VulkanError::call("vkGetPipelineCacheData", e)),
            }
        }
        Err(VulkanError::call(
            "vkGetPipelineCacheData",
            format!("VK_INCOMPLETE {CACHE_READ_TRIES} times: the cache kept growing while it was read"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> DeviceIdentity {
        DeviceIdentity {
            vendor_id: 0x10de,
            device_id: 0x2335,
            driver_id: 4,
            driver_version: 1,
            api_version: 1,
            features: crate::device::DeviceFeatures::NONE,
            pipeline_cache_uuid: [7; 16],
            binary_global_key: vec![],
            device_name: "gpu".into(),
            driver_name: "d".into(),
            driver_info: "i".into(),
        }
    }

    fn header(size: u32, version: u32, vendor: u32, dev: u32, uuid: [u8; 16]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [size, version, vendor, dev] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&uuid);
        b.extend_from_slice(&[0xab; 40]);
        b
    }

    #[test]
    fn headers_are_checked_field_by_field() {
        let d = device();
        assert_eq!(check_header(&header(32, 1, 0x10de, 0x2335, [7; 16]), &d), Ok(()));
        let cases = [
            (header(16, 1, 0x10de, 0x2335, [7; 16]), "headerSize 16"),
            (header(4096, 1, 0x10de, 0x2335, [7; 16]), "headerSize 4096"),
            (header(32, 2, 0x10de, 0x2335, [7; 16]), "headerVersion 2"),
            (header(32, 1, 0x1002, 0x2335, [7; 16]), "vendorID 0x1002"),
            (header(32, 1, 0x10de, 0x1, [7; 16]), "deviceID 0x0001"),
            (header(32, 1, 0x10de, 0x2335, [8; 16]), "pipelineCacheUUID 0808"),
        ];
        for (bytes, want) in cases {
            let e = check_header(&bytes, &d).unwrap_err();
            assert!(e.starts_with(want), "{e} (wanted {want})");
        }
        assert!(check_header(&[1, 2, 3], &d).unwrap_err().contains("shorter than a pipeline-cache header"));
        assert!(check_header(&[], &d).is_err());
    }
}
