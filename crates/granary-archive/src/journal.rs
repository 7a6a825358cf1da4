//! The append-only journal a harvest keeps beside its archive (`OUT.journal`), so that an
//! intermediate flush costs time proportional to what is new since the last flush instead of
//! rewriting the whole archive. Specified in docs/FORMAT.md §2.
//!
//! Layout: a 40-byte header written once (magic, version, header length, writer-options
//! fingerprint, checksum), then records, each `length u64 | xxh3-64 of the payload u64 |
//! payload`, where the payload is a complete archive (the deterministic writer's output)
//! holding the entries compiled since the previous record. Reading a payload back goes through
//! the bounds-checked archive reader and its `verify`. A stage function whose outputs an
//! earlier record of the same journal already holds is written without outputs, and replay
//! restores them from that record: a stage function's outputs (shared by many pipelines, e.g.
//! a fragment function used across the whole workload) are written once per journal, so a
//! record costs what is new since the previous one.
//!
//! Invariants:
//! - A record is appended with one positioned write sequence and then `fsync`ed; an append
//!   that fails is cut off again, so every record that follows starts at a record boundary.
//! - Replay stops at the first record that is cut short or does not check out (a process
//!   killed mid-append, a damaged disk): everything before it is returned, the rest is
//!   reported and ignored, as Fossilize does with its stream archives.
//! - The journal never replaces the archive: it only adds entries to it on `--resume`, and
//!   the harvest deletes it once the final archive is durably in place.

use crate::durable::{parent_dir, sync_dir, SlowHalfway};
use crate::entry::WriteEntry;
use crate::entry::{PipelineEntry, TargetOutputs};
use crate::error::ArchiveError;
use crate::key::checksum64;
use crate::key::KeyContext;
use crate::reader::Archive;
use crate::writer::{encode, ArchiveMeta};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

/// Journal file magic.
pub const JOURNAL_MAGIC: [u8; 8] = *b"GRNJRNL\0";
/// Journal format version this build writes and reads.
pub const JOURNAL_VERSION: u32 = 3;
/// Bytes of the journal header.
pub const JOURNAL_HEADER_LEN: usize = 40;
/// Bytes of a record frame before its payload (length and checksum).
pub const JOURNAL_FRAME_LEN: usize = 16;

/// The journal that belongs to the archive at `archive`: the same path with `.journal`
/// appended to the file name.
pub fn journal_path(archive: &Path) -> PathBuf {
    let mut name = archive.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".journal");
    archive.with_file_name(name)
}

fn header(ctx: &KeyContext) -> [u8; JOURNAL_HEADER_LEN] {
    let mut h = [0u8; JOURNAL_HEADER_LEN];
    h[..8].copy_from_slice(&JOURNAL_MAGIC);
    h[8..12].copy_from_slice(&JOURNAL_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(JOURNAL_HEADER_LEN as u32).to_le_bytes());
    h[16..32].copy_from_slice(&ctx.target_options.to_le_bytes());
    let c = checksum64(&h[..32]);
    h[32..40].copy_from_slice(&c.to_le_bytes());
    h
}

/// An open journal, positioned for appending.
pub struct Journal {
    path: PathBuf,
    file: File,
    meta: ArchiveMeta,
    /// Length of the journal up to the end of its last complete record.
    len: u64,
    /// An append failed and could not be cut off again: further appends are refused.
    broken: bool,
    /// Stage functions whose outputs a record of this journal holds.
    stages: HashSet<u128>,
    /// Device caches (device id, content hash) a record of this journal holds.
    caches: HashSet<(u128, u128)>,
}

