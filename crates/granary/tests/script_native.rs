//! The pipelines script's native Vulkan form (docs/FORMAT.md §2.6): written by every writer
//! (a capture's export, the pretty writer, the line writer) and read back by `Script` and
//! `LazyScript` to equal descriptors and keys; never expanded; every error names its JSON path.

mod common;

use granary::descriptor::{
    FunctionDescriptor, KeyContext, Library, NativePipelineDescriptor, NativeStage, PipelineDescriptor, ShaderStage,
};
use granary::script::write::{self, Function, LibraryEntry, LineWriter, NativeStageEntry, Pipeline};
use granary::script::{Expansion, LazyScript, Script};
use granary_archive::native::*;
use std::path::Path;
use std::sync::Arc;

/// A SPIR-V module's bytes (a header is all the script reader looks at: it never parses them).
fn spirv(tag: u32) -> Vec<u8> {
    [0x0723_0203u32, 0x0001_0000, tag, 8, 0].iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn sampler(seed: u32) -> SamplerState {
    SamplerState {
        flags: 1,
        mag_filter: 1,
        min_filter: 1,
        mipmap_mode: 1,
        address_mode_u: 1 + seed,
        address_mode_v: 2,
        address_mode_w: 3,
        mip_lod_bias: -0.25,
        anisotropy_enable: true,
        max_anisotropy: 16.0,
        compare_enable: true,
        compare_op: 4,
        min_lod: 0.5,
        max_lod: 12.0,
        border_color: 3,
        unnormalized_coordinates: true,
        reduction_mode: Some(2),
    }
}

fn stencil(seed: u32) -> StencilOpState {
    StencilOpState {
        fail_op: 1 + seed,
        pass_op: 2,
        depth_fail_op: 3,
        compare_op: 5,
        compare_mask: 0xf0,
        write_mask: 0x0f,
        reference: 7 + seed,
    }
}

/// A graphics state with every field of the model away from its default.
fn full_state(stages: usize) -> NativePipeline {
    let reference = |a: u32| AttachmentReference { attachment: a, layout: 2, aspect_mask: 1 };
    NativePipeline {
        flags: 0x10,
        stages: (0..stages as u32)
            .map(|i| StageState { flags: i + 1, required_subgroup_size: Some(16 << (i % 2)) })
            .collect(),
        layout: NativeLayout {
            flags: 2,
            set_layouts: vec![
                SetLayout {
                    flags: 2,
                    bindings: vec![SetLayoutBinding {
                        binding: 3,
                        descriptor_type: 1,
                        descriptor_count: 2,
                        stage_flags: 0x11,
                        immutable_samplers: vec![sampler(0), sampler(1)],
                        binding_flags: 0x4,
                    }],
                },
                SetLayout {
                    flags: 0,
                    bindings: vec![SetLayoutBinding {
                        binding: 0,
                        descriptor_type: 6,
                        descriptor_count: 1,
                        stage_flags: 0x1f,
                        immutable_samplers: vec![],
                        binding_flags: 0,
                    }],
                },
            ],
            push_constant_ranges: vec![PushConstantRange { stage_flags: 0x10, offset: 16, size: 48 }],
        },
        graphics: Some(GraphicsState {
            vertex_input_state: Some(VertexInputState {
                flags: 0,
                bindings: vec![VertexBinding { binding: 1, stride: 20, input_rate: 1 }],
                attributes: vec![VertexAttribute { location: 4, binding: 1, format: 103, offset: 12 }],
                divisors: vec![VertexDivisor { binding: 1, divisor: 3 }],
            }),
            input_assembly_state: Some(InputAssemblyState { flags: 0, topology: 10, primitive_restart_enable: true }),
            tessellation_state: Some(TessellationState { flags: 0, patch_control_points: 4, domain_origin: Some(1) }),
            viewport_state: Some(ViewportState {
                flags: 0,
                viewport_count: 1,
                viewports: vec![Viewport {
                    x: 1.5,
                    y: -2.0,
                    width: 640.0,
                    height: -480.0,
                    min_depth: 0.25,
                    max_depth: 0.75,
                }],
                scissor_count: 1,
                scissors: vec![Rect2D { x: -3, y: 4, width: 320, height: 240 }],
                negative_one_to_one: Some(true),
            }),
            rasterization_state: Some(RasterizationState {
                flags: 0,
                depth_clamp_enable: true,
                rasterizer_discard_enable: true,
                polygon_mode: 1,
                cull_mode: 3,
                front_face: 1,
                depth_bias_enable: true,
                depth_bias_constant_factor: 1.5,
                depth_bias_clamp: 0.125,
                depth_bias_slope_factor: -2.0,
                line_width: 2.5,
                line: Some(LineState {
                    line_rasterization_mode: 3,
                    stippled_line_enable: true,
                    line_stipple_factor: 4,
                    line_stipple_pattern: 0xaaaa,
                }),
                provoking_vertex_mode: Some(1),
                conservative: Some(ConservativeState {
                    flags: 0,
                    conservative_rasterization_mode: 2,
                    extra_primitive_overestimation_size: 0.5,
                }),
                depth_clip_enable: Some(true),
                rasterization_stream: Some(1),
            }),
            multisample_state: Some(MultisampleState {
                flags: 0,
                rasterization_samples: 8,
                sample_shading_enable: true,
                min_sample_shading: 0.75,
                sample_mask: vec![0xa5],
                alpha_to_coverage_enable: true,
                alpha_to_one_enable: true,
            }),
            depth_stencil_state: Some(DepthStencilState {
                flags: 0,
                depth_test_enable: true,
                depth_write_enable: true,
                depth_compare_op: 6,
                depth_bounds_test_enable: true,
                stencil_test_enable: true,
                front: stencil(0),
                back: stencil(1),
                min_depth_bounds: 0.125,
                max_depth_bounds: 0.875,
            }),
            color_blend_state: Some(ColorBlendState {
                flags: 0,
                logic_op_enable: true,
                logic_op: 5,
                attachment_count: 1,
                attachments: vec![ColorBlendAttachment {
                    blend_enable: true,
                    src_color_blend_factor: 6,
                    dst_color_blend_factor: 7,
                    color_blend_op: 1,
                    src_alpha_blend_factor: 1,
                    dst_alpha_blend_factor: 9,
                    alpha_blend_op: 4,
                    color_write_mask: 0xb,
                }],
                blend_constants: [0.125, 0.25, 0.5, 1.0],
            }),
            dynamic_states: vec![0, 1, 1000267000],
            render_pass: Some(RenderPassState {
                flags: 0,
                attachments: vec![AttachmentDescription {
                    flags: 1,
                    format: 44,
                    samples: 8,
                    load_op: 1,
                    store_op: 1,
                    stencil_load_op: 2,
                    stencil_store_op: 1,
                    initial_layout: 1,
                    final_layout: 1000001002,
                }],
                subpasses: vec![SubpassDescription {
                    flags: 0,
                    pipeline_bind_point: 0,
                    view_mask: 3,
                    input_attachments: vec![reference(0)],
                    color_attachments: vec![reference(0)],
                    resolve_attachments: vec![reference(u32::MAX)],
                    depth_stencil_attachment: Some(reference(1)),
                    preserve_attachments: vec![2],
                }],
                dependencies: vec![SubpassDependency {
                    src_subpass: u32::MAX,
                    dst_subpass: 0,
                    src_stage_mask: 0x400,
                    dst_stage_mask: 0x400,
                    src_access_mask: 0x100,
                    dst_access_mask: 0x100,
                    dependency_flags: 2,
                    view_offset: -1,
                }],
                correlated_view_masks: vec![3],
            }),
            subpass: 0,
            rendering: Some(RenderingState {
                view_mask: 1,
                color_attachment_formats: vec![44, 0],
                depth_attachment_format: 126,
                stencil_attachment_format: 127,
            }),
        }),
        ray_tracing: None,
    }
}

struct Fixture {
    libs: Vec<Arc<Library>>,
    pipelines: Vec<PipelineDescriptor>,
}

/// A five-stage graphics pipeline with specializations and a compute pipeline, over SPIR-V
/// libraries (one shared by two stages).
fn fixture() -> Fixture {
    let libs: Vec<Arc<Library>> = (0..4).map(|i| Library::spirv(format!("m{i}"), spirv(i))).collect();
    let spec = |id: u32, data: Vec<u8>| {
        Some(Arc::new(Specialization {
            map_entries: vec![
                SpecializationMapEntry { constant_id: id, offset: 0, size: 4 },
                SpecializationMapEntry { constant_id: id + 1, offset: 4, size: 1 },
            ],
            data,
        }))
    };
    let stage = |stage, lib: usize, name: &str, specialization| NativeStage {
        stage,
        function: FunctionDescriptor::library(libs[lib].clone(), name),
        specialization,
    };
    let graphics = NativePipelineDescriptor {
        label: Some("native/five".into()),
        stages: vec![
            stage(ShaderStage::Vertex, 0, "main", spec(1, vec![1, 2, 3, 4, 5])),
            stage(ShaderStage::TessellationControl, 1, "tcs", None),
            stage(ShaderStage::TessellationEvaluation, 1, "tes", None),
            stage(ShaderStage::Geometry, 2, "gs", Some(Arc::new(Specialization::default()))),
            stage(ShaderStage::Fragment, 3, "fs", spec(9, vec![0xff, 0, 0x80, 0x3f, 1, 7])),
        ],
        state: Arc::new(full_state(5)),
    };
    let compute = NativePipelineDescriptor {
        label: Some("native/compute".into()),
        stages: vec![stage(ShaderStage::Compute, 2, "cs", spec(3, vec![0, 0, 0x80, 0x3f, 0]))],
        state: Arc::new(NativePipeline {
            flags: 0x2,
            stages: vec![StageState { flags: 2, required_subgroup_size: Some(32) }],
            layout: full_state(1).layout,
            graphics: None,
            ray_tracing: None,
        }),
    };
    Fixture { libs, pipelines: vec![PipelineDescriptor::Native(graphics), PipelineDescriptor::Native(compute)] }
}

fn native(d: &PipelineDescriptor) -> &NativePipelineDescriptor {
    match d {
        PipelineDescriptor::Native(n) => n,
        other => panic!("not native: {other:?}"),
    }
}

/// Field by field: label, every stage (stage, library bytes, entry point, specialization),
/// the whole state; and the keys.
fn assert_same(a: &PipelineDescriptor, b: &PipelineDescriptor) {
    let (x, y) = (native(a), native(b));
    assert_eq!(x.label, y.label);
    assert_eq!(x.stages.len(), y.stages.len());
    for (s, t) in x.stages.iter().zip(&y.stages) {
        assert_eq!(s.stage, t.stage);
        let ((l1, n1), (l2, n2)) = (s.function.base(), t.function.base());
        assert!(matches!(t.function, FunctionDescriptor::Library { .. }));
        assert_eq!((l1.source(), l1.kind(), n1), (l2.source(), l2.kind(), n2));
        assert_eq!(s.specialization, t.specialization);
    }
    assert_eq!(x.state, y.state);
    let ctx = KeyContext { target_options: 5 };
    assert_eq!(a.stage_keys(&ctx), b.stage_keys(&ctx));
    assert_eq!(a.key(&ctx), b.key(&ctx));
}

fn parse(text: &str) -> Script {
    Script::parse(text, Path::new("native.json"), Path::new(".")).unwrap()
}

#[test]
fn script_native_round_trips_through_every_writer_and_reader() {
    let fx = fixture();
    // A capture's export: libraries inline.
    let labelled: Vec<(Option<String>, &PipelineDescriptor)> =
        fx.pipelines.iter().map(|p| (p.label().map(String::from), p)).collect();
    let exported = write::script_json(&labelled);
    let script = parse(&exported);
    assert_eq!(script.pipelines.len(), 2);
    for (p, want) in script.pipelines.iter().zip(&fx.pipelines) {
        assert_same(p.descriptor.as_ref().unwrap(), want);
    }
    // The worker's reader, from the text with the libraries supplied.
    let lazy = LazyScript::from_text(exported.clone(), Path::new("native.json")).unwrap();
    for (name, lib) in &script.libraries {
        let lib = lib.as_ref().unwrap();
        lazy.supply_library(Library::spirv(name.clone(), lib.source().to_vec()));
    }
    for (i, want) in fx.pipelines.iter().enumerate() {
        let (label, d) = lazy.pipeline(i).unwrap();
        assert_eq!(label.as_deref(), want.label());
        assert_same(&d.unwrap(), want);
    }

    // The pretty and the line writer, libraries by name.
    let libraries: Vec<LibraryEntry> = fx.libs.iter().map(|l| LibraryEntry::inline(l, l.name())).collect();
    let entries: Vec<Pipeline<()>> = fx
        .pipelines
        .iter()
        .map(|p| {
            let n = native(p);
            let stages = n
                .stages
                .iter()
                .map(|s| {
                    let (lib, name) = s.function.base();
                    NativeStageEntry::new(
                        s.stage,
                        Function::library(lib.name(), name),
                        s.specialization.as_deref().cloned(),
                    )
                })
                .collect();
            Pipeline::vulkan(n.label.clone(), stages, (*n.state).clone())
        })
        .collect();
    let pretty = write::pretty(&libraries, &entries).unwrap();
    let mut w = LineWriter::new(Vec::new()).unwrap();
    for l in &libraries {
        w.library(l).unwrap();
    }
    let mut lines = w.pipelines().unwrap();
    for p in &entries {
        lines.pipeline(p).unwrap();
    }
    let lined = String::from_utf8(lines.finish().unwrap()).unwrap();
    assert_eq!(lined.lines().count(), 5 + libraries.len() + entries.len(), "one entry per line:\n{lined}");
    for text in [&pretty, &lined] {
        let script = parse(text);
        for (p, want) in script.pipelines.iter().zip(&fx.pipelines) {
            assert_same(p.descriptor.as_ref().unwrap(), want);
        }
    }
    // The spelling is the archive types' serde: Vulkan member names, hexadecimal data.
    let v: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    let body = &v["pipelines"][0]["vulkan"];
    assert_eq!(body["stages"][0]["stage"], "vertex");
    assert_eq!(body["stages"][1]["stage"], "tessellation_control");
    assert_eq!(body["stages"][0]["function"], serde_json::json!({"library": "m0", "function": "main"}));
    assert_eq!(body["stages"][0]["specialization"]["data"], "0102030405");
    assert_eq!(body["stages"][0]["specialization"]["mapEntries"][1]["constantId"], 2);
    assert!(body["stages"][1].get("specialization").is_none());
    assert_eq!(body["state"]["stages"][1]["requiredSubgroupSize"], 32);
    let g = &body["state"]["graphics"];
    assert_eq!(g["rasterizationState"]["line"]["lineStipplePattern"], 0xaaaa);
    assert_eq!(g["renderPass"]["subpasses"][0]["viewMask"], 3);
    assert_eq!(body["state"]["layout"]["setLayouts"][0]["bindings"][0]["immutableSamplers"][1]["addressModeU"], 2);
}

#[test]
fn script_native_keys_follow_the_state_and_the_specialization() {
    let fx = fixture();
    let ctx = KeyContext { target_options: 1 };
    let base = fx.pipelines[0].key(&ctx);
    let mut other = native(&fx.pipelines[0]).clone();
    Arc::make_mut(&mut other.state).graphics.as_mut().unwrap().rasterization_state.as_mut().unwrap().line_width = 3.0;
    assert_ne!(PipelineDescriptor::Native(other).key(&ctx), base);
    let mut other = native(&fx.pipelines[0]).clone();
    other.stages[0].specialization = None;
    assert_ne!(PipelineDescriptor::Native(other.clone()).key(&ctx), base);
    other.label = Some("renamed".into());
    assert_eq!(PipelineDescriptor::Native(other.clone()).key(&ctx), PipelineDescriptor::Native(other).key(&ctx));
}

#[test]
fn script_native_pipelines_are_never_expanded() {
    let fx = fixture();
    let labelled: Vec<(Option<String>, &PipelineDescriptor)> =
        fx.pipelines.iter().map(|p| (p.label().map(String::from), p)).collect();
    let script = parse(&write::script_json(&labelled));
    let expansion: Expansion = serde_json::from_str(r#"{"formats": ["rgba8unorm", "bgra8unorm"]}"#).unwrap();
    let expanded = expansion.apply(&script);
    assert!(expanded.variants.is_empty() && expanded.replaced.is_empty() && expanded.errors.is_empty());
    for p in &script.pipelines {
        let d = p.descriptor.as_ref().unwrap();
        assert!(!d.needs_libraries());
        assert!(expansion.variants(d, &p.display_name()).is_none());
    }
}

/// One native pipeline over a SPIR-V library `s` and a WGSL library `w`, its body edited by
/// `edit`; the error of pipeline 0.
fn error_of(edit: impl FnOnce(&mut serde_json::Value)) -> granary::script::ScriptError {
    let spv = base64_of(&spirv(0));
    let mut doc = serde_json::json!({"granary_script": 1,
        "libraries": [{"name": "s", "spirv_base64": spv}, {"name": "w", "kind": "wgsl", "source": "@compute @workgroup_size(1) fn main() {}"}],
        "pipelines": [{"label": "p", "vulkan": {
            "stages": [{"stage": "vertex", "function": {"library": "s", "function": "main"},
                        "specialization": {"mapEntries": [{"constantId": 0, "offset": 0, "size": 4}], "data": "00000000"}},
                       {"stage": "fragment", "function": {"library": "s", "function": "fs"}}],
            "state": {"flags": 0, "stages": [{"flags": 0}, {"flags": 0}], "graphics": {"subpass": 0}}}}]});
    // The unedited document loads.
    let ok = parse(&doc.to_string());
    assert!(ok.pipelines[0].descriptor.is_ok(), "{:?}", ok.pipelines[0].descriptor);
    edit(&mut doc["pipelines"][0]);
    let script = parse(&doc.to_string());
    script.pipelines[0].descriptor.as_ref().unwrap_err().clone()
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An edit of a pipeline entry.
type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;

#[test]
fn script_native_errors_name_the_json_path() {
    let cases: Vec<(Edit, &str, &str)> = vec![
        (
            Box::new(|p| p["vulkan"]["state"]["graphics"]["rasterizationState"] = serde_json::json!({"polygonMod": 1})),
            "pipelines[0].vulkan.state.graphics.rasterizationState.polygonMod",
            "unknown field `polygonMod`",
        ),
        (Box::new(|p| p["vulkan"]["extra"] = 1.into()), "pipelines[0].vulkan.extra", "unknown field `extra`"),
        (
            Box::new(|p| p["vulkan"]["stages"][1]["function"]["library"] = "w".into()),
            "pipelines[0].vulkan.stages[1].function.library",
            "library 'w' is wgsl",
        ),
        (
            Box::new(|p| p["vulkan"]["state"]["stages"] = serde_json::json!([{"flags": 0}])),
            "pipelines[0].vulkan.state.stages",
            "1 entries for 2 stages",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][0]["specialization"]["data"] = "0g000000".into()),
            "pipelines[0].vulkan.stages[0].specialization.data",
            "is not hexadecimal bytes",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][0]["specialization"]["data"] = "000".into()),
            "pipelines[0].vulkan.stages[0].specialization.data",
            "even number of digits",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][0]["specialization"]["data"] = "0000".into()),
            "pipelines[0].vulkan.stages[0].specialization",
            "does not fit 2 data bytes",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][1]["stage"] = "vertex".into()),
            "pipelines[0].vulkan.stages[1].stage",
            "the vertex stage is given twice (stages[0] and stages[1])",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][1]["stage"] = "compute".into()),
            "pipelines[0].vulkan.stages[1].stage",
            "a compute stage in a graphics pipeline",
        ),
        (
            Box::new(|p| p["vulkan"]["state"].as_object_mut().unwrap().remove("graphics").map(drop).unwrap()),
            "pipelines[0].vulkan.stages[0].stage",
            "exactly one compute stage, not a vertex stage",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][0]["stage"] = "hull".into()),
            "pipelines[0].vulkan.stages[0].stage",
            "hull",
        ),
        (
            Box::new(
                |p| p["vulkan"]["stages"][1]["function"] = serde_json::json!({"specialize": {"library": "s", "function": "fs"}, "constants": [{"id": 1, "u32": 2}]}),
            ),
            "pipelines[0].vulkan.stages[1].function",
            "its specialization constants are the stage's \"specialization\"",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][1]["function"]["library"] = "nope".into()),
            "pipelines[0].vulkan.stages[1].function.library",
            "unknown library 'nope'",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"] = serde_json::json!([])),
            "pipelines[0].vulkan.stages",
            "at least one stage",
        ),
        (Box::new(|p| p["layout"] = serde_json::json!({"bindings": []})), "pipelines[0].layout", "vulkan.state.layout"),
        (
            Box::new(|p| p["compute"] = serde_json::json!({"function": {"library": "s", "function": "cs"}})),
            "pipelines[0]",
            "exactly one of",
        ),
        (
            Box::new(|p| {
                p["vulkan"]["state"]["layout"] =
                    serde_json::json!({"setLayouts": [{"bindings": [{"descriptorType": "x"}]}]})
            }),
            "pipelines[0].vulkan.state.layout.setLayouts[0].bindings[0].descriptorType",
            "invalid type",
        ),
    ];
    for (edit, path, message) in cases {
        let e = error_of(edit);
        assert_eq!(e.json_path, path, "{e}");
        assert!(e.message.contains(message), "{path}: {e}");
        assert!(e.to_string().contains("native.json"), "{e}");
    }
}

