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
const SHADOW_SAMPLER: u64 = 0x3333_0000_0000_0001;
const YCBCR_SAMPLER: u64 = 0x3333_0000_0000_0002;
const SET_VIEW: u64 = 0x4444_0000_0000_0001;
const SET_OBJECT: u64 = 0x4444_0000_0000_0002;
const SET_MATERIAL: u64 = 0x4444_0000_0000_0003;
const SET_CULL: u64 = 0x4444_0000_0000_0004;
const SET_YCBCR: u64 = 0x4444_0000_0000_0005;
const LAYOUT_PBR: u64 = 0x5555_0000_0000_0001;
const LAYOUT_DEPTH: u64 = 0x5555_0000_0000_0002;
const LAYOUT_CULL: u64 = 0x5555_0000_0000_0003;
const LAYOUT_YCBCR: u64 = 0x5555_0000_0000_0004;
const LAYOUT_RT: u64 = 0x5555_0000_0000_0005;
const SET_RT: u64 = 0x4444_0000_0000_0006;
const RT_GEN: u64 = 0x1111_0000_0000_0004;
const RT_MISS: u64 = 0x1111_0000_0000_0005;
const RT_CHIT: u64 = 0x1111_0000_0000_0006;
const RT_CALL: u64 = 0x1111_0000_0000_0007;
/// The ray-tracing library the fixture's ray-tracing pipeline links.
const RT_LIBRARY: u64 = 0xd000_0000_0000_0002;

/// A ray-tracing module of granary-vulkan's native fixtures (glslang's SPIR-V), as words.
pub(crate) fn ray_tracing_spirv(file: &str) -> Vec<u32> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../granary-vulkan/tests/native").join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

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

fn one(key: &str, hash: u64, v: Value) -> Vec<u8> {
    let mut m = Map::new();
    m.insert(hex(hash), v);
    serde_json::to_vec(&json!({"version": 6, key: m})).unwrap()
}

/// A descriptor set layout of `(binding, VkDescriptorType, VkShaderStageFlags, immutable
/// sampler)` entries.
fn set_layout(bindings: &[(u32, u32, u32, Option<u64>)]) -> Value {
    let bindings: Vec<Value> = bindings
        .iter()
        .map(|&(binding, ty, stages, sampler)| {
            let mut b = json!({"descriptorType": ty, "descriptorCount": 1, "stageFlags": stages, "binding": binding});
            if let Some(s) = sampler {
                b["immutableSamplers"] = json!([hex(s)]);
            }
            b
        })
        .collect();
    json!({"flags": 0, "bindings": bindings})
}

fn sampler_json() -> Value {
    json!({"flags": 0, "minFilter": 1, "magFilter": 1, "maxAnisotropy": 1.0, "compareOp": 4, "anisotropyEnable": 0,
        "mipmapMode": 0, "addressModeU": 2, "addressModeV": 2, "addressModeW": 2, "borderColor": 0,
        "unnormalizedCoordinates": 0, "compareEnable": 1, "mipLodBias": 0.0, "minLod": 0.0, "maxLod": 0.0})
}

