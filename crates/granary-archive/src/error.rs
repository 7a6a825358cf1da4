//! Archive errors: what is wrong and at which byte offset.
//!
//! `Display` and `Error` are written out by hand rather than derived with `thiserror`: this
//! crate ships inside games, and a proc-macro would add `syn` to every clean build of it.

use std::path::PathBuf;

/// An archive could not be read, verified or written.
#[derive(Debug)]
pub enum ArchiveError {
    /// A file could not be opened, read, written or renamed.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes are not a valid archive.
    Corrupt {
        /// The file, when known.
        path: Option<PathBuf>,
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// Archives that cannot be combined (e.g. built with different writer options).
    Incompatible(String),
    /// Two sources disagree about one pipeline (same key, different bytes) or one label (it
    /// names two different pipelines). Granary never keeps "the first"; the caller decides.
    Conflict(String),
}

impl std::fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ArchiveError::Corrupt { path, offset, what } => {
                if let Some(p) = path {
                    write!(f, "{}: ", p.display())?;
                }
                write!(f, "corrupt archive at offset {offset:#x}: {what}")
            }
            ArchiveError::Incompatible(m) => f.write_str(m),
            ArchiveError::Conflict(m) => write!(f, "conflict: {m}"),
        }
    }
}

impl std::error::Error for ArchiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArchiveError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl ArchiveError {
    pub(crate) fn corrupt(offset: usize, what: impl Into<String>) -> Self {
        ArchiveError::Corrupt { path: None, offset: offset as u64, what: what.into() }
    }
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        ArchiveError::Io { path: path.to_path_buf(), source }
    }
    /// Attaches a file path, when there is one, to a `Corrupt` error.
    pub fn with_path_opt(self, p: Option<&std::path::Path>) -> Self {
        match p {
            Some(p) => self.with_path(p),
            None => self,
        }
    }
    /// Attaches a file path to a `Corrupt` error.
    pub fn with_path(self, p: &std::path::Path) -> Self {
        match self {
            ArchiveError::Corrupt { path: None, offset, what } => {
                ArchiveError::Corrupt { path: Some(p.to_path_buf()), offset, what }
            }
            other => other,
        }
    }
}
