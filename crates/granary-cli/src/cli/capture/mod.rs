//! `harvest --capture`: which of a device's captures (pipeline binaries or pipeline-cache
//! data) this harvest stores, decided by measurement on a sample of the script (issue 24
//! item 4), and the record of the choice the summary prints.
//!
//! The sample is one shard of the script (about [`SAMPLE`] pipelines unless
//! `--calibrate-pipelines` says otherwise), harvested twice by
//! this binary as child processes — `--capture binaries` and `--capture cache`, output checks
//! off — each into a temporary folder, and each archive warmed [`WARMS`] times at one thread
//! (`granary warm -j 1`, the two interleaved). The capture whose median warm is faster wins,
//! the faster harvest when the two medians are within 5 % of each other or within the spread
//! of either's repeats (noise, not a difference): a player waits for the warm start, the build
//! machine for the harvest. Without `VK_KHR_pipeline_binary` there is nothing to choose (cache data);
//! with `--resume` of an archive that holds this device's capture already, the archive's kind
//! is kept (a resume that switched would compile everything again); and so it is when the
//! output archive already has a section for this device and driver version: the decision an
//! earlier harvest recorded (a driver update has no section there, and measures again). A
//! sharded harvest (`--shard I/N`, N > 1) does not measure: each shard would measure on its own
//! and could choose differently for the same device, so it takes the device's own kind (shards
//! of fewer than about 1,000 pipelines, one process each, carry no NVIDIA dictionary either).
//! Otherwise this machine's record of earlier calibrations ([`record`]) answers for the device,
//! driver version and compile-changing flags when it holds an entry, so a harvest to a new
//! output measures only the first time on a machine and driver; every calibration is recorded
//! there. `--recalibrate` measures regardless (not under `--resume`, which keeps the archive's
//! kind). A calibration that cannot run (a child fails) does not fail the harvest: it stores
//! cache data, says why on standard error and in the summary, and records nothing.
//! `auto` is the default: the calibration costs a few seconds (4.5–5.3 s on an NVIDIA H100),
//! once per machine, driver version and flags. The instance it loads to look at the device is
//! the one the harvest then opens its device on (`DeviceArgs::loaded`).

pub mod record;

use super::device_args::{BackendKind, CaptureMode, DeviceArgs};
use anyhow::Context as _;
use std::path::Path;
use std::process::Command;

/// Pipelines in the calibration sample, about (`--calibrate-pipelines`' default).
pub const SAMPLE: u64 = 64;

/// Warm times within this fraction of each other are a tie.
const TIE: f64 = 0.05;

/// Warm starts of each sample archive, interleaved (binaries, cache, binaries, …): the median
/// is compared, and a difference no larger than the spread of either's repeats is a tie.
const WARMS: usize = 3;

/// What `--capture` came to, and why: the summary's `capture` object.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CaptureChoice {
    /// `pipeline-binaries` or `cache-data`.
    pub mode: &'static str,
    /// `--capture binaries`, `--capture cache` or `--capture auto`.
    pub asked: &'static str,
    /// Why, in words.
    pub reason: String,
    /// The measurement behind an `auto` choice (`null` when there was none).
    pub calibration: Option<Calibration>,
}

/// One calibration: the sample and what each capture cost.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Calibration {
    /// Pipelines in the sample (shard 0 of `shards`).
    pub pipelines: u64,
    /// Shards the script was cut into to take the sample.
    pub shards: usize,
    /// The binaries capture's harvest and warm.
    pub binaries: Measured,
    /// The cache-data capture's harvest and warm.
    pub cache: Measured,
}

/// A capture's harvest and warm start on the sample.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measured {
    /// The sample's harvest wall time (its `wall_seconds`).
    pub harvest_seconds: f64,
    /// Warm start of the sample's archive at one thread: the median of `warm_runs`.
    pub warm_seconds: f64,
    /// Each warm start's `wall_seconds`, in the order they ran.
    pub warm_runs: Vec<f64>,
    /// The median warm's per-pipeline median, µs.
    pub warm_p50_us: f64,
}

