//! Byte layout of archive format v6 (docs/FORMAT.md is the prose version of this file).
//!
//! All integers little-endian. Sections start at 16-byte aligned offsets; blobs inside the
//! blob-data section start at 16-byte aligned offsets too, so a mapped SPIR-V blob can be read
//! as `u32` words in place.

/// File magic.
pub const MAGIC: [u8; 8] = *b"GRANARY\0";
/// Format version this build writes and reads.
pub const VERSION: u32 = 6;
/// Bytes of the fixed header before the section table.
pub const FIXED_HEADER: usize = 64;
/// Bytes per section-table row.
pub const SECTION_ROW: usize = 32;
/// Number of sections (format v5 added the signature section).
pub const SECTION_COUNT: usize = 11;
/// Total header size: fixed part, section table, header checksum.
pub const HEADER_LEN: usize = FIXED_HEADER + SECTION_ROW * SECTION_COUNT + 8;
/// Section alignment.
pub const ALIGN: usize = 16;
/// "No blob" marker in a stage or pipeline record.
pub const NO_BLOB: u32 = u32::MAX;
/// Largest label or entry-point name accepted (bytes).
pub const MAX_NAME: usize = 64 * 1024;
/// Largest number of stages one pipeline may have (a graphics pipeline has at most 5; a
/// ray-tracing pipeline may have hundreds of hit, miss and callable stages).
pub const MAX_STAGES_PER_PIPELINE: u32 = 4096;
/// Most device sections one archive may hold.
pub const MAX_DEVICES: usize = 1024;
/// Most `VkPipelineCache` blobs one device may have.
pub const MAX_CACHES_PER_DEVICE: usize = 256;

/// Magic of a signed archive's signature section (docs/FORMAT.md §1.12).
pub const SIGNATURE_MAGIC: [u8; 4] = *b"GSIG";
/// Signature scheme 1: Ed25519 (RFC 8032, pure, no context string).
pub const SIGNATURE_SCHEME_ED25519: u32 = 1;
/// Bytes of an Ed25519 public key.
pub const PUBLIC_KEY_LEN: usize = 32;
/// Bytes of an Ed25519 signature.
pub const SIGNATURE_LEN: usize = 64;
/// Bytes of the signature section before the signature: magic, scheme, 8 reserved zero bytes,
/// the public key. The section-table checksum covers exactly these.
pub const SIGNATURE_HEAD: usize = 16 + PUBLIC_KEY_LEN;
/// Length of a signed archive's signature section (an unsigned archive's is 0). A multiple of
/// [`ALIGN`], so the signature is the file's last 64 bytes.
pub const SIGNATURE_SECTION: usize = SIGNATURE_HEAD + SIGNATURE_LEN;

stored_enum!(
    /// Section kinds, in file order (`ALL`). Each appears exactly once; the section table
    /// stores the number, messages spell the name.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Section: u32 {
        /// Generator string, writer options and a reserved (empty) string.
        Meta = 1 => "meta",
        /// Concatenated UTF-8 strings (labels, entry points).
        Strings = 2 => "strings",
        /// Blob index: sorted by content hash.
        BlobIndex = 3 => "blob index",
        /// Blob bytes.
        BlobData = 4 => "blob data",
        /// Pipeline table: sorted by key.
        Pipelines = 5 => "pipeline table",
        /// Stage records.
        Stages = 6 => "stage table",
        /// Label index: sorted by label bytes.
        Labels = 7 => "label index",
        /// Device records: sorted by identity id.
        Devices = 8 => "device table",
        /// Device-pipeline records: per device contiguous, sorted by pipeline index.
        DevicePipelines = 9 => "device-pipeline table",
        /// Binary records (driver binaries, then each device's pipeline-cache blobs).
        Binaries = 10 => "binary table",
        /// The signature: empty in an unsigned archive, else `SIGNATURE_SECTION` bytes ending
        /// the file (docs/FORMAT.md §1.12).
        Signature = 11 => "signature",
    }
);

const _: () = assert!(Section::ALL.len() == SECTION_COUNT);

impl Section {
    /// Fixed record size, or `None` for byte sections.
    pub fn record_size(self) -> Option<usize> {
        match self {
            Section::BlobIndex => Some(BLOB_RECORD),
            Section::Pipelines => Some(PIPELINE_RECORD),
            Section::Stages => Some(STAGE_RECORD),
            Section::Labels => Some(LABEL_RECORD),
            Section::Devices => Some(DEVICE_RECORD),
            Section::DevicePipelines => Some(DEVICE_PIPELINE_RECORD),
            Section::Binaries => Some(BINARY_RECORD),
            _ => None,
        }
    }
}

