//! The bounds-checked archive reader.
//!
//! `open` checks the header and section table only (constant time whatever the archive's
//! size); each lookup checks the records it touches; [`Archive::verify`] checks everything.
//! Every offset and length is checked before use, every count is derived from a checked
//! section length, and nothing is allocated from a length read out of the file.

use crate::blob::Blob;
use crate::entry::StateKind;
use crate::error::ArchiveError;
use crate::format::*;
use crate::key::{checksum64, content_hash, KeyContext, PipelineKey, StageKey};
use crate::layout::PipelineLayout;
use crate::native::{NativePipeline, Specialization};
use crate::render_state::RenderState;
use crate::types::{PipelineKind, ShaderStage, Target, TargetSet, TARGET_COUNT};
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Result<T> = std::result::Result<T, ArchiveError>;

mod device;
#[cfg(feature = "write")]
mod entries;
#[cfg(feature = "sign")]
mod signature;
mod verify;
#[cfg(feature = "vulkan")]
pub(crate) use device::DeviceSlot;
pub use device::{BinaryRef, BinarySetRef, DeviceMismatch, DeviceRef, SharedBinaries};
pub use verify::VerifyReport;

enum Data {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Data {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
        }
    }
}

/// An open, immutable archive.
///
/// Three ways to get one: [`Archive::open`] (memory-mapped: no copy, pages read on demand;
/// read its note on files changed underneath), [`Archive::read`] and [`Archive::from_bytes`]
/// (owned bytes: immune to anything done to the file later). All three check the header and
/// section table; the reader never panics on any bytes and reports the offset of any damage.
///
/// Thread safety: `Send + Sync`; all methods take `&self` and may be called from any number
/// of threads at once. Lookups are O(log n) binary searches over the memory-mapped tables.
pub struct Archive {
    data: Data,
    path: Option<PathBuf>,
    targets: TargetSet,
    target_options: u128,
    target_options_text: String,
    // Checked at open in every build; read back only by the writer tier.
    #[cfg_attr(not(feature = "write"), allow(dead_code))]
    shard: Option<crate::format::ShardRecord>,
    sections: [(usize, usize); SECTION_COUNT],
    pipeline_count: usize,
    blob_count: usize,
    stage_count: usize,
    label_count: usize,
    device_count: usize,
    device_pipeline_count: usize,
    binary_count: usize,
}

pub(super) fn u32_at(b: &[u8], off: usize) -> Result<u32> {
    off.checked_add(4)
        .and_then(|end| b.get(off..end))
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| ArchiveError::corrupt(off, "read past the end of the file"))
}
pub(super) fn u64_at(b: &[u8], off: usize) -> Result<u64> {
    off.checked_add(8)
        .and_then(|end| b.get(off..end))
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| ArchiveError::corrupt(off, "read past the end of the file"))
}
pub(super) fn u128_at(b: &[u8], off: usize) -> Result<u128> {
    off.checked_add(16)
        .and_then(|end| b.get(off..end))
        .and_then(|s| s.try_into().ok())
        .map(u128::from_le_bytes)
        .ok_or_else(|| ArchiveError::corrupt(off, "read past the end of the file"))
}
fn usize_of(v: u64, off: usize) -> Result<usize> {
    usize::try_from(v).map_err(|_| ArchiveError::corrupt(off, format!("value {v} does not fit in memory")))
}

impl Archive {
    /// Opens and memory-maps `path`, checking the header and section table.
    ///
    /// **What the mapped reader assumes.** The file is not truncated or rewritten *in place*
    /// while this `Archive` is alive. Granary itself never does that: every write goes to a
    /// temporary file that is renamed over the target, so a reader holding the old file keeps
    /// reading the old, complete bytes. But if another program truncates the file under the
    /// mapping, the operating system raises `SIGBUS` (Unix) or an access violation (Windows)
    /// on the next read, which no bounds check can catch, and a rewrite in place changes bytes
    /// that were already checked. Where the file may be changed underneath (a launcher that
    /// patches it, a shared network folder), use [`Archive::read`], which copies the file into
    /// memory and is then immune; its cost is one read of the file.
    pub fn open(path: &Path) -> Result<Archive> {
        let file = std::fs::File::open(path).map_err(|e| ArchiveError::io(path, e))?;
        // SAFETY: the mapping is read-only and granary never modifies an archive in place:
        // every write goes to a temporary file that is renamed over the target, which leaves
        // existing mappings of the old file intact. Another process truncating the file while
        // it is mapped is outside what any mmap-based reader can defend against; use
        // `Archive::read` when the file may be changed underneath. Bytes are only ever read
        // through bounds-checked slices, never reinterpreted.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ArchiveError::io(path, e))?;
        Self::from_data(Data::Mapped(map), Some(path.to_path_buf())).map_err(|e| e.with_path(path))
    }

