//! Native Vulkan pipelines on a real driver (lavapipe in CI), under the Khronos validation
//! layer: one fixture per state area, each created with zero validation messages, and a
//! variant of it with one field changed, also created cleanly; where the device has
//! `VK_KHR_pipeline_binary` the two have different `vkGetPipelineKeyKHR` keys (lavapipe has
//! not: each test says so and compares the create infos' canonical state bytes instead). A
//! specialization constant reaches the driver through `VkSpecializationInfo` with the SPIR-V
//! untouched (the layer checks the map entries against the module's constants: a wrong size
//! is reported, the right one is not). A feature the device did not enable is refused before
//! the driver, naming it. The loader creates an archived native pipeline (`GNV1`) with the
//! same builder, and the backend compiles `PipelineDescriptor::Native`, sharing a capture only
//! between equal specializations.
//!
//! SPIR-V comes from `tests/native/*.spv`, compiled from the GLSL beside them by
//! `tests/native/regenerate.sh` (never at test time).
//!
//! Needs a driver and the layer: without them the tests print `SKIPPED`, which fails under
//! `GRANARY_REQUIRE_VULKAN=1` (driver) and under `GRANARY_VALIDATE=1` or `CI` (layer).

mod support;
// The workspace's test helpers (`forge_driver_version`: a driver update made of an archive).
#[path = "../../granary/tests/common/mod.rs"]
mod common;

use granary_archive::native::*;
use granary_archive::vulkan::validation::{DriverOptions, ValidationLog};
use granary_archive::vulkan::{
    check_native, check_structure, entry_name, select_device, stage_flag, CheckedBinaries, CreateMode, Driver, Gpu,
    Module, NativeInput, NativeObjects, OpenOptions, StageInput, VulkanError,
};
use granary_archive::DeviceFeatures;
use granary_archive::ShaderStage;
use std::collections::HashMap;
use std::sync::Arc;

/// A fixture's SPIR-V, by file name.
fn spirv(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native").join(format!("{name}.spv"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (run tests/native/regenerate.sh)", path.display()))
}

/// A driver under the validation layer, or `None` (skipped, as the suite's rules say).
fn validated_driver() -> Option<Arc<Driver>> {
    match Driver::load_with(DriverOptions { validation: true }) {
        Ok(d) => Some(d),
        Err(e @ VulkanError::NoValidationLayer { .. }) => {
            assert!(
                !support::layer_required(),
                "the validation layer is required here (GRANARY_VALIDATE=1 or CI): {e}"
            );
            eprintln!("SKIPPED: {e}; this test checked nothing");
            None
        }
        Err(e) => {
            support::no_driver(&e);
            None
        }
    }
}

/// A device (every feature it supports, or `features`), the objects native pipelines name,
/// and the fixture modules.
struct Fixture {
    log: Arc<ValidationLog>,
    gpu: Arc<Gpu>,
    objects: NativeObjects,
    modules: std::sync::Mutex<HashMap<String, Arc<Module>>>,
}

impl Fixture {
    fn open(features: DeviceFeatures) -> Option<Fixture> {
        let driver = validated_driver()?;
        let log = driver.validation().expect("a validated driver has a log").clone();
        let info = select_device(driver.physical_devices().expect("devices"), None).expect("a device");
        let gpu = Gpu::open(driver, info, OpenOptions { features, ..OpenOptions::default() }).expect("open the device");
        Some(Fixture { log, gpu, objects: NativeObjects::default(), modules: Default::default() })
    }

    fn module(&self, name: &str) -> Arc<Module> {
        let mut m = self.modules.lock().unwrap();
        m.entry(name.to_string()).or_insert_with(|| Arc::new(self.gpu.module(&spirv(name)).expect(name))).clone()
    }

    fn has(&self, f: DeviceFeatures) -> bool {
        self.gpu.features().contains(f)
    }

    /// Checks `state` with `stages` (fixture file, stage, specialization) as the backend and
    /// the loader do, then creates it (compiled, kept) and returns its pipeline key (empty
    /// without pipeline binaries).
    fn create(
        &self,
        state: &NativePipeline,
        stages: &[(&str, ShaderStage, Option<&Specialization>)],
    ) -> Result<Vec<u8>, String> {
        let kinds: Vec<ShaderStage> = stages.iter().map(|s| s.1).collect();
        check_structure(state, &kinds)?;
        check_native(&self.gpu, state, &kinds)?;
        let modules: Vec<Arc<Module>> = stages.iter().map(|s| self.module(s.0)).collect();
        let layout = self.objects.layout(&self.gpu, &state.layout)?;
        let render_pass = match state.graphics.as_ref().and_then(|g| g.render_pass.as_ref()) {
            Some(rp) => Some(self.objects.render_pass(&self.gpu, rp)?),
            None => None,
        };
        let input = NativeInput {
            stages: stages
                .iter()
                .zip(&modules)
                .enumerate()
                .map(|(i, ((_, stage, spec), m))| StageInput {
                    module: Some(&**m),
                    stage: stage_flag(*stage),
                    entry: entry_name("main").unwrap(),
                    specialization: *spec,
                    flags: state.stages[i].flags,
                    required_subgroup_size: state.stages[i].required_subgroup_size,
                })
                .collect(),
            state,
            layout: &layout,
            render_pass: render_pass.as_deref(),
        };
        let key = self.gpu.native_key(&input).map_err(|e| e.to_string())?;
        let how = CreateMode::Keep { binaries: CheckedBinaries::NONE, cache: None };
        let made = self.gpu.create_native(&input, how).map_err(|e| e.to_string())?;
        assert!(made.pipeline.is_some_and(|p| p.handle() != Default::default()), "a pipeline handle");
        Ok(key)
    }

    /// `a` and `b` (one field apart) both created with no validation message; their canonical
    /// states (granary's key input) always differ. The driver's `vkGetPipelineKeyKHR` is
    /// compared and printed, not asserted: a key identifies the binaries the create info
    /// produces, and a driver may give two create infos one key when its binaries do not
    /// depend on the field (NVIDIA 580 does for polygon mode, patch control points, divisors,
    /// immutable samplers' LOD and more: docs/BENCHMARKS.md).
    fn assert_field_changes_key(
        &self,
        what: &str,
        a: &NativePipeline,
        b: &NativePipeline,
        stages: &[(&str, ShaderStage, Option<&Specialization>)],
    ) {
        let ka = self.create(a, stages).unwrap_or_else(|e| panic!("{what}: {e}"));
        let kb = self.create(b, stages).unwrap_or_else(|e| panic!("{what} (variant): {e}"));
        assert_ne!(a.encode(), b.encode(), "{what}: the variant is the same state");
        if self.gpu.captures_binaries() {
            assert!(!ka.is_empty() && !kb.is_empty(), "{what}: a pipeline key");
            let same = if ka == kb { "the same key (its binaries do not depend on it)" } else { "another key" };
            eprintln!("{what}: vkGetPipelineKeyKHR on '{}': {same}", self.gpu.info.identity.device_name);
        } else {
            eprintln!(
                "{what}: key comparison skipped, device '{}' has no VK_KHR_pipeline_binary",
                self.gpu.info.identity.device_name
            );
        }
        self.assert_clean(what);
    }

    /// No validation message but those `GRANARY_VALIDATE_EXPECT` names (comma-separated ids,
    /// as the CLI takes them: vulkanalia's loader asks for an instance-level function through
    /// `vkGetDeviceProcAddr`, which the 1.4 layer warns about on NVIDIA).
    fn assert_clean(&self, what: &str) {
        let messages = unexpected(&self.log);
        assert!(messages.is_empty(), "{what}: the validation layer reported:\n{}", messages.join("\n"));
    }
}

/// The log's messages but those `GRANARY_VALIDATE_EXPECT` names, as `ID text`.
fn unexpected(log: &ValidationLog) -> Vec<String> {
    let expected = std::env::var("GRANARY_VALIDATE_EXPECT").unwrap_or_default();
    let expected: Vec<&str> = expected.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    log.messages()
        .into_iter()
        .filter(|m| !expected.contains(&m.id.as_str()))
        .map(|m| format!("{} {}", m.id, m.text))
        .collect()
}

/// One stage of a fixture: SPIR-V file, stage, specialization.
type Stage<'a> = (&'a str, ShaderStage, Option<&'a Specialization>);

const VERT_FRAG: [Stage<'static>; 2] =
    [("tri.vert", ShaderStage::Vertex, None), ("tri.frag", ShaderStage::Fragment, None)];

fn stage_states(n: usize) -> Vec<StageState> {
    vec![StageState { flags: 0, required_subgroup_size: None }; n]
}

/// A triangle pipeline with dynamic rendering to one RGBA8 attachment, viewport and scissor
/// dynamic: the base every fixture changes.
fn base(stages: usize) -> NativePipeline {
    NativePipeline {
        flags: 0,
        stages: stage_states(stages),
        layout: NativeLayout::default(),
        graphics: Some(GraphicsState {
            vertex_input_state: Some(VertexInputState {
                flags: 0,
                bindings: vec![VertexBinding { binding: 0, stride: 16, input_rate: 0 }],
                attributes: vec![VertexAttribute { location: 0, binding: 0, format: 109, offset: 0 }],
                divisors: vec![],
            }),
            input_assembly_state: Some(InputAssemblyState { flags: 0, topology: 3, primitive_restart_enable: false }),
            tessellation_state: None,
            viewport_state: Some(ViewportState {
                flags: 0,
                viewport_count: 1,
                viewports: vec![],
                scissor_count: 1,
                scissors: vec![],
                negative_one_to_one: None,
            }),
            rasterization_state: Some(RasterizationState {
                flags: 0,
                depth_clamp_enable: false,
                rasterizer_discard_enable: false,
                polygon_mode: 0,
                cull_mode: 0,
                front_face: 0,
                depth_bias_enable: false,
                depth_bias_constant_factor: 0.0,
                depth_bias_clamp: 0.0,
                depth_bias_slope_factor: 0.0,
                line_width: 1.0,
                line: None,
                provoking_vertex_mode: None,
                conservative: None,
                depth_clip_enable: None,
                rasterization_stream: None,
            }),
            multisample_state: Some(MultisampleState {
                flags: 0,
                rasterization_samples: 1,
                sample_shading_enable: false,
                min_sample_shading: 0.0,
                sample_mask: vec![],
                alpha_to_coverage_enable: false,
                alpha_to_one_enable: false,
            }),
            depth_stencil_state: None,
            color_blend_state: Some(ColorBlendState {
                flags: 0,
                logic_op_enable: false,
                logic_op: 0,
                attachment_count: 1,
                attachments: vec![ColorBlendAttachment {
                    blend_enable: false,
                    src_color_blend_factor: 1,
                    dst_color_blend_factor: 0,
                    color_blend_op: 0,
                    src_alpha_blend_factor: 1,
                    dst_alpha_blend_factor: 0,
                    alpha_blend_op: 0,
                    color_write_mask: 0xf,
                }],
                blend_constants: [0.0; 4],
            }),
            dynamic_states: vec![0, 1],
            render_pass: None,
            subpass: 0,
            rendering: Some(RenderingState {
                view_mask: 0,
                color_attachment_formats: vec![37],
                depth_attachment_format: 0,
                stencil_attachment_format: 0,
            }),
        }),
        ray_tracing: None,
    }
}

/// `base` with `f` applied to its graphics state.
fn with(stages: usize, f: impl FnOnce(&mut GraphicsState)) -> NativePipeline {
    let mut p = base(stages);
    f(p.graphics.as_mut().unwrap());
    p
}

fn raster(g: &mut GraphicsState) -> &mut RasterizationState {
    g.rasterization_state.as_mut().unwrap()
}

fn multisample(g: &mut GraphicsState) -> &mut MultisampleState {
    g.multisample_state.as_mut().unwrap()
}

/// Skips (saying so) a fixture the device cannot take; true when it can.
fn needs(fx: &Fixture, what: &str, f: DeviceFeatures) -> bool {
    if fx.has(f) {
        return true;
    }
    eprintln!("{what}: skipped, device '{}' does not support {f}", fx.gpu.info.identity.device_name);
    false
}

#[test]
fn tessellation_with_patch_control_points_and_domain_origin() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    assert!(needs(&fx, "tessellation", DeviceFeatures::TESSELLATION_SHADER), "lavapipe has tessellation");
    let stages = [
        ("tri.vert", ShaderStage::Vertex, None),
        ("tess.tesc", ShaderStage::TessellationControl, None),
        ("tess.tese", ShaderStage::TessellationEvaluation, None),
        ("tri.frag", ShaderStage::Fragment, None),
    ];
    let tess = |points, origin| {
        with(4, |g| {
            g.input_assembly_state.as_mut().unwrap().topology = 10; // PATCH_LIST
            g.tessellation_state =
                Some(TessellationState { flags: 0, patch_control_points: points, domain_origin: origin });
        })
    };
    fx.assert_field_changes_key("patchControlPoints", &tess(3, Some(1)), &tess(4, Some(1)), &stages);
    fx.assert_field_changes_key("domainOrigin", &tess(3, Some(1)), &tess(3, Some(0)), &stages);
    fx.assert_field_changes_key("domainOrigin chained", &tess(3, None), &tess(3, Some(0)), &stages);
}

