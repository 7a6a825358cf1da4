//! Canonical encoding and 128-bit keys.
//!
//! A key is the XXH3-128 hash of a canonical byte encoding. The encoding starts with a domain
//! tag and [`KEY_ENCODING_VERSION`]; every field is written with a fixed width in little-endian
//! order, strings and lists with their length first, enums as explicit discriminants, floats as
//! their IEEE bits with every NaN folded to one pattern. Nothing the encoding sees depends on
//! labels, map iteration order, how a float was spelled in JSON, or the machine.

pub use granary_archive::{checksum64, content_hash, ContentHash, KeyContext, PipelineKey, StageKey};

/// Version of the canonical encoding. Bump it whenever any `encode` changes; the pinned key
/// tests then fail until they are updated together with this number.
pub const KEY_ENCODING_VERSION: u32 = 1;

/// Builds a canonical encoding. Each `encode` implementation writes its fields in a fixed order.
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// Starts an encoding for the given domain (e.g. `b"pipeline"`), stamped with the version.
    pub fn new(domain: &[u8]) -> Self {
        let mut e = Encoder { buf: Vec::with_capacity(256) };
        e.bytes(domain);
        e.u32(KEY_ENCODING_VERSION);
        e
    }
    /// Writes one byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Writes a bool as one byte.
    pub fn bool(&mut self, v: bool) {
        self.buf.push(v as u8);
    }
    /// Writes a u32, little-endian.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes an i32, little-endian.
    pub fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes a u64, little-endian.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes a u128, little-endian.
    pub fn u128(&mut self, v: u128) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Writes an f32 as its bits, with every NaN folded to the canonical quiet NaN.
    pub fn f32(&mut self, v: f32) {
        let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
        self.u32(bits);
    }
    /// Writes a length-prefixed byte string.
    pub fn bytes(&mut self, v: &[u8]) {
        self.u64(v.len() as u64);
        self.buf.extend_from_slice(v);
    }
    /// Writes a length-prefixed UTF-8 string.
    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    /// Writes `None` as 0, `Some(x)` as 1 followed by `x`.
    pub fn option<T>(&mut self, v: Option<&T>, f: impl FnOnce(&mut Self, &T)) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                f(self, x)
            }
        }
    }
    /// The 128-bit hash of everything written so far.
    pub fn finish(&self) -> u128 {
        xxhash_rust::xxh3::xxh3_128(&self.buf)
    }
}

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
