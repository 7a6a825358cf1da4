//! Resource layouts: reflection per stage, merge per pipeline, binding maps for every target,
//! immediates (push constants) in every target, disagreements named.

mod common;

use granary::archive::MslClass;
use granary::compiler::{CompileError, Compiler, CompilerOptions};
use granary::descriptor::*;
use std::sync::Arc;

/// Immediates, read-only and read-write storage buffers with runtime-sized arrays, a sampled
/// texture, a sampler and a storage texture, used by three entry points.
const PC: &str = r#"
struct Push { tint: vec4<f32>, scale: f32, pad0: f32, pad1: f32, pad2: f32 }
var<immediate> push: Push;
struct Particle { pos: vec4<f32> }
@group(0) @binding(0) var<storage, read> particles: array<Particle>;
@group(0) @binding(1) var<storage, read_write> out_buf: array<vec4<f32>>;
@group(1) @binding(0) var tex: texture_2d<f32>;
@group(1) @binding(1) var samp: sampler;
@group(1) @binding(2) var img: texture_storage_2d<rgba8unorm, write>;

@vertex
fn vs_main(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    return particles[i].pos * push.scale;
}

@fragment
fn fs_main(@builtin(position) p: vec4<f32>) -> @location(0) vec4<f32> {
    return textureSample(tex, samp, p.xy) * push.tint;
}

@compute @workgroup_size(64)
fn cs_main(@builtin(global_invocation_id) id: vec3<u32>) {
    out_buf[id.x] = particles[id.x].pos * push.scale + textureLoad(tex, vec2<i32>(0, 0), 0);
    textureStore(img, vec2<i32>(id.xy), push.tint);
}
"#;

fn compiler() -> Compiler {
    Compiler::new(CompilerOptions { targets: TargetSet::of(&Target::ALL), ..Default::default() })
}

fn render(lib: &Arc<Library>, vs: &str, fs_lib: &Arc<Library>, fs: &str) -> PipelineDescriptor {
    PipelineDescriptor::Render(RenderPipelineDescriptor {
        label: Some("p".into()),
        vertex: FunctionDescriptor::library(lib.clone(), vs),
        fragment: Some(FunctionDescriptor::library(fs_lib.clone(), fs)),
        state: RenderState {
            vertex_buffers: Vec::new(),
            primitive: PrimitiveState::default(),
            color_attachments: vec![ColorAttachment::unspecialized()],
            depth_stencil: None,
            sample_count: 1,
            alpha_to_coverage: false,
        },
        layout: None,
    })
}

fn text(e: &PipelineEntry, stage: usize, t: Target) -> String {
    String::from_utf8(e.stages[stage].outputs.get(t).unwrap().bytes().to_vec()).unwrap()
}

fn layout_of(e: &PipelineEntry) -> PipelineLayout {
    PipelineLayout::decode(e.layout.as_ref().expect("a compiled pipeline has a layout").bytes()).unwrap()
}