#[test]
fn geometry_stage() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    assert!(needs(&fx, "geometry", DeviceFeatures::GEOMETRY_SHADER), "lavapipe has geometry shaders");
    let stages = [
        ("tri.vert", ShaderStage::Vertex, None),
        ("tri.geom", ShaderStage::Geometry, None),
        ("tri.frag", ShaderStage::Fragment, None),
    ];
    let a = with(3, |_| {});
    let b = with(3, |g| g.input_assembly_state.as_mut().unwrap().topology = 4); // TRIANGLE_STRIP
    fx.assert_field_changes_key("geometry topology", &a, &b, &stages);
}

#[test]
fn polygon_mode_depth_clamp_and_depth_bias_clamp() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    if needs(&fx, "polygonMode", DeviceFeatures::FILL_MODE_NON_SOLID) {
        let line = with(2, |g| raster(g).polygon_mode = 1);
        let point = with(2, |g| raster(g).polygon_mode = 2);
        fx.assert_field_changes_key("polygonMode", &line, &point, &VERT_FRAG);
    }
    if needs(&fx, "depthClamp", DeviceFeatures::DEPTH_CLAMP)
        && needs(&fx, "depthBiasClamp", DeviceFeatures::DEPTH_BIAS_CLAMP)
    {
        let clamp = |c: f32| {
            with(2, |g| {
                let r = raster(g);
                r.depth_clamp_enable = true;
                r.depth_bias_enable = true;
                r.depth_bias_constant_factor = 1.0;
                r.depth_bias_clamp = c;
            })
        };
        fx.assert_field_changes_key("depthBiasClamp", &clamp(0.5), &clamp(0.25), &VERT_FRAG);
        let unclamped = with(2, |g| raster(g).depth_bias_enable = true);
        fx.assert_field_changes_key("depthClampEnable", &unclamped, &clamp(0.5), &VERT_FRAG);
    }
}

#[test]
fn sample_shading_and_alpha_to_one() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    if needs(&fx, "sampleShading", DeviceFeatures::SAMPLE_RATE_SHADING) {
        let shading = |min: f32| {
            with(2, |g| {
                let m = multisample(g);
                m.rasterization_samples = 4;
                m.sample_shading_enable = true;
                m.min_sample_shading = min;
            })
        };
        fx.assert_field_changes_key("minSampleShading", &shading(0.5), &shading(1.0), &VERT_FRAG);
    }
    if needs(&fx, "alphaToOne", DeviceFeatures::ALPHA_TO_ONE) {
        let off = with(2, |_| {});
        let on = with(2, |g| multisample(g).alpha_to_one_enable = true);
        fx.assert_field_changes_key("alphaToOneEnable", &off, &on, &VERT_FRAG);
    }
}

#[test]
fn line_rasterization_and_provoking_vertex() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    let lines = |mode: u32, stippled: bool| {
        with(2, |g| {
            g.input_assembly_state.as_mut().unwrap().topology = 1; // LINE_LIST
            raster(g).line = Some(LineState {
                line_rasterization_mode: mode,
                stippled_line_enable: stippled,
                line_stipple_factor: 1,
                line_stipple_pattern: 0xff00,
            });
        })
    };
    let modes = [
        (1, false, DeviceFeatures::RECTANGULAR_LINES),
        (2, false, DeviceFeatures::BRESENHAM_LINES),
        (3, false, DeviceFeatures::SMOOTH_LINES),
        (2, true, DeviceFeatures::STIPPLED_BRESENHAM_LINES),
    ];
    let usable: Vec<_> = modes.iter().filter(|(_, _, f)| needs(&fx, "line mode", *f)).collect();
    assert!(usable.len() >= 2, "lavapipe has VK_EXT_line_rasterization's modes");
    for w in usable.windows(2) {
        let (a, b) = (w[0], w[1]);
        fx.assert_field_changes_key("lineRasterizationMode", &lines(a.0, a.1), &lines(b.0, b.1), &VERT_FRAG);
    }
    if needs(&fx, "provokingVertexMode", DeviceFeatures::PROVOKING_VERTEX_LAST) {
        let provoking = |m| with(2, |g| raster(g).provoking_vertex_mode = Some(m));
        fx.assert_field_changes_key("provokingVertexMode", &provoking(0), &provoking(1), &VERT_FRAG);
    }
    if needs(&fx, "depthClipEnable", DeviceFeatures::DEPTH_CLIP_ENABLE) {
        let clip = |e| with(2, |g| raster(g).depth_clip_enable = Some(e));
        fx.assert_field_changes_key("depthClipEnable", &clip(true), &clip(false), &VERT_FRAG);
    }
    if needs(&fx, "negativeOneToOne", DeviceFeatures::DEPTH_CLIP_CONTROL) {
        let ndc = |e| with(2, |g| g.viewport_state.as_mut().unwrap().negative_one_to_one = Some(e));
        fx.assert_field_changes_key("negativeOneToOne", &ndc(false), &ndc(true), &VERT_FRAG);
    }
}

/// Two colour attachments; subpass 0 writes the first, subpass 1 reads it as an input
/// attachment and writes the second; both render views 0 and 1.
fn two_subpasses(view_mask: u32) -> RenderPassState {
    let attachment = AttachmentDescription {
        flags: 0,
        format: 37,
        samples: 1,
        load_op: 1,  // CLEAR
        store_op: 0, // STORE
        stencil_load_op: 2,
        stencil_store_op: 1,
        initial_layout: 0,
        final_layout: 2, // COLOR_ATTACHMENT_OPTIMAL
    };
    let color = |a| AttachmentReference { attachment: a, layout: 2, aspect_mask: 0 };
    RenderPassState {
        flags: 0,
        attachments: vec![attachment.clone(), attachment],
        subpasses: vec![
            SubpassDescription {
                flags: 0,
                pipeline_bind_point: 0,
                view_mask,
                input_attachments: vec![],
                color_attachments: vec![color(0)],
                resolve_attachments: vec![],
                depth_stencil_attachment: None,
                preserve_attachments: vec![],
            },
            SubpassDescription {
                flags: 0,
                pipeline_bind_point: 0,
                view_mask,
                input_attachments: vec![AttachmentReference { attachment: 0, layout: 5, aspect_mask: 1 }],
                color_attachments: vec![color(1)],
                resolve_attachments: vec![],
                depth_stencil_attachment: None,
                preserve_attachments: vec![],
            },
        ],
        dependencies: vec![SubpassDependency {
            src_subpass: 0,
            dst_subpass: 1,
            src_stage_mask: 0x400,   // COLOR_ATTACHMENT_OUTPUT
            dst_stage_mask: 0x80,    // FRAGMENT_SHADER
            src_access_mask: 0x100,  // COLOR_ATTACHMENT_WRITE
            dst_access_mask: 0x10,   // INPUT_ATTACHMENT_READ
            dependency_flags: 1 | 2, // BY_REGION | VIEW_LOCAL
            view_offset: 0,
        }],
        correlated_view_masks: vec![view_mask],
    }
}

#[test]
fn render_pass_with_two_subpasses_dependencies_and_multiview() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    assert!(needs(&fx, "multiview", DeviceFeatures::MULTIVIEW), "Vulkan 1.1 multiview");
    let pass = |view_mask, subpass| {
        with(2, |g| {
            g.rendering = None;
            g.render_pass = Some(two_subpasses(view_mask));
            g.subpass = subpass;
        })
    };
    fx.assert_field_changes_key("subpass", &pass(0b11, 0), &pass(0b11, 1), &VERT_FRAG);
    fx.assert_field_changes_key("render pass viewMask", &pass(0b11, 0), &pass(0b01, 0), &VERT_FRAG);
    assert_eq!(fx.objects.counts().2, 2, "one render pass per distinct content");
}

#[test]
fn dynamic_rendering_with_a_view_mask() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    assert!(needs(&fx, "multiview", DeviceFeatures::MULTIVIEW), "Vulkan 1.1 multiview");
    let rendering = |m| with(2, |g| g.rendering.as_mut().unwrap().view_mask = m);
    fx.assert_field_changes_key("rendering viewMask", &rendering(0b11), &rendering(0b01), &VERT_FRAG);
}

fn sampler(max_lod: f32, reduction_mode: Option<u32>) -> SamplerState {
    SamplerState {
        flags: 0,
        mag_filter: 1,
        min_filter: 1,
        mipmap_mode: 1,
        address_mode_u: 2,
        address_mode_v: 2,
        address_mode_w: 2,
        mip_lod_bias: 0.0,
        anisotropy_enable: false,
        max_anisotropy: 1.0,
        compare_enable: false,
        compare_op: 0,
        min_lod: 0.0,
        max_lod,
        border_color: 0,
        unnormalized_coordinates: false,
        reduction_mode,
    }
}

/// A layout with an immutable sampler at set 0 binding 0 (fragment) and two push-constant
/// ranges (vertex bytes 0–16, fragment `fragment_range`).
fn sampled(s: SamplerState, fragment_range: (u32, u32)) -> NativePipeline {
    let mut p = base(2);
    p.layout = NativeLayout {
        flags: 0,
        set_layouts: vec![SetLayout {
            flags: 0,
            bindings: vec![SetLayoutBinding {
                binding: 0,
                descriptor_type: 1, // COMBINED_IMAGE_SAMPLER
                descriptor_count: 1,
                stage_flags: 0x10,
                immutable_samplers: vec![s],
                binding_flags: 0,
            }],
        }],
        push_constant_ranges: vec![
            PushConstantRange { stage_flags: 0x1, offset: 0, size: 16 },
            PushConstantRange { stage_flags: 0x10, offset: fragment_range.0, size: fragment_range.1 },
        ],
    };
    p
}

#[test]
fn immutable_samplers_and_several_push_constant_ranges() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    let stages = [("push.vert", ShaderStage::Vertex, None), ("sampled.frag", ShaderStage::Fragment, None)];
    fx.assert_field_changes_key(
        "immutable sampler maxLod",
        &sampled(sampler(1000.0, None), (16, 16)),
        &sampled(sampler(4.0, None), (16, 16)),
        &stages,
    );
    fx.assert_field_changes_key(
        "push-constant range",
        &sampled(sampler(1000.0, None), (16, 16)),
        &sampled(sampler(1000.0, None), (16, 32)),
        &stages,
    );
    if needs(&fx, "reductionMode", DeviceFeatures::SAMPLER_FILTER_MINMAX) {
        fx.assert_field_changes_key(
            "sampler reductionMode",
            &sampled(sampler(1000.0, Some(0)), (16, 16)),
            &sampled(sampler(1000.0, Some(1)), (16, 16)),
            &stages,
        );
    }
    let (samplers, layouts, _) = fx.objects.counts();
    assert!(samplers >= 2 && layouts >= 3, "shared by content: {samplers} samplers, {layouts} layouts");
}

#[test]
fn every_dynamic_state_the_device_supports() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    // Every dynamic state granary knows; the ones this device's enabled features allow are
    // kept (VIEWPORT/SCISSOR give way to their WITH_COUNT forms, which exclude them).
    let mut candidates: Vec<u32> = (2..=8).collect();
    candidates.extend((1000267000..=1000267011).filter(|d| ![1000267003, 1000267004].contains(d)));
    candidates.extend([1000377000, 1000377001, 1000377002, 1000377003, 1000377004, 1000352000, 1000259000]);
    candidates.extend(1000455002..=1000455022);
    let allowed = |d: u32| {
        let p = with(2, |g| {
            g.dynamic_states = vec![1000267003, 1000267004, d];
            g.viewport_state.as_mut().unwrap().viewport_count = 0;
            g.viewport_state.as_mut().unwrap().scissor_count = 0;
        });
        check_native(&fx.gpu, &p, &[ShaderStage::Vertex, ShaderStage::Fragment]).is_ok()
    };
    let mut all: Vec<u32> = vec![1000267003, 1000267004];
    all.extend(candidates.into_iter().filter(|d| allowed(*d)));
    // Stippled lines need a stipple-capable line mode; the base pipeline has none.
    all.retain(|d| *d != 1000259000 && *d != 1000455021);
    eprintln!("dynamic states on '{}': {all:?}", fx.gpu.info.identity.device_name);
    assert!(all.len() >= 2 + 7 + 12 + 3, "core 1.0, extended dynamic state 1 and 2 at least: {all:?}");
    let dynamic = |states: Vec<u32>| {
        with(2, |g| {
            g.dynamic_states = states;
            g.viewport_state.as_mut().unwrap().viewport_count = 0;
            g.viewport_state.as_mut().unwrap().scissor_count = 0;
        })
    };
    let fewer = all[..all.len() - 1].to_vec();
    fx.assert_field_changes_key("dynamicStates", &dynamic(all), &dynamic(fewer), &VERT_FRAG);
    // One granary does not know is refused, naming it.
    let unknown = dynamic(vec![1000267003, 1000267004, 1000099000]);
    let e = fx.create(&unknown, &VERT_FRAG).unwrap_err();
    assert!(e.contains("dynamicStates") || e.contains("dynamic state 1000099000"), "{e}");
    fx.assert_clean("unknown dynamic state");
}

