//! Full fidelity: a Fossilize database written here (the container writer beside the reader)
//! holding a five-stage graphics pipeline, a compute pipeline and a version-1 render-pass
//! pipeline with every member of granary's native model away from its default somewhere
//! among them (render pass version 2 with multiview, immutable samplers, binding flags, every
//! state and extension structure; `pipelineBindPoint` stays 0, its one valid value), plus
//! pipelines that must be skipped. The written script is loaded and each
//! `NativePipelineDescriptor` compared field by field with values written out by hand.

use super::container::tag;
use super::container::writer::{entry, header, Store};
use super::*;
use crate::descriptor::{FunctionDescriptor, NativePipelineDescriptor, PipelineDescriptor, ShaderStage};
use granary_archive::native::*;
use serde_json::json;

const M_VS: u64 = 0x5100_0000_0000_0001;
const M_TESS: u64 = 0x5100_0000_0000_0002;
const M_GS: u64 = 0x5100_0000_0000_0003;
const M_FS: u64 = 0x5100_0000_0000_0004;
const M_CS: u64 = 0x5100_0000_0000_0005;
const SM_A: u64 = 0x5200_0000_0000_0001;
const SM_B: u64 = 0x5200_0000_0000_0002;
const SM_YCBCR: u64 = 0x5200_0000_0000_0003;
const SET_A: u64 = 0x5300_0000_0000_0001;
const SET_B: u64 = 0x5300_0000_0000_0002;
const SET_YCBCR: u64 = 0x5300_0000_0000_0003;
const LAYOUT_A: u64 = 0x5400_0000_0000_0001;
const LAYOUT_B: u64 = 0x5400_0000_0000_0002;
const LAYOUT_YCBCR: u64 = 0x5400_0000_0000_0003;
const RP2: u64 = 0x5500_0000_0000_0002;
const RP1: u64 = 0x5500_0000_0000_0001;
const FIVE: u64 = 0xe000_0000_0000_0001;
const COMPUTE: u64 = 0xe000_0000_0000_0002;
const V1: u64 = 0xe000_0000_0000_0003;

