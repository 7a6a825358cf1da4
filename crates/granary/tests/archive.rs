//! Archive format: round trip, determinism, lookup, merge, and damaged input.

mod common;

use granary::archive::LookupDescriptor;
use granary::archive::{self, Archive, ArchiveError, ArchiveMeta, WriteEntry};
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{PipelineDescriptor, Target, TargetSet};
use std::sync::Arc;

fn compile_all(pipelines: &[PipelineDescriptor], targets: TargetSet) -> (Arc<Capture>, Compiler) {
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::new(CompilerOptions { targets, capture: Some(capture.clone()), ..Default::default() });
    for p in pipelines {
        compiler.compile(p).expect("compile");
    }
    (capture, compiler)
}

fn small_archive() -> (Vec<u8>, Vec<PipelineDescriptor>) {
    let fx = common::fixture();
    let pipelines = fx.runs(2, 6, 3);
    let (capture, _) = compile_all(&pipelines, TargetSet::of(&[Target::Spirv, Target::Glsl]));
    (archive::encode(&capture.snapshot().entries, &granary::archive::portable_meta()), pipelines)
}

#[test]
fn lookup_by_key_descriptor_and_label_returns_fresh_compile_outputs() {
    let fx = common::fixture();
    let pipelines = fx.runs(3, 20, 4);
    let targets = TargetSet::of(&Target::ALL);
    let (capture, _) = compile_all(&pipelines, targets);
    let dir = common::tempdir();
    let path = dir.path().join("a.granary");
    capture.write_archive(&path).unwrap();
    let ar = Archive::open(&path).unwrap();
    ar.verify().unwrap();
    assert_eq!(ar.len(), pipelines.len());
    assert_eq!(ar.targets(), targets);

    let fresh = Compiler::new(CompilerOptions { targets, ..Default::default() });
    for p in &pipelines {
        let by_desc = ar.lookup(p).unwrap().expect("found by descriptor");
        let by_label = ar.lookup_label(p.label().unwrap()).unwrap().expect("found by label");
        assert_eq!(by_desc.key(), by_label.key());
        let entry = fresh.compile(p).unwrap();
        assert_eq!(by_desc.key(), entry.key);
        let stages = by_desc.stages().unwrap();
        assert_eq!(stages.len(), entry.stages.len());
        for (a, e) in stages.iter().zip(&entry.stages) {
            assert_eq!(a.key, e.key);
            assert_eq!(a.entry_point, e.entry_point);
            for t in Target::ALL {
                assert_eq!(
                    a.output(t).unwrap(),
                    e.outputs.get(t).map(|b| b.bytes()),
                    "{t} output of {}",
                    a.entry_point
                );
            }
        }
    }
    assert!(ar.lookup_label("no such label").unwrap().is_none());
}

#[test]
fn bytes_do_not_depend_on_entry_order_or_duplicates() {
    let fx = common::fixture();
    let pipelines = fx.runs(2, 10, 3);
    let (capture, _) = compile_all(&pipelines, TargetSet::SPIRV);
    let entries = capture.snapshot().entries;
    let meta = granary::archive::portable_meta();
    let a = archive::encode(&entries, &meta);
    let mut shuffled: Vec<WriteEntry> = entries.iter().rev().cloned().collect();
    shuffled.extend(entries.iter().take(5).cloned());
    shuffled.rotate_left(7);
    assert_eq!(a, archive::encode(&shuffled, &meta));
}

#[test]
fn merge_is_order_independent_and_stores_duplicates_once() {
    let fx = common::fixture();
    let all = fx.runs(3, 10, 4);
    let dir = common::tempdir();
    let write = |ps: &[PipelineDescriptor], name: &str| {
        let (c, _) = compile_all(ps, TargetSet::SPIRV);
        let p = dir.path().join(name);
        c.write_archive(&p).unwrap();
        Archive::open(&p).unwrap()
    };
    let a = write(&all[..20], "a.granary");
    let b = write(&all[10..], "b.granary");
    let whole = write(&all, "whole.granary");
    let (e1, m1) = archive::merge(&[a, b]).unwrap();
    let a = Archive::open(&dir.path().join("a.granary")).unwrap();
    let b = Archive::open(&dir.path().join("b.granary")).unwrap();
    let (e2, m2) = archive::merge(&[b, a]).unwrap();
    let x = archive::encode(&e1, &m1);
    assert_eq!(x, archive::encode(&e2, &m2));
    assert_eq!(x, std::fs::read(dir.path().join("whole.granary")).unwrap());
    assert_eq!(whole.len(), all.len());
}