#[test]
fn vertex_attribute_divisors() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    if !needs(&fx, "divisor", DeviceFeatures::VERTEX_ATTRIBUTE_INSTANCE_RATE_DIVISOR) {
        return;
    }
    let divided = |d| {
        with(2, |g| {
            let v = g.vertex_input_state.as_mut().unwrap();
            v.bindings[0].input_rate = 1; // INSTANCE
            v.divisors = vec![VertexDivisor { binding: 0, divisor: d }];
        })
    };
    fx.assert_field_changes_key("divisor", &divided(2), &divided(3), &VERT_FRAG);
}

/// A compute layout: a storage buffer at set 0 binding 0.
fn compute(required_subgroup_size: Option<u32>) -> NativePipeline {
    NativePipeline {
        flags: 0,
        stages: vec![StageState { flags: 0, required_subgroup_size }],
        layout: NativeLayout {
            flags: 0,
            set_layouts: vec![SetLayout {
                flags: 0,
                bindings: vec![SetLayoutBinding {
                    binding: 0,
                    descriptor_type: 7,
                    descriptor_count: 1,
                    stage_flags: 0x20,
                    immutable_samplers: vec![],
                    binding_flags: 0,
                }],
            }],
            push_constant_ranges: vec![],
        },
        graphics: None,
        ray_tracing: None,
    }
}

/// Workgroup size (constant 0) and value (constant 1), as the application gives them.
fn compute_constants(size: u32, value: u32) -> Specialization {
    let mut data = size.to_le_bytes().to_vec();
    data.extend(value.to_le_bytes());
    Specialization {
        map_entries: vec![
            SpecializationMapEntry { constant_id: 0, offset: 0, size: 4 },
            SpecializationMapEntry { constant_id: 1, offset: 4, size: 4 },
        ],
        data,
    }
}

#[test]
fn compute_with_a_required_subgroup_size() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    let l = fx.gpu.info.limits;
    let spec = compute_constants(64, 7);
    let stages = [("fill.comp", ShaderStage::Compute, Some(&spec))];
    if !needs(&fx, "requiredSubgroupSize", DeviceFeatures::SUBGROUP_SIZE_CONTROL)
        || l.required_subgroup_size_stages & 0x20 == 0
    {
        eprintln!("requiredSubgroupSize: skipped, compute is not in requiredSubgroupSizeStages");
        return;
    }
    fx.assert_field_changes_key("requiredSubgroupSize", &compute(None), &compute(Some(l.min_subgroup_size)), &stages);
    // A size past the device's range is refused before the driver, naming the limit.
    let e = fx.create(&compute(Some(l.max_subgroup_size * 2)), &stages).unwrap_err();
    assert!(e.contains("requiredSubgroupSize") && e.contains("maxSubgroupSize"), "{e}");
    fx.assert_clean("subgroup size refused");
}

fn red(value: f32, size: u32) -> Specialization {
    let mut data = value.to_le_bytes().to_vec();
    data.resize(size as usize, 0);
    Specialization { map_entries: vec![SpecializationMapEntry { constant_id: 0, offset: 0, size }], data }
}

#[test]
fn a_specialization_constant_reaches_the_driver_through_vk_specialization_info() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    let module_bytes = spirv("tri.frag");
    let state = base(2);
    let (a, b) = (red(0.25, 4), red(0.75, 4));
    let stages = |s| [("tri.vert", ShaderStage::Vertex, None), ("tri.frag", ShaderStage::Fragment, Some(s))];
    let ka = fx.create(&state, &stages(&a)).expect("0.25");
    let kb = fx.create(&state, &stages(&b)).expect("0.75");
    fx.assert_clean("two specializations");
    // One module, the application's bytes: the constant was not written into the SPIR-V.
    assert_eq!(fx.modules.lock().unwrap().len(), 2);
    assert_eq!(spirv("tri.frag"), module_bytes);
    if fx.gpu.captures_binaries() {
        assert_ne!(ka, kb, "two constant values, two driver keys");
    } else {
        eprintln!("specialization: key comparison skipped, no VK_KHR_pipeline_binary on this device");
    }
    // The layer sees the map entry the driver is given: an 8-byte entry for a 4-byte float
    // constant is reported (VUID-VkSpecializationMapEntry-constantID-00776), proving the
    // VkSpecializationInfo is in the create info.
    let _ = fx.create(&state, &stages(&red(0.5, 8)));
    let ids: Vec<String> = fx.log.messages().into_iter().map(|m| m.id).collect();
    assert!(ids.iter().any(|id| id.contains("VkSpecializationMapEntry")), "the layer saw no specialization: {ids:?}");
}

#[test]
fn a_feature_the_device_did_not_enable_is_refused_before_the_driver_naming_it() {
    let without = DeviceFeatures::KNOWN
        .difference(DeviceFeatures::GEOMETRY_SHADER)
        .difference(DeviceFeatures::FILL_MODE_NON_SOLID);
    let Some(fx) = Fixture::open(without) else { return };
    assert!(!fx.has(DeviceFeatures::GEOMETRY_SHADER));
    let stages = [
        ("tri.vert", ShaderStage::Vertex, None),
        ("tri.geom", ShaderStage::Geometry, None),
        ("tri.frag", ShaderStage::Fragment, None),
    ];
    let e = fx.create(&with(3, |_| {}), &stages).unwrap_err();
    assert!(e.contains("geometryShader (stages[1] is a geometry stage) feature not enabled on device"), "{e}");
    let e = fx.create(&with(2, |g| raster(g).polygon_mode = 1), &VERT_FRAG).unwrap_err();
    assert!(e.contains("fillModeNonSolid (rasterizationState.polygonMode is 1)"), "{e}");
    // Nothing reached the driver: no module was even made for the geometry stage.
    assert!(!fx.modules.lock().unwrap().contains_key("tri.geom"));
    fx.assert_clean("refusals");
}

#[test]
fn a_structure_granary_does_not_model_is_refused_not_dropped() {
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    let bad_flags = with(2, |g| raster(g).cull_mode = 0x10);
    let e = fx.create(&bad_flags, &VERT_FRAG).unwrap_err();
    assert!(e.contains("rasterizationState.cullMode") && e.contains("0x10"), "{e}");
    let mut derivative = base(2);
    derivative.flags = 0x4;
    let e = fx.create(&derivative, &VERT_FRAG).unwrap_err();
    assert!(e.contains("flags has DERIVATIVE"), "{e}");
    let mut two_states = base(2);
    two_states.stages.pop();
    let e = fx.create(&two_states, &VERT_FRAG).unwrap_err();
    assert!(e.contains("1 stage states for 2 stages"), "{e}");
    fx.assert_clean("structure refusals");
}

/// The stage function the front end makes of a SPIR-V module that is the application's own:
/// the bytes as the SPIR-V output, the specialization encoded beside them.
fn stage_function(
    key: u128,
    name: &str,
    stage: ShaderStage,
    spec: Option<&Specialization>,
) -> Arc<granary::frontend::StageFunction> {
    let mut outputs = granary_archive::TargetOutputs::default();
    outputs.0[granary_archive::Target::Spirv as usize] = Some(granary_archive::Blob::new(spirv(name)));
    Arc::new(granary::frontend::StageFunction {
        key: granary_archive::StageKey(key),
        stage,
        entry_point: "main".into(),
        outputs,
        specialization: spec.map(|s| granary_archive::Blob::new(s.encode())),
        interface: Default::default(),
        resources: granary::frontend::layout::StageResources {
            bindings: vec![],
            immediates: None,
            map: granary_archive::StageBindingMap {
                stage,
                slots: vec![],
                msl_immediates_buffer: None,
                msl_sizes_buffer: None,
                hlsl_immediates_space: None,
            },
        },
        spirv: None,
        target_failures: vec![],
    })
}

fn native_descriptor(
    label: &str,
    state: NativePipeline,
    stages: &[(&str, ShaderStage, Option<&Specialization>)],
) -> granary::descriptor::PipelineDescriptor {
    use granary::descriptor::{FunctionDescriptor, Library, NativePipelineDescriptor, NativeStage};
    granary::descriptor::PipelineDescriptor::Native(NativePipelineDescriptor {
        label: Some(label.into()),
        stages: stages
            .iter()
            .map(|(name, stage, spec)| NativeStage {
                stage: *stage,
                function: FunctionDescriptor::library(Library::spirv(*name, spirv(name)), "main"),
                specialization: spec.map(|s| Arc::new(s.clone())),
            })
            .collect(),
        state: Arc::new(state),
    })
}

#[test]
fn the_backend_compiles_native_pipelines_sharing_only_equal_specializations() {
    use granary::backend::Backend;
    let options = granary_vulkan::VulkanOptions { validate: true, share_identical: true, ..Default::default() };
    let backend = match granary_vulkan::VulkanBackend::open(&options) {
        Ok(b) => b,
        Err(e) => {
            if let VulkanError::NoValidationLayer { .. } = e {
                assert!(!support::layer_required(), "{e}");
            }
            support::no_driver(&e);
            return;
        }
    };
    let log = backend.validation().expect("validated").clone();
    let layout = granary_archive::PipelineLayout::default();
    let (a, b) = (red(0.25, 4), red(0.75, 4));
    let compile = |label: &str, state: NativePipeline, spec: &Specialization, frag_key: u128| {
        let stages = [("tri.vert", ShaderStage::Vertex, None), ("tri.frag", ShaderStage::Fragment, Some(spec))];
        let desc = native_descriptor(label, state, &stages);
        let functions = [
            stage_function(1, "tri.vert", ShaderStage::Vertex, None),
            stage_function(frag_key, "tri.frag", ShaderStage::Fragment, Some(spec)),
        ];
        backend.compile(&desc, &functions, &layout).unwrap_or_else(|e| panic!("{label}: {e}"))
    };
    compile("native/a", base(2), &a, 2);
    compile("native/a-again", base(2), &a, 2);
    compile("native/b", base(2), &b, 3);
    compile("native/line", with(2, |g| raster(g).polygon_mode = 1), &a, 2);
    let report = backend.report().expect("a report");
    assert_eq!(
        (report.pipelines_created, report.pipelines_shared, report.shader_modules),
        (3, 1, 3),
        "one capture per distinct state and specialization; one module per stage function"
    );
    // A bad specialization is the pipeline's error, naming the stage, before the driver.
    let bad = Specialization {
        map_entries: vec![SpecializationMapEntry { constant_id: 0, offset: 2, size: 4 }],
        data: vec![0; 4],
    };
    let stages = [("tri.vert", ShaderStage::Vertex, None), ("tri.frag", ShaderStage::Fragment, Some(&bad))];
    let functions = [
        stage_function(1, "tri.vert", ShaderStage::Vertex, None),
        stage_function(4, "tri.frag", ShaderStage::Fragment, Some(&bad)),
    ];
    let e = backend.compile(&native_descriptor("native/bad", base(2), &stages), &functions, &layout).unwrap_err();
    assert!(e.contains("fragment function 'main': specialization") && e.contains("constant 0"), "{e}");
    drop(backend);
    let messages = unexpected(&log);
    assert!(messages.is_empty(), "{}", messages.join("\n"));
}

