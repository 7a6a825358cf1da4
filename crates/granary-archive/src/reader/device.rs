//! Reading device sections: identities, per-pipeline driver binaries, pipeline caches.

use super::*;
use crate::device::{BinarySet, DeviceBinaries, DeviceBinary, DeviceCache, DeviceIdentity};
use crate::device::{BINARY_SET_FLAGS, BINARY_SET_KEYED, MAX_BINARIES_PER_SET, MAX_BINARY_KEY};

/// One device section of an [`Archive`]: the identity its binaries are valid on, its
/// per-pipeline binary sets and its `VkPipelineCache` blobs.
#[derive(Clone)]
pub struct DeviceRef<'a> {
    archive: &'a Archive,
    index: usize,
    identity: Arc<DeviceIdentity>,
    first_pipeline: usize,
    pipeline_count: usize,
    first_cache: usize,
    cache_count: usize,
}

/// A [`DeviceRef`] without its borrow of the archive, for a holder of an `Arc<Archive>` (the
/// run-time loader) to [`attach`](Self::attach) again at each use without re-reading the
/// device record.
#[derive(Clone)]
#[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
pub(crate) struct DeviceSlot {
    index: usize,
    identity: Arc<DeviceIdentity>,
    first_pipeline: usize,
    pipeline_count: usize,
    first_cache: usize,
    cache_count: usize,
}

#[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
impl DeviceSlot {
    /// The section of `archive`, which must be the archive this slot was taken from.
    pub(crate) fn attach<'a>(&self, archive: &'a Archive) -> DeviceRef<'a> {
        DeviceRef {
            archive,
            index: self.index,
            identity: self.identity.clone(),
            first_pipeline: self.first_pipeline,
            pipeline_count: self.pipeline_count,
            first_cache: self.first_cache,
            cache_count: self.cache_count,
        }
    }
}

/// One pipeline's driver binaries for one device, in the driver's order.
#[derive(Clone, Copy)]
pub struct BinarySetRef<'a> {
    archive: &'a Archive,
    /// The record's flags without [`BINARY_SET_KEYED`].
    flags: u32,
    /// The binaries' range of the binary table (after the pipeline-key record, if any).
    first: usize,
    count: usize,
    /// The pipeline key (empty: not recorded).
    pipeline_key: &'a [u8],
    /// The whole range of the binary table the record names (key record included).
    range: (usize, usize),
}

/// One driver binary: its key and its bytes, checked against their content hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryRef<'a> {
    /// The driver's key (1..=32 bytes).
    pub key: &'a [u8],
    /// The driver's bytes.
    pub data: &'a [u8],
}

impl Archive {
    /// Number of device sections.
    pub fn device_count(&self) -> usize {
        self.device_count
    }

    fn device_id_at(&self, i: usize) -> Result<u128> {
        let (_, rec) = self.record(Section::Devices, i)?;
        u128_at(rec, 0)
    }

