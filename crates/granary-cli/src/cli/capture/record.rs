//! This machine's record of `--capture auto` decisions: what a calibration chose for a device
//! and driver version, so that the next harvest to a new output on the same machine does not
//! measure again (the calibration costs about as much as harvesting a few thousand pipelines:
//! 4.5–5.3 s on an NVIDIA H100, docs/BENCHMARKS.md).
//!
//! The record is one JSON file, `capture-choices.json`, in the folder [`folder`] names:
//! `GRANARY_CACHE_DIR` when set (set and empty: no record is read or written), else
//! `$XDG_CACHE_HOME/granary`, else `$HOME/.cache/granary`. Each entry is keyed by what decides
//! a capture's worth — the device (vendor, device, driver id, driver version, pipeline-cache
//! UUID) and the harvest's flags that change what is compiled (`--no-pipeline-libraries`,
//! `--whole-variants`, `--driver-internal-cache`) — and holds the choice and the measurement
//! behind it, which the summary quotes. A driver update has no entry and measures again;
//! `harvest --recalibrate` measures regardless and replaces the entry.
//!
//! Invariants: the record only ever saves a harvest a calibration, never changes what a
//! harvest with an explicit `--capture` does, and is never needed: a record that is missing,
//! unreadable, of another version or damaged is no record (the harvest measures, then writes
//! a good one). Writes replace the file atomically (a temporary file renamed over it), so a
//! reader sees the old record or the new one; two harvests finishing at once both write a
//! valid file and the later rename wins, losing at most the other's entry, which its next
//! harvest measures again.

use std::path::{Path, PathBuf};

/// The record's file name inside [`folder`].
pub const FILE: &str = "capture-choices.json";

/// The record's format version; a file of another version is ignored (and replaced).
const VERSION: u32 = 1;

/// The folder of this machine's record, or `None` when there is none (`GRANARY_CACHE_DIR`
/// set and empty, or no home to put it in).
pub fn folder() -> Option<PathBuf> {
    folder_from(|k| std::env::var_os(k))
}

fn folder_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(d) = var("GRANARY_CACHE_DIR") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CACHE_HOME").filter(|d| !d.is_empty() && Path::new(d).is_absolute()) {
        return Some(PathBuf::from(d).join("granary"));
    }
    var("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".cache").join("granary"))
}

/// What an entry is for: a device and driver version, and the flags that change what a
/// harvest compiles.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Key {
    /// `VkPhysicalDeviceProperties::vendorID`.
    pub vendor_id: u32,
    /// `VkPhysicalDeviceProperties::deviceID`.
    pub device_id: u32,
    /// `VkPhysicalDeviceDriverProperties::driverID`.
    pub driver_id: u32,
    /// `VkPhysicalDeviceProperties::driverVersion`.
    pub driver_version: u32,
    /// `VkPhysicalDeviceProperties::pipelineCacheUUID`, hexadecimal.
    pub pipeline_cache_uuid: String,
    /// The harvest's flags that change what is compiled, sorted (`--no-pipeline-libraries`,
    /// `--whole-variants`, `--driver-internal-cache`).
    pub flags: Vec<String>,
}

impl Key {
    /// The key for device `d` and a harvest's `flags` (in any order).
    pub fn new(d: &granary_archive::DeviceIdentity, flags: &[&str]) -> Key {
        let mut flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        flags.sort();
        Key {
            vendor_id: d.vendor_id,
            device_id: d.device_id,
            driver_id: d.driver_id,
            driver_version: d.driver_version,
            pipeline_cache_uuid: d.pipeline_cache_uuid.iter().map(|b| format!("{b:02x}")).collect(),
            flags,
        }
    }

    /// Whether a decision measured on `a` holds for `b`: the same vendor, device, driver id,
    /// driver version and pipeline-cache UUID (the output archive's own sections are matched
    /// to the device this way too).
    pub fn same_device(a: &granary_archive::DeviceIdentity, b: &granary_archive::DeviceIdentity) -> bool {
        Key::new(a, &[]) == Key::new(b, &[])
    }
}

/// One recorded decision.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// What it is for.
    pub key: Key,
    /// `true`: pipeline binaries won; `false`: cache data.
    pub binaries: bool,
    /// The calibration's reason, as the summary printed it then.
    pub measured: String,
    /// The script the sample came from.
    pub script: String,
    /// When it was measured, seconds since the Unix epoch.
    pub unix_seconds: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct File {
    version: u32,
    entries: Vec<Entry>,
}