impl Journal {
    /// Creates the journal of `archive` (replacing any journal already there) with a header
    /// for `meta`'s writer options, and makes its creation durable. A new journal gets the
    /// archive's permission bits when the archive exists, `0666 & !umask` otherwise.
    pub fn create(archive: &Path, meta: &ArchiveMeta) -> Result<Journal, ArchiveError> {
        let path = journal_path(archive);
        let io = |e| ArchiveError::io(&path, e);
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&path).map_err(io)?;
        if let Ok(m) = std::fs::metadata(archive) {
            file.set_permissions(m.permissions()).map_err(io)?;
        }
        let h = header(&KeyContext { target_options: meta.target_options });
        file.write_all(&h).map_err(io)?;
        file.sync_all().map_err(io)?;
        sync_dir(parent_dir(&path)).map_err(io)?;
        Ok(Journal {
            path,
            file,
            meta: meta.clone(),
            len: JOURNAL_HEADER_LEN as u64,
            broken: false,
            stages: HashSet::new(),
            caches: HashSet::new(),
        })
    }

    /// Opens the existing journal of `archive` for appending after `replay` read it: cuts it
    /// to the end of its last intact record ([`JournalReplay::valid_len`]) so new records
    /// follow the intact ones, not a damaged tail.
    pub fn reopen(archive: &Path, meta: &ArchiveMeta, replay: &JournalReplay) -> Result<Journal, ArchiveError> {
        let path = journal_path(archive);
        let valid_len = replay.valid_len;
        let io = |e| ArchiveError::io(&path, e);
        if valid_len < JOURNAL_HEADER_LEN as u64 {
            return Err(ArchiveError::corrupt(
                valid_len as usize,
                "journal header is incomplete; create a new journal",
            ));
        }
        let file = std::fs::OpenOptions::new().write(true).open(&path).map_err(io)?;
        file.set_len(valid_len).map_err(io)?;
        file.sync_all().map_err(io)?;
        let caches = replay.device_caches.iter().map(|c| (c.device.id(), c.data.hash().0)).collect();
        Ok(Journal {
            path,
            file,
            meta: meta.clone(),
            len: valid_len,
            broken: false,
            stages: replay.stages.clone(),
            caches,
        })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of header and complete records.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the journal holds no record.
    pub fn is_empty(&self) -> bool {
        self.len <= JOURNAL_HEADER_LEN as u64
    }

    /// Sets the device pipeline caches the next records carry (each cache is written into
    /// one record of the journal only; replay returns them all).
    pub fn set_device_caches(&mut self, caches: Vec<crate::device::DeviceCache>) {
        self.meta.device_caches = caches;
    }

    /// Appends one record holding `entries` (with their device binaries) and the device
    /// caches of the journal's meta that no earlier record holds, and flushes it to disk.
    /// Returns the bytes appended (frame and payload). Cost is proportional to `entries` and
    /// their stage functions not yet in the journal, not to the journal. Refuses what
    /// [`write_entries`](crate::write_entries) refuses of entries and device data, before
    /// writing anything.
    pub fn append(&mut self, entries: &[WriteEntry]) -> Result<usize, ArchiveError> {
        let io = |e| ArchiveError::io(&self.path, e);
        if self.broken {
            return Err(io(std::io::Error::other("an earlier append failed and could not be undone")));
        }
        crate::writer::check_entries(entries)?;
        crate::writer::check_device_data(entries, &self.meta).map_err(ArchiveError::Incompatible)?;
        let mut record_meta = self.meta.clone();
        record_meta.device_caches.retain(|c| !self.caches.contains(&(c.device.id(), c.data.hash().0)));
        let new_caches: Vec<(u128, u128)> =
            record_meta.device_caches.iter().map(|c| (c.device.id(), c.data.hash().0)).collect();
        // Leave out the outputs of stage functions an earlier record holds.
        let mut new_stages = HashSet::new();
        let stripped: Vec<WriteEntry> = entries
            .iter()
            .map(|w| {
                let known = |s: &crate::entry::StageEntry| self.stages.contains(&s.key.0) && has_outputs(&s.outputs);
                for s in w.entry.stages.iter().filter(|s| !known(s) && has_outputs(&s.outputs)) {
                    new_stages.insert(s.key.0);
                }
                if !w.entry.stages.iter().any(known) {
                    return w.clone();
                }
                let mut e = PipelineEntry::clone(&w.entry);
                for s in e.stages.iter_mut().filter(|s| known(s)) {
                    s.outputs = TargetOutputs::default();
                }
                WriteEntry { entry: std::sync::Arc::new(e), labels: w.labels.clone(), binaries: w.binaries.clone() }
            })
            .collect();
        let payload = encode(&stripped, &record_meta);
        let mut frame = [0u8; JOURNAL_FRAME_LEN];
        frame[..8].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        frame[8..].copy_from_slice(&checksum64(&payload).to_le_bytes());
        let total = JOURNAL_FRAME_LEN + payload.len();
        let result = (|| {
            let mut f = &self.file;
            // Always write at the end of the last complete record.
            f.seek(std::io::SeekFrom::Start(self.len))?;
            match crate::fault::slow_write() {
                None => {
                    f.write_all(&frame)?;
                    f.write_all(&payload)?;
                }
                Some(delay) => {
                    let mut slow = SlowHalfway::new(&mut f, total, delay);
                    slow.write_all(&frame)?;
                    slow.write_all(&payload)?;
                }
            }
            self.file.sync_data()
        })();
        match result {
            Ok(()) => {
                self.len += total as u64;
                self.stages.extend(new_stages);
                self.caches.extend(new_caches);
                Ok(total)
            }
            Err(e) => {
                // Cut off the partial record so the next one starts on a record boundary.
                if self.file.set_len(self.len).and_then(|_| self.file.sync_all()).is_err() {
                    self.broken = true;
                }
                Err(io(e))
            }
        }
    }
}

