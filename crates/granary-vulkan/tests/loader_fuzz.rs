//! The run-time loader against damaged and crafted device sections, on a real driver.
//!
//! A device archive of a few example pipelines is harvested on the test's device, then its
//! device data is mutated: random bit flips in the device, device-pipeline and binary tables
//! and in the identity and pipeline-cache blobs, and crafted archives whose checksums are
//! right but whose identity, enabled features, binary keys or cache headers lie. For every
//! mutant the loader must not panic, must refuse it (at open, at loader creation or per
//! pipeline) or create exactly the pipelines the intact archive creates, and every byte slice
//! handed to a driver entry point that takes data (`vkCreatePipelineBinariesKHR`,
//! `vkCreatePipelineCache`, `vkCreateShaderModule`) must be bytes of the intact archive that
//! passed their checks — observed through the `fault` feature's probe
//! (`granary_archive::vulkan::probe`), a counting shim in front of those calls.
//!
//! Without a Vulkan driver the test prints one `SKIPPED` line, unless
//! `GRANARY_REQUIRE_VULKAN=1` (set by `.ci/run`) makes that a failure.

mod support;

use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::TargetSet;
use granary::script::Script;
use granary_archive::vulkan::probe::{self, Data};
use granary_archive::vulkan::{select_device, Driver, Gpu, LoaderOptions, OpenOptions, PipelineLoader};
use granary_archive::{Archive, BinarySet, DeviceBinaries, DeviceBinary, DeviceCache, DeviceIdentity};
use granary_vulkan::VulkanBackend;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Pipelines of the example to harvest (a few, so that every mutant can be loaded whole).
const PIPELINES: usize = 6;
/// Random single-bit mutants.
const RANDOM_MUTANTS: usize = 48;

fn rng(state: &mut u64) -> u64 {
    // xorshift64*: deterministic, so a failure names a reproducible mutant.
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// A device archive of the first `PIPELINES` example pipelines, harvested on the device.
fn harvest(dir: &Path, backend: Arc<VulkanBackend>) -> Vec<u8> {
    let mut script =
        Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/pipelines.json"))
            .expect("example script");
    // Some with unspecialized colour output (libraries where the device has them), some not.
    script.pipelines.sort_by_key(|p| p.descriptor.as_ref().ok().map(|d| d.label().unwrap_or("").to_string()));
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let options = CompilerOptions { targets: TargetSet::SPIRV, capture: Some(capture.clone()), ..Default::default() };
    let compiler = Compiler::with_backend(options, backend);
    for p in script.pipelines.into_iter().step_by(37).take(PIPELINES) {
        compiler.compile(&p.descriptor.expect("valid")).expect("compiles on the device");
    }
    let path = dir.join("device.granary");
    capture.write_archive(&path).expect("write");
    std::fs::read(&path).expect("read back")
}

/// The byte ranges of the device data: the three device tables and every identity and cache
/// blob (found as sub-slices of the archive's own buffer).
fn device_ranges(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap());
    let mut out = Vec::new();
    for row in 0..10 {
        let at = 64 + row * 32;
        if (8..=10).contains(&u32_at(at)) {
            let (off, len) = (u64_at(at + 8), u64_at(at + 16));
            if len > 0 {
                out.push(off..off + len);
            }
        }
    }
    let copy = bytes.to_vec();
    let base = copy.as_ptr() as usize;
    // The archive owns `copy`'s heap buffer: its slices are at the same offsets as in `bytes`.
    let a = Archive::from_bytes(copy).expect("intact archive");
    for d in a.devices().expect("devices") {
        for c in d.caches().expect("caches") {
            let start = c.as_ptr() as usize - base;
            out.push(start..start + c.len());
        }
        // The driver binaries (on a device with VK_KHR_pipeline_binary).
        for j in 0..d.pipeline_count() {
            let (_, set) = d.pipeline_binaries(j).expect("set");
            for b in set.iter() {
                let b = b.expect("binary");
                let start = b.data.as_ptr() as usize - base;
                out.push(start..start + b.data.len());
            }
        }
    }
    out
}

/// Re-encodes `bytes` with `f` applied to its entries' device binaries and meta: a crafted
/// archive whose checksums are all right.
fn craft(
    bytes: &[u8],
    f: impl Fn(&mut Vec<granary_archive::WriteEntry>, &mut granary_archive::ArchiveMeta),
) -> Vec<u8> {
    let a = Archive::from_bytes(bytes.to_vec()).expect("intact");
    let mut entries = a.entries().expect("entries");
    let mut meta = a.meta().expect("meta");
    f(&mut entries, &mut meta);
    granary::archive::encode(&entries, &meta)
}

