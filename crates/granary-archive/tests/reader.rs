//! The reader on damaged and hostile input, and the writer's, merge's and salvage's exactness,
//! on archives built with this crate's own writer (no compiler involved: the reader does not
//! look inside stage outputs, it only checks them against their hashes).
//!
//! Every truncation and every bit flip is refused; hostile headers give precise errors;
//! reserved record bytes and an invalid layout blob are refused; random bytes, random edits
//! and hostile header words (with a fixed-up header checksum) never panic any read path and
//! never verify (a seeded generator, `PROPTEST_CASES` cases per property, 1,500 by default);
//! the encoding does not depend on entry order or duplicates; merge refuses one key with
//! different bytes and one label on two pipelines; salvage of a cut file recovers exactly the
//! pipelines before the cut.

mod common;

use granary_archive::{
    checksum64, encode, merge, salvage, write_entries, Archive, ArchiveError, ArchiveMeta, BinarySet, BindingKind,
    Blob, DeviceBinaries, DeviceBinary, DeviceCache, DeviceIdentity, LayoutBinding, PipelineEntry, PipelineKey,
    PipelineKind, PipelineLayout, ShaderStage, StageEntry, StageKey, StageMask, Target, TargetOutputs, WriteEntry,
};
use granary_archive::{MslClass, SlotAssignment, StageBindingMap};
use granary_archive::{Section, FIXED_HEADER, HEADER_LEN, SECTION_ROW};
use std::sync::{Arc, OnceLock};

fn meta() -> ArchiveMeta {
    ArchiveMeta::new("reader test writer options")
}

fn layout() -> PipelineLayout {
    PipelineLayout {
        bindings: vec![
            LayoutBinding {
                group: 0,
                binding: 0,
                kind: BindingKind::UniformBuffer,
                count: 0,
                visibility: StageMask(3),
            },
            LayoutBinding { group: 1, binding: 2, kind: BindingKind::Sampler, count: 4, visibility: StageMask(2) },
        ],
        immediates: None,
        stages: vec![StageBindingMap {
            stage: ShaderStage::Vertex,
            slots: vec![SlotAssignment {
                group: 0,
                binding: 0,
                msl_class: MslClass::Buffer,
                msl_index: 0,
                hlsl_class: b'b',
                hlsl_register: 0,
                hlsl_space: 0,
                glsl_binding: Some(0),
            }],
            msl_immediates_buffer: None,
            msl_sizes_buffer: None,
            hlsl_immediates_space: None,
        }],
    }
}

fn stage(key: u128, stage: ShaderStage, entry_point: &str) -> StageEntry {
    common::stage_with_outputs(key, stage, entry_point, 64 + key as usize % 40)
}

/// The shape of a small harvest: 3 runs of 8 render pipelines, each run sharing its vertex
/// stage, every pipeline with a fragment stage of its own, SPIR-V and GLSL outputs, one
/// shared render state and one shared layout blob, labels `v{run}/p{i}`.
fn harvest_like() -> Vec<WriteEntry> {
    let state = common::unspecialized_render_state();
    let state = Blob::new(state.encode().expect("a valid render state"));
    let layout = Blob::new(layout().encode());
    (0..3u128)
        .flat_map(|run| (0..8u128).map(move |i| (run, i)))
        .map(|(run, i)| WriteEntry {
            entry: Arc::new(PipelineEntry {
                key: PipelineKey(0x1000 + run * 0x100 + i),
                kind: PipelineKind::Render,
                stages: vec![
                    stage(0x10 + run, ShaderStage::Vertex, "vs"),
                    stage(0x200 + run * 8 + i, ShaderStage::Fragment, "fs"),
                ],
                layout: Some(layout.clone()),
                state: Some(state.clone()),
            }),
            labels: vec![format!("v{run}/p{i}")].into(),
            binaries: Vec::new(),
        })
        .collect()
}

fn keys(entries: &[WriteEntry]) -> Vec<PipelineKey> {
    entries.iter().map(|w| w.entry.key).collect()
}

