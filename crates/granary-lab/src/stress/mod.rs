//! Race modes: each scenario of the bug report run against the real compiler and capture,
//! with its invariants checked and every violation reported.
//!
//! Invariants checked by every mode: no thread panics; every pipeline compiles; the final
//! archive holds every pipeline exactly once and is byte-identical to a single-thread
//! reference; every intermediate archive verifies and holds every pipeline whose compile had
//! returned before that write began. `shared-vertex` also checks that each stage function
//! was compiled exactly once.
//!
//! With a device backend ([`StressOptions::backend`], e.g. Vulkan) every compiler of a run —
//! the reference, each generation, each per-thread compiler — shares that one backend (one
//! device), as an application's capture loop does. Archives are then compared as written:
//! with their device sections and the device's pipeline-cache data (the capture's
//! [`Capture::device_caches`]; pieces are merged from the files, which carry them). Driver
//! binaries are not reproducible, so where the device captures binaries the final archive is
//! compared with the reference with its device sections stripped (entries without binaries,
//! no caches), and its device section is checked on its own: one binary set per pipeline for
//! the device, non-empty, LIBRARY flag exactly for pipelines with an unspecialized colour
//! attachment. Where the device keeps cache data instead (empty sets), the whole final archive
//! is still byte-identical to the single-thread reference.

mod modes;

use crate::workload::{seed_scale, SeedScaleOptions};
use granary::archive::{encode, portable_meta, Archive, DeviceIdentity, WriteEntry, BINARY_SET_LIBRARY};
use granary::backend::Backend;
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::{PipelineDescriptor, PipelineKey, TargetSet};
use granary::script::Script;
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Runs of pipelines sharing one vertex function spread over all threads.
    SharedVertex,
    /// `write_archive` in a loop on one thread while the others compile into the same capture.
    FlushDuringCompile,
    /// Every K pipelines: write the archive, continue with a fresh compiler and capture; merge
    /// the pieces at the end.
    Rotate,
    /// One compiler and capture per thread, merged at the end.
    PerThread,
    /// All of the above at once on the generated workload.
    SeedMix,
}

impl Mode {
    /// All modes.
    pub const ALL: [Mode; 5] =
        [Mode::SharedVertex, Mode::FlushDuringCompile, Mode::Rotate, Mode::PerThread, Mode::SeedMix];
    /// The CLI spelling.
    pub fn name(self) -> &'static str {
        match self {
            Mode::SharedVertex => "shared-vertex",
            Mode::FlushDuringCompile => "flush-during-compile",
            Mode::Rotate => "rotate",
            Mode::PerThread => "per-thread",
            Mode::SeedMix => "seed-mix",
        }
    }
    /// Parses the CLI spelling.
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Options for [`run`].
#[derive(Debug, Clone)]
pub struct StressOptions {
    /// The scenario.
    pub mode: Mode,
    /// Compile threads.
    pub threads: usize,
    /// A script to use; `None` generates a seed-scale workload of `pipelines` pipelines.
    pub script: Option<PathBuf>,
    /// Size of the generated workload.
    pub pipelines: usize,
    /// Keep repeating the scenario until this much time has passed (at least once).
    pub seconds: Option<f64>,
    /// Generator seed.
    pub seed: u64,
    /// `rotate` and `seed-mix`: pipelines per compiler generation (`None`: a fifth of the
    /// workload).
    pub rotate_every: Option<usize>,
    /// Folder for intermediate archives; a temporary one when `None`.
    pub work_dir: Option<PathBuf>,
    /// A device backend shared by every compiler of the run (one device); `None`: the `none`
    /// backend (front end and link checks only).
    pub backend: Option<Arc<dyn Backend>>,
}

