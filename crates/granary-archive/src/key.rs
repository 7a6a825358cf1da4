//! Keys and checksums: the 128-bit identities an archive is indexed by.
//!
//! A key is the XXH3-128 hash of a canonical byte encoding that the offline library
//! (`granary::descriptor::key`) defines; this crate only stores, compares, prints and parses
//! keys, so an application can look a pipeline up by a key the offline tool exported.

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

/// The context stage keys are computed under: the fingerprint of the shader writers' options
/// (target language versions, flags, naga version). An archive records the fingerprint it was
/// built with, so a reader computes the same keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyContext {
    /// Fingerprint of the target writer options.
    pub target_options: u128,
}