    /// Reads `path` fully into memory (no mapping), checking the header and section table.
    /// Nothing another process does to the file afterwards can affect this `Archive`.
    pub fn read(path: &Path) -> Result<Archive> {
        let bytes = std::fs::read(path).map_err(|e| ArchiveError::io(path, e))?;
        Self::from_data(Data::Owned(bytes), Some(path.to_path_buf())).map_err(|e| e.with_path(path))
    }

    /// An archive over bytes already in memory (e.g. embedded with `include_bytes!`, or read
    /// by the application's own file system layer), checking the header and section table.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Archive> {
        Self::from_data(Data::Owned(bytes), None)
    }

    fn from_data(data: Data, path: Option<PathBuf>) -> Result<Archive> {
        let b = data.bytes();
        if b.len() < HEADER_LEN {
            return Err(ArchiveError::corrupt(
                b.len(),
                format!("file is {} bytes, shorter than the {HEADER_LEN}-byte header", b.len()),
            ));
        }
        if b[..8] != MAGIC {
            return Err(ArchiveError::corrupt(0, "bad magic: not a granary archive"));
        }
        let version = u32_at(b, 8)?;
        if version != VERSION {
            return Err(ArchiveError::corrupt(
                8,
                format!("format version {version} is not supported (this granary reads {VERSION})"),
            ));
        }
        let stored = u64_at(b, HEADER_LEN - 8)?;
        if checksum64(&b[..HEADER_LEN - 8]) != stored {
            return Err(ArchiveError::corrupt(HEADER_LEN - 8, "header checksum mismatch"));
        }
        if u32_at(b, 12)? as usize != HEADER_LEN {
            return Err(ArchiveError::corrupt(12, "unexpected header length"));
        }
        let targets = TargetSet(u32_at(b, 16)?);
        if !targets.is_valid() {
            return Err(ArchiveError::corrupt(16, format!("unknown target bits {:#x}", targets.0)));
        }
        if u32_at(b, 20)? as usize != SECTION_COUNT {
            return Err(ArchiveError::corrupt(20, "unexpected section count"));
        }
        let target_options = u128_at(b, 24)?;
        let pipeline_count = u32_at(b, 40)? as usize;
        let blob_count = u32_at(b, 44)? as usize;
        let file_len = u64_at(b, 48)?;
        if file_len != b.len() as u64 {
            return Err(ArchiveError::corrupt(
                48,
                format!("header says the file is {file_len} bytes but it is {} (truncated or padded)", b.len()),
            ));
        }
        if u64_at(b, 56)? != 0 {
            return Err(ArchiveError::corrupt(56, "reserved header field is not zero"));
        }
        let mut sections = [(0usize, 0usize); SECTION_COUNT];
        let mut prev_end = HEADER_LEN;
        for (i, section) in Section::ALL.iter().enumerate() {
            let row = FIXED_HEADER + i * SECTION_ROW;
            if u32_at(b, row)? != *section as u32 {
                return Err(ArchiveError::corrupt(row, format!("section {i} should be the {}", section.name())));
            }
            if u32_at(b, row + 4)? != 0 {
                return Err(ArchiveError::corrupt(row + 4, "reserved section-table field is not zero"));
            }
            let off = usize_of(u64_at(b, row + 8)?, row + 8)?;
            let len = usize_of(u64_at(b, row + 16)?, row + 16)?;
            let end = off.checked_add(len).filter(|e| *e <= b.len());
            let Some(end) = end else {
                return Err(ArchiveError::corrupt(
                    row + 8,
                    format!("{} section ({off:#x}+{len:#x}) runs past the end of the file", section.name()),
                ));
            };
            if off % ALIGN != 0 || off < prev_end {
                return Err(ArchiveError::corrupt(
                    row + 8,
                    format!(
                        "{} section offset {off:#x} is misaligned or overlaps the previous section",
                        section.name()
                    ),
                ));
            }
            if let Some(rs) = section.record_size() {
                if len % rs != 0 {
                    return Err(ArchiveError::corrupt(
                        row + 16,
                        format!("{} length {len} is not a multiple of its {rs}-byte records", section.name()),
                    ));
                }
            }
            sections[i] = (off, len);
            prev_end = end;
        }
        let count = |s: Section| sections[s as usize - 1].1 / s.record_size().unwrap_or(1);
        if count(Section::Pipelines) != pipeline_count {
            return Err(ArchiveError::corrupt(40, "pipeline count does not match the pipeline table"));
        }
        if count(Section::BlobIndex) != blob_count {
            return Err(ArchiveError::corrupt(44, "blob count does not match the blob index"));
        }
        let stage_count = count(Section::Stages);
        let label_count = count(Section::Labels);
        let device_count = count(Section::Devices);
        if device_count > MAX_DEVICES {
            return Err(ArchiveError::corrupt(
                FIXED_HEADER + (Section::Devices as usize - 1) * SECTION_ROW + 16,
                format!("{device_count} devices (at most {MAX_DEVICES})"),
            ));
        }
        let device_pipeline_count = count(Section::DevicePipelines);
        let binary_count = count(Section::Binaries);
        // The signature section (docs/FORMAT.md §1.12) is empty or exactly one signature, and
        // ends the file, so that the signed bytes are everything before the last 64.
        let (soff, slen) = sections[Section::Signature as usize - 1];
        if (slen != 0 && slen != SIGNATURE_SECTION) || soff.checked_add(slen) != Some(b.len()) {
            return Err(ArchiveError::corrupt(
                FIXED_HEADER + (Section::Signature as usize - 1) * SECTION_ROW + 8,
                format!(
                    "signature section ({soff:#x}+{slen}) is neither empty nor {SIGNATURE_SECTION} bytes ending the file"
                ),
            ));
        }
        let (moff, mlen) = sections[Section::Meta as usize - 1];
        let meta = &b[moff..moff + mlen];
        let mut pos = 0usize;
        let mut strings = Vec::with_capacity(3);
        for _ in 0..3 {
            let len =
                u32_at(meta, pos).map_err(|_| ArchiveError::corrupt(moff + pos, "meta section truncated"))? as usize;
            let end = pos.checked_add(4).and_then(|p| p.checked_add(len));
            let s = end
                .and_then(|end| meta.get(pos + 4..end))
                .ok_or_else(|| ArchiveError::corrupt(moff + pos, "meta string runs past its section"))?;
            let s = std::str::from_utf8(s)
                .map_err(|_| ArchiveError::corrupt(moff + pos + 4, "meta string is not UTF-8"))?;
            strings.push(s.to_string());
            pos = end.unwrap_or(usize::MAX);
        }
        let shard = match strings.last().map(String::as_str) {
            None | Some("") => None,
            Some(text) => match crate::format::ShardRecord::parse(text) {
                Some(r) => Some(r),
                None => {
                    return Err(ArchiveError::corrupt(moff, "reserved meta string is neither empty nor a shard record"))
                }
            },
        };
        if pos != mlen {
            return Err(ArchiveError::corrupt(moff + pos.min(mlen), "trailing bytes in the meta section"));
        }
        strings.pop();
        let target_options_text = strings.pop().unwrap_or_default();
        if content_hash(target_options_text.as_bytes()).0 != target_options {
            return Err(ArchiveError::corrupt(
                24,
                "writer-options fingerprint does not match the writer options in the meta section",
            ));
        }
        Ok(Archive {
            data,
            path,
            targets,
            target_options,
            target_options_text,
            shard,
            sections,
            pipeline_count,
            blob_count,
            stage_count,
            label_count,
            device_count,
            device_pipeline_count,
            binary_count,
        })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.data.bytes()
    }
    pub(crate) fn section(&self, s: Section) -> (usize, usize) {
        self.sections[s as usize - 1]
    }
    /// The bytes of section `s` its section-table checksum covers: all of them, except in the
    /// signature section, whose checksum stops before the signature (the signature covers
    /// the checksum, so it cannot be covered by it).
    pub(super) fn checksummed(&self, s: Section) -> (usize, usize) {
        let (off, len) = self.section(s);
        match s {
            Section::Signature => (off, len.min(SIGNATURE_HEAD)),
            _ => (off, len),
        }
    }

    /// Who signed this archive: the public key and signature its signature section holds, or
    /// `None` for an unsigned archive (docs/FORMAT.md §1.12). Checks the section's structure
    /// (magic, scheme, reserved bytes, checksum), not the signature itself: that is
    /// [`Archive::verify_signature`] (feature `sign`), against a key the caller trusts.
    /// Constant time.
    pub fn signature(&self) -> Result<Option<SignatureInfo>> {
        let (off, len) = self.section(Section::Signature);
        if len == 0 {
            return Ok(None);
        }
        let b = self.bytes();
        let row = FIXED_HEADER + (Section::Signature as usize - 1) * SECTION_ROW;
        let sec = off
            .checked_add(SIGNATURE_SECTION)
            .and_then(|end| b.get(off..end))
            .ok_or_else(|| ArchiveError::corrupt(off, "signature section runs past the end of the file"))?;
        let head = &sec[..SIGNATURE_HEAD];
        if checksum64(head) != u64_at(b, row + 24)? {
            return Err(ArchiveError::corrupt(off, "signature section checksum mismatch"));
        }
        if head[..4] != SIGNATURE_MAGIC {
            return Err(ArchiveError::corrupt(off, "signature section has a bad magic"));
        }
        let scheme = u32_at(head, 4)?;
        if scheme != SIGNATURE_SCHEME_ED25519 {
            return Err(ArchiveError::corrupt(
                off + 4,
                format!("unknown signature scheme {scheme} (this granary knows 1, Ed25519)"),
            ));
        }
        if u64_at(head, 8)? != 0 {
            return Err(ArchiveError::corrupt(off + 8, "reserved signature-section bytes are not zero"));
        }
        let mut info = SignatureInfo { public_key: [0; PUBLIC_KEY_LEN], signature: [0; SIGNATURE_LEN] };
        info.public_key.copy_from_slice(&sec[16..SIGNATURE_HEAD]);
        info.signature.copy_from_slice(&sec[SIGNATURE_HEAD..]);
        Ok(Some(info))
    }

    /// `verify`'s part for the signature section: its structure and, with the `sign` feature,
    /// that the signature verifies under the key it names (which catches any changed byte,
    /// the signature's own included, but says nothing about who signed: that is
    /// [`Archive::verify_signature`]).
    pub(super) fn verify_signature_section(&self) -> Result<()> {
        let info = self.signature()?;
        #[cfg(feature = "sign")]
        if let Some(info) = info {
            signature::check_under_own_key(self, &info)?;
        }
        #[cfg(not(feature = "sign"))]
        let _ = info;
        Ok(())
    }
    fn record(&self, s: Section, i: usize) -> Result<(usize, &[u8])> {
        let (off, len) = self.section(s);
        let size = s.record_size().unwrap_or(1);
        let start = i.checked_mul(size).and_then(|x| x.checked_add(off));
        match start {
            Some(start) if i * size < len => {
                let rec = start
                    .checked_add(size)
                    .and_then(|end| self.bytes().get(start..end))
                    .ok_or_else(|| ArchiveError::corrupt(start, "record past end"))?;
                Ok((start, rec))
            }
            _ => Err(ArchiveError::corrupt(off, format!("{} index {i} out of range", s.name()))),
        }
    }
    fn string(&self, off: u32, len: u32, at: usize) -> Result<&str> {
        let (soff, slen) = self.section(Section::Strings);
        let (off, len) = (off as usize, len as usize);
        if len > MAX_NAME || off.checked_add(len).is_none_or(|e| e > slen) {
            return Err(ArchiveError::corrupt(
                at,
                format!("string reference {off:#x}+{len} is outside the strings section"),
            ));
        }
        std::str::from_utf8(&self.bytes()[soff + off..soff + off + len])
            .map_err(|_| ArchiveError::corrupt(soff + off, "string is not UTF-8"))
    }

    /// Number of pipelines.
    pub fn len(&self) -> usize {
        self.pipeline_count
    }
    /// Whether the archive holds no pipeline.
    pub fn is_empty(&self) -> bool {
        self.pipeline_count == 0
    }
    /// Number of distinct blobs.
    pub fn blob_count(&self) -> usize {
        self.blob_count
    }
    /// Targets with outputs in this archive.
    pub fn targets(&self) -> TargetSet {
        self.targets
    }
    /// The writer-options fingerprint keys were computed under.
    pub fn key_context(&self) -> KeyContext {
        KeyContext { target_options: self.target_options }
    }
    /// Which shard of which script this archive is (`harvest --shard I/N`), or `None` for an
    /// unsharded archive (docs/FORMAT.md §1.4.1). Feature `write` (merge and prune use it).
    #[cfg(feature = "write")]
    pub fn shard(&self) -> Option<crate::format::ShardRecord> {
        self.shard
    }
    /// The writer options in words.
    pub fn target_options_text(&self) -> &str {
        &self.target_options_text
    }
    /// File size in bytes.
    pub fn size(&self) -> usize {
        self.bytes().len()
    }
    /// The file this was opened from.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The pipeline at table index `i` (sorted by key), its record checked.
    pub fn pipeline(&self, i: usize) -> Result<PipelineRef<'_>> {
        let (at, rec) = self.record(Section::Pipelines, i)?;
        if checksum64(&rec[..40]) != u64_at(rec, 40)? {
            return Err(ArchiveError::corrupt(at, format!("pipeline record {i} checksum mismatch")));
        }
        let key = PipelineKey(u128_at(rec, 0)?);
        let kind = PipelineKind::from_u32(u32_at(rec, 16)?)
            .ok_or_else(|| ArchiveError::corrupt(at + 16, "unknown pipeline kind"))?;
        let first_stage = u32_at(rec, 20)? as usize;
        let stage_count = u32_at(rec, 24)?;
        let end = first_stage.checked_add(stage_count as usize);
        if stage_count == 0 || stage_count > MAX_STAGES_PER_PIPELINE || end.is_none_or(|e| e > self.stage_count) {
            return Err(ArchiveError::corrupt(at + 20, format!("pipeline record {i} has an invalid stage range")));
        }
        let layout = u32_at(rec, 28)?;
        if layout != NO_BLOB && layout as usize >= self.blob_count {
            return Err(ArchiveError::corrupt(
                at + 28,
                format!("pipeline record {i}: layout blob {layout} is past the blob index"),
            ));
        }
        let state = u32_at(rec, 32)?;
        // Which form the state has, and whether it fits the pipeline, is read from the blob
        // itself: `PipelineRef::state_kind` (and `verify`) check it.
        if state != NO_BLOB && state as usize >= self.blob_count {
            return Err(ArchiveError::corrupt(
                at + 32,
                format!("pipeline record {i}: state blob {state} is past the blob index"),
            ));
        }
        if rec[36..40].iter().any(|b| *b != 0) {
            return Err(ArchiveError::corrupt(at + 36, format!("pipeline record {i}: reserved bytes are not zero")));
        }
        Ok(PipelineRef {
            archive: self,
            index: i,
            key,
            kind,
            first_stage,
            stage_count: stage_count as usize,
            layout,
            state,
        })
    }

    fn key_at(&self, i: usize) -> Result<u128> {
        let (_, rec) = self.record(Section::Pipelines, i)?;
        u128_at(rec, 0)
    }

    /// The pipeline with `key`, found by binary search.
    pub fn get(&self, key: PipelineKey) -> Result<Option<PipelineRef<'_>>> {
        let (mut lo, mut hi) = (0usize, self.pipeline_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key_at(mid)?.cmp(&key.0) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.pipeline(mid).map(Some),
            }
        }
        Ok(None)
    }

    fn label_at(&self, i: usize) -> Result<(&str, usize)> {
        let (at, rec) = self.record(Section::Labels, i)?;
        let (off, len, pipe) = (u32_at(rec, 0)?, u32_at(rec, 4)?, u32_at(rec, 8)?);
        let s = self.string(off, len, at)?;
        let mut sum_input = [0u8; 12];
        sum_input.copy_from_slice(&rec[..12]);
        let sum = {
            let mut v = Vec::with_capacity(12 + s.len());
            v.extend_from_slice(&sum_input);
            v.extend_from_slice(s.as_bytes());
            checksum64(&v) as u32
        };
        if sum != u32_at(rec, 12)? {
            return Err(ArchiveError::corrupt(at, format!("label record {i} checksum mismatch")));
        }
        if pipe as usize >= self.pipeline_count {
            return Err(ArchiveError::corrupt(
                at + 8,
                format!("label record {i} points at pipeline {pipe}, past the table"),
            ));
        }
        Ok((s, pipe as usize))
    }

    /// The pipeline with `label`, found by binary search over the label index.
    pub fn lookup_label(&self, label: &str) -> Result<Option<PipelineRef<'_>>> {
        let (mut lo, mut hi) = (0usize, self.label_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (s, pipe) = self.label_at(mid)?;
            match s.as_bytes().cmp(label.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return self.pipeline(pipe).map(Some),
            }
        }
        Ok(None)
    }

    /// All `(label, pipeline index)` pairs, sorted by label.
    pub fn labels(&self) -> Result<Vec<(&str, usize)>> {
        (0..self.label_count).map(|i| self.label_at(i)).collect()
    }

    /// Every pipeline in key order.
    pub fn iter(&self) -> impl Iterator<Item = Result<PipelineRef<'_>>> + '_ {
        (0..self.pipeline_count).map(move |i| self.pipeline(i))
    }

    /// The length of blob `i` from its index record (checksum checked; the bytes are not
    /// read).
    #[cfg_attr(not(feature = "vulkan"), allow(dead_code))]
    pub(crate) fn blob_len(&self, i: usize) -> Result<usize> {
        let (at, rec) = self.record(Section::BlobIndex, i)?;
        if checksum64(&rec[..32]) != u64_at(rec, 32)? {
            return Err(ArchiveError::corrupt(at, format!("blob index record {i} checksum mismatch")));
        }
        usize_of(u64_at(rec, 24)?, at + 24)
    }

    /// The bytes of blob `i`, checked against its content hash.
    pub(crate) fn blob(&self, i: usize) -> Result<(u128, &[u8])> {
        let (at, rec) = self.record(Section::BlobIndex, i)?;
        if checksum64(&rec[..32]) != u64_at(rec, 32)? {
            return Err(ArchiveError::corrupt(at, format!("blob index record {i} checksum mismatch")));
        }
        let hash = u128_at(rec, 0)?;
        let off = usize_of(u64_at(rec, 16)?, at + 16)?;
        let len = usize_of(u64_at(rec, 24)?, at + 24)?;
        let (doff, dlen) = self.section(Section::BlobData);
        if off % ALIGN != 0 || off.checked_add(len).is_none_or(|e| e > dlen) {
            return Err(ArchiveError::corrupt(
                at + 16,
                format!("blob {i} ({off:#x}+{len}) lies outside the blob data section"),
            ));
        }
        let bytes = &self.bytes()[doff + off..doff + off + len];
        if content_hash(bytes).0 != hash {
            return Err(ArchiveError::corrupt(doff + off, format!("blob {i} content does not match its hash")));
        }
        Ok((hash, bytes))
    }
}