/// A module: a SPIR-V header and a tag word (the importer copies modules without parsing).
fn module(tag: u32) -> Vec<u32> {
    vec![0x0723_0203, 0x0001_0000, tag, 8, 0]
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn doc(key: &str, hash: u64, v: Value) -> Vec<u8> {
    let mut m = serde_json::Map::new();
    m.insert(hex(hash), v);
    serde_json::to_vec(&json!({"version": 6, key: m})).unwrap()
}

fn sampler_json(reduction: bool) -> Value {
    let mut s = json!({"flags": 1, "minFilter": 1000015000, "magFilter": 1, "maxAnisotropy": 16.0, "compareOp": 4,
        "anisotropyEnable": 1, "mipmapMode": 1, "addressModeU": 2, "addressModeV": 3, "addressModeW": 4,
        "borderColor": 3, "unnormalizedCoordinates": 1, "compareEnable": 1, "mipLodBias": -0.25,
        "minLod": 0.5, "maxLod": 12.0});
    if reduction {
        s["pNext"] = json!([{"sType": 1000130001, "reductionMode": 2}]);
    }
    s
}

fn sampler(reduction: bool) -> SamplerState {
    SamplerState {
        flags: 1,
        mag_filter: 1,
        min_filter: 1000015000,
        mipmap_mode: 1,
        address_mode_u: 2,
        address_mode_v: 3,
        address_mode_w: 4,
        mip_lod_bias: -0.25,
        anisotropy_enable: true,
        max_anisotropy: 16.0,
        compare_enable: true,
        compare_op: 4,
        min_lod: 0.5,
        max_lod: 12.0,
        border_color: 3,
        unnormalized_coordinates: true,
        reduction_mode: reduction.then_some(2),
    }
}

fn stage_json(bit: u64, module: u64, name: &str) -> Value {
    json!({"flags": 0, "stage": bit, "module": hex(module), "name": name})
}

fn stencil_json(fail: u32) -> Value {
    json!({"compareOp": 5, "writeMask": 15, "reference": 7 + fail, "compareMask": 240, "passOp": 2,
           "failOp": fail, "depthFailOp": 3})
}

fn stencil(fail: u32) -> StencilOpState {
    StencilOpState {
        fail_op: fail,
        pass_op: 2,
        depth_fail_op: 3,
        compare_op: 5,
        compare_mask: 240,
        write_mask: 15,
        reference: 7 + fail,
    }
}

/// The five-stage graphics pipeline as Fossilize records it.
fn five_json() -> Value {
    let mut vs = stage_json(0x1, M_VS, "vs");
    vs["flags"] = json!(2);
    vs["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 8}]);
    vs["specializationInfo"] = json!({"dataSize": 8, "data": b64(&[1, 2, 3, 4, 5, 6, 7, 8]),
        "mapEntries": [{"offset": 0, "size": 4, "constantID": 3}, {"offset": 4, "size": 4, "constantID": 4}]});
    let mut tcs = stage_json(0x2, M_TESS, "tcs");
    tcs["flags"] = json!(1);
    tcs["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 32}]);
    let mut tes = stage_json(0x4, M_TESS, "tes");
    tes["flags"] = json!(3);
    tes["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 16}]);
    let mut gs = stage_json(0x8, M_GS, "gs");
    gs["flags"] = json!(4);
    gs["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 64}]);
    let mut fs = stage_json(0x10, M_FS, "fs");
    fs["flags"] = json!(5);
    fs["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 128}]);
    fs["specializationInfo"] = json!({"dataSize": 2, "data": b64(&[0xff, 0x01]),
        "mapEntries": [{"offset": 1, "size": 1, "constantID": 9}]});
    let rasterization = json!({"flags": 5, "depthBiasConstantFactor": 1.5, "depthBiasSlopeFactor": -2.0,
        "depthBiasClamp": 0.125, "depthBiasEnable": 1, "depthClampEnable": 1, "polygonMode": 1,
        "rasterizerDiscardEnable": 1, "frontFace": 1, "lineWidth": 2.5, "cullMode": 3,
        "pNext": [
            {"sType": 1000259001, "lineRasterizationMode": 3, "stippledLineEnable": 1, "lineStippleFactor": 4, "lineStipplePattern": 43690},
            {"sType": 1000254001, "provokingVertexMode": 1},
            {"sType": 1000101001, "flags": 9, "conservativeRasterizationMode": 2, "extraPrimitiveOverestimationSize": 0.5},
            {"sType": 1000102001, "flags": 0, "depthClipEnable": 1},
            {"sType": 1000028002, "flags": 0, "rasterizationStream": 1}]});
    json!({
        "flags": 0x1 | 0x4, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "layout": hex(LAYOUT_A), "renderPass": hex(RP2), "subpass": 1,
        "tessellationState": {"flags": 3, "patchControlPoints": 4, "pNext": [{"sType": 1000117003, "domainOrigin": 1}]},
        "dynamicState": {"flags": 0, "dynamicState": [0, 1, 1000267000]},
        "multisampleState": {"flags": 6, "rasterizationSamples": 8, "sampleShadingEnable": 1, "minSampleShading": 0.75,
            "alphaToOneEnable": 1, "alphaToCoverageEnable": 1, "sampleMask": [165]},
        "vertexInputState": {"flags": 1, "attributes": [{"location": 4, "binding": 1, "offset": 12, "format": 103}],
            "bindings": [{"binding": 1, "stride": 20, "inputRate": 1}],
            "pNext": [{"sType": 1000190001, "vertexBindingDivisorCount": 1, "vertexBindingDivisors": [{"binding": 1, "divisor": 3}]}]},
        "rasterizationState": rasterization,
        "inputAssemblyState": {"flags": 2, "topology": 10, "primitiveRestartEnable": 1},
        "colorBlendState": {"flags": 8, "logicOp": 5, "logicOpEnable": 1, "blendConstants": [0.125, 0.25, 0.5, 1.0],
            "attachments": [{"dstAlphaBlendFactor": 9, "srcAlphaBlendFactor": 1, "dstColorBlendFactor": 7,
                "srcColorBlendFactor": 6, "colorWriteMask": 11, "alphaBlendOp": 4, "colorBlendOp": 1, "blendEnable": 1}]},
        "viewportState": {"flags": 4, "viewportCount": 1, "scissorCount": 1,
            "viewports": [{"x": 1.5, "y": -2.0, "width": 640.0, "height": -480.0, "minDepth": 0.25, "maxDepth": 0.75}],
            "scissors": [{"x": -3, "y": 4, "width": 320, "height": 240}],
            "pNext": [{"sType": 1000355001, "negativeOneToOne": 1}]},
        "depthStencilState": {"flags": 7, "stencilTestEnable": 1, "maxDepthBounds": 0.875, "minDepthBounds": 0.125,
            "depthBoundsTestEnable": 1, "depthWriteEnable": 1, "depthTestEnable": 1, "depthCompareOp": 6,
            "front": stencil_json(1), "back": stencil_json(4)},
        "stages": [vs, tcs, tes, gs, fs],
        "pNext": [{"sType": 1000044002, "viewMask": 3, "colorAttachmentFormats": [44, 0],
                   "depthAttachmentFormat": 130, "stencilAttachmentFormat": 130}],
    })
}

fn reference(attachment: u32, layout: u32, aspect_mask: u32) -> AttachmentReference {
    AttachmentReference { attachment, layout, aspect_mask }
}

fn attachments() -> Vec<AttachmentDescription> {
    vec![
        AttachmentDescription {
            flags: 1,
            format: 44,
            samples: 8,
            load_op: 1,
            store_op: 1,
            stencil_load_op: 2,
            stencil_store_op: 1,
            initial_layout: 1,
            final_layout: 1000001002,
        },
        AttachmentDescription {
            flags: 0,
            format: 130,
            samples: 8,
            load_op: 0,
            store_op: 0,
            stencil_load_op: 1,
            stencil_store_op: 0,
            initial_layout: 3,
            final_layout: 3,
        },
    ]
}

fn attachments_json() -> Value {
    json!([
        {"flags": 1, "format": 44, "finalLayout": 1000001002, "initialLayout": 1, "loadOp": 1, "storeOp": 1,
         "samples": 8, "stencilLoadOp": 2, "stencilStoreOp": 1},
        {"flags": 0, "format": 130, "finalLayout": 3, "initialLayout": 3, "loadOp": 0, "storeOp": 0,
         "samples": 8, "stencilLoadOp": 1, "stencilStoreOp": 0}])
}

/// A version-2 render pass with multiview: two subpasses, a dependency with a view offset.
fn rp2_json() -> Value {
    let r = |a: u32, l: u32, m: u32| json!({"attachment": a, "layout": l, "aspectMask": m});
    json!({"flags": 2, "correlatedViewMasks": [3], "attachments": attachments_json(),
        "dependencies": [{"dependencyFlags": 6, "dstAccessMask": 256, "srcAccessMask": 128, "dstStageMask": 1024,
            "srcStageMask": 512, "dstSubpass": 1, "srcSubpass": 0, "viewOffset": -1}],
        "subpasses": [
            {"flags": 2, "pipelineBindPoint": 0, "viewMask": 3, "colorAttachments": [r(0, 2, 1)],
             "depthStencilAttachment": r(1, 3, 6)},
            {"flags": 1, "pipelineBindPoint": 0, "viewMask": 3, "inputAttachments": [r(0, 5, 1)],
             "colorAttachments": [r(0, 2, 1)], "resolveAttachments": [r(u32::MAX, 0, 0)], "preserveAttachments": [1]}]})
}

fn rp2() -> RenderPassState {
    RenderPassState {
        flags: 2,
        attachments: attachments(),
        subpasses: vec![
            SubpassDescription {
                flags: 2,
                pipeline_bind_point: 0,
                view_mask: 3,
                input_attachments: vec![],
                color_attachments: vec![reference(0, 2, 1)],
                resolve_attachments: vec![],
                depth_stencil_attachment: Some(reference(1, 3, 6)),
                preserve_attachments: vec![],
            },
            SubpassDescription {
                flags: 1,
                pipeline_bind_point: 0,
                view_mask: 3,
                input_attachments: vec![reference(0, 5, 1)],
                color_attachments: vec![reference(0, 2, 1)],
                resolve_attachments: vec![reference(u32::MAX, 0, 0)],
                depth_stencil_attachment: None,
                preserve_attachments: vec![1],
            },
        ],
        dependencies: vec![SubpassDependency {
            src_subpass: 0,
            dst_subpass: 1,
            src_stage_mask: 512,
            dst_stage_mask: 1024,
            src_access_mask: 128,
            dst_access_mask: 256,
            dependency_flags: 6,
            view_offset: -1,
        }],
        correlated_view_masks: vec![3],
    }
}

/// A version-1 render pass whose multiview is a chained `VkRenderPassMultiviewCreateInfo`;
/// the depth/stencil attachment is also read as an input attachment (every aspect of its
/// format in the version-2 form).
fn rp1_json() -> Value {
    let r = |a: u32, l: u32| json!({"attachment": a, "layout": l});
    json!({"flags": 0, "attachments": attachments_json(),
        "dependencies": [{"dependencyFlags": 4, "dstAccessMask": 256, "srcAccessMask": 128, "dstStageMask": 1024,
            "srcStageMask": 512, "dstSubpass": 1, "srcSubpass": 0}],
        "subpasses": [
            {"flags": 0, "pipelineBindPoint": 0, "colorAttachments": [r(0, 2)], "depthStencilAttachment": r(1, 3)},
            {"flags": 0, "pipelineBindPoint": 0, "inputAttachments": [r(1, 5), r(u32::MAX, 0)], "colorAttachments": [r(0, 2)]}],
        "pNext": [{"sType": 1000053000, "viewMasks": [1, 2], "viewOffsets": [1], "correlationMasks": [3]}]})
}

fn rp1() -> RenderPassState {
    RenderPassState {
        flags: 0,
        attachments: attachments(),
        subpasses: vec![
            SubpassDescription {
                flags: 0,
                pipeline_bind_point: 0,
                view_mask: 1,
                input_attachments: vec![],
                color_attachments: vec![reference(0, 2, 0)],
                resolve_attachments: vec![],
                depth_stencil_attachment: Some(reference(1, 3, 0)),
                preserve_attachments: vec![],
            },
            SubpassDescription {
                flags: 0,
                pipeline_bind_point: 0,
                view_mask: 2,
                input_attachments: vec![reference(1, 5, 6), reference(u32::MAX, 0, 0)],
                color_attachments: vec![reference(0, 2, 0)],
                resolve_attachments: vec![],
                depth_stencil_attachment: None,
                preserve_attachments: vec![],
            },
        ],
        dependencies: vec![SubpassDependency {
            src_subpass: 0,
            dst_subpass: 1,
            src_stage_mask: 512,
            dst_stage_mask: 1024,
            src_access_mask: 128,
            dst_access_mask: 256,
            dependency_flags: 4,
            view_offset: 1,
        }],
        correlated_view_masks: vec![3],
    }
}

fn layout_a() -> NativeLayout {
    NativeLayout {
        flags: 2,
        set_layouts: vec![
            SetLayout {
                flags: 2,
                bindings: vec![SetLayoutBinding {
                    binding: 3,
                    descriptor_type: 1,
                    descriptor_count: 2,
                    stage_flags: 0x10,
                    immutable_samplers: vec![sampler(true), sampler(false)],
                    binding_flags: 4,
                }],
            },
            layout_b().set_layouts.remove(0),
        ],
        push_constant_ranges: vec![PushConstantRange { stage_flags: 0x11, offset: 16, size: 48 }],
    }
}

fn layout_b() -> NativeLayout {
    NativeLayout {
        flags: 0,
        set_layouts: vec![SetLayout {
            flags: 1,
            bindings: vec![SetLayoutBinding {
                binding: 0,
                descriptor_type: 6,
                descriptor_count: 1,
                stage_flags: 0x1f,
                immutable_samplers: vec![],
                binding_flags: 0,
            }],
        }],
        push_constant_ranges: vec![],
    }
}

/// The five-stage pipeline's expected state.
fn five() -> NativePipeline {
    NativePipeline {
        // DERIVATIVE_BIT (0x4) is dropped: it names a base pipeline the archive cannot hold.
        flags: 0x1,
        stages: vec![
            StageState { flags: 2, required_subgroup_size: Some(8) },
            StageState { flags: 1, required_subgroup_size: Some(32) },
            StageState { flags: 3, required_subgroup_size: Some(16) },
            StageState { flags: 4, required_subgroup_size: Some(64) },
            StageState { flags: 5, required_subgroup_size: Some(128) },
        ],
        layout: layout_a(),
        graphics: Some(GraphicsState {
            vertex_input_state: Some(VertexInputState {
                flags: 1,
                bindings: vec![VertexBinding { binding: 1, stride: 20, input_rate: 1 }],
                attributes: vec![VertexAttribute { location: 4, binding: 1, format: 103, offset: 12 }],
                divisors: vec![VertexDivisor { binding: 1, divisor: 3 }],
            }),
            input_assembly_state: Some(InputAssemblyState { flags: 2, topology: 10, primitive_restart_enable: true }),
            tessellation_state: Some(TessellationState { flags: 3, patch_control_points: 4, domain_origin: Some(1) }),
            viewport_state: Some(ViewportState {
                flags: 4,
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
                flags: 5,
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
                    flags: 9,
                    conservative_rasterization_mode: 2,
                    extra_primitive_overestimation_size: 0.5,
                }),
                depth_clip_enable: Some(true),
                rasterization_stream: Some(1),
            }),
            multisample_state: Some(MultisampleState {
                flags: 6,
                rasterization_samples: 8,
                sample_shading_enable: true,
                min_sample_shading: 0.75,
                sample_mask: vec![0xa5],
                alpha_to_coverage_enable: true,
                alpha_to_one_enable: true,
            }),
            depth_stencil_state: Some(DepthStencilState {
                flags: 7,
                depth_test_enable: true,
                depth_write_enable: true,
                depth_compare_op: 6,
                depth_bounds_test_enable: true,
                stencil_test_enable: true,
                front: stencil(1),
                back: stencil(4),
                min_depth_bounds: 0.125,
                max_depth_bounds: 0.875,
            }),
            color_blend_state: Some(ColorBlendState {
                flags: 8,
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
                    color_write_mask: 11,
                }],
                blend_constants: [0.125, 0.25, 0.5, 1.0],
            }),
            dynamic_states: vec![0, 1, 1000267000],
            render_pass: Some(rp2()),
            subpass: 1,
            rendering: Some(RenderingState {
                view_mask: 3,
                color_attachment_formats: vec![44, 0],
                depth_attachment_format: 130,
                stencil_attachment_format: 130,
            }),
        }),
        ray_tracing: None,
    }
}

fn rasterization_json() -> Value {
    json!({"flags": 0, "depthBiasConstantFactor": 0.0, "depthBiasSlopeFactor": 0.0, "depthBiasClamp": 0.0,
        "depthBiasEnable": 0, "depthClampEnable": 0, "polygonMode": 0, "rasterizerDiscardEnable": 0,
        "frontFace": 0, "lineWidth": 1.0, "cullMode": 0})
}

/// A small graphics pipeline through render pass `rp`, with `extra` members.
fn small_json(layout: u64, rp: u64, extra: Value) -> Value {
    let mut v = json!({"flags": 0, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
        "layout": hex(layout), "renderPass": hex(rp), "subpass": 1, "rasterizationState": rasterization_json(),
        "stages": [stage_json(0x1, M_VS, "vs"), stage_json(0x10, M_FS, "fs")]});
    for (k, x) in extra.as_object().cloned().unwrap_or_default() {
        v[k] = x;
    }
    v
}

/// Every entry of the database, plus the pipelines that must be skipped (hash, what makes it
/// unrepresentable, the expected reason's text).
fn database() -> (Vec<u8>, Vec<(u64, &'static str)>) {
    let mut e: Vec<(u32, u64, Vec<u8>)> = Vec::new();
    for (i, h) in [M_VS, M_TESS, M_GS, M_FS, M_CS].into_iter().enumerate() {
        let words = module(i as u32);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        e.push((
            tag::SHADER_MODULE,
            h,
            doc("shaderModules", h, json!({"flags": 0, "codeSize": bytes.len(), "code": b64(&bytes)})),
        ));
    }
    e.push((tag::SAMPLER, SM_A, doc("samplers", SM_A, sampler_json(true))));
    e.push((tag::SAMPLER, SM_B, doc("samplers", SM_B, sampler_json(false))));
    let mut ycbcr = sampler_json(false);
    ycbcr["pNext"] = json!([{"sType": 1000156001, "conversion": "5600000000000001"}]);
    e.push((tag::SAMPLER, SM_YCBCR, doc("samplers", SM_YCBCR, ycbcr)));
    e.push((
        tag::DESCRIPTOR_SET_LAYOUT,
        SET_A,
        doc(
            "setLayouts",
            SET_A,
            json!({"flags": 2,
            "bindings": [{"descriptorType": 1, "descriptorCount": 2, "stageFlags": 16, "binding": 3,
                          "immutableSamplers": [hex(SM_A), hex(SM_B)]}],
            "pNext": [{"sType": 1000161000, "bindingFlags": [4]}]}),
        ),
    ));
    e.push((
        tag::DESCRIPTOR_SET_LAYOUT,
        SET_B,
        doc(
            "setLayouts",
            SET_B,
            json!({"flags": 1,
            "bindings": [{"descriptorType": 6, "descriptorCount": 1, "stageFlags": 31, "binding": 0}]}),
        ),
    ));
    e.push((
        tag::DESCRIPTOR_SET_LAYOUT,
        SET_YCBCR,
        doc(
            "setLayouts",
            SET_YCBCR,
            json!({"flags": 0,
            "bindings": [{"descriptorType": 1, "descriptorCount": 1, "stageFlags": 16, "binding": 0,
                          "immutableSamplers": [hex(SM_YCBCR)]}]}),
        ),
    ));
    let pl = |sets: &[u64], push: Value, flags: u32| json!({"flags": flags, "pushConstantRanges": push, "setLayouts": sets.iter().map(|s| hex(*s)).collect::<Vec<_>>()});
    e.push((
        tag::PIPELINE_LAYOUT,
        LAYOUT_A,
        doc("pipelineLayouts", LAYOUT_A, pl(&[SET_A, SET_B], json!([{"stageFlags": 17, "size": 48, "offset": 16}]), 2)),
    ));
    e.push((tag::PIPELINE_LAYOUT, LAYOUT_B, doc("pipelineLayouts", LAYOUT_B, pl(&[SET_B], json!([]), 0))));
    e.push((tag::PIPELINE_LAYOUT, LAYOUT_YCBCR, doc("pipelineLayouts", LAYOUT_YCBCR, pl(&[SET_YCBCR], json!([]), 0))));
    e.push((tag::RENDER_PASS, RP2, doc("renderPasses2", RP2, rp2_json())));
    e.push((tag::RENDER_PASS, RP1, doc("renderPasses", RP1, rp1_json())));
    e.push((tag::GRAPHICS_PIPELINE, FIVE, doc("graphicsPipelines", FIVE, five_json())));
    e.push((tag::GRAPHICS_PIPELINE, V1, doc("graphicsPipelines", V1, small_json(LAYOUT_B, RP1, json!({})))));
    let mut cs = stage_json(0x20, M_CS, "cs");
    cs["flags"] = json!(2);
    cs["specializationInfo"] = json!({"dataSize": 12, "data": b64(&[0, 0, 0x80, 0x3f, 1, 0, 0, 0, 9, 9, 9, 9]),
        "mapEntries": [{"offset": 0, "size": 4, "constantID": 7}, {"offset": 4, "size": 8, "constantID": 8}]});
    cs["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 64}]);
    e.push((
        tag::COMPUTE_PIPELINE,
        COMPUTE,
        doc(
            "computePipelines",
            COMPUTE,
            json!({"flags": 1, "layout": hex(LAYOUT_B),
            "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1, "stage": cs}),
        ),
    ));
    // Pipelines that must be skipped, each with the reason's text.
    let skipped: Vec<(u64, Value, &'static str)> = vec![
        (0xf000_0000_0000_0001, small_json(LAYOUT_YCBCR, RP1, json!({})), "sType 1000156001 (VkSamplerYcbcrConversionInfo)"),
        (
            0xf000_0000_0000_0002,
            small_json(LAYOUT_B, RP1, json!({"pNext": [{"sType": 1000226001, "fragmentSize": {"width": 2, "height": 2}}]})),
            "pNext[0]: pNext structure sType 1000226001 (VkPipelineFragmentShadingRateStateCreateInfoKHR) is not in granary's native model",
        ),
        (
            0xf000_0000_0000_0003,
            {
                let mut v = small_json(LAYOUT_B, RP1, json!({}));
                v["rasterizationState"].as_object_mut().unwrap().remove("lineWidth");
                v
            },
            "rasterizationState.lineWidth: missing",
        ),
        (
            0xf000_0000_0000_0004,
            small_json(LAYOUT_B, RP1, json!({"stages": [stage_json(0x1, 0x99, "vs")]})),
            "shader module 0000000000000099 is not in the database(s)",
        ),
        (
            0xf000_0000_0000_0005,
            small_json(LAYOUT_B, RP1, json!({"stages": [stage_json(0x100, M_VS, "rgen")]})),
            "stages[0].stage: a ray_generation stage in a graphics pipeline",
        ),
        (0xf000_0000_0000_0006, small_json(LAYOUT_B, RP1, json!({"subpass": 2})), "subpass 2 is not one of render pass"),
        (0xf000_0000_0000_0007, small_json(0, RP1, json!({})), "layout: no pipeline layout"),
        (
            0xf000_0000_0000_0008,
            small_json(LAYOUT_B, RP1, json!({"stages": [stage_json(0x1, M_VS, "vs"), stage_json(0x1, M_VS, "vs2")]})),
            "stages[1].stage: a second vertex stage (the first is stages[0])",
        ),
    ];
    let mut reasons = Vec::new();
    for (h, v, reason) in skipped {
        e.push((tag::GRAPHICS_PIPELINE, h, doc("graphicsPipelines", h, v)));
        reasons.push((h, reason));
    }
    e.push((
        tag::RAYTRACING_PIPELINE,
        0xd000_0000_0000_0001,
        doc("raytracingPipelines", 0xd000_0000_0000_0001, json!({})),
    ));
    // A ray-tracing create info without its members: skipped, naming the first one missing.
    reasons.push((0xd000_0000_0000_0001, "flags: missing"));
    let mut b = header(6);
    for (i, (t, h, p)) in e.into_iter().enumerate() {
        entry(&mut b, t, h, &p, Store { deflate: i % 2 == 1, crc: i % 3 == 0 });
    }
    (b, reasons)
}

fn expected_stage(
    stage: ShaderStage,
    module: u64,
    name: &str,
    spec: Option<Specialization>,
) -> (ShaderStage, u64, String, Option<Specialization>) {
    (stage, module, name.to_string(), spec)
}

/// Field by field: the label, each stage (stage, the module's bytes, entry point,
/// specialization) and the whole state.
fn check(
    d: &NativePipelineDescriptor,
    label: &str,
    stages: &[(ShaderStage, u64, String, Option<Specialization>)],
    state: &NativePipeline,
    modules: &BTreeMap<u64, Vec<u8>>,
) {
    assert_eq!(d.label.as_deref(), Some(label));
    assert_eq!(d.stages.len(), stages.len(), "{label}");
    for (s, (stage, module, name, spec)) in d.stages.iter().zip(stages) {
        assert_eq!(s.stage, *stage, "{label}");
        let FunctionDescriptor::Library { library, name: entry } = &s.function else {
            panic!("{label}: not a library function")
        };
        assert_eq!(library.name(), hex(*module), "{label}");
        assert_eq!(library.kind(), crate::descriptor::SourceKind::Spirv, "{label}");
        assert_eq!(library.source(), modules[module].as_slice(), "{label}: the module's bytes, unchanged");
        assert_eq!(entry, name, "{label}");
        assert_eq!(s.specialization.as_deref(), spec.as_ref(), "{label} {stage}");
    }
    // Field by field, so a difference names the structure it is in.
    assert_eq!(d.state.flags, state.flags, "{label}: flags");
    assert_eq!(d.state.stages, state.stages, "{label}: stages");
    assert_eq!(d.state.layout, state.layout, "{label}: layout");
    match (&d.state.graphics, &state.graphics) {
        (Some(g), Some(w)) => {
            assert_eq!(g.vertex_input_state, w.vertex_input_state, "{label}");
            assert_eq!(g.input_assembly_state, w.input_assembly_state, "{label}");
            assert_eq!(g.tessellation_state, w.tessellation_state, "{label}");
            assert_eq!(g.viewport_state, w.viewport_state, "{label}");
            assert_eq!(g.rasterization_state, w.rasterization_state, "{label}");
            assert_eq!(g.multisample_state, w.multisample_state, "{label}");
            assert_eq!(g.depth_stencil_state, w.depth_stencil_state, "{label}");
            assert_eq!(g.color_blend_state, w.color_blend_state, "{label}");
            assert_eq!(g.dynamic_states, w.dynamic_states, "{label}");
            assert_eq!(g.render_pass, w.render_pass, "{label}");
            assert_eq!(g.subpass, w.subpass, "{label}");
            assert_eq!(g.rendering, w.rendering, "{label}");
        }
        (g, w) => assert_eq!(g, w, "{label}"),
    }
    assert_eq!(&*d.state, state, "{label}");
}

#[test]
fn import_foz_full_fidelity_native_pipelines() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, reasons) = database();
    let db = dir.path().join("full.foz");
    std::fs::write(&db, bytes).unwrap();
    let out = dir.path().join("out");
    let r = import(&[db], &out).unwrap();
    assert!(r.intact(), "{r:?}");
    assert_eq!(r.labels, ["foz/e000000000000001", "foz/e000000000000003", "foz/e000000000000002"]);
    assert_eq!(r.modules, 5);
    let got: Vec<(String, &str)> = r.skipped.iter().map(|s| (s.hash.clone(), s.reason.as_str())).collect();
    assert_eq!(got.len(), reasons.len(), "{got:#?}");
    for ((hash, reason), (want_hash, want)) in got.iter().zip(&reasons) {
        assert_eq!(*hash, hex(*want_hash));
        assert!(reason.contains(want), "{hash}: {reason:?} lacks {want:?}");
    }

    let script = crate::script::Script::load(&out.join("pipelines.json")).unwrap();
    let modules: BTreeMap<u64, Vec<u8>> = [M_VS, M_TESS, M_GS, M_FS, M_CS]
        .into_iter()
        .enumerate()
        .map(|(i, h)| (h, module(i as u32).iter().flat_map(|w| w.to_le_bytes()).collect()))
        .collect();
    let natives: Vec<&NativePipelineDescriptor> = script
        .pipelines
        .iter()
        .map(|p| match p.descriptor.as_ref().unwrap() {
            PipelineDescriptor::Native(n) => n,
            other => panic!("{}: not native: {other:?}", p.display_name()),
        })
        .collect();
    let spec = |entries: &[(u32, u32, u32)], data: &[u8]| {
        Some(Specialization {
            map_entries: entries
                .iter()
                .map(|&(constant_id, offset, size)| SpecializationMapEntry { constant_id, offset, size })
                .collect(),
            data: data.to_vec(),
        })
    };
    check(
        natives[0],
        "foz/e000000000000001",
        &[
            expected_stage(ShaderStage::Vertex, M_VS, "vs", spec(&[(3, 0, 4), (4, 4, 4)], &[1, 2, 3, 4, 5, 6, 7, 8])),
            expected_stage(ShaderStage::TessellationControl, M_TESS, "tcs", None),
            expected_stage(ShaderStage::TessellationEvaluation, M_TESS, "tes", None),
            expected_stage(ShaderStage::Geometry, M_GS, "gs", None),
            expected_stage(ShaderStage::Fragment, M_FS, "fs", spec(&[(9, 1, 1)], &[0xff, 0x01])),
        ],
        &five(),
        &modules,
    );
    let small = |rp: RenderPassState| NativePipeline {
        flags: 0,
        stages: vec![StageState::default(), StageState::default()],
        layout: layout_b(),
        graphics: Some(GraphicsState {
            rasterization_state: Some(RasterizationState { line_width: 1.0, ..Default::default() }),
            render_pass: Some(rp),
            subpass: 1,
            ..Default::default()
        }),
        ray_tracing: None,
    };
    check(
        natives[1],
        "foz/e000000000000003",
        &[
            expected_stage(ShaderStage::Vertex, M_VS, "vs", None),
            expected_stage(ShaderStage::Fragment, M_FS, "fs", None),
        ],
        &small(rp1()),
        &modules,
    );
    check(
        natives[2],
        "foz/e000000000000002",
        &[expected_stage(
            ShaderStage::Compute,
            M_CS,
            "cs",
            spec(&[(7, 0, 4), (8, 4, 8)], &[0, 0, 0x80, 0x3f, 1, 0, 0, 0, 9, 9, 9, 9]),
        )],
        &NativePipeline {
            flags: 1,
            stages: vec![StageState { flags: 2, required_subgroup_size: Some(64) }],
            layout: layout_b(),
            graphics: None,
            ray_tracing: None,
        },
        &modules,
    );
    // The label is the Fossilize hash, and it is the only thing that names the pipeline.
    for (p, n) in script.pipelines.iter().zip(&natives) {
        let hash = p.label.as_deref().unwrap().strip_prefix("foz/").unwrap();
        assert_eq!(hash.len(), 16);
        assert!(r.labels.contains(&format!("foz/{hash}")) && n.label.as_deref() == p.label.as_deref());
    }
}

#[test]
fn import_foz_skips_a_database_with_bad_magic_or_version_and_imports_the_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _) = database();
    let paths = [dir.path().join("magic.foz"), dir.path().join("good.foz"), dir.path().join("version.foz")];
    let mut magic = good.clone();
    magic[1] ^= 0x20;
    let mut version = good.clone();
    version[15] = 99;
    for (p, b) in paths.iter().zip([magic, good, version]) {
        std::fs::write(p, b).unwrap();
    }
    let r = import(&paths, &dir.path().join("out")).unwrap();
    assert!(!r.intact());
    assert_eq!(r.labels.len(), 3, "the good database imports: {r:?}");
    let skipped: Vec<(&Path, &str)> =
        r.databases_skipped.iter().map(|d| (d.file.as_path(), d.reason.as_str())).collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert_eq!(skipped[0].0, paths[0]);
    assert!(skipped[0].1.contains("magic.foz") && skipped[0].1.contains("bad magic"), "{skipped:?}");
    assert_eq!(skipped[1].0, paths[2]);
    assert!(skipped[1].1.contains("unsupported Fossilize format version 99"), "{skipped:?}");
}

/// Every leaf path of `v` (object keys and array indices).
fn leaf_paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                at.push(k.clone());
                leaf_paths(x, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(i.to_string());
                leaf_paths(x, at, out);
                at.pop();
            }
        }
        _ => out.push(at.clone()),
    }
}