/// What a stress run saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StressReport {
    /// Scenario name.
    pub mode: String,
    /// Compile threads.
    pub threads: usize,
    /// Pipelines per iteration.
    pub pipelines: usize,
    /// Pipelines of the script left out because the device rejected them on a single thread
    /// (device backends only; not a race).
    pub device_rejected: Rejected,
    /// The backend: `none` or the device backend's name.
    pub backend: String,
    /// The device, in words (device backends only).
    pub device: Option<String>,
    /// What the device captures: `pipeline-binaries` or `cache-data` (device backends only).
    pub captures: Option<String>,
    /// Pipelines created on the device during the iterations (whole pipelines and libraries;
    /// the single-thread reference not counted).
    pub driver_creates: u64,
    /// Iterations run.
    pub iterations: usize,
    /// Compile calls made.
    pub compiles: usize,
    /// Archives written during compilation (flushes, rotations, per-thread pieces).
    pub writes: usize,
    /// Of those, verified and checked against the snapshot contract.
    pub writes_checked: usize,
    /// Wall time in seconds.
    pub wall_seconds: f64,
    /// The invariants this mode checked.
    pub checks: Vec<&'static str>,
    /// Every invariant violation; empty when all held.
    pub violations: Vec<String>,
}

/// A stress run could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// Generating the workload failed.
    #[error(transparent)]
    Gen(#[from] crate::workload::GenError),
    /// The script could not be read.
    #[error(transparent)]
    Script(#[from] granary::script::ScriptError),
    /// Some pipelines of the script do not compile even on one thread.
    #[error("the workload has {0} pipelines that fail on a single thread; stress needs a clean workload (first: {1})")]
    Unclean(usize, String),
    /// Temporary files.
    #[error("work folder: {0}")]
    Io(#[from] std::io::Error),
    /// The device backend did not return binaries for its device on a single thread.
    #[error("the device backend '{0}' returned no binary set for a pipeline on a single thread")]
    NoDevice(String),
}

/// The device of a run with a device backend, and what its archives must show.
pub(crate) struct DeviceExpect {
    /// The device's identity, as the backend records it.
    pub identity: DeviceIdentity,
    /// Pipelines whose binary set must carry the LIBRARY flag.
    pub libraries: HashSet<PipelineKey>,
}

impl DeviceExpect {
    /// Whether the device captures driver binaries (else: empty sets and cache data).
    pub fn captures_binaries(&self) -> bool {
        !self.identity.binary_global_key.is_empty()
    }
}

/// The pipelines under test and their single-thread reference archive.
pub(crate) struct Workload {
    pub pipelines: Vec<PipelineDescriptor>,
    /// The reference archive as written: with its device section and cache data.
    pub reference: Vec<u8>,
    /// The reference without device data ([`strip`]).
    pub reference_stripped: Vec<u8>,
    pub unique_functions: u64,
    pub dir: PathBuf,
    pub backend: Option<Arc<dyn Backend>>,
    pub device: Option<DeviceExpect>,
    /// Pipelines of the script the device rejected on a single thread (left out).
    pub rejected: Rejected,
}

/// Pipelines the device backend rejected on a single thread (an unsupported sample count or
/// format): they are left out of the workload.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Rejected {
    /// How many.
    pub count: usize,
    /// The first one's error.
    pub first: Option<String>,
}

impl Workload {
    /// A compiler on the run's backend (shared by every compiler of the run).
    pub(crate) fn compiler(&self, capture: Option<Arc<Capture>>, threads: usize) -> Compiler {
        compiler(capture, threads, self.backend.clone())
    }
    /// Pipelines created on the device so far (whole pipelines and libraries).
    pub(crate) fn driver_creates(&self) -> u64 {
        self.backend.as_ref().and_then(|b| b.report()).map_or(0, |r| r.pipelines_created + r.libraries_created)
    }
}

pub(crate) fn compiler(capture: Option<Arc<Capture>>, threads: usize, backend: Option<Arc<dyn Backend>>) -> Compiler {
    let options = CompilerOptions {
        targets: TargetSet::SPIRV,
        max_concurrent_tasks: Some(threads),
        capture,
        cache_functions: true,
        ..Default::default()
    };
    match backend {
        Some(b) => Compiler::with_backend(options, b),
        None => Compiler::new(options),
    }
}

/// What `capture` holds now, encoded as `write_archive` would write it: its entries with their
/// device binaries and the device caches of its backends.
pub(crate) fn encode_capture(capture: &Capture) -> Vec<u8> {
    let mut meta = portable_meta();
    meta.device_caches = capture.device_caches().unwrap_or_default();
    encode(&capture.snapshot().entries, &meta)
}

/// `entries` without device data: no binary sets, no caches. Comparable run to run even
/// where driver binaries are not reproducible.
pub(crate) fn strip(entries: &[WriteEntry]) -> Vec<u8> {
    let entries: Vec<WriteEntry> = entries.iter().map(|e| WriteEntry { binaries: Vec::new(), ..e.clone() }).collect();
    encode(&entries, &portable_meta())
}

fn load(opts: &StressOptions, dir: &Path) -> Result<Workload, StressError> {
    let script_path = match &opts.script {
        Some(p) => p.clone(),
        None => {
            let n = opts.pipelines.max(1);
            let gen = SeedScaleOptions {
                pipelines: n,
                vertex_functions: (n / 2).max(1),
                max_run: (n / 4).clamp(1, 1000),
                seed: opts.seed,
            };
            seed_scale(&gen, &dir.join("workload"))?.script
        }
    };
    let script = Script::load(&script_path)?;
    let all: Vec<PipelineDescriptor> = script.pipelines.into_iter().filter_map(|p| p.descriptor.ok()).collect();
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let c = compiler(Some(capture.clone()), 1, opts.backend.clone());
    let mut failed = 0;
    let mut first_error = None;
    let mut identity = None;
    let mut libraries = HashSet::new();
    let mut pipelines = Vec::with_capacity(all.len());
    let mut rejected = Rejected::default();
    for p in all {
        match c.compile_detailed(&p) {
            // A state the device does not support (a sample count, a format) is a property of
            // the device, not a race: such pipelines leave the workload, counted.
            Err(e @ CompileError::Device { .. }) => {
                rejected.count += 1;
                rejected.first.get_or_insert_with(|| e.to_string());
            }
            Err(e) => {
                failed += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
            Ok(o) => {
                if let Some(b) = o.binaries {
                    identity.get_or_insert_with(|| (*b.device).clone());
                }
                if p.needs_libraries() {
                    libraries.insert(o.entry.key);
                }
                pipelines.push(p);
            }
        }
    }
    if failed > 0 {
        return Err(StressError::Unclean(failed, first_error.unwrap_or_default()));
    }
    let device = match &opts.backend {
        None => None,
        Some(b) if pipelines.is_empty() => {
            return Err(StressError::NoDevice(format!("{} (the workload is empty)", b.name())))
        }
        Some(b) => match identity {
            Some(identity) => Some(DeviceExpect { identity, libraries }),
            None => return Err(StressError::NoDevice(b.name().into())),
        },
    };
    // Stage functions of the rejected pipelines were compiled too: count the kept ones' alone.
    let unique_functions = if rejected.count == 0 {
        c.stats().functions_compiled
    } else {
        let f = compiler(None, 1, None);
        pipelines.iter().filter(|p| f.compile(p).is_ok()).count();
        f.stats().functions_compiled
    };
    Ok(Workload {
        reference: encode_capture(&capture),
        reference_stripped: strip(&capture.snapshot().entries),
        unique_functions,
        rejected,
        pipelines,
        dir: dir.to_path_buf(),
        backend: opts.backend.clone(),
        device,
    })
}

/// Runs the scenario and reports; violations are in the report, not errors.
pub fn run(opts: &StressOptions) -> Result<StressReport, StressError> {
    let tmp = tempfile::tempdir()?;
    let dir = opts.work_dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;
    let w = load(opts, &dir)?;
    let threads = opts.threads.max(1);
    let device_report = opts.backend.as_ref().and_then(|b| b.report());
    let mut report = StressReport {
        mode: opts.mode.name().into(),
        threads,
        pipelines: w.pipelines.len(),
        device_rejected: w.rejected.clone(),
        backend: opts.backend.as_ref().map_or("none", |b| b.name()).into(),
        device: device_report.as_ref().map(|r| r.device.clone()),
        captures: device_report.map(|r| r.captures),
        checks: checks(opts.mode, w.device.as_ref()),
        ..Default::default()
    };
    let rotate_every = opts.rotate_every.unwrap_or(w.pipelines.len() / 5);
    let start = Instant::now();
    let deadline = opts.seconds.map(|s| start + Duration::from_secs_f64(s.max(0.0)));
    loop {
        report.iterations += 1;
        modes::run(opts.mode, &w, threads, rotate_every, &mut report);
        if deadline.is_none_or(|d| Instant::now() >= d) || report.violations.len() > 100 {
            break;
        }
    }
    report.wall_seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// The invariants `mode` checks, in words (`device`: the device of a device backend).
fn checks(mode: Mode, device: Option<&DeviceExpect>) -> Vec<&'static str> {
    let mut c = vec!["no thread panics", "every pipeline compiles"];
    match device {
        None => {
            c.push("the final archive holds every pipeline once and is byte-identical to a single-thread reference")
        }
        Some(d) => {
            c.push("every pipeline is created on the device exactly once per iteration (one compile per pipeline over all compiler generations)");
            c.push("the final archive without its device data (binaries, caches) holds every pipeline once and is byte-identical to the single-thread reference without it");
            c.push("the final archive has one device section, for the backend's device, with exactly one binary set per pipeline");
            c.push("a binary set has the LIBRARY flag exactly when the pipeline has an unspecialized colour format, blend or write mask");
            if d.captures_binaries() {
                c.push("every binary set holds driver binaries (device captures pipeline binaries; bytes differ run to run, so the device section is not compared with the reference)");
            } else {
                c.push("every binary set is empty (device keeps cache data)");
                c.push("the whole final archive, device section and cache data included, is byte-identical to the single-thread reference");
            }
        }
    }
    match mode {
        Mode::SharedVertex => c.push("each stage function is compiled exactly once"),
        Mode::FlushDuringCompile => c.push("every archive written during compilation verifies and holds every pipeline whose compile returned before the write began"),
        Mode::Rotate | Mode::PerThread => c.push("every piece verifies and holds every pipeline compiled into its capture; merging the pieces gives the reference"),
        Mode::SeedMix => c.push("every flush and piece verifies and honours the snapshot contract; merging the pieces gives the reference"),
    }
    c
}

/// Checks an archive written during compilation: it verifies and holds every key in `before`.
pub(crate) fn check_write(path: &Path, before: &[PipelineKey], violations: &mut Vec<String>) -> bool {
    let r = Archive::read(path).and_then(|a| a.verify().map(|_| a));
    match r {
        Err(e) => {
            violations.push(format!("{}: intermediate archive does not verify: {e}", path.display()));
            false
        }
        Ok(a) => {
            let missing = before.iter().filter(|k| !matches!(a.get(**k), Ok(Some(_)))).count();
            if missing > 0 {
                violations.push(format!(
                    "{}: {missing} pipelines whose compile returned before the write began are missing",
                    path.display()
                ));
            }
            missing == 0
        }
    }
}

/// Checks the final bytes against the reference: byte for byte without a device backend or
/// where the device keeps cache data; with device data stripped otherwise; and, with a device
/// backend, the device section on its own ([`check_device`]).
pub(crate) fn check_final(w: &Workload, bytes: &[u8], what: &str, violations: &mut Vec<String>) {
    let whole = w.device.as_ref().is_none_or(|d| !d.captures_binaries());
    let archive = Archive::from_bytes(bytes.to_vec());
    let detail = |a: &Result<Archive, granary::archive::ArchiveError>| match a {
        Ok(a) => format!("{} pipelines vs {} expected", a.len(), w.pipelines.len()),
        Err(e) => format!("unreadable: {e}"),
    };
    if whole && bytes != w.reference.as_slice() {
        violations
            .push(format!("{what}: final archive differs from the single-thread reference ({})", detail(&archive)));
    }
    let Some(device) = &w.device else { return };
    let a = match archive {
        Ok(a) => a,
        Err(_) => {
            if !whole {
                violations.push(format!("{what}: final archive is unreadable ({})", detail(&archive)));
            }
            return;
        }
    };
    match a.entries() {
        Ok(entries) if strip(&entries) == w.reference_stripped => {}
        Ok(_) => violations.push(format!(
            "{what}: final archive without device data differs from the single-thread reference without it ({} \
             pipelines vs {} expected)",
            a.len(),
            w.pipelines.len()
        )),
        Err(e) => violations.push(format!("{what}: final archive entries unreadable: {e}")),
    }
    check_device(&a, device, what, violations);
}

/// Checks the device section of a final archive: exactly one device, the expected one; every
/// pipeline has a binary set for it, non-empty exactly when the device captures binaries,
/// with the LIBRARY flag exactly for the pipelines that need a library.
pub(crate) fn check_device(a: &Archive, d: &DeviceExpect, what: &str, violations: &mut Vec<String>) {
    let devices = match a.devices() {
        Ok(v) => v,
        Err(e) => {
            violations.push(format!("{what}: device sections unreadable: {e}"));
            return;
        }
    };
    if devices.len() != 1 {
        violations.push(format!("{what}: final archive has {} device sections, expected 1", devices.len()));
    }
    let dev = match a.device_for(&d.identity) {
        Ok(Some(dev)) => dev,
        Ok(None) => {
            violations.push(format!("{what}: final archive has no device section for {}", d.identity.describe()));
            return;
        }
        Err(e) => {
            violations.push(format!("{what}: device section unreadable: {e}"));
            return;
        }
    };
    let (mut missing, mut wrong_content, mut wrong_flag, mut unreadable) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for p in a.iter() {
        let Ok(p) = p else {
            unreadable += 1;
            continue;
        };
        match dev.binaries(&p) {
            Err(_) => unreadable += 1,
            Ok(None) => missing.push(p.key()),
            Ok(Some(set)) => {
                if set.is_empty() == d.captures_binaries() {
                    wrong_content.push(p.key());
                }
                if (set.flags() & BINARY_SET_LIBRARY != 0) != d.libraries.contains(&p.key()) {
                    wrong_flag.push(p.key());
                }
            }
        }
    }
    let first = |v: &[PipelineKey]| v.first().map(|k| format!("{:032x}", k.0)).unwrap_or_default();
    if unreadable > 0 {
        violations.push(format!("{what}: {unreadable} pipelines or binary sets unreadable"));
    }
    if !missing.is_empty() {
        violations.push(format!(
            "{what}: {} pipelines have no binary set for the device (first {})",
            missing.len(),
            first(&missing)
        ));
    }
    if !wrong_content.is_empty() {
        violations.push(format!(
            "{what}: {} binary sets are {} although the device {} (first {})",
            wrong_content.len(),
            if d.captures_binaries() { "empty" } else { "non-empty" },
            if d.captures_binaries() { "captures pipeline binaries" } else { "keeps cache data" },
            first(&wrong_content)
        ));
    }
    if !wrong_flag.is_empty() {
        violations.push(format!(
            "{what}: {} binary sets have the LIBRARY flag wrong for their pipeline (first {})",
            wrong_flag.len(),
            first(&wrong_flag)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use granary::archive::{BinarySet, DeviceBinaries, DeviceBinary, DeviceCache};
    use granary::backend::BackendReport;
    use granary::descriptor::Blob;
    use granary::descriptor::PipelineLayout;
    use granary::frontend::StageFunction;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// The checks can fail: a missing pipeline, an unreadable file and a differing final
    /// archive are each reported.
    #[test]
    fn checks_report_violations() {
        let dir = tempfile::tempdir().unwrap();
        let empty = encode(&[], &portable_meta());
        let path = dir.path().join("a.granary");
        std::fs::write(&path, &empty).unwrap();
        let mut v = Vec::new();
        assert!(check_write(&path, &[], &mut v) && v.is_empty());
        assert!(!check_write(&path, &[PipelineKey(7)], &mut v));
        assert!(v[0].contains("1 pipelines whose compile returned before the write began are missing"), "{v:?}");
        std::fs::write(&path, b"junk").unwrap();
        assert!(!check_write(&path, &[], &mut v));
        assert!(v[1].contains("does not verify"));
        let w = Workload {
            pipelines: Vec::new(),
            reference: empty.clone(),
            reference_stripped: empty.clone(),
            unique_functions: 0,
            dir: dir.path().into(),
            backend: None,
            device: None,
            rejected: Rejected::default(),
        };
        check_final(&w, &empty, "m", &mut v);
        assert_eq!(v.len(), 2);
        check_final(&w, b"other", "m", &mut v);
        assert!(v[2].contains("differs from the single-thread reference"));
    }

    /// A stand-in for a driver: every compile returns a binary set for one device. With
    /// `binaries`, the set holds one binary whose bytes differ on every compile (as NVIDIA's
    /// do); without, the set is empty and the device has a constant cache blob (lavapipe).
    struct FakeDevice {
        identity: Arc<DeviceIdentity>,
        binaries: bool,
        created: AtomicU64,
        libraries: AtomicU64,
    }

    impl FakeDevice {
        fn new(binaries: bool) -> Arc<Self> {
            Arc::new(FakeDevice {
                identity: Arc::new(DeviceIdentity {
                    vendor_id: 0x10de,
                    device_id: 1,
                    driver_id: 4,
                    driver_version: 1,
                    api_version: 1,
                    features: Default::default(),
                    pipeline_cache_uuid: [7; 16],
                    binary_global_key: if binaries { vec![1, 2, 3] } else { Vec::new() },
                    device_name: "fake".into(),
                    driver_name: "fake".into(),
                    driver_info: String::new(),
                }),
                binaries,
                created: AtomicU64::new(0),
                libraries: AtomicU64::new(0),
            })
        }
    }

    impl Backend for FakeDevice {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn compile(
            &self,
            desc: &PipelineDescriptor,
            _stages: &[Arc<StageFunction>],
            _layout: &PipelineLayout,
        ) -> Result<Option<DeviceBinaries>, String> {
            let library = desc.needs_libraries();
            let n = if library { &self.libraries } else { &self.created }.fetch_add(1, Relaxed);
            let binaries = if self.binaries {
                vec![DeviceBinary { key: vec![9; 20], data: Blob::new(n.to_le_bytes().to_vec()) }]
            } else {
                Vec::new()
            };
            let set =
                BinarySet { flags: if library { BINARY_SET_LIBRARY } else { 0 }, pipeline_key: Vec::new(), binaries };
            Ok(Some(DeviceBinaries { device: self.identity.clone(), set: Arc::new(set) }))
        }
        fn device_caches(&self) -> Result<Vec<DeviceCache>, String> {
            if self.binaries {
                return Ok(Vec::new());
            }
            Ok(vec![DeviceCache { device: self.identity.clone(), data: Blob::new(vec![0x5a; 32]) }])
        }
        fn report(&self) -> Option<BackendReport> {
            Some(BackendReport {
                backend: "fake".into(),
                device: self.identity.describe(),
                captures: if self.binaries { "pipeline-binaries" } else { "cache-data" }.into(),
                pipelines_created: self.created.load(Relaxed),
                libraries_created: self.libraries.load(Relaxed),
                pipelines_shared: 0,
                ..Default::default()
            })
        }
    }

    fn options(mode: Mode, backend: Arc<dyn Backend>) -> StressOptions {
        StressOptions {
            mode,
            threads: 3,
            script: None,
            pipelines: 60,
            seconds: None,
            seed: 3,
            rotate_every: Some(11),
            work_dir: None,
            backend: Some(backend),
        }
    }

    /// Every mode on a device that returns non-reproducible binaries, and on one that keeps
    /// cache data: all invariants hold, the device checks are the ones listed, each pipeline
    /// is created on the device once per iteration.
    #[test]
    fn every_mode_holds_with_a_device_backend() {
        for binaries in [true, false] {
            let dev = FakeDevice::new(binaries);
            let backend: Arc<dyn Backend> = dev.clone();
            for mode in Mode::ALL {
                let r = run(&options(mode, backend.clone())).unwrap();
                assert!(r.violations.is_empty(), "{} binaries={binaries}: {:?}", mode.name(), r.violations);
                assert_eq!(r.backend, "fake");
                assert_eq!(r.driver_creates, r.pipelines as u64);
                assert_eq!(r.captures.as_deref(), Some(if binaries { "pipeline-binaries" } else { "cache-data" }));
                let whole = r.checks.iter().any(|c| c.contains("device section and cache data included"));
                assert_eq!(whole, !binaries, "{:?}", r.checks);
            }
            // The generated workload leaves every colour attachment unspecialized: all libraries.
            assert!(dev.libraries.load(Relaxed) > 0);
        }
    }

    /// A generated workload with every other pipeline's colour attachments specialized
    /// (`rgba16float`, blend off, all channels), so both whole pipelines and libraries occur.
    fn half_specialized(dir: &Path, pipelines: usize) -> PathBuf {
        let gen = SeedScaleOptions { pipelines, vertex_functions: pipelines / 2, max_run: pipelines / 4, seed: 5 };
        let script = seed_scale(&gen, dir).unwrap().script;
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&script).unwrap()).unwrap();
        for (i, p) in v["pipelines"].as_array_mut().unwrap().iter_mut().enumerate() {
            if i % 2 == 0 {
                for c in p["render"]["color_attachments"].as_array_mut().unwrap() {
                    *c = serde_json::json!({"format": "rgba16float", "blend": "off", "write_mask": "rgba"});
                }
            }
        }
        std::fs::write(&script, serde_json::to_vec(&v).unwrap()).unwrap();
        script
    }

    /// With whole pipelines and libraries in one workload, every mode holds on both kinds of
    /// device, and the LIBRARY flag is checked on both sides.
    #[test]
    fn library_flag_holds_for_whole_pipelines_and_libraries() {
        let dir = tempfile::tempdir().unwrap();
        let script = half_specialized(dir.path(), 40);
        for binaries in [true, false] {
            let dev = FakeDevice::new(binaries);
            for mode in Mode::ALL {
                let mut o = options(mode, dev.clone());
                o.script = Some(script.clone());
                let r = run(&o).unwrap();
                assert!(r.violations.is_empty(), "{} binaries={binaries}: {:?}", mode.name(), r.violations);
                assert_eq!(r.pipelines, 40);
            }
            let (whole, libs) = (dev.created.load(Relaxed), dev.libraries.load(Relaxed));
            assert!(whole > 0 && libs > 0, "{whole} whole pipelines, {libs} libraries");
        }
        // A whole pipeline flagged as a library is caught.
        let dev = FakeDevice::new(true);
        let mut o = options(Mode::SharedVertex, dev);
        o.script = Some(script);
        let w = load(&o, dir.path()).unwrap();
        let reference = Archive::from_bytes(w.reference.clone()).unwrap();
        let mut e = reference.entries().unwrap();
        let i = e.iter().position(|x| !w.device.as_ref().unwrap().libraries.contains(&x.entry.key)).unwrap();
        let set = &mut e[i].binaries[0].set;
        assert_eq!(set.flags & BINARY_SET_LIBRARY, 0);
        *set = Arc::new(BinarySet {
            flags: BINARY_SET_LIBRARY,
            pipeline_key: set.pipeline_key.clone(),
            binaries: set.binaries.clone(),
        });
        let mut v = Vec::new();
        check_final(&w, &encode(&e, &portable_meta()), "m", &mut v);
        assert!(v.len() == 1 && v[0].contains("1 binary sets have the LIBRARY flag wrong"), "{v:?}");
    }

    /// The final-archive device checks fail where they should: a pipeline without a binary
    /// set, a wrong LIBRARY flag, empty binaries on a binary-capturing device, a missing
    /// device section, and differing front-end contents are each reported.
    #[test]
    fn device_checks_report_violations() {
        let dir = tempfile::tempdir().unwrap();
        let dev = FakeDevice::new(true);
        let backend: Arc<dyn Backend> = dev.clone();
        let mut opts = options(Mode::SharedVertex, backend);
        opts.work_dir = Some(dir.path().into());
        let w = load(&opts, dir.path()).unwrap();
        let d = w.device.as_ref().unwrap();
        assert!(!d.libraries.is_empty());
        let reference = Archive::from_bytes(w.reference.clone()).unwrap();
        let entries = reference.entries().unwrap();
        let check = |entries: &[WriteEntry]| {
            let mut v = Vec::new();
            check_final(&w, &encode(entries, &portable_meta()), "m", &mut v);
            v
        };
        assert!(check(&entries).is_empty(), "{:?}", check(&entries));
        // One pipeline lacks its set.
        let mut e = entries.clone();
        e[0].binaries.clear();
        let v = check(&e);
        assert!(v.len() == 1 && v[0].contains("1 pipelines have no binary set for the device"), "{v:?}");
        // A LIBRARY flag flipped.
        let mut e = entries.clone();
        let set = &mut e[1].binaries[0].set;
        *set = Arc::new(BinarySet {
            flags: set.flags ^ BINARY_SET_LIBRARY,
            pipeline_key: set.pipeline_key.clone(),
            binaries: set.binaries.clone(),
        });
        let v = check(&e);
        assert!(v.len() == 1 && v[0].contains("1 binary sets have the LIBRARY flag wrong"), "{v:?}");
        // Empty binaries on a device that captures them.
        let mut e = entries.clone();
        let set = &mut e[2].binaries[0].set;
        *set = Arc::new(BinarySet { flags: set.flags, pipeline_key: Vec::new(), binaries: Vec::new() });
        let v = check(&e);
        assert!(v.len() == 1 && v[0].contains("1 binary sets are empty although the device captures"), "{v:?}");
        // No device at all.
        let mut e = entries.clone();
        e.iter_mut().for_each(|x| x.binaries.clear());
        let v = check(&e);
        assert!(v.iter().any(|x| x.contains("0 device sections, expected 1")), "{v:?}");
        // A pipeline missing: the stripped comparison fails.
        let v = check(&entries[1..]);
        assert!(v.len() == 1 && v[0].contains("without device data differs"), "{v:?}");

        // Cache-data device: a different cache blob breaks whole-archive identity.
        let dev = FakeDevice::new(false);
        let mut opts = options(Mode::SharedVertex, dev);
        opts.work_dir = Some(dir.path().into());
        let w = load(&opts, dir.path()).unwrap();
        let reference = Archive::from_bytes(w.reference.clone()).unwrap();
        let mut meta = reference.meta().unwrap();
        assert_eq!(meta.device_caches.len(), 1);
        let mut v = Vec::new();
        check_final(&w, &encode(&reference.entries().unwrap(), &meta), "m", &mut v);
        assert!(v.is_empty(), "{v:?}");
        meta.device_caches[0].data = Blob::new(vec![1; 32]);
        check_final(&w, &encode(&reference.entries().unwrap(), &meta), "m", &mut v);
        assert!(v.len() == 1 && v[0].contains("differs from the single-thread reference"), "{v:?}");
        // ... and a non-empty set on a cache-data device is reported.
        let mut e = reference.entries().unwrap();
        let set = &mut e[0].binaries[0].set;
        *set = Arc::new(BinarySet {
            flags: set.flags,
            pipeline_key: set.pipeline_key.clone(),
            binaries: vec![DeviceBinary { key: vec![1], data: Blob::new(vec![2]) }],
        });
        let mut v = Vec::new();
        check_final(&w, &encode(&e, &reference.meta().unwrap()), "m", &mut v);
        assert!(
            v.iter().any(|x| x.contains("1 binary sets are non-empty although the device keeps cache data")),
            "{v:?}"
        );
    }
}