impl Measured {
    /// How far apart this capture's repeated warms were (largest minus smallest), seconds.
    fn spread(&self) -> f64 {
        let max = self.warm_runs.iter().copied().fold(f64::MIN, f64::max);
        let min = self.warm_runs.iter().copied().fold(f64::MAX, f64::min);
        if self.warm_runs.is_empty() {
            0.0
        } else {
            max - min
        }
    }
}

/// Whether cache data wins: the faster median warm, unless the two are within [`TIE`] or
/// within the spread of either's repeated warms (noise), and then the faster harvest.
fn cache_wins(b: &Measured, k: &Measured) -> bool {
    let margin = (TIE * b.warm_seconds.max(k.warm_seconds)).max(b.spread()).max(k.spread());
    if (b.warm_seconds - k.warm_seconds).abs() <= margin {
        k.harvest_seconds < b.harvest_seconds
    } else {
        k.warm_seconds < b.warm_seconds
    }
}

/// What a harvest needs to know to calibrate.
pub struct Sample<'a> {
    /// The pipelines script.
    pub script: &'a Path,
    /// The output archive (read with `--resume`).
    pub output: &'a Path,
    /// `--resume`.
    pub resume: bool,
    /// `-j`.
    pub threads: usize,
    /// `--targets`, as given.
    pub targets: String,
    /// `--profile`'s name.
    pub profile: &'a str,
    /// Say on standard error that a calibration runs (`harvest` without `-q` or `--json`).
    pub announce: bool,
    /// Pipelines in the sample, about (`--calibrate-pipelines`, at least 1).
    pub sample: usize,
    /// `--whole-variants`, passed on to the sample's harvests.
    pub whole_variants: bool,
    /// `--shard I/N` with N > 1: no calibration (see the module's documentation).
    pub sharded: bool,
    /// `--recalibrate`: measure even where the output or this machine's record holds a decision.
    pub recalibrate: bool,
}

impl CaptureChoice {
    fn new(binaries: bool, asked: &'static str, reason: impl Into<String>) -> Self {
        CaptureChoice {
            mode: if binaries { "pipeline-binaries" } else { "cache-data" },
            asked,
            reason: reason.into(),
            calibration: None,
        }
    }

    /// Takes the mode from the opened backend's report (`captures`), for the choices that left
    /// it to the device.
    pub fn settle(&mut self, report: Option<&granary::backend::BackendReport>) {
        if let Some(r) = report {
            self.mode = if r.captures == "pipeline-binaries" { "pipeline-binaries" } else { "cache-data" };
        }
    }

    /// The summary's line.
    pub fn text(&self) -> String {
        format!("  capture:               {} ({}: {})\n", self.mode, self.asked, self.reason)
    }
}

