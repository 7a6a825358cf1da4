//! Tests of the checks and of every mode with a device backend (a fake device).

use super::check::*;
use super::reference::*;
use super::*;
use crate::workload::{seed_scale, SeedScaleOptions};
use granary::archive::{encode, portable_meta, Archive, DeviceIdentity, WriteEntry, BINARY_SET_LIBRARY};
use granary::archive::{BinarySet, DeviceBinaries, DeviceBinary, DeviceCache};
use granary::backend::BackendReport;
use granary::descriptor::Blob;
use granary::descriptor::PipelineLayout;
use granary::descriptor::{PipelineDescriptor, PipelineKey};
use granary::frontend::StageFunction;
use std::path::{Path, PathBuf};
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
        let set = BinarySet { flags: if library { BINARY_SET_LIBRARY } else { 0 }, pipeline_key: Vec::new(), binaries };
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
    assert!(v.iter().any(|x| x.contains("1 binary sets are non-empty although the device keeps cache data")), "{v:?}");
}