/// Synthetic one-stage entry with SPIR-V output `byte` repeated.
fn synthetic(key: u128, byte: u8, labels: &[&str]) -> WriteEntry {
    use granary::descriptor::*;
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
        }],
        layout: None,
        state: None,
    });
    WriteEntry { entry, labels: labels.iter().map(|l| l.to_string()).collect::<Vec<_>>().into(), binaries: Vec::new() }
}

fn open_synthetic(entries: &[WriteEntry]) -> Archive {
    Archive::from_bytes(archive::encode(entries, &granary::archive::portable_meta())).unwrap()
}

#[test]
fn merge_refuses_a_key_with_different_bytes_in_either_order() {
    let a = || open_synthetic(&[synthetic(1, 7, &["x"]), synthetic(2, 8, &["y"])]);
    let b = || open_synthetic(&[synthetic(2, 9, &["y"])]);
    for inputs in [[a(), b()], [b(), a()]] {
        match archive::merge(&inputs) {
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
    match archive::merge(&[a, b]) {
        Err(ArchiveError::Conflict(m)) => assert!(m.contains("label 'shared' names two different pipelines"), "{m}"),
        other => panic!("expected a conflict, got {:?}", other.map(|(e, _)| e.len())),
    }
    // The writer refuses it too, and an archive that has it anyway (encoded in memory,
    // bypassing that check) fails verification.
    let both = [synthetic(1, 7, &["shared"]), synthetic(2, 8, &["shared"])];
    let dir = common::tempdir();
    assert!(matches!(
        archive::write_entries(&dir.path().join("x.granary"), &both, &granary::archive::portable_meta()),
        Err(ArchiveError::Conflict(_))
    ));
    match open_synthetic(&both).verify() {
        Err(ArchiveError::Corrupt { what, .. }) => assert!(what.contains("names two pipelines"), "{what}"),
        other => panic!("verify accepted a label naming two pipelines: {:?}", other.map(|_| ())),
    }
}

#[test]
fn merge_refuses_different_targets_in_either_order() {
    let fx = common::fixture();
    let ps = fx.runs(1, 4, 2);
    // Each archive's header names the targets it was harvested for (part of the writer
    // options, so of every key).
    let enc = |targets| {
        let (c, _) = compile_all(&ps, targets);
        let meta = granary::archive::portable_meta_for(granary::frontend::Profile::default_profile(), targets);
        Archive::from_bytes(archive::encode(&c.snapshot().entries, &meta)).unwrap()
    };
    let spirv = || enc(TargetSet::SPIRV);
    let both = || enc(TargetSet::of(&[Target::Spirv, Target::Msl]));
    for inputs in [[spirv(), both()], [both(), spirv()]] {
        match archive::merge(&inputs) {
            Err(ArchiveError::Incompatible(m)) => assert!(m.contains("requested targets spirv"), "{m}"),
            other => panic!("expected a refusal, got {:?}", other.map(|(e, _)| e.len())),
        }
    }
    // An empty archive has no targets and merges with anything.
    let empty = Archive::from_bytes(archive::encode(&[], &granary::archive::portable_meta())).unwrap();
    let (e, _) = archive::merge(&[empty, spirv()]).unwrap();
    assert_eq!(e.len(), 4);
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
    eprintln!("{} truncations of a {}-byte archive rejected", bytes.len(), bytes.len());
}

#[test]
fn every_bit_flip_is_detected() {
    let (bytes, pipelines) = small_archive();
    let ctx = Archive::from_bytes(bytes.clone()).unwrap().key_context();
    let keys: Vec<_> = pipelines.iter().map(|p| p.key(&ctx)).collect();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..3000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let pos = (rng % bytes.len() as u64) as usize;
        let bit = (rng >> 32) % 8;
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
    let row = granary::archive::format::FIXED_HEADER + 2 * granary::archive::format::SECTION_ROW;
    h[row + 16..row + 24].copy_from_slice(&u64::MAX.to_le_bytes());
    let hl = granary::archive::format::HEADER_LEN;
    let sum = granary::descriptor::key::checksum64(&h[..hl - 8]);
    h[hl - 8..hl].copy_from_slice(&sum.to_le_bytes());
    let e = err(h);
    assert!(e.contains("runs past the end of the file"), "{e}");
    assert!(e.contains("offset 0x"), "{e}");
}

/// The archive format, pinned: synthetic entries (no naga output involved) must encode to
/// these exact bytes. A change here breaks every archive in the field: bump the format
/// version in docs/FORMAT.md and `archive::format::VERSION` together with this value.
#[test]
fn pinned_archive_bytes() {
    use granary::descriptor::*;
    let blob = |b: u8| Blob::new(vec![b; 21]);
    // One pipeline with a resource layout (a uniform buffer and a sampler seen by the vertex
    // stage, 16 bytes of immediates), one without: the layout blob's encoding is pinned too.
    let bindings = vec![
        LayoutBinding { group: 0, binding: 0, kind: BindingKind::UniformBuffer, count: 0, visibility: StageMask(1) },
        LayoutBinding { group: 1, binding: 3, kind: BindingKind::Sampler, count: 0, visibility: StageMask(1) },
    ];
    let map = granary::frontend::layout::assign(ShaderStage::Vertex, &bindings, true, false).unwrap();
    let layout = PipelineLayout {
        bindings,
        immediates: Some(Immediates { size: 16, visibility: StageMask(1) }),
        stages: vec![map],
    };
    let entry = |k: u128, b: u8, layout: Option<&PipelineLayout>| {
        let mut outputs = TargetOutputs::default();
        outputs.0[0] = Some(blob(b));
        outputs.0[2] = Some(blob(b + 1));
        Arc::new(PipelineEntry {
            key: PipelineKey(k),
            kind: PipelineKind::Render,
            stages: vec![StageEntry {
                key: StageKey(k * 3),
                stage: ShaderStage::Vertex,
                entry_point: "vs".into(),
                outputs,
            }],
            layout: layout.map(|l| Blob::new(l.encode())),
            state: None,
        })
    };
    // Device sections (format v3): pipeline 5 has a two-binary library set on one device;
    // another device has only pipeline-cache data and pipeline 2 compiled into it.
    let device = common::test_device;
    let (gpu, cpu) = (device("gpu", vec![0x42; 20]), device("cpu", Vec::new()));
    let set = archive::BinarySet {
        flags: archive::BINARY_SET_LIBRARY,
        pipeline_key: vec![0x5c; 20],
        binaries: vec![
            archive::DeviceBinary { key: vec![1, 2], data: Blob::new(vec![7; 33]) },
            archive::DeviceBinary { key: vec![3; 32], data: Blob::new(vec![8; 5]) },
        ],
    };
    let empty = archive::BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: Vec::new() };
    let entries = vec![
        WriteEntry {
            entry: entry(5, 1, Some(&layout)),
            labels: vec!["b".to_string(), "a".to_string()].into(),
            binaries: vec![archive::DeviceBinaries { device: gpu.clone(), set: Arc::new(set) }],
        },
        WriteEntry {
            entry: entry(2, 1, None),
            labels: vec!["c".to_string()].into(),
            binaries: vec![archive::DeviceBinaries { device: cpu.clone(), set: Arc::new(empty) }],
        },
    ];
    let meta = ArchiveMeta {
        target_options: granary::descriptor::key::content_hash(b"opts").0,
        target_options_text: "opts".into(),
        device_caches: vec![archive::DeviceCache { device: cpu.clone(), data: Blob::new(vec![9; 17]) }],
    };
    let bytes = archive::encode(&entries, &meta);
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    a.verify().unwrap();
    assert_eq!(a.get(PipelineKey(5)).unwrap().unwrap().layout().unwrap().as_ref(), Some(&layout));
    assert_eq!(a.get(PipelineKey(2)).unwrap().unwrap().layout().unwrap(), None);
    assert_eq!(a.entries().unwrap().iter().map(|w| w.entry.clone()).collect::<Vec<_>>(), {
        let mut v = vec![entries[1].entry.clone(), entries[0].entry.clone()];
        v.sort_by_key(|e| e.key.0);
        v
    });
    assert_eq!(a.devices().unwrap().len(), 2);
    let set = a.device_for(&gpu).unwrap().unwrap().binaries(&a.get(PipelineKey(5)).unwrap().unwrap()).unwrap().unwrap();
    assert_eq!((set.flags(), set.get(1).unwrap().key), (archive::BINARY_SET_LIBRARY, &[3u8; 32][..]));
    // The pipeline key travels beside the binaries (a keyed set, format v5) and is not a binary.
    assert_eq!((set.pipeline_key(), set.len()), (&[0x5c; 20][..], 2));
    assert_eq!(a.device_for(&cpu).unwrap().unwrap().caches().unwrap(), vec![&[9u8; 17][..]]);
    assert_eq!(bytes.len(), PIN_LEN);
    assert_eq!(format!("{:016x}", granary::descriptor::key::checksum64(&bytes)), PIN_SUM);
}
const PIN_LEN: usize = 1840;
const PIN_SUM: &str = "f39646bbde15c7b5";

/// naga's output, pinned: if this fails, the front end writes different bytes for the same
/// input (a naga update or an option change), so `frontend::targets::TARGET_OPTIONS` must
/// change too, which gives every stage key a new value. Update both together.
#[test]
fn pinned_front_end_output() {
    let fx = common::fixture();
    let c = Compiler::new(CompilerOptions { targets: TargetSet::of(&Target::ALL), ..Default::default() });
    let e = c.compile(&fx.pipeline(2, 3, 4)).unwrap();
    let mut h = Vec::new();
    for s in &e.stages {
        for t in Target::ALL {
            h.extend_from_slice(s.outputs.get(t).unwrap().bytes());
        }
    }
    assert_eq!(format!("{:016x}", granary::descriptor::key::checksum64(&h)), PIN_NAGA);
}
const PIN_NAGA: &str = "0c77b3f36760fb17";

/// Reserved bytes of a pipeline record must be zero even when the record's own checksum
/// matches (a writer from the future, or a crafted file): lookups refuse it.
#[test]
fn reserved_record_bytes_are_checked_on_lookup() {
    let mut bytes = archive::encode(&[synthetic(9, 1, &["r"])], &granary::archive::portable_meta());
    let row = 64 + 4 * 32; // section-table row of the pipeline table
    let off = u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize;
    bytes[off + 38] = 1;
    let sum = granary::descriptor::key::checksum64(&bytes[off..off + 40]);
    bytes[off + 40..off + 48].copy_from_slice(&sum.to_le_bytes());
    let a = Archive::from_bytes(bytes).unwrap();
    match a.get(granary::descriptor::PipelineKey(9)) {
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
    e.layout = Some(granary::descriptor::Blob::new(b"GLY1 not a layout".to_vec()));
    w.entry = Arc::new(e);
    let a = Archive::from_bytes(archive::encode(&[w], &granary::archive::portable_meta())).unwrap();
    let p = a.get(granary::descriptor::PipelineKey(4)).unwrap().unwrap();
    assert!(p.layout_bytes().unwrap().is_some());
    match p.layout() {
        Err(ArchiveError::Corrupt { what, .. }) => assert!(what.contains("resource layout"), "{what}"),
        other => panic!("invalid layout accepted: {:?}", other.map(|l| l.is_some())),
    }
    assert!(a.verify().is_err());
}