/// Blob index record: hash u128 (content hash of the blob bytes), offset u64 (relative to the
/// blob-data section), len u64, checksum u64 (of the record's preceding 32 bytes). The blob
/// bytes themselves are covered by `hash` and by the blob-data section checksum.
pub const BLOB_RECORD: usize = 40;
/// Pipeline record: key u128, kind u32, first_stage u32, stage_count u32, layout u32 (blob
/// index of the encoded [`PipelineLayout`](crate::PipelineLayout), or [`NO_BLOB`]), state u32
/// (blob index of the encoded [`RenderState`](crate::RenderState) or
/// [`NativePipeline`](crate::native::NativePipeline), or [`NO_BLOB`]), 4 reserved bytes (zero),
/// checksum u64 (of the preceding 40 bytes).
pub const PIPELINE_RECORD: usize = 48;
/// Stage record: key u128, stage u32, entry_off u32, entry_len u32, `blob[4]` u32,
/// specialization u32 (blob index of the encoded
/// [`Specialization`](crate::native::Specialization), or [`NO_BLOB`]), checksum u64 (of the
/// preceding 48 bytes followed by the entry-point bytes).
pub const STAGE_RECORD: usize = 56;
/// Label record: str_off u32, str_len u32, pipeline u32, checksum u32 (low half of the
/// checksum of the preceding 12 bytes followed by the label bytes). Sorted by (label, pipeline).
pub const LABEL_RECORD: usize = 16;

/// Device record: id u128 (content hash of the identity blob), identity blob u32,
/// first_pipeline u32 and pipeline_count u32 (its device-pipeline records), first_cache u32 and
/// cache_count u32 (its cache records in the binary table), reserved u32 (zero), checksum u64
/// (of the preceding 40 bytes).
pub const DEVICE_RECORD: usize = 48;
/// Device-pipeline record: pipeline u32 (pipeline-table index), flags u32, first_binary u32,
/// binary_count u32, checksum u64 (of the preceding 16 bytes).
pub const DEVICE_PIPELINE_RECORD: usize = 24;
/// Binary record: blob u32, key_len u32 (1..=32 for a driver binary, 0 for a cache record),
/// key `[32]` (zero-padded), checksum u64 (of the preceding 40 bytes).
pub const BINARY_RECORD: usize = 48;

/// Which shard of which script an archive is (`harvest --shard I/N`), stored as the meta
/// section's third string (docs/FORMAT.md §1.4.1): `shard=I/N;script=HASH`, HASH being
/// 32 lower-case hex digits of the script hash. An unsharded archive stores nothing there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShardRecord {
    /// The shard's index, `0..count`.
    pub index: u32,
    /// How many shards the script was split into (at least 1).
    pub count: u32,
    /// `xxh3_128` of the script's set of pipeline keys (see `granary::harvest::shard`).
    pub script: u128,
}

impl ShardRecord {
    /// The meta-section text: `shard=I/N;script=HASH`.
    pub fn to_text(&self) -> String {
        format!("shard={}/{};script={:032x}", self.index, self.count, self.script)
    }
    /// Parses [`ShardRecord::to_text`]'s form exactly (the canonical spelling only), with
    /// `index < count`.
    pub fn parse(text: &str) -> Option<ShardRecord> {
        let rest = text.strip_prefix("shard=")?;
        let (ic, hash) = rest.split_once(";script=")?;
        let (i, c) = ic.split_once('/')?;
        let r = ShardRecord {
            index: i.parse().ok()?,
            count: c.parse().ok()?,
            script: u128::from_str_radix(hash, 16).ok()?,
        };
        (r.index < r.count && r.to_text() == text).then_some(r)
    }
}

/// As JSON: `{"index": I, "count": N, "script": "32 hex digits"}` (the hash as text, since
/// JSON numbers do not hold 128 bits), the shape `granary ls`, `verify`, `salvage` and `prune`
/// print.
#[cfg(feature = "serde")]
impl serde::Serialize for ShardRecord {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ShardRecord", 3)?;
        st.serialize_field("index", &self.index)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("script", &format!("{:032x}", self.script))?;
        st.end()
    }
}

impl std::fmt::Display for ShardRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard {}/{} of script {:032x}", self.index, self.count, self.script)
    }
}

/// Rounds `n` up to `ALIGN` (16).
#[cfg(feature = "write")]
pub fn align_up(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

#[cfg(test)]
mod tests {
    #[test]
    fn shard_record_text_round_trips_and_only_the_canonical_form_parses() {
        use super::ShardRecord;
        let r = ShardRecord { index: 2, count: 4, script: 0xabc };
        assert_eq!(r.to_text(), format!("shard=2/4;script={:032x}", 0xabc));
        assert_eq!(ShardRecord::parse(&r.to_text()), Some(r));
        for bad in [
            "",
            "shard=4/4;script=00000000000000000000000000000abc",
            "shard=02/4;script=00000000000000000000000000000abc",
            "shard=1/4;script=abc",
            "shard=1/4;script=00000000000000000000000000000ABC",
            "shard=1/0;script=00000000000000000000000000000abc",
            "shard=1/4",
        ] {
            assert_eq!(ShardRecord::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn header_length_matches_docs_format_md() {
        assert_eq!(super::HEADER_LEN, 424);
        assert_eq!(super::align_up(super::HEADER_LEN), 432);
        assert_eq!(super::SIGNATURE_SECTION % super::ALIGN, 0);
        assert_eq!(super::SIGNATURE_SECTION, 112);
    }
}