/// The signature section of a signed archive (docs/FORMAT.md §1.12): which key signed it and
/// the signature, as stored. What [`Archive::signature`] returns; whether the signature is
/// valid, and by a key you trust, is what `Archive::verify_signature` (feature `sign`) checks.
///
/// Plain data; `Copy`, `Send + Sync`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignatureInfo {
    /// The signer's Ed25519 public key (the 32 bytes a `.pub` file holds as hex).
    pub public_key: [u8; PUBLIC_KEY_LEN],
    /// The Ed25519 signature of every byte of the file before it.
    pub signature: [u8; SIGNATURE_LEN],
}

impl SignatureInfo {
    /// The public key as 64 lower-case hex digits (the text of its `.pub` file).
    pub fn public_key_hex(&self) -> String {
        self.public_key.iter().map(|b| format!("{b:02x}")).collect()
    }
    /// The short form used in messages: the public key's first 16 hex digits.
    pub fn key_id(&self) -> String {
        crate::error::key_id(&self.public_key)
    }
}

impl std::fmt::Debug for SignatureInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignatureInfo").field("public_key", &self.public_key_hex()).finish_non_exhaustive()
    }
}

/// A pipeline inside an [`Archive`].
#[derive(Clone, Copy)]
pub struct PipelineRef<'a> {
    pub(crate) archive: &'a Archive,
    index: usize,
    key: PipelineKey,
    kind: PipelineKind,
    first_stage: usize,
    stage_count: usize,
    layout: u32,
    state: u32,
}