fn has_outputs(o: &TargetOutputs) -> bool {
    o.0.iter().any(Option::is_some)
}

/// The part of a journal that replay ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DamagedTail {
    /// Offset of the first byte ignored.
    pub offset: u64,
    /// Bytes ignored (to the end of the file).
    pub bytes: u64,
    /// What was wrong there.
    pub why: String,
}

impl std::fmt::Display for DamagedTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ignored {} bytes from offset {:#x}: {}", self.bytes, self.offset, self.why)
    }
}

/// What [`replay_journal`] read.
pub struct JournalReplay {
    /// The journal file.
    pub path: PathBuf,
    /// The writer-options fingerprint in the header; `None` when even the header was cut
    /// short (nothing to replay).
    pub key_context: Option<KeyContext>,
    /// Intact records read.
    pub records: usize,
    /// Their entries with their device binaries, record by record (a key may repeat across
    /// records).
    pub entries: Vec<WriteEntry>,
    /// The device pipeline caches the intact records hold.
    pub device_caches: Vec<crate::device::DeviceCache>,
    /// Length of the header and the intact records: where the next append belongs.
    pub valid_len: u64,
    /// Stage functions whose outputs the intact records hold (later records may leave them
    /// out; see [`Journal::append`]).
    pub stages: HashSet<u128>,
    /// What was ignored after the intact records, if anything.
    pub damaged_tail: Option<DamagedTail>,
}

/// Reads the journal of `archive`, if there is one. A torn or damaged tail is not an error:
/// the intact records before it are returned and the tail is described in
/// [`JournalReplay::damaged_tail`]. A file that is not a granary journal at all, or one of
/// another journal format version, is an error (nothing is read from it).
pub fn replay_journal(archive: &Path) -> Result<Option<JournalReplay>, ArchiveError> {
    let path = journal_path(archive);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ArchiveError::io(&path, e)),
    };
    replay_bytes(&bytes, path.clone()).map(Some).map_err(|e| e.with_path(&path))
}