/// Resolves `device.capture` for a harvest (setting it to `Binaries` or `Cache`) and says why;
/// `None` with `--backend none`.
pub fn choose(device: &mut DeviceArgs, s: &Sample<'_>) -> anyhow::Result<Option<CaptureChoice>> {
    if device.backend != BackendKind::Vulkan {
        return Ok(None);
    }
    if device.no_pipeline_binaries || device.capture == CaptureMode::Cache {
        device.capture = CaptureMode::Cache;
        let asked = if device.no_pipeline_binaries { "--no-pipeline-binaries" } else { "--capture cache" };
        return Ok(Some(CaptureChoice::new(false, asked, "asked for")));
    }
    if device.capture == CaptureMode::Binaries {
        return Ok(Some(CaptureChoice::new(true, "--capture binaries", "asked for")));
    }
    if device.capture == CaptureMode::Device {
        // The mode is the opened device's (`settle`).
        return Ok(Some(CaptureChoice::new(
            true,
            "--capture device",
            "the default: binaries where the device has them",
        )));
    }
    let asked = "--capture auto";
    let (has_binaries, this) = match device_has_binaries(device.device.as_deref()) {
        Ok((binaries, this, driver)) => {
            // The harvest opens its device on this instance (`DeviceArgs::loaded`).
            device.loaded = super::device_args::LoadedDriver(Some(driver));
            (binaries, this)
        }
        // Opening the backend reports the problem properly; nothing to measure here.
        Err(e) => {
            device.capture = CaptureMode::Device;
            return Ok(Some(CaptureChoice::new(true, asked, format!("the device could not be inspected ({e:#})"))));
        }
    };
    // The decision an earlier harvest of this output recorded for this device and driver: the
    // kind of capture its section holds (a new driver version has no section, and measures).
    if let Some(binaries) =
        archived_kind(s.output, Some(&this)).filter(|b| (has_binaries || !b) && !(s.recalibrate && has_binaries))
    {
        device.capture = if binaries { CaptureMode::Binaries } else { CaptureMode::Cache };
        return Ok(Some(CaptureChoice::new(
            binaries,
            asked,
            format!(
                "kept from the earlier harvest of {}, whose section for this device and driver holds {} (delete it, \
                 or give --capture binaries or cache, to choose again)",
                s.output.display(),
                if binaries { "binaries" } else { "cache data" }
            ),
        )));
    }
    if !has_binaries {
        device.capture = CaptureMode::Cache;
        return Ok(Some(CaptureChoice::new(false, asked, "the device has no VK_KHR_pipeline_binary")));
    }
    if s.resume {
        if let Some(binaries) = archived_kind(s.output, None) {
            device.capture = if binaries { CaptureMode::Binaries } else { CaptureMode::Cache };
            return Ok(Some(CaptureChoice::new(
                binaries,
                asked,
                "--resume keeps the kind of capture the archive already holds",
            )));
        }
    }
    if s.sharded {
        device.capture = CaptureMode::Device;
        return Ok(Some(CaptureChoice::new(
            true,
            asked,
            "a sharded harvest takes the device's own kind unmeasured (shards would measure apart and could \
             choose differently; give every shard the same --capture to choose)",
        )));
    }
    // The decision this machine recorded for the device, driver and flags (`record`).
    let mut flags = Vec::new();
    if device.no_pipeline_libraries {
        flags.push("--no-pipeline-libraries");
    }
    if s.whole_variants {
        flags.push("--whole-variants");
    }
    if device.driver_internal_cache {
        flags.push("--driver-internal-cache");
    }
    let key = record::Key::new(&this, &flags);
    let folder = record::folder();
    if let (Some(dir), false) = (&folder, s.recalibrate) {
        if let Some(e) = record::lookup(dir, &key) {
            device.capture = if e.binaries { CaptureMode::Binaries } else { CaptureMode::Cache };
            return Ok(Some(CaptureChoice::new(
                e.binaries,
                asked,
                format!(
                    "kept from this machine's record ({}) for this device, driver and flags, measured on {} \
                     at {}: {} (--recalibrate measures again)",
                    dir.join(record::FILE).display(),
                    e.script,
                    record::utc(e.unix_seconds),
                    e.measured
                ),
            )));
        }
    }
    if s.announce {
        eprintln!(
            "granary: measuring both captures on a sample of the script (--capture auto; binaries or cache skips this)"
        );
    }
    let c = match calibrate(device, s) {
        Ok(c) => c,
        // A calibration that cannot run (a child harvest or warm that fails) must not cost the
        // harvest: cache data is the capture every Vulkan driver has, and on every device
        // measured so far the one chosen. Not recorded: the next harvest measures again.
        Err(e) => {
            let why = format!(
                "the calibration failed ({e:#}); cache data, the capture every Vulkan driver has (--capture binaries \
                 stores binaries unmeasured)"
            );
            eprintln!("granary: warning: --capture auto: {why}");
            device.capture = CaptureMode::Cache;
            return Ok(Some(CaptureChoice::new(false, asked, why)));
        }
    };
    let (b, k) = (&c.binaries, &c.cache);
    let cache_wins = cache_wins(b, k);
    let reason = format!(
        "measured on {} pipelines (shard 0 of {}): warm at -j1 {:.1} ms from binaries vs {:.1} ms from cache data \
         (median of {WARMS}; repeats spread {:.1} and {:.1} ms), harvest {:.2} s vs {:.2} s",
        c.pipelines,
        c.shards,
        b.warm_seconds * 1e3,
        k.warm_seconds * 1e3,
        b.spread() * 1e3,
        k.spread() * 1e3,
        b.harvest_seconds,
        k.harvest_seconds
    );
    device.capture = if cache_wins { CaptureMode::Cache } else { CaptureMode::Binaries };
    let mut reason_recorded = reason.clone();
    if let Some(dir) = &folder {
        let entry = record::Entry {
            key,
            binaries: !cache_wins,
            measured: reason.clone(),
            script: s.script.display().to_string(),
            unix_seconds: record::now(),
        };
        // A record that cannot be written costs the next harvest a calibration, nothing more.
        match record::store(dir, entry) {
            Ok(()) => reason_recorded.push_str(&format!("; recorded in {}", dir.join(record::FILE).display())),
            Err(e) => reason_recorded.push_str(&format!("; not recorded ({e})")),
        }
    }
    let mut choice = CaptureChoice::new(!cache_wins, asked, reason_recorded);
    choice.calibration = Some(c);
    Ok(Some(choice))
}

