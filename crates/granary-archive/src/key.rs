//! Keys and checksums: the 128-bit identities an archive is indexed by.
//!
//! A key is the XXH3-128 hash of a canonical byte encoding ([`Encoder`]): a domain tag and
//! [`KEY_ENCODING_VERSION`] first, then every field with a fixed width in little-endian order,
//! strings and lists with their length first, floats as their IEEE bits with every NaN folded
//! to one pattern. The offline library (`granary::descriptor`) encodes its descriptors with it;
//! this crate encodes what the run-time lookup by create info needs (the native form's keys,
//! [`crate::native::native_pipeline_key`]), and stores, compares, prints and parses keys, so an
//! application can look a pipeline up by a key the offline tool exported or by its own create
//! info.

use std::fmt;
macro_rules! key_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u128);

        impl $name {
            /// The key as 32 lowercase hex digits.
            pub fn to_hex(self) -> String {
                format!("{:032x}", self.0)
            }
            /// Parses 32 hex digits (as printed by `to_hex`).
            pub fn from_hex(s: &str) -> Option<Self> {
                if s.len() != 32 {
                    return None;
                }
                u128::from_str_radix(s, 16).ok().map($name)
            }
            /// The 16 little-endian bytes of the key.
            pub fn to_le_bytes(self) -> [u8; 16] {
                self.0.to_le_bytes()
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:032x}", self.0)
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:032x})", stringify!($name), self.0)
            }
        }
    };
}

key_type!(
    /// Identifies one pipeline: its stage keys plus all fixed-function state that changes the
    /// compiled result. Labels never contribute.
    PipelineKey
);
key_type!(
    /// Identifies one compiled stage function: library content, entry point, stage, constant
    /// values and target options.
    StageKey
);
key_type!(
    /// Identifies bytes by content (a library's source, a stage output).
    ContentHash
);

/// Hashes arbitrary bytes to a content address.
pub fn content_hash(bytes: &[u8]) -> ContentHash {
    ContentHash(xxhash_rust::xxh3::xxh3_128(bytes))
}

/// 64-bit checksum used for archive sections and records.
pub fn checksum64(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Version of the canonical encoding. Bump it whenever any encoding changes; the pinned key
/// tests (`granary/tests/keys.rs`) then fail until they are updated together with this number.
pub const KEY_ENCODING_VERSION: u32 = 1;

/// Builds a canonical encoding. Each encoding writes its fields in a fixed order.
///
/// Thread safety: plain data, `Send + Sync`; one encoding per value.
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

/// The context stage keys are computed under: the fingerprint of the shader writers' options
/// (target language versions, flags, naga version). An archive records the fingerprint it was
/// built with, so a reader computes the same keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyContext {
    /// Fingerprint of the target writer options.
    pub target_options: u128,
}
