//! Archives of compiled pipelines: lookup by key, descriptor and label equals a fresh compile,
//! merge order, merge refusing different targets, and the pinned archive bytes and front-end
//! output. The reader's own robustness (truncations, bit flips, hostile headers, reserved
//! bytes, invalid layouts, fuzzing), the encoding's order independence and merge's key and
//! label refusals are tested where the reader lives: `granary-archive/tests/reader.rs`.

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
                specialization: None,
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
const PIN_LEN: usize = 1856;
const PIN_SUM: &str = "29febfa821aa983d";

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