/// An archive holding one native pipeline per `(label, state, stages)`, as a harvest writes
/// it: the stages' SPIR-V and specializations, the native state blob.
fn native_archive(pipelines: &[(&str, NativePipeline, Vec<Stage<'_>>)]) -> granary_archive::Archive {
    use granary_archive::{PipelineEntry, PipelineKey, PipelineKind, StageEntry, WriteEntry};
    let entries: Vec<WriteEntry> = pipelines
        .iter()
        .enumerate()
        .map(|(i, (label, state, stages))| {
            let stages = stages
                .iter()
                .enumerate()
                .map(|(k, (name, stage, spec))| {
                    let f = stage_function((i * 16 + k) as u128 + 100, name, *stage, *spec);
                    StageEntry {
                        key: f.key,
                        stage: *stage,
                        entry_point: "main".into(),
                        outputs: f.outputs.clone(),
                        specialization: f.specialization.clone(),
                    }
                })
                .collect();
            WriteEntry {
                entry: Arc::new(PipelineEntry {
                    key: PipelineKey(i as u128 + 1),
                    kind: if state.is_compute() { PipelineKind::Compute } else { PipelineKind::Render },
                    stages,
                    layout: None,
                    state: Some(granary_archive::Blob::new(state.encode())),
                }),
                labels: vec![label.to_string()].into(),
                binaries: vec![],
            }
        })
        .collect();
    granary_archive::Archive::from_bytes(granary::archive::encode(&entries, &granary::archive::portable_meta()))
        .expect("archive")
}

#[test]
fn the_loader_creates_archived_native_pipelines_with_the_same_builder() {
    use granary_archive::vulkan::{LoadError, LoadErrorKind, LoaderOptions, PipelineLoader, Source};
    let spec = red(0.5, 4);
    let constants = compute_constants(64, 7);
    let tess = with(4, |g| {
        g.input_assembly_state.as_mut().unwrap().topology = 10;
        g.tessellation_state = Some(TessellationState { flags: 0, patch_control_points: 3, domain_origin: Some(1) });
    });
    let archive = Arc::new(native_archive(&[
        (
            "native/geometry",
            with(3, |_| {}),
            vec![
                ("tri.vert", ShaderStage::Vertex, None),
                ("tri.geom", ShaderStage::Geometry, None),
                ("tri.frag", ShaderStage::Fragment, Some(&spec)),
            ],
        ),
        (
            "native/tessellation",
            tess,
            vec![
                ("tri.vert", ShaderStage::Vertex, None),
                ("tess.tesc", ShaderStage::TessellationControl, None),
                ("tess.tese", ShaderStage::TessellationEvaluation, None),
                ("tri.frag", ShaderStage::Fragment, None),
            ],
        ),
        ("native/compute", compute(None), vec![("fill.comp", ShaderStage::Compute, Some(&constants))]),
    ]));
    let Some(fx) = Fixture::open(DeviceFeatures::KNOWN) else { return };
    {
        let loader = PipelineLoader::new(archive.clone(), fx.gpu.clone(), LoaderOptions::default()).expect("loader");
        for label in ["native/geometry", "native/tessellation", "native/compute"] {
            let made = loader.load_label(label).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(made.source, Source::Compiled, "{label}: lavapipe has no binaries to use");
            assert!(!made.linked);
        }
    }
    fx.assert_clean("loaded native pipelines");
    // On a device without geometry shaders the pipeline is refused by name, before the driver.
    let without = DeviceFeatures::KNOWN.difference(DeviceFeatures::GEOMETRY_SHADER);
    let Some(fx) = Fixture::open(without) else { return };
    let loader = PipelineLoader::new(archive.clone(), fx.gpu.clone(), LoaderOptions::default()).expect("loader");
    match loader.load_label("native/geometry") {
        Err(LoadError::Pipeline { pipeline, message, kind, source, .. }) => {
            assert_eq!(pipeline, "native/geometry");
            // Refused before any driver call: unsupported, no VkResult.
            assert_eq!(kind, LoadErrorKind::Unsupported);
            assert!(source.is_none());
            assert!(
                message.contains("geometryShader (stages[1] is a geometry stage) feature not enabled"),
                "{message}"
            );
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("created without geometryShader"),
    }
    assert!(loader.load_label("native/tessellation").is_ok());
    drop(loader);
    fx.assert_clean("refused native pipeline");
}

// ---------------------------------------------------------------------------------------------
// Lookup by the application's own create info (`PipelineLoader::lookup_graphics` and friends).

use granary_archive::vulkan::vulkanalia::vk::{self, Handle as _};
use granary_archive::vulkan::{AppPipeline, CreateInfoError, ObjectRecorder};

/// The handles an application's triangle create info names.
#[derive(Clone, Copy)]
struct AppHandles {
    vert: vk::ShaderModule,
    frag: vk::ShaderModule,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
}

/// Builds, as an engine would, the graphics create info of `app_state()` with `handles` (each
/// structure a local of this frame), lets `edit` change it, and hands it to `f`.
fn with_app_info<R>(
    h: AppHandles,
    edit: impl FnOnce(&mut vk::GraphicsPipelineCreateInfo),
    f: impl FnOnce(&vk::GraphicsPipelineCreateInfo) -> R,
) -> R {
    let stages = [
        vk::PipelineShaderStageCreateInfo {
            stage: vk::ShaderStageFlags::VERTEX,
            module: h.vert,
            name: c"main".as_ptr(),
            ..Default::default()
        },
        vk::PipelineShaderStageCreateInfo {
            stage: vk::ShaderStageFlags::FRAGMENT,
            module: h.frag,
            name: c"main".as_ptr(),
            ..Default::default()
        },
    ];
    let bindings =
        [vk::VertexInputBindingDescription { binding: 0, stride: 16, input_rate: vk::VertexInputRate::VERTEX }];
    let attributes = [vk::VertexInputAttributeDescription {
        location: 0,
        binding: 0,
        format: vk::Format::R32G32B32A32_SFLOAT,
        offset: 0,
    }];
    let vertex_input = vk::PipelineVertexInputStateCreateInfo {
        vertex_binding_description_count: 1,
        vertex_binding_descriptions: bindings.as_ptr(),
        vertex_attribute_description_count: 1,
        vertex_attribute_descriptions: attributes.as_ptr(),
        ..Default::default()
    };
    let assembly = vk::PipelineInputAssemblyStateCreateInfo {
        topology: vk::PrimitiveTopology::TRIANGLE_LIST,
        ..Default::default()
    };
    // Dynamic viewport and scissor: Vulkan ignores these pointers (an engine may leave junk).
    let viewport = vk::PipelineViewportStateCreateInfo {
        viewport_count: 1,
        viewports: 0x10 as *const vk::Viewport,
        scissor_count: 1,
        ..Default::default()
    };
    let raster = vk::PipelineRasterizationStateCreateInfo { line_width: 1.0, ..Default::default() };
    let multisample = vk::PipelineMultisampleStateCreateInfo {
        rasterization_samples: vk::SampleCountFlags::_1,
        ..Default::default()
    };
    let blend_attachment = vk::PipelineColorBlendAttachmentState {
        src_color_blend_factor: vk::BlendFactor::ONE,
        src_alpha_blend_factor: vk::BlendFactor::ONE,
        color_write_mask: vk::ColorComponentFlags::all(),
        ..Default::default()
    };
    let blend = vk::PipelineColorBlendStateCreateInfo {
        attachment_count: 1,
        attachments: &blend_attachment,
        ..Default::default()
    };
    let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
    let dynamic = vk::PipelineDynamicStateCreateInfo {
        dynamic_state_count: 2,
        dynamic_states: dynamic_states.as_ptr(),
        ..Default::default()
    };
    let mut info = vk::GraphicsPipelineCreateInfo {
        stage_count: 2,
        stages: stages.as_ptr(),
        vertex_input_state: &vertex_input,
        input_assembly_state: &assembly,
        // Ignored without tessellation stages.
        tessellation_state: 0x20 as *const vk::PipelineTessellationStateCreateInfo,
        viewport_state: &viewport,
        rasterization_state: &raster,
        multisample_state: &multisample,
        color_blend_state: &blend,
        dynamic_state: &dynamic,
        layout: h.layout,
        render_pass: h.render_pass,
        subpass: 0,
        base_pipeline_index: -1,
        ..Default::default()
    };
    edit(&mut info);
    f(&info)
}

/// The render pass the application's create info names: one RGBA8 colour attachment.
fn app_render_pass() -> RenderPassState {
    RenderPassState {
        flags: 0,
        attachments: vec![AttachmentDescription {
            flags: 0,
            format: 37,
            samples: 1,
            load_op: 1,
            store_op: 0,
            stencil_load_op: 2,
            stencil_store_op: 1,
            initial_layout: 0,
            final_layout: 2,
        }],
        subpasses: vec![SubpassDescription {
            flags: 0,
            pipeline_bind_point: 0,
            view_mask: 0,
            input_attachments: vec![],
            color_attachments: vec![AttachmentReference { attachment: 0, layout: 2, aspect_mask: 0 }],
            resolve_attachments: vec![],
            depth_stencil_attachment: None,
            preserve_attachments: vec![],
        }],
        dependencies: vec![],
        correlated_view_masks: vec![],
    }
}

/// The native state of `with_app_info`'s create info as a harvest script writes it: the
/// sampled fixture (an immutable sampler, two push-constant ranges) with the render pass.
fn app_state() -> NativePipeline {
    let mut p = sampled(sampler(1000.0, None), (16, 16));
    let g = p.graphics.as_mut().unwrap();
    g.rendering = None;
    g.render_pass = Some(app_render_pass());
    p
}

const APP_STAGES: [Stage<'static>; 2] =
    [("push.vert", ShaderStage::Vertex, None), ("sampled.frag", ShaderStage::Fragment, None)];

fn fake_handles() -> AppHandles {
    AppHandles {
        vert: vk::ShaderModule::from_raw(1),
        frag: vk::ShaderModule::from_raw(2),
        layout: vk::PipelineLayout::from_raw(3),
        render_pass: vk::RenderPass::from_raw(4),
    }
}

/// A recorder that knows `fake_handles` (by value: `insert_*`).
fn fake_recorder() -> ObjectRecorder {
    let h = fake_handles();
    let r = ObjectRecorder::new();
    r.insert_shader_module(h.vert, &spirv("push.vert"));
    r.insert_shader_module(h.frag, &spirv("sampled.frag"));
    r.insert_pipeline_layout(h.layout, app_state().layout);
    r.insert_render_pass(h.render_pass, app_render_pass());
    r
}

fn inverse(
    r: &ObjectRecorder,
    edit: impl FnOnce(&mut vk::GraphicsPipelineCreateInfo),
) -> Result<AppPipeline, CreateInfoError> {
    // SAFETY: every pointer Vulkan reads in the create info is a local of `with_app_info`
    // alive during the call; the ones it ignores (and the inverse skips) are junk on purpose.
    with_app_info(fake_handles(), edit, |info| unsafe { granary_archive::vulkan::graphics_pipeline(r, info) })
}

#[test]
fn the_applications_create_info_gives_the_harvests_state_and_key() {
    let ctx = granary::descriptor::KeyContext { target_options: 0x5eed };
    let app = inverse(&fake_recorder(), |_| {}).expect("inverse");
    assert_eq!(app.state, app_state(), "the create info read back is the script's native state");
    let harvested = native_descriptor("app", app_state(), &APP_STAGES);
    assert_eq!(app.key(&ctx), harvested.key(&ctx), "granary's key of the create info is the harvest's");
    assert_eq!(app.stage_keys(&ctx), harvested.stage_keys(&ctx));
    // One field apart: another key.
    let culled = inverse(&fake_recorder(), |i| {
        // SAFETY: `with_app_info`'s rasterization state, a local alive during the edit.
        let r = Box::leak(Box::new(unsafe { *i.rasterization_state }));
        r.cull_mode = vk::CullModeFlags::BACK;
        i.rasterization_state = r;
    })
    .unwrap();
    assert_ne!(culled.key(&ctx), harvested.key(&ctx));
    // Dynamic rendering (VkPipelineRenderingCreateInfo chained, no render pass), and a stage
    // whose module is chained as a VkShaderModuleCreateInfo (maintenance5) instead of a handle.
    let formats = [vk::Format::R8G8B8A8_UNORM];
    let rendering = vk::PipelineRenderingCreateInfo {
        color_attachment_count: 1,
        color_attachment_formats: formats.as_ptr(),
        ..Default::default()
    };
    let code = spirv("sampled.frag");
    let inline = vk::ShaderModuleCreateInfo { code_size: code.len(), code: code.as_ptr().cast(), ..Default::default() };
    let dynamic_rendering = inverse(&fake_recorder(), |i| {
        i.render_pass = vk::RenderPass::null();
        i.next = (&rendering as *const vk::PipelineRenderingCreateInfo).cast();
        // SAFETY: `with_app_info`'s stages, locals alive during the edit.
        let mut stages = unsafe { std::slice::from_raw_parts(i.stages, 2) }.to_vec();
        stages[1].module = vk::ShaderModule::null();
        stages[1].next = (&inline as *const vk::ShaderModuleCreateInfo).cast();
        i.stages = Box::leak(stages.into_boxed_slice()).as_ptr();
    })
    .expect("dynamic rendering");
    let state = sampled(sampler(1000.0, None), (16, 16));
    assert_eq!(dynamic_rendering.state, state);
    assert_eq!(dynamic_rendering.key(&ctx), native_descriptor("dr", state, &APP_STAGES).key(&ctx));
    // A compute create info with a specialization and a required subgroup size.
    let r = fake_recorder();
    let module = vk::ShaderModule::from_raw(9);
    r.insert_shader_module(module, &spirv("fill.comp"));
    let state = compute(Some(32));
    let layout = vk::PipelineLayout::from_raw(10);
    r.insert_pipeline_layout(layout, state.layout.clone());
    let constants = compute_constants(64, 7);
    let entries: Vec<vk::SpecializationMapEntry> = constants
        .map_entries
        .iter()
        .map(|m| vk::SpecializationMapEntry { constant_id: m.constant_id, offset: m.offset, size: m.size as usize })
        .collect();
    let spec = vk::SpecializationInfo {
        map_entry_count: entries.len() as u32,
        map_entries: entries.as_ptr(),
        data_size: constants.data.len(),
        data: constants.data.as_ptr().cast(),
    };
    let subgroup =
        vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo { required_subgroup_size: 32, ..Default::default() };
    let info = vk::ComputePipelineCreateInfo {
        stage: vk::PipelineShaderStageCreateInfo {
            next: (&subgroup as *const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo).cast(),
            flags: vk::PipelineShaderStageCreateFlags::from_bits_truncate(state.stages[0].flags),
            stage: vk::ShaderStageFlags::COMPUTE,
            module,
            name: c"main".as_ptr(),
            specialization_info: &spec,
            ..Default::default()
        },
        layout,
        base_pipeline_index: -1,
        ..Default::default()
    };
    // SAFETY: `info` and everything it points at are locals alive for the call.
    let app = unsafe { granary_archive::vulkan::compute_pipeline(&r, &info) }.expect("compute");
    assert_eq!(app.state, state);
    let harvested = native_descriptor("compute", state, &[("fill.comp", ShaderStage::Compute, Some(&constants))]);
    assert_eq!(app.key(&ctx), harvested.key(&ctx));
}

#[test]
fn what_the_native_state_cannot_say_is_refused_naming_it() {
    let r = fake_recorder();
    // A handle the recorder was not told about.
    let e = inverse(&r, |i| i.layout = vk::PipelineLayout::from_raw(77)).unwrap_err();
    assert_eq!(e, CreateInfoError::UnknownHandle { what: "VkPipelineLayout", handle: 77 });
    assert!(e.to_string().contains("VkPipelineLayout 0x4d was not recorded"), "{e}");
    r.forget_shader_module(fake_handles().frag);
    let e = inverse(&r, |_| {}).unwrap_err();
    assert!(matches!(e, CreateInfoError::UnknownHandle { what: "VkShaderModule", handle: 2 }), "{e}");
    let r = fake_recorder();
    // A chained structure granary does not model (VkPipelineRobustnessCreateInfo).
    let robustness = vk::PipelineRobustnessCreateInfo::default();
    let e = inverse(&r, |i| i.next = (&robustness as *const vk::PipelineRobustnessCreateInfo).cast()).unwrap_err();
    assert_eq!(
        e,
        CreateInfoError::UnsupportedNext {
            parent: "VkGraphicsPipelineCreateInfo",
            s_type: vk::StructureType::PIPELINE_ROBUSTNESS_CREATE_INFO.as_raw()
        }
    );
    // A derivative and a library part.
    let e = inverse(&r, |i| i.flags = vk::PipelineCreateFlags::DERIVATIVE).unwrap_err();
    assert!(e.to_string().starts_with("flags: DERIVATIVE"), "{e}");
    let e = inverse(&r, |i| i.flags = vk::PipelineCreateFlags::LIBRARY_KHR).unwrap_err();
    assert!(e.to_string().contains("LIBRARY_KHR"), "{e}");
    // A subpass the render pass does not have.
    let e = inverse(&r, |i| i.subpass = 3).unwrap_err();
    assert!(e.to_string().starts_with("subpass: 3 is not a subpass"), "{e}");
}

/// The application's own objects on `gpu`'s device, each recorded with the create info it was
/// made with (`record_*`, the raw readers), destroyed on drop.
/// A shader module of the fixture `name`, made as an engine makes it and recorded; its owner
/// destroys it after every pipeline made with it.
fn app_module(gpu: &Gpu, recorder: &ObjectRecorder, name: &str) -> vk::ShaderModule {
    use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
    let code = spirv(name);
    let info = vk::ShaderModuleCreateInfo { code_size: code.len(), code: code.as_ptr().cast(), ..Default::default() };
    // SAFETY: `info` points at `code`, alive for both calls.
    let m = unsafe { gpu.raw_device().create_shader_module(&info, None) }.expect("module");
    // SAFETY: as above.
    unsafe { recorder.record_shader_module(m, &info) }.expect("record module");
    m
}

struct AppObjects {
    gpu: Arc<Gpu>,
    handles: AppHandles,
    sampler: vk::Sampler,
    set_layout: vk::DescriptorSetLayout,
    render_pass2: vk::RenderPass,
}

impl AppObjects {
    fn create(gpu: &Arc<Gpu>, recorder: &ObjectRecorder) -> AppObjects {
        use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
        let device = gpu.raw_device();
        let (vert, frag) = (app_module(gpu, recorder, "push.vert"), app_module(gpu, recorder, "sampled.frag"));
        let s = sampler(1000.0, None);
        let sampler_info = vk::SamplerCreateInfo {
            mag_filter: vk::Filter::LINEAR,
            min_filter: vk::Filter::LINEAR,
            mipmap_mode: vk::SamplerMipmapMode::LINEAR,
            address_mode_u: vk::SamplerAddressMode::CLAMP_TO_EDGE,
            address_mode_v: vk::SamplerAddressMode::CLAMP_TO_EDGE,
            address_mode_w: vk::SamplerAddressMode::CLAMP_TO_EDGE,
            max_anisotropy: 1.0,
            max_lod: s.max_lod,
            ..Default::default()
        };
        // SAFETY: a plain create info; destroyed in `Drop`.
        let sampler_handle = unsafe { device.create_sampler(&sampler_info, None) }.expect("sampler");
        // SAFETY: as above.
        unsafe { recorder.record_sampler(sampler_handle, &sampler_info) }.expect("record sampler");
        let immutable = [sampler_handle];
        let binding = vk::DescriptorSetLayoutBinding {
            binding: 0,
            descriptor_type: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
            descriptor_count: 1,
            stage_flags: vk::ShaderStageFlags::FRAGMENT,
            immutable_samplers: immutable.as_ptr(),
        };
        let set_info = vk::DescriptorSetLayoutCreateInfo { binding_count: 1, bindings: &binding, ..Default::default() };
        // SAFETY: `set_info` points at locals alive for both calls; destroyed in `Drop`.
        let set_layout = unsafe { device.create_descriptor_set_layout(&set_info, None) }.expect("set layout");
        // SAFETY: as above.
        unsafe { recorder.record_set_layout(set_layout, &set_info) }.expect("record set layout");
        let ranges = [
            vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::VERTEX, offset: 0, size: 16 },
            vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::FRAGMENT, offset: 16, size: 16 },
        ];
        let layout_info = vk::PipelineLayoutCreateInfo {
            set_layout_count: 1,
            set_layouts: &set_layout,
            push_constant_range_count: 2,
            push_constant_ranges: ranges.as_ptr(),
            ..Default::default()
        };
        // SAFETY: as above.
        let layout = unsafe { device.create_pipeline_layout(&layout_info, None) }.expect("layout");
        // SAFETY: as above.
        unsafe { recorder.record_pipeline_layout(layout, &layout_info) }.expect("record layout");
        // The render pass, once with vkCreateRenderPass and once with vkCreateRenderPass2.
        let attachment = vk::AttachmentDescription {
            format: vk::Format::R8G8B8A8_UNORM,
            samples: vk::SampleCountFlags::_1,
            load_op: vk::AttachmentLoadOp::CLEAR,
            store_op: vk::AttachmentStoreOp::STORE,
            stencil_load_op: vk::AttachmentLoadOp::DONT_CARE,
            stencil_store_op: vk::AttachmentStoreOp::DONT_CARE,
            initial_layout: vk::ImageLayout::UNDEFINED,
            final_layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            ..Default::default()
        };
        let color = vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL };
        let subpass = vk::SubpassDescription {
            pipeline_bind_point: vk::PipelineBindPoint::GRAPHICS,
            color_attachment_count: 1,
            color_attachments: &color,
            ..Default::default()
        };
        let pass_info = vk::RenderPassCreateInfo {
            attachment_count: 1,
            attachments: &attachment,
            subpass_count: 1,
            subpasses: &subpass,
            ..Default::default()
        };
        // SAFETY: as above.
        let render_pass = unsafe { device.create_render_pass(&pass_info, None) }.expect("render pass");
        // SAFETY: as above.
        unsafe { recorder.record_render_pass(render_pass, &pass_info) }.expect("record render pass");
        let attachment2 = vk::AttachmentDescription2 {
            format: attachment.format,
            samples: attachment.samples,
            load_op: attachment.load_op,
            store_op: attachment.store_op,
            stencil_load_op: attachment.stencil_load_op,
            stencil_store_op: attachment.stencil_store_op,
            initial_layout: attachment.initial_layout,
            final_layout: attachment.final_layout,
            ..Default::default()
        };
        let color2 = vk::AttachmentReference2 { attachment: 0, layout: color.layout, ..Default::default() };
        let subpass2 = vk::SubpassDescription2 {
            pipeline_bind_point: vk::PipelineBindPoint::GRAPHICS,
            color_attachment_count: 1,
            color_attachments: &color2,
            ..Default::default()
        };
        let pass_info2 = vk::RenderPassCreateInfo2 {
            attachment_count: 1,
            attachments: &attachment2,
            subpass_count: 1,
            subpasses: &subpass2,
            ..Default::default()
        };
        // SAFETY: as above.
        let render_pass2 = unsafe { device.create_render_pass2(&pass_info2, None) }.expect("render pass 2");
        // SAFETY: as above.
        unsafe { recorder.record_render_pass2(render_pass2, &pass_info2) }.expect("record render pass 2");
        // Version 1 with multiview (VkRenderPassMultiviewCreateInfo) and an input attachment:
        // recorded as the version-2 fixture the other tests create with vkCreateRenderPass2.
        let attachments = [attachment, attachment];
        let color1 = vk::AttachmentReference { attachment: 1, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL };
        let input = vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL };
        let subpasses = [
            subpass,
            vk::SubpassDescription {
                pipeline_bind_point: vk::PipelineBindPoint::GRAPHICS,
                input_attachment_count: 1,
                input_attachments: &input,
                color_attachment_count: 1,
                color_attachments: &color1,
                ..Default::default()
            },
        ];
        let dependency = vk::SubpassDependency {
            src_subpass: 0,
            dst_subpass: 1,
            src_stage_mask: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            dst_stage_mask: vk::PipelineStageFlags::FRAGMENT_SHADER,
            src_access_mask: vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
            dst_access_mask: vk::AccessFlags::INPUT_ATTACHMENT_READ,
            dependency_flags: vk::DependencyFlags::BY_REGION | vk::DependencyFlags::VIEW_LOCAL,
        };
        let (masks, offsets, correlation) = ([3u32, 3], [0i32], [3u32]);
        let multiview = vk::RenderPassMultiviewCreateInfo {
            subpass_count: 2,
            view_masks: masks.as_ptr(),
            dependency_count: 1,
            view_offsets: offsets.as_ptr(),
            correlation_mask_count: 1,
            correlation_masks: correlation.as_ptr(),
            ..Default::default()
        };
        let multiview_info = vk::RenderPassCreateInfo {
            next: (&multiview as *const vk::RenderPassMultiviewCreateInfo).cast(),
            attachment_count: 2,
            attachments: attachments.as_ptr(),
            subpass_count: 2,
            subpasses: subpasses.as_ptr(),
            dependency_count: 1,
            dependencies: &dependency,
            ..Default::default()
        };
        // SAFETY: as above.
        let multiview_pass = unsafe { device.create_render_pass(&multiview_info, None) }.expect("multiview pass");
        // SAFETY: as above.
        unsafe { recorder.record_render_pass(multiview_pass, &multiview_info) }.expect("record multiview pass");
        assert_eq!(*recorder.render_pass(multiview_pass).unwrap(), two_subpasses(3));
        // SAFETY: made above, named by no pipeline.
        unsafe { device.destroy_render_pass(multiview_pass, None) };
        assert!(recorder.forget_render_pass(multiview_pass));
        AppObjects {
            gpu: gpu.clone(),
            handles: AppHandles { vert, frag, layout, render_pass },
            sampler: sampler_handle,
            set_layout,
            render_pass2,
        }
    }
}

