//! Content-addressed bytes: a [`Blob`] is immutable and known by its content hash, shared as
//! an `Arc` by every entry, binary set and archive that holds the same bytes.

use crate::key::{content_hash, ContentHash};
use std::sync::Arc;

/// Immutable bytes identified by their content hash (one stage output for one target).
#[derive(Debug, PartialEq, Eq)]
pub struct Blob {
    hash: ContentHash,
    bytes: Box<[u8]>,
}

impl Blob {
    /// Wraps bytes, hashing them.
    pub fn new(bytes: Vec<u8>) -> Arc<Blob> {
        Arc::new(Blob { hash: content_hash(&bytes), bytes: bytes.into_boxed_slice() })
    }
    /// The content address.
    pub fn hash(&self) -> ContentHash {
        self.hash
    }
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