fn replay_bytes(b: &[u8], path: PathBuf) -> Result<JournalReplay, ArchiveError> {
    let len = b.len() as u64;
    let mut out = JournalReplay {
        path,
        key_context: None,
        records: 0,
        entries: Vec::new(),
        device_caches: Vec::new(),
        valid_len: 0,
        stages: HashSet::new(),
        damaged_tail: None,
    };
    // Outputs of every stage function the intact records hold, to restore left-out ones.
    let mut outputs: HashMap<u128, TargetOutputs> = HashMap::new();
    let damaged =
        |offset: usize, why: String| Some(DamagedTail { offset: offset as u64, bytes: len - offset as u64, why });
    // The header: written once, right after creation. A prefix of it (or zeros where a crash
    // kept the size but not the data) is a creation that did not finish.
    let unfinished = |h: &[u8]| h.iter().all(|&x| x == 0) || JOURNAL_MAGIC.starts_with(h);
    if b.len() < JOURNAL_HEADER_LEN {
        if !unfinished(b) && !unfinished(&b[..b.len().min(8)]) {
            return Err(ArchiveError::corrupt(0, "bad magic: not a granary journal"));
        }
        out.damaged_tail = if b.is_empty() { None } else { damaged(0, "the journal header is cut short".into()) };
        return Ok(out);
    }
    let h = &b[..JOURNAL_HEADER_LEN];
    if h.iter().all(|&x| x == 0) {
        out.damaged_tail = damaged(0, "the journal header is all zeros".into());
        return Ok(out);
    }
    if h[..8] != JOURNAL_MAGIC {
        return Err(ArchiveError::corrupt(0, "bad magic: not a granary journal"));
    }
    let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
    let version = u32_at(8);
    if version != JOURNAL_VERSION {
        return Err(ArchiveError::corrupt(
            8,
            format!("journal format version {version} is not supported (this granary reads {JOURNAL_VERSION})"),
        ));
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&h[32..40]);
    if checksum64(&h[..32]) != u64::from_le_bytes(sum) || u32_at(12) as usize != JOURNAL_HEADER_LEN {
        out.damaged_tail = damaged(0, "journal header checksum mismatch".into());
        return Ok(out);
    }
    let mut fp = [0u8; 16];
    fp.copy_from_slice(&h[16..32]);
    let ctx = KeyContext { target_options: u128::from_le_bytes(fp) };
    out.key_context = Some(ctx);
    let mut pos = JOURNAL_HEADER_LEN;
    out.valid_len = pos as u64;
    while pos < b.len() {
        let rest = &b[pos..];
        if rest.len() < JOURNAL_FRAME_LEN {
            out.damaged_tail = damaged(pos, "record frame cut short".into());
            break;
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&rest[..8]);
        let plen = u64::from_le_bytes(w);
        w.copy_from_slice(&rest[8..16]);
        let sum = u64::from_le_bytes(w);
        let avail = (rest.len() - JOURNAL_FRAME_LEN) as u64;
        if plen > avail {
            out.damaged_tail =
                damaged(pos, format!("record announces {plen} bytes but only {avail} follow (cut short)"));
            break;
        }
        // plen <= avail, which is a usize.
        let payload = &rest[JOURNAL_FRAME_LEN..JOURNAL_FRAME_LEN + plen as usize];
        if checksum64(payload) != sum {
            out.damaged_tail = damaged(pos, "record checksum mismatch".into());
            break;
        }
        let read = Archive::from_bytes(payload.to_vec())
            .and_then(|a| {
                a.verify()?;
                if a.key_context() != ctx {
                    return Err(ArchiveError::Incompatible(
                        "record built with other writer options than its journal".into(),
                    ));
                }
                Ok((a.entries()?, a.device_caches()?))
            })
            .and_then(|(entries, caches)| Ok((restore_outputs(entries, &mut outputs)?, caches)));
        match read {
            Ok((entries, caches)) => {
                out.entries.extend(entries);
                out.device_caches.extend(caches);
                out.records += 1;
                pos += JOURNAL_FRAME_LEN + payload.len();
                out.valid_len = pos as u64;
            }
            Err(e) => {
                out.damaged_tail = damaged(pos, format!("record is not a valid archive: {e}"));
                break;
            }
        }
    }
    out.stages = outputs.into_keys().collect();
    Ok(out)
}

