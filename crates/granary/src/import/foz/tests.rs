//! Tests of the import, and the generator of the checked-in fixture
//! (`crates/granary-cli/tests/fixtures/foz/renderer.foz`, made from the bundled example's
//! SPIR-V; regenerate with `cargo test -p granary --lib import_foz_write_fixture -- --ignored`).

use super::container::tag;
use super::container::writer::{entry, header, Store};
use super::*;
use serde_json::{json, Map};

/// SPIR-V of one of the example renderer's WGSL files, every entry point, overrides at
/// their defaults.
pub(crate) fn example_spirv(file: &str) -> Vec<u32> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/renderer/shaders").join(file);
    let src = std::fs::read_to_string(&path).unwrap();
    let m = naga::front::wgsl::parse_str(&src).unwrap();
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&m)
        .unwrap();
    let (m, info) = naga::back::pipeline_constants::process_overrides(&m, &info, None, &Default::default()).unwrap();
    naga::back::spv::write_vec(&m, &info, &naga::back::spv::Options::default(), None).unwrap()
}

const MESH: u64 = 0x1111_0000_0000_0001;
const PBR: u64 = 0x1111_0000_0000_0002;
const CULL: u64 = 0x1111_0000_0000_0003;
const PASS: u64 = 0x2222_0000_0000_0001;

