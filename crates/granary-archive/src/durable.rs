//! Crash-safe file replacement.
//!
//! The temporary file is created here (not by a helper crate) so that its permissions are the
//! ones a normally created file would get: `0666 & !umask` for a new file (the kernel applies
//! the umask), or exactly the mode of the file being replaced.

use crate::error::ArchiveError;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` atomically; see [`write_atomic_with`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ArchiveError> {
    write_atomic_with(path, bytes.len(), |w| w.write_all(bytes))
}

/// Replaces `path` with what `fill` writes (`expected_len` bytes), so that a reader — or a
/// process killed at any instant — sees either the old complete file or the new complete
/// file, never a mix: the bytes go to a temporary file in the same directory, are flushed to
/// disk, the file is renamed over `path`, and the directory is flushed so the rename itself is
/// durable.
///
/// Permissions: a new file gets `0666 & !umask`, as `File::create` would give it; replacing an
/// existing file keeps that file's mode. The temporary file is removed on any error.
pub fn write_atomic_with(
    path: &Path,
    expected_len: usize,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), ArchiveError> {
    let dir = parent_dir(path);
    let io = |e| ArchiveError::io(path, e);
    let tmp = TempFile::create(dir, &temp_prefix(path)).map_err(io)?;
    // Take the mode of the file being replaced before any byte is written, so the contents
    // are never readable more widely than the old file was.
    match std::fs::metadata(path) {
        Ok(m) => keep_mode(&tmp.file, &m).map_err(io)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &tmp.file);
        match crate::fault::slow_write() {
            None => fill(&mut w).map_err(io)?,
            Some(delay) => {
                let mut slow = SlowHalfway::new(&mut w, expected_len, delay);
                fill(&mut slow).map_err(io)?;
            }
        }
        w.flush().map_err(io)?;
    }
    tmp.file.sync_all().map_err(io)?;
    std::fs::rename(&tmp.path, path).map_err(io)?;
    tmp.persisted();
    sync_dir(dir).map_err(io)?;
    Ok(())
}

/// The directory `path` lives in (`.` for a bare file name).
pub(super) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Temporary files for `path` are named `.NAME.granary-XXXXXXXXXXXX.tmp` beside it.
fn temp_prefix(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.granary-")
}

/// A temporary file that is removed when dropped, unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    file: File,
    armed: bool,
}

impl TempFile {
    /// Creates `DIR/PREFIX<random>.tmp` exclusively (`O_CREAT | O_EXCL`), with mode 0666
    /// before the umask. Retries with another name if one is taken.
    fn create(dir: &Path, prefix: &str) -> std::io::Result<TempFile> {
        const ATTEMPTS: u32 = 64;
        let mut last = None;
        for _ in 0..ATTEMPTS {
            let path = dir.join(format!("{prefix}{}.tmp", random_suffix()));
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o666);
            match o.open(&path) {
                Ok(file) => return Ok(TempFile { path, file, armed: true }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("could not create a temporary file")))
    }

    /// The file now lives under its final name: nothing to remove.
    fn persisted(mut self) {
        self.armed = false;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Twelve hex digits that differ between calls, threads and processes (not cryptographic;
/// `create_new` makes a collision a retry, never an overwrite).
fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // `RandomState` is seeded from the OS once per process and varied per instance.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}

/// Gives `file` the permission bits of `target` (the file it will replace).
#[cfg(unix)]
fn keep_mode(file: &File, target: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = target.permissions().mode() & 0o7777;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn keep_mode(file: &File, target: &std::fs::Metadata) -> std::io::Result<()> {
    file.set_permissions(target.permissions())
}

/// Removes temporary files that a killed write to `path` left behind. Only call this when no
/// other process is writing `path`. Returns how many were removed.
pub fn remove_stale_temporaries(path: &Path) -> usize {
    let dir = parent_dir(path);
    let prefix = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with(&prefix) && n.ends_with(".tmp")
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// The `slow-write` test fault: pauses once, after half the expected bytes are written
/// (flushing first, so the half really is in the file while the writer sleeps).
pub(super) struct SlowHalfway<'a, W: Write> {
    inner: &'a mut W,
    written: usize,
    halfway: usize,
    delay: Option<std::time::Duration>,
}

impl<'a, W: Write> SlowHalfway<'a, W> {
    pub(super) fn new(inner: &'a mut W, expected_len: usize, delay: std::time::Duration) -> Self {
        SlowHalfway { inner, written: 0, halfway: expected_len / 2, delay: Some(delay) }
    }
}

impl<W: Write> Write for SlowHalfway<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Never let one call cross the halfway mark, so the pause splits the bytes there.
        let room =
            if self.delay.is_some() && self.written < self.halfway { self.halfway - self.written } else { buf.len() };
        let n = self.inner.write(&buf[..buf.len().min(room.max(1))])?;
        self.written += n;
        if self.written >= self.halfway {
            if let Some(d) = self.delay.take() {
                self.inner.flush()?;
                std::thread::sleep(d);
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Flushes a directory, so a rename or a file creation inside it is durable.
#[cfg(unix)]
pub(super) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(super) fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.granary");
        let err = write_atomic_with(&path, 10, |w| {
            w.write_all(b"12345")?;
            Err(std::io::Error::other("fill failed"))
        });
        assert!(err.is_err());
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the temporary file was removed");
    }

    #[test]
    fn temporary_names_are_distinct_and_recognised_as_stale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.granary");
        let a = TempFile::create(dir.path(), &temp_prefix(&path)).unwrap();
        let b = TempFile::create(dir.path(), &temp_prefix(&path)).unwrap();
        assert_ne!(a.path, b.path);
        let name = a.path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".b.granary.granary-") && name.ends_with(".tmp"), "{name}");
        a.persisted();
        b.persisted();
        assert_eq!(remove_stale_temporaries(&path), 2);
    }

    #[test]
    fn slow_halfway_splits_at_the_middle() {
        let mut out = Vec::new();
        let mut w = SlowHalfway::new(&mut out, 10, std::time::Duration::from_millis(1));
        let n = w.write(b"0123456789").unwrap();
        assert_eq!(n, 5);
        w.write_all(b"56789").unwrap();
        assert_eq!(out, b"0123456789");
    }
}