/// Fills in the outputs a record left out (stage functions an earlier record holds) and
/// remembers the outputs it holds. A stage without outputs that no earlier record holds makes
/// the record invalid: nothing is ever restored from a guess.
fn restore_outputs(
    entries: Vec<WriteEntry>,
    known: &mut HashMap<u128, TargetOutputs>,
) -> Result<Vec<WriteEntry>, ArchiveError> {
    let mut added = HashMap::new();
    let mut out = Vec::with_capacity(entries.len());
    for w in entries {
        if w.entry.stages.iter().all(|s| has_outputs(&s.outputs)) {
            for s in &w.entry.stages {
                added.entry(s.key.0).or_insert_with(|| s.outputs.clone());
            }
            out.push(w);
            continue;
        }
        let mut e = PipelineEntry::clone(&w.entry);
        for s in &mut e.stages {
            if has_outputs(&s.outputs) {
                added.entry(s.key.0).or_insert_with(|| s.outputs.clone());
            } else {
                s.outputs = known.get(&s.key.0).cloned().ok_or_else(|| {
                    ArchiveError::Incompatible(format!(
                        "stage {:032x} has no outputs and no earlier record holds them",
                        s.key.0
                    ))
                })?;
            }
        }
        out.push(WriteEntry { entry: std::sync::Arc::new(e), labels: w.labels, binaries: w.binaries });
    }
    known.extend(added);
    Ok(out)
}

