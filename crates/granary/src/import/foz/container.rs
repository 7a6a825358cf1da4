//! Fossilize's stream archive (`.foz`) container: a 16-byte magic and version, then entries.
//!
//! Each entry is a 40-character hex name (24 digits of resource tag, 16 of the 64-bit hash),
//! a 16-byte little-endian header (stored size, format: 1 raw or 2 zlib-deflated, CRC32 of the
//! stored bytes or 0 for unchecked, payload size once inflated) and the stored bytes.
//! Fossilize ignores a truncated last entry; so does this reader, and reports it. A damaged
//! entry (bad name, CRC, deflate stream or size) is reported and skipped. Every length is
//! checked against the file before use and nothing is allocated from an unchecked length.

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The magic: `\x81FOSSILIZEDB\0\0\0` followed by one version byte.
pub const MAGIC: [u8; 15] = *b"\x81FOSSILIZEDB\0\0\0";
/// Size of the magic and version.
pub const HEADER_SIZE: usize = 16;
/// The newest format version written by Fossilize this reader knows.
pub const FORMAT_VERSION: u8 = 6;
/// The oldest version Fossilize itself still reads.
pub const MIN_COMPAT_VERSION: u8 = 5;
/// Length of an entry's name.
pub const NAME_SIZE: usize = 40;
/// Name plus the 16-byte payload header.
pub const ENTRY_HEADER_SIZE: usize = NAME_SIZE + 16;
/// Largest payload (inflated) this reader accepts; Fossilize's sizes are `u32`.
pub const MAX_PAYLOAD: u32 = 256 << 20;

/// Stored payload format.
pub const FORMAT_RAW: u32 = 1;
/// zlib stream (miniz `mz_compress2`).
pub const FORMAT_DEFLATE: u32 = 2;

/// Fossilize resource tags (`fossilize_db.hpp`).
pub mod tag {
    /// `VkApplicationInfo` and features.
    pub const APPLICATION_INFO: u32 = 0;
    /// `VkSamplerCreateInfo`.
    pub const SAMPLER: u32 = 1;
    /// `VkDescriptorSetLayoutCreateInfo`.
    pub const DESCRIPTOR_SET_LAYOUT: u32 = 2;
    /// `VkPipelineLayoutCreateInfo`.
    pub const PIPELINE_LAYOUT: u32 = 3;
    /// `VkShaderModuleCreateInfo`.
    pub const SHADER_MODULE: u32 = 4;
    /// `VkRenderPassCreateInfo` / `VkRenderPassCreateInfo2`.
    pub const RENDER_PASS: u32 = 5;
    /// `VkGraphicsPipelineCreateInfo`.
    pub const GRAPHICS_PIPELINE: u32 = 6;
    /// `VkComputePipelineCreateInfo`.
    pub const COMPUTE_PIPELINE: u32 = 7;
    /// Application blob link.
    pub const APPLICATION_BLOB_LINK: u32 = 8;
    /// `VkRayTracingPipelineCreateInfoKHR`.
    pub const RAYTRACING_PIPELINE: u32 = 9;
}

/// A database that cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a Fossilize stream archive.
    #[error("{}: offset 0: not a Fossilize database (bad magic)", path.display())]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// A version this reader does not know.
    #[error("{}: offset 15: unsupported Fossilize format version {version} (reads {MIN_COMPAT_VERSION}..={FORMAT_VERSION})", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version byte.
        version: u8,
    },
}

/// Why one entry was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
pub enum EntryError {
    /// The 40-character name is not hex.
    #[error("entry name is not 40 hex digits")]
    BadName,
    /// Unknown payload format.
    #[error("unknown payload format {0} (1 raw, 2 deflate)")]
    Format(u32),
    /// The CRC32 of the stored bytes differs from the header's.
    #[error("CRC mismatch: header {expected:#010x}, stored bytes {actual:#010x}")]
    Crc {
        /// From the header.
        expected: u32,
        /// Computed.
        actual: u32,
    },
    /// A raw entry whose stored and payload sizes differ.
    #[error("raw entry: stored size {stored} differs from payload size {payload}")]
    RawSize {
        /// Stored size.
        stored: u32,
        /// Payload size.
        payload: u32,
    },
    /// Payload larger than [`MAX_PAYLOAD`].
    #[error("payload size {0} exceeds the {MAX_PAYLOAD}-byte limit")]
    TooLarge(u32),
    /// The deflate stream is damaged or inflates to a different size.
    #[error("bad deflate stream: {0}")]
    Deflate(String),
}

/// One readable entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Resource tag ([`tag`]).
    pub tag: u32,
    /// The 64-bit Fossilize hash.
    pub hash: u64,
    /// Offset of the entry's name in the file.
    pub offset: u64,
    /// The payload, inflated.
    pub payload: Vec<u8>,
}