#[test]
fn immediates_compile_for_every_target_at_the_documented_slots() {
    let lib = Library::wgsl("pc", PC);
    let c = compiler();
    let compute = PipelineDescriptor::Compute(ComputePipelineDescriptor {
        label: Some("c".into()),
        compute: FunctionDescriptor::library(lib.clone(), "cs_main"),
        layout: None,
    });
    let e = c.compile(&compute).unwrap();
    for t in Target::ALL {
        assert!(e.stages[0].outputs.get(t).is_some(), "{t} output missing");
    }
    let l = layout_of(&e);
    assert_eq!(l.immediates, Some(Immediates { size: 32, visibility: StageMask::of(ShaderStage::Compute) }));
    let kinds: Vec<_> = l.bindings.iter().map(|b| (b.group, b.binding, b.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            (0, 0, BindingKind::ReadOnlyStorageBuffer),
            (0, 1, BindingKind::StorageBuffer),
            (1, 0, BindingKind::SampledTexture),
            (1, 2, BindingKind::StorageTexture),
        ]
    );
    let map = &l.stages[0];
    // Buffers 0 and 1, then immediates at the next buffer index, then the sizes buffer.
    assert_eq!((map.msl_immediates_buffer, map.msl_sizes_buffer), (Some(2), Some(3)));
    let msl = text(&e, 0, Target::Msl);
    assert!(msl.contains("constant Push& push [[buffer(2)]]"), "{msl}");
    assert!(msl.contains("particles [[buffer(0)]]"), "{msl}");
    assert!(msl.contains("out_buf [[buffer(1)]]"), "{msl}");
    assert!(msl.contains("tex [[texture(0)]]"), "{msl}");
    assert!(msl.contains("img [[texture(1)]]"), "{msl}");
    assert!(msl.contains("_buffer_sizes [[buffer(3)]]"), "{msl}");
    assert!(!msl.contains("fake"), "{msl}");
    let hlsl = text(&e, 0, Target::Hlsl);
    assert!(hlsl.contains("ConstantBuffer<Push> push: register(b0, space254);"), "{hlsl}");
    assert!(hlsl.contains("RWByteAddressBuffer out_buf : register(u1);"), "{hlsl}");
    assert!(hlsl.contains("RWTexture2D<unorm float4> img : register(u2, space1);"), "{hlsl}");
    let glsl = text(&e, 0, Target::Glsl);
    assert!(glsl.contains("layout(std430, binding = 1) buffer"), "{glsl}");
    assert!(glsl.contains("layout(binding = 0,rgba8) writeonly uniform image2D"), "{glsl}");
}

#[test]
fn render_layout_merges_visibility_and_maps_each_stage_from_what_it_uses() {
    let lib = Library::wgsl("pc", PC);
    let e = compiler().compile(&render(&lib, "vs_main", &lib, "fs_main")).unwrap();
    let l = layout_of(&e);
    let both = StageMask::of(ShaderStage::Vertex).union(StageMask::of(ShaderStage::Fragment));
    assert_eq!(l.immediates, Some(Immediates { size: 32, visibility: both }));
    let b = l.binding(0, 0).unwrap();
    assert_eq!((b.kind, b.visibility), (BindingKind::ReadOnlyStorageBuffer, StageMask::of(ShaderStage::Vertex)));
    assert_eq!(l.binding(1, 1).unwrap().kind, BindingKind::Sampler);
    assert!(l.binding(0, 1).is_none(), "out_buf is used by no stage of this pipeline");
    // The fragment stage uses no buffer resource: its immediates take buffer 0.
    let fs = l.stage(ShaderStage::Fragment).unwrap();
    assert_eq!(fs.msl_immediates_buffer, Some(0));
    assert!(text(&e, 1, Target::Msl).contains("constant Push& push [[buffer(0)]]"));
    assert!(text(&e, 1, Target::Msl).contains("samp [[sampler(0)]]"));
    // HLSL samplers: heaps and the group's sampler index buffer at the documented registers.
    let hlsl = text(&e, 1, Target::Hlsl);
    assert!(hlsl.contains("register(s0, space252)"), "{hlsl}");
    assert!(hlsl.contains("register(t1, space255)"), "{hlsl}");
    let vs = l.stage(ShaderStage::Vertex).unwrap();
    assert_eq!((vs.msl_immediates_buffer, vs.msl_sizes_buffer), (Some(1), Some(2)));
}

