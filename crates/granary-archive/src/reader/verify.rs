//! Whole-file verification and reading every entry back.

use super::*;

/// Summary returned by [`Archive::verify`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct VerifyReport {
    /// Pipelines.
    pub pipelines: usize,
    /// Stage records.
    pub stages: usize,
    /// Distinct blobs.
    pub blobs: usize,
    /// Label records.
    pub labels: usize,
    /// Device sections.
    pub devices: usize,
    /// Device-pipeline records (pipelines with binaries or compiled into a device's caches,
    /// counted per device).
    pub device_pipelines: usize,
    /// Binary records (driver binaries and pipeline-cache records).
    pub binaries: usize,
    /// File size.
    pub bytes: usize,
}

impl Archive {
    /// Checks every byte: section checksums, every record, sort orders, every reference and
    /// every blob's content hash; that every layout, state (render or native) and stage
    /// specialization decodes, each state fits its pipeline and each specialization's map
    /// entries lie inside its data; and the signature section (docs/FORMAT.md §1.12): its
    /// structure and, with the `sign` feature, that the signature verifies under the key it
    /// names (which says nothing about who signed: see `verify_signature`).
    pub fn verify(&self) -> Result<VerifyReport> {
        let b = self.bytes();
        for (i, s) in Section::ALL.iter().enumerate() {
            let (off, len) = self.checksummed(*s);
            let row = FIXED_HEADER + i * SECTION_ROW;
            if checksum64(&b[off..off + len]) != u64_at(b, row + 24)? {
                return Err(ArchiveError::corrupt(off, format!("{} section checksum mismatch", s.name())));
            }
        }
        // Padding between and after sections must be zero, so that every byte is checked.
        let mut pad_start = HEADER_LEN;
        for s in Section::ALL.iter() {
            let (off, len) = self.section(*s);
            if let Some(p) = b[pad_start..off].iter().position(|x| *x != 0) {
                return Err(ArchiveError::corrupt(pad_start + p, "non-zero padding byte"));
            }
            pad_start = off + len;
        }
        if let Some(p) = b[pad_start..].iter().position(|x| *x != 0) {
            return Err(ArchiveError::corrupt(pad_start + p, "non-zero padding byte"));
        }
        let mut prev: Option<u128> = None;
        for i in 0..self.blob_count {
            let (hash, _) = self.blob(i)?;
            if prev.is_some_and(|p| p >= hash) {
                return Err(ArchiveError::corrupt(
                    self.section(Section::BlobIndex).0 + i * BLOB_RECORD,
                    "blob index is not strictly sorted",
                ));
            }
            prev = Some(hash);
        }
        let mut prev: Option<u128> = None;
        let mut next_stage = 0usize;
        let mut present_targets = 0u32;
        for i in 0..self.pipeline_count {
            let p = self.pipeline(i)?;
            let at = self.section(Section::Pipelines).0 + i * PIPELINE_RECORD;
            if prev.is_some_and(|k| k >= p.key.0) {
                return Err(ArchiveError::corrupt(at, "pipeline table is not strictly sorted by key"));
            }
            prev = Some(p.key.0);
            if p.first_stage != next_stage {
                return Err(ArchiveError::corrupt(at + 20, "stage ranges are not contiguous"));
            }
            next_stage += p.stage_count;
            p.layout()?;
            // Every state decodes in its form and fits its pipeline (stage count, kind).
            match p.state_kind()? {
                Some(StateKind::Portable) => drop(p.state()?),
                Some(StateKind::Native) => drop(p.native_state()?),
                None => {}
            }
            for s in p.stages()? {
                s.specialization()?;
                for t in Target::ALL {
                    if s.blob_index(t).is_some() {
                        present_targets |= 1 << t as u32;
                    }
                    if s.blob_index(t).is_some() && !self.targets.contains(t) {
                        return Err(ArchiveError::corrupt(
                            at,
                            format!("a stage has a {t} output but the header does not list {t}"),
                        ));
                    }
                    s.output(t)?;
                }
            }
        }
        if present_targets != self.targets.0 {
            return Err(ArchiveError::corrupt(
                16,
                format!(
                    "header lists targets {:#x} but the stages have outputs for {present_targets:#x}",
                    self.targets.0
                ),
            ));
        }
        if next_stage != self.stage_count {
            return Err(ArchiveError::corrupt(
                self.section(Section::Stages).0,
                "stage table has records no pipeline uses",
            ));
        }
        let mut prev: Option<(&str, usize)> = None;
        for i in 0..self.label_count {
            let cur = self.label_at(i)?;
            let at = self.section(Section::Labels).0 + i * LABEL_RECORD;
            if prev.is_some_and(|p| (p.0.as_bytes(), p.1) >= (cur.0.as_bytes(), cur.1)) {
                return Err(ArchiveError::corrupt(at, "label index is not strictly sorted"));
            }
            if let Some(p) = prev.filter(|p| p.0 == cur.0) {
                return Err(ArchiveError::corrupt(
                    at,
                    format!("label '{}' names two pipelines ({} and {}); a label names exactly one", cur.0, p.1, cur.1),
                ));
            }
            prev = Some(cur);
        }
        self.verify_devices()?;
        self.verify_signature_section()?;
        Ok(VerifyReport {
            pipelines: self.pipeline_count,
            stages: self.stage_count,
            blobs: self.blob_count,
            labels: self.label_count,
            devices: self.device_count,
            device_pipelines: self.device_pipeline_count,
            binaries: self.binary_count,
            bytes: b.len(),
        })
    }
}
