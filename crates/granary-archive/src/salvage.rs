//! Recovering what can be trusted from a damaged archive.
//!
//! Salvage reads the section table even when the header checksum fails, clamps every section
//! to the bytes actually present, and keeps exactly those pipelines whose own record, every
//! stage record and every referenced blob still pass their checksums and content hashes, and
//! whose layout, state (render or native, fitting the pipeline) and stage specializations
//! decode. Nothing unverified is ever copied into the output. A shard archive's record (the meta
//! section's third string) is kept when the meta section still checks out, so the salvaged
//! archive is still that shard.
//!
//! Records are found through the section table, never by scanning: it is in the header at the
//! front, so it survives any cut that leaves the header. The tables that identify a pipeline
//! (pipeline, stage and label records) follow the blob data, at the end of the file, and
//! nothing before them says which blob belongs to which key (a key is a hash of the descriptor,
//! not of the outputs): a file cut into its blob data has lost every pipeline, and the report
//! says so ([`SalvageReport::nothing_recovered`]) rather than offering an empty archive as the
//! result (docs/FORMAT.md §1.3.1).

use crate::blob::Blob;
use crate::device::{BinarySet, DeviceBinaries, DeviceBinary, DeviceCache, DeviceIdentity, MAX_BINARY_KEY};
use crate::entry::WriteEntry;
use crate::entry::{PipelineEntry, StageEntry, TargetOutputs};
use crate::error::ArchiveError;
use crate::format::*;
use crate::key::{checksum64, content_hash};
use crate::key::{PipelineKey, StageKey};
use crate::reader::{u128_at, u32_at, u64_at};
use crate::types::{PipelineKind, ShaderStage, TARGET_COUNT};
use crate::writer::ArchiveMeta;
use std::collections::HashMap;
use std::sync::Arc;

/// What salvage found.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SalvageReport {
    /// Whether the header checksum held.
    pub header_intact: bool,
    /// Pipeline records present in the (possibly truncated) table.
    pub pipeline_records: usize,
    /// Pipeline records the section table declares (more than
    /// [`pipeline_records`](Self::pipeline_records) where the file was cut short).
    pub pipeline_records_declared: usize,
    /// Bytes missing from the end of the file: where the section table declares sections
    /// beyond the file's end, how far beyond (0 for a file of its declared length). Whatever
    /// those bytes held is lost even where no record says so.
    pub missing_bytes: u64,
    /// Pipelines recovered whole.
    pub recovered: usize,
    /// Pipeline records dropped, with the reason for each (key when readable).
    pub lost: Vec<String>,
    /// Labels recovered.
    pub labels: usize,
    /// Devices whose record and identity were recovered.
    pub devices: usize,
    /// (pipeline, device) binary sets recovered.
    pub binary_sets: usize,
    /// Pipeline caches recovered.
    pub caches: usize,
    /// Device data dropped (a device record, a pipeline's binary set on a device, or a
    /// pipeline cache), with the reason for each.
    pub device_data_lost: Vec<String>,
    /// The shard record (`harvest --shard I/N`, docs/FORMAT.md §1.4.1) of a shard archive
    /// whose meta section still checks out: the salvaged archive is still that shard (with the
    /// pipelines recovered), so write it with this record
    /// ([`write_shard_entries`](crate::write_shard_entries)). `None` for an unsharded archive,
    /// and where the record could not be trusted ([`SalvageReport::shard_lost`]).
    pub shard: Option<crate::format::ShardRecord>,
    /// Why a shard record present in the damaged archive is not kept (its meta section fails
    /// its checksum, or the text is not a valid record); `None` when nothing was dropped.
    pub shard_lost: Option<String>,
    /// The sections a cut file lacks bytes of, in file order: each section the section table
    /// declares past the file's end (empty sections are not listed).
    pub cut: Vec<SectionCut>,
    /// Why no pipeline was recovered from an archive that declares some, and at which byte
    /// offset; `None` when a pipeline was recovered or the archive declares none. The entries
    /// are then empty, and writing them would replace the damaged file's record of what it
    /// held by an empty archive: `granary salvage` refuses to.
    pub nothing_recovered: Option<NothingRecovered>,
}