    /// The device section at index `i` (sorted by identity id): record checked, identity blob
    /// checked against its hash and parsed, its ranges checked.
    pub(crate) fn device_at(&self, i: usize) -> Result<DeviceRef<'_>> {
        let (at, rec) = self.record(Section::Devices, i)?;
        if checksum64(&rec[..40]) != u64_at(rec, 40)? {
            return Err(ArchiveError::corrupt(at, format!("device record {i} checksum mismatch")));
        }
        let id = u128_at(rec, 0)?;
        let blob = u32_at(rec, 16)? as usize;
        let first_pipeline = u32_at(rec, 20)? as usize;
        let pipeline_count = u32_at(rec, 24)? as usize;
        let first_cache = u32_at(rec, 28)? as usize;
        let cache_count = u32_at(rec, 32)? as usize;
        if u32_at(rec, 36)? != 0 {
            return Err(ArchiveError::corrupt(at + 36, format!("device record {i}: reserved field is not zero")));
        }
        if blob >= self.blob_count {
            return Err(ArchiveError::corrupt(
                at + 16,
                format!("device record {i}: identity blob is past the blob index"),
            ));
        }
        let (hash, bytes) = self.blob(blob)?;
        if hash != id {
            return Err(ArchiveError::corrupt(at, format!("device record {i}: id is not its identity's hash")));
        }
        let identity = DeviceIdentity::parse(bytes)
            .map_err(|e| ArchiveError::corrupt(at + 16, format!("device record {i}: {e}")))?;
        if pipeline_count > self.pipeline_count
            || first_pipeline.checked_add(pipeline_count).is_none_or(|e| e > self.device_pipeline_count)
        {
            return Err(ArchiveError::corrupt(at + 20, format!("device record {i}: invalid device-pipeline range")));
        }
        if cache_count > MAX_CACHES_PER_DEVICE
            || first_cache.checked_add(cache_count).is_none_or(|e| e > self.binary_count)
        {
            return Err(ArchiveError::corrupt(at + 28, format!("device record {i}: invalid cache range")));
        }
        let identity = Arc::new(identity);
        Ok(DeviceRef { archive: self, index: i, identity, first_pipeline, pipeline_count, first_cache, cache_count })
    }

    /// Every device section, in identity-id order.
    pub fn devices(&self) -> Result<Vec<DeviceRef<'_>>> {
        (0..self.device_count).map(|i| self.device_at(i)).collect()
    }

    /// The device section whose identity equals `identity` in every field (binary search by
    /// identity id, then an exact comparison), or `None`.
    pub fn device_for(&self, identity: &DeviceIdentity) -> Result<Option<DeviceRef<'_>>> {
        let id = identity.id();
        let (mut lo, mut hi) = (0usize, self.device_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.device_id_at(mid)?.cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let d = self.device_at(mid)?;
                    return Ok((*d.identity == *identity).then_some(d));
                }
            }
        }
        Ok(None)
    }

    /// The device section to take binaries from on the device `identity` describes — what an
    /// application asks before any binary reaches its driver. `Err(DeviceMismatch)` says the
    /// archive was built for other devices, naming them and what differs from the nearest
    /// one; the application then compiles from the archive's SPIR-V instead.
    pub fn binaries_for(
        &self,
        identity: &DeviceIdentity,
    ) -> Result<std::result::Result<DeviceRef<'_>, DeviceMismatch>> {
        if let Some(d) = self.device_for(identity)? {
            return Ok(Ok(d));
        }
        let devices = self.devices()?;
        // The nearest identity: the one with the fewest differing fields.
        let nearest = devices
            .iter()
            .filter_map(|d| d.identity().mismatch(identity).map(|m| (m.matches("; ").count(), d, m)))
            .min_by_key(|(n, _, _)| *n)
            .map(|(_, d, m)| (d.identity().describe(), m));
        Ok(Err(DeviceMismatch {
            this_device: identity.describe(),
            built_for: devices.iter().map(|d| d.identity().describe()).collect(),
            nearest,
        }))
    }

    /// The device-pipeline record at index `i`: (pipeline index, flags, first binary, count);
    /// the range includes a keyed set's pipeline-key record.
    fn device_pipeline(&self, i: usize) -> Result<(usize, u32, usize, usize)> {
        let (at, rec) = self.record(Section::DevicePipelines, i)?;
        if checksum64(&rec[..16]) != u64_at(rec, 16)? {
            return Err(ArchiveError::corrupt(at, format!("device-pipeline record {i} checksum mismatch")));
        }
        let pipeline = u32_at(rec, 0)? as usize;
        let flags = u32_at(rec, 4)?;
        let first = u32_at(rec, 8)? as usize;
        let count = u32_at(rec, 12)? as usize;
        if pipeline >= self.pipeline_count {
            return Err(ArchiveError::corrupt(
                at,
                format!("device-pipeline record {i}: pipeline {pipeline} is past the table"),
            ));
        }
        if flags & !BINARY_SET_FLAGS != 0 {
            return Err(ArchiveError::corrupt(at + 4, format!("device-pipeline record {i}: unknown flags {flags:#x}")));
        }
        let keyed = flags & BINARY_SET_KEYED != 0;
        if count > MAX_BINARIES_PER_SET + usize::from(keyed)
            || (keyed && count < 2)
            || first.checked_add(count).is_none_or(|e| e > self.binary_count)
        {
            return Err(ArchiveError::corrupt(at + 8, format!("device-pipeline record {i}: invalid binary range")));
        }
        Ok((pipeline, flags, first, count))
    }

    /// Pipeline-key record `i`: its key (1..=32 bytes), record checked (no blob, padding).
    fn key_record(&self, i: usize) -> Result<&[u8]> {
        let (at, rec) = self.record(Section::Binaries, i)?;
        if checksum64(&rec[..40]) != u64_at(rec, 40)? {
            return Err(ArchiveError::corrupt(at, format!("binary record {i} checksum mismatch")));
        }
        let key_len = u32_at(rec, 4)? as usize;
        if u32_at(rec, 0)? != NO_BLOB || !(1..=MAX_BINARY_KEY).contains(&key_len) {
            return Err(ArchiveError::corrupt(at, format!("binary record {i}: not a valid pipeline-key record")));
        }
        if rec[8 + key_len..8 + MAX_BINARY_KEY].iter().any(|b| *b != 0) {
            return Err(ArchiveError::corrupt(at + 8 + key_len, format!("binary record {i}: key padding is not zero")));
        }
        Ok(&rec[8..8 + key_len])
    }

    /// Binary record `i`: (blob index, key), record checked (key length, zero padding). With
    /// `cache`, the key must be empty; otherwise 1..=32 bytes.
    fn binary_record(&self, i: usize, cache: bool) -> Result<(usize, &[u8])> {
        let (at, rec) = self.record(Section::Binaries, i)?;
        if checksum64(&rec[..40]) != u64_at(rec, 40)? {
            return Err(ArchiveError::corrupt(at, format!("binary record {i} checksum mismatch")));
        }
        let blob = u32_at(rec, 0)? as usize;
        let key_len = u32_at(rec, 4)? as usize;
        let ok = if cache { key_len == 0 } else { (1..=MAX_BINARY_KEY).contains(&key_len) };
        if !ok {
            return Err(ArchiveError::corrupt(
                at + 4,
                format!(
                    "binary record {i}: key length {key_len} is invalid for a {} record",
                    if cache { "cache" } else { "binary" }
                ),
            ));
        }
        let key = &rec[8..8 + key_len];
        if rec[8 + key_len..8 + MAX_BINARY_KEY].iter().any(|b| *b != 0) {
            return Err(ArchiveError::corrupt(at + 8 + key_len, format!("binary record {i}: key padding is not zero")));
        }
        if blob >= self.blob_count {
            return Err(ArchiveError::corrupt(at, format!("binary record {i}: blob {blob} is past the blob index")));
        }
        Ok((blob, key))
    }

    /// Every pipeline-cache blob as owned [`DeviceCache`]s, each checked (for merge, prune and
    /// rewriting an archive with its device caches).
    pub fn device_caches(&self) -> Result<Vec<DeviceCache>> {
        let mut out = Vec::new();
        for d in self.devices()? {
            let identity = d.identity.clone();
            for c in d.caches()? {
                out.push(DeviceCache { device: identity.clone(), data: Blob::new(c.to_vec()) });
            }
        }
        Ok(out)
    }
}