impl Drop for AppObjects {
    fn drop(&mut self) {
        use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
        let d = self.gpu.raw_device();
        let h = self.handles;
        // SAFETY: the objects were made on this device by `create`, and every pipeline made
        // with them was destroyed before (the tests drop pipelines first).
        unsafe {
            d.destroy_shader_module(h.vert, None);
            d.destroy_shader_module(h.frag, None);
            d.destroy_pipeline_layout(h.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_sampler(self.sampler, None);
            d.destroy_render_pass(h.render_pass, None);
            d.destroy_render_pass(self.render_pass2, None);
        }
    }
}

#[test]
fn the_applications_own_create_info_finds_and_creates_its_harvested_pipeline() {
    use granary::capture::{Capture, CaptureMode};
    use granary::compiler::{Compiler, CompilerOptions};
    use granary_archive::vulkan::{LoadError, LoaderOptions, Offer, PipelineLoader, Source};
    let Some(backend) = support::backend() else { return };
    let backend = Arc::new(backend);
    let log = backend.validation().cloned();
    let gpu = backend.gpu().clone();
    // The harvest: the application's pipeline in the native form, on this device.
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::with_backend(
        CompilerOptions { capture: Some(capture.clone()), ..Default::default() },
        backend.clone(),
    );
    let entry = compiler.compile(&native_descriptor("app/sampled", app_state(), &APP_STAGES)).expect("harvest");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.granary");
    capture.write_archive(&path).expect("write");
    drop(compiler);
    let archive = Arc::new(granary_archive::Archive::open(&path).expect("archive"));
    assert_eq!(archive.lookup_label("app/sampled").unwrap().expect("archived").key(), entry.key);

    // The application: its own objects, recorded from their create infos.
    let recorder = ObjectRecorder::new();
    let app = AppObjects::create(&gpu, &recorder);
    assert_eq!(*recorder.render_pass(app.handles.render_pass).unwrap(), app_render_pass());
    assert_eq!(
        recorder.render_pass(app.handles.render_pass).unwrap(),
        recorder.render_pass(app.render_pass2).unwrap(),
        "vkCreateRenderPass and vkCreateRenderPass2 of one pass record one state"
    );
    assert_eq!(*recorder.pipeline_layout(app.handles.layout).unwrap(), app_state().layout);
    {
        let loader = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default()).expect("loader");
        let lookup = with_app_info(
            app.handles,
            |_| {},
            |info| {
                // SAFETY: `with_app_info`'s create info: every pointer Vulkan reads is a local alive
                // for the call, its objects are `app`'s, alive.
                unsafe { loader.lookup_graphics(&recorder, info) }
            },
        )
        .expect("lookup");
        assert_eq!(lookup.key, entry.key, "the create info finds its harvested pipeline");
        // From 4 threads at once, while another records and forgets objects of its own: every
        // lookup finds it (the recorder and the loader are `Send + Sync`, nothing is externally
        // synchronized).
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 0..200u64 {
                    let h = vk::RenderPass::from_raw(0xdead_0000 + i);
                    recorder.insert_render_pass(h, app_render_pass());
                    assert!(recorder.forget_render_pass(h));
                }
            });
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..25 {
                        let l = with_app_info(
                            app.handles,
                            |_| {},
                            |info| {
                                // SAFETY: as above.
                                unsafe { loader.lookup_graphics(&recorder, info) }
                            },
                        );
                        assert_eq!(l.expect("lookup").key, entry.key);
                    }
                });
            }
        });
        let made = with_app_info(
            app.handles,
            |_| {},
            |info| {
                // SAFETY: as above.
                unsafe { loader.create_graphics(&recorder, info) }
            },
        )
        .expect("create");
        if gpu.captures_binaries() {
            assert_eq!(lookup.offer, Offer::Binaries);
            assert_eq!(made.source, Source::Binaries);
        } else {
            eprintln!("{}: no VK_KHR_pipeline_binary: {:?}", gpu.info.identity.device_name, lookup.offer);
            assert!(matches!(&lookup.offer, Offer::Cache { why } if why.contains("VK_KHR_pipeline_binary")));
            assert!(matches!(made.source, Source::Compiled | Source::CacheHit), "{:?}", made.source);
        }
        assert!(made.pipeline.handle() != vk::Pipeline::null());
        drop(made);
        // One field apart: not archived, and `create_graphics` says so.
        let cull = |i: &mut vk::GraphicsPipelineCreateInfo| {
            // SAFETY: `with_app_info`'s rasterization state, alive during the edit.
            let r = Box::leak(Box::new(unsafe { *i.rasterization_state }));
            r.cull_mode = vk::CullModeFlags::BACK;
            i.rasterization_state = r;
        };
        // SAFETY: as above.
        let other =
            with_app_info(app.handles, cull, |info| unsafe { loader.lookup_graphics(&recorder, info) }).unwrap();
        assert_eq!(other.offer, Offer::NotArchived);
        // SAFETY: as above.
        match with_app_info(app.handles, cull, |info| unsafe { loader.create_graphics(&recorder, info) }) {
            Err(LoadError::NotFound(what)) => assert!(what.contains(&other.key.to_hex()), "{what}"),
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("created a pipeline the archive does not hold"),
        }
        // A handle the recorder was never told about: the create info's error, no driver call.
        let unknown = |i: &mut vk::GraphicsPipelineCreateInfo| i.render_pass = app.render_pass2;
        recorder.forget_render_pass(app.render_pass2);
        // SAFETY: as above.
        match with_app_info(app.handles, unknown, |info| unsafe { loader.lookup_graphics(&recorder, info) }) {
            Err(LoadError::CreateInfo(CreateInfoError::UnknownHandle { what: "VkRenderPass", handle })) => {
                assert_eq!(handle, app.render_pass2.as_raw())
            }
            other => panic!("{other:?}"),
        }
    }
    // `require_binaries`: without binaries for it here, the create info is refused, not compiled.
    let strict = LoaderOptions { require_binaries: true, ..LoaderOptions::default() };
    let loader = PipelineLoader::new(archive.clone(), gpu.clone(), strict).expect("loader");
    // SAFETY: as above.
    let made = with_app_info(app.handles, |_| {}, |info| unsafe { loader.create_graphics(&recorder, info) });
    if gpu.captures_binaries() {
        assert_eq!(made.expect("from binaries").source, Source::Binaries);
    } else {
        match made {
            Err(LoadError::Pipeline { message, .. }) => {
                assert!(message.contains("require_binaries") && message.contains("VK_KHR_pipeline_binary"), "{message}")
            }
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("compiled under require_binaries"),
        }
    }
    drop(loader);
    drop(app);
    drop(archive);
    drop(gpu);
    drop(backend);
    support::assert_clean(log);
}