/// A section a cut file lacks bytes of ([`SalvageReport::cut`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SectionCut {
    /// The section.
    pub section: Section,
    /// Its offset, as the section table declares it.
    pub offset: u64,
    /// Its length in bytes, as declared.
    pub length: u64,
    /// How many of those bytes the file holds (0: the section lies wholly past the end).
    pub present: u64,
}

/// Why nothing could be recovered ([`SalvageReport::nothing_recovered`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct NothingRecovered {
    /// The byte offset the reason concerns: where a cut file ends, or the first pipeline
    /// record that could not be recovered.
    pub offset: u64,
    /// What was lost and why nothing can be rebuilt from what is left.
    pub why: String,
}

impl NothingRecovered {
    /// The reason as an [`ArchiveError::Corrupt`] of `path` at [`offset`](Self::offset).
    pub fn to_error(&self, path: &std::path::Path) -> ArchiveError {
        ArchiveError::Corrupt { path: Some(path.to_path_buf()), offset: self.offset, what: self.why.clone() }
    }
}

/// Section `i`'s `(offset, length)` clamped to the bytes present, and its declared
/// `(offset, length)`; `None` where the row is unreadable.
fn section_range(b: &[u8], i: usize) -> Option<((usize, usize), (u64, u64))> {
    let row = FIXED_HEADER + i * SECTION_ROW;
    if u32_at(b, row).ok()? != Section::ALL[i] as u32 {
        return None;
    }
    let declared = (u64_at(b, row + 8).ok()?, u64_at(b, row + 16).ok()?);
    let off = usize::try_from(declared.0).ok()?;
    let len = usize::try_from(declared.1).ok()?;
    if off > b.len() {
        return Some(((b.len(), 0), declared));
    }
    Some(((off, len.min(b.len() - off)), declared))
}