#[test]
fn stages_that_disagree_about_a_binding_fail_naming_both() {
    let a = Library::wgsl(
        "lib_a",
        r#"@group(0) @binding(0) var<uniform> u: vec4<f32>;
        @vertex fn vs() -> @builtin(position) vec4<f32> { return u; }"#,
    );
    let b = Library::wgsl(
        "lib_b",
        r#"@group(0) @binding(0) var t: texture_2d<f32>;
        @fragment fn fs() -> @location(0) vec4<f32> { return textureLoad(t, vec2<i32>(0, 0), 0); }"#,
    );
    match compiler().compile(&render(&a, "vs", &b, "fs")) {
        Err(CompileError::Link { message, .. }) => {
            assert!(message.contains("@group(0) @binding(0)"), "{message}");
            assert!(message.contains("'vs' of library 'lib_a'"), "{message}");
            assert!(message.contains("'fs' of library 'lib_b'"), "{message}");
            assert!(message.contains("uniform_buffer") && message.contains("sampled_texture"), "{message}");
        }
        other => panic!("disagreement accepted: {:?}", other.map(|e| e.key)),
    }
}

#[test]
fn the_bundled_fixture_has_no_placeholder_bindings() {
    let fx = common::fixture();
    let e = compiler().compile(&fx.pipeline(1, 0, 1)).unwrap();
    let msl = text(&e, 1, Target::Msl);
    assert!(msl.contains("tex [[texture(0)]]") && msl.contains("samp [[sampler(0)]]"), "{msl}");
    assert!(!msl.contains("fake"));
}

fn script(layout: &str) -> granary::script::Script {
    let src = serde_json::to_string(PC).unwrap();
    let text = format!(
        r#"{{"granary_script": 1,
            "libraries": [{{"name": "pc", "kind": "wgsl", "source": {src}}}],
            "pipelines": [{{"label": "c", "compute": {{"function": {{"library": "pc", "function": "cs_main"}}}}{layout}}}]}}"#
    );
    granary::script::Script::parse(&text, std::path::Path::new("inline.json"), std::path::Path::new(".")).unwrap()
}

fn descriptor(s: &granary::script::Script) -> PipelineDescriptor {
    s.pipelines[0].descriptor.as_ref().unwrap().clone()
}

const FULL: &str = r#", "layout": {
    "bindings": [
        {"group": 0, "binding": 0, "kind": "read_only_storage_buffer", "visibility": ["compute"]},
        {"group": 0, "binding": 1, "kind": "storage_buffer", "visibility": ["compute"]},
        {"group": 1, "binding": 0, "kind": "sampled_texture", "visibility": ["compute", "fragment"]},
        {"group": 1, "binding": 2, "kind": "storage_texture", "visibility": ["compute"]},
        {"group": 3, "binding": 0, "kind": "uniform_buffer", "visibility": ["compute"]}
    ],
    "immediates": {"size": 64, "visibility": ["compute"]}
}"#;

#[test]
fn an_explicit_layout_is_the_pipelines_layout_and_part_of_its_key() {
    let derived = descriptor(&script(""));
    let explicit = descriptor(&script(FULL));
    let c = compiler();
    let ctx = c.key_context();
    assert_ne!(derived.key(&ctx), explicit.key(&ctx), "the explicit layout is part of the key");
    let e = c.compile(&explicit).unwrap();
    assert_eq!(e.key, explicit.key(&ctx));
    let l = layout_of(&e);
    // The layout is the script's (group 3 is used by no shader), the stage map the shader's.
    assert_eq!(l.bindings.len(), 5);
    assert_eq!(l.binding(3, 0).unwrap().kind, BindingKind::UniformBuffer);
    assert_eq!(l.immediates.unwrap().size, 64);
    assert_eq!(l.stages[0].slots.len(), 4);
    // Same stage outputs either way: the binding map follows from what the stage uses.
    let d = c.compile(&derived).unwrap();
    assert_eq!(d.stages[0].outputs, e.stages[0].outputs);
    // A script written back out keeps the layout (same key).
    let json = granary::script::script_json(&[(Some("c".into()), &explicit)]);
    let again =
        granary::script::Script::parse(&json, std::path::Path::new("x.json"), std::path::Path::new(".")).unwrap();
    assert_eq!(descriptor(&again).key(&ctx), explicit.key(&ctx));
}