fn small_archive() -> (Vec<u8>, Vec<PipelineKey>) {
    let entries = harvest_like();
    (encode(&entries, &meta()), keys(&entries))
}

/// The same pipelines with device sections too: driver binaries on one device (a shared
/// "dictionary" blob in every set), pipeline-cache data on another.
fn with_devices() -> &'static (Vec<u8>, Vec<PipelineKey>) {
    static A: OnceLock<(Vec<u8>, Vec<PipelineKey>)> = OnceLock::new();
    A.get_or_init(|| {
        let device = |name: &str, key: Vec<u8>| {
            Arc::new(DeviceIdentity {
                vendor_id: 0x10de,
                device_id: 7,
                driver_id: 4,
                driver_version: 1,
                api_version: 2,
                features: Default::default(),
                pipeline_cache_uuid: [3; 16],
                binary_global_key: key,
                device_name: name.into(),
                driver_name: "drv".into(),
                driver_info: "1.0".into(),
            })
        };
        let (gpu, cpu) = (device("gpu", vec![5; 8]), device("cpu", Vec::new()));
        let dictionary = DeviceBinary { key: vec![0xd1; 32], data: Blob::new(vec![0xd1; 96]) };
        let mut entries = harvest_like();
        entries.truncate(8);
        for (i, w) in entries.iter_mut().enumerate() {
            let own = DeviceBinary { key: vec![i as u8], data: Blob::new(vec![i as u8; 40]) };
            let set =
                BinarySet { flags: (i % 2) as u32, pipeline_key: Vec::new(), binaries: vec![own, dictionary.clone()] };
            w.binaries = vec![
                DeviceBinaries { device: gpu.clone(), set: Arc::new(set) },
                DeviceBinaries {
                    device: cpu.clone(),
                    set: Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![] }),
                },
            ];
        }
        let mut m = meta();
        m.device_caches = vec![DeviceCache { device: cpu, data: Blob::new(vec![9; 64]) }];
        (encode(&entries, &m), keys(&entries))
    })
}

/// Synthetic one-stage entry with SPIR-V output `byte` repeated.
fn synthetic(key: u128, byte: u8, labels: &[&str]) -> WriteEntry {
    let mut outputs = TargetOutputs::default();
    outputs.0[0] = Some(Blob::new(vec![byte; 16]));
    let entry = Arc::new(PipelineEntry {
        key: PipelineKey(key),
        kind: PipelineKind::Render,
        stages: vec![StageEntry {
            key: StageKey(key),
            stage: ShaderStage::Vertex,
            entry_point: "main".into(),
            outputs,
            specialization: None,
        }],
        layout: None,
        state: None,
    });
    WriteEntry { entry, labels: labels.iter().map(|l| l.to_string()).collect::<Vec<_>>().into(), binaries: Vec::new() }
}

fn open_synthetic(entries: &[WriteEntry]) -> Archive {
    Archive::from_bytes(encode(entries, &meta())).unwrap()
}

#[test]
fn bytes_do_not_depend_on_entry_order_or_duplicates() {
    let entries = harvest_like();
    let a = encode(&entries, &meta());
    let mut shuffled: Vec<WriteEntry> = entries.iter().rev().cloned().collect();
    shuffled.extend(entries.iter().take(5).cloned());
    shuffled.rotate_left(7);
    assert_eq!(a, encode(&shuffled, &meta()));
    // Shared stages, states and layouts are stored once: the archive reads back whole.
    let ar = Archive::from_bytes(a).unwrap();
    ar.verify().unwrap();
    assert_eq!(ar.len(), entries.len());
    assert_eq!(ar.entries().unwrap().iter().map(|w| w.entry.clone()).collect::<Vec<_>>(), {
        let mut v: Vec<_> = entries.iter().map(|w| w.entry.clone()).collect();
        v.sort_by_key(|e| e.key.0);
        v
    });
}