impl<'a> DeviceRef<'a> {
    /// This section without the archive borrow.
    #[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
    pub(crate) fn slot(&self) -> DeviceSlot {
        DeviceSlot {
            index: self.index,
            identity: self.identity.clone(),
            first_pipeline: self.first_pipeline,
            pipeline_count: self.pipeline_count,
            first_cache: self.first_cache,
            cache_count: self.cache_count,
        }
    }

    /// Position in the device table.
    pub fn index(&self) -> usize {
        self.index
    }
    /// The identity the binaries are valid on.
    pub fn identity(&self) -> &DeviceIdentity {
        &self.identity
    }
    /// Pipelines with a record for this device (with binaries, or compiled into its caches).
    pub fn pipeline_count(&self) -> usize {
        self.pipeline_count
    }
    /// Whether the device has `VK_KHR_pipeline_binary` (its identity has a global key).
    pub fn has_pipeline_binaries(&self) -> bool {
        !self.identity.binary_global_key.is_empty()
    }

    fn set_at(&self, j: usize) -> Result<(usize, BinarySetRef<'a>)> {
        let (pipeline, flags, first, count) = self.archive.device_pipeline(self.first_pipeline + j)?;
        let range = (first, count);
        let (pipeline_key, first, count) = if flags & BINARY_SET_KEYED != 0 {
            (self.archive.key_record(first)?, first + 1, count - 1)
        } else {
            (&[][..], first, count)
        };
        let flags = flags & !BINARY_SET_KEYED;
        Ok((pipeline, BinarySetRef { archive: self.archive, flags, first, count, pipeline_key, range }))
    }