/// One device section's binaries that several sets share, as `harvest` reports them after
/// writing: NVIDIA's dictionary, which the run-time loader declines (drawing with a pipeline
/// created from such a set crashes NVIDIA 580.159), so those pipelines compile at run time.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SharedBinaries {
    /// The device section (`DeviceIdentity`'s description).
    pub device: String,
    /// Binary sets (pipelines with binaries) in the section.
    pub sets: usize,
    /// Of those, the sets that carry a shared binary of at least 64 KiB.
    pub sets_with_shared_binary: usize,
    /// Distinct shared binaries of at least 64 KiB.
    pub shared_binaries: usize,
}

impl SharedBinaries {
    /// The summary's warning, or nothing when no set carries one.
    pub fn text(&self) -> String {
        if self.sets_with_shared_binary == 0 {
            return String::new();
        }
        format!(
            "granary: warning: {} of {} binary sets for {} carry a binary other sets share (NVIDIA's dictionary: \
             drawing with a pipeline created from one crashes NVIDIA 580); the loader compiles those pipelines \
             instead. To ship binaries it can use, harvest in shards of fewer than about 1,000 pipelines \
             (--shard I/N, then merge), or capture cache data (--capture cache)\n",
            self.sets_with_shared_binary, self.sets, self.device
        )
    }
}

/// Per device section of the archive at `output` that holds binaries: how many of its sets
/// carry a binary of at least [`granary_archive::vulkan::DICTIONARY_MIN_BYTES`] that another
/// set shares. One pass over each section's binary records; no binary bytes are read. Empty
/// when the archive cannot be opened (the harvest reported that already).
pub fn shared_binaries(output: &Path) -> Vec<SharedBinaries> {
    let Ok(ar) = granary_archive::Archive::open(output) else { return Vec::new() };
    let Ok(devices) = ar.devices() else { return Vec::new() };
    let mut out = Vec::new();
    for d in devices.iter().filter(|d| d.has_pipeline_binaries()) {
        let Ok(shared) = d.shared_binaries(granary_archive::vulkan::DICTIONARY_MIN_BYTES) else { continue };
        let (mut sets, mut carrying) = (0, 0);
        for j in 0..d.pipeline_count() {
            let Ok((_, set)) = d.pipeline_binaries(j) else { continue };
            if set.is_empty() {
                continue;
            }
            sets += 1;
            if shared.carried_by(&set).unwrap_or(false) {
                carrying += 1;
            }
        }
        out.push(SharedBinaries {
            device: d.identity().describe(),
            sets,
            sets_with_shared_binary: carrying,
            shared_binaries: shared.len(),
        });
    }
    out
}

