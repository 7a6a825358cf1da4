//! Keys: pinned values, and independence from labels, order and float spelling.

mod common;

use granary::descriptor::*;
use granary::script::Script;
use std::path::Path;

const CTX: KeyContext = KeyContext { target_options: 0x0123_4567_89ab_cdef_0011_2233_4455_6677 };

/// Pinned keys: if one of these fails, the canonical encoding changed. That invalidates every
/// archive in the field, so bump `KEY_ENCODING_VERSION` and update the values together.
#[test]
fn pinned_key_values() {
    let fx = common::fixture();
    let p = fx.pipeline(1, 5, 3);
    assert_eq!(p.key(&CTX).to_hex(), "07dafad8f722a99930e513013cd41c7f");
    let (stage, f) = p.stages()[0];
    assert_eq!(stage_key(f, stage, &CTX).to_hex(), "bc88648b2611da43856a56f4fc3a1e03");
    let c = PipelineDescriptor::Compute(ComputePipelineDescriptor {
        label: None,
        compute: FunctionDescriptor::library(fx.fs.clone(), "cs"),
        layout: None,
    });
    assert_eq!(c.key(&CTX).to_hex(), "245029ac7809da02786e665d0e10dda8");
    assert_eq!(fx.vs.hash().to_hex(), "927934902d81b3f94ad7f95d54952e1f");
}

#[test]
fn labels_and_names_are_not_part_of_keys() {
    let fx = common::fixture();
    let a = fx.pipeline(0, 1, 4);
    let mut b = a.clone();
    if let PipelineDescriptor::Render(r) = &mut b {
        r.label = Some("something else".into());
        if let FunctionDescriptor::Specialized { specialized_name, .. } = &mut r.vertex {
            *specialized_name = Some("renamed".into());
        }
    }
    assert_eq!(a.key(&CTX), b.key(&CTX));
    // A library's name is not its identity; its content is.
    let renamed = Library::wgsl("other name", common::VS);
    assert_eq!(renamed.hash(), fx.vs.hash());
}

#[test]
fn constant_and_attribute_order_do_not_matter() {
    let lib = common::fixture().vs;
    let c1 = Constant { id: ConstantId::Name("VARIANT".into()), value: ConstantValue::U32(2) };
    let c2 = Constant { id: ConstantId::Name("SCALE".into()), value: ConstantValue::F32(0.5) };
    let f1 = FunctionDescriptor::library(lib.clone(), "vs").specialized(vec![c1.clone(), c2.clone()]);
    let f2 = FunctionDescriptor::library(lib, "vs").specialized(vec![c2, c1]);
    assert_eq!(stage_key(&f1, ShaderStage::Vertex, &CTX), stage_key(&f2, ShaderStage::Vertex, &CTX));

    let mut l1 = common::layout();
    let l2 = common::layout();
    l1[0].attributes.reverse();
    let mut e1 = granary::descriptor::key::Encoder::new(b"t");
    let mut e2 = granary::descriptor::key::Encoder::new(b"t");
    use granary::descriptor::key::Canonical;
    // The vertex layouts are encoded as part of the render state (the one field walk).
    Canonical::encode(&common::opaque_state(l1, 0), &mut e1);
    Canonical::encode(&common::opaque_state(l2, 0), &mut e2);
    assert_eq!(e1.finish(), e2.finish());
}

#[test]
fn everything_that_changes_the_result_changes_the_key() {
    let fx = common::fixture();
    let base = fx.pipeline(0, 0, 4);
    let k = base.key(&CTX);
    let mut variants = Vec::new();
    let mut push = |f: &dyn Fn(&mut RenderPipelineDescriptor)| {
        let mut d = base.clone();
        if let PipelineDescriptor::Render(r) = &mut d {
            f(r);
        }
        variants.push(d.key(&CTX));
    };
    push(&|r| r.state.sample_count = 4);
    push(&|r| r.state.primitive.cull = CullMode::Back);
    push(&|r| r.state.color_attachments[0].format = MaybeSpecialized::Is(TextureFormat::Rgba8unorm));
    push(&|r| r.state.color_attachments[0].write_mask = MaybeSpecialized::Is(ColorWrites(0b0111)));
    push(&|r| r.state.color_attachments[0].blend = MaybeSpecialized::Is(Blend::Off));
    push(&|r| r.state.vertex_buffers[0].stride = 36);
    push(&|r| r.state.depth_stencil = None);
    push(&|r| r.fragment = None);
    push(&|r| r.state.alpha_to_coverage = true);
    push(&|r| r.vertex = common::fixture().vertex(1));
    let mut all = variants.clone();
    all.push(k);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), variants.len() + 1, "every change gives a distinct key");
    // Another target-options fingerprint gives other keys.
    assert_ne!(base.key(&KeyContext { target_options: 1 }), k);
}

