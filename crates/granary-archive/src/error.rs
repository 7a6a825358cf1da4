//! Archive errors: what is wrong and at which byte offset.

use std::path::PathBuf;

/// An archive could not be read, verified or written.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// A file could not be opened, read, written or renamed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid archive.
    #[error("{}corrupt archive at offset {offset:#x}: {what}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Corrupt {
        /// The file, when known.
        path: Option<PathBuf>,
        /// Byte offset of the problem.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// Archives that cannot be combined (e.g. built with different writer options).
    #[error("{0}")]
    Incompatible(String),
    /// Two sources disagree about one pipeline (same key, different bytes) or one label (it
    /// names two different pipelines). Granary never keeps "the first"; the caller decides.
    #[error("conflict: {0}")]
    Conflict(String),
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
