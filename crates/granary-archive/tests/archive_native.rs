//! Format version 6: native Vulkan pipelines (docs/FORMAT.md §1.13) and stage
//! specializations (the stage record's `specialization` blob) through every path that reads or
//! writes an archive — write, read, verify, `entries`, salvage, merge and the journal — and the
//! damage each of them refuses with its byte offset: a native state whose stage count or kind
//! does not fit its pipeline, a portable (GST1) state on a compute pipeline, a state of neither
//! form, a specialization that does not decode or whose map entries leave its data, a
//! specialization index past the blob index. Also: every struct of `native.rs` is specified in
//! FORMAT §1.13 with its fields in declaration order.

mod common;

use granary_archive::native::{
    AttachmentDescription, AttachmentReference, ColorBlendAttachment, ColorBlendState, GraphicsState,
    InputAssemblyState, NativeLayout, NativePipeline, PushConstantRange, RasterizationState, RenderPassState,
    SamplerState, SetLayout, SetLayoutBinding, Specialization, SpecializationMapEntry, StageState, SubpassDescription,
    TessellationState,
};
use granary_archive::{
    checksum64, encode, merge, replay_journal, salvage, write_entries, Archive, ArchiveError, ArchiveMeta, BindingKind,
    Blob, Journal, LayoutBinding, PipelineEntry, PipelineKey, PipelineKind, PipelineLayout, RenderState, Section,
    ShaderStage, StageBindingMap, StageEntry, StageKey, StageMask, StateKind, Target, TargetOutputs, WriteEntry,
    FIXED_HEADER, SECTION_ROW,
};
use std::sync::Arc;

fn meta() -> ArchiveMeta {
    ArchiveMeta::new("native test writer options")
}

fn spec(id: u32, value: u32) -> Specialization {
    Specialization {
        map_entries: vec![
            SpecializationMapEntry { constant_id: id, offset: 0, size: 4 },
            SpecializationMapEntry { constant_id: id + 1, offset: 4, size: 1 },
        ],
        data: [value.to_le_bytes().as_slice(), &[1, 0, 0, 0]].concat(),
    }
}

fn stage(key: u128, stage: ShaderStage, specialization: Option<&Specialization>) -> StageEntry {
    let mut outputs = TargetOutputs::default();
    // The application's own SPIR-V module (bytes the reader never looks inside).
    let words: Vec<u8> = [0x0723_0203u32, 0x0001_0300, 0, key as u32, 0].iter().flat_map(|w| w.to_le_bytes()).collect();
    outputs.0[Target::Spirv as usize] = Some(Blob::new(words));
    if stage == ShaderStage::Fragment {
        outputs.0[Target::Msl as usize] = Some(Blob::new(format!("// msl {key}\n").into_bytes()));
    }
    StageEntry {
        key: StageKey(key),
        stage,
        entry_point: format!("{stage}_main"),
        outputs,
        specialization: specialization.map(|s| Blob::new(s.encode())),
    }
}

fn sampler() -> SamplerState {
    SamplerState {
        mag_filter: 1,
        min_filter: 1,
        address_mode_u: 2,
        max_anisotropy: 16.0,
        anisotropy_enable: true,
        max_lod: 1000.0,
        reduction_mode: Some(2),
        ..Default::default()
    }
}

fn native_layout() -> NativeLayout {
    NativeLayout {
        flags: 0,
        set_layouts: vec![SetLayout {
            flags: 0,
            bindings: vec![SetLayoutBinding {
                binding: 0,
                descriptor_type: 1, // COMBINED_IMAGE_SAMPLER
                descriptor_count: 1,
                stage_flags: 0x1f,
                immutable_samplers: vec![sampler()],
                binding_flags: 0,
            }],
        }],
        push_constant_ranges: vec![PushConstantRange { stage_flags: 0x1f, offset: 0, size: 128 }],
    }
}

