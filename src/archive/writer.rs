//! The deterministic archive writer.
//!
//! `encode` is a pure function of the *set* of entries (with their labels): input order,
//! duplicates and the history that produced them do not change a byte.

use super::format::*;
use crate::descriptor::key::checksum64;
use crate::descriptor::{Blob, PipelineEntry, TargetSet};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// One pipeline to write, with its labels.
#[derive(Clone, Debug)]
pub struct WriteEntry {
    /// The compiled pipeline.
    pub entry: Arc<PipelineEntry>,
    /// Its labels (any order, duplicates allowed).
    pub labels: Arc<[String]>,
}

/// Header information that is not derived from the entries.
#[derive(Clone, Debug)]
pub struct ArchiveMeta {
    /// Fingerprint of the writer options the stage keys were computed under.
    pub target_options: u128,
    /// The same options in words.
    pub target_options_text: String,
    /// Identity of the device driver binaries are valid for; empty for portable targets.
    pub device: String,
}

impl ArchiveMeta {
    /// Meta for archives built by this build's naga front end.
    pub fn portable() -> Self {
        ArchiveMeta {
            target_options: crate::frontend::targets::target_options_fingerprint(),
            target_options_text: crate::frontend::targets::TARGET_OPTIONS.to_string(),
            device: String::new(),
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

/// Encodes entries as archive bytes.
pub fn encode(entries: &[WriteEntry], meta: &ArchiveMeta) -> Vec<u8> {
    // Canonical entry set: one per key, labels merged and sorted.
    let mut by_key: BTreeMap<u128, (&Arc<PipelineEntry>, BTreeSet<&str>)> = BTreeMap::new();
    for w in entries {
        let slot = by_key.entry(w.entry.key.0).or_insert_with(|| (&w.entry, BTreeSet::new()));
        slot.1.extend(w.labels.iter().map(String::as_str));
    }

    // Blobs, sorted by content hash; targets present.
    let mut blobs: BTreeMap<u128, &Blob> = BTreeMap::new();
    let mut targets = 0u32;
    for (entry, _) in by_key.values() {
        for s in &entry.stages {
            for (t, b) in s.outputs.0.iter().enumerate() {
                if let Some(b) = b {
                    blobs.insert(b.hash().0, b);
                    targets |= 1 << t;
                }
            }
        }
    }
    let blob_index: HashMap<u128, u32> = blobs.keys().enumerate().map(|(i, h)| (*h, i as u32)).collect();

    let mut strings = Strings { bytes: Vec::new(), map: HashMap::new() };
    let mut pipelines = Vec::with_capacity(by_key.len() * PIPELINE_RECORD);
    let mut stages = Vec::new();
    let mut labels: Vec<(String, u32, (u32, u32))> = Vec::new();
    let mut stage_count = 0u32;
    for (i, (key, (entry, lbls))) in by_key.iter().enumerate() {
        let mut rec = Vec::with_capacity(PIPELINE_RECORD);
        rec.extend_from_slice(&key.to_le_bytes());
        rec.extend_from_slice(&(entry.kind as u32).to_le_bytes());
        rec.extend_from_slice(&stage_count.to_le_bytes());
        rec.extend_from_slice(&(entry.stages.len() as u32).to_le_bytes());
        rec.extend_from_slice(&[0u8; 12]);
        let c = checksum64(&rec);
        rec.extend_from_slice(&c.to_le_bytes());
        pipelines.extend_from_slice(&rec);
        for l in lbls {
            labels.push((l.to_string(), i as u32, strings.intern(l)));
        }
        for s in &entry.stages {
            let name = strings.intern(&s.entry_point);
            let mut rec = Vec::with_capacity(STAGE_RECORD);
            rec.extend_from_slice(&s.key.0.to_le_bytes());
            rec.extend_from_slice(&(s.stage as u32).to_le_bytes());
            rec.extend_from_slice(&name.0.to_le_bytes());
            rec.extend_from_slice(&name.1.to_le_bytes());
            for b in &s.outputs.0 {
                let idx = b.as_ref().map_or(NO_BLOB, |b| blob_index[&b.hash().0]);
                rec.extend_from_slice(&idx.to_le_bytes());
            }
            rec.extend_from_slice(&0u32.to_le_bytes());
            let mut sum_input = rec.clone();
            sum_input.extend_from_slice(strings.get(name));
            rec.extend_from_slice(&checksum64(&sum_input).to_le_bytes());
            stages.extend_from_slice(&rec);
            stage_count += 1;
        }
    }
    labels.sort_by(|a, b| (a.0.as_bytes(), a.1).cmp(&(b.0.as_bytes(), b.1)));
    let mut label_bytes = Vec::with_capacity(labels.len() * LABEL_RECORD);
    for (label, pipeline, r) in &labels {
        let mut rec = Vec::with_capacity(LABEL_RECORD);
        rec.extend_from_slice(&r.0.to_le_bytes());
        rec.extend_from_slice(&r.1.to_le_bytes());
        rec.extend_from_slice(&pipeline.to_le_bytes());
        let mut sum_input = rec.clone();
        sum_input.extend_from_slice(label.as_bytes());
        rec.extend_from_slice(&(checksum64(&sum_input) as u32).to_le_bytes());
        label_bytes.extend_from_slice(&rec);
    }

    let mut blob_data = Vec::new();
    let mut blob_records = Vec::with_capacity(blobs.len() * BLOB_RECORD);
    for (hash, blob) in &blobs {
        let off = blob_data.len();
        blob_data.extend_from_slice(blob.bytes());
        blob_data.resize(align_up(blob_data.len()), 0);
        let mut rec = Vec::with_capacity(BLOB_RECORD);
        rec.extend_from_slice(&hash.to_le_bytes());
        rec.extend_from_slice(&(off as u64).to_le_bytes());
        rec.extend_from_slice(&(blob.bytes().len() as u64).to_le_bytes());
        let c = checksum64(&rec);
        rec.extend_from_slice(&c.to_le_bytes());
        blob_records.extend_from_slice(&rec);
    }

    let mut meta_bytes = Vec::new();
    for s in ["granary", meta.target_options_text.as_str(), meta.device.as_str()] {
        meta_bytes.extend_from_slice(&(s.len() as u32).to_le_bytes());
        meta_bytes.extend_from_slice(s.as_bytes());
    }

    let bodies: [&[u8]; SECTION_COUNT] =
        [&meta_bytes, &strings.bytes, &blob_records, &blob_data, &pipelines, &stages, &label_bytes];
    let mut out = vec![0u8; align_up(HEADER_LEN)];
    let mut rows = Vec::with_capacity(SECTION_COUNT);
    for (section, body) in Section::ALL.iter().zip(bodies) {
        let off = out.len();
        out.extend_from_slice(body);
        out.resize(align_up(out.len()), 0);
        rows.push((*section as u32, off as u64, body.len() as u64, checksum64(body)));
    }
    let file_len = out.len() as u64;

    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    h.extend_from_slice(&TargetSet(targets).0.to_le_bytes());
    h.extend_from_slice(&(SECTION_COUNT as u32).to_le_bytes());
    h.extend_from_slice(&meta.target_options.to_le_bytes());
    h.extend_from_slice(&(by_key.len() as u32).to_le_bytes());
    h.extend_from_slice(&(blobs.len() as u32).to_le_bytes());
    h.extend_from_slice(&file_len.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes());
    for (kind, off, len, sum) in rows {
        h.extend_from_slice(&kind.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&off.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&sum.to_le_bytes());
    }
    let c = checksum64(&h);
    h.extend_from_slice(&c.to_le_bytes());
    debug_assert_eq!(h.len(), HEADER_LEN);
    out[..HEADER_LEN].copy_from_slice(&h);
    out
}