impl<'a> PipelineRef<'a> {
    /// Position in the key-sorted table.
    pub fn index(&self) -> usize {
        self.index
    }
    /// The pipeline key.
    pub fn key(&self) -> PipelineKey {
        self.key
    }
    /// Render or compute.
    pub fn kind(&self) -> PipelineKind {
        self.kind
    }
    /// The stages, each record checked.
    pub fn stages(&self) -> Result<Vec<StageRef<'a>>> {
        (self.first_stage..self.first_stage + self.stage_count).map(|i| self.archive.stage(i)).collect()
    }
    /// The encoded resource layout and binding maps (docs/FORMAT.md §1.6), checked against
    /// its content hash; `None` if the pipeline was archived without one.
    pub fn layout_bytes(&self) -> Result<Option<&'a [u8]>> {
        if self.layout == NO_BLOB {
            return Ok(None);
        }
        self.archive.blob(self.layout as usize).map(|b| Some(b.1))
    }
    /// The resource layout and, per stage, the Metal / HLSL / GLSL slot each resource landed
    /// in; `None` if the pipeline was archived without one.
    pub fn layout(&self) -> Result<Option<PipelineLayout>> {
        let Some(bytes) = self.layout_bytes()? else {
            return Ok(None);
        };
        let at = self.archive.section(Section::Pipelines).0 + self.index * PIPELINE_RECORD + 28;
        PipelineLayout::decode(bytes).map(Some).map_err(|e| ArchiveError::corrupt(at, e.to_string()))
    }
    /// The encoded state, whichever its form ([`state_kind`](Self::state_kind) says which):
    /// a [`RenderState`] (docs/FORMAT.md §1.11) or a
    /// [`NativePipeline`](crate::native::NativePipeline) (§1.13), checked against its content
    /// hash; `None` for a pipeline archived without one.
    pub fn state_bytes(&self) -> Result<Option<&'a [u8]>> {
        if self.state == NO_BLOB {
            return Ok(None);
        }
        self.archive.blob(self.state as usize).map(|b| Some(b.1))
    }
    /// Byte offset of the pipeline record's `state` field (where a bad state is reported).
    fn state_at(&self) -> usize {
        self.archive.section(Section::Pipelines).0 + self.index * PIPELINE_RECORD + 32
    }
    /// The state's form and bytes: its magic names the form, and a portable state on a compute
    /// pipeline is refused.
    fn state_blob(&self) -> Result<Option<(StateKind, &'a [u8])>> {
        let Some(bytes) = self.state_bytes()? else {
            return Ok(None);
        };
        let Some(kind) = StateKind::of(bytes) else {
            return Err(ArchiveError::corrupt(
                self.state_at(),
                format!(
                    "pipeline record {}: state blob {} is neither a render state (GST1) nor a native Vulkan state (GNV1)",
                    self.index, self.state
                ),
            ));
        };
        if kind == StateKind::Portable && self.kind != PipelineKind::Render {
            return Err(ArchiveError::corrupt(
                self.state_at(),
                format!(
                    "pipeline record {}: a render state (GST1) on a compute pipeline (only a native state may describe one)",
                    self.index
                ),
            ));
        }
        Ok(Some((kind, bytes)))
    }
    /// Which form the pipeline's state has: [`StateKind::Portable`] (a [`RenderState`], render
    /// pipelines only) or [`StateKind::Native`] (a
    /// [`NativePipeline`](crate::native::NativePipeline), render or compute); `None` for a
    /// pipeline archived without one. Reads the state blob (hash-checked), not its contents.
    pub fn state_kind(&self) -> Result<Option<StateKind>> {
        Ok(self.state_blob()?.map(|(k, _)| k))
    }
    /// A render pipeline's portable fixed-function state (vertex input, primitive, colour
    /// attachments, depth/stencil, samples): with the stages and [`layout`](Self::layout),
    /// everything a run-time loader needs to create the driver pipeline. `None` for a
    /// pipeline archived without one and for one whose state is native
    /// ([`native_state`](Self::native_state)).
    pub fn state(&self) -> Result<Option<RenderState>> {
        match self.state_blob()? {
            Some((StateKind::Portable, bytes)) => RenderState::decode(bytes)
                .map(Some)
                .map_err(|e| ArchiveError::corrupt(self.state_at(), format!("pipeline record {}: {e}", self.index))),
            _ => Ok(None),
        }
    }
    /// The pipeline's native Vulkan state (docs/FORMAT.md §1.13): everything its
    /// `Vk*PipelineCreateInfo` says apart from the shader modules, as the application created
    /// it. Checked to fit the pipeline: one [`StageState`](crate::native::StageState) per stage
    /// and a graphics state exactly for a render pipeline. `None` for a pipeline archived
    /// without one and for one whose state is portable ([`state`](Self::state)).
    pub fn native_state(&self) -> Result<Option<NativePipeline>> {
        let Some((StateKind::Native, bytes)) = self.state_blob()? else {
            return Ok(None);
        };
        let bad =
            |what: String| ArchiveError::corrupt(self.state_at(), format!("pipeline record {}: {what}", self.index));
        let state = NativePipeline::decode(bytes).map_err(|e| bad(e.to_string()))?;
        crate::entry::native_fits(&state, self.kind, self.stage_count).map_err(bad)?;
        Ok(Some(state))
    }
}