    /// The `j`-th pipeline record of this device (pipeline-table index and its binaries), in
    /// pipeline order.
    pub fn pipeline_binaries(&self, j: usize) -> Result<(usize, BinarySetRef<'a>)> {
        if j >= self.pipeline_count {
            return Err(ArchiveError::Incompatible(format!("device pipeline {j} of {}", self.pipeline_count)));
        }
        self.set_at(j)
    }

    /// The binaries of `pipeline` (a pipeline of the same archive) for this device, found by
    /// binary search; `None` when the pipeline was not compiled on this device. Each binary's
    /// bytes are checked against their content hash when read.
    pub fn binaries(&self, pipeline: &PipelineRef<'_>) -> Result<Option<BinarySetRef<'a>>> {
        if !std::ptr::eq(pipeline.archive, self.archive) {
            return Err(ArchiveError::Incompatible("the pipeline belongs to another archive".into()));
        }
        let want = pipeline.index();
        let (mut lo, mut hi) = (0usize, self.pipeline_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (p, set) = self.set_at(mid)?;
            match p.cmp(&want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(set)),
            }
        }
        Ok(None)
    }

    /// The binaries of this section at least `min_bytes` long whose stored blob more than one
    /// of its binary sets references — NVIDIA's "dictionary", which the driver attaches to
    /// most pipelines compiled after its first thousand or so in one process, and which the
    /// run-time loader must not hand to that driver (docs/BENCHMARKS.md). One pass over the
    /// section's binary records; no binary's bytes are read.
    pub fn shared_binaries(&self, min_bytes: usize) -> Result<SharedBinaries> {
        let mut seen = std::collections::HashSet::new();
        let mut shared = std::collections::HashSet::new();
        for j in 0..self.pipeline_count {
            let (_, set) = self.set_at(j)?;
            for i in 0..set.len() {
                let (blob, _) = set.record(i)?;
                if self.archive.blob_len(blob)? >= min_bytes && !seen.insert(blob) {
                    shared.insert(blob);
                }
            }
        }
        Ok(SharedBinaries { blobs: shared })
    }

    /// The device's `VkPipelineCache` blobs, each checked against its content hash.
    pub fn caches(&self) -> Result<Vec<&'a [u8]>> {
        (self.first_cache..self.first_cache + self.cache_count)
            .map(|i| {
                let (blob, _) = self.archive.binary_record(i, true)?;
                self.archive.blob(blob).map(|b| b.1)
            })
            .collect()
    }
}

/// The binaries that several binary sets of one device section share
/// ([`DeviceRef::shared_binaries`]), by stored blob. Plain data: `Send + Sync`, valid for sets
/// of the archive it was taken from.
#[derive(Clone, Debug, Default)]
pub struct SharedBinaries {
    blobs: std::collections::HashSet<usize>,
}

