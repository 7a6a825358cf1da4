//! Before anything compiles: every file the harvest will write can be written, and writing it
//! destroys nothing that is not the harvest's own.
//!
//! A harvest can run for hours; an output it cannot write must fail it in the first
//! millisecond, not after the last compile. [`writable`] checks one output path: its folder
//! exists and takes a new file (probed by creating and removing one, which is what the
//! atomic write will do), and the path is not a folder. [`check`] applies it to the archive
//! (and so its journal, beside it) and the trace, and refuses to replace an existing file
//! that is not a granary archive (a script given as `-o`, say) unless the harvest is forced.
//!
//! What it cannot promise: the disk may fill, or permissions change, while the harvest runs;
//! those still fail at the write, which then keeps every pipeline already in the journal.

use super::{HarvestError, HarvestOptions};
use granary_archive::MAGIC;
use std::io::Read as _;
use std::path::Path;

/// `Err` with a message naming `what` (`the output archive`, `the trace`) and `path` when a
/// file cannot be written at `path`: its folder is missing or not a folder, it refuses a new
/// file, or `path` is a folder.
pub fn writable(path: &Path, what: &str) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("{what} {shown} is a folder; give a file name"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.exists() {
        return Err(format!("cannot write {what} {shown}: folder {} does not exist", dir.display()));
    }
    if !dir.is_dir() {
        return Err(format!("cannot write {what} {shown}: {} is not a folder", dir.display()));
    }
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let probe = dir.join(format!(".{name}.granary-probe-{}.tmp", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!("cannot write {what} {shown}: folder {} refuses a new file ({e})", dir.display()))
        }
    }
    if path.exists() && std::fs::OpenOptions::new().append(true).open(path).is_err() {
        // The atomic write replaces the file by rename, which a read-only file allows; but a
        // file the user made read-only is one they meant to keep.
        return Err(format!("cannot write {what} {shown}: the file is read-only"));
    }
    Ok(())
}

/// Whether `path` is an existing file that is not a granary archive (its first bytes are not
/// the archive magic); an empty file counts as replaceable.
fn foreign_file(path: &Path) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    let mut head = [0u8; 8];
    let mut read = 0;
    while read < head.len() {
        match f.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => return false,
        }
    }
    read > 0 && (read < MAGIC.len() || head != MAGIC)
}

/// The checks of [`writable`] for the archive (`opts.output`; its journal goes beside it) and
/// the trace, before anything compiles; and, unless `opts.force`, a refusal to replace an
/// existing file that is not a granary archive.
pub(crate) fn check(opts: &HarvestOptions) -> Result<(), HarvestError> {
    let fail = HarvestError::Output;
    writable(&opts.output, "the output archive").map_err(fail)?;
    if !opts.force && foreign_file(&opts.output) {
        return Err(fail(format!(
            "{} exists and is not a granary archive; harvest replaces its output, so give another -o, or --force to replace it",
            opts.output.display()
        )));
    }
    if let Some(trace) = &opts.trace {
        if same_file(trace, &opts.output) {
            return Err(fail(format!("the trace and the output archive are the same file, {}", trace.display())));
        }
        writable(trace, "the trace").map_err(fail)?;
    }
    if same_file(&opts.script, &opts.output) {
        return Err(fail(format!("the script and the output archive are the same file, {}", opts.output.display())));
    }
    Ok(())
}

/// Whether `a` and `b` name one file (both exist and resolve to the same path), or are the
/// same path.
fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_a_folder_and_a_foreign_file_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/o.granary");
        let e = writable(&missing, "the output archive").unwrap_err();
        assert!(e.contains("does not exist") && e.contains("nope"), "{e}");
        let e = writable(dir.path(), "the trace").unwrap_err();
        assert!(e.contains("is a folder"), "{e}");
        assert_eq!(writable(&dir.path().join("new.granary"), "x"), Ok(()));
        // No probe file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let script = dir.path().join("s.json");
        std::fs::write(&script, "{}").unwrap();
        assert!(foreign_file(&script));
        let archive = dir.path().join("a.granary");
        std::fs::write(&archive, [&MAGIC[..], &[0; 8]].concat()).unwrap();
        assert!(!foreign_file(&archive));
        let short = dir.path().join("short");
        std::fs::write(&short, &MAGIC[..3]).unwrap();
        assert!(foreign_file(&short), "a file shorter than the magic is not an archive");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(!foreign_file(&empty));
        assert!(!foreign_file(&dir.path().join("absent")));
    }
}