fn opaque_state() -> Map<String, Value> {
    json!({
        "flags": 0, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "layout": hex(LAYOUT_PBR), "renderPass": "0000000000000000", "subpass": 0,
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
        "pNext": [{"sType": vk::stype::RENDERING, "viewMask": 0, "colorAttachmentFormats": [50],
                   "depthAttachmentFormat": 126, "stencilAttachmentFormat": 0}],
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn graphics(hash: u64, info: Map<String, Value>) -> (u32, u64, Vec<u8>) {
    (tag::GRAPHICS_PIPELINE, hash, one("graphicsPipelines", hash, Value::Object(info)))
}

/// The entries of the real-world-shaped database: modules (base64 and varint), samplers,
/// descriptor set and pipeline layouts that match the example's shaders, a version-1 render
/// pass, pipelines that import (among them a linked library pair) and pipelines that must be
/// skipped.
pub(crate) fn fixture_entries() -> Vec<(u32, u64, Vec<u8>)> {
    const VS: u32 = 0x1;
    const FS: u32 = 0x10;
    const CS: u32 = 0x20;
    const UNIFORM: u32 = 6;
    const STORAGE: u32 = 7;
    const IMAGE: u32 = 2;
    const SAMPLER: u32 = 0;
    let mut ycbcr = sampler_json();
    ycbcr["pNext"] = json!([{"sType": 1000156001, "conversion": "6666000000000001"}]);
    let mut e = vec![
        (tag::SHADER_MODULE, MESH, module_varint(MESH, &example_spirv("mesh_static.wgsl"))),
        (tag::SHADER_MODULE, PBR, module_base64(PBR, &example_spirv("pbr.wgsl"))),
        (tag::SHADER_MODULE, CULL, module_base64(CULL, &example_spirv("light_cull.wgsl"))),
        (tag::SHADER_MODULE, RT_GEN, module_base64(RT_GEN, &ray_tracing_spirv("rt.rgen.spv"))),
        (tag::SHADER_MODULE, RT_MISS, module_base64(RT_MISS, &ray_tracing_spirv("rt.rmiss.spv"))),
        (tag::SHADER_MODULE, RT_CHIT, module_base64(RT_CHIT, &ray_tracing_spirv("rt.rchit.spv"))),
        (tag::SHADER_MODULE, RT_CALL, module_base64(RT_CALL, &ray_tracing_spirv("rt.rcall.spv"))),
        (tag::SAMPLER, SHADOW_SAMPLER, one("samplers", SHADOW_SAMPLER, sampler_json())),
        (tag::SAMPLER, YCBCR_SAMPLER, one("samplers", YCBCR_SAMPLER, ycbcr)),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_VIEW,
            one(
                "setLayouts",
                SET_VIEW,
                set_layout(&[
                    (0, UNIFORM, VS | FS, None),
                    (1, UNIFORM, FS, None),
                    (2, IMAGE, FS, None),
                    (3, SAMPLER, FS, Some(SHADOW_SAMPLER)),
                    (4, IMAGE, FS, None),
                    (5, IMAGE, FS, None),
                    (6, IMAGE, FS, None),
                    (7, SAMPLER, FS, None),
                ]),
            ),
        ),
        (tag::DESCRIPTOR_SET_LAYOUT, SET_OBJECT, one("setLayouts", SET_OBJECT, set_layout(&[(0, UNIFORM, VS, None)]))),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_MATERIAL,
            one(
                "setLayouts",
                SET_MATERIAL,
                set_layout(&[
                    (0, UNIFORM, FS, None),
                    (1, IMAGE, FS, None),
                    (2, SAMPLER, FS, None),
                    (3, IMAGE, FS, None),
                    (4, IMAGE, FS, None),
                    (5, IMAGE, FS, None),
                    (6, IMAGE, FS, None),
                    (7, SAMPLER, FS, None),
                ]),
            ),
        ),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_CULL,
            one(
                "setLayouts",
                SET_CULL,
                set_layout(&[
                    (0, UNIFORM, CS, None),
                    (1, UNIFORM, CS, None),
                    (2, STORAGE, CS, None),
                    (3, IMAGE, CS, None),
                    (4, STORAGE, CS, None),
                    (5, STORAGE, CS, None),
                    (6, STORAGE, CS, None),
                ]),
            ),
        ),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_RT,
            // An acceleration structure and a storage image for the ray-generation stage.
            one("setLayouts", SET_RT, set_layout(&[(0, 1000150000, 0x100, None), (1, 3, 0x100, None)])),
        ),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_YCBCR,
            one("setLayouts", SET_YCBCR, set_layout(&[(0, 1, FS, Some(YCBCR_SAMPLER))])),
        ),
    ];
    for (h, sets) in [
        (LAYOUT_PBR, vec![SET_VIEW, SET_OBJECT, SET_MATERIAL]),
        (LAYOUT_DEPTH, vec![SET_VIEW, SET_OBJECT]),
        (LAYOUT_CULL, vec![SET_CULL]),
        (LAYOUT_YCBCR, vec![SET_VIEW, SET_OBJECT, SET_YCBCR]),
        (LAYOUT_RT, vec![SET_RT]),
    ] {
        let sets: Vec<String> = sets.into_iter().map(hex).collect();
        e.push((
            tag::PIPELINE_LAYOUT,
            h,
            one("pipelineLayouts", h, json!({"flags": 0, "pushConstantRanges": [], "setLayouts": sets})),
        ));
    }
    e.push((
        tag::RENDER_PASS,
        PASS,
        one("renderPasses", PASS, json!({"flags": 0,
            "attachments": [{"flags": 0, "format": 126, "samples": 1, "loadOp": 1, "storeOp": 0,
                "stencilLoadOp": 2, "stencilStoreOp": 1, "initialLayout": 0, "finalLayout": 3}],
            "subpasses": [{"flags": 0, "pipelineBindPoint": 0, "depthStencilAttachment": {"attachment": 0, "layout": 3}}],
            "dependencies": []})),
    ));
    // 1. Opaque PBR with dynamic rendering and alpha blending.
    e.push(graphics(0xa000_0000_0000_0001, opaque_state()));
    // 2. Depth prepass through a version-1 render pass, no fragment stage, depth bias.
    let mut prepass = opaque_state();
    prepass.insert("renderPass".into(), json!(hex(PASS)));
    prepass.insert("layout".into(), json!(hex(LAYOUT_DEPTH)));
    prepass.insert("stages".into(), json!([stage(1, MESH, "vs_depth")]));
    prepass.remove("colorBlendState");
    prepass.remove("pNext");
    prepass["vertexInputState"]["attributes"] = json!([{"location": 0, "binding": 0, "offset": 0, "format": 106}]);
    prepass["rasterizationState"]["depthBiasEnable"] = json!(1);
    prepass["rasterizationState"]["depthBiasConstantFactor"] = json!(2.0);
    prepass["rasterizationState"]["depthBiasSlopeFactor"] = json!(1.5);
    e.push(graphics(0xa000_0000_0000_0002, prepass));
    // 3. An immutable sampler with a YCbCr conversion: skipped (not in the native model).
    let mut ycbcr = opaque_state();
    ycbcr.insert("layout".into(), json!(hex(LAYOUT_YCBCR)));
    e.push(graphics(0xa000_0000_0000_0003, ycbcr));
    // 4. Logic op (what the portable form could not say; the native form keeps it).
    let mut logic = opaque_state();
    logic["colorBlendState"]["logicOpEnable"] = json!(1);
    logic["colorBlendState"]["logicOp"] = json!(3);
    e.push(graphics(0xa000_0000_0000_0004, logic));
    // 5. R16G16B16A16_SNORM colour (likewise kept).
    let mut fmt = opaque_state();
    fmt["pNext"][0]["colorAttachmentFormats"] = json!([92]);
    e.push(graphics(0xa000_0000_0000_0005, fmt));
    // 6-8. Graphics pipeline libraries: vertex input + pre-rasterization, fragment + output,
    // linked into one pipeline.
    let mut lib_a = opaque_state();
    lib_a.insert("flags".into(), json!(vk::LIBRARY_BIT));
    lib_a.insert("stages".into(), json!([stage(1, MESH, "vs_main")]));
    for k in ["depthStencilState", "colorBlendState", "multisampleState"] {
        lib_a.remove(k);
    }
    lib_a.insert("pNext".into(), json!([{"sType": vk::stype::GPL, "flags": 3}]));
    e.push(graphics(0xb000_0000_0000_0001, lib_a));
    let mut lib_b = opaque_state();
    lib_b.insert("flags".into(), json!(vk::LIBRARY_BIT));
    lib_b.insert("stages".into(), json!([stage(0x10, PBR, "fs_main")]));
    for k in ["vertexInputState", "inputAssemblyState", "rasterizationState"] {
        lib_b.remove(k);
    }
    e.push(graphics(0xb000_0000_0000_0002, lib_b));
    let linked = json!({"flags": vk::LINK_TIME_OPTIMIZATION_BIT, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "layout": "0000000000000000", "renderPass": "0000000000000000", "subpass": 0, "stages": [],
        "pNext": [{"sType": vk::stype::LIBRARY, "libraries": [hex(0xb000_0000_0000_0001), hex(0xb000_0000_0000_0002)]}]});
    e.push(graphics(0xa000_0000_0000_0006, linked.as_object().cloned().unwrap()));
    // 9. A pNext structure the model does not have (fragment shading rate): skipped.
    let mut vrs = opaque_state();
    vrs["pNext"].as_array_mut().unwrap().push(json!({"sType": 1000226001,
        "fragmentSize": {"width": 2, "height": 2}, "combinerOps": [0, 0]}));
    e.push(graphics(0xa000_0000_0000_0007, vrs));
    // Compute, with a specialization constant the module does not declare (kept as given:
    // the driver ignores it, as Vulkan says).
    let compute = json!({"version": 6, "computePipelines": {hex(0xc000_0000_0000_0001): {
        "flags": 0, "layout": hex(LAYOUT_CULL), "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "stage": {"flags": 0, "stage": 32, "module": hex(CULL), "name": "cs_cull_lights",
            "specializationInfo": {"dataSize": 4, "data": "AAEAAA==",
                "mapEntries": [{"constantID": 7, "offset": 0, "size": 4}]}}}}});
    e.push((tag::COMPUTE_PIPELINE, 0xc000_0000_0000_0001, serde_json::to_vec(&compute).unwrap()));
    // A ray-tracing library (miss and callable groups) and a ray-tracing pipeline linking it
    // (ray generation and a triangles hit group of its own), with its interface and the
    // dynamic stack size: imported as one pipeline, the library's stages and groups after the
    // pipeline's own.
    let rt_group = |ty: u32, general: u32, closest: u32| {
        json!({"type": ty, "generalShader": general, "closestHitShader": closest,
            "anyHitShader": u32::MAX, "intersectionShader": u32::MAX})
    };
    let interface = json!({"maxPipelineRayPayloadSize": 12, "maxPipelineRayHitAttributeSize": 8});
    let rt_library = json!({"version": 6, "raytracingPipelines": {hex(RT_LIBRARY): {
        "flags": vk::LIBRARY_BIT, "layout": hex(LAYOUT_RT), "basePipelineHandle": "0000000000000000",
        "basePipelineIndex": -1, "maxPipelineRayRecursionDepth": 1, "libraryInterface": interface,
        "stages": [stage(0x800, RT_MISS, "main"), stage(0x2000, RT_CALL, "main")],
        "groups": [rt_group(0, 0, u32::MAX), rt_group(0, 1, u32::MAX)]}}});
    e.push((tag::RAYTRACING_PIPELINE, RT_LIBRARY, serde_json::to_vec(&rt_library).unwrap()));
    let rt = json!({"version": 6, "raytracingPipelines": {hex(0xd000_0000_0000_0001): {
        "flags": 0, "layout": hex(LAYOUT_RT), "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "maxPipelineRayRecursionDepth": 2, "libraryInterface": interface,
        "libraryInfo": {"libraries": [hex(RT_LIBRARY)]},
        "dynamicState": {"flags": 0, "dynamicState": [1000347000]},
        "stages": [stage(0x100, RT_GEN, "main"), stage(0x400, RT_CHIT, "main")],
        "groups": [rt_group(0, 0, u32::MAX), rt_group(1, u32::MAX, 1)]}}});
    e.push((tag::RAYTRACING_PIPELINE, 0xd000_0000_0000_0001, serde_json::to_vec(&rt).unwrap()));
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

