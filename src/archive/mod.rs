//! Layer 7 — the archive file format: deterministic writer, bounds-checked reader, verify,
//! merge. Specified byte by byte in docs/FORMAT.md.
//!
//! Invariants:
//! - [`encode`] is a pure function of the set of `(entry, labels)` it is given.
//! - Files are only ever replaced whole ([`write_atomic`]); an archive on disk is complete.
//! - The reader never panics, never reads out of bounds and never allocates from a length it
//!   read from the file; a damaged file yields [`ArchiveError::Corrupt`] with the offset.

mod durable;
mod error;
pub mod journal;
pub mod format;
mod reader;
mod salvage;
mod writer;

pub use durable::{remove_stale_temporaries, write_atomic, write_atomic_with};
pub use error::ArchiveError;
pub use reader::{Archive, PipelineRef, StageRef, VerifyReport};
pub use salvage::{salvage, SalvageReport};
pub use writer::{encode, prepare, ArchiveMeta, Layout, WriteEntry};

use std::path::Path;

/// Encodes `entries` and streams them to `path` atomically. Returns the file size.
pub fn write_entries(path: &Path, entries: &[WriteEntry], meta: &ArchiveMeta) -> Result<usize, ArchiveError> {
    let layout = prepare(entries, meta);
    let mut written = 0;
    write_atomic_with(path, layout.len(), |w| {
        written = layout.write_to(&mut WriteAdapter(w))?;
        Ok(())
    })?;
    Ok(written)
}

/// Lets the generic encoder write into a `dyn Write`.
struct WriteAdapter<'a>(&'a mut dyn std::io::Write);

impl std::io::Write for WriteAdapter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Merges archives into one: the union of their pipelines, each stored once, labels combined.
/// The result does not depend on the order of `inputs`. All inputs must share one
/// writer-options fingerprint (keys from different fingerprints are not comparable).
pub fn merge(inputs: &[Archive]) -> Result<(Vec<WriteEntry>, ArchiveMeta), ArchiveError> {
    let mut meta: Option<ArchiveMeta> = None;
    let mut all = Vec::new();
    for a in inputs {
        let m = ArchiveMeta {
            target_options: a.key_context().target_options,
            target_options_text: a.target_options_text().to_string(),
            device: a.device().to_string(),
        };
        if let Some(first) = &meta {
            if first.target_options != m.target_options || first.device != m.device {
                return Err(ArchiveError::Incompatible(format!(
                    "{} was built with different writer options or for a different device than the first input",
                    a.path().map(|p| p.display().to_string()).unwrap_or_else(|| "an input".into())
                )));
            }
        } else {
            meta = Some(m);
        }
        all.extend(a.entries()?);
    }
    Ok((all, meta.unwrap_or_else(ArchiveMeta::portable)))
}