/// The example of docs/FORMAT.md §2.6 loads as written.
#[test]
fn script_native_format_example_loads() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FORMAT.md")).unwrap();
    let section = &doc[doc.find("### 2.6 Native Vulkan pipelines").expect("FORMAT.md §2.6")..];
    let start = section.find("```json\n").unwrap() + 8;
    let entry: serde_json::Value = serde_json::from_str(&section[start..start + section[start..].find("```").unwrap()])
        .expect("the example is JSON");
    let spv = base64_of(&spirv(0));
    let script = serde_json::json!({"granary_script": 1, "pipelines": [entry],
        "libraries": [{"name": "1111000000000001", "spirv_base64": spv}, {"name": "1111000000000002", "spirv_base64": spv}]});
    let script = parse(&script.to_string());
    let d = script.pipelines[0].descriptor.as_ref().unwrap();
    let n = native(d);
    assert_eq!(n.stages.len(), 2);
    assert_eq!(n.stages[1].specialization.as_ref().unwrap().data, [0, 1, 0, 0]);
    let g = n.state.graphics.as_ref().unwrap();
    assert_eq!(g.rendering.as_ref().unwrap().color_attachment_formats, [50]);
    assert_eq!(n.state.layout.set_layouts[0].bindings[1].immutable_samplers[0].max_anisotropy, 16.0);
}