impl SharedBinaries {
    /// How many distinct shared binaries there are.
    pub fn len(&self) -> usize {
        self.blobs.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }
    /// Whether `set` (of the same archive) carries one of them.
    pub fn carried_by(&self, set: &BinarySetRef<'_>) -> Result<bool> {
        for i in 0..set.len() {
            if self.blobs.contains(&set.record(i)?.0) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl<'a> BinarySetRef<'a> {
    /// [`BINARY_SET_LIBRARY`](crate::BINARY_SET_LIBRARY) or 0.
    pub fn flags(&self) -> u32 {
        self.flags
    }
    /// The driver's pipeline key of the create info the set was captured with (empty: not
    /// recorded; the loader then never uses the binaries).
    pub fn pipeline_key(&self) -> &'a [u8] {
        self.pipeline_key
    }
    /// Number of binaries.
    pub fn len(&self) -> usize {
        self.count
    }
    /// Whether the set has no binaries (the pipeline lives in the device's cache data).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Binary `i`: its record checked and its bytes checked against their content hash
    /// before they are returned (a tampered binary never reaches the driver).
    pub fn get(&self, i: usize) -> Result<BinaryRef<'a>> {
        if i >= self.count {
            return Err(ArchiveError::Incompatible(format!("binary {i} of a set of {}", self.count)));
        }
        let (blob, key) = self.archive.binary_record(self.first + i, false)?;
        let (_, data) = self.archive.blob(blob)?;
        Ok(BinaryRef { key, data })
    }
    /// Binary `i`'s blob index and key, its record checked but not yet its bytes (the loader
    /// checks each distinct blob once, when it first hands it to the driver).
    pub(crate) fn record(&self, i: usize) -> Result<(usize, &'a [u8])> {
        if i >= self.count {
            return Err(ArchiveError::Incompatible(format!("binary {i} of a set of {}", self.count)));
        }
        self.archive.binary_record(self.first + i, false)
    }
    /// The binaries in the driver's order.
    pub fn iter(&self) -> impl Iterator<Item = Result<BinaryRef<'a>>> + 'a {
        let set = *self;
        (0..set.count).map(move |i| set.get(i))
    }
    fn first(&self) -> usize {
        self.first
    }
}

impl PipelineRef<'_> {
    /// Every device's binaries for this pipeline, as owned data (for merge, resume and
    /// salvage), in device order. Blobs are read and checked.
    pub fn device_binaries(&self) -> Result<Vec<DeviceBinaries>> {
        let mut cache = std::collections::HashMap::new();
        let mut out = Vec::new();
        for d in self.archive.devices()? {
            if let Some(set) = d.binaries(self)? {
                out.push(DeviceBinaries {
                    device: d.identity.clone(),
                    set: Arc::new(owned_set(self.archive, &set, &mut cache)?),
                });
            }
        }
        Ok(out)
    }
}

/// An owned copy of `set`, sharing blobs through `cache` (blob index → blob).
pub(super) fn owned_set(
    archive: &Archive,
    set: &BinarySetRef<'_>,
    cache: &mut std::collections::HashMap<usize, Arc<Blob>>,
) -> Result<BinarySet> {
    let mut binaries = Vec::with_capacity(set.len());
    for i in 0..set.len() {
        let (blob, key) = archive.binary_record(set.first() + i, false)?;
        let data = match cache.get(&blob) {
            Some(b) => b.clone(),
            None => {
                let b = Blob::new(archive.blob(blob)?.1.to_vec());
                cache.insert(blob, b.clone());
                b
            }
        };
        binaries.push(DeviceBinary { key: key.to_vec(), data });
    }
    Ok(BinarySet { flags: set.flags(), pipeline_key: set.pipeline_key().to_vec(), binaries })
}