/// Recovers every verifiable pipeline from `b`. Fails only when the magic, version or section
/// table are unreadable.
pub fn salvage(b: &[u8]) -> Result<(Vec<WriteEntry>, ArchiveMeta, SalvageReport), ArchiveError> {
    if b.len() < HEADER_LEN || b[..8] != MAGIC {
        return Err(ArchiveError::corrupt(0, "no granary header: nothing can be salvaged"));
    }
    let version = u32_at(b, 8)?;
    if version != VERSION {
        // Another version's records mean other things (version 5's reserved stage field is
        // version 6's specialization): nothing of it can be trusted as this version's.
        return Err(ArchiveError::corrupt(
            8,
            format!("format version {version} is not supported (this granary reads {VERSION}); nothing is salvaged"),
        ));
    }
    let mut report = SalvageReport {
        header_intact: checksum64(&b[..HEADER_LEN - 8]) == u64_at(b, HEADER_LEN - 8)?,
        ..Default::default()
    };
    let mut sec = [(0usize, 0usize); SECTION_COUNT];
    // What the section table declares, against what the file holds.
    let mut declared = [(0u64, 0u64); SECTION_COUNT];
    let mut declared_end = 0u64;
    let file_len = b.len() as u64;
    for (i, s) in sec.iter_mut().enumerate() {
        let (present, (off, len)) = section_range(b, i)
            .ok_or_else(|| ArchiveError::corrupt(FIXED_HEADER + i * SECTION_ROW, "section table row is unreadable"))?;
        *s = present;
        declared[i] = (off, len);
        let end = off.saturating_add(len);
        declared_end = declared_end.max(end);
        if len > 0 && end > file_len {
            report.cut.push(SectionCut {
                section: Section::ALL[i],
                offset: off,
                length: len,
                present: file_len.saturating_sub(off).min(len),
            });
        }
        if Section::ALL[i] == Section::Pipelines {
            report.pipeline_records_declared = usize::try_from(len / PIPELINE_RECORD as u64).unwrap_or(usize::MAX);
        }
    }
    report.missing_bytes = declared_end.saturating_sub(file_len);
    // Where a record of a table the file was cut short in would lie: `Some((start, end))` of
    // record `i` when the table declares it but the file ends before its last byte.
    let past_the_cut = |s: Section, size: usize, i: usize| -> Option<(u64, u64)> {
        let (off, len) = declared[s as usize - 1];
        let start = (i as u64).checked_mul(size as u64)?;
        let end = start.checked_add(size as u64)?;
        (end <= len && off.checked_add(end)? > file_len).then(|| (off + start, off + end))
    };
    let body = |s: Section| {
        let (off, len) = sec[s as usize - 1];
        &b[off..off + len]
    };
    let strings = body(Section::Strings);
    let string = |off: u32, len: u32| -> Option<&str> {
        let (o, l) = (off as usize, len as usize);
        (l <= MAX_NAME).then_some(())?;
        std::str::from_utf8(strings.get(o..o.checked_add(l)?)?).ok()
    };

    // Meta: the writer-options text determines the fingerprint.
    let meta_bytes = body(Section::Meta);
    let mut meta_strings = Vec::new();
    let mut pos = 0usize;
    for _ in 0..3 {
        let Ok(len) = u32_at(meta_bytes, pos) else { break };
        let Some(s) = meta_bytes.get(pos + 4..pos + 4 + len as usize).and_then(|s| std::str::from_utf8(s).ok()) else {
            break;
        };
        meta_strings.push(s.to_string());
        pos += 4 + len as usize;
    }
    let mut meta = match meta_strings.as_slice() {
        [_, text, third] => {
            // The shard record is kept only where the whole meta section still matches its
            // checksum: nothing else vouches for it, and a wrong record would make the
            // salvaged archive claim another shard (or script).
            let row = FIXED_HEADER + (Section::Meta as usize - 1) * SECTION_ROW;
            let meta_intact = checksum64(meta_bytes) == u64_at(b, row + 24)?;
            match (third.as_str(), meta_intact) {
                ("", _) => {}
                (t, true) => match crate::format::ShardRecord::parse(t) {
                    Some(r) => report.shard = Some(r),
                    None => {
                        report.shard_lost = Some(format!("the meta section's third string {t:?} is not a shard record"))
                    }
                },
                (t, false) => {
                    report.shard_lost = Some(format!(
                        "the meta section fails its checksum, so its shard record {t:?} cannot be trusted"
                    ))
                }
            }
            ArchiveMeta::new(text)
        }
        _ => {
            return Err(ArchiveError::corrupt(
                sec[0].0,
                "meta section is unreadable: the writer options are unknown, so keys cannot be trusted",
            ))
        }
    };

    // Blobs that still hash to their address.
    let blob_index = body(Section::BlobIndex);
    let data = body(Section::BlobData);
    let mut blobs: HashMap<u32, Arc<Blob>> = HashMap::new();
    for (i, rec) in blob_index.chunks_exact(BLOB_RECORD).enumerate() {
        let ok = (|| {
            if checksum64(&rec[..32]) != u64_at(rec, 32).ok()? {
                return None;
            }
            let hash = u128_at(rec, 0).ok()?;
            let off = usize::try_from(u64_at(rec, 16).ok()?).ok()?;
            let len = usize::try_from(u64_at(rec, 24).ok()?).ok()?;
            let bytes = data.get(off..off.checked_add(len)?)?;
            (content_hash(bytes).0 == hash).then(|| Blob::new(bytes.to_vec()))
        })();
        if let Some(blob) = ok {
            blobs.insert(i as u32, blob);
        }
    }

    let stages = body(Section::Stages);
    let stage = |i: usize| -> Result<StageEntry, String> {
        let rec = stages.get(i * STAGE_RECORD..(i + 1) * STAGE_RECORD).ok_or_else(|| {
            match past_the_cut(Section::Stages, STAGE_RECORD, i) {
                Some((start, end)) => {
                    format!("stage record {i} (bytes {start}..{end}) lies past the end of the file at byte {file_len}")
                }
                None => format!("stage record {i} is past the stage table"),
            }
        })?;
        let name = string(u32_at(rec, 20).map_err(|e| e.to_string())?, u32_at(rec, 24).map_err(|e| e.to_string())?)
            .ok_or("entry-point name unreadable")?;
        let mut v = rec[..48].to_vec();
        v.extend_from_slice(name.as_bytes());
        if checksum64(&v) != u64_at(rec, 48).map_err(|e| e.to_string())? {
            return Err(format!("stage record {i} checksum mismatch"));
        }
        let mut outputs = TargetOutputs::default();
        for t in 0..TARGET_COUNT {
            let idx = u32_at(rec, 28 + 4 * t).map_err(|e| e.to_string())?;
            if idx != NO_BLOB {
                outputs.0[t] =
                    Some(blobs.get(&idx).cloned().ok_or_else(|| format!("blob {idx} is damaged or missing"))?);
            }
        }
        let specialization = match u32_at(rec, 44).map_err(|e| e.to_string())? {
            NO_BLOB => None,
            idx => {
                let b = blobs
                    .get(&idx)
                    .cloned()
                    .ok_or_else(|| format!("specialization blob {idx} is damaged or missing"))?;
                crate::entry::check_specialization(b.bytes()).map_err(|e| format!("stage record {i}: {e}"))?;
                Some(b)
            }
        };
        Ok(StageEntry {
            key: StageKey(u128_at(rec, 0).map_err(|e| e.to_string())?),
            stage: ShaderStage::from_u32(u32_at(rec, 16).map_err(|e| e.to_string())?).ok_or("unknown stage")?,
            entry_point: name.to_string(),
            outputs,
            specialization,
        })
    };

    let pipelines = body(Section::Pipelines);
    let mut kept: HashMap<usize, Arc<PipelineEntry>> = HashMap::new();
    for (i, rec) in pipelines.chunks_exact(PIPELINE_RECORD).enumerate() {
        report.pipeline_records += 1;
        let key = u128_at(rec, 0).map(PipelineKey).ok();
        let r: Result<PipelineEntry, String> = (|| {
            if checksum64(&rec[..40]) != u64_at(rec, 40).map_err(|e| e.to_string())? {
                return Err("pipeline record checksum mismatch".to_string());
            }
            let kind = PipelineKind::from_u32(u32_at(rec, 16).map_err(|e| e.to_string())?).ok_or("unknown kind")?;
            let first = u32_at(rec, 20).map_err(|e| e.to_string())? as usize;
            let count = u32_at(rec, 24).map_err(|e| e.to_string())?;
            if count == 0 || count > MAX_STAGES_PER_PIPELINE {
                return Err("invalid stage count".into());
            }
            let st = (first..first + count as usize).map(stage).collect::<Result<Vec<_>, _>>()?;
            let idx = u32_at(rec, 28).map_err(|e| e.to_string())?;
            let state_idx = u32_at(rec, 32).map_err(|e| e.to_string())?;
            if rec[36..40].iter().any(|b| *b != 0) {
                return Err("reserved bytes are not zero".into());
            }
            let layout = match idx {
                NO_BLOB => None,
                _ => {
                    let b =
                        blobs.get(&idx).cloned().ok_or_else(|| format!("layout blob {idx} is damaged or missing"))?;
                    crate::layout::PipelineLayout::decode(b.bytes()).map_err(|e| e.to_string())?;
                    Some(b)
                }
            };
            let state = match state_idx {
                NO_BLOB => None,
                _ => {
                    let b = blobs
                        .get(&state_idx)
                        .cloned()
                        .ok_or_else(|| format!("state blob {state_idx} is damaged or missing"))?;
                    crate::entry::check_state(b.bytes(), kind, st.len())?;
                    Some(b)
                }
            };
            Ok(PipelineEntry { key: key.unwrap_or_default(), kind, stages: st, layout, state })
        })();
        match r {
            Ok(e) => {
                kept.insert(i, Arc::new(e));
            }
            Err(why) => report
                .lost
                .push(format!("pipeline record {i}{}: {why}", key.map(|k| format!(" (key {k})")).unwrap_or_default())),
        }
    }

    if kept.is_empty() && report.pipeline_records_declared > 0 {
        report.nothing_recovered =
            Some(nothing_recovered(&report, declared[Section::Pipelines as usize - 1], file_len));
    }

    let mut labels: HashMap<usize, Vec<String>> = HashMap::new();
    for rec in body(Section::Labels).chunks_exact(LABEL_RECORD) {
        let (Ok(off), Ok(len), Ok(p), Ok(sum)) = (u32_at(rec, 0), u32_at(rec, 4), u32_at(rec, 8), u32_at(rec, 12))
        else {
            continue;
        };
        let Some(s) = string(off, len) else { continue };
        let mut v = rec[..12].to_vec();
        v.extend_from_slice(s.as_bytes());
        if checksum64(&v) as u32 == sum && kept.contains_key(&(p as usize)) {
            labels.entry(p as usize).or_default().push(s.to_string());
            report.labels += 1;
        }
    }
    let mut binaries = salvage_devices(
        &Body {
            devices: body(Section::Devices),
            pipelines: body(Section::DevicePipelines),
            binaries: body(Section::Binaries),
        },
        &blobs,
        &kept,
        &mut meta,
        &mut report,
    );
    let mut entries: Vec<(usize, Arc<PipelineEntry>)> = kept.into_iter().collect();
    entries.sort_by_key(|(i, _)| *i);
    report.recovered = entries.len();
    let out = entries
        .into_iter()
        .map(|(i, entry)| WriteEntry {
            entry,
            labels: labels.remove(&i).unwrap_or_default().into(),
            binaries: binaries.remove(&i).unwrap_or_default(),
        })
        .collect();
    Ok((out, meta, report))
}

