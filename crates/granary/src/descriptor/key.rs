//! Canonical encoding and 128-bit keys.
//!
//! A key is the XXH3-128 hash of a canonical byte encoding. The encoding starts with a domain
//! tag and [`KEY_ENCODING_VERSION`]; every field is written with a fixed width in little-endian
//! order, strings and lists with their length first, enums as explicit discriminants, floats as
//! their IEEE bits with every NaN folded to one pattern. Nothing the encoding sees depends on
//! labels, map iteration order, how a float was spelled in JSON, or the machine.

// The encoder and its version are granary-archive's, so the run-time lookup by create info
// computes the same keys as the harvest.
pub use granary_archive::{
    checksum64, content_hash, ContentHash, Encoder, KeyContext, PipelineKey, StageKey, KEY_ENCODING_VERSION,
};

/// Types with a canonical encoding.
pub trait Canonical {
    /// Appends this value's canonical encoding.
    fn encode(&self, e: &mut Encoder);
}

impl<T: Canonical> Canonical for Vec<T> {
    fn encode(&self, e: &mut Encoder) {
        e.u64(self.len() as u64);
        for x in self {
            x.encode(e);
        }
    }
}

impl<T: Canonical> Canonical for Option<T> {
    fn encode(&self, e: &mut Encoder) {
        e.option(self.as_ref(), |e, x| x.encode(e));
    }
}