/// One entry that was skipped, with where it is.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Damaged {
    /// The database file.
    pub file: PathBuf,
    /// Offset of the entry's name.
    pub offset: u64,
    /// The entry's name, as far as it could be read.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// A read database.
#[derive(Debug, Default)]
pub struct Database {
    /// Entries in file order.
    pub entries: Vec<Entry>,
    /// Entries skipped as damaged.
    pub damaged: Vec<Damaged>,
    /// Offset of a truncated last entry, ignored as Fossilize ignores it.
    pub truncated_at: Option<u64>,
}

/// Reads the database at `path`.
pub fn read(path: &Path) -> Result<Database, ContainerError> {
    let bytes = std::fs::read(path).map_err(|source| ContainerError::Io { path: path.to_path_buf(), source })?;
    parse(&bytes, path)
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn parse_name(name: &[u8]) -> Option<(u32, u64)> {
    if name.len() != NAME_SIZE || !name.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let s = std::str::from_utf8(name).ok()?;
    // Fossilize reads the tag from the 16 digits before the hash; the leading 8 are zero.
    let tag = u64::from_str_radix(&s[..24], 16).ok()?;
    let hash = u64::from_str_radix(&s[24..], 16).ok()?;
    Some((u32::try_from(tag).ok()?, hash))
}

/// Parses a database held in memory (`path` is for messages only). Never panics.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Database, ContainerError> {
    if bytes.len() < HEADER_SIZE || bytes[..15] != MAGIC {
        return Err(ContainerError::BadMagic { path: path.to_path_buf() });
    }
    let version = bytes[15];
    if !(MIN_COMPAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(ContainerError::Version { path: path.to_path_buf(), version });
    }
    let mut db = Database::default();
    let mut at = HEADER_SIZE;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if rest.len() < ENTRY_HEADER_SIZE {
            db.truncated_at = Some(at as u64);
            break;
        }
        let name = &rest[..NAME_SIZE];
        let head = &rest[NAME_SIZE..ENTRY_HEADER_SIZE];
        let (stored, format, crc, payload_size) =
            (le32(&head[0..]), le32(&head[4..]), le32(&head[8..]), le32(&head[12..]));
        let Some(stored_bytes) =
            usize::try_from(stored).ok().and_then(|n| rest.get(ENTRY_HEADER_SIZE..ENTRY_HEADER_SIZE.checked_add(n)?))
        else {
            db.truncated_at = Some(at as u64);
            break;
        };
        let offset = at as u64;
        at += ENTRY_HEADER_SIZE + stored_bytes.len();
        let damaged = |reason: String| Damaged {
            file: path.to_path_buf(),
            offset,
            name: String::from_utf8_lossy(name).into_owned(),
            reason,
        };
        let Some((tag, hash)) = parse_name(name) else {
            db.damaged.push(damaged(EntryError::BadName.to_string()));
            continue;
        };
        match decode(stored_bytes, format, crc, payload_size) {
            Ok(payload) => db.entries.push(Entry { tag, hash, offset, payload }),
            Err(e) => db.damaged.push(damaged(e.to_string())),
        }
    }
    Ok(db)
}

/// Checks and inflates one entry's stored bytes.
pub fn decode(stored: &[u8], format: u32, crc: u32, payload_size: u32) -> Result<Vec<u8>, EntryError> {
    if format != FORMAT_RAW && format != FORMAT_DEFLATE {
        return Err(EntryError::Format(format));
    }
    if payload_size > MAX_PAYLOAD {
        return Err(EntryError::TooLarge(payload_size));
    }
    if crc != 0 {
        let actual = crc32fast::hash(stored);
        if actual != crc {
            return Err(EntryError::Crc { expected: crc, actual });
        }
    }
    if format == FORMAT_RAW {
        if stored.len() as u64 != u64::from(payload_size) {
            return Err(EntryError::RawSize { stored: stored.len() as u32, payload: payload_size });
        }
        return Ok(stored.to_vec());
    }
    // Read at most one byte more than promised, so a stream that inflates to more is caught
    // without inflating it all; grow as bytes arrive, not from the header's number.
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(stored)
        .take(u64::from(payload_size) + 1)
        .read_to_end(&mut out)
        .map_err(|e| EntryError::Deflate(e.to_string()))?;
    if out.len() as u64 != u64::from(payload_size) {
        return Err(EntryError::Deflate(format!("inflates to {} bytes, header says {payload_size}", out.len())));
    }
    Ok(out)
}

/// Writes databases in the same format (for tests, fixtures and tools).
pub mod writer {
    use super::*;
    use std::io::Write as _;