#[test]
fn an_explicit_layout_missing_a_used_binding_names_stage_library_and_binding() {
    let missing =
        FULL.replace(r#"{"group": 1, "binding": 2, "kind": "storage_texture", "visibility": ["compute"]},"#, "");
    match compiler().compile(&descriptor(&script(&missing))) {
        Err(CompileError::Link { message, .. }) => {
            assert!(message.contains("compute function 'cs_main' of library 'pc'"), "{message}");
            assert!(message.contains("@group(1) @binding(2)"), "{message}");
            assert!(message.contains("explicit layout does not have it"), "{message}");
        }
        other => panic!("accepted: {:?}", other.map(|e| e.key)),
    }
    let wrong_kind = FULL.replace(r#""kind": "storage_buffer""#, r#""kind": "uniform_buffer""#);
    let err = compiler().compile(&descriptor(&script(&wrong_kind))).unwrap_err().to_string();
    assert!(err.contains("@group(0) @binding(1)") && err.contains("uniform_buffer"), "{err}");
    let small = FULL.replace(r#""size": 64"#, r#""size": 16"#);
    let err = compiler().compile(&descriptor(&script(&small))).unwrap_err().to_string();
    assert!(err.contains("32 bytes of immediates"), "{err}");
}

#[test]
fn a_binding_listed_twice_in_a_script_layout_is_an_error_with_its_path() {
    let twice = r#", "layout": {"bindings": [
        {"group": 0, "binding": 0, "kind": "uniform_buffer", "visibility": ["compute"]},
        {"group": 0, "binding": 0, "kind": "sampler", "visibility": ["compute"]}]}"#;
    let src = serde_json::to_string(PC).unwrap();
    let text = format!(
        r#"{{"granary_script": 1, "libraries": [{{"name": "pc", "kind": "wgsl", "source": {src}}}],
            "pipelines": [{{"compute": {{"function": {{"library": "pc", "function": "cs_main"}}}}{twice}}}]}}"#
    );
    let s = granary::script::Script::parse(&text, std::path::Path::new("t.json"), std::path::Path::new(".")).unwrap();
    let err = s.pipelines[0].descriptor.as_ref().unwrap_err().to_string();
    assert!(err.contains("pipelines[0].layout.bindings") && err.contains("listed twice"), "{err}");
}

#[test]
fn binding_arrays_take_one_metal_buffer_and_refuse_hlsl_register_overlap() {
    use granary::frontend::layout::assign;
    let b = |binding, kind, count| LayoutBinding {
        group: 0,
        binding,
        kind,
        count,
        visibility: StageMask::of(ShaderStage::Fragment),
    };
    let ok = assign(
        ShaderStage::Fragment,
        &[b(0, BindingKind::SampledTexture, 4), b(4, BindingKind::SampledTexture, 0), b(5, BindingKind::Sampler, 0)],
        false,
        false,
    )
    .unwrap();
    let msl: Vec<_> = ok.slots.iter().map(|s| (s.msl_class, s.msl_index)).collect();
    assert_eq!(msl, vec![(MslClass::Buffer, 0), (MslClass::Texture, 0), (MslClass::Sampler, 0)]);
    assert_eq!(ok.slots[1].glsl_binding, Some(4), "a GLSL array of 4 textures takes units 0..4");
    let err = assign(
        ShaderStage::Fragment,
        &[b(0, BindingKind::SampledTexture, 4), b(2, BindingKind::SampledTexture, 0)],
        false,
        false,
    )
    .unwrap_err();
    assert!(err.contains("@group(0) @binding(2)") && err.contains("@group(0) @binding(0)"), "{err}");
    // Different register classes do not collide.
    assign(
        ShaderStage::Fragment,
        &[b(0, BindingKind::SampledTexture, 4), b(1, BindingKind::UniformBuffer, 0)],
        false,
        false,
    )
    .unwrap();
}