fn at_path<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, k| match v {
        Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
        v => &mut v[k.as_str()],
    })
}

/// The recorded object `target` names (0 the five-stage pipeline, 1 its render pass, 2 a set
/// layout, 3 a sampler, 4 the pipeline layout, 5 the compute pipeline).
fn member(c: &mut Collected, target: usize) -> &mut Value {
    match target {
        0 => c.graphics.get_mut(&FIVE).unwrap(),
        1 => &mut c.render_passes.get_mut(&RP2).unwrap().1,
        2 => c.set_layouts.get_mut(&SET_A).unwrap(),
        3 => c.samplers.get_mut(&SM_A).unwrap(),
        4 => c.pipeline_layouts.get_mut(&LAYOUT_A).unwrap(),
        _ => c.compute.get_mut(&COMPUTE).unwrap(),
    }
}

/// Each member of the recorded pipeline and of every object it refers to, replaced in turn by
/// values of the wrong type or range: the conversion returns an error or a value, never panics,
/// and the compute pipeline likewise.
#[test]
fn import_foz_conversion_never_panics_on_damaged_members() {
    let (bytes, _) = database();
    let db = container::parse(&bytes, Path::new("full.foz")).unwrap();
    let mut c = Collected::default();
    for e in &db.entries {
        collect_entry(e, &mut c).unwrap();
    }
    let bad =
        [json!(null), json!(-1), json!(1e40), json!(4294967296u64), json!("x"), json!([]), json!({}), json!(true)];
    let mut tried = 0;
    for target in 0..6 {
        let mut paths = Vec::new();
        leaf_paths(member(&mut c.clone(), target), &mut Vec::new(), &mut paths);
        for path in &paths {
            for b in &bad {
                let mut damaged = c.clone();
                *at_path(member(&mut damaged, target), path) = b.clone();
                let conv = Converter { c: &damaged };
                let _ = conv.graphics(&damaged.graphics[&FIVE]);
                let _ = conv.compute(&damaged.compute[&COMPUTE]);
                tried += 1;
            }
        }
    }
    assert!(tried > 1000, "{tried} damaged members tried");
}