/// Whether the selected device has `VK_KHR_pipeline_binary`, its physical identity, and the
/// instance it was found on (the harvest opens its device there).
fn device_has_binaries(
    wanted: Option<&str>,
) -> anyhow::Result<(bool, granary_archive::DeviceIdentity, std::sync::Arc<granary_archive::vulkan::Driver>)> {
    let driver = granary_archive::vulkan::Driver::load()?;
    let info = granary_archive::vulkan::select_device(driver.physical_devices()?, wanted)?;
    Ok((info.supports.pipeline_binaries, info.identity.clone(), driver))
}

/// The kind of capture the existing archive at `output` holds (`Some(true)`: binaries in some
/// section, `Some(false)`: only cache data), over its sections for the device `this`
/// describes — vendor, device, driver, driver version and pipeline-cache UUID all `this`'s —
/// or over every section when `this` is `None` (`--resume`). `None` without an archive that
/// opens or such a section. (The features enabled and the binary global key are the logical
/// device's, known only once it is opened; a harvest enables the same features on the same
/// driver.)
fn archived_kind(output: &Path, this: Option<&granary_archive::DeviceIdentity>) -> Option<bool> {
    let ar = granary_archive::Archive::open(output).ok()?;
    let devices = ar.devices().ok()?;
    let same = |d: &granary_archive::DeviceIdentity| this.is_none_or(|t| record::Key::same_device(d, t));
    let sections: Vec<_> = devices.iter().filter(|d| same(d.identity())).collect();
    (!sections.is_empty()).then(|| sections.iter().any(|d| d.has_pipeline_binaries()))
}

/// Harvests the sample with each capture and warms each archive [`WARMS`] times.
fn calibrate(device: &DeviceArgs, s: &Sample<'_>) -> anyhow::Result<Calibration> {
    let sample = s.sample.max(1);
    let n = granary::script::Script::load(s.script).map(|sc| sc.pipelines.len()).unwrap_or(sample);
    let shards = n.div_ceil(sample).max(1);
    let dir = tempfile_dir()?;
    let exe = std::env::current_exe().context("cannot find this granary binary")?;
    let device_flags = |c: &mut Command| {
        if let Some(d) = &device.device {
            c.arg("--device").arg(d);
        }
        if device.no_pipeline_libraries {
            c.arg("--no-pipeline-libraries");
        }
    };
    let harvest = |capture: &str| -> anyhow::Result<(std::path::PathBuf, serde_json::Value)> {
        let out = dir.path.join(format!("{capture}.granary"));
        let mut h = Command::new(&exe);
        h.args(["harvest"]).arg(s.script).arg("-o").arg(&out);
        h.args(["--backend", "vulkan", "--capture", capture, "--json", "-q", "--check-outputs", "off"]);
        h.args(["--shard", &format!("0/{shards}"), "-j", &s.threads.to_string(), "--targets", &s.targets]);
        h.args(["--profile", s.profile]);
        device_flags(&mut h);
        if s.whole_variants {
            h.arg("--whole-variants");
        }
        if device.driver_internal_cache {
            h.arg("--driver-internal-cache");
        }
        Ok((out, run_json(&mut h, "the sample's harvest")?))
    };
    let warm = |archive: &Path| -> anyhow::Result<serde_json::Value> {
        let mut w = Command::new(&exe);
        w.arg("warm").arg(archive).args(["-j", "1", "--json"]);
        device_flags(&mut w);
        run_json(&mut w, "the sample's warm start")
    };
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let (b_out, b_harvest) = harvest("binaries")?;
    let (k_out, k_harvest) = harvest("cache")?;
    // Interleaved, so that a drift of the machine falls on both.
    let (mut b_warms, mut k_warms) = (Vec::new(), Vec::new());
    for _ in 0..WARMS {
        b_warms.push(warm(&b_out)?);
        k_warms.push(warm(&k_out)?);
    }
    let measured = |harvest: &serde_json::Value, warms: &[serde_json::Value]| {
        let runs: Vec<f64> = warms.iter().map(|w| num(&w["wall_seconds"])).collect();
        let mut order: Vec<usize> = (0..runs.len()).collect();
        order.sort_by(|&a, &b| runs[a].total_cmp(&runs[b]));
        let median = order.get(order.len() / 2).map_or(&serde_json::Value::Null, |&i| &warms[i]);
        Measured {
            harvest_seconds: num(&harvest["wall_seconds"]),
            warm_seconds: num(&median["wall_seconds"]),
            warm_runs: runs,
            warm_p50_us: num(&median["per_pipeline_us"]["p50"]),
        }
    };
    let binaries = measured(&b_harvest, &b_warms);
    let cache = measured(&k_harvest, &k_warms);
    let pipelines = b_harvest["succeeded"].as_u64().unwrap_or(0);
    Ok(Calibration { pipelines, shards, binaries, cache })
}