#[test]
fn merge_refuses_a_key_with_different_bytes_in_either_order() {
    let a = || open_synthetic(&[synthetic(1, 7, &["x"]), synthetic(2, 8, &["y"])]);
    let b = || open_synthetic(&[synthetic(2, 9, &["y"])]);
    for inputs in [[a(), b()], [b(), a()]] {
        match merge(&inputs) {
            Err(ArchiveError::Conflict(m)) => {
                assert!(m.contains(&format!("{:032x}", 2u128)) && m.contains("different contents"), "{m}")
            }
            other => panic!("expected a conflict, got {:?}", other.map(|(e, _)| e.len())),
        }
    }
}

#[test]
fn merge_refuses_a_label_naming_two_pipelines_and_verify_rejects_it() {
    let a = open_synthetic(&[synthetic(1, 7, &["shared"])]);
    let b = open_synthetic(&[synthetic(2, 8, &["shared"])]);
    match merge(&[a, b]) {
        Err(ArchiveError::Conflict(m)) => assert!(m.contains("label 'shared' names two different pipelines"), "{m}"),
        other => panic!("expected a conflict, got {:?}", other.map(|(e, _)| e.len())),
    }
    // The writer refuses it too, and an archive that has it anyway (encoded in memory,
    // bypassing that check) fails verification.
    let both = [synthetic(1, 7, &["shared"]), synthetic(2, 8, &["shared"])];
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(write_entries(&dir.path().join("x.granary"), &both, &meta()), Err(ArchiveError::Conflict(_))));
    match open_synthetic(&both).verify() {
        Err(ArchiveError::Corrupt { what, .. }) => assert!(what.contains("names two pipelines"), "{what}"),
        other => panic!("verify accepted a label naming two pipelines: {:?}", other.map(|_| ())),
    }
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let (bytes, _) = small_archive();
    Archive::from_bytes(bytes.clone()).unwrap().verify().unwrap();
    for len in 0..bytes.len() {
        let r = Archive::from_bytes(bytes[..len].to_vec()).and_then(|a| a.verify());
        match r {
            Err(ArchiveError::Corrupt { .. }) => {}
            other => panic!("truncation to {len} bytes gave {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn every_bit_flip_is_detected() {
    let (bytes, keys) = small_archive();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..3000 {
        let r = next(&mut rng);
        let pos = (r % bytes.len() as u64) as usize;
        let bit = (r >> 32) % 8;
        let mut damaged = bytes.clone();
        damaged[pos] ^= 1 << bit;
        // Every byte is covered by a checksum or must be zero padding: verify rejects
        // every flip, and never panics.
        let verified = Archive::from_bytes(damaged.clone()).and_then(|a| a.verify());
        assert!(verified.is_err(), "flip of bit {bit} at offset {pos} went unnoticed");
        // Lookups on the damaged file never panic either.
        if let Ok(a) = Archive::from_bytes(damaged) {
            for k in &keys {
                if let Ok(Some(p)) = a.get(*k) {
                    if let Ok(stages) = p.stages() {
                        for s in stages {
                            let _ = s.output(Target::Spirv);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn hostile_headers_give_precise_errors() {
    let (bytes, _) = small_archive();
    let err = |b: Vec<u8>| match Archive::from_bytes(b) {
        Err(e) => e.to_string(),
        Ok(_) => "opened".into(),
    };
    let mut m = bytes.clone();
    m[0] = b'X';
    assert!(err(m).contains("bad magic"));
    let mut v = bytes.clone();
    v[8] = 9;
    assert!(err(v).contains("format version 9"));
    // A huge section length with a fixed-up header checksum: rejected by bounds, not allocated.
    let mut h = bytes.clone();
    let row = FIXED_HEADER + 2 * SECTION_ROW;
    h[row + 16..row + 24].copy_from_slice(&u64::MAX.to_le_bytes());
    let sum = checksum64(&h[..HEADER_LEN - 8]);
    h[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
    let e = err(h);
    assert!(e.contains("runs past the end of the file"), "{e}");
    assert!(e.contains("offset 0x"), "{e}");
}

/// Reserved bytes of a pipeline record must be zero even when the record's own checksum
/// matches (a writer from the future, or a crafted file): lookups refuse it.
#[test]
fn reserved_record_bytes_are_checked_on_lookup() {
    let mut bytes = encode(&[synthetic(9, 1, &["r"])], &meta());
    let row = 64 + 4 * 32; // section-table row of the pipeline table
    let off = u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize;
    bytes[off + 38] = 1;
    let sum = checksum64(&bytes[off..off + 40]);
    bytes[off + 40..off + 48].copy_from_slice(&sum.to_le_bytes());
    let a = Archive::from_bytes(bytes).unwrap();
    match a.get(PipelineKey(9)) {
        Err(ArchiveError::Corrupt { what, offset, .. }) => {
            assert!(what.contains("reserved"), "{what}");
            assert_eq!(offset as usize, off + 36);
        }
        other => panic!("reserved bytes accepted: {:?}", other.map(|p| p.is_some())),
    }
}

/// A layout blob that hashes correctly but is not a valid layout (a writer bug or a crafted
/// file) is refused by `layout()` and by `verify`, with the pipeline record's offset.
#[test]
fn an_invalid_layout_blob_is_refused_by_layout_and_verify() {
    let mut w = synthetic(4, 1, &["l"]);
    let mut e = (*w.entry).clone();
    e.layout = Some(Blob::new(b"GLY1 not a layout".to_vec()));
    w.entry = Arc::new(e);
    let a = Archive::from_bytes(encode(&[w], &meta())).unwrap();
    let p = a.get(PipelineKey(4)).unwrap().unwrap();
    assert!(p.layout_bytes().unwrap().is_some());
    match p.layout() {
        Err(ArchiveError::Corrupt { what, .. }) => assert!(what.contains("resource layout"), "{what}"),
        other => panic!("invalid layout accepted: {:?}", other.map(|l| l.is_some())),
    }
    assert!(a.verify().is_err());
}

/// Salvage of a file cut in the middle of its stage table: the pipelines whose stage records
/// lie before the cut are recovered, byte-exact, the others are reported lost; a cut at the
/// end of the label table loses labels, never a pipeline; garbage is refused.
#[test]
fn salvage_recovers_exactly_what_lies_before_a_cut() {
    let entries = harvest_like();
    let full = encode(&entries, &meta());
    let ar = Archive::from_bytes(full.clone()).unwrap();
    let originals: std::collections::HashMap<u128, &WriteEntry> = entries.iter().map(|w| (w.entry.key.0, w)).collect();
    let row = FIXED_HEADER + SECTION_ROW * (Section::Stages as usize - 1);
    let stages_off = u64::from_le_bytes(full[row + 8..row + 16].try_into().unwrap()) as usize;
    let stages_len = u64::from_le_bytes(full[row + 16..row + 24].try_into().unwrap()) as usize;
    let cut_at = stages_off + stages_len / 2;
    let (recovered, meta, report) = salvage(&full[..cut_at]).unwrap();
    assert_eq!(report.pipeline_records, ar.len(), "the pipeline table lies before the cut");
    assert_eq!(recovered.len(), report.recovered);
    assert!(report.recovered > 0 && report.recovered < ar.len(), "a real, partial recovery: {}", report.recovered);
    assert_eq!(report.recovered + report.lost.len(), report.pipeline_records);
    for w in &recovered {
        assert_eq!(*w.entry, *originals[&w.entry.key.0].entry, "a recovered pipeline is the original one");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recovered.granary");
    write_entries(&path, &recovered, &meta).unwrap();
    let r = Archive::read(&path).unwrap();
    r.verify().unwrap();
    assert_eq!(r.len(), report.recovered);

    // Cutting only the end of the label table loses labels, never a pipeline.
    let (recovered, _, report) = salvage(&full[..full.len() - 100]).unwrap();
    assert_eq!((report.recovered, recovered.len(), report.lost.len()), (ar.len(), ar.len(), 0));
    assert!(report.labels < ar.labels().unwrap().len() && report.labels > 0, "{} labels", report.labels);

    // Garbage is refused with a reason.
    assert!(salvage(b"not an archive at all, not at all, definitely not").is_err());
}

// Fuzzing: a seeded generator instead of a property-testing crate, so the run-time crate's
// tests need nothing but the crate itself.

fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// 1,500 cases per property in CI; `PROPTEST_CASES` sets more for long runs.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500)
}

/// Exercises every read path; returns whether `verify` passed.
fn read_everything(bytes: Vec<u8>, keys: &[PipelineKey]) -> bool {
    let Ok(a) = Archive::from_bytes(bytes.clone()) else {
        let _ = salvage(&bytes);
        return false;
    };
    for k in keys {
        if let Ok(Some(p)) = a.get(*k) {
            if let Ok(stages) = p.stages() {
                for s in stages {
                    for t in Target::ALL {
                        let _ = s.output(t);
                    }
                }
            }
            let _ = p.layout();
            let _ = p.state();
        }
    }
    let _ = a.lookup_label("v0/p1");
    let _ = a.labels();
    for p in a.iter().take(64) {
        let _ = p.map(|p| p.stages());
    }
    let _ = a.entries();
    let _ = a.meta();
    if let Ok(devices) = a.devices() {
        for d in devices {
            let _ = d.caches();
            let _ = a.device_for(d.identity());
            for p in a.iter().take(64).flatten() {
                if let Ok(Some(set)) = d.binaries(&p) {
                    for b in set.iter() {
                        let _ = b.map(|b| b.data.len());
                    }
                }
                let _ = p.device_binaries();
            }
        }
    }
    let _ = salvage(&bytes);
    a.verify().is_ok()
}

#[test]
fn the_fuzzed_archive_is_valid_and_has_device_sections() {
    let (bytes, keys) = with_devices();
    assert!(read_everything(bytes.clone(), keys));
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    assert_eq!(a.devices().unwrap().len(), 2);
    assert_eq!(a.verify().unwrap().device_pipelines, 2 * a.len());
}

#[test]
fn archive_reader_survives_random_bytes() {
    let (valid, keys) = with_devices();
    let mut rng = 0x51f1_5eed_0000_0001u64;
    for case in 0..cases() {
        let len = (next(&mut rng) % 2048) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| next(&mut rng) as u8).collect();
        // Every other case behind a valid fixed header, so the bytes reach the section table.
        if case % 2 == 1 {
            let mut b = valid[..FIXED_HEADER].to_vec();
            b.append(&mut bytes);
            bytes = b;
        }
        assert!(!read_everything(bytes, keys), "case {case}: random bytes verified");
    }
}

#[test]
fn archive_reader_survives_mutations() {
    let (orig, keys) = with_devices();
    let mut rng = 0x51f1_5eed_0000_0002u64;
    for case in 0..cases() {
        let mut bytes = orig.clone();
        for _ in 0..1 + next(&mut rng) % 7 {
            let at = (next(&mut rng) % bytes.len() as u64) as usize;
            bytes[at] = next(&mut rng) as u8;
        }
        if next(&mut rng).is_multiple_of(2) {
            let cut = (next(&mut rng) % bytes.len() as u64) as usize;
            bytes.truncate(cut);
        }
        let changed = &bytes != orig;
        let verified = read_everything(bytes, keys);
        assert!(!(changed && verified), "case {case}: a modified archive verified");
    }
}

#[test]
fn archive_reader_survives_hostile_header_fields() {
    // Overwrite an aligned header word and fix up the header checksum, so the hostile value
    // reaches the bounds checks instead of being caught by the checksum.
    let (orig, keys) = with_devices();
    let mut rng = 0x51f1_5eed_0000_0003u64;
    for case in 0..cases() {
        let field = (next(&mut rng) % 96) as usize;
        let value = match next(&mut rng) % 4 {
            0 => next(&mut rng),
            1 => u64::MAX - next(&mut rng) % 16,
            2 => next(&mut rng) % (2 * orig.len() as u64),
            _ => next(&mut rng) % 256,
        };
        let mut bytes = orig.clone();
        let at = (field * 4).min(HEADER_LEN - 16);
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        let sum = checksum64(&bytes[..HEADER_LEN - 8]);
        bytes[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
        let changed = &bytes != orig;
        let verified = read_everything(bytes, keys);
        assert!(!(changed && verified), "case {case}: header word {field} = {value:#x} verified");
    }
}
