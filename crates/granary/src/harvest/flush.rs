//! The harvest's flush policy: each intermediate flush appends one journal record holding the
//! entries captured since the previous flush (docs/FORMAT.md §2); the final write folds
//! everything into the archive and then deletes the journal.
//!
//! Finding "what is new" takes a snapshot of the capture (a copy of `Arc`s, no entry bytes)
//! and a set of the keys already on disk (in the archive being resumed or in the journal), so
//! the cost of a flush that matters — encoding, writing, fsync — is proportional to the new
//! entries (and the journal writes each stage function's outputs once), not to the archive.

use crate::archive::journal::{Journal, JournalReplay, JOURNAL_HEADER_LEN};
use crate::archive::{ArchiveError, ArchiveMeta, WriteEntry};
use crate::capture::Capture;
use std::collections::HashSet;
use std::path::PathBuf;

/// The flush thread's state.
pub(crate) struct Flusher {
    archive: PathBuf,
    meta: ArchiveMeta,
    journal: Option<Journal>,
    /// Continue the existing journal `--resume` replayed (after its intact records); `None`:
    /// start a new journal at the first flush.
    reopen: Option<JournalReplay>,
    /// Keys already durable: resumed from the archive or the journal, or journaled since.
    on_disk: HashSet<u128>,
    /// The most entries one journal record holds (`--flush-every`): a flush that finds more
    /// new entries (compiling outran the previous write) appends several records, each
    /// fsynced, so a kill during a flush loses at most one record's worth.
    max_record: usize,
    /// No further record is appended (after an interrupt's flush: the process is about to
    /// end, and a record started now could be cut short).
    closed: bool,
    /// Journal records appended.
    pub flushes: usize,
    /// Bytes written to the journal (header and records).
    pub bytes_written: u64,
}

impl Flusher {
    pub fn new(
        archive: PathBuf,
        meta: crate::archive::ArchiveMeta,
        reopen: Option<JournalReplay>,
        on_disk: HashSet<u128>,
        max_record: Option<usize>,
    ) -> Self {
        let max_record = max_record.filter(|n| *n > 0).unwrap_or(usize::MAX);
        Flusher {
            archive,
            meta,
            journal: None,
            reopen,
            on_disk,
            max_record,
            closed: false,
            flushes: 0,
            bytes_written: 0,
        }
    }

    /// Appends the captured entries that are not on disk yet, as journal records of at most
    /// `max_record` entries each. Returns how many entries it appended (0: nothing new,
    /// nothing written).
    pub fn flush(&mut self, capture: &Capture) -> Result<usize, ArchiveError> {
        if self.closed {
            return Ok(0);
        }
        let snap = capture.snapshot();
        let new: Vec<WriteEntry> =
            snap.entries.into_iter().filter(|w| !self.on_disk.contains(&w.entry.key.0)).collect();
        if new.is_empty() {
            return Ok(0);
        }
        let journal = match &mut self.journal {
            Some(j) => j,
            None => {
                let j = match self.reopen.take() {
                    Some(r) => Journal::reopen(&self.archive, &self.meta, &r)?,
                    None => {
                        let j = Journal::create(&self.archive, &self.meta)?;
                        self.bytes_written += JOURNAL_HEADER_LEN as u64;
                        j
                    }
                };
                self.journal.insert(j)
            }
        };
        for record in new.chunks(self.max_record) {
            self.bytes_written += journal.append(record)? as u64;
            self.flushes += 1;
            self.on_disk.extend(record.iter().map(|w| w.entry.key.0));
        }
        Ok(new.len())
    }

    /// Pipelines on disk for `--resume`: kept when this harvest resumed, or journaled since.
    pub fn on_disk(&self) -> usize {
        self.on_disk.len()
    }

    /// Appends no further record ([`Flusher::flush`] then does nothing).
    pub fn close(&mut self) {
        self.closed = true;
    }
}
