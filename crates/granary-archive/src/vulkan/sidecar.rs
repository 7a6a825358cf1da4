//! The after-update sidecar (docs/FORMAT.md §7): when the shipped archive holds nothing valid
//! for this device (a driver update, another GPU), what the loader compiled here is kept in a
//! local file beside the game's data — this device's `VkPipelineCache` data, checked — and
//! merged into the loader's cache on the next launch, so the second launch after an update
//! hits the cache instead of compiling everything again. The shipped archive is never
//! written.
//!
//! The file: a 72-byte header (magic, version, header length, the shipped archive's identity,
//! this device's identity, payload length and checksum, header checksum), then the payload,
//! pipeline-cache data whose own header is checked against the device before the driver
//! sees it. Written whole to a temporary file in the same folder, synced, renamed over the old
//! one, and the folder synced: a crash leaves the old sidecar or the new one, never a torn
//! one.
//!
//! *Invariants:* a sidecar is used only on a device whose identity hash equals the one it was
//! written on and whose cache header (vendor, device, `pipelineCacheUUID`) it passes; anything
//! else — damaged, another device, another format — is refused with the reason and never
//! reaches the driver; the shipped archive is only read.

use crate::device::DeviceIdentity;
use crate::key::{checksum64, content_hash, Encoder};
use crate::reader::Archive;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Sidecar file magic.
pub const SIDECAR_MAGIC: [u8; 8] = *b"GRNSIDE\0";
/// Sidecar format version this build writes and reads.
pub const SIDECAR_VERSION: u32 = 1;
/// Bytes of the sidecar header.
pub const SIDECAR_HEADER_LEN: usize = 72;

/// What became of the loader's sidecar ([`LoaderOptions::sidecar`](super::LoaderOptions::sidecar)).
///
/// Thread safety: plain data, `Send + Sync`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SidecarStatus {
    /// No sidecar configured.
    Off,
    /// None at the path yet (the first launch on this device).
    Absent,
    /// Read and merged into the loader's pipeline cache.
    Loaded {
        /// Bytes of pipeline-cache data merged.
        bytes: u64,
        /// Whether it was written for this very archive (`false`: for an earlier one, whose
        /// cache entries still serve the pipelines the two have in common).
        same_archive: bool,
    },
    /// Present but not used, and why (damaged, another device, another format, unreadable).
    Refused {
        /// What was wrong.
        why: String,
    },
}

/// The identity of a shipped archive: `xxh3-128` of its header and section table, which hold
/// every section's checksum, so any change to the archive changes it.
pub(super) fn archive_identity(archive: &Archive) -> u128 {
    let b = archive.bytes();
    content_hash(&b[..crate::format::HEADER_LEN.min(b.len())]).0
}

/// The identity of a device for the sidecar: every field of [`DeviceIdentity`] but the
/// enabled features (cache data does not depend on them).
pub(super) fn device_identity(d: &DeviceIdentity) -> u128 {
    let mut e = Encoder::new(b"granary-sidecar-device");
    e.u32(d.vendor_id);
    e.u32(d.device_id);
    e.u32(d.driver_id);
    e.u32(d.driver_version);
    e.u32(d.api_version);
    e.bytes(&d.pipeline_cache_uuid);
    e.bytes(&d.binary_global_key);
    e.str(&d.device_name);
    e.str(&d.driver_name);
    e.str(&d.driver_info);
    e.finish()
}

fn header(archive: u128, device: u128, payload: &[u8]) -> [u8; SIDECAR_HEADER_LEN] {
    let mut h = [0u8; SIDECAR_HEADER_LEN];
    h[..8].copy_from_slice(&SIDECAR_MAGIC);
    h[8..12].copy_from_slice(&SIDECAR_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(SIDECAR_HEADER_LEN as u32).to_le_bytes());
    h[16..32].copy_from_slice(&archive.to_le_bytes());
    h[32..48].copy_from_slice(&device.to_le_bytes());
    h[48..56].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    h[56..64].copy_from_slice(&checksum64(payload).to_le_bytes());
    let c = checksum64(&h[..64]);
    h[64..72].copy_from_slice(&c.to_le_bytes());
    h
}

/// A sidecar read and checked: its cache data and whether it was written for `archive`.
pub(super) struct Read {
    pub(super) data: Vec<u8>,
    pub(super) same_archive: bool,
}