/// The entries of the record in `dir` (none when it is missing, unreadable, damaged or of
/// another version).
fn entries(dir: &Path) -> Vec<Entry> {
    std::fs::read(dir.join(FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<File>(&b).ok())
        .filter(|f| f.version == VERSION)
        .map(|f| f.entries)
        .unwrap_or_default()
}

/// The decision recorded in `dir` for `key`, if any.
pub fn lookup(dir: &Path, key: &Key) -> Option<Entry> {
    entries(dir).into_iter().find(|e| &e.key == key)
}

/// Records `entry` in `dir`, replacing any entry with its key (the folder is created; the
/// file replaced atomically). The error says what could not be written.
pub fn store(dir: &Path, entry: Entry) -> Result<(), String> {
    let mut all = entries(dir);
    all.retain(|e| e.key != entry.key);
    all.push(entry);
    let text = serde_json::to_vec_pretty(&File { version: VERSION, entries: all }).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    let path = dir.join(FILE);
    std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `unix_seconds` as a UTC date and time (`2026-12-07 21:40 UTC`), for messages.
pub fn utc(unix_seconds: u64) -> String {
    let (days, rem) = (unix_seconds / 86_400, unix_seconds % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (never negative here).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", rem / 3_600, rem % 3_600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use granary_archive::DeviceIdentity;

    fn device(driver_version: u32) -> DeviceIdentity {
        DeviceIdentity {
            vendor_id: 0x10de,
            device_id: 0x2330,
            driver_id: 4,
            driver_version,
            api_version: 0,
            features: Default::default(),
            pipeline_cache_uuid: [7; 16],
            binary_global_key: vec![1],
            device_name: "GPU".into(),
            driver_name: "driver".into(),
            driver_info: "1".into(),
        }
    }

    fn entry(key: Key, binaries: bool) -> Entry {
        Entry { key, binaries, measured: "measured".into(), script: "s.json".into(), unix_seconds: 1 }
    }

    #[test]
    fn a_decision_is_found_only_for_its_device_driver_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::new(&device(1), &["--whole-variants", "--no-pipeline-libraries"]);
        assert_eq!(lookup(dir.path(), &key), None, "no record yet");
        store(dir.path(), entry(key.clone(), false)).unwrap();
        assert_eq!(lookup(dir.path(), &key).map(|e| e.binaries), Some(false));
        // Flags in another order are the same key; other flags, or a driver update, are not.
        let same = Key::new(&device(1), &["--no-pipeline-libraries", "--whole-variants"]);
        assert_eq!(lookup(dir.path(), &same).map(|e| e.binaries), Some(false));
        assert_eq!(lookup(dir.path(), &Key::new(&device(1), &["--whole-variants"])), None);
        assert_eq!(lookup(dir.path(), &Key::new(&device(2), &["--whole-variants", "--no-pipeline-libraries"])), None);
        assert!(Key::same_device(&device(1), &device(1)) && !Key::same_device(&device(1), &device(2)));
        // A new measurement replaces the entry for its key and keeps the others.
        let other = Key::new(&device(2), &[]);
        store(dir.path(), entry(other.clone(), true)).unwrap();
        store(dir.path(), entry(key.clone(), true)).unwrap();
        assert_eq!(lookup(dir.path(), &key).map(|e| e.binaries), Some(true));
        assert_eq!(lookup(dir.path(), &other).map(|e| e.binaries), Some(true));
        assert_eq!(entries(dir.path()).len(), 2);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from(FILE)]);
    }

    #[test]
    fn a_damaged_record_is_no_record_and_the_next_store_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::new(&device(1), &[]);
        for bad in [&b"{\"version\": 1, \"entries\": [tru"[..], b"", b"{\"version\": 99, \"entries\": []}"] {
            std::fs::write(dir.path().join(FILE), bad).unwrap();
            assert_eq!(lookup(dir.path(), &key), None);
        }
        store(dir.path(), entry(key.clone(), false)).unwrap();
        assert_eq!(lookup(dir.path(), &key).map(|e| e.binaries), Some(false));
        // A folder that cannot be made is an error naming it, not a panic.
        let file = dir.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        let e = store(&file.join("sub"), entry(key, true)).unwrap_err();
        assert!(e.contains("plain"), "{e}");
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_796_679_600), "2026-12-07 21:40 UTC");
    }

    #[test]
    fn the_folder_is_granary_cache_dir_else_xdg_else_home_and_empty_turns_it_off() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v))
        };
        assert_eq!(folder_from(env(&[("GRANARY_CACHE_DIR", "/c"), ("HOME", "/h")])), Some(PathBuf::from("/c")));
        assert_eq!(folder_from(env(&[("GRANARY_CACHE_DIR", ""), ("HOME", "/h")])), None);
        assert_eq!(folder_from(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])), Some(PathBuf::from("/x/granary")));
        // A relative XDG_CACHE_HOME is invalid by the XDG specification: ignored.
        assert_eq!(
            folder_from(env(&[("XDG_CACHE_HOME", "x"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/granary"))
        );
        assert_eq!(folder_from(env(&[])), None);
    }
}