/// Runs `c` and parses its standard output as JSON; exit 0 or 1 (some pipelines failed) is a
/// result, anything else an error with the child's last words.
fn run_json(c: &mut Command, what: &str) -> anyhow::Result<serde_json::Value> {
    let o = c.output().with_context(|| format!("cannot run {what}"))?;
    let ok = matches!(o.status.code(), Some(0 | 1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    anyhow::ensure!(ok, "{what} failed ({}): {}", o.status, stderr.lines().last().unwrap_or(""));
    serde_json::from_slice(&o.stdout).with_context(|| format!("{what} printed no JSON"))
}

/// A temporary folder removed on drop.
struct TempDir {
    path: std::path::PathBuf,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn tempfile_dir() -> anyhow::Result<TempDir> {
    let path = std::env::temp_dir().join(format!("granary-capture-{}", std::process::id()));
    std::fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(TempDir { path })
}

#[cfg(test)]
mod tests {
    use super::*;
    use granary_archive::{ArchiveMeta, Blob, DeviceCache, DeviceIdentity};
    use std::sync::Arc;

    fn measured(harvest_seconds: f64, warm_runs: &[f64]) -> Measured {
        let mut sorted = warm_runs.to_vec();
        sorted.sort_by(f64::total_cmp);
        Measured {
            harvest_seconds,
            warm_seconds: sorted[sorted.len() / 2],
            warm_runs: warm_runs.to_vec(),
            warm_p50_us: 0.0,
        }
    }

    #[test]
    fn a_warm_difference_within_the_repeats_spread_is_a_tie_the_harvest_decides() {
        // Medians 40 and 48 ms (20 % apart), binaries harvest slower: a real difference when the
        // repeats agree, so binaries win ...
        let (b, k) = (measured(0.33, &[0.040, 0.041, 0.039]), measured(0.22, &[0.048, 0.047, 0.049]));
        assert!(!cache_wins(&b, &k));
        // ... noise when one capture's repeats spread wider than that: the faster harvest wins.
        let k = measured(0.22, &[0.048, 0.031, 0.050]);
        assert!(cache_wins(&b, &k));
        // Within 5 % is a tie however steady the repeats.
        let k = measured(0.22, &[0.041, 0.041, 0.041]);
        assert!(cache_wins(&b, &k));
        // A faster warm well beyond the noise wins even with the slower harvest.
        let (b, k) = (measured(0.20, &[0.060, 0.061, 0.059]), measured(0.30, &[0.040, 0.041, 0.040]));
        assert!(cache_wins(&b, &k));
    }

    fn identity(driver_version: u32) -> DeviceIdentity {
        DeviceIdentity {
            vendor_id: 0x10de,
            device_id: 0x2330,
            driver_id: 4,
            driver_version,
            api_version: 1 << 22,
            features: granary_archive::DeviceFeatures::NONE,
            pipeline_cache_uuid: [7; 16],
            binary_global_key: Vec::new(),
            device_name: "a GPU".into(),
            driver_name: "a driver".into(),
            driver_info: String::new(),
        }
    }

    /// The harvest's report of NVIDIA's dictionary: the sets of a binaries section that carry a
    /// large binary another set shares, counted from the written archive.
    #[test]
    fn the_summary_counts_the_sets_that_carry_a_shared_large_binary() {
        use granary_archive::{BinarySet, DeviceBinaries, DeviceBinary};
        let mut nvidia = identity(5);
        nvidia.binary_global_key = vec![9; 20];
        let nvidia = Arc::new(nvidia);
        let dictionary = Blob::new(vec![0xd1; 100_000]);
        let entry = |k: u128, with_dictionary: bool| {
            let mut binaries = vec![DeviceBinary { key: vec![k as u8, 1], data: Blob::new(vec![k as u8; 2000]) }];
            if with_dictionary {
                binaries.push(DeviceBinary { key: vec![0xd1; 32], data: dictionary.clone() });
            }
            let mut w = granary_archive::__compute_entry(k, k * 7, vec![k as u8; 40], format!("p{k}"));
            w.binaries = vec![DeviceBinaries {
                device: nvidia.clone(),
                set: Arc::new(BinarySet { flags: 0, pipeline_key: vec![k as u8; 16], binaries }),
            }];
            w
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.granary");
        let entries = [entry(1, true), entry(2, false), entry(3, true), entry(4, true)];
        std::fs::write(&path, granary_archive::encode(&entries, &ArchiveMeta::new("writer options"))).unwrap();
        let report = shared_binaries(&path);
        assert_eq!(report.len(), 1);
        let r = &report[0];
        assert_eq!((r.sets, r.sets_with_shared_binary, r.shared_binaries), (4, 3, 1));
        assert!(r.text().contains("3 of 4 binary sets") && r.text().contains("--capture cache"), "{}", r.text());
        // Without the dictionary in a second set, nothing is shared and nothing is said.
        let path = dir.path().join("b.granary");
        let entries = [entry(1, true), entry(2, false)];
        std::fs::write(&path, granary_archive::encode(&entries, &ArchiveMeta::new("writer options"))).unwrap();
        let report = shared_binaries(&path);
        assert_eq!((report[0].sets, report[0].sets_with_shared_binary), (2, 0));
        assert!(report[0].text().is_empty());
        assert!(shared_binaries(&dir.path().join("absent.granary")).is_empty());
    }

    /// An archive's section for the same device and driver version is the recorded decision
    /// (its kind: cache data here); another driver version, or no archive, records none.
    #[test]
    fn a_section_for_this_device_and_driver_is_the_recorded_decision() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.granary");
        let mut meta = ArchiveMeta::new("writer options");
        meta.device_caches.push(DeviceCache { device: Arc::new(identity(5)), data: Blob::new(vec![1, 2, 3]) });
        std::fs::write(&path, granary_archive::encode(&[], &meta)).unwrap();
        assert_eq!(archived_kind(&path, Some(&identity(5))), Some(false));
        assert_eq!(archived_kind(&path, Some(&identity(6))), None, "a driver update measures again");
        let other_card = DeviceIdentity { device_id: 0x2331, ..identity(5) };
        assert_eq!(archived_kind(&path, Some(&other_card)), None);
        assert_eq!(archived_kind(&path, None), Some(false), "--resume reads every section");
        assert_eq!(archived_kind(&dir.path().join("absent.granary"), Some(&identity(5))), None);
    }
}