impl Archive {
    /// Checks every device section (for [`Archive::verify`]): records, sort orders, ranges
    /// (each device's pipelines, binaries and caches contiguous and covering the tables
    /// exactly), identity blobs, key lengths and padding, every referenced blob's hash.
    pub(super) fn verify_devices(&self) -> Result<()> {
        let mut prev: Option<u128> = None;
        let mut next_dp = 0usize;
        let mut next_bin = 0usize;
        let dev_off = self.section(Section::Devices).0;
        for i in 0..self.device_count {
            let d = self.device_at(i)?;
            let at = dev_off + i * DEVICE_RECORD;
            let id = self.device_id_at(i)?;
            if prev.is_some_and(|p| p >= id) {
                return Err(ArchiveError::corrupt(at, "device table is not strictly sorted by id"));
            }
            prev = Some(id);
            if d.pipeline_count == 0 && d.cache_count == 0 {
                return Err(ArchiveError::corrupt(at, format!("device record {i} has neither pipelines nor caches")));
            }
            if d.first_pipeline != next_dp {
                return Err(ArchiveError::corrupt(at + 20, "device-pipeline ranges are not contiguous"));
            }
            next_dp += d.pipeline_count;
            let mut prev_pipeline: Option<usize> = None;
            for j in 0..d.pipeline_count {
                let (p, set) = d.set_at(j)?;
                let rec_at = self.section(Section::DevicePipelines).0 + (d.first_pipeline + j) * DEVICE_PIPELINE_RECORD;
                if prev_pipeline.is_some_and(|q| q >= p) {
                    return Err(ArchiveError::corrupt(rec_at, "device-pipeline records are not strictly sorted"));
                }
                prev_pipeline = Some(p);
                if set.range.0 != next_bin {
                    return Err(ArchiveError::corrupt(rec_at + 8, "binary ranges are not contiguous"));
                }
                next_bin += set.range.1;
                for b in set.iter() {
                    b?;
                }
            }
            if d.first_cache != next_bin {
                return Err(ArchiveError::corrupt(at + 28, "cache ranges are not contiguous"));
            }
            next_bin += d.cache_count;
            let mut prev_blob: Option<usize> = None;
            for c in d.first_cache..d.first_cache + d.cache_count {
                let (blob, _) = self.binary_record(c, true)?;
                if prev_blob.is_some_and(|q| q >= blob) {
                    return Err(ArchiveError::corrupt(
                        self.section(Section::Binaries).0 + c * BINARY_RECORD,
                        "cache records are not strictly sorted",
                    ));
                }
                prev_blob = Some(blob);
                self.blob(blob)?;
            }
        }
        if next_dp != self.device_pipeline_count {
            return Err(ArchiveError::corrupt(
                self.section(Section::DevicePipelines).0,
                "device-pipeline table has records no device uses",
            ));
        }
        if next_bin != self.binary_count {
            return Err(ArchiveError::corrupt(
                self.section(Section::Binaries).0,
                "binary table has records no device uses",
            ));
        }
        Ok(())
    }
}

/// Why an archive has no binaries for a device: it was built for other devices (or none).
/// Its `Display` reads "built for X, this device is Y: what differs".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceMismatch {
    /// The asking device, in words.
    pub this_device: String,
    /// Every device the archive holds binaries or caches for, in words (empty: none, the
    /// archive holds translations only).
    pub built_for: Vec<String>,
    /// The nearest device (fewest differing identity fields) and what differs
    /// (`"driver_version 0x… vs 0x…"`, the archive's value first).
    pub nearest: Option<(String, String)>,
}

impl std::fmt::Display for DeviceMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.nearest {
            None => write!(f, "the archive holds no driver binaries; this device is {}", self.this_device),
            Some((built_for, differs)) => {
                write!(f, "built for {built_for}, this device is {}: {differs}", self.this_device)?;
                if self.built_for.len() > 1 {
                    write!(f, " (the archive holds {} devices)", self.built_for.len())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for DeviceMismatch {}

impl std::fmt::Debug for DeviceRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceRef")
            .field("index", &self.index)
            .field("identity", &self.identity.describe())
            .field("pipelines", &self.pipeline_count)
            .finish()
    }
}
