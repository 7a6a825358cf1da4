//! Crash-safe file replacement.

use super::ArchiveError;
use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes` so that a reader — or a process killed at any instant — sees
/// either the old complete file or the new complete file, never a mix: the bytes go to a
/// temporary file in the same directory, are flushed to disk, the file is renamed over `path`,
/// and the directory is flushed so the rename itself is durable.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ArchiveError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let io = |e| ArchiveError::io(path, e);
    let mut tmp = tempfile::Builder::new()
        .prefix(".granary-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io)?;
    match crate::fault::slow_write() {
        None => tmp.write_all(bytes).map_err(io)?,
        Some(delay) => {
            let (a, b) = bytes.split_at(bytes.len() / 2);
            tmp.write_all(a).map_err(io)?;
            tmp.flush().map_err(io)?;
            std::thread::sleep(delay);
            tmp.write_all(b).map_err(io)?;
        }
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    sync_dir(dir).map_err(io)?;
    Ok(())
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}