/// The closed loop (issue 25 item 4): a loader with a use recorder records the create info the
/// archive lacks (with its modules' SPIR-V), the pipeline it has and a label it lacks;
/// `merge_recorded` (`granary harvest --add-recorded`) adds them to the script in first-use
/// order; the harvest of the merged script holds the missed create info, which the loader then
/// finds, and `recorded/` labels name both pipelines in the order they were first used.
#[test]
fn a_recorded_miss_is_added_to_the_script_and_found_after_the_next_harvest() {
    use granary::capture::{Capture, CaptureMode};
    use granary::compiler::{Compiler, CompilerOptions};
    use granary::script::recorded::merge_recorded;
    use granary::script::write::{pretty, Function, LibraryEntry, NativeStageEntry, Pipeline};
    use granary::script::Script;
    use granary_archive::record::{read_record, Event, Recorder, RecorderOptions};
    use granary_archive::vulkan::{LoadError, LoaderOptions, Offer, PipelineLoader};
    let Some(backend) = support::backend() else { return };
    let backend = Arc::new(backend);
    let log = backend.validation().cloned();
    let gpu = backend.gpu().clone();
    let dir = tempfile::tempdir().unwrap();

    // The game's script: the application's pipeline, in the native form.
    let script_path = dir.path().join("game.json");
    let libraries: Vec<LibraryEntry> =
        APP_STAGES.iter().map(|(name, _, _)| LibraryEntry::spirv(*name, &spirv(name))).collect();
    let stages = || {
        APP_STAGES.iter().map(|(name, stage, _)| NativeStageEntry::new(*stage, Function::library(*name, "main"), None))
    };
    let pipelines = [Pipeline::<()>::vulkan(Some("app/sampled".into()), stages().collect(), app_state())];
    let text = pretty(&libraries, &pipelines).unwrap();
    std::fs::write(&script_path, &text).unwrap();

    // Harvests `text` into `out`: every pipeline of the script, as `granary harvest` would.
    let harvest = |text: &str, out: &std::path::Path| -> (Arc<granary_archive::Archive>, granary_archive::KeyContext) {
        let script = Script::parse(text, &script_path, dir.path()).expect("script");
        let capture = Arc::new(Capture::new(CaptureMode::Outputs));
        let compiler = Compiler::with_backend(
            CompilerOptions { capture: Some(capture.clone()), ..Default::default() },
            backend.clone(),
        );
        for p in &script.pipelines {
            let d = p.descriptor.as_ref().expect("descriptor");
            compiler.compile(d).unwrap_or_else(|e| panic!("{}: {e:?}", p.display_name()));
        }
        capture.write_archive(out).expect("write");
        let ctx = compiler.key_context();
        (Arc::new(granary_archive::Archive::open(out).expect("archive")), ctx)
    };
    let (archive, ctx) = harvest(&text, &dir.path().join("v1.granary"));
    assert_eq!(archive.key_context(), ctx);

    // The game, recording: the culled variant first (not archived), then the archived one,
    // then a label nobody harvested.
    let recorder = ObjectRecorder::keeping_code();
    let app = AppObjects::create(&gpu, &recorder);
    let record_path = dir.path().join("game.record");
    let uses = Arc::new(Recorder::open(&record_path, RecorderOptions::default()).expect("recorder"));
    let cull = |i: &mut vk::GraphicsPipelineCreateInfo| {
        // SAFETY: `with_app_info`'s rasterization state, alive during the edit.
        let r = Box::leak(Box::new(unsafe { *i.rasterization_state }));
        r.cull_mode = vk::CullModeFlags::BACK;
        i.rasterization_state = r;
    };
    let culled_key;
    {
        let options = LoaderOptions { recorder: Some(uses.clone()), ..LoaderOptions::default() };
        let loader = PipelineLoader::new(archive.clone(), gpu.clone(), options).expect("loader");
        // SAFETY: `with_app_info`'s create info: every pointer Vulkan reads is a local alive for
        // the call, its objects are `app`'s, alive.
        let culled = with_app_info(app.handles, cull, |info| unsafe { loader.lookup_graphics(&recorder, info) });
        culled_key = culled.expect("lookup").key;
        for _ in 0..3 {
            // SAFETY: as above.
            let made = with_app_info(app.handles, cull, |info| unsafe { loader.create_graphics(&recorder, info) });
            assert!(matches!(made, Err(LoadError::NotFound(_))), "{:?}", made.err());
            // SAFETY: as above.
            let made = with_app_info(app.handles, |_| {}, |info| unsafe { loader.create_graphics(&recorder, info) });
            drop(made.expect("the archived pipeline"));
        }
        assert!(matches!(loader.load_label("ui/never-harvested"), Err(LoadError::NotFound(_))));
    }
    let uses = Arc::into_inner(uses).expect("the loader is gone");
    uses.flush().expect("flush");
    let stats = uses.stats();
    drop(uses);
    assert_eq!((stats.events, stats.repeats, stats.dropped), (5, 4, 0), "{stats:?}");
    let read = read_record(&record_path).expect("record");
    assert_eq!(read.damaged_tail, None);
    let kinds: Vec<&str> = read
        .events
        .iter()
        .map(|e| match e {
            Event::Module { .. } => "module",
            Event::Described { key, .. } => {
                assert_eq!(*key, culled_key);
                "described"
            }
            Event::Used { key, .. } => {
                assert_eq!(*key, archive.lookup_label("app/sampled").unwrap().unwrap().key());
                "used"
            }
            Event::Missed { label, .. } => {
                assert_eq!(label.as_deref(), Some("ui/never-harvested"));
                "missed"
            }
            _ => "another kind",
        })
        .collect();
    assert_eq!(kinds, ["module", "module", "described", "used", "missed"]);

    // `--add-recorded`: merged into the script, which keeps its own text.
    let script = Script::parse(&text, &script_path, dir.path()).expect("script");
    let merged = merge_recorded(&text, &script, ctx, std::slice::from_ref(&read)).expect("merge");
    assert_eq!((merged.described, merged.labelled, merged.libraries, merged.already), (1, 1, 0, 0));
    assert_eq!(merged.not_added.len(), 1, "{:?}", merged.not_added);
    assert!(merged.not_added[0].why.contains("label"), "{:?}", merged.not_added);
    // The script's text is kept: the new entries go between its last pipeline and the `]`.
    let cut = text.trim_end().trim_end_matches('}').trim_end().trim_end_matches(']').trim_end().len();
    assert!(merged.text.starts_with(&text[..cut]) && merged.text.ends_with(&text[cut..]), "{}", merged.text);
    // Merging again adds nothing.
    let again_script = Script::parse(&merged.text, &script_path, dir.path()).expect("merged script");
    let again = merge_recorded(&merged.text, &again_script, ctx, std::slice::from_ref(&read)).expect("merge again");
    assert!(!again.changed() && again.already == 2, "{again:?}");
    assert_eq!(again.text, merged.text);

    // The next harvest holds the missed create info; the loader finds it by the create info.
    let (archive2, _) = harvest(&merged.text, &dir.path().join("v2.granary"));
    assert_eq!(archive2.lookup_label("recorded/000001").unwrap().expect("first used").key(), culled_key);
    assert_eq!(
        archive2.lookup_label("recorded/000002").unwrap().expect("second used").key(),
        archive2.lookup_label("app/sampled").unwrap().unwrap().key(),
        "a recorded use of a scripted pipeline is a second label of its entry"
    );
    assert_eq!(archive2.len(), 2);
    let loader = PipelineLoader::new(archive2.clone(), gpu.clone(), LoaderOptions::default()).expect("loader");
    // SAFETY: as above.
    let found = with_app_info(app.handles, cull, |info| unsafe { loader.lookup_graphics(&recorder, info) }).unwrap();
    assert_ne!(found.offer, Offer::NotArchived);
    // SAFETY: as above.
    let made = with_app_info(app.handles, cull, |info| unsafe { loader.create_graphics(&recorder, info) });
    drop(made.expect("created from the new archive"));
    drop(loader);
    drop(app);
    drop((archive, archive2));
    drop(gpu);
    drop(backend);
    support::assert_clean(log);
}