/// A render pipeline's native state with `stages` stage states, tessellation and a render pass.
fn graphics_state(stages: usize) -> NativePipeline {
    NativePipeline {
        flags: 0,
        stages: (0..stages).map(|i| StageState { flags: 0, required_subgroup_size: (i == 0).then_some(32) }).collect(),
        layout: native_layout(),
        graphics: Some(GraphicsState {
            input_assembly_state: Some(InputAssemblyState { flags: 0, topology: 10, primitive_restart_enable: false }),
            tessellation_state: Some(TessellationState { flags: 0, patch_control_points: 3, domain_origin: Some(1) }),
            rasterization_state: Some(RasterizationState {
                polygon_mode: 1,
                cull_mode: 2,
                depth_bias_constant_factor: -0.0,
                line_width: 1.0,
                ..Default::default()
            }),
            color_blend_state: Some(ColorBlendState {
                attachment_count: 1,
                attachments: vec![ColorBlendAttachment { color_write_mask: 0xf, ..Default::default() }],
                blend_constants: [0.0, 0.5, f32::from_bits(0x7fc0_0001), 1.0],
                ..Default::default()
            }),
            dynamic_states: vec![0, 1],
            render_pass: Some(RenderPassState {
                attachments: vec![AttachmentDescription { format: 44, samples: 1, ..Default::default() }],
                subpasses: vec![SubpassDescription {
                    color_attachments: vec![AttachmentReference { attachment: 0, layout: 2, aspect_mask: 1 }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }),
        ray_tracing: None,
    }
}

fn compute_state() -> NativePipeline {
    NativePipeline {
        flags: 0,
        stages: vec![StageState::default()],
        layout: native_layout(),
        graphics: None,
        ray_tracing: None,
    }
}

/// A layout using the Vulkan-native binding kinds and stage bits above compute.
fn layout(stages: &[ShaderStage]) -> PipelineLayout {
    let all = stages.iter().fold(StageMask::default(), |m, s| m.union(StageMask::of(*s)));
    let kinds = [
        BindingKind::CombinedImageSampler,
        BindingKind::UniformTexelBuffer,
        BindingKind::StorageTexelBuffer,
        BindingKind::InputAttachment,
    ];
    PipelineLayout {
        bindings: kinds
            .iter()
            .enumerate()
            .map(|(i, k)| LayoutBinding { group: 0, binding: i as u32, kind: *k, count: 0, visibility: all })
            .collect(),
        immediates: None,
        stages: stages
            .iter()
            .map(|s| StageBindingMap {
                stage: *s,
                slots: Vec::new(),
                msl_immediates_buffer: None,
                msl_sizes_buffer: None,
                hlsl_immediates_space: None,
            })
            .collect(),
    }
}

fn write_entry(
    key: u128,
    kind: PipelineKind,
    stages: Vec<StageEntry>,
    state: Option<Vec<u8>>,
    labels: &[&str],
) -> WriteEntry {
    let kinds: Vec<ShaderStage> = stages.iter().map(|s| s.stage).collect();
    WriteEntry {
        entry: Arc::new(PipelineEntry {
            key: PipelineKey(key),
            kind,
            stages,
            layout: Some(Blob::new(layout(&kinds).encode())),
            state: state.map(Blob::new),
        }),
        labels: labels.iter().map(|l| l.to_string()).collect::<Vec<_>>().into(),
        binaries: Vec::new(),
    }
}

const TESS: [ShaderStage; 5] = [
    ShaderStage::Vertex,
    ShaderStage::TessellationControl,
    ShaderStage::TessellationEvaluation,
    ShaderStage::Geometry,
    ShaderStage::Fragment,
];

/// Two 5-stage native render pipelines sharing their vertex stage and its specialization, a
/// native mesh pipeline (task, mesh, fragment), a native compute pipeline with a
/// specialization, and a portable render pipeline beside them.
fn sample() -> Vec<WriteEntry> {
    let shared = spec(0, 7);
    let tess = |key: u128, fragment: u128| {
        let stages = TESS
            .iter()
            .enumerate()
            .map(|(i, s)| match i {
                0 => stage(0x10, *s, Some(&shared)),
                4 => stage(fragment, *s, Some(&spec(10, fragment as u32))),
                _ => stage(0x20 + i as u128, *s, None),
            })
            .collect();
        write_entry(key, PipelineKind::Render, stages, Some(graphics_state(5).encode()), &[&format!("tess/{key}")])
    };
    let mesh = write_entry(
        0x30,
        PipelineKind::Render,
        vec![
            stage(0x31, ShaderStage::Task, None),
            stage(0x32, ShaderStage::Mesh, Some(&spec(3, 64))),
            stage(0x33, ShaderStage::Fragment, None),
        ],
        Some(graphics_state(3).encode()),
        &["mesh"],
    );
    let compute = write_entry(
        0x40,
        PipelineKind::Compute,
        vec![stage(0x41, ShaderStage::Compute, Some(&spec(0, 256)))],
        Some(compute_state().encode()),
        &["compute/native", "compute/alias"],
    );
    let portable = common::unspecialized_render_state();
    let portable = write_entry(
        0x50,
        PipelineKind::Render,
        vec![stage(0x51, ShaderStage::Vertex, None), stage(0x52, ShaderStage::Fragment, None)],
        Some(portable.encode().expect("a valid render state")),
        &["portable"],
    );
    vec![tess(0x01, 0x61), tess(0x02, 0x62), mesh, compute, portable]
}

fn sorted(entries: &[WriteEntry]) -> Vec<Arc<PipelineEntry>> {
    let mut v: Vec<_> = entries.iter().map(|w| w.entry.clone()).collect();
    v.sort_by_key(|e| e.key.0);
    v.dedup_by_key(|e| e.key.0);
    v
}

fn section_offset(bytes: &[u8], s: Section) -> usize {
    let row = FIXED_HEADER + (s as usize - 1) * SECTION_ROW;
    u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize
}

/// Byte offset of pipeline `key`'s record `state` field.
fn state_field(bytes: &[u8], a: &Archive, key: u128) -> u64 {
    let p = a.get(PipelineKey(key)).unwrap().unwrap();
    (section_offset(bytes, Section::Pipelines) + p.index() * 48 + 32) as u64
}

/// Byte offset of the `specialization` field of stage `j` of pipeline `key`.
fn specialization_field(bytes: &[u8], a: &Archive, key: u128, j: usize) -> u64 {
    let index = a.get(PipelineKey(key)).unwrap().unwrap().index();
    let first: usize = (0..index).map(|i| a.pipeline(i).unwrap().stages().unwrap().len()).sum();
    (section_offset(bytes, Section::Stages) + (first + j) * 56 + 44) as u64
}

fn corrupt_at<T: std::fmt::Debug>(r: Result<T, ArchiveError>) -> (u64, String) {
    match r {
        Err(ArchiveError::Corrupt { offset, what, .. }) => (offset, what),
        other => panic!("expected a Corrupt error, got {other:?}"),
    }
}

#[test]
fn native_states_and_specializations_round_trip_through_write_read_and_verify() {
    let entries = sample();
    let bytes = encode(&entries, &meta());
    // The bytes are a function of the entry set.
    let mut shuffled: Vec<WriteEntry> = entries.iter().rev().cloned().collect();
    shuffled.push(entries[1].clone());
    assert_eq!(encode(&shuffled, &meta()), bytes);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("native.granary");
    assert_eq!(write_entries(&path, &entries, &meta()).unwrap(), bytes.len());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let a = Archive::open(&path).unwrap();
    let report = a.verify().unwrap();
    assert_eq!((report.pipelines, report.stages), (5, 5 + 5 + 3 + 1 + 2));
    // Shared specializations, states and outputs are stored once, like every blob.
    let mut distinct = std::collections::BTreeSet::new();
    for w in &entries {
        let e = &w.entry;
        for b in e.layout.iter().chain(&e.state) {
            distinct.insert(b.hash().0);
        }
        for s in &e.stages {
            for b in s.outputs.0.iter().flatten().chain(&s.specialization) {
                distinct.insert(b.hash().0);
            }
        }
    }
    assert_eq!(a.blob_count(), distinct.len());

    for w in &entries {
        let e = &w.entry;
        let p = a.get(e.key).unwrap().unwrap();
        assert_eq!(a.lookup_label(&w.labels[0]).unwrap().map(|p| p.key()), Some(e.key));
        assert_eq!(p.kind(), e.kind);
        let state = e.state.as_ref().unwrap();
        assert_eq!(p.state_bytes().unwrap(), Some(state.bytes()));
        match p.state_kind().unwrap() {
            Some(StateKind::Native) => {
                // Compared by encoding: the derived `PartialEq` of a state holding a NaN (as
                // this one does, bit for bit) is false even against itself.
                assert_eq!(p.native_state().unwrap().map(|s| s.encode()).as_deref(), Some(state.bytes()));
                assert_eq!(p.state().unwrap(), None, "the render-state accessor answers None for a native state");
            }
            Some(StateKind::Portable) => {
                assert_eq!(e.key, PipelineKey(0x50));
                assert_eq!(p.state().unwrap(), Some(RenderState::decode(state.bytes()).unwrap()));
                assert_eq!(p.native_state().unwrap(), None);
            }
            None => panic!("state lost"),
        }
        assert_eq!(p.layout().unwrap().unwrap().encode(), e.layout.as_ref().unwrap().bytes());
        let stages = p.stages().unwrap();
        assert_eq!(stages.len(), e.stages.len());
        for (s, want) in stages.iter().zip(&e.stages) {
            assert_eq!((s.key, s.stage, s.entry_point), (want.key, want.stage, want.entry_point.as_str()));
            assert_eq!(s.specialization_bytes().unwrap(), want.specialization.as_ref().map(|b| b.bytes()));
            assert_eq!(
                s.specialization().unwrap(),
                want.specialization.as_ref().map(|b| Specialization::decode(b.bytes()).unwrap())
            );
            assert_eq!(s.output(Target::Spirv).unwrap(), want.outputs.get(Target::Spirv).map(|b| b.bytes()));
        }
    }
    // The stage numbers of the new stages are stored as such (0..=7).
    let mesh = a.get(PipelineKey(0x30)).unwrap().unwrap();
    let got: Vec<ShaderStage> = mesh.stages().unwrap().iter().map(|s| s.stage).collect();
    assert_eq!(got, [ShaderStage::Task, ShaderStage::Mesh, ShaderStage::Fragment]);
    // Floats of the native state survive bit for bit (a NaN payload, -0.0).
    let tess = a.get(PipelineKey(1)).unwrap().unwrap().native_state().unwrap().unwrap();
    let g = tess.graphics.unwrap();
    assert_eq!(g.color_blend_state.unwrap().blend_constants[2].to_bits(), 0x7fc0_0001);
    assert_eq!(g.rasterization_state.unwrap().depth_bias_constant_factor.to_bits(), (-0.0f32).to_bits());

    // Read back as entries: exactly what was written, specializations included.
    assert_eq!(a.entries().unwrap().iter().map(|w| w.entry.clone()).collect::<Vec<_>>(), sorted(&entries));
}

#[test]
fn salvage_merge_and_the_journal_carry_native_states_and_specializations() {
    let entries = sample();
    let bytes = encode(&entries, &meta());

    // Salvage of an intact archive recovers everything, and rewrites the same bytes.
    let (recovered, m, report) = salvage(&bytes).unwrap();
    assert_eq!((report.recovered, report.lost.len()), (5, 0), "{:?}", report.lost);
    assert_eq!(recovered.iter().map(|w| w.entry.clone()).collect::<Vec<_>>(), sorted(&entries));
    assert_eq!(encode(&recovered, &m), bytes);

    // Merge of two overlapping halves, in either order, is the archive of the whole.
    let a = || Archive::from_bytes(encode(&entries[..3], &meta())).unwrap();
    let b = || Archive::from_bytes(encode(&entries[2..], &meta())).unwrap();
    for inputs in [[a(), b()], [b(), a()]] {
        let (merged, m) = merge(&inputs).unwrap();
        assert_eq!(encode(&merged, &m), bytes);
    }
    // One key whose specialization differs is a conflict, never "first wins".
    let mut other = entries[3].clone();
    let mut e = (*other.entry).clone();
    e.stages[0].specialization = Some(Blob::new(spec(0, 512).encode()));
    other.entry = Arc::new(e);
    let c = Archive::from_bytes(encode(&[other], &meta())).unwrap();
    assert!(matches!(merge(&[a(), b(), c]), Err(ArchiveError::Conflict(m)) if m.contains("different contents")));

    // The journal: the second record leaves out the outputs of the shared vertex stage (an
    // earlier record holds them) but keeps every specialization; replay restores the entries
    // exactly.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("j.granary");
    let mut j = Journal::create(&archive, &meta()).unwrap();
    j.append(&entries[..1]).unwrap();
    j.append(&entries[1..]).unwrap();
    let r = replay_journal(&archive).unwrap().unwrap();
    assert_eq!((r.records, r.damaged_tail.clone()), (2, None));
    assert_eq!(r.entries.iter().map(|w| w.entry.clone()).collect::<Vec<_>>(), sorted(&entries));
    assert_eq!(encode(&r.entries, &meta()), bytes);
}

/// Encodes `entries` bypassing the writer's checks (as a buggy or hostile writer would) and
/// checks that `write_entries` and the journal refuse them, naming `needle`.
fn unchecked(entries: &[WriteEntry], needle: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("refused.granary");
    match write_entries(&path, entries, &meta()) {
        Err(ArchiveError::Incompatible(m)) => assert!(m.contains(needle), "{m}"),
        other => panic!("write_entries accepted it: {other:?}"),
    }
    assert!(!path.exists());
    let mut j = Journal::create(&path, &meta()).unwrap();
    assert!(matches!(j.append(entries), Err(ArchiveError::Incompatible(m)) if m.contains(needle)));
    assert!(j.is_empty());
    encode(entries, &meta())
}

/// `verify` refuses `bytes` at `offset`, and salvage drops exactly pipeline `key`.
fn refused_everywhere(bytes: &[u8], offset: u64, key: u128, needle: &str) {
    let a = Archive::from_bytes(bytes.to_vec()).unwrap();
    let (at, what) = corrupt_at(a.verify());
    assert_eq!(at, offset, "{what}");
    assert!(what.contains(needle), "{what}");
    let (recovered, _, report) = salvage(bytes).unwrap();
    assert!(recovered.iter().all(|w| w.entry.key.0 != key));
    assert_eq!(recovered.len(), a.len() - 1);
    assert_eq!(report.lost.len(), 1);
    assert!(report.lost[0].contains(&format!("{key:032x}")), "{:?}", report.lost);
}

fn with_state(w: &WriteEntry, state: Vec<u8>) -> WriteEntry {
    let mut e = (*w.entry).clone();
    e.state = Some(Blob::new(state));
    WriteEntry { entry: Arc::new(e), labels: w.labels.clone(), binaries: Vec::new() }
}

#[test]
fn a_native_state_that_does_not_fit_its_pipeline_is_refused_at_its_offset() {
    let base = sample();
    // A 2-stage native state on a 5-stage pipeline.
    let mut entries = base.clone();
    entries[0] = with_state(&base[0], graphics_state(2).encode());
    let bytes = unchecked(&entries, "2 stages but the pipeline has 5");
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    let at = state_field(&bytes, &a, 1);
    let p = a.get(PipelineKey(1)).unwrap().unwrap();
    assert_eq!(p.state_kind().unwrap(), Some(StateKind::Native));
    let (offset, what) = corrupt_at(p.native_state());
    assert_eq!(offset, at);
    assert!(what.contains("2 stages but the pipeline has 5"), "{what}");
    refused_everywhere(&bytes, at, 1, "2 stages but the pipeline has 5");

    // A compute state (no graphics) on a render pipeline, and a graphics state on a compute one.
    for (i, state, needle) in [
        (
            2,
            NativePipeline { stages: vec![StageState::default(); 3], ..compute_state() },
            "a native Vulkan state of a compute pipeline on a render pipeline",
        ),
        (3, graphics_state(1), "a native Vulkan state of a render pipeline on a compute pipeline"),
    ] {
        let mut entries = base.clone();
        entries[i] = with_state(&base[i], state.encode());
        let bytes = unchecked(&entries, needle);
        let a = Archive::from_bytes(bytes.clone()).unwrap();
        let key = base[i].entry.key.0;
        let at = state_field(&bytes, &a, key);
        assert_eq!(corrupt_at(a.get(PipelineKey(key)).unwrap().unwrap().native_state()).0, at);
        refused_everywhere(&bytes, at, key, needle);
    }

    // A native state that does not decode names the field and the byte within the blob.
    let mut cut = graphics_state(5).encode();
    cut.truncate(cut.len() - 3);
    let mut entries = base.clone();
    entries[0] = with_state(&base[0], cut);
    let bytes = unchecked(&entries, "native Vulkan state, byte");
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    refused_everywhere(&bytes, state_field(&bytes, &a, 1), 1, "cut short");
}

#[test]
fn a_render_state_on_a_compute_pipeline_is_refused_at_its_offset() {
    let base = sample();
    let portable = base[4].entry.state.as_ref().unwrap().bytes().to_vec();
    let mut entries = base.clone();
    entries[3] = with_state(&base[3], portable);
    let bytes = unchecked(&entries, "render state (GST1) on a compute pipeline");
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    let at = state_field(&bytes, &a, 0x40);
    let p = a.get(PipelineKey(0x40)).unwrap().unwrap();
    for r in [p.state_kind().map(|_| ()), p.state().map(|_| ()), p.native_state().map(|_| ())] {
        assert_eq!(corrupt_at(r).0, at);
    }
    refused_everywhere(&bytes, at, 0x40, "on a compute pipeline");

    // A state of neither form.
    let mut entries = base.clone();
    entries[2] = with_state(&base[2], b"GXX1 something else".to_vec());
    let bytes = unchecked(&entries, "neither a render state");
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    let at = state_field(&bytes, &a, 0x30);
    assert_eq!(corrupt_at(a.get(PipelineKey(0x30)).unwrap().unwrap().state_kind()).0, at);
    refused_everywhere(&bytes, at, 0x30, "neither a render state");
}

#[test]
fn a_bad_specialization_is_refused_at_its_offset() {
    let base = sample();
    let with_spec = |i: usize, j: usize, bytes: Vec<u8>| {
        let mut entries = base.clone();
        let mut e = (*base[i].entry).clone();
        e.stages[j].specialization = Some(Blob::new(bytes));
        entries[i] = WriteEntry { entry: Arc::new(e), labels: base[i].labels.clone(), binaries: Vec::new() };
        entries
    };
    // A map entry that runs past the data (Specialization::check), on the compute stage.
    let outside = Specialization {
        map_entries: vec![SpecializationMapEntry { constant_id: 9, offset: 2, size: 4 }],
        data: vec![0; 4],
    };
    // A map entry of a size Vulkan does not allow, and bytes that do not decode, on the mesh
    // stage of the mesh pipeline.
    let odd = Specialization {
        map_entries: vec![SpecializationMapEntry { constant_id: 4, offset: 0, size: 3 }],
        data: vec![0; 4],
    };
    let mut garbage = spec(3, 64).encode();
    garbage.push(0);
    for (i, j, bytes, needle) in
        [(3, 0, outside.encode(), "constant 9"), (2, 1, odd.encode(), "constant 4"), (2, 1, garbage, "trailing bytes")]
    {
        let bytes = unchecked(&with_spec(i, j, bytes), needle);
        let key = base[i].entry.key.0;
        let a = Archive::from_bytes(bytes.clone()).unwrap();
        let at = specialization_field(&bytes, &a, key, j);
        let stages = a.get(PipelineKey(key)).unwrap().unwrap().stages().unwrap();
        assert!(stages[j].specialization_bytes().unwrap().is_some(), "the bytes are intact, only wrong");
        let (offset, what) = corrupt_at(stages[j].specialization());
        assert_eq!(offset, at, "{what}");
        assert!(what.contains(needle) && what.contains(stages[j].entry_point), "{what}");
        refused_everywhere(&bytes, at, key, needle);
    }

    // A specialization index past the blob index (the record's checksum fixed up) is refused
    // on lookup of the stage, at the field.
    let mut bytes = encode(&base, &meta());
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    let at = specialization_field(&bytes, &a, 0x40, 0) as usize;
    let blobs = a.blob_count() as u32;
    drop(a);
    bytes[at..at + 4].copy_from_slice(&blobs.to_le_bytes());
    let rec = at - 44;
    let name_off = u32::from_le_bytes(bytes[rec + 20..rec + 24].try_into().unwrap()) as usize;
    let name_len = u32::from_le_bytes(bytes[rec + 24..rec + 28].try_into().unwrap()) as usize;
    let strings = section_offset(&bytes, Section::Strings);
    let mut sum_input = bytes[rec..rec + 48].to_vec();
    sum_input.extend_from_slice(&bytes[strings + name_off..strings + name_off + name_len]);
    let sum = checksum64(&sum_input);
    bytes[rec + 48..rec + 56].copy_from_slice(&sum.to_le_bytes());
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    let (offset, what) = corrupt_at(a.get(PipelineKey(0x40)).unwrap().unwrap().stages().map(|s| s.len()));
    assert_eq!(offset as usize, at);
    assert!(what.contains("past the blob index"), "{what}");
    assert!(a.verify().is_err());
}

#[test]
fn every_flip_and_cut_of_a_native_archive_is_caught_without_a_panic() {
    let bytes = encode(&sample(), &meta());
    let read_all = |a: &Archive| {
        for p in a.iter().flatten() {
            let _ = (p.state_kind(), p.state(), p.native_state(), p.layout());
            for s in p.stages().into_iter().flatten() {
                let _ = (s.specialization(), s.output(Target::Spirv));
            }
        }
        let _ = a.entries();
    };
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= if i % 2 == 0 { 0x01 } else { 0x80 };
        if let Ok(a) = Archive::from_bytes(b.clone()) {
            assert!(a.verify().is_err(), "flip at byte {i} passed verify");
            read_all(&a);
        }
        let _ = salvage(&b);
    }
    for cut in (0..bytes.len()).step_by(7) {
        assert!(Archive::from_bytes(bytes[..cut].to_vec()).is_err());
        let _ = salvage(&bytes[..cut]);
    }
}

/// docs/FORMAT.md §1.13 lists every structure of `native.rs` with its fields in declaration
/// order (the order the codec writes them), exactly as the source spells them.
#[test]
fn format_md_specifies_every_native_structure_in_field_order() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/native.rs")).unwrap();
    let doc = std::fs::read_to_string(root.join("../../docs/FORMAT.md")).unwrap();
    let start = doc.find("### 1.13").expect("FORMAT.md has §1.13");
    let section = &doc[start..];
    let section = &section[..section[4..].find("\n#").map_or(section.len(), |e| e + 4)];

    let mut structs: Vec<(String, Vec<String>)> = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in source.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("pub struct ").and_then(|r| r.strip_suffix(" {")) {
            current = Some((name.to_string(), Vec::new()));
        } else if let Some((_, fields)) = current.as_mut() {
            if let Some(field) = line.strip_prefix("pub ").and_then(|r| r.strip_suffix(',')) {
                fields.push(field.to_string());
            } else if line == "}" {
                structs.extend(current.take());
            }
        }
    }
    assert!(structs.len() >= 25, "parsed {} structures of native.rs", structs.len());
    for (name, fields) in &structs {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("FORMAT.md §1.13 has no row for `{name}`"));
        let cells: Vec<&str> = row.split('|').collect();
        let listed: Vec<String> = cells[2].split('`').skip(1).step_by(2).map(str::to_string).collect();
        assert_eq!(&listed, fields, "FORMAT.md §1.13 row of `{name}`");
    }
}

/// The version 6 bytes of native pipelines, pinned: `sample()` (native states, specializations,
/// the new stages and binding kinds) must encode to exactly these bytes. A change here breaks
/// every archive in the field: bump the format version in docs/FORMAT.md and `format::VERSION`
/// together with these values.
#[test]
fn pinned_native_archive_bytes() {
    let bytes = encode(&sample(), &meta());
    assert_eq!((bytes.len(), format!("{:016x}", checksum64(&bytes))), (PIN_LEN, PIN_SUM.to_string()));
}
const PIN_LEN: usize = 5184;
const PIN_SUM: &str = "24c1c90849bcd191";