/// Deletes the journal of `archive`. Returns whether there was one.
pub fn remove_journal(archive: &Path) -> Result<bool, ArchiveError> {
    let path = journal_path(archive);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ArchiveError::io(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::Blob;
    use crate::entry::{PipelineEntry, StageEntry, TargetOutputs};
    use crate::key::StageKey;
    use crate::types::{PipelineKind, ShaderStage};
    use std::sync::Arc;

    fn entry(k: u128) -> WriteEntry {
        crate::__compute_entry(k, k * 7, vec![k as u8; 64], format!("p{k}"))
    }

    fn keys(r: &JournalReplay) -> Vec<u128> {
        r.entries.iter().map(|w| w.entry.key.0).collect()
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_ignored_at_every_cut() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("out.granary");
        let meta = ArchiveMeta::new("test options");
        assert!(replay_journal(&archive).unwrap().is_none());
        let mut j = Journal::create(&archive, &meta).unwrap();
        let a = j.append(&[entry(1), entry(2)]).unwrap();
        let after_first = j.len();
        let b = j.append(&[entry(3)]).unwrap();
        assert_eq!(j.len(), (JOURNAL_HEADER_LEN + a + b) as u64);
        let r = replay_journal(&archive).unwrap().unwrap();
        assert_eq!((r.records, keys(&r), r.valid_len, r.damaged_tail.clone()), (2, vec![1, 2, 3], j.len(), None));
        assert_eq!(r.key_context, Some(KeyContext { target_options: meta.target_options }));

        // Cut the file at every length inside the second record: the first always survives.
        let full = std::fs::read(journal_path(&archive)).unwrap();
        for cut in after_first as usize..full.len() {
            std::fs::write(journal_path(&archive), &full[..cut]).unwrap();
            let r = replay_journal(&archive).unwrap().unwrap();
            assert_eq!(keys(&r), vec![1, 2], "cut at {cut}");
            assert_eq!(r.valid_len, after_first);
            let tail = r.damaged_tail.clone();
            assert_eq!(
                tail.map(|t| (t.offset, t.bytes)),
                (cut as u64 > after_first).then(|| (after_first, cut as u64 - after_first))
            );
        }
        // A cut header leaves nothing to replay, and is not an error.
        for cut in 0..JOURNAL_HEADER_LEN {
            std::fs::write(journal_path(&archive), &full[..cut]).unwrap();
            let r = replay_journal(&archive).unwrap().unwrap();
            assert_eq!((r.records, r.key_context, r.valid_len), (0, None, 0));
        }

        // Damage inside a record: it and everything after it are ignored.
        let mut bad = full.clone();
        bad[after_first as usize + 40] ^= 1;
        std::fs::write(journal_path(&archive), &bad).unwrap();
        let r = replay_journal(&archive).unwrap().unwrap();
        assert_eq!(keys(&r), vec![1, 2]);
        assert!(r.damaged_tail.as_ref().unwrap().why.contains("checksum"), "{:?}", r.damaged_tail);

        // Reopening cuts the damaged tail off, and new records follow the intact ones.
        let mut j = Journal::reopen(&archive, &meta, &r).unwrap();
        j.append(&[entry(4)]).unwrap();
        let r = replay_journal(&archive).unwrap().unwrap();
        assert_eq!((keys(&r), r.damaged_tail), (vec![1, 2, 4], None));
        assert!(remove_journal(&archive).unwrap());
        assert!(!remove_journal(&archive).unwrap());
    }

    /// Pipeline `k` with two stages: its own, and the stage function `shared` (big outputs).
    fn sharing(k: u128, shared: u128) -> WriteEntry {
        let mut w = entry(k);
        let mut outputs = TargetOutputs::default();
        outputs.0[0] = Some(Blob::new(vec![shared as u8; 100_000]));
        let mut e = PipelineEntry::clone(&w.entry);
        e.kind = PipelineKind::Render;
        e.stages.insert(
            0,
            StageEntry {
                key: StageKey(shared),
                stage: ShaderStage::Vertex,
                entry_point: "vs".into(),
                outputs,
                specialization: None,
            },
        );
        w.entry = Arc::new(e);
        w
    }

    #[test]
    fn a_stage_function_is_written_once_per_journal_and_restored_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("s.granary");
        let meta = ArchiveMeta::new("test options");
        let mut j = Journal::create(&archive, &meta).unwrap();
        let first = j.append(&[sharing(1, 1000)]).unwrap();
        let second = j.append(&[sharing(2, 1000), sharing(3, 1000)]).unwrap();
        assert!(first > 100_000 && second < 10_000, "the shared outputs are not written again: {first} then {second}");
        let r = replay_journal(&archive).unwrap().unwrap();
        let want = [sharing(1, 1000), sharing(2, 1000), sharing(3, 1000)];
        assert_eq!(r.entries.len(), 3);
        for (got, want) in r.entries.iter().zip(&want) {
            assert_eq!(*got.entry, *want.entry, "outputs restored byte for byte");
        }
        // A continued journal still refers back to the records before it.
        let mut j = Journal::reopen(&archive, &meta, &r).unwrap();
        assert!(j.append(&[sharing(4, 1000)]).unwrap() < 10_000);
        let r = replay_journal(&archive).unwrap().unwrap();
        assert_eq!(*r.entries[3].entry, *sharing(4, 1000).entry);

        // A record that refers to outputs no earlier record holds is not trusted.
        let path = journal_path(&archive);
        let full = std::fs::read(&path).unwrap();
        let mut cut = full[..JOURNAL_HEADER_LEN].to_vec();
        cut.extend_from_slice(&full[JOURNAL_HEADER_LEN + first..]);
        std::fs::write(&path, &cut).unwrap();
        let r = replay_journal(&archive).unwrap().unwrap();
        assert_eq!(r.records, 0);
        assert!(r.damaged_tail.unwrap().why.contains("no earlier record"));
    }

    #[test]
    fn a_file_that_is_not_a_journal_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("x.granary");
        std::fs::write(journal_path(&archive), b"hello, this is certainly not a journal file at all").unwrap();
        assert!(replay_journal(&archive).is_err());
        std::fs::write(journal_path(&archive), b"hello").unwrap();
        assert!(replay_journal(&archive).is_err());
        let mut h = header(&KeyContext { target_options: 5 });
        h[8] = 9;
        std::fs::write(journal_path(&archive), h).unwrap();
        let e = replay_journal(&archive).err().unwrap().to_string();
        assert!(e.contains("version 9"), "{e}");
    }

    #[test]
    fn journal_path_appends_to_the_file_name() {
        assert_eq!(journal_path(Path::new("/a/b/out.granary")), Path::new("/a/b/out.granary.journal"));
        assert_eq!(journal_path(Path::new("out")), Path::new("out.journal"));
    }
}
