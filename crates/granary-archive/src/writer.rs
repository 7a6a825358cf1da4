//! The deterministic archive writer.
//!
//! `encode` is a pure function of the *set* of entries (with their labels): input order,
//! duplicates and the history that produced them do not change a byte.

use crate::blob::Blob;
use crate::device::resolve_binaries;
use crate::device::{BinarySet, DeviceCache, DeviceIdentity};
use crate::entry::{PipelineEntry, WriteEntry};
pub use crate::format::ShardRecord;
use crate::format::*;
use crate::key::checksum64;
use crate::types::TargetSet;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

/// Header information that is not derived from the entries.
#[derive(Clone, Debug)]
pub struct ArchiveMeta {
    /// Fingerprint of the writer options the stage keys were computed under.
    pub target_options: u128,
    /// The same options in words.
    pub target_options_text: String,
    /// `VkPipelineCache` data per device (any order; duplicates are stored once). A device
    /// may have several.
    pub device_caches: Vec<DeviceCache>,
}

impl ArchiveMeta {
    /// Meta for archives whose stage keys were computed under the writer options described by
    /// `target_options_text` (the fingerprint is its content hash), without device caches.
    pub fn new(target_options_text: &str) -> Self {
        ArchiveMeta {
            target_options: crate::key::content_hash(target_options_text.as_bytes()).0,
            target_options_text: target_options_text.to_string(),
            device_caches: Vec::new(),
        }
    }
}

struct Strings {
    bytes: Vec<u8>,
    map: HashMap<String, (u32, u32)>,
}

impl Strings {
    fn intern(&mut self, s: &str) -> (u32, u32) {
        if let Some(r) = self.map.get(s) {
            return *r;
        }
        let r = (self.bytes.len() as u32, s.len() as u32);
        self.bytes.extend_from_slice(s.as_bytes());
        self.map.insert(s.to_string(), r);
        r
    }
    fn get(&self, r: (u32, u32)) -> &[u8] {
        &self.bytes[r.0 as usize..(r.0 + r.1) as usize]
    }
}

/// An archive ready to be written: every section except the blob bytes, which are streamed
/// from the entries. Made by [`prepare`].
pub struct PreparedArchive<'a> {
    meta: ArchiveMeta,
    sections: [Vec<u8>; SECTION_COUNT],
    blobs: Vec<Arc<Blob>>,
    _entries: std::marker::PhantomData<&'a [WriteEntry]>,
    blob_data_len: usize,
    blob_data_checksum: u64,
    targets: u32,
    pipelines: usize,
}

impl PreparedArchive<'_> {
    /// Byte length of each section body.
    fn lengths(&self) -> [usize; SECTION_COUNT] {
        let mut l = [0; SECTION_COUNT];
        for (i, s) in self.sections.iter().enumerate() {
            l[i] = s.len();
        }
        l[Section::BlobData as usize - 1] = self.blob_data_len;
        l
    }
    /// Section offsets and the total file length.
    fn offsets(&self) -> ([usize; SECTION_COUNT], usize) {
        let mut off = [0; SECTION_COUNT];
        let mut at = align_up(HEADER_LEN);
        for (i, len) in self.lengths().iter().enumerate() {
            off[i] = at;
            at = align_up(at + len);
        }
        (off, at)
    }
}

/// One device's part of an archive being written.
struct DeviceAcc<'a> {
    identity: Arc<DeviceIdentity>,
    identity_blob: Arc<Blob>,
    /// (pipeline-table index, its set), in pipeline order.
    pipelines: Vec<(u32, &'a BinarySet)>,
    /// Cache blobs by content hash.
    caches: BTreeMap<u128, Arc<Blob>>,
}

impl DeviceAcc<'_> {
    fn new(identity: &Arc<DeviceIdentity>) -> Self {
        DeviceAcc {
            identity: identity.clone(),
            identity_blob: Blob::new(identity.encode()),
            pipelines: Vec::new(),
            caches: BTreeMap::new(),
        }
    }
}