/// After a driver update (issue 25 item 5), on lavapipe with a forged driver version: the
/// loader finds nothing for this device, a warm-up's `refresh_sidecar` compiles every pipeline
/// at low priority and writes this device's cache data to the sidecar when the last one is
/// done; the next loader reads it (checked against this device) while the shipped archive is
/// never written; a damaged sidecar, or one of another driver, is refused and the pipelines
/// compile as before.
#[test]
fn after_a_driver_update_the_sidecar_is_written_once_and_read_on_the_next_launch() {
    use granary::capture::{Capture, CaptureMode};
    use granary::compiler::{Compiler, CompilerOptions};
    use granary_archive::vulkan::{LoaderOptions, PipelineLoader, Priority, SidecarStatus, Warmup};
    use std::time::Duration;
    let Some(backend) = support::backend() else { return };
    let backend = Arc::new(backend);
    let log = backend.validation().cloned();
    let gpu = backend.gpu().clone();
    let dir = tempfile::tempdir().unwrap();
    // Harvested on this device, then "updated": the driver version differs by one.
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::with_backend(
        CompilerOptions { capture: Some(capture.clone()), ..Default::default() },
        backend.clone(),
    );
    compiler.compile(&native_descriptor("app/sampled", app_state(), &APP_STAGES)).expect("harvest");
    compiler
        .compile(&native_descriptor(
            "app/tess",
            base(2),
            &[("tri.vert", ShaderStage::Vertex, None), ("tri.frag", ShaderStage::Fragment, None)],
        ))
        .expect("harvest");
    drop(compiler);
    let harvested = dir.path().join("harvested.granary");
    capture.write_archive(&harvested).expect("write");
    let shipped = dir.path().join("game.granary");
    common::forge_driver_version(&harvested, &shipped);
    let shipped_bytes = std::fs::read(&shipped).unwrap();
    let archive = Arc::new(granary_archive::Archive::open(&shipped).expect("archive"));
    let sidecar = dir.path().join("game.granary.sidecar");
    let options = || LoaderOptions { sidecar: Some(sidecar.clone()), ..LoaderOptions::default() };

    // First launch after the update: nothing for this device, no sidecar yet.
    {
        let loader = PipelineLoader::new(archive.clone(), gpu.clone(), options()).expect("loader");
        let why = loader.mismatch().expect("a forged driver version").to_string();
        assert!(why.contains("driver_version"), "{why}");
        assert_eq!(*loader.sidecar(), SidecarStatus::Absent);
        assert!(loader.needs_sidecar());
        let warmup = Warmup::new(Arc::new(loader));
        let tickets = warmup.refresh_sidecar(Priority::LOW).expect("refresh").expect("needed");
        assert_eq!(tickets.len(), archive.len());
        assert!(warmup.sidecar_saved().is_none(), "nothing compiled yet");
        assert!(!sidecar.exists());
        let workers = warmup.spawn_workers(2).expect("threads");
        assert!(warmup.wait(&tickets, Duration::from_secs(600)));
        drop(workers);
        let progress = warmup.progress();
        assert_eq!((progress.ready, progress.failed), (archive.len() as u64, 0), "{progress:?}");
        let bytes = warmup.sidecar_saved().expect("written by the last worker").expect("written");
        assert!(bytes > 0);
        assert_eq!(
            std::fs::metadata(&sidecar).unwrap().len(),
            bytes + granary_archive::vulkan::SIDECAR_HEADER_LEN as u64
        );
    }
    assert_eq!(std::fs::read(&shipped).unwrap(), shipped_bytes, "the shipped archive is never written");

    // The next launch reads it: nothing more to do.
    {
        let loader = PipelineLoader::new(archive.clone(), gpu.clone(), options()).expect("loader");
        assert!(
            matches!(loader.sidecar(), SidecarStatus::Loaded { bytes, same_archive: true } if *bytes > 0),
            "{:?}",
            loader.sidecar()
        );
        assert!(!loader.needs_sidecar());
        let warmup = Warmup::new(Arc::new(loader));
        assert!(warmup.refresh_sidecar(Priority::LOW).unwrap().is_none());
        for i in 0..archive.len() {
            drop(warmup.loader().load(&archive.pipeline(i).unwrap()).expect("created"));
        }
        let stats = warmup.loader().stats();
        eprintln!("with the sidecar: {} cache hits, {} compiled", stats.cache_hits, stats.compiled);
    }

    // Damaged: refused with the reason, never handed to the driver; the pipelines compile.
    let mut bad = std::fs::read(&sidecar).unwrap();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    std::fs::write(&sidecar, &bad).unwrap();
    let loader = PipelineLoader::new(archive.clone(), gpu.clone(), options()).expect("loader");
    assert!(
        matches!(loader.sidecar(), SidecarStatus::Refused { why } if why.contains("checksum")),
        "{:?}",
        loader.sidecar()
    );
    assert!(loader.needs_sidecar());
    drop(loader.load(&archive.pipeline(0).unwrap()).expect("compiled"));
    drop(loader);
    // Written on this device for the forged archive, read against the harvested one (this
    // device's own section): not needed there, and the sidecar of another archive still loads.
    std::fs::remove_file(&sidecar).unwrap();
    let fresh = PipelineLoader::new(archive.clone(), gpu.clone(), options()).expect("loader");
    fresh.save_sidecar().expect("save");
    drop(fresh);
    let own = Arc::new(granary_archive::Archive::open(&harvested).expect("archive"));
    let loader = PipelineLoader::new(own, gpu.clone(), options()).expect("loader");
    assert!(loader.mismatch().is_none());
    assert!(matches!(loader.sidecar(), SidecarStatus::Loaded { same_archive: false, .. }), "{:?}", loader.sidecar());
    assert!(!loader.needs_sidecar(), "the archive has this device");
    drop(loader);
    drop(archive);
    drop(gpu);
    drop(backend);
    support::assert_clean(log);
}

// ---------------------------------------------------------------------------------------------
// Ray-tracing pipelines (`VK_KHR_ray_tracing_pipeline`). Lavapipe (Mesa 22.3) has none: there
// these tests say so and check nothing; on a device with `rayTracingPipeline` (the NVIDIA run of
// docs/BENCHMARKS.md) they create, key, capture and load.

/// The ray-tracing fixture's stages: one of each kind (`tests/native/rt.*`).
const RT_STAGES: [Stage<'static>; 6] = [
    ("rt.rgen", ShaderStage::RayGeneration, None),
    ("rt.rmiss", ShaderStage::Miss, None),
    ("rt.rchit", ShaderStage::ClosestHit, None),
    ("rt.rahit", ShaderStage::AnyHit, None),
    ("rt.rint", ShaderStage::Intersection, None),
    ("rt.rcall", ShaderStage::Callable, None),
];

/// A shader group (`VK_SHADER_UNUSED_KHR` where `None`).
fn group(
    ty: u32,
    general: Option<u32>,
    closest: Option<u32>,
    any: Option<u32>,
    intersection: Option<u32>,
) -> ShaderGroup {
    let u = |i: Option<u32>| i.unwrap_or(SHADER_UNUSED);
    ShaderGroup {
        group_type: ty,
        general_shader: u(general),
        closest_hit_shader: u(closest),
        any_hit_shader: u(any),
        intersection_shader: u(intersection),
    }
}

/// A ray-tracing pipeline over [`RT_STAGES`] with a group of every type (ray generation, miss,
/// a triangles hit group with closest and any hit, a procedural one with closest hit and
/// intersection, a callable), an acceleration structure and a storage image.
fn ray_tracing(depth: u32) -> NativePipeline {
    let binding = |binding, descriptor_type| SetLayoutBinding {
        binding,
        descriptor_type,
        descriptor_count: 1,
        stage_flags: 0x100, // RAYGEN
        immutable_samplers: vec![],
        binding_flags: 0,
    };
    NativePipeline {
        flags: 0,
        stages: stage_states(RT_STAGES.len()),
        layout: NativeLayout {
            flags: 0,
            // ACCELERATION_STRUCTURE_KHR, STORAGE_IMAGE.
            set_layouts: vec![SetLayout { flags: 0, bindings: vec![binding(0, 1000150000), binding(1, 3)] }],
            push_constant_ranges: vec![],
        },
        graphics: None,
        ray_tracing: Some(RayTracingState {
            groups: vec![
                group(0, Some(0), None, None, None),
                group(0, Some(1), None, None, None),
                group(1, None, Some(2), Some(3), None),
                group(2, None, Some(2), None, Some(4)),
                group(0, Some(5), None, None, None),
            ],
            max_pipeline_ray_recursion_depth: depth,
            library_interface: None,
            dynamic_states: vec![],
        }),
    }
}

/// A device with `rayTracingPipeline`, or `None` (skipped, saying so: lavapipe has none).
fn ray_tracing_fixture() -> Option<Fixture> {
    let fx = Fixture::open(DeviceFeatures::KNOWN)?;
    needs(&fx, "ray tracing", DeviceFeatures::RAY_TRACING_PIPELINE).then_some(fx)
}

#[test]
fn ray_tracing_pipelines_with_every_group_type_and_each_field() {
    let Some(fx) = ray_tracing_fixture() else { return };
    fn rt(p: &mut NativePipeline) -> &mut RayTracingState {
        p.ray_tracing.as_mut().expect("a ray-tracing state")
    }
    fx.assert_field_changes_key("maxPipelineRayRecursionDepth", &ray_tracing(1), &ray_tracing(2), &RT_STAGES);
    let mut swapped = ray_tracing(1);
    rt(&mut swapped).groups.swap(1, 4);
    fx.assert_field_changes_key("group order", &ray_tracing(1), &swapped, &RT_STAGES);
    let mut no_any_hit = ray_tracing(1);
    rt(&mut no_any_hit).groups[2].any_hit_shader = SHADER_UNUSED;
    fx.assert_field_changes_key("a group's any-hit stage", &ray_tracing(1), &no_any_hit, &RT_STAGES);
    let mut dynamic = ray_tracing(1);
    rt(&mut dynamic).dynamic_states = vec![DYNAMIC_STACK_SIZE];
    fx.assert_field_changes_key("dynamic stack size", &ray_tracing(1), &dynamic, &RT_STAGES);
    let mut no_null_miss = ray_tracing(1);
    no_null_miss.flags = 0x10000; // RAY_TRACING_NO_NULL_MISS_SHADERS_KHR
    fx.assert_field_changes_key("flags", &ray_tracing(1), &no_null_miss, &RT_STAGES);
    if fx.has(DeviceFeatures::RAY_TRAVERSAL_PRIMITIVE_CULLING) {
        let mut skip = ray_tracing(1);
        skip.flags = 0x1000; // RAY_TRACING_SKIP_TRIANGLES_KHR
        fx.assert_field_changes_key("SKIP_TRIANGLES", &ray_tracing(1), &skip, &RT_STAGES);
    }
    // A library: created with its interface, as a linking pipeline would take it.
    let mut library = ray_tracing(1);
    library.flags = 0x800;
    rt(&mut library).library_interface =
        Some(RayTracingInterface { max_pipeline_ray_payload_size: 12, max_pipeline_ray_hit_attribute_size: 8 });
    fx.assert_field_changes_key("library with its interface", &ray_tracing(1), &library, &RT_STAGES);
    // A group naming a stage of the wrong kind is refused before the driver, naming it.
    let mut wrong = ray_tracing(1);
    rt(&mut wrong).groups[1].general_shader = 2;
    let e = fx.create(&wrong, &RT_STAGES).unwrap_err();
    assert!(e.contains("rayTracing.groups[1].generalShader is stages[2], a closest_hit stage"), "{e}");
    // A recursion depth past the device's limit, likewise.
    let deep = ray_tracing(fx.gpu.info.limits.max_ray_recursion_depth + 1);
    let e = fx.create(&deep, &RT_STAGES).unwrap_err();
    assert!(e.contains("maxRayRecursionDepth"), "{e}");
    fx.assert_clean("ray-tracing fixtures");
}

#[test]
fn a_ray_tracing_pipeline_without_the_feature_is_refused_before_the_driver() {
    // Runs on every device (lavapipe too): without `rayTracingPipeline` enabled the pipeline is
    // refused by name, and no ray-tracing call reaches the driver.
    let without = DeviceFeatures::KNOWN.difference(DeviceFeatures::RAY_TRACING_PIPELINE);
    let Some(fx) = Fixture::open(without) else { return };
    let e = fx.create(&ray_tracing(1), &RT_STAGES).unwrap_err();
    assert!(
        e.contains("rayTracingPipeline (the pipeline is a ray-tracing pipeline)") && e.contains("not enabled"),
        "{e}"
    );
    fx.assert_clean("ray tracing refused");
}