/// A ray-tracing module of granary-vulkan's native fixtures (glslang's SPIR-V).
fn ray_tracing_spirv(file: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../granary-vulkan/tests/native").join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ray-tracing example of docs/FORMAT.md §2.6 (its second JSON block), with its libraries.
fn ray_tracing_example() -> serde_json::Value {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FORMAT.md")).unwrap();
    let section = &doc[doc.find("### 2.6 Native Vulkan pipelines").expect("FORMAT.md §2.6")..];
    let first = section.find("```json\n").unwrap() + 8;
    let start = first + section[first..].find("```json\n").expect("a second example") + 8;
    let entry: serde_json::Value = serde_json::from_str(&section[start..start + section[start..].find("```").unwrap()])
        .expect("the example is JSON");
    let lib = |name: &str| serde_json::json!({"name": name, "spirv_base64": base64_of(&ray_tracing_spirv(&format!("{name}.spv")))});
    serde_json::json!({"granary_script": 1, "pipelines": [entry],
        "libraries": [lib("rt.rgen"), lib("rt.rmiss"), lib("rt.rchit")]})
}

/// The ray-tracing example of docs/FORMAT.md §2.6 loads as written, harvests with the `none`
/// backend (the front end reflects its three ray-tracing stages, the link check accepts its
/// groups) and is archived as a ray-tracing pipeline with its state.
#[test]
fn script_native_ray_tracing_example_loads_and_harvests() {
    let text = ray_tracing_example().to_string();
    let script = parse(&text);
    let d = script.pipelines[0].descriptor.as_ref().unwrap();
    assert_eq!(d.kind(), granary_archive::PipelineKind::RayTracing);
    let n = native(d);
    let stages: Vec<ShaderStage> = n.stages.iter().map(|s| s.stage).collect();
    assert_eq!(stages, [ShaderStage::RayGeneration, ShaderStage::Miss, ShaderStage::ClosestHit]);
    let rt = n.state.ray_tracing.as_ref().expect("a ray-tracing state");
    assert_eq!((rt.groups.len(), rt.groups[2].group_type, rt.groups[2].closest_hit_shader), (3, 1, 2));
    if !common::tool_available("spirv-val", "spirv-tools") {
        return;
    }
    let compiler = granary::compiler::Compiler::new(granary::compiler::CompilerOptions::default());
    let compiled = compiler.compile(d).expect("the none backend compiles it");
    assert_eq!(compiled.kind, granary_archive::PipelineKind::RayTracing);
    assert_eq!(compiled.stages.len(), 3);
    let state = granary_archive::native::NativePipeline::decode(compiled.state.as_ref().unwrap().bytes()).unwrap();
    assert_eq!(&state, &*n.state);
}

/// Ray-tracing scripts are checked as Vulkan's valid usage asks, naming the JSON path.
#[test]
fn script_native_ray_tracing_errors_name_the_path() {
    let cases: Vec<(Edit, &str, &str)> = vec![
        (
            Box::new(|p| p["vulkan"]["state"]["rayTracing"]["groups"][1]["generalShader"] = 2.into()),
            "pipelines[0].vulkan.state",
            "rayTracing.groups[1].generalShader is stages[2], a closest_hit stage",
        ),
        (
            Box::new(|p| p["vulkan"]["stages"][1]["stage"] = "fragment".into()),
            "pipelines[0].vulkan.stages[1].stage",
            "a fragment stage in a ray-tracing pipeline",
        ),
        (
            Box::new(|p| p["vulkan"]["state"]["rayTracing"]["groups"] = serde_json::json!([])),
            "pipelines[0].vulkan.state",
            "without shader groups",
        ),
        (
            Box::new(|p| p["vulkan"]["state"]["rayTracing"]["dynamicStates"] = serde_json::json!([0])),
            "pipelines[0].vulkan.state",
            "allows only RAY_TRACING_PIPELINE_STACK_SIZE_KHR",
        ),
        (
            Box::new(|p| {
                p["vulkan"]["state"]["rayTracing"]["libraryInterface"] =
                    serde_json::json!({"maxPipelineRayPayloadSize": 12, "maxPipelineRayHitAttributeSize": 8})
            }),
            "pipelines[0].vulkan.state",
            "libraryInterface is given but flags lacks LIBRARY_KHR",
        ),
        (
            Box::new(|p| p["vulkan"]["state"]["graphics"] = serde_json::json!({})),
            "pipelines[0].vulkan.state",
            "\"graphics\" or \"rayTracing\", not both",
        ),
        (
            Box::new(|p| p["vulkan"]["state"].as_object_mut().unwrap().remove("rayTracing").map(drop).unwrap()),
            "pipelines[0].vulkan.stages[0].stage",
            "exactly one compute stage, not a ray_generation stage",
        ),
    ];
    for (edit, path, message) in cases {
        let mut doc = ray_tracing_example();
        edit(&mut doc["pipelines"][0]);
        let e = match Script::parse(&doc.to_string(), std::path::Path::new("rt.json"), std::path::Path::new(".")) {
            Ok(s) => s.pipelines[0].descriptor.clone().expect_err("refused"),
            Err(e) => e,
        };
        assert_eq!(e.json_path, path, "{e}");
        assert!(e.message.contains(message), "{path}: {e}");
    }
}