/// What loading every pipeline of `bytes` gives: `None` when the archive or the loader is
/// refused, else the labels created.
fn load_all(bytes: Vec<u8>, gpu: &Arc<Gpu>) -> Option<BTreeSet<String>> {
    let archive = Arc::new(Archive::from_bytes(bytes).ok()?);
    let loader = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default()).ok()?;
    let labels: HashMap<usize, String> = archive.labels().ok()?.into_iter().map(|(l, i)| (i, l.to_string())).collect();
    let mut made = BTreeSet::new();
    for i in 0..archive.len() {
        let Ok(p) = archive.pipeline(i) else { continue };
        if loader.load(&p).is_ok() {
            made.insert(labels.get(&i).cloned().unwrap_or_else(|| format!("#{i}")));
        }
    }
    Some(made)
}

#[test]
fn damaged_or_crafted_device_sections_are_refused_or_load_exactly_the_intact_pipelines() {
    let Some(backend) = support::backend().map(Arc::new) else { return };
    let dir = tempfile::tempdir().unwrap();
    let intact = harvest(dir.path(), backend.clone());
    let harvest_log = backend.validation().cloned();
    drop(backend);

    // Every blob of the intact archive, by content: the only bytes allowed to reach a driver.
    let allowed: HashSet<u128> = {
        let a = Archive::from_bytes(intact.clone()).expect("intact archive");
        let hash = |b: &[u8]| granary_archive::content_hash(b).0;
        let mut h = HashSet::new();
        for i in 0..a.len() {
            let p = a.pipeline(i).expect("intact pipeline");
            for s in p.stages().expect("stages") {
                h.extend(s.output(granary_archive::Target::Spirv).expect("output").map(hash));
            }
            for d in a.devices().expect("devices") {
                if let Some(set) = d.binaries(&p).expect("set") {
                    h.extend(set.iter().map(|b| hash(b.expect("binary").data)));
                }
            }
        }
        for d in a.devices().expect("devices") {
            h.extend(d.caches().expect("caches").into_iter().map(hash));
        }
        h
    };
    let seen: Arc<Mutex<Vec<(Data, u128)>>> = Arc::default();
    let sink = seen.clone();
    probe::set(Box::new(move |kind, bytes| {
        sink.lock().unwrap().push((kind, granary_archive::content_hash(bytes).0));
    }));

    let driver =
        Driver::load_with(granary_archive::vulkan::validation::DriverOptions { validation: support::requested() })
            .expect("driver");
    let log = driver.validation().cloned();
    let info = select_device(driver.physical_devices().expect("devices"), None).expect("device");
    let gpu = Gpu::open(driver, info, OpenOptions::default()).expect("device");
    let reference = load_all(intact.clone(), &gpu).expect("the intact archive loads");
    assert_eq!(reference.len(), PIPELINES, "every harvested pipeline loads: {reference:?}");
    let binaries = seen.lock().unwrap().iter().filter(|(k, _)| *k == Data::Binary).count();
    // On a device with VK_KHR_pipeline_binary the intact archive loads from its binaries, so
    // the mutants below exercise the binary path; lavapipe has none.
    assert_eq!(binaries > 0, gpu.captures_binaries(), "{binaries} binaries handed to the driver");
    eprintln!("the intact archive: {} pipelines, {binaries} binaries handed to the driver", reference.len());

    // (what, bytes, crafted): a crafted mutant's checksums are right, so nothing may be lost:
    // the loader's own checks send it to the compile path and every pipeline is created.
    let mut mutants: Vec<(String, Vec<u8>, bool)> = Vec::new();
    let ranges = device_ranges(&intact);
    assert!(!ranges.is_empty());
    let total: usize = ranges.iter().map(|r| r.len()).sum();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for n in 0..RANDOM_MUTANTS {
        let mut pick = (rng(&mut state) as usize) % total;
        let at = ranges
            .iter()
            .find_map(|r| if pick < r.len() { Some(r.start + pick) } else { (pick -= r.len(), None).1 })
            .expect("in a range");
        let bit = (rng(&mut state) % 8) as u8;
        let mut m = intact.clone();
        m[at] ^= 1 << bit;
        mutants.push((format!("random #{n}: byte {at} bit {bit}"), m, false));
    }
    // Crafted, checksums right: the loader's own checks must catch each lie.
    let identity_edit = |f: fn(&mut DeviceIdentity)| {
        move |entries: &mut Vec<granary_archive::WriteEntry>, meta: &mut granary_archive::ArchiveMeta| {
            let fix = |d: &Arc<DeviceIdentity>| {
                let mut i = (**d).clone();
                f(&mut i);
                Arc::new(i)
            };
            for e in entries.iter_mut() {
                for b in e.binaries.iter_mut() {
                    b.device = fix(&b.device);
                }
            }
            for c in meta.device_caches.iter_mut() {
                c.device = fix(&c.device);
            }
        }
    };
    // Every device cache's data, edited by `f`.
    let cache_edit = |f: fn(&mut Vec<u8>)| {
        move |_: &mut Vec<granary_archive::WriteEntry>, meta: &mut granary_archive::ArchiveMeta| {
            for c in meta.device_caches.iter_mut() {
                let mut b = c.data.bytes().to_vec();
                f(&mut b);
                *c = DeviceCache { device: c.device.clone(), data: granary_archive::Blob::new(b) };
            }
        }
    };
    mutants.push((
        "identity: driver_version + 1".into(),
        craft(&intact, identity_edit(|i| i.driver_version += 1)),
        true,
    ));
    mutants.push((
        "identity: other enabled features".into(),
        craft(&intact, identity_edit(|i| i.features = granary_archive::DeviceFeatures::NONE)),
        true,
    ));
    mutants.push((
        "identity: a global key the device does not have".into(),
        craft(&intact, identity_edit(|i| i.binary_global_key = vec![0x42; 16])),
        true,
    ));
    mutants.push((
        "cache: another vendor in the header".into(),
        craft(
            &intact,
            cache_edit(|b| {
                if b.len() >= 12 {
                    b[8] ^= 0x55;
                }
            }),
        ),
        true,
    ));
    mutants.push((
        "cache: header size past the data".into(),
        craft(
            &intact,
            cache_edit(|b| {
                if b.len() >= 4 {
                    b[..4].copy_from_slice(&u32::MAX.to_le_bytes());
                }
            }),
        ),
        true,
    ));
    let forge = |entries: &mut Vec<granary_archive::WriteEntry>| {
        for e in entries.iter_mut() {
            for b in e.binaries.iter_mut() {
                let forged = BinarySet {
                    flags: b.set.flags,
                    pipeline_key: vec![7; 20],
                    binaries: vec![DeviceBinary { key: vec![1; 20], data: granary_archive::Blob::new(vec![0xcc; 64]) }],
                };
                *b = DeviceBinaries { device: b.device.clone(), set: Arc::new(forged) };
            }
        }
    };
    mutants.push((
        // The section found only by the keyless identity (a harvest without binaries on this
        // device) may seed the cache, never hand over binaries.
        "binaries: forged binaries in a section without a global key".into(),
        craft(&intact, |entries, meta| {
            forge(entries);
            identity_edit(|i| i.binary_global_key = Vec::new())(entries, meta);
        }),
        true,
    ));
    mutants.push((
        "binaries: a forged set with a forged pipeline key".into(),
        craft(&intact, |entries, _| forge(entries)),
        true,
    ));

    let mut refused = 0;
    let total = mutants.len();
    for (what, bytes, crafted) in mutants {
        let before = seen.lock().unwrap().len();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load_all(bytes, &gpu)))
            .unwrap_or_else(|_| panic!("{what}: the loader panicked"));
        match outcome {
            None if crafted => panic!("{what}: a crafted archive with valid checksums was refused whole"),
            None => refused += 1,
            Some(made) if crafted => assert_eq!(made, reference, "{what}"),
            Some(made) => assert!(made.is_subset(&reference), "{what}: created {made:?}, intact {reference:?}"),
        }
        for (kind, hash) in &seen.lock().unwrap()[before..] {
            assert!(allowed.contains(hash), "{what}: {kind:?} bytes not in the intact archive reached the driver");
        }
    }
    probe::clear();
    let observed = seen.lock().unwrap().iter().filter(|(k, _)| *k == Data::Spirv).count();
    assert!(observed > 0, "the probe saw the loader's shader modules");
    eprintln!("{refused} of {} mutants refused whole; the rest loaded a subset of the intact pipelines", total);
    drop(gpu);
    support::assert_clean(harvest_log);
    support::assert_clean(log);
}