#[test]
fn a_harvested_ray_tracing_pipeline_warms_from_its_binaries_with_its_groups() {
    use granary::capture::{Capture, CaptureMode};
    use granary::compiler::{Compiler, CompilerOptions};
    use granary::script::write::{pretty, Function, LibraryEntry, NativeStageEntry, Pipeline};
    use granary::script::Script;
    use granary_archive::vulkan::vulkanalia::vk::KhrRayTracingPipelineExtensionDeviceCommands;
    use granary_archive::vulkan::{LoaderOptions, Offer, PipelineLoader, Source};
    let Some(backend) = support::backend() else { return };
    let backend = Arc::new(backend);
    let gpu = backend.gpu().clone();
    if !gpu.features().contains(DeviceFeatures::RAY_TRACING_PIPELINE) {
        eprintln!(
            "ray tracing: skipped, device '{}' does not support rayTracingPipeline",
            gpu.info.identity.device_name
        );
        return;
    }
    let log = backend.validation().cloned();
    let dir = tempfile::tempdir().unwrap();
    // The script: the fixture in the native form, and its library variant.
    let libraries: Vec<LibraryEntry> =
        RT_STAGES.iter().map(|(name, _, _)| LibraryEntry::spirv(*name, &spirv(name))).collect();
    let stages = || {
        RT_STAGES.iter().map(|(name, stage, _)| NativeStageEntry::new(*stage, Function::library(*name, "main"), None))
    };
    let mut library = ray_tracing(1);
    library.flags = 0x800;
    library.ray_tracing.as_mut().unwrap().library_interface =
        Some(RayTracingInterface { max_pipeline_ray_payload_size: 12, max_pipeline_ray_hit_attribute_size: 8 });
    let pipelines = [
        Pipeline::<()>::vulkan(Some("rt/scene".into()), stages().collect(), ray_tracing(1)),
        Pipeline::<()>::vulkan(Some("rt/library".into()), stages().collect(), library),
    ];
    let script_path = dir.path().join("rt.json");
    let text = pretty(&libraries, &pipelines).unwrap();
    let script = Script::parse(&text, &script_path, dir.path()).expect("script");
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::with_backend(
        CompilerOptions { capture: Some(capture.clone()), ..Default::default() },
        backend.clone(),
    );
    for p in &script.pipelines {
        let d = p.descriptor.as_ref().expect("descriptor");
        compiler.compile(d).unwrap_or_else(|e| panic!("{}: {e:?}", p.display_name()));
    }
    let out = dir.path().join("rt.granary");
    capture.write_archive(&out).expect("write");
    let archive = Arc::new(granary_archive::Archive::open(&out).expect("archive"));
    assert_eq!(archive.len(), 2);
    let binaries = gpu.captures_binaries();
    for label in ["rt/scene", "rt/library"] {
        let p = archive.lookup_label(label).expect("lookup").expect(label);
        assert_eq!(p.kind(), granary_archive::PipelineKind::RayTracing, "{label}");
        let state = p.native_state().expect("state").expect("a native state");
        assert_eq!(state.ray_tracing.as_ref().map(|r| r.groups.len()), Some(5), "{label}");
        if binaries {
            let device = archive.binaries_for(&gpu.identity()).expect("read").expect("this device's section");
            let set = device.binaries(&p).expect("read").expect("a binary set");
            assert!(!set.is_empty() && !set.pipeline_key().is_empty(), "{label}: binaries and a pipeline key");
        }
    }
    {
        let loader = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default()).expect("loader");
        for label in ["rt/scene", "rt/library"] {
            let made = loader.load_label(label).unwrap_or_else(|e| panic!("{label}: {e}"));
            let want = if binaries { Source::Binaries } else { Source::Compiled };
            assert_eq!(made.source, want, "{label}");
            if label == "rt/scene" {
                // The engine's next call: the group handles of its shader binding table, five
                // groups of at most 32 bytes (Vulkan's largest `shaderGroupHandleSize`).
                let mut handles = vec![0u8; 5 * 32];
                // SAFETY: a ray-tracing pipeline of this device with five groups, alive for the
                // call; `handles` holds at least groupCount × shaderGroupHandleSize bytes.
                unsafe {
                    gpu.raw_device().get_ray_tracing_shader_group_handles_khr(
                        made.pipeline.handle(),
                        0,
                        5,
                        &mut handles,
                    )
                }
                .expect("vkGetRayTracingShaderGroupHandlesKHR");
                assert!(handles.iter().any(|b| *b != 0), "group handles");
            }
        }
        // The application's own create info of `rt/scene` finds it, and creates it from its
        // binaries; one with another recursion depth is not archived.
        let recorder = ObjectRecorder::new();
        let app = RtAppObjects::create(&gpu, &recorder);
        let archived = archive.lookup_label("rt/scene").unwrap().unwrap().key();
        for (depth, want) in [(1, Some(archived)), (2, None)] {
            let found = app.with_info(depth, |info| {
                // SAFETY: `with_info`'s create info: its pointers are locals alive for the call,
                // its objects `app`'s, alive; the device has rayTracingPipeline enabled.
                unsafe { loader_lookup(&archive, &gpu, &recorder, info) }
            });
            match want {
                Some(key) => {
                    assert_eq!(found.key, key, "the application's create info has the harvest's key");
                    let want = if binaries { Offer::Binaries } else { found.offer.clone() };
                    assert_eq!(found.offer, want);
                }
                None => assert_eq!(found.offer, Offer::NotArchived),
            }
        }
        let loader = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default()).expect("loader");
        let made = app.with_info(1, |info| {
            // SAFETY: as above.
            unsafe { loader.create_ray_tracing(&recorder, info) }
        });
        let made = made.expect("created from the application's create info");
        assert_eq!(made.source, if binaries { Source::Binaries } else { Source::Compiled });
        drop(made);
        drop(loader);
        app.destroy();
    }
    drop((compiler, backend, gpu, archive));
    support::assert_clean(log);
}

/// `PipelineLoader::lookup_ray_tracing` with a fresh loader.
///
/// # Safety
///
/// As `lookup_ray_tracing`.
unsafe fn loader_lookup(
    archive: &Arc<granary_archive::Archive>,
    gpu: &Arc<Gpu>,
    recorder: &ObjectRecorder,
    info: &vk::RayTracingPipelineCreateInfoKHR,
) -> granary_archive::vulkan::AppLookup {
    use granary_archive::vulkan::{LoaderOptions, PipelineLoader};
    let loader = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default()).expect("loader");
    // SAFETY: the caller's promise.
    unsafe { loader.lookup_ray_tracing(recorder, info) }.expect("lookup")
}

/// What an engine makes for [`ray_tracing`]`(depth)`: a module per stage of [`RT_STAGES`], the
/// set layout (acceleration structure, storage image) and the pipeline layout, each recorded.
struct RtAppObjects {
    gpu: Arc<Gpu>,
    modules: Vec<vk::ShaderModule>,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
}

impl RtAppObjects {
    fn create(gpu: &Arc<Gpu>, recorder: &ObjectRecorder) -> RtAppObjects {
        use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
        let device = gpu.raw_device();
        let modules = RT_STAGES.iter().map(|(name, _, _)| app_module(gpu, recorder, name)).collect();
        let binding = |binding, descriptor_type| vk::DescriptorSetLayoutBinding {
            binding,
            descriptor_type,
            descriptor_count: 1,
            stage_flags: vk::ShaderStageFlags::RAYGEN_KHR,
            immutable_samplers: std::ptr::null(),
        };
        let bindings =
            [binding(0, vk::DescriptorType::ACCELERATION_STRUCTURE_KHR), binding(1, vk::DescriptorType::STORAGE_IMAGE)];
        let set_info =
            vk::DescriptorSetLayoutCreateInfo { binding_count: 2, bindings: bindings.as_ptr(), ..Default::default() };
        // SAFETY: `set_info` points at locals alive for both calls; destroyed in `destroy`.
        let set_layout = unsafe { device.create_descriptor_set_layout(&set_info, None) }.expect("set layout");
        // SAFETY: as above.
        unsafe { recorder.record_set_layout(set_layout, &set_info) }.expect("record set layout");
        let layout_info =
            vk::PipelineLayoutCreateInfo { set_layout_count: 1, set_layouts: &set_layout, ..Default::default() };
        // SAFETY: as above.
        let layout = unsafe { device.create_pipeline_layout(&layout_info, None) }.expect("layout");
        // SAFETY: as above.
        unsafe { recorder.record_pipeline_layout(layout, &layout_info) }.expect("record layout");
        RtAppObjects { gpu: gpu.clone(), modules, set_layout, layout }
    }

    /// The engine's create info of [`ray_tracing`]`(depth)` with these objects.
    fn with_info<R>(&self, depth: u32, f: impl FnOnce(&vk::RayTracingPipelineCreateInfoKHR) -> R) -> R {
        with_rt_info(&self.modules, self.layout, depth, |_| {}, f)
    }

    fn destroy(self) {
        use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
        let device = self.gpu.raw_device();
        // SAFETY: every pipeline made with these objects is destroyed; nothing else uses them.
        unsafe {
            device.destroy_pipeline_layout(self.layout, None);
            device.destroy_descriptor_set_layout(self.set_layout, None);
            for m in self.modules {
                device.destroy_shader_module(m, None);
            }
        }
    }
}

/// The engine's create info of [`ray_tracing`]`(depth)` over `modules` (one per [`RT_STAGES`])
/// and `layout`, built on this frame, changed by `edit`, handed to `f`.
fn with_rt_info<R>(
    modules: &[vk::ShaderModule],
    layout: vk::PipelineLayout,
    depth: u32,
    edit: impl FnOnce(&mut vk::RayTracingPipelineCreateInfoKHR),
    f: impl FnOnce(&vk::RayTracingPipelineCreateInfoKHR) -> R,
) -> R {
    let stages: Vec<vk::PipelineShaderStageCreateInfo> = RT_STAGES
        .iter()
        .zip(modules)
        .map(|((_, stage, _), m)| vk::PipelineShaderStageCreateInfo {
            stage: stage_flag(*stage),
            module: *m,
            name: c"main".as_ptr(),
            ..Default::default()
        })
        .collect();
    let state = ray_tracing(depth);
    let groups: Vec<vk::RayTracingShaderGroupCreateInfoKHR> = state
        .ray_tracing
        .iter()
        .flat_map(|r| &r.groups)
        .map(|g| vk::RayTracingShaderGroupCreateInfoKHR {
            type_: vk::RayTracingShaderGroupTypeKHR::from_raw(g.group_type as i32),
            general_shader: g.general_shader,
            closest_hit_shader: g.closest_hit_shader,
            any_hit_shader: g.any_hit_shader,
            intersection_shader: g.intersection_shader,
            ..Default::default()
        })
        .collect();
    let mut info = vk::RayTracingPipelineCreateInfoKHR {
        stage_count: stages.len() as u32,
        stages: stages.as_ptr(),
        group_count: groups.len() as u32,
        groups: groups.as_ptr(),
        max_pipeline_ray_recursion_depth: depth,
        layout,
        base_pipeline_index: -1,
        ..Default::default()
    };
    edit(&mut info);
    f(&info)
}

#[test]
fn the_applications_ray_tracing_create_info_gives_the_harvests_state_and_key() {
    // No device: the recorder knows the objects by value.
    let ctx = granary::descriptor::KeyContext { target_options: 0x5eed };
    let r = ObjectRecorder::new();
    let modules: Vec<vk::ShaderModule> = (1..=RT_STAGES.len() as u64).map(vk::ShaderModule::from_raw).collect();
    for (m, (name, _, _)) in modules.iter().zip(RT_STAGES) {
        r.insert_shader_module(*m, &spirv(name));
    }
    let layout = vk::PipelineLayout::from_raw(99);
    r.insert_pipeline_layout(layout, ray_tracing(1).layout);
    let inverse = |depth: u32, edit: &dyn Fn(&mut vk::RayTracingPipelineCreateInfoKHR)| {
        // SAFETY: every pointer the inverse reads is a local of `with_rt_info` alive for the call.
        with_rt_info(&modules, layout, depth, edit, |info| unsafe {
            granary_archive::vulkan::ray_tracing_pipeline(&r, info)
        })
    };
    let app = inverse(1, &|_| {}).expect("inverse");
    assert_eq!(app.state, ray_tracing(1), "the create info read back is the script's native state");
    let harvested = native_descriptor("rt", ray_tracing(1), &RT_STAGES);
    assert_eq!(app.key(&ctx), harvested.key(&ctx), "granary's key of the create info is the harvest's");
    assert_ne!(inverse(2, &|_| {}).unwrap().key(&ctx), harvested.key(&ctx));
    // A pipeline that links libraries is another create info than the folded one archived.
    let library = vk::Pipeline::from_raw(7);
    let libraries = vk::PipelineLibraryCreateInfoKHR { library_count: 1, libraries: &library, ..Default::default() };
    let linking = |i: &mut vk::RayTracingPipelineCreateInfoKHR| i.library_info = &libraries;
    assert!(matches!(inverse(1, &linking), Err(CreateInfoError::Unsupported { field, .. }) if field == "pLibraryInfo"));
    // A capture-replay handle is refused, naming the group.
    let handle = [0u8; 32];
    let replay = |i: &mut vk::RayTracingPipelineCreateInfoKHR| {
        // SAFETY: `with_rt_info`'s groups, locals alive during the edit.
        let mut groups = unsafe { std::slice::from_raw_parts(i.groups, i.group_count as usize) }.to_vec();
        groups[3].shader_group_capture_replay_handle = handle.as_ptr().cast();
        i.groups = Box::leak(groups.into_boxed_slice()).as_ptr();
    };
    let e = inverse(1, &replay).unwrap_err().to_string();
    assert!(e.contains("pGroups[3].pShaderGroupCaptureReplayHandle"), "{e}");
    // A group naming a stage of the wrong kind: the structural check, naming the field.
    let wrong = |i: &mut vk::RayTracingPipelineCreateInfoKHR| {
        // SAFETY: as above.
        let mut groups = unsafe { std::slice::from_raw_parts(i.groups, i.group_count as usize) }.to_vec();
        groups[0].general_shader = 2;
        i.groups = Box::leak(groups.into_boxed_slice()).as_ptr();
    };
    let e = inverse(1, &wrong).unwrap_err().to_string();
    assert!(e.contains("rayTracing.groups[0].generalShader is stages[2], a closest_hit stage"), "{e}");
}