/// Why no pipeline was recovered from an archive whose pipeline table, declared at `table`
/// (offset, length), holds some (`report` as far as the pipeline records).
fn nothing_recovered(report: &SalvageReport, table: (u64, u64), file_len: u64) -> NothingRecovered {
    let declared = report.pipeline_records_declared;
    let (start, end) = (table.0, table.0.saturating_add(table.1));
    if report.pipeline_records == 0 {
        let place = if file_len <= start {
            format!("before its pipeline table (declared at bytes {start}..{end})")
        } else {
            format!("inside the first record of its pipeline table (declared at bytes {start}..{end})")
        };
        return NothingRecovered {
            offset: file_len,
            why: format!(
                "the file ends at byte {file_len}, {place}: all {declared} pipeline records are lost, and \
                 nothing before the table can rebuild one (pipeline and stage keys, entry points, \
                 labels and which blobs a pipeline uses are stored only in the tables after the \
                 blob data)"
            ),
        };
    }
    let first = report.lost.first().map(String::as_str).unwrap_or("no reason recorded");
    NothingRecovered {
        offset: start,
        why: format!(
            "none of the {} pipeline records present (of {declared} declared) could be recovered; the first: {first}",
            report.pipeline_records
        ),
    }
}

struct Body<'a> {
    devices: &'a [u8],
    pipelines: &'a [u8],
    binaries: &'a [u8],
}

