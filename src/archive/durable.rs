//! Crash-safe file replacement.

use super::ArchiveError;
use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes` atomically; see [`write_atomic_with`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ArchiveError> {
    write_atomic_with(path, bytes.len(), |w| w.write_all(bytes))
}

/// Replaces `path` with what `fill` writes (`expected_len` bytes), so that a reader — or a
/// process killed at any instant — sees either the old complete file or the new complete
/// file, never a mix: the bytes go to a temporary file in the same directory, are flushed to
/// disk, the file is renamed over `path`, and the directory is flushed so the rename itself is
/// durable.
pub fn write_atomic_with(
    path: &Path,
    expected_len: usize,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), ArchiveError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let io = |e| ArchiveError::io(path, e);
    let tmp = tempfile::Builder::new().prefix(&temp_prefix(path)).suffix(".tmp").tempfile_in(dir).map_err(io)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
        match crate::fault::slow_write() {
            None => fill(&mut w).map_err(io)?,
            Some(delay) => {
                let mut slow = SlowHalfway { inner: &mut w, written: 0, halfway: expected_len / 2, delay: Some(delay) };
                fill(&mut slow).map_err(io)?;
            }
        }
        w.flush().map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    sync_dir(dir).map_err(io)?;
    Ok(())
}

/// Temporary files for `path` are named `.NAME.granary-XXXXXX.tmp` beside it.
fn temp_prefix(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{name}.granary-")
}

/// Removes temporary files that a killed write to `path` left behind. Only call this when no
/// other process is writing `path`. Returns how many were removed.
pub fn remove_stale_temporaries(path: &Path) -> usize {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
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

/// The `slow-write` test fault: pauses once, after half the expected bytes are written.
struct SlowHalfway<'a, W: Write> {
    inner: &'a mut W,
    written: usize,
    halfway: usize,
    delay: Option<std::time::Duration>,
}

impl<W: Write> Write for SlowHalfway<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
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

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}