fn native(p: &crate::script::ScriptPipeline) -> &crate::descriptor::NativePipelineDescriptor {
    match p.descriptor.as_ref().unwrap() {
        crate::descriptor::PipelineDescriptor::Native(n) => n,
        other => panic!("{}: not native: {other:?}", p.display_name()),
    }
}

#[test]
fn import_foz_fixture_imports_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.foz");
    std::fs::write(&db, fixture_bytes()).unwrap();
    let out = dir.path().join("out");
    let r = import(&[db], &out).unwrap();
    assert!(r.intact(), "{r:?}");
    assert_eq!(r.libraries, 3);
    let imported = [
        "foz/a000000000000001",
        "foz/a000000000000002",
        "foz/a000000000000004",
        "foz/a000000000000005",
        "foz/a000000000000006",
        "foz/c000000000000001",
        "foz/d000000000000001",
    ];
    assert_eq!(r.labels, imported);
    assert_eq!(r.modules, 7);
    let reasons: Vec<(&str, &str)> = r.skipped.iter().map(|s| (s.hash.as_str(), s.reason.as_str())).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0].0, "a000000000000003");
    assert!(reasons[0].1.contains("sType 1000156001 (VkSamplerYcbcrConversionInfo)"), "{reasons:?}");
    assert_eq!(reasons[1].0, "a000000000000007");
    assert!(reasons[1].1.contains("sType 1000226001"), "{reasons:?}");
    let script = crate::script::Script::load(&out.join("pipelines.json")).unwrap();
    for (name, lib) in &script.libraries {
        assert!(lib.is_ok(), "{name}: {lib:?}");
    }
    assert_eq!(script.pipelines.len(), imported.len());
    for p in &script.pipelines {
        assert!(p.descriptor.is_ok(), "{}: {:?}", p.display_name(), p.descriptor);
    }
    let [opaque, prepass, logic, fmt, linked, cull, rt] = [0, 1, 2, 3, 4, 5, 6].map(|i| native(&script.pipelines[i]));
    let g = |n: &crate::descriptor::NativePipelineDescriptor| n.state.graphics.clone().unwrap();
    assert_eq!(g(opaque).rendering.unwrap().color_attachment_formats, [50]);
    assert_eq!(g(opaque).color_blend_state.unwrap().attachments[0].src_color_blend_factor, 6);
    assert_eq!(g(opaque).depth_stencil_state.unwrap().depth_compare_op, 4);
    assert_eq!(g(opaque).vertex_input_state.unwrap().attributes[3].format, 109);
    assert_eq!(opaque.state.layout.set_layouts.len(), 3);
    assert_eq!(opaque.state.layout.set_layouts[0].bindings[3].immutable_samplers[0].compare_op, 4);
    assert_eq!(prepass.stages.len(), 1);
    assert_eq!(g(prepass).rasterization_state.unwrap().depth_bias_constant_factor, 2.0);
    assert_eq!(g(prepass).render_pass.unwrap().attachments[0].format, 126);
    assert_eq!(g(logic).color_blend_state.unwrap().logic_op, 3);
    assert_eq!(g(fmt).rendering.unwrap().color_attachment_formats, [92]);
    // The linked pipeline equals the monolithic one: same stages, same state (its
    // link-time-optimization flag is dropped with the libraries).
    assert_eq!(linked.state, opaque.state);
    let ctx = crate::descriptor::KeyContext { target_options: 0 };
    let key = |n: &crate::descriptor::NativePipelineDescriptor| {
        crate::descriptor::PipelineDescriptor::Native(n.clone()).key(&ctx)
    };
    assert_eq!(key(linked), key(opaque));
    let spec = cull.stages[0].specialization.as_deref().unwrap();
    assert_eq!((spec.map_entries[0].constant_id, spec.data.as_slice()), (7, &[0, 1, 0, 0][..]));
    assert!(cull.state.is_compute());
    // The ray-tracing pipeline with its library folded in: its own stages and groups first,
    // then the library's, their stage indices moved past the pipeline's two stages; no
    // library interface (the folded pipeline links nothing); the dynamic stack size kept.
    use crate::descriptor::ShaderStage as S;
    let kinds: Vec<S> = rt.stages.iter().map(|s| s.stage).collect();
    assert_eq!(kinds, [S::RayGeneration, S::ClosestHit, S::Miss, S::Callable]);
    let state = rt.state.ray_tracing.clone().expect("a ray-tracing state");
    let generals: Vec<u32> = state.groups.iter().map(|g| g.general_shader).collect();
    assert_eq!(generals, [0, u32::MAX, 2, 3]);
    assert_eq!((state.groups[1].group_type, state.groups[1].closest_hit_shader), (1, 1));
    assert_eq!(state.max_pipeline_ray_recursion_depth, 2);
    assert_eq!(state.library_interface, None);
    assert_eq!(state.dynamic_states, [1000347000]);
    assert_eq!((rt.state.flags, rt.state.layout.set_layouts[0].bindings[0].descriptor_type), (0, 1000150000));
}