/// Why the writer cannot store the device data of `entries` and `meta`, if it cannot: a binary
/// set [`BinarySet::check`] refuses, more than `MAX_DEVICES` devices, more than
/// [`MAX_CACHES_PER_DEVICE`] cache blobs for one device, an identity whose binary key or
/// strings are over their caps. [`write_entries`](crate::write_entries) and the journal refuse
/// such input with [`ArchiveError::Incompatible`](crate::ArchiveError::Incompatible);
/// [`prepare`] and [`encode`] leave out what does not pass.
pub fn check_device_data(entries: &[WriteEntry], meta: &ArchiveMeta) -> Result<(), String> {
    let mut devices: HashMap<u128, (Arc<DeviceIdentity>, BTreeSet<u128>)> = HashMap::new();
    let check_identity = |devices: &mut HashMap<u128, (Arc<DeviceIdentity>, BTreeSet<u128>)>,
                          d: &Arc<DeviceIdentity>| {
        let id = d.id();
        if let std::collections::hash_map::Entry::Vacant(v) = devices.entry(id) {
            DeviceIdentity::parse(&d.encode()).map_err(|e| format!("device {}: {e}", d.device_name))?;
            v.insert((d.clone(), BTreeSet::new()));
        }
        Ok::<u128, String>(id)
    };
    for w in entries {
        for b in &w.binaries {
            check_identity(&mut devices, &b.device)?;
            b.set.check().map_err(|e| format!("pipeline {:032x} on {}: {e}", w.entry.key.0, b.device.device_name))?;
        }
    }
    for c in &meta.device_caches {
        let id = check_identity(&mut devices, &c.device)?;
        if let Some((d, caches)) = devices.get_mut(&id) {
            caches.insert(c.data.hash().0);
            if caches.len() > MAX_CACHES_PER_DEVICE {
                return Err(format!("more than {MAX_CACHES_PER_DEVICE} pipeline caches for {}", d.device_name));
            }
        }
    }
    if devices.len() > MAX_DEVICES {
        return Err(format!("{} devices (at most {MAX_DEVICES})", devices.len()));
    }
    Ok(())
}