/// One stage of an archived pipeline.
#[derive(Clone, Copy)]
pub struct StageRef<'a> {
    archive: &'a Archive,
    /// Stage function key.
    pub key: StageKey,
    /// Stage.
    pub stage: ShaderStage,
    /// Entry point name.
    pub entry_point: &'a str,
    blobs: [u32; TARGET_COUNT],
    specialization: u32,
    /// Byte offset of the stage record.
    at: usize,
}

impl<'a> StageRef<'a> {
    fn blob_index(&self, t: Target) -> Option<u32> {
        let i = self.blobs[t as usize];
        (i != NO_BLOB).then_some(i)
    }
    /// The output for `target`, checked against its content hash; `None` if not archived.
    pub fn output(&self, target: Target) -> Result<Option<&'a [u8]>> {
        match self.blob_index(target) {
            None => Ok(None),
            Some(i) if (i as usize) < self.archive.blob_count => self.archive.blob(i as usize).map(|b| Some(b.1)),
            Some(i) => Err(ArchiveError::corrupt(
                self.archive.section(Section::BlobIndex).0,
                format!("stage refers to blob {i}, past the blob index"),
            )),
        }
    }
    /// The stage's encoded `VkSpecializationInfo` (a
    /// [`Specialization`](crate::native::Specialization), docs/FORMAT.md §1.13), checked
    /// against its content hash; `None` when the stage has nothing to specialize.
    pub fn specialization_bytes(&self) -> Result<Option<&'a [u8]>> {
        if self.specialization == NO_BLOB {
            return Ok(None);
        }
        self.archive.blob(self.specialization as usize).map(|b| Some(b.1))
    }
    /// The `VkSpecializationInfo` the stage's SPIR-V module is created with (the
    /// application's own constants, applied by the driver), decoded and checked
    /// ([`Specialization::check`](crate::native::Specialization::check): every map entry
    /// inside the data); `None` when the stage has nothing to specialize.
    pub fn specialization(&self) -> Result<Option<Specialization>> {
        let Some(bytes) = self.specialization_bytes()? else {
            return Ok(None);
        };
        let bad = |what: String| {
            ArchiveError::corrupt(self.at + 44, format!("stage '{}' ({}): {what}", self.entry_point, self.key))
        };
        crate::entry::check_specialization(bytes).map(Some).map_err(bad)
    }
}

