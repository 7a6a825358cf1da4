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
    /// Data the archive was to carry could not be read from a device (its `VkPipelineCache`
    /// data): written nothing rather than an archive that silently lacks it.
    Device(String),
    /// A signed archive was required (feature `sign`) and this one carries no signature: its
    /// signature section is empty (docs/FORMAT.md §1.12).
    Unsigned {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The public key whose signature was required.
        expected: [u8; 32],
    },
    /// The archive is signed, but by another key than the one required.
    WrongKey {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The public key the archive's signature section names.
        signed_by: [u8; 32],
        /// The public key whose signature was required.
        expected: [u8; 32],
    },
    /// The signature does not verify under the key it names: bytes were changed after the
    /// archive was signed (tampering or damage), or the signature itself is damaged.
    BadSignature {
        /// The file, when known.
        path: Option<PathBuf>,
        /// The public key the archive's signature section names.
        key: [u8; 32],
    },
    /// A key (a key file, or key text) is unreadable, malformed, not a valid Ed25519 key, or a
    /// private key file that group or others may read.
    Key {
        /// The key file, when there is one.
        path: Option<PathBuf>,
        /// What is wrong.
        what: String,
    },
}

/// The short form of a public key in messages: its first 8 bytes as 16 hex digits (the first
/// 16 digits of its `.pub` file).
pub(crate) fn key_id(key: &[u8; 32]) -> String {
    key[..8].iter().map(|b| format!("{b:02x}")).collect()
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
            ArchiveError::Device(m) => write!(f, "reading device data: {m}"),
            ArchiveError::Unsigned { path, expected } => {
                if let Some(p) = path {
                    write!(f, "{}: ", p.display())?;
                }
                write!(f, "archive is unsigned, and a signature by key {} is required", key_id(expected))
            }
            ArchiveError::WrongKey { path, signed_by, expected } => {
                if let Some(p) = path {
                    write!(f, "{}: ", p.display())?;
                }
                write!(
                    f,
                    "archive is signed by key {}, not by the required key {}",
                    key_id(signed_by),
                    key_id(expected)
                )
            }
            ArchiveError::BadSignature { path, key } => {
                if let Some(p) = path {
                    write!(f, "{}: ", p.display())?;
                }
                write!(
                    f,
                    "signature by key {} does not verify: the archive was changed after it was signed \
                     (tampered with or damaged)",
                    key_id(key)
                )
            }
            ArchiveError::Key { path, what } => {
                if let Some(p) = path {
                    write!(f, "{}: ", p.display())?;
                }
                f.write_str(what)
            }
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
    /// Attaches a file path to a `Corrupt` error (or a signature error) that has none.
    pub fn with_path(self, p: &std::path::Path) -> Self {
        let p = Some(p.to_path_buf());
        match self {
            ArchiveError::Corrupt { path: None, offset, what } => ArchiveError::Corrupt { path: p, offset, what },
            ArchiveError::Unsigned { path: None, expected } => ArchiveError::Unsigned { path: p, expected },
            ArchiveError::WrongKey { path: None, signed_by, expected } => {
                ArchiveError::WrongKey { path: p, signed_by, expected }
            }
            ArchiveError::BadSignature { path: None, key } => ArchiveError::BadSignature { path: p, key },
            other => other,
        }
    }
}