fn b64(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn module_base64(hash: u64, words: &[u32]) -> Vec<u8> {
    serde_json::to_vec(&json!({"version": 6, "shaderModules": {hex(hash): {"flags": 0, "codeSize": words.len() * 4, "code": b64(words)}}}))
        .unwrap()
}

fn module_varint(hash: u64, words: &[u32]) -> Vec<u8> {
    let tail = spirv::encode_varint(words);
    let mut p = serde_json::to_vec(&json!({"version": 6, "shaderModules": {hex(hash): {
        "flags": 0, "codeSize": words.len() * 4, "varintOffset": 0, "varintSize": tail.len()}}}))
    .unwrap();
    p.push(0);
    p.extend(tail);
    p
}

fn stage(bit: u64, module: u64, name: &str) -> Value {
    json!({"flags": 0, "stage": bit, "module": hex(module), "name": name})
}

fn opaque_state() -> Map<String, Value> {
    json!({
        "flags": 0, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "layout": "0000000000000000", "renderPass": "0000000000000000", "subpass": 0,
        "vertexInputState": {"flags": 0,
            "attributes": [
                {"location": 0, "binding": 0, "offset": 0, "format": 106},
                {"location": 1, "binding": 0, "offset": 12, "format": 106},
                {"location": 2, "binding": 0, "offset": 24, "format": 103},
                {"location": 3, "binding": 0, "offset": 32, "format": 109}],
            "bindings": [{"binding": 0, "stride": 48, "inputRate": 0}]},
        "inputAssemblyState": {"flags": 0, "topology": 3, "primitiveRestartEnable": 0},
        "viewportState": {"flags": 0, "viewportCount": 1, "scissorCount": 1},
        "rasterizationState": {"flags": 0, "depthClampEnable": 0, "rasterizerDiscardEnable": 0, "polygonMode": 0,
            "cullMode": 2, "frontFace": 0, "depthBiasEnable": 0, "depthBiasConstantFactor": 0.0,
            "depthBiasClamp": 0.0, "depthBiasSlopeFactor": 0.0, "lineWidth": 1.0},
        "multisampleState": {"flags": 0, "rasterizationSamples": 1, "sampleShadingEnable": 0, "minSampleShading": 0.0,
            "alphaToCoverageEnable": 0, "alphaToOneEnable": 0},
        "depthStencilState": {"flags": 0, "depthTestEnable": 1, "depthWriteEnable": 1, "depthCompareOp": 4,
            "depthBoundsTestEnable": 0, "stencilTestEnable": 0,
            "front": {"failOp": 0, "passOp": 0, "depthFailOp": 0, "compareOp": 7, "compareMask": 255, "writeMask": 255, "reference": 0},
            "back": {"failOp": 0, "passOp": 0, "depthFailOp": 0, "compareOp": 7, "compareMask": 255, "writeMask": 255, "reference": 0},
            "minDepthBounds": 0.0, "maxDepthBounds": 1.0},
        "colorBlendState": {"flags": 0, "logicOpEnable": 0, "logicOp": 0, "blendConstants": [0.0, 0.0, 0.0, 0.0],
            "attachments": [{"blendEnable": 1, "srcColorBlendFactor": 6, "dstColorBlendFactor": 7, "colorBlendOp": 0,
                "srcAlphaBlendFactor": 1, "dstAlphaBlendFactor": 7, "alphaBlendOp": 0, "colorWriteMask": 15}]},
        "dynamicState": {"flags": 0, "dynamicState": [0, 1]},
        "stages": [stage(1, MESH, "vs_main"), stage(0x10, PBR, "fs_main")],
        "pNext": [{"sType": STYPE_RENDERING, "viewMask": 0, "colorAttachmentFormats": [50],
                   "depthAttachmentFormat": 126, "stencilAttachmentFormat": 0}],
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn graphics(hash: u64, info: Map<String, Value>) -> (u32, u64, Vec<u8>) {
    let doc = json!({"version": 6, "graphicsPipelines": {hex(hash): Value::Object(info)}});
    (tag::GRAPHICS_PIPELINE, hash, serde_json::to_vec(&doc).unwrap())
}

/// The entries of the real-world-shaped database: modules (base64 and varint), a render
/// pass, pipelines that import and pipelines that must be skipped, a linked library pair.
pub(crate) fn fixture_entries() -> Vec<(u32, u64, Vec<u8>)> {
    let mut e = vec![
        (tag::SHADER_MODULE, MESH, module_varint(MESH, &example_spirv("mesh_static.wgsl"))),
        (tag::SHADER_MODULE, PBR, module_base64(PBR, &example_spirv("pbr.wgsl"))),
        (tag::SHADER_MODULE, CULL, module_base64(CULL, &example_spirv("light_cull.wgsl"))),
        (
            tag::RENDER_PASS,
            PASS,
            serde_json::to_vec(&json!({"version": 6, "renderPasses": {hex(PASS): {"flags": 0,
                "attachments": [{"flags": 0, "format": 126, "samples": 1, "loadOp": 1, "storeOp": 0,
                    "stencilLoadOp": 2, "stencilStoreOp": 1, "initialLayout": 0, "finalLayout": 3}],
                "subpasses": [{"flags": 0, "pipelineBindPoint": 0, "depthStencilAttachment": {"attachment": 0, "layout": 3}}],
                "dependencies": []}}}))
            .unwrap(),
        ),
    ];
    // 1. Opaque PBR with dynamic rendering and alpha blending.
    e.push(graphics(0xa000_0000_0000_0001, opaque_state()));
    // 2. Depth prepass through a render pass, no fragment stage, depth bias.
    let mut prepass = opaque_state();
    prepass.insert("renderPass".into(), json!(hex(PASS)));
    prepass.insert("stages".into(), json!([stage(1, MESH, "vs_depth")]));
    prepass.remove("colorBlendState");
    prepass.remove("pNext");
    prepass["vertexInputState"]["attributes"] = json!([{"location": 0, "binding": 0, "offset": 0, "format": 106}]);
    prepass["rasterizationState"]["depthBiasEnable"] = json!(1);
    prepass["rasterizationState"]["depthBiasConstantFactor"] = json!(2.0);
    prepass["rasterizationState"]["depthBiasSlopeFactor"] = json!(1.5);
    e.push(graphics(0xa000_0000_0000_0002, prepass));
    // 3. A tessellation stage: skipped.
    let mut tess = opaque_state();
    tess["stages"].as_array_mut().unwrap().push(stage(0x2, MESH, "tcs"));
    e.push(graphics(0xa000_0000_0000_0003, tess));
    // 4. Logic op: skipped.
    let mut logic = opaque_state();
    logic["colorBlendState"]["logicOpEnable"] = json!(1);
    e.push(graphics(0xa000_0000_0000_0004, logic));
    // 5. An unsupported colour format (R16G16B16A16_SNORM): skipped.
    let mut fmt = opaque_state();
    fmt["pNext"][0]["colorAttachmentFormats"] = json!([92]);
    e.push(graphics(0xa000_0000_0000_0005, fmt));
    // 6-8. Graphics pipeline libraries: vertex input + pre-rasterization, fragment + output,
    // linked into one pipeline.
    let mut lib_a = opaque_state();
    lib_a.insert("flags".into(), json!(LIBRARY_BIT));
    lib_a.insert("stages".into(), json!([stage(1, MESH, "vs_main")]));
    for k in ["depthStencilState", "colorBlendState", "multisampleState"] {
        lib_a.remove(k);
    }
    lib_a.insert("pNext".into(), json!([{"sType": STYPE_GPL, "flags": 3}]));
    e.push(graphics(0xb000_0000_0000_0001, lib_a));
    let mut lib_b = opaque_state();
    lib_b.insert("flags".into(), json!(LIBRARY_BIT));
    lib_b.insert("stages".into(), json!([stage(0x10, PBR, "fs_main")]));
    for k in ["vertexInputState", "inputAssemblyState", "rasterizationState"] {
        lib_b.remove(k);
    }
    e.push(graphics(0xb000_0000_0000_0002, lib_b));
    let linked = json!({"flags": 0, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "layout": "0000000000000000", "renderPass": "0000000000000000", "subpass": 0, "stages": [],
        "pNext": [{"sType": STYPE_LIBRARY, "libraries": [hex(0xb000_0000_0000_0001), hex(0xb000_0000_0000_0002)]}]});
    e.push(graphics(0xa000_0000_0000_0006, linked.as_object().cloned().unwrap()));
    // Compute, with a specialization constant the module does not declare (ignored, as
    // Vulkan ignores it).
    let compute = json!({"version": 6, "computePipelines": {hex(0xc000_0000_0000_0001): {
        "flags": 0, "layout": "0000000000000000", "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "stage": {"flags": 0, "stage": 32, "module": hex(CULL), "name": "cs_cull_lights",
            "specializationInfo": {"dataSize": 4, "data": "AAEAAA==",
                "mapEntries": [{"constantID": 7, "offset": 0, "size": 4}]}}}}});
    e.push((tag::COMPUTE_PIPELINE, 0xc000_0000_0000_0001, serde_json::to_vec(&compute).unwrap()));
    e.push((tag::RAYTRACING_PIPELINE, 0xd000_0000_0000_0001, br#"{"version":6,"raytracingPipelines":{}}"#.to_vec()));
    e
}

/// The fixture database: entries alternate deflated and raw, with and without CRC.
pub(crate) fn fixture_bytes() -> Vec<u8> {
    let mut b = header(6);
    for (i, (t, h, p)) in fixture_entries().into_iter().enumerate() {
        entry(&mut b, t, h, &p, Store { deflate: i % 2 == 0, crc: i % 3 != 0 });
    }
    b
}

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../granary-cli/tests/fixtures/foz/renderer.foz")
}

#[test]
#[ignore = "writes the checked-in fixture; run once with --ignored"]
fn import_foz_write_fixture() {
    std::fs::write(fixture_path(), fixture_bytes()).unwrap();
}

#[test]
fn import_foz_fixture_is_what_the_generator_writes() {
    let on_disk = std::fs::read(fixture_path()).unwrap();
    assert!(
        on_disk == fixture_bytes(),
        "regenerate: cargo test -p granary --lib import_foz_write_fixture -- --ignored"
    );
}

#[test]
fn import_foz_fixture_imports_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.foz");
    std::fs::write(&db, fixture_bytes()).unwrap();
    let out = dir.path().join("out");
    let r = import(&[db], &out).unwrap();
    assert!(r.intact(), "{r:?}");
    assert_eq!(r.libraries, 2);
    assert_eq!(
        r.pipelines,
        ["foz/a000000000000001", "foz/a000000000000002", "foz/a000000000000006", "foz/c000000000000001"]
    );
    assert_eq!(r.modules, 3);
    let reasons: Vec<(&str, &str)> = r.skipped.iter().map(|s| (s.hash.as_str(), s.reason.as_str())).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons[0].1.contains("tessellation control stage"), "{reasons:?}");
    assert!(reasons[1].1.contains("logic ops"), "{reasons:?}");
    assert!(reasons[2].1.contains("colour format 92"), "{reasons:?}");
    assert!(reasons[3].1.contains("ray tracing"), "{reasons:?}");
    let script = crate::script::Script::load(&out.join("pipelines.json")).unwrap();
    for (name, lib) in &script.libraries {
        assert!(lib.is_ok(), "{name}: {lib:?}");
    }
    assert_eq!(script.pipelines.len(), 4);
    for p in &script.pipelines {
        assert!(p.descriptor.is_ok(), "{}: {:?}", p.display_name(), p.descriptor);
    }
    let text: Value = serde_json::from_str(&std::fs::read_to_string(out.join("pipelines.json")).unwrap()).unwrap();
    let opaque = &text["pipelines"][0]["render"];
    assert_eq!(opaque["color_attachments"][0]["format"], "bgra8unorm-srgb");
    assert_eq!(opaque["color_attachments"][0]["blend"]["color"]["src"], "src-alpha");
    assert_eq!(opaque["depth_stencil"]["depth_compare"], "greater");
    assert_eq!(opaque["vertex_buffers"][0]["attributes"][3]["format"], "float32x4");
    let prepass = &text["pipelines"][1]["render"];
    assert!(prepass.get("fragment").is_none());
    assert_eq!(prepass["depth_stencil"]["depth_bias"], 2);
    // The linked pipeline equals the monolithic one.
    assert_eq!(text["pipelines"][2]["render"], *opaque);
}

#[test]
fn import_foz_spec_constants_take_the_declared_type() {
    // A hand-assembled module: %float = OpTypeFloat 32; %c = OpSpecConstant %float 1.0;
    // OpDecorate %c SpecId 3; %b = OpSpecConstantTrue %bool; OpDecorate %b SpecId 4.
    let words = vec![
        0x0723_0203,
        0x0001_0000,
        0,
        10,
        0,
        (4 << 16) | 71,
        3,
        1,
        3,
        (4 << 16) | 71,
        5,
        1,
        4,
        (2 << 16) | 20,
        4,
        (3 << 16) | 22,
        2,
        32,
        (4 << 16) | 50,
        2,
        3,
        0x3f80_0000,
        (3 << 16) | 48,
        4,
        5,
    ];
    let t = spirv::spec_types(&words);
    assert_eq!(t.get(&3), Some(&spirv::SpecType::F32));
    assert_eq!(t.get(&4), Some(&spirv::SpecType::Bool));
    let mut c = Collected::default();
    c.modules.insert(1, words);
    let conv = Converter { c: &c };
    let data = base64::engine::general_purpose::STANDARD.encode([0, 0, 0, 0x40, 1, 0, 0, 0]);
    let s = json!({"stage": 32, "module": hex(1), "name": "main", "specializationInfo": {"dataSize": 8, "data": data,
        "mapEntries": [{"constantID": 3, "offset": 0, "size": 4}, {"constantID": 4, "offset": 4, "size": 4}]}});
    let (f, _) = conv.function(&s).unwrap();
    assert_eq!(serde_json::to_value(&f).unwrap()["constants"], json!([{"id": 3, "f32": 2.0}, {"id": 4, "bool": true}]));
    let bad = json!({"stage": 32, "module": hex(1), "specializationInfo": {"data": data,
        "mapEntries": [{"constantID": 3, "offset": 6, "size": 4}]}});
    assert!(conv.function(&bad).unwrap_err().contains("outside the data"));
}