/// Recovers the device sections: a device whose record and identity blob check out; per
/// recovered pipeline its binary set when the device-pipeline record and every binary record
/// and blob of the set check out (a set is kept whole or dropped, never mixed); every intact
/// cache record. What is dropped is reported.
fn salvage_devices(
    b: &Body<'_>,
    blobs: &HashMap<u32, Arc<Blob>>,
    kept: &HashMap<usize, Arc<PipelineEntry>>,
    meta: &mut ArchiveMeta,
    report: &mut SalvageReport,
) -> HashMap<usize, Vec<DeviceBinaries>> {
    let mut out: HashMap<usize, Vec<DeviceBinaries>> = HashMap::new();
    let record = |bytes: &[u8], size: usize, i: usize| -> Option<Vec<u8>> {
        let r = bytes.get(i.checked_mul(size)?..i.checked_mul(size)?.checked_add(size)?)?;
        (checksum64(&r[..size - 8]) == u64_at(r, size - 8).ok()?).then(|| r.to_vec())
    };
    let binary = |i: usize, cache: bool| -> Result<(Vec<u8>, Arc<Blob>), String> {
        let r =
            record(b.binaries, BINARY_RECORD, i).ok_or_else(|| format!("binary record {i} is damaged or missing"))?;
        let blob = u32_at(&r, 0).map_err(|e| e.to_string())?;
        let key_len = u32_at(&r, 4).map_err(|e| e.to_string())? as usize;
        let ok = if cache { key_len == 0 } else { (1..=MAX_BINARY_KEY).contains(&key_len) };
        if !ok || r[8 + key_len..8 + MAX_BINARY_KEY].iter().any(|x| *x != 0) {
            return Err(format!("binary record {i} has an invalid key"));
        }
        let data = blobs.get(&blob).cloned().ok_or_else(|| format!("blob {blob} is damaged or missing"))?;
        Ok((r[8..8 + key_len].to_vec(), data))
    };
    for (i, _) in b.devices.chunks_exact(DEVICE_RECORD).enumerate().take(MAX_DEVICES) {
        let Some(r) = record(b.devices, DEVICE_RECORD, i) else {
            report.device_data_lost.push(format!("device record {i}: checksum mismatch"));
            continue;
        };
        let field = |o: usize| u32_at(&r, o).map(|v| v as usize).unwrap_or(usize::MAX);
        let identity = blobs
            .get(&(field(16) as u32))
            .filter(|blob| u128_at(&r, 0).ok() == Some(blob.hash().0))
            .ok_or_else(|| "identity blob is damaged or missing".to_string())
            .and_then(|blob| DeviceIdentity::parse(blob.bytes()));
        let identity = match identity {
            Ok(d) => Arc::new(d),
            Err(why) => {
                report.device_data_lost.push(format!("device record {i}: {why}"));
                continue;
            }
        };
        report.devices += 1;
        let name = &identity.device_name;
        let (first, count) = (field(20), field(24).min(b.pipelines.len() / DEVICE_PIPELINE_RECORD));
        for j in first..first.saturating_add(count) {
            let set = (|| -> Result<(usize, BinarySet), String> {
                let r = record(b.pipelines, DEVICE_PIPELINE_RECORD, j)
                    .ok_or_else(|| format!("device-pipeline record {j} is damaged or missing"))?;
                let p = u32_at(&r, 0).map_err(|e| e.to_string())? as usize;
                let flags = u32_at(&r, 4).map_err(|e| e.to_string())?;
                let first = u32_at(&r, 8).map_err(|e| e.to_string())? as usize;
                let n = u32_at(&r, 12).map_err(|e| e.to_string())? as usize;
                let keyed = flags & crate::device::BINARY_SET_KEYED != 0;
                if flags & !crate::device::BINARY_SET_FLAGS != 0
                    || n > crate::device::MAX_BINARIES_PER_SET + usize::from(keyed)
                    || (keyed && n < 2)
                {
                    return Err(format!("device-pipeline record {j} is invalid"));
                }
                let (pipeline_key, first, n) = if keyed {
                    let r = record(b.binaries, BINARY_RECORD, first)
                        .ok_or_else(|| format!("pipeline {p}: pipeline-key record {first} is damaged or missing"))?;
                    let key_len = u32_at(&r, 4).map_err(|e| e.to_string())? as usize;
                    if u32_at(&r, 0).ok() != Some(NO_BLOB)
                        || !(1..=MAX_BINARY_KEY).contains(&key_len)
                        || r[8 + key_len..8 + MAX_BINARY_KEY].iter().any(|x| *x != 0)
                    {
                        return Err(format!("pipeline {p}: pipeline-key record {first} is invalid"));
                    }
                    (r[8..8 + key_len].to_vec(), first + 1, n - 1)
                } else {
                    (Vec::new(), first, n)
                };
                let flags = flags & !crate::device::BINARY_SET_KEYED;
                let binaries = (first..first.saturating_add(n))
                    .map(|k| binary(k, false).map(|(key, data)| DeviceBinary { key, data }))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("pipeline {p}: {e}"))?;
                Ok((p, BinarySet { flags, pipeline_key, binaries }))
            })();
            match set {
                Ok((p, set)) if kept.contains_key(&p) => {
                    report.binary_sets += 1;
                    out.entry(p).or_default().push(DeviceBinaries { device: identity.clone(), set: Arc::new(set) });
                }
                Ok(_) => {}
                Err(why) => report.device_data_lost.push(format!("{name}: {why}")),
            }
        }
        let (first, count) = (field(28), field(32).min(MAX_CACHES_PER_DEVICE));
        for k in first..first.saturating_add(count) {
            match binary(k, true) {
                Ok((_, data)) => {
                    report.caches += 1;
                    meta.device_caches.push(DeviceCache { device: identity.clone(), data });
                }
                Err(why) => report.device_data_lost.push(format!("{name}: pipeline cache: {why}")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::entry::WriteEntry;
    use crate::format::ShardRecord;
    use crate::format::{Section, FIXED_HEADER, PIPELINE_RECORD, SECTION_ROW};
    use crate::reader::Archive;
    use crate::writer::prepare_shard;
    use crate::writer::ArchiveMeta;

    /// The crate example's two pipelines as shard 1/3 (with `None`, unsharded).
    fn archive(shard: Option<&ShardRecord>) -> (Vec<WriteEntry>, Vec<u8>) {
        let entries = Archive::from_bytes(crate::__doc_example_archive()).unwrap().entries().unwrap();
        let mut out = Vec::new();
        prepare_shard(&entries, &ArchiveMeta::new("example"), shard).write_to(&mut out).unwrap();
        (entries, out)
    }

    fn section(b: &[u8], s: Section) -> (usize, usize) {
        let row = FIXED_HEADER + (s as usize - 1) * SECTION_ROW;
        let at = |o: usize| u64::from_le_bytes(b[row + o..row + o + 8].try_into().unwrap()) as usize;
        (at(8), at(16))
    }

    const RECORD: ShardRecord = ShardRecord { index: 1, count: 3, script: 0x00c0_ffee };

    #[test]
    fn salvage_keeps_the_shard_record_of_an_intact_or_partly_damaged_shard() {
        let (entries, bytes) = archive(Some(&RECORD));
        let (got, meta, report) = super::salvage(&bytes).unwrap();
        assert_eq!((report.shard, report.shard_lost.as_deref()), (Some(RECORD), None));
        let mut again = Vec::new();
        prepare_shard(&got, &meta, report.shard.as_ref()).write_to(&mut again).unwrap();
        assert_eq!(again, bytes, "an intact shard archive salvages to itself, record and all");
        assert_eq!(got.len(), entries.len());

        // One pipeline record damaged: that pipeline is lost, the archive is still shard 1/3.
        let (table, _) = section(&bytes, Section::Pipelines);
        let mut bad = bytes.clone();
        bad[table + PIPELINE_RECORD + 3] ^= 0x10;
        let (got, _, report) = super::salvage(&bad).unwrap();
        assert_eq!((got.len(), report.lost.len()), (entries.len() - 1, 1));
        assert_eq!((report.shard, report.shard_lost), (Some(RECORD), None));

        // Cut short in the stage table (the meta section comes first and survives).
        let (stages, len) = section(&bytes, Section::Stages);
        let (_, _, report) = super::salvage(&bytes[..stages + len / 2]).unwrap();
        assert!(report.recovered < entries.len());
        assert_eq!(report.shard, Some(RECORD));

        // An unsharded archive has nothing to keep and nothing to report.
        let (_, plain) = archive(None);
        let (_, _, report) = super::salvage(&plain).unwrap();
        assert_eq!((report.shard, report.shard_lost), (None, None));
    }

    #[test]
    fn salvage_reports_the_bytes_a_cut_file_is_missing_even_where_no_record_remains() {
        let (entries, bytes) = archive(None);
        let (_, _, report) = super::salvage(&bytes).unwrap();
        assert_eq!((report.missing_bytes, report.pipeline_records_declared), (0, entries.len()));
        // Cut before the pipeline table: no record is left to be reported lost, but the
        // section table still says how much is gone.
        let (table, _) = section(&bytes, Section::Pipelines);
        let (got, _, report) = super::salvage(&bytes[..table]).unwrap();
        assert!(got.is_empty() && report.lost.is_empty());
        assert_eq!(report.pipeline_records, 0);
        assert_eq!(report.pipeline_records_declared, entries.len());
        assert_eq!(report.missing_bytes, (bytes.len() - table) as u64);
    }

    #[test]
    fn salvage_drops_a_shard_record_its_meta_section_no_longer_vouches_for() {
        let (entries, bytes) = archive(Some(&RECORD));
        let text = RECORD.to_text();
        let at = bytes.windows(text.len()).position(|w| w == text.as_bytes()).unwrap();
        // `shard=1/3` → `shard=0/3`: still a well-formed record, but not the one written.
        let mut bad = bytes.clone();
        bad[at + "shard=".len()] = b'0';
        let (got, _, report) = super::salvage(&bad).unwrap();
        assert_eq!(report.shard, None, "a record the meta checksum does not cover is not trusted");
        let why = report.shard_lost.unwrap();
        assert!(why.contains("fails its checksum") && why.contains("shard=0/3"), "{why}");
        assert_eq!(got.len(), entries.len(), "the pipelines do not depend on the record");
        // Any other flip inside the record text, e.g. of the script hash, is caught the same way.
        let mut bad = bytes.clone();
        bad[at + text.len() - 1] ^= 0x01;
        let (_, _, report) = super::salvage(&bad).unwrap();
        assert_eq!(report.shard, None);
        assert!(report.shard_lost.is_some_and(|w| w.contains("fails its checksum")));
    }
}