    /// How to store one entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Store {
        /// zlib-deflate the payload.
        pub deflate: bool,
        /// Write the CRC32 of the stored bytes (else 0, unchecked).
        pub crc: bool,
    }

    /// The 16-byte header of a format-`version` database.
    pub fn header(version: u8) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.push(version);
        v
    }

    /// Appends one entry to `out`.
    pub fn entry(out: &mut Vec<u8>, tag: u32, hash: u64, payload: &[u8], store: Store) {
        out.extend_from_slice(format!("{tag:024x}{hash:016x}").as_bytes());
        let stored = if store.deflate {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(payload).expect("writing to memory");
            e.finish().expect("writing to memory")
        } else {
            payload.to_vec()
        };
        let crc = if store.crc { crc32fast::hash(&stored) } else { 0 };
        let format = if store.deflate { FORMAT_DEFLATE } else { FORMAT_RAW };
        for v in [stored.len() as u32, format, crc, payload.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&stored);
    }
}

#[cfg(test)]
mod tests {
    use super::writer::{entry, header, Store};
    use super::*;

    fn p() -> &'static Path {
        Path::new("t.foz")
    }

    #[test]
    fn import_container_round_trips_every_storage() {
        let mut b = header(6);
        for (i, (deflate, crc)) in [(false, false), (false, true), (true, false), (true, true)].into_iter().enumerate()
        {
            entry(&mut b, tag::GRAPHICS_PIPELINE, 0xabc0 + i as u64, b"{\"x\": 1}", Store { deflate, crc });
        }
        let db = parse(&b, p()).unwrap();
        assert_eq!(db.entries.len(), 4);
        assert!(db.damaged.is_empty() && db.truncated_at.is_none());
        assert!(db.entries.iter().all(|e| e.payload == b"{\"x\": 1}" && e.tag == tag::GRAPHICS_PIPELINE));
        assert_eq!(db.entries[3].hash, 0xabc3);
    }

    #[test]
    fn import_container_truncated_tail_is_ignored_and_reported() {
        let mut b = header(6);
        entry(&mut b, 4, 1, b"first", Store { deflate: true, crc: true });
        let second = b.len();
        entry(&mut b, 4, 2, b"second payload", Store { deflate: false, crc: true });
        for cut in second + 1..b.len() {
            let db = parse(&b[..cut], p()).unwrap();
            assert_eq!(db.entries.len(), 1, "cut at {cut}");
            assert_eq!(db.truncated_at, Some(second as u64));
        }
    }

    #[test]
    fn import_container_bad_crc_is_skipped_and_reported() {
        let mut b = header(6);
        entry(&mut b, 4, 1, b"damaged", Store { deflate: true, crc: true });
        let len = b.len();
        b[len - 1] ^= 0x40;
        entry(&mut b, 4, 2, b"intact", Store { deflate: true, crc: true });
        let db = parse(&b, p()).unwrap();
        assert_eq!(db.entries.len(), 1);
        assert_eq!(db.entries[0].hash, 2);
        assert_eq!(db.damaged.len(), 1);
        assert_eq!(db.damaged[0].offset, HEADER_SIZE as u64);
        assert!(db.damaged[0].reason.contains("CRC mismatch"), "{}", db.damaged[0].reason);
    }

    #[test]
    fn import_container_bad_deflate_without_crc_is_skipped() {
        let mut b = header(6);
        entry(&mut b, 4, 1, b"some payload bytes", Store { deflate: true, crc: false });
        let n = b.len();
        b[n - 3] ^= 0xff;
        b[n - 6] ^= 0xff;
        let db = parse(&b, p()).unwrap();
        assert!(db.entries.is_empty());
        assert_eq!(db.damaged.len(), 1);
    }

    #[test]
    fn import_container_rejects_bad_magic_and_version() {
        assert!(matches!(parse(b"nope", p()), Err(ContainerError::BadMagic { .. })));
        assert!(matches!(parse(&header(9), p()), Err(ContainerError::Version { version: 9, .. })));
        assert!(parse(&header(5), p()).unwrap().entries.is_empty());
    }

    #[test]
    fn import_container_never_panics_on_random_bytes() {
        // A small deterministic fuzz loop: random tails after a valid header, and random
        // corruption of a valid database.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut good = header(6);
        entry(&mut good, 4, 1, b"{\"version\":6}", Store { deflate: true, crc: false });
        entry(&mut good, 6, 2, b"{\"version\":6}", Store { deflate: false, crc: false });
        for _ in 0..3000 {
            let mut b = if next() % 2 == 0 { header(6) } else { good.clone() };
            let n = (next() % 200) as usize;
            for _ in 0..n {
                b.push(next() as u8);
            }
            for _ in 0..(next() % 4) {
                let i = (next() as usize) % b.len();
                b[i] = next() as u8;
            }
            let _ = parse(&b, p());
        }
    }
}