/// Refuses ([`ArchiveError::Incompatible`](crate::ArchiveError::Incompatible), naming the
/// pipeline key and the stage) an entry whose state or stage specializations a reader would
/// refuse ([`PipelineEntry::check`]): what [`write_entries`](crate::write_entries) and the
/// journal check before writing. Each distinct blob is decoded once (a state per pipeline kind
/// and stage count).
pub(crate) fn check_entries(entries: &[WriteEntry]) -> Result<(), crate::error::ArchiveError> {
    let mut states: BTreeSet<(u128, u32, usize)> = BTreeSet::new();
    let mut specializations: BTreeSet<u128> = BTreeSet::new();
    let refuse =
        |key: u128, what: String| crate::error::ArchiveError::Incompatible(format!("pipeline {key:032x}: {what}"));
    for w in entries {
        let e = &w.entry;
        if let Some(state) = &e.state {
            if states.insert((state.hash().0, e.kind as u32, e.stages.len())) {
                crate::entry::check_state(state.bytes(), e.kind, e.stages.len()).map_err(|m| refuse(e.key.0, m))?;
            }
        }
        for (i, s) in e.stages.iter().enumerate() {
            if let Some(b) = &s.specialization {
                if specializations.insert(b.hash().0) {
                    crate::entry::check_specialization(b.bytes()).map_err(|m| {
                        refuse(e.key.0, format!("stage {i} ({} '{}'): specialization: {m}", s.stage, s.entry_point))
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// Sorts, deduplicates and lays out `entries` for writing.
pub fn prepare<'a>(entries: &'a [WriteEntry], meta: &ArchiveMeta) -> PreparedArchive<'a> {
    prepare_shard(entries, meta, None)
}

/// [`prepare`] for a shard archive: `shard` is recorded in the meta section's third string
/// (with `None`, exactly [`prepare`]).
pub fn prepare_shard<'a>(
    entries: &'a [WriteEntry],
    meta: &ArchiveMeta,
    shard: Option<&ShardRecord>,
) -> PreparedArchive<'a> {
    // Canonical entry set: one per key, labels merged and sorted, device binaries gathered.
    type Slot<'a> = (&'a Arc<PipelineEntry>, BTreeSet<&'a str>, Vec<&'a crate::device::DeviceBinaries>);
    let mut by_key: BTreeMap<u128, Slot<'a>> = BTreeMap::new();
    for w in entries {
        let slot = by_key.entry(w.entry.key.0).or_insert_with(|| (&w.entry, BTreeSet::new(), Vec::new()));
        slot.1.extend(w.labels.iter().map(String::as_str));
        slot.2.extend(w.binaries.iter());
    }

    // Devices, sorted by identity id: per pipeline at most one set (the smaller hash wins).
    let mut devices: BTreeMap<u128, DeviceAcc<'a>> = BTreeMap::new();
    for (i, (_, _, bins)) in by_key.values().enumerate() {
        for (id, (b, _)) in resolve_binaries(bins.iter().copied().filter(|b| b.set.check().is_ok())) {
            devices.entry(id).or_insert_with(|| DeviceAcc::new(&b.device)).pipelines.push((i as u32, &b.set));
        }
    }
    for c in &meta.device_caches {
        let d = devices.entry(c.device.id()).or_insert_with(|| DeviceAcc::new(&c.device));
        d.caches.insert(c.data.hash().0, c.data.clone());
    }
    devices.retain(|_, d| DeviceIdentity::parse(d.identity_blob.bytes()).is_ok());
    while devices.len() > MAX_DEVICES {
        devices.pop_last();
    }
    for d in devices.values_mut() {
        while d.caches.len() > MAX_CACHES_PER_DEVICE {
            d.caches.pop_last();
        }
    }

    // Blobs, sorted by content hash; targets present.
    let mut blobs: BTreeMap<u128, Arc<Blob>> = BTreeMap::new();
    let mut targets = 0u32;
    for (entry, _, _) in by_key.values() {
        for s in &entry.stages {
            for (t, b) in s.outputs.0.iter().enumerate() {
                if let Some(b) = b {
                    blobs.insert(b.hash().0, b.clone());
                    targets |= 1 << t;
                }
            }
            if let Some(b) = &s.specialization {
                blobs.insert(b.hash().0, b.clone());
            }
        }
        for b in entry.layout.iter().chain(&entry.state) {
            blobs.insert(b.hash().0, b.clone());
        }
    }
    for d in devices.values() {
        blobs.insert(d.identity_blob.hash().0, d.identity_blob.clone());
        for (_, set) in &d.pipelines {
            for b in &set.binaries {
                blobs.insert(b.data.hash().0, b.data.clone());
            }
        }
        for (h, c) in &d.caches {
            blobs.insert(*h, c.clone());
        }
    }
    let blob_index: HashMap<u128, u32> = blobs.keys().enumerate().map(|(i, h)| (*h, i as u32)).collect();

    let mut strings = Strings { bytes: Vec::new(), map: HashMap::new() };
    let mut pipelines = Vec::with_capacity(by_key.len() * PIPELINE_RECORD);
    let mut stages = Vec::new();
    let mut labels: Vec<(&str, u32, (u32, u32))> = Vec::new();
    let mut stage_count = 0u32;
    for (i, (key, (entry, lbls, _))) in by_key.iter().enumerate() {
        let rec_start = pipelines.len();
        pipelines.extend_from_slice(&key.to_le_bytes());
        pipelines.extend_from_slice(&(entry.kind as u32).to_le_bytes());
        pipelines.extend_from_slice(&stage_count.to_le_bytes());
        pipelines.extend_from_slice(&(entry.stages.len() as u32).to_le_bytes());
        let layout = entry.layout.as_ref().and_then(|b| blob_index.get(&b.hash().0).copied()).unwrap_or(NO_BLOB);
        pipelines.extend_from_slice(&layout.to_le_bytes());
        let state = entry.state.as_ref().and_then(|b| blob_index.get(&b.hash().0).copied()).unwrap_or(NO_BLOB);
        pipelines.extend_from_slice(&state.to_le_bytes());
        pipelines.extend_from_slice(&[0u8; 4]);
        let c = checksum64(&pipelines[rec_start..]);
        pipelines.extend_from_slice(&c.to_le_bytes());
        for l in lbls {
            labels.push((l, i as u32, strings.intern(l)));
        }
        for s in &entry.stages {
            let name = strings.intern(&s.entry_point);
            let rec_start = stages.len();
            stages.extend_from_slice(&s.key.0.to_le_bytes());
            stages.extend_from_slice(&(s.stage as u32).to_le_bytes());
            stages.extend_from_slice(&name.0.to_le_bytes());
            stages.extend_from_slice(&name.1.to_le_bytes());
            for b in &s.outputs.0 {
                let idx = b.as_ref().and_then(|b| blob_index.get(&b.hash().0).copied()).unwrap_or(NO_BLOB);
                stages.extend_from_slice(&idx.to_le_bytes());
            }
            let spec = s.specialization.as_ref().and_then(|b| blob_index.get(&b.hash().0).copied()).unwrap_or(NO_BLOB);
            stages.extend_from_slice(&spec.to_le_bytes());
            let mut h = Xxh3::new();
            h.update(&stages[rec_start..]);
            h.update(strings.get(name));
            stages.extend_from_slice(&h.digest().to_le_bytes());
            stage_count += 1;
        }
    }
    labels.sort_by(|a, b| (a.0.as_bytes(), a.1).cmp(&(b.0.as_bytes(), b.1)));
    let mut label_bytes = Vec::with_capacity(labels.len() * LABEL_RECORD);
    for (label, pipeline, r) in &labels {
        let rec_start = label_bytes.len();
        label_bytes.extend_from_slice(&r.0.to_le_bytes());
        label_bytes.extend_from_slice(&r.1.to_le_bytes());
        label_bytes.extend_from_slice(&pipeline.to_le_bytes());
        let mut h = Xxh3::new();
        h.update(&label_bytes[rec_start..]);
        h.update(label.as_bytes());
        label_bytes.extend_from_slice(&(h.digest() as u32).to_le_bytes());
    }

    let mut blob_records = Vec::with_capacity(blobs.len() * BLOB_RECORD);
    let mut data_hash = Xxh3::new();
    let mut off = 0usize;
    for (hash, blob) in &blobs {
        let rec_start = blob_records.len();
        blob_records.extend_from_slice(&hash.to_le_bytes());
        blob_records.extend_from_slice(&(off as u64).to_le_bytes());
        blob_records.extend_from_slice(&(blob.bytes().len() as u64).to_le_bytes());
        let c = checksum64(&blob_records[rec_start..]);
        blob_records.extend_from_slice(&c.to_le_bytes());
        data_hash.update(blob.bytes());
        let end = off + blob.bytes().len();
        data_hash.update(&ZEROS[..align_up(end) - end]);
        off = align_up(end);
    }

    // Device sections: devices by id; each device's pipelines by index; the binary table holds,
    // device by device, its pipelines' binaries in order and then its cache records.
    let mut device_bytes = Vec::with_capacity(devices.len() * DEVICE_RECORD);
    let mut dp_bytes = Vec::new();
    let mut bin_bytes = Vec::new();
    let blob_of = |b: &Blob| blob_index.get(&b.hash().0).copied().unwrap_or(NO_BLOB);
    let binary_record = |out: &mut Vec<u8>, blob: u32, key: &[u8]| {
        let rec_start = out.len();
        out.extend_from_slice(&blob.to_le_bytes());
        out.extend_from_slice(&(key.len() as u32).to_le_bytes());
        let mut padded = [0u8; crate::device::MAX_BINARY_KEY];
        padded[..key.len()].copy_from_slice(key);
        out.extend_from_slice(&padded);
        let c = checksum64(&out[rec_start..]);
        out.extend_from_slice(&c.to_le_bytes());
    };
    for (id, d) in &devices {
        let first_pipeline = (dp_bytes.len() / DEVICE_PIPELINE_RECORD) as u32;
        for (pipeline, set) in &d.pipelines {
            let rec_start = dp_bytes.len();
            let keyed = !set.pipeline_key.is_empty();
            let flags = if keyed { set.flags | crate::device::BINARY_SET_KEYED } else { set.flags };
            dp_bytes.extend_from_slice(&pipeline.to_le_bytes());
            dp_bytes.extend_from_slice(&flags.to_le_bytes());
            dp_bytes.extend_from_slice(&((bin_bytes.len() / BINARY_RECORD) as u32).to_le_bytes());
            dp_bytes.extend_from_slice(&((set.binaries.len() + usize::from(keyed)) as u32).to_le_bytes());
            let c = checksum64(&dp_bytes[rec_start..]);
            dp_bytes.extend_from_slice(&c.to_le_bytes());
            if keyed {
                // The pipeline-key record: no blob, the key in the key field.
                binary_record(&mut bin_bytes, NO_BLOB, &set.pipeline_key);
            }
            for b in &set.binaries {
                binary_record(&mut bin_bytes, blob_of(&b.data), &b.key);
            }
        }
        let first_cache = (bin_bytes.len() / BINARY_RECORD) as u32;
        for c in d.caches.values() {
            binary_record(&mut bin_bytes, blob_of(c), &[]);
        }
        let rec_start = device_bytes.len();
        device_bytes.extend_from_slice(&id.to_le_bytes());
        for v in
            [blob_of(&d.identity_blob), first_pipeline, d.pipelines.len() as u32, first_cache, d.caches.len() as u32, 0]
        {
            device_bytes.extend_from_slice(&v.to_le_bytes());
        }
        let c = checksum64(&device_bytes[rec_start..]);
        device_bytes.extend_from_slice(&c.to_le_bytes());
        debug_assert_eq!(d.identity.id(), *id);
    }

    // The third meta string is empty since format version 3, except in a shard archive, where
    // it is the shard record.
    let shard_text = shard.map(ShardRecord::to_text).unwrap_or_default();
    let mut meta_bytes = Vec::new();
    for s in ["granary", meta.target_options_text.as_str(), shard_text.as_str()] {
        meta_bytes.extend_from_slice(&(s.len() as u32).to_le_bytes());
        meta_bytes.extend_from_slice(s.as_bytes());
    }
    PreparedArchive {
        meta: meta.clone(),
        sections: [
            meta_bytes,
            strings.bytes,
            blob_records,
            Vec::new(),
            pipelines,
            stages,
            label_bytes,
            device_bytes,
            dp_bytes,
            bin_bytes,
            // The signature section: empty, since the writer writes unsigned archives (new
            // content; `sign_archive` signs a finished one). Its bytes therefore stay a pure
            // function of the entries.
            Vec::new(),
        ],
        blobs: blobs.into_values().collect(),
        _entries: std::marker::PhantomData,
        blob_data_len: off,
        blob_data_checksum: data_hash.digest(),
        targets,
        pipelines: by_key.len(),
    }
}

const ZEROS: [u8; ALIGN] = [0; ALIGN];

fn header(l: &PreparedArchive<'_>) -> (Vec<u8>, usize) {
    let meta = &l.meta;
    let (offsets, file_len) = l.offsets();
    let lengths = l.lengths();
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    h.extend_from_slice(&TargetSet(l.targets).0.to_le_bytes());
    h.extend_from_slice(&(SECTION_COUNT as u32).to_le_bytes());
    h.extend_from_slice(&meta.target_options.to_le_bytes());
    h.extend_from_slice(&(l.pipelines as u32).to_le_bytes());
    h.extend_from_slice(&(l.blobs.len() as u32).to_le_bytes());
    h.extend_from_slice(&(file_len as u64).to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes());
    for (i, section) in Section::ALL.iter().enumerate() {
        let sum = if *section == Section::BlobData { l.blob_data_checksum } else { checksum64(&l.sections[i]) };
        h.extend_from_slice(&(*section as u32).to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&(offsets[i] as u64).to_le_bytes());
        h.extend_from_slice(&(lengths[i] as u64).to_le_bytes());
        h.extend_from_slice(&sum.to_le_bytes());
    }
    let c = checksum64(&h);
    h.extend_from_slice(&c.to_le_bytes());
    (h, file_len)
}

fn pad(w: &mut impl Write, written: usize) -> std::io::Result<usize> {
    let n = align_up(written) - written;
    w.write_all(&ZEROS[..n])?;
    Ok(written + n)
}

impl PreparedArchive<'_> {
    /// The file size that [`PreparedArchive::write_to`] writes.
    pub fn len(&self) -> usize {
        self.offsets().1
    }
    /// Whether there is nothing to write (never: the header is always there).
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Streams the archive into `w` (blob bytes are copied straight from the entries; no
    /// whole-file buffer is built). Returns the number of bytes written.
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<usize> {
        let (h, file_len) = header(self);
        w.write_all(&h)?;
        let mut at = pad(w, h.len())?;
        for (i, section) in Section::ALL.iter().enumerate() {
            if *section == Section::BlobData {
                let start = at;
                for b in &self.blobs {
                    w.write_all(b.bytes())?;
                    at = start + pad(w, at - start + b.bytes().len())?;
                }
                at = start + self.blob_data_len;
            } else {
                w.write_all(&self.sections[i])?;
                at += self.sections[i].len();
            }
            at = pad(w, at)?;
        }
        debug_assert_eq!(at, file_len);
        Ok(at)
    }
}

/// Encodes entries as archive bytes in memory.
pub fn encode(entries: &[WriteEntry], meta: &ArchiveMeta) -> Vec<u8> {
    let layout = prepare(entries, meta);
    let mut out = Vec::with_capacity(layout.len());
    // Writing into a Vec cannot fail.
    let _ = layout.write_to(&mut out);
    out
}