/// Reads the sidecar at `path` for `archive` on `device`: `Ok(None)` when there is none,
/// `Err(why)` when it is there but must not be used.
pub(super) fn read(path: &Path, archive: u128, device: &DeviceIdentity) -> Result<Option<Read>, String> {
    let b = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
    let u128_at = |o: usize| u128::from_le_bytes(b[o..o + 16].try_into().unwrap_or_default());
    if b.len() < SIDECAR_HEADER_LEN || b[..8] != SIDECAR_MAGIC {
        return Err("not a granary sidecar (bad magic or cut short)".into());
    }
    let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    if version != SIDECAR_VERSION {
        return Err(format!("sidecar format version {version}, this granary reads {SIDECAR_VERSION}"));
    }
    if checksum64(&b[..64]) != u64_at(64) {
        return Err("header checksum mismatch".into());
    }
    let len = u64_at(48);
    let payload = &b[SIDECAR_HEADER_LEN..];
    if payload.len() as u64 != len {
        return Err(format!("{} bytes of cache data, the header says {len}", payload.len()));
    }
    if checksum64(payload) != u64_at(56) {
        return Err("cache data checksum mismatch".into());
    }
    if u128_at(32) != device_identity(device) {
        return Err(format!(
            "written on another device or driver (this one: {} {}, driver version {:#x})",
            device.device_name, device.driver_name, device.driver_version
        ));
    }
    super::cache::check_header(payload, device).map_err(|why| format!("its pipeline-cache data: {why}"))?;
    let same_archive = u128_at(16) == archive;
    let mut data = b;
    data.drain(..SIDECAR_HEADER_LEN);
    Ok(Some(Read { data, same_archive }))
}

/// Writes `data` as the sidecar at `path` for `archive` on `device`, replacing any: a
/// temporary file in the same folder, synced, renamed over `path`, the folder synced.
pub(super) fn write(path: &Path, archive: u128, device: &DeviceIdentity, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        f.write_all(&header(archive, device_identity(device), data))?;
        f.write_all(data)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        sync_dir(&dir)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> DeviceIdentity {
        DeviceIdentity {
            vendor_id: 0x10de,
            device_id: 0x2335,
            driver_id: 4,
            driver_version: 0x9170_0000,
            api_version: 0x0040_4000,
            features: Default::default(),
            pipeline_cache_uuid: [7; 16],
            binary_global_key: vec![1, 2, 3],
            device_name: "NVIDIA H200".into(),
            driver_name: "NVIDIA".into(),
            driver_info: "580.159.04".into(),
        }
    }

    /// Pipeline-cache data with a version-one header for `d`.
    fn cache_data(d: &DeviceIdentity) -> Vec<u8> {
        let mut c = Vec::new();
        c.extend_from_slice(&32u32.to_le_bytes());
        c.extend_from_slice(&1u32.to_le_bytes());
        c.extend_from_slice(&d.vendor_id.to_le_bytes());
        c.extend_from_slice(&d.device_id.to_le_bytes());
        c.extend_from_slice(&d.pipeline_cache_uuid);
        c.extend_from_slice(b"the driver's own entries");
        c
    }

    #[test]
    fn a_sidecar_reads_back_on_its_device_only_and_any_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("game.granary.sidecar");
        let d = device();
        assert!(read(&path, 1, &d).unwrap().is_none(), "none yet");
        let data = cache_data(&d);
        write(&path, 1, &d, &data).unwrap();
        let r = read(&path, 1, &d).unwrap().unwrap();
        assert_eq!((r.data.as_slice(), r.same_archive), (data.as_slice(), true));
        assert!(!read(&path, 2, &d).unwrap().unwrap().same_archive, "an earlier archive's sidecar still serves");
        // A driver update: refused, naming this device.
        let updated = DeviceIdentity { driver_version: d.driver_version + 1, ..d.clone() };
        let why = read(&path, 1, &updated).err().unwrap();
        assert!(why.contains("another device or driver") && why.contains("H200"), "{why}");
        // Every byte flipped is refused; no temporary is left beside it.
        let good = std::fs::read(&path).unwrap();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            assert!(read(&path, 1, &d).is_err(), "byte {i} flipped was not refused");
        }
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(read(&path, 1, &d).is_err(), "cut short");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn cache_data_for_another_device_is_refused_even_under_a_matching_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let d = device();
        let other = DeviceIdentity { pipeline_cache_uuid: [9; 16], ..d.clone() };
        write(&path, 1, &d, &cache_data(&other)).unwrap();
        let why = read(&path, 1, &d).err().unwrap();
        assert!(why.contains("pipelineCacheUUID"), "{why}");
    }
}