#[test]
fn float_spelling_in_scripts_does_not_matter() {
    let dir = common::tempdir();
    std::fs::write(dir.path().join("v.wgsl"), common::VS).unwrap();
    let script = |scale: &str| {
        format!(
            r#"{{"granary_script": 1, "libraries": [{{"name": "v", "path": "v.wgsl"}}],
            "pipelines": [{{"render": {{"vertex": {{"specialize": {{"library": "v", "function": "vs"}},
              "constants": [{{"name": "SCALE", "f32": {scale}}}]}}}}}}]}}"#
        )
    };
    let keys: Vec<PipelineKey> = ["0.5", "0.50", "5e-1", "0.5000000"]
        .iter()
        .map(|s| {
            let sc = Script::parse(&script(s), Path::new("t.json"), dir.path()).unwrap();
            sc.pipelines[0].descriptor.as_ref().unwrap().key(&CTX)
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] == w[1]));
}

/// The writer-options text hashed into every stage key names the exact naga release that
/// writes the outputs (30.0.2, not 30): a patch release may change output bytes, so archives
/// from another one must not be mistaken for comparable ones by merge or resume.
#[test]
fn writer_options_name_the_exact_naga_version() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock")).expect("Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"naga\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .expect("naga in Cargo.lock");
    let text = granary::frontend::targets::TARGET_OPTIONS;
    assert!(
        text.starts_with(&format!("naga={version};")),
        "TARGET_OPTIONS says {text:?}, Cargo.lock has naga {version}"
    );
}

/// The native form's keys, derived in granary-archive (`native/key.rs`) so the run-time lookup
/// by create info computes them too: pinned, and equal to the encoding the offline library
/// wrote before the derivation moved (spelled out here field by field).
#[test]
fn pinned_native_key_values() {
    use granary::descriptor::key::Encoder;
    use granary_archive::native::{NativePipeline, Specialization, SpecializationMapEntry, StageState};
    use std::sync::Arc;
    let bytes = vec![0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0];
    let lib = Library::spirv("m.spv", bytes.clone());
    assert_eq!(lib.hash(), granary_archive::native::spirv_library_hash(&bytes));
    let spec = Specialization {
        map_entries: vec![SpecializationMapEntry { constant_id: 3, offset: 0, size: 4 }],
        data: vec![1, 0, 0, 0],
    };
    let state = NativePipeline {
        flags: 0,
        stages: vec![StageState { flags: 0, required_subgroup_size: Some(32) }],
        ..Default::default()
    };
    let desc = NativePipelineDescriptor {
        label: Some("native".into()),
        stages: vec![NativeStage {
            stage: ShaderStage::Compute,
            function: FunctionDescriptor::library(lib.clone(), "main"),
            specialization: Some(Arc::new(spec.clone())),
        }],
        state: Arc::new(state.clone()),
    };
    // The encoding as `descriptor/native.rs` wrote it before the move.
    let mut e = Encoder::new(b"stage");
    e.u128(lib.hash().0);
    e.str("main");
    e.u8(ShaderStage::Compute as u8);
    e.u64(0);
    e.u128(CTX.target_options);
    e.u8(2);
    e.bytes(&spec.encode());
    let stage = StageKey(e.finish());
    let mut e = Encoder::new(b"native-pipeline");
    e.u64(1);
    e.u8(ShaderStage::Compute as u8);
    e.u128(stage.0);
    e.bytes(&state.encode());
    let pipeline = PipelineKey(e.finish());
    let d = PipelineDescriptor::Native(desc);
    assert_eq!(d.stage_keys(&CTX), vec![stage]);
    assert_eq!(d.key(&CTX), pipeline);
    assert_eq!(pipeline.to_hex(), "bfce45e4f8f77f784ca55d2a57e619d1");
}