impl Archive {
    fn stage(&self, i: usize) -> Result<StageRef<'_>> {
        let (at, rec) = self.record(Section::Stages, i)?;
        let (off, len) = (u32_at(rec, 20)?, u32_at(rec, 24)?);
        let name = self.string(off, len, at + 20)?;
        let mut v = Vec::with_capacity(48 + name.len());
        v.extend_from_slice(&rec[..48]);
        v.extend_from_slice(name.as_bytes());
        if checksum64(&v) != u64_at(rec, 48)? {
            return Err(ArchiveError::corrupt(at, format!("stage record {i} checksum mismatch")));
        }
        let stage =
            ShaderStage::from_u32(u32_at(rec, 16)?).ok_or_else(|| ArchiveError::corrupt(at + 16, "unknown stage"))?;
        let specialization = u32_at(rec, 44)?;
        if specialization != NO_BLOB && specialization as usize >= self.blob_count {
            return Err(ArchiveError::corrupt(
                at + 44,
                format!("stage record {i}: specialization blob {specialization} is past the blob index"),
            ));
        }
        let mut blobs = [NO_BLOB; TARGET_COUNT];
        for (t, b) in blobs.iter_mut().enumerate() {
            *b = u32_at(rec, 28 + 4 * t)?;
        }
        Ok(StageRef {
            archive: self,
            key: StageKey(u128_at(rec, 0)?),
            stage,
            entry_point: name,
            blobs,
            specialization,
            at,
        })
    }
}
