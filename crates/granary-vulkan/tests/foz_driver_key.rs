//! Fossilize import at full fidelity, judged by the driver. For every graphics and compute
//! pipeline `granary import-foz` takes from a database, the driver's `vkGetPipelineKeyKHR` of
//! the create info granary hands it (the key the harvest records beside the binaries) equals
//! the key of a create info built here straight from the database's JSON, member by member
//! with vulkanalia — granary's importer, native model and create-info builder nowhere in
//! between — on the same device.
//!
//! The databases: the checked-in `renderer.foz` (the example's SPIR-V, shaped like a game's
//! recording) and one written here over `tests/native/*.spv` with what a driver keys on set
//! away from its defaults: five stages (tessellation with a domain origin, geometry), polygon
//! mode, depth clamp and bias clamp, sample shading with a sample mask, alpha to coverage and
//! one, line and provoking-vertex state, a version-1 multiview render pass and a version-2
//! one, an immutable sampler, two push-constant ranges, a vertex divisor, depth clip enable
//! and control, a logic op, stencil state, dynamic states, specialization constants, a
//! compute stage with a required subgroup size.
//!
//! Both create infos are created under the validation layer (`GRANARY_VALIDATE=1`: any
//! message fails the test). Where the device has no `VK_KHR_pipeline_binary` (lavapipe) there
//! is no key to ask for: the test says so and checks what it can, both create infos valid and
//! created. A pipeline granary refuses must be refused for a feature the device lacks (named
//! in the message); any other refusal fails. Pipelines linked from libraries are left out of
//! the comparison and named: granary imports them as one whole pipeline, the application's
//! create info links two library pipelines.
//!
//! The same create infos, read by granary's lookup by the application's own create info
//! (every object recorded with its create info in an `ObjectRecorder`, the pipeline read by
//! `vulkan::graphics_pipeline` / `compute_pipeline`), give exactly the key the harvest archived
//! each imported pipeline under: an engine that recorded these pipelines with Fossilize finds
//! their archived binaries from its own create infos.
//!
//! Without a driver the test prints `SKIPPED` (a failure under `GRANARY_REQUIRE_VULKAN=1`).

mod support;

use base64::Engine as _;
use granary::backend::Backend;
use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::import::foz::container::{self, tag, writer};
use granary::script::Script;
use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
use granary_archive::vulkan::vulkanalia::vk::KhrPipelineBinaryExtensionDeviceCommands as _;
use granary_archive::vulkan::Gpu;
use granary_archive::Archive;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------
// The JSON, read as Fossilize writes it (every member present; `pNext` an array of objects).

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or_else(|| panic!("{k}: not a number in {v}"))
}
fn u(v: &Value, k: &str) -> u32 {
    u32::try_from(n(v, k)).unwrap_or_else(|_| panic!("{k}: out of range in {v}"))
}
fn i(v: &Value, k: &str) -> i32 {
    v.get(k).and_then(Value::as_i64).unwrap_or_else(|| panic!("{k}: not a number in {v}")) as i32
}
fn f(v: &Value, k: &str) -> f32 {
    v.get(k).and_then(Value::as_f64).unwrap_or_else(|| panic!("{k}: not a float in {v}")) as f32
}
fn b(v: &Value, k: &str) -> vk::Bool32 {
    u(v, k)
}
fn list<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}
fn handle(v: &Value, k: &str) -> u64 {
    handle_of(v.get(k).unwrap_or_else(|| panic!("{k}: missing in {v}")))
}
/// A handle as Fossilize writes one: 16 hex digits.
fn handle_of(v: &Value) -> u64 {
    let s = v.as_str().unwrap_or_else(|| panic!("{v}: not a handle"));
    u64::from_str_radix(s, 16).unwrap_or_else(|e| panic!("{s}: {e}"))
}
/// The `pNext` structure of type `stype`, if the chain has one.
fn ext(v: &Value, stype: u64) -> Option<&Value> {
    list(v, "pNext").iter().find(|s| s.get("sType").and_then(Value::as_u64) == Some(stype))
}
fn hex(h: u64) -> String {
    format!("{h:016x}")
}

// ---------------------------------------------------------------------------------------
// The direct create infos: every pointer into storage kept until the driver calls return.

/// Storage for what create infos point at; each value is boxed once and never moves.
#[derive(Default)]
struct Keep(Vec<Box<dyn std::any::Any>>);

impl Keep {
    /// `v` kept; its length and a pointer to its first element (null when empty).
    fn slice<T: 'static>(&mut self, v: Vec<T>) -> (u32, *const T) {
        let v = v.into_boxed_slice();
        let r = (v.len() as u32, if v.is_empty() { std::ptr::null() } else { v.as_ptr() });
        self.0.push(Box::new(v));
        r
    }
    /// `v` kept, and a pointer to it.
    fn one<T: 'static>(&mut self, v: T) -> *const T {
        let v = Box::new(v);
        let p: *const T = &*v;
        self.0.push(v);
        p
    }
}

/// The database's objects, created on the device from their JSON as they are first needed.
struct Objects<'a> {
    device: &'a Device,
    /// Each entry's JSON by (tag, Fossilize hash), and modules' SPIR-V words by hash.
    json: HashMap<(u32, u64), Value>,
    code: HashMap<u64, Vec<u32>>,
    modules: HashMap<u64, vk::ShaderModule>,
    samplers: HashMap<u64, vk::Sampler>,
    sets: HashMap<u64, vk::DescriptorSetLayout>,
    layouts: HashMap<u64, vk::PipelineLayout>,
    passes: HashMap<u64, vk::RenderPass>,
    /// Every object recorded with the create info it was made with, as an engine using
    /// granary's lookup by create info does (`PipelineLoader::lookup_graphics`).
    recorder: granary_archive::vulkan::ObjectRecorder,
}

/// The member of a database entry's JSON holding its object (`"shaderModules"`, …).
fn section(t: u32) -> &'static [&'static str] {
    match t {
        tag::SAMPLER => &["samplers"],
        tag::DESCRIPTOR_SET_LAYOUT => &["setLayouts"],
        tag::PIPELINE_LAYOUT => &["pipelineLayouts"],
        tag::SHADER_MODULE => &["shaderModules"],
        tag::RENDER_PASS => &["renderPasses", "renderPasses2"],
        tag::GRAPHICS_PIPELINE => &["graphicsPipelines"],
        tag::COMPUTE_PIPELINE => &["computePipelines"],
        _ => &[],
    }
}

impl<'a> Objects<'a> {
    fn read(device: &'a Device, db: &Path) -> Self {
        let db = container::read(db).unwrap_or_else(|e| panic!("{}: {e}", db.display()));
        let (mut json, mut code) = (HashMap::new(), HashMap::new());
        for e in &db.entries {
            // A module's JSON ends at a NUL where its SPIR-V follows as varints.
            let end = e.payload.iter().position(|&c| c == 0).unwrap_or(e.payload.len());
            let doc: Value = serde_json::from_slice(&e.payload[..end]).expect("entry JSON");
            for key in section(e.tag) {
                let Some(v) = doc.get(*key).and_then(|m| m.get(hex(e.hash))) else { continue };
                let mut v = v.clone();
                if *key == "renderPasses2" {
                    v["version2"] = json!(true);
                }
                if e.tag == tag::SHADER_MODULE {
                    let words = match v.get("code").and_then(Value::as_str) {
                        Some(b64) => {
                            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64 code");
                            bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
                        }
                        None => {
                            let start = end + 1 + n(&v, "varintOffset") as usize;
                            let tail = &e.payload[start..start + n(&v, "varintSize") as usize];
                            granary::import::foz::spirv::decode_varint(tail, n(&v, "codeSize") as usize / 4)
                                .expect("varint code")
                        }
                    };
                    code.insert(e.hash, words);
                }
                json.insert((e.tag, e.hash), v);
            }
        }
        Objects {
            device,
            json,
            code,
            modules: HashMap::new(),
            samplers: HashMap::new(),
            sets: HashMap::new(),
            layouts: HashMap::new(),
            passes: HashMap::new(),
            recorder: Default::default(),
        }
    }

    fn get(&self, t: u32, h: u64) -> Value {
        self.json.get(&(t, h)).cloned().unwrap_or_else(|| panic!("no entry {t}/{}", hex(h)))
    }

    fn module(&mut self, h: u64) -> vk::ShaderModule {
        if let Some(m) = self.modules.get(&h) {
            return *m;
        }
        let code = &self.code[&h];
        let info = vk::ShaderModuleCreateInfo { code_size: code.len() * 4, code: code.as_ptr(), ..Default::default() };
        // SAFETY: `info` points at `code`, alive for the call; the module is destroyed in
        // `destroy`, before the device.
        let m = unsafe { self.device.create_shader_module(&info, None) }.expect("vkCreateShaderModule");
        // SAFETY: the create info it was just made with, alive.
        unsafe { self.recorder.record_shader_module(m, &info) }.expect("record the module");
        self.modules.insert(h, m);
        m
    }

    fn sampler(&mut self, h: u64) -> vk::Sampler {
        if let Some(s) = self.samplers.get(&h) {
            return *s;
        }
        let v = self.get(tag::SAMPLER, h);
        assert!(list(&v, "pNext").is_empty(), "sampler {}: a pNext this test does not build", hex(h));
        let info = vk::SamplerCreateInfo {
            flags: vk::SamplerCreateFlags::from_bits_truncate(u(&v, "flags")),
            mag_filter: vk::Filter::from_raw(i(&v, "magFilter")),
            min_filter: vk::Filter::from_raw(i(&v, "minFilter")),
            mipmap_mode: vk::SamplerMipmapMode::from_raw(i(&v, "mipmapMode")),
            address_mode_u: vk::SamplerAddressMode::from_raw(i(&v, "addressModeU")),
            address_mode_v: vk::SamplerAddressMode::from_raw(i(&v, "addressModeV")),
            address_mode_w: vk::SamplerAddressMode::from_raw(i(&v, "addressModeW")),
            mip_lod_bias: f(&v, "mipLodBias"),
            anisotropy_enable: b(&v, "anisotropyEnable"),
            max_anisotropy: f(&v, "maxAnisotropy"),
            compare_enable: b(&v, "compareEnable"),
            compare_op: vk::CompareOp::from_raw(i(&v, "compareOp")),
            min_lod: f(&v, "minLod"),
            max_lod: f(&v, "maxLod"),
            border_color: vk::BorderColor::from_raw(i(&v, "borderColor")),
            unnormalized_coordinates: b(&v, "unnormalizedCoordinates"),
            ..Default::default()
        };
        // SAFETY: `info` is complete and alive for the call; destroyed in `destroy`.
        let s = unsafe { self.device.create_sampler(&info, None) }.expect("vkCreateSampler");
        // SAFETY: as for modules.
        unsafe { self.recorder.record_sampler(s, &info) }.expect("record the sampler");
        self.samplers.insert(h, s);
        s
    }

    fn set_layout(&mut self, h: u64) -> vk::DescriptorSetLayout {
        if let Some(s) = self.sets.get(&h) {
            return *s;
        }
        let v = self.get(tag::DESCRIPTOR_SET_LAYOUT, h);
        let mut keep = Keep::default();
        let mut bindings = Vec::new();
        for x in list(&v, "bindings") {
            let immutable: Vec<vk::Sampler> =
                list(x, "immutableSamplers").iter().map(|s| self.sampler(handle_of(s))).collect();
            let (_, samplers) = keep.slice(immutable);
            bindings.push(vk::DescriptorSetLayoutBinding {
                binding: u(x, "binding"),
                descriptor_type: vk::DescriptorType::from_raw(i(x, "descriptorType")),
                descriptor_count: u(x, "descriptorCount"),
                stage_flags: vk::ShaderStageFlags::from_bits_truncate(u(x, "stageFlags")),
                immutable_samplers: samplers,
            });
        }
        let (count, bindings) = keep.slice(bindings);
        let mut next: *const std::ffi::c_void = std::ptr::null();
        if let Some(x) = ext(&v, 1000161000) {
            let flags: Vec<vk::DescriptorBindingFlags> = list(x, "bindingFlags")
                .iter()
                .map(|f| vk::DescriptorBindingFlags::from_bits_truncate(f.as_u64().expect("flag") as u32))
                .collect();
            let (c, flags) = keep.slice(flags);
            next = keep
                .one(vk::DescriptorSetLayoutBindingFlagsCreateInfo {
                    binding_count: c,
                    binding_flags: flags,
                    ..Default::default()
                })
                .cast();
        }
        let info = vk::DescriptorSetLayoutCreateInfo {
            next,
            flags: vk::DescriptorSetLayoutCreateFlags::from_bits_truncate(u(&v, "flags")),
            binding_count: count,
            bindings,
            ..Default::default()
        };
        // SAFETY: `info` points into `keep`, alive for the call; destroyed in `destroy`.
        let s = unsafe { self.device.create_descriptor_set_layout(&info, None) }.expect("vkCreateDescriptorSetLayout");
        // SAFETY: as for modules.
        unsafe { self.recorder.record_set_layout(s, &info) }.expect("record the set layout");
        self.sets.insert(h, s);
        s
    }

    fn pipeline_layout(&mut self, h: u64) -> vk::PipelineLayout {
        if let Some(l) = self.layouts.get(&h) {
            return *l;
        }
        let v = self.get(tag::PIPELINE_LAYOUT, h);
        let sets: Vec<vk::DescriptorSetLayout> =
            list(&v, "setLayouts").iter().map(|s| self.set_layout(handle_of(s))).collect();
        let ranges: Vec<vk::PushConstantRange> = list(&v, "pushConstantRanges")
            .iter()
            .map(|r| vk::PushConstantRange {
                stage_flags: vk::ShaderStageFlags::from_bits_truncate(u(r, "stageFlags")),
                offset: u(r, "offset"),
                size: u(r, "size"),
            })
            .collect();
        let info = vk::PipelineLayoutCreateInfo {
            flags: vk::PipelineLayoutCreateFlags::from_bits_truncate(u(&v, "flags")),
            set_layout_count: sets.len() as u32,
            set_layouts: sets.as_ptr(),
            push_constant_range_count: ranges.len() as u32,
            push_constant_ranges: ranges.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `info` points at `sets` and `ranges`, alive for the call; destroyed in
        // `destroy`.
        let l = unsafe { self.device.create_pipeline_layout(&info, None) }.expect("vkCreatePipelineLayout");
        // SAFETY: as for modules.
        unsafe { self.recorder.record_pipeline_layout(l, &info) }.expect("record the pipeline layout");
        self.layouts.insert(h, l);
        l
    }

    fn render_pass(&mut self, h: u64) -> vk::RenderPass {
        if let Some(p) = self.passes.get(&h) {
            return *p;
        }
        let v = self.get(tag::RENDER_PASS, h);
        let p = if v.get("version2").is_some() { self.render_pass2(&v) } else { self.render_pass1(&v) };
        self.passes.insert(h, p);
        p
    }

    fn render_pass1(&self, v: &Value) -> vk::RenderPass {
        let mut keep = Keep::default();
        let attachments: Vec<vk::AttachmentDescription> = list(v, "attachments")
            .iter()
            .map(|a| vk::AttachmentDescription {
                flags: vk::AttachmentDescriptionFlags::from_bits_truncate(u(a, "flags")),
                format: vk::Format::from_raw(i(a, "format")),
                samples: vk::SampleCountFlags::from_bits_truncate(u(a, "samples")),
                load_op: vk::AttachmentLoadOp::from_raw(i(a, "loadOp")),
                store_op: vk::AttachmentStoreOp::from_raw(i(a, "storeOp")),
                stencil_load_op: vk::AttachmentLoadOp::from_raw(i(a, "stencilLoadOp")),
                stencil_store_op: vk::AttachmentStoreOp::from_raw(i(a, "stencilStoreOp")),
                initial_layout: vk::ImageLayout::from_raw(i(a, "initialLayout")),
                final_layout: vk::ImageLayout::from_raw(i(a, "finalLayout")),
            })
            .collect();
        let r = |x: &Value| vk::AttachmentReference {
            attachment: u(x, "attachment"),
            layout: vk::ImageLayout::from_raw(i(x, "layout")),
        };
        let mut subpasses = Vec::new();
        for s in list(v, "subpasses") {
            let refs = |k: &str| list(s, k).iter().map(r).collect::<Vec<_>>();
            let (ni, input) = keep.slice(refs("inputAttachments"));
            let (nc, color) = keep.slice(refs("colorAttachments"));
            let (_, resolve) = keep.slice(refs("resolveAttachments"));
            let depth = s.get("depthStencilAttachment").map_or(std::ptr::null(), |d| keep.one(r(d)));
            let preserve: Vec<u32> =
                list(s, "preserveAttachments").iter().map(|p| p.as_u64().unwrap() as u32).collect();
            let (np, preserve) = keep.slice(preserve);
            subpasses.push(vk::SubpassDescription {
                flags: vk::SubpassDescriptionFlags::from_bits_truncate(u(s, "flags")),
                pipeline_bind_point: vk::PipelineBindPoint::from_raw(i(s, "pipelineBindPoint")),
                input_attachment_count: ni,
                input_attachments: input,
                color_attachment_count: nc,
                color_attachments: color,
                resolve_attachments: resolve,
                depth_stencil_attachment: depth,
                preserve_attachment_count: np,
                preserve_attachments: preserve,
            });
        }
        let dependencies: Vec<vk::SubpassDependency> = list(v, "dependencies")
            .iter()
            .map(|d| vk::SubpassDependency {
                src_subpass: u(d, "srcSubpass"),
                dst_subpass: u(d, "dstSubpass"),
                src_stage_mask: vk::PipelineStageFlags::from_bits_truncate(u(d, "srcStageMask")),
                dst_stage_mask: vk::PipelineStageFlags::from_bits_truncate(u(d, "dstStageMask")),
                src_access_mask: vk::AccessFlags::from_bits_truncate(u(d, "srcAccessMask")),
                dst_access_mask: vk::AccessFlags::from_bits_truncate(u(d, "dstAccessMask")),
                dependency_flags: vk::DependencyFlags::from_bits_truncate(u(d, "dependencyFlags")),
            })
            .collect();
        let nums = |x: &Value, k: &str| list(x, k).iter().map(|m| m.as_i64().unwrap()).collect::<Vec<i64>>();
        let mut next: *const std::ffi::c_void = std::ptr::null();
        if let Some(m) = ext(v, 1000053000) {
            let (nv, masks) = keep.slice(nums(m, "viewMasks").into_iter().map(|x| x as u32).collect());
            let (no, offsets) = keep.slice(nums(m, "viewOffsets").into_iter().map(|x| x as i32).collect());
            let (nm, correlation) = keep.slice(nums(m, "correlationMasks").into_iter().map(|x| x as u32).collect());
            next = keep
                .one(vk::RenderPassMultiviewCreateInfo {
                    subpass_count: nv,
                    view_masks: masks,
                    dependency_count: no,
                    view_offsets: offsets,
                    correlation_mask_count: nm,
                    correlation_masks: correlation,
                    ..Default::default()
                })
                .cast();
        }
        let info = vk::RenderPassCreateInfo {
            next,
            flags: vk::RenderPassCreateFlags::from_bits_truncate(u(v, "flags")),
            attachment_count: attachments.len() as u32,
            attachments: attachments.as_ptr(),
            subpass_count: subpasses.len() as u32,
            subpasses: subpasses.as_ptr(),
            dependency_count: dependencies.len() as u32,
            dependencies: dependencies.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `info` points at locals and into `keep`, alive for the call; destroyed in
        // `destroy`.
        let r = unsafe { self.device.create_render_pass(&info, None) }.expect("vkCreateRenderPass");
        // SAFETY: as for modules.
        unsafe { self.recorder.record_render_pass(r, &info) }.expect("record the render pass");
        r
    }

    fn render_pass2(&self, v: &Value) -> vk::RenderPass {
        let mut keep = Keep::default();
        let attachments: Vec<vk::AttachmentDescription2> = list(v, "attachments")
            .iter()
            .map(|a| vk::AttachmentDescription2 {
                flags: vk::AttachmentDescriptionFlags::from_bits_truncate(u(a, "flags")),
                format: vk::Format::from_raw(i(a, "format")),
                samples: vk::SampleCountFlags::from_bits_truncate(u(a, "samples")),
                load_op: vk::AttachmentLoadOp::from_raw(i(a, "loadOp")),
                store_op: vk::AttachmentStoreOp::from_raw(i(a, "storeOp")),
                stencil_load_op: vk::AttachmentLoadOp::from_raw(i(a, "stencilLoadOp")),
                stencil_store_op: vk::AttachmentStoreOp::from_raw(i(a, "stencilStoreOp")),
                initial_layout: vk::ImageLayout::from_raw(i(a, "initialLayout")),
                final_layout: vk::ImageLayout::from_raw(i(a, "finalLayout")),
                ..Default::default()
            })
            .collect();
        let r = |x: &Value| vk::AttachmentReference2 {
            attachment: u(x, "attachment"),
            layout: vk::ImageLayout::from_raw(i(x, "layout")),
            aspect_mask: vk::ImageAspectFlags::from_bits_truncate(u(x, "aspectMask")),
            ..Default::default()
        };
        let mut subpasses = Vec::new();
        for s in list(v, "subpasses") {
            let refs = |k: &str| list(s, k).iter().map(r).collect::<Vec<_>>();
            let (ni, input) = keep.slice(refs("inputAttachments"));
            let (nc, color) = keep.slice(refs("colorAttachments"));
            let (_, resolve) = keep.slice(refs("resolveAttachments"));
            let depth = s.get("depthStencilAttachment").map_or(std::ptr::null(), |d| keep.one(r(d)));
            let preserve: Vec<u32> =
                list(s, "preserveAttachments").iter().map(|p| p.as_u64().unwrap() as u32).collect();
            let (np, preserve) = keep.slice(preserve);
            subpasses.push(vk::SubpassDescription2 {
                flags: vk::SubpassDescriptionFlags::from_bits_truncate(u(s, "flags")),
                pipeline_bind_point: vk::PipelineBindPoint::from_raw(i(s, "pipelineBindPoint")),
                view_mask: u(s, "viewMask"),
                input_attachment_count: ni,
                input_attachments: input,
                color_attachment_count: nc,
                color_attachments: color,
                resolve_attachments: resolve,
                depth_stencil_attachment: depth,
                preserve_attachment_count: np,
                preserve_attachments: preserve,
                ..Default::default()
            });
        }
        let dependencies: Vec<vk::SubpassDependency2> = list(v, "dependencies")
            .iter()
            .map(|d| vk::SubpassDependency2 {
                src_subpass: u(d, "srcSubpass"),
                dst_subpass: u(d, "dstSubpass"),
                src_stage_mask: vk::PipelineStageFlags::from_bits_truncate(u(d, "srcStageMask")),
                dst_stage_mask: vk::PipelineStageFlags::from_bits_truncate(u(d, "dstStageMask")),
                src_access_mask: vk::AccessFlags::from_bits_truncate(u(d, "srcAccessMask")),
                dst_access_mask: vk::AccessFlags::from_bits_truncate(u(d, "dstAccessMask")),
                dependency_flags: vk::DependencyFlags::from_bits_truncate(u(d, "dependencyFlags")),
                view_offset: i(d, "viewOffset"),
                ..Default::default()
            })
            .collect();
        let correlated: Vec<u32> = list(v, "correlatedViewMasks").iter().map(|m| m.as_u64().unwrap() as u32).collect();
        let info = vk::RenderPassCreateInfo2 {
            flags: vk::RenderPassCreateFlags::from_bits_truncate(u(v, "flags")),
            attachment_count: attachments.len() as u32,
            attachments: attachments.as_ptr(),
            subpass_count: subpasses.len() as u32,
            subpasses: subpasses.as_ptr(),
            dependency_count: dependencies.len() as u32,
            dependencies: dependencies.as_ptr(),
            correlated_view_mask_count: correlated.len() as u32,
            correlated_view_masks: correlated.as_ptr(),
            ..Default::default()
        };
        // SAFETY: `info` points at locals and into `keep`, alive for the call; destroyed in
        // `destroy`.
        let r = unsafe { self.device.create_render_pass2(&info, None) }.expect("vkCreateRenderPass2");
        // SAFETY: as for modules.
        unsafe { self.recorder.record_render_pass2(r, &info) }.expect("record the render pass");
        r
    }

    /// One `VkPipelineShaderStageCreateInfo` (specialization, required subgroup size).
    fn stage(&mut self, s: &Value, keep: &mut Keep) -> vk::PipelineShaderStageCreateInfo {
        let name = keep.one(CString::new(s["name"].as_str().expect("name")).expect("no NUL"));
        // SAFETY: `name` points at a CString kept in `keep`.
        let name = unsafe { (*name).as_ptr() };
        let mut spec = std::ptr::null();
        if let Some(sp) = s.get("specializationInfo") {
            let data = base64::engine::general_purpose::STANDARD.decode(sp["data"].as_str().unwrap()).unwrap();
            assert_eq!(data.len() as u64, n(sp, "dataSize"));
            let entries: Vec<vk::SpecializationMapEntry> = list(sp, "mapEntries")
                .iter()
                .map(|m| vk::SpecializationMapEntry {
                    constant_id: u(m, "constantID"),
                    offset: u(m, "offset"),
                    size: n(m, "size") as usize,
                })
                .collect();
            let (ne, entries) = keep.slice(entries);
            let (nd, data) = keep.slice(data);
            spec = keep.one(vk::SpecializationInfo {
                map_entry_count: ne,
                map_entries: entries,
                data_size: nd as usize,
                data: data.cast(),
            });
        }
        let mut next: *const std::ffi::c_void = std::ptr::null();
        if let Some(x) = ext(s, 1000225001) {
            next = keep
                .one(vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo {
                    required_subgroup_size: u(x, "requiredSubgroupSize"),
                    ..Default::default()
                })
                .cast();
        }
        vk::PipelineShaderStageCreateInfo {
            next,
            flags: vk::PipelineShaderStageCreateFlags::from_bits_truncate(u(s, "flags")),
            stage: vk::ShaderStageFlags::from_bits_truncate(u(s, "stage")),
            module: self.module(handle(s, "module")),
            name: name.cast(),
            specialization_info: spec,
            ..Default::default()
        }
    }

    /// The graphics create info of `v`, every pointer into `keep`.
    fn graphics(&mut self, v: &Value, keep: &mut Keep) -> vk::GraphicsPipelineCreateInfo {
        let stages: Vec<_> = list(v, "stages").iter().map(|s| self.stage(s, keep)).collect();
        let (stage_count, stages) = keep.slice(stages);
        let mut info = vk::GraphicsPipelineCreateInfo {
            flags: vk::PipelineCreateFlags::from_bits_truncate(u(v, "flags")),
            stage_count,
            stages,
            layout: self.pipeline_layout(handle(v, "layout")),
            render_pass: match handle(v, "renderPass") {
                0 => vk::RenderPass::null(),
                h => self.render_pass(h),
            },
            subpass: u(v, "subpass"),
            base_pipeline_handle: vk::Pipeline::null(),
            base_pipeline_index: i(v, "basePipelineIndex"),
            ..Default::default()
        };
        if let Some(x) = v.get("vertexInputState") {
            let bindings: Vec<_> = list(x, "bindings")
                .iter()
                .map(|b| vk::VertexInputBindingDescription {
                    binding: u(b, "binding"),
                    stride: u(b, "stride"),
                    input_rate: vk::VertexInputRate::from_raw(i(b, "inputRate")),
                })
                .collect();
            let attributes: Vec<_> = list(x, "attributes")
                .iter()
                .map(|a| vk::VertexInputAttributeDescription {
                    location: u(a, "location"),
                    binding: u(a, "binding"),
                    format: vk::Format::from_raw(i(a, "format")),
                    offset: u(a, "offset"),
                })
                .collect();
            let mut next: *const std::ffi::c_void = std::ptr::null();
            if let Some(d) = ext(x, 1000190001) {
                let divisors: Vec<_> = list(d, "vertexBindingDivisors")
                    .iter()
                    .map(|d| vk::VertexInputBindingDivisorDescription {
                        binding: u(d, "binding"),
                        divisor: u(d, "divisor"),
                    })
                    .collect();
                let (nd, divisors) = keep.slice(divisors);
                next = keep
                    .one(vk::PipelineVertexInputDivisorStateCreateInfo {
                        vertex_binding_divisor_count: nd,
                        vertex_binding_divisors: divisors,
                        ..Default::default()
                    })
                    .cast();
            }
            let (nb, bindings) = keep.slice(bindings);
            let (na, attributes) = keep.slice(attributes);
            info.vertex_input_state = keep.one(vk::PipelineVertexInputStateCreateInfo {
                next,
                flags: vk::PipelineVertexInputStateCreateFlags::from_bits_truncate(u(x, "flags")),
                vertex_binding_description_count: nb,
                vertex_binding_descriptions: bindings,
                vertex_attribute_description_count: na,
                vertex_attribute_descriptions: attributes,
                ..Default::default()
            });
        }
        if let Some(x) = v.get("inputAssemblyState") {
            info.input_assembly_state = keep.one(vk::PipelineInputAssemblyStateCreateInfo {
                flags: vk::PipelineInputAssemblyStateCreateFlags::from_bits_truncate(u(x, "flags")),
                topology: vk::PrimitiveTopology::from_raw(i(x, "topology")),
                primitive_restart_enable: b(x, "primitiveRestartEnable"),
                ..Default::default()
            });
        }
        if let Some(x) = v.get("tessellationState") {
            let next = ext(x, 1000117003).map_or(std::ptr::null(), |d| {
                keep.one(vk::PipelineTessellationDomainOriginStateCreateInfo {
                    domain_origin: vk::TessellationDomainOrigin::from_raw(i(d, "domainOrigin")),
                    ..Default::default()
                })
                .cast()
            });
            info.tessellation_state = keep.one(vk::PipelineTessellationStateCreateInfo {
                next,
                flags: vk::PipelineTessellationStateCreateFlags::from_bits_truncate(u(x, "flags")),
                patch_control_points: u(x, "patchControlPoints"),
                ..Default::default()
            });
        }
        if let Some(x) = v.get("viewportState") {
            let viewports: Vec<_> = list(x, "viewports")
                .iter()
                .map(|p| vk::Viewport {
                    x: f(p, "x"),
                    y: f(p, "y"),
                    width: f(p, "width"),
                    height: f(p, "height"),
                    min_depth: f(p, "minDepth"),
                    max_depth: f(p, "maxDepth"),
                })
                .collect();
            let scissors: Vec<_> = list(x, "scissors")
                .iter()
                .map(|r| vk::Rect2D {
                    offset: vk::Offset2D { x: i(r, "x"), y: i(r, "y") },
                    extent: vk::Extent2D { width: u(r, "width"), height: u(r, "height") },
                })
                .collect();
            let next = ext(x, 1000355001).map_or(std::ptr::null(), |d| {
                keep.one(vk::PipelineViewportDepthClipControlCreateInfoEXT {
                    negative_one_to_one: b(d, "negativeOneToOne"),
                    ..Default::default()
                })
                .cast()
            });
            let (_, viewports) = keep.slice(viewports);
            let (_, scissors) = keep.slice(scissors);
            info.viewport_state = keep.one(vk::PipelineViewportStateCreateInfo {
                next,
                flags: vk::PipelineViewportStateCreateFlags::from_bits_truncate(u(x, "flags")),
                viewport_count: u(x, "viewportCount"),
                viewports,
                scissor_count: u(x, "scissorCount"),
                scissors,
                ..Default::default()
            });
        }
        if let Some(x) = v.get("rasterizationState") {
            let mut next: *const std::ffi::c_void = std::ptr::null();
            // The chain in the recorded order (a driver reads a chain by type, not position).
            for s in list(x, "pNext").iter().rev() {
                let p: *const std::ffi::c_void = match n(s, "sType") {
                    1000259001 => keep
                        .one(vk::PipelineRasterizationLineStateCreateInfo {
                            next,
                            line_rasterization_mode: vk::LineRasterizationMode::from_raw(i(s, "lineRasterizationMode")),
                            stippled_line_enable: b(s, "stippledLineEnable"),
                            line_stipple_factor: u(s, "lineStippleFactor"),
                            line_stipple_pattern: u(s, "lineStipplePattern") as u16,
                            ..Default::default()
                        })
                        .cast(),
                    1000254001 => keep
                        .one(vk::PipelineRasterizationProvokingVertexStateCreateInfoEXT {
                            next,
                            provoking_vertex_mode: vk::ProvokingVertexModeEXT::from_raw(i(s, "provokingVertexMode")),
                            ..Default::default()
                        })
                        .cast(),
                    1000101001 => keep
                        .one(vk::PipelineRasterizationConservativeStateCreateInfoEXT {
                            next,
                            flags: vk::PipelineRasterizationConservativeStateCreateFlagsEXT::from_bits_truncate(u(
                                s, "flags",
                            )),
                            conservative_rasterization_mode: vk::ConservativeRasterizationModeEXT::from_raw(i(
                                s,
                                "conservativeRasterizationMode",
                            )),
                            extra_primitive_overestimation_size: f(s, "extraPrimitiveOverestimationSize"),
                            ..Default::default()
                        })
                        .cast(),
                    1000102001 => keep
                        .one(vk::PipelineRasterizationDepthClipStateCreateInfoEXT {
                            next,
                            flags: vk::PipelineRasterizationDepthClipStateCreateFlagsEXT::from_bits_truncate(u(
                                s, "flags",
                            )),
                            depth_clip_enable: b(s, "depthClipEnable"),
                            ..Default::default()
                        })
                        .cast(),
                    other => panic!("rasterization pNext {other}: not built by this test"),
                };
                next = p;
            }
            info.rasterization_state = keep.one(vk::PipelineRasterizationStateCreateInfo {
                next,
                flags: vk::PipelineRasterizationStateCreateFlags::from_bits_truncate(u(x, "flags")),
                depth_clamp_enable: b(x, "depthClampEnable"),
                rasterizer_discard_enable: b(x, "rasterizerDiscardEnable"),
                polygon_mode: vk::PolygonMode::from_raw(i(x, "polygonMode")),
                cull_mode: vk::CullModeFlags::from_bits_truncate(u(x, "cullMode")),
                front_face: vk::FrontFace::from_raw(i(x, "frontFace")),
                depth_bias_enable: b(x, "depthBiasEnable"),
                depth_bias_constant_factor: f(x, "depthBiasConstantFactor"),
                depth_bias_clamp: f(x, "depthBiasClamp"),
                depth_bias_slope_factor: f(x, "depthBiasSlopeFactor"),
                line_width: f(x, "lineWidth"),
                ..Default::default()
            });
        }
        if let Some(x) = v.get("multisampleState") {
            let mask: Vec<u32> = list(x, "sampleMask").iter().map(|m| m.as_u64().unwrap() as u32).collect();
            let (_, mask) = keep.slice(mask);
            info.multisample_state = keep.one(vk::PipelineMultisampleStateCreateInfo {
                flags: vk::PipelineMultisampleStateCreateFlags::from_bits_truncate(u(x, "flags")),
                rasterization_samples: vk::SampleCountFlags::from_bits_truncate(u(x, "rasterizationSamples")),
                sample_shading_enable: b(x, "sampleShadingEnable"),
                min_sample_shading: f(x, "minSampleShading"),
                sample_mask: mask,
                alpha_to_coverage_enable: b(x, "alphaToCoverageEnable"),
                alpha_to_one_enable: b(x, "alphaToOneEnable"),
                ..Default::default()
            });
        }
        if let Some(x) = v.get("depthStencilState") {
            let op = |s: &Value| vk::StencilOpState {
                fail_op: vk::StencilOp::from_raw(i(s, "failOp")),
                pass_op: vk::StencilOp::from_raw(i(s, "passOp")),
                depth_fail_op: vk::StencilOp::from_raw(i(s, "depthFailOp")),
                compare_op: vk::CompareOp::from_raw(i(s, "compareOp")),
                compare_mask: u(s, "compareMask"),
                write_mask: u(s, "writeMask"),
                reference: u(s, "reference"),
            };
            info.depth_stencil_state = keep.one(vk::PipelineDepthStencilStateCreateInfo {
                flags: vk::PipelineDepthStencilStateCreateFlags::from_bits_truncate(u(x, "flags")),
                depth_test_enable: b(x, "depthTestEnable"),
                depth_write_enable: b(x, "depthWriteEnable"),
                depth_compare_op: vk::CompareOp::from_raw(i(x, "depthCompareOp")),
                depth_bounds_test_enable: b(x, "depthBoundsTestEnable"),
                stencil_test_enable: b(x, "stencilTestEnable"),
                front: op(&x["front"]),
                back: op(&x["back"]),
                min_depth_bounds: f(x, "minDepthBounds"),
                max_depth_bounds: f(x, "maxDepthBounds"),
                ..Default::default()
            });
        }
        if let Some(x) = v.get("colorBlendState") {
            let attachments: Vec<_> = list(x, "attachments")
                .iter()
                .map(|a| vk::PipelineColorBlendAttachmentState {
                    blend_enable: b(a, "blendEnable"),
                    src_color_blend_factor: vk::BlendFactor::from_raw(i(a, "srcColorBlendFactor")),
                    dst_color_blend_factor: vk::BlendFactor::from_raw(i(a, "dstColorBlendFactor")),
                    color_blend_op: vk::BlendOp::from_raw(i(a, "colorBlendOp")),
                    src_alpha_blend_factor: vk::BlendFactor::from_raw(i(a, "srcAlphaBlendFactor")),
                    dst_alpha_blend_factor: vk::BlendFactor::from_raw(i(a, "dstAlphaBlendFactor")),
                    alpha_blend_op: vk::BlendOp::from_raw(i(a, "alphaBlendOp")),
                    color_write_mask: vk::ColorComponentFlags::from_bits_truncate(u(a, "colorWriteMask")),
                })
                .collect();
            let constants = list(x, "blendConstants");
            let (na, attachments) = keep.slice(attachments);
            info.color_blend_state = keep.one(vk::PipelineColorBlendStateCreateInfo {
                flags: vk::PipelineColorBlendStateCreateFlags::from_bits_truncate(u(x, "flags")),
                logic_op_enable: b(x, "logicOpEnable"),
                logic_op: vk::LogicOp::from_raw(i(x, "logicOp")),
                attachment_count: na,
                attachments,
                blend_constants: std::array::from_fn(|k| constants[k].as_f64().unwrap() as f32),
                ..Default::default()
            });
        }
        if let Some(x) = v.get("dynamicState") {
            let states: Vec<_> = list(x, "dynamicState")
                .iter()
                .map(|d| vk::DynamicState::from_raw(d.as_i64().unwrap() as i32))
                .collect();
            let (nd, states) = keep.slice(states);
            info.dynamic_state = keep.one(vk::PipelineDynamicStateCreateInfo {
                flags: vk::PipelineDynamicStateCreateFlags::from_bits_truncate(u(x, "flags")),
                dynamic_state_count: nd,
                dynamic_states: states,
                ..Default::default()
            });
        }
        for s in list(v, "pNext") {
            assert_eq!(n(s, "sType"), 1000044002, "pipeline pNext {s}: not built by this test");
            let formats: Vec<vk::Format> = list(s, "colorAttachmentFormats")
                .iter()
                .map(|c| vk::Format::from_raw(c.as_i64().unwrap() as i32))
                .collect();
            let (nc, formats) = keep.slice(formats);
            info.next = keep
                .one(vk::PipelineRenderingCreateInfo {
                    view_mask: u(s, "viewMask"),
                    color_attachment_count: nc,
                    color_attachment_formats: formats,
                    depth_attachment_format: vk::Format::from_raw(i(s, "depthAttachmentFormat")),
                    stencil_attachment_format: vk::Format::from_raw(i(s, "stencilAttachmentFormat")),
                    ..Default::default()
                })
                .cast();
        }
        info
    }

    /// The compute create info of `v`, every pointer into `keep`.
    fn compute(&mut self, v: &Value, keep: &mut Keep) -> vk::ComputePipelineCreateInfo {
        vk::ComputePipelineCreateInfo {
            flags: vk::PipelineCreateFlags::from_bits_truncate(u(v, "flags")),
            stage: self.stage(&v["stage"], keep),
            layout: self.pipeline_layout(handle(v, "layout")),
            base_pipeline_handle: vk::Pipeline::null(),
            base_pipeline_index: i(v, "basePipelineIndex"),
            ..Default::default()
        }
    }

    fn destroy(self) {
        // SAFETY: every pipeline made with these objects was destroyed; nothing else uses
        // them, and the device outlives this call.
        unsafe {
            for (_, p) in self.passes {
                self.device.destroy_render_pass(p, None);
            }
            for (_, l) in self.layouts {
                self.device.destroy_pipeline_layout(l, None);
            }
            for (_, s) in self.sets {
                self.device.destroy_descriptor_set_layout(s, None);
            }
            for (_, s) in self.samplers {
                self.device.destroy_sampler(s, None);
            }
            for (_, m) in self.modules {
                self.device.destroy_shader_module(m, None);
            }
        }
    }
}

/// `vkGetPipelineKeyKHR` of `info` (through `VkPipelineCreateInfoKHR::pNext`).
fn driver_key<T>(device: &Device, info: &T) -> Vec<u8> {
    let create = vk::PipelineCreateInfoKHR { next: (info as *const T as *mut T).cast(), ..Default::default() };
    let mut key = vk::PipelineBinaryKeyKHR::default();
    // SAFETY: the device enabled VK_KHR_pipeline_binary (the caller checked); `info` is a
    // graphics or compute create info whose pointers are kept alive by the caller.
    unsafe { device.get_pipeline_key_khr(Some(&create), &mut key) }.expect("vkGetPipelineKeyKHR");
    key.key[..key.key_size as usize].to_vec()
}

// ---------------------------------------------------------------------------------------
// The database written here.

fn spirv_words(name: &str) -> Vec<u32> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/native").join(format!("{name}.spv"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
}

fn doc(key: &str, h: u64, v: Value) -> Vec<u8> {
    let mut m = serde_json::Map::new();
    m.insert(hex(h), v);
    serde_json::to_vec(&json!({"version": 6, key: m})).unwrap()
}

/// A specialization as written: `(constantID, offset, size)` map entries and the data.
type Spec = (Vec<(u32, u32, u32)>, Vec<u8>);

fn stage_json(bit: u32, module: u64, spec: Option<Spec>) -> Value {
    let mut s = json!({"flags": 0, "stage": bit, "module": hex(module), "name": "main"});
    if let Some((entries, data)) = spec {
        let entries: Vec<Value> = entries
            .iter()
            .map(|&(id, offset, size)| json!({"constantID": id, "offset": offset, "size": size}))
            .collect();
        s["specializationInfo"] = json!({"dataSize": data.len(), "mapEntries": entries,
            "data": base64::engine::general_purpose::STANDARD.encode(&data)});
    }
    s
}

fn stencil_json(fail: u32) -> Value {
    json!({"failOp": fail, "passOp": 2, "depthFailOp": 3, "compareOp": 5, "compareMask": 240, "writeMask": 15, "reference": 7})
}

/// A database of three graphics pipelines and a compute pipeline over `tests/native/*.spv`,
/// their layouts, an immutable sampler and two render passes.
fn written_database(path: &Path) -> Vec<u64> {
    const VS: u64 = 0x7100_0000_0000_0001;
    const TESC: u64 = 0x7100_0000_0000_0002;
    const TESE: u64 = 0x7100_0000_0000_0003;
    const GS: u64 = 0x7100_0000_0000_0004;
    const FS: u64 = 0x7100_0000_0000_0005;
    const PUSH_VS: u64 = 0x7100_0000_0000_0006;
    const SAMPLED_FS: u64 = 0x7100_0000_0000_0007;
    const CS: u64 = 0x7100_0000_0000_0008;
    const SAMPLER: u64 = 0x7200_0000_0000_0001;
    const SET_TEX: u64 = 0x7300_0000_0000_0001;
    const SET_BUF: u64 = 0x7300_0000_0000_0002;
    const EMPTY: u64 = 0x7400_0000_0000_0001;
    const PUSH: u64 = 0x7400_0000_0000_0002;
    const COMPUTE: u64 = 0x7400_0000_0000_0003;
    const RP1: u64 = 0x7500_0000_0000_0001;
    const RP2: u64 = 0x7500_0000_0000_0002;
    const FIVE: u64 = 0xf100_0000_0000_0001;
    const LINES: u64 = 0xf100_0000_0000_0002;
    const CLIP: u64 = 0xf100_0000_0000_0003;
    const FILL: u64 = 0xf100_0000_0000_0004;
    let module = |h: u64, name: &str| {
        let words = spirv_words(name);
        let code = base64::engine::general_purpose::STANDARD
            .encode(words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>());
        (tag::SHADER_MODULE, h, doc("shaderModules", h, json!({"flags": 0, "codeSize": words.len() * 4, "code": code})))
    };
    let red = 0.5f32.to_le_bytes().to_vec();
    let base = |layout: u64, rp: u64| {
        json!({"flags": 0, "basePipelineHandle": "0000000000000000", "basePipelineIndex": -1,
            "layout": hex(layout), "renderPass": hex(rp), "subpass": 0,
            "vertexInputState": {"flags": 0, "bindings": [{"binding": 0, "stride": 16, "inputRate": 0}],
                "attributes": [{"location": 0, "binding": 0, "offset": 0, "format": 109}]},
            "inputAssemblyState": {"flags": 0, "topology": 3, "primitiveRestartEnable": 0},
            "viewportState": {"flags": 0, "viewportCount": 1, "scissorCount": 1},
            "rasterizationState": {"flags": 0, "depthClampEnable": 0, "rasterizerDiscardEnable": 0, "polygonMode": 0,
                "cullMode": 0, "frontFace": 0, "depthBiasEnable": 0, "depthBiasConstantFactor": 0.0,
                "depthBiasClamp": 0.0, "depthBiasSlopeFactor": 0.0, "lineWidth": 1.0},
            "multisampleState": {"flags": 0, "rasterizationSamples": 1, "sampleShadingEnable": 0, "minSampleShading": 0.0,
                "alphaToCoverageEnable": 0, "alphaToOneEnable": 0},
            "colorBlendState": {"flags": 0, "logicOpEnable": 0, "logicOp": 0, "blendConstants": [0.0, 0.0, 0.0, 0.0],
                "attachments": [{"blendEnable": 0, "srcColorBlendFactor": 1, "dstColorBlendFactor": 0, "colorBlendOp": 0,
                    "srcAlphaBlendFactor": 1, "dstAlphaBlendFactor": 0, "alphaBlendOp": 0, "colorWriteMask": 15}]},
            "dynamicState": {"flags": 0, "dynamicState": [0, 1]}})
    };
    // 1. Five stages, tessellation with a domain origin, polygon mode line, depth clamp and a
    // bias clamp, 4× sample shading with a mask, alpha to coverage and one, stencil,
    // constant blending, a version-2 render pass with two subpasses (used: 1).
    let mut five = base(EMPTY, RP2);
    five["subpass"] = json!(1);
    five["stages"] = json!([
        stage_json(0x1, VS, None),
        stage_json(0x2, TESC, None),
        stage_json(0x4, TESE, None),
        stage_json(0x8, GS, None),
        stage_json(0x10, FS, Some((vec![(0, 0, 4)], red.clone())))
    ]);
    five["inputAssemblyState"]["topology"] = json!(10);
    five["tessellationState"] =
        json!({"flags": 0, "patchControlPoints": 3, "pNext": [{"sType": 1000117003, "domainOrigin": 1}]});
    five["rasterizationState"] = json!({"flags": 0, "depthClampEnable": 1, "rasterizerDiscardEnable": 0, "polygonMode": 1,
        "cullMode": 2, "frontFace": 1, "depthBiasEnable": 1, "depthBiasConstantFactor": 1.5, "depthBiasClamp": 0.125,
        "depthBiasSlopeFactor": -2.0, "lineWidth": 1.0});
    five["multisampleState"] = json!({"flags": 0, "rasterizationSamples": 4, "sampleShadingEnable": 1, "minSampleShading": 0.5,
        "alphaToCoverageEnable": 1, "alphaToOneEnable": 1, "sampleMask": [13]});
    five["depthStencilState"] = json!({"flags": 0, "depthTestEnable": 1, "depthWriteEnable": 1, "depthCompareOp": 6,
        "depthBoundsTestEnable": 0, "stencilTestEnable": 1, "front": stencil_json(1), "back": stencil_json(4),
        "minDepthBounds": 0.0, "maxDepthBounds": 1.0});
    five["colorBlendState"]["blendConstants"] = json!([0.125, 0.25, 0.5, 1.0]);
    five["colorBlendState"]["attachments"][0] = json!({"blendEnable": 1, "srcColorBlendFactor": 10,
        "dstColorBlendFactor": 11, "colorBlendOp": 1, "srcAlphaBlendFactor": 1, "dstAlphaBlendFactor": 9,
        "alphaBlendOp": 4, "colorWriteMask": 11});
    five["dynamicState"]["dynamicState"] = json!([0, 1, 3, 8]);
    // 2. Lines through a version-1 multiview render pass: Bresenham line state, the last
    // provoking vertex, a divisor on an instance-rate binding, push constants in two ranges,
    // an immutable sampler.
    let mut lines = base(PUSH, RP1);
    lines["stages"] = json!([stage_json(0x1, PUSH_VS, None), stage_json(0x10, SAMPLED_FS, None)]);
    lines["inputAssemblyState"]["topology"] = json!(1);
    lines["vertexInputState"]["bindings"] = json!([{"binding": 0, "stride": 16, "inputRate": 0},
        {"binding": 1, "stride": 32, "inputRate": 1}]);
    lines["vertexInputState"]["pNext"] = json!([{"sType": 1000190001, "vertexBindingDivisorCount": 1,
        "vertexBindingDivisors": [{"binding": 1, "divisor": 3}]}]);
    lines["rasterizationState"]["lineWidth"] = json!(1.0);
    lines["rasterizationState"]["pNext"] = json!([
        {"sType": 1000259001, "lineRasterizationMode": 2, "stippledLineEnable": 0, "lineStippleFactor": 1, "lineStipplePattern": 0},
        {"sType": 1000254001, "provokingVertexMode": 1}]);
    lines["dynamicState"]["dynamicState"] = json!([0, 1, 2]);
    // 3. Dynamic rendering with depth and stencil formats, depth clip enable and control,
    // a logic op.
    let mut clip = base(EMPTY, 0);
    clip["stages"] = json!([stage_json(0x1, VS, None), stage_json(0x10, FS, Some((vec![(0, 0, 4)], red)))]);
    clip["viewportState"]["pNext"] = json!([{"sType": 1000355001, "negativeOneToOne": 1}]);
    clip["rasterizationState"]["pNext"] = json!([{"sType": 1000102001, "flags": 0, "depthClipEnable": 1}]);
    clip["colorBlendState"]["logicOpEnable"] = json!(1);
    clip["colorBlendState"]["logicOp"] = json!(3);
    clip["depthStencilState"] = json!({"flags": 0, "depthTestEnable": 1, "depthWriteEnable": 0, "depthCompareOp": 3,
        "depthBoundsTestEnable": 0, "stencilTestEnable": 0, "front": stencil_json(0), "back": stencil_json(0),
        "minDepthBounds": 0.0, "maxDepthBounds": 1.0});
    clip["pNext"] = json!([{"sType": 1000044002, "viewMask": 0, "colorAttachmentFormats": [44],
        "depthAttachmentFormat": 130, "stencilAttachmentFormat": 130}]);
    // 4. Compute: workgroup size and value as specialization constants, a required subgroup
    // size.
    let spec: Vec<u8> = [64u32, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut cs = stage_json(0x20, CS, Some((vec![(0, 0, 4), (1, 4, 4)], spec)));
    cs["pNext"] = json!([{"sType": 1000225001, "requiredSubgroupSize": 32}]);
    let fill = json!({"flags": 0, "layout": hex(COMPUTE), "basePipelineHandle": "0000000000000000",
        "basePipelineIndex": -1, "stage": cs});
    let attachment = |format: u32, samples: u32, layout: u32| {
        json!({"flags": 0, "format": format, "samples": samples, "loadOp": 1, "storeOp": 0, "stencilLoadOp": 2,
            "stencilStoreOp": 1, "initialLayout": 0, "finalLayout": layout})
    };
    let rp2 = json!({"flags": 0, "correlatedViewMasks": [],
        "attachments": [attachment(37, 4, 2), attachment(130, 4, 3)],
        "subpasses": [
            {"flags": 0, "pipelineBindPoint": 0, "viewMask": 0,
             "colorAttachments": [{"attachment": 0, "layout": 2, "aspectMask": 1}]},
            {"flags": 0, "pipelineBindPoint": 0, "viewMask": 0,
             "colorAttachments": [{"attachment": 0, "layout": 2, "aspectMask": 1}],
             "depthStencilAttachment": {"attachment": 1, "layout": 3, "aspectMask": 6}}],
        "dependencies": [{"srcSubpass": 0, "dstSubpass": 1, "srcStageMask": 1024, "dstStageMask": 1024,
            "srcAccessMask": 256, "dstAccessMask": 256, "dependencyFlags": 1, "viewOffset": 0}]});
    let rp1 = json!({"flags": 0, "attachments": [attachment(37, 1, 2)],
        "subpasses": [{"flags": 0, "pipelineBindPoint": 0, "colorAttachments": [{"attachment": 0, "layout": 2}]}],
        "dependencies": [],
        "pNext": [{"sType": 1000053000, "viewMasks": [3], "viewOffsets": [], "correlationMasks": [3]}]});
    let entries = vec![
        module(VS, "tri.vert"),
        module(TESC, "tess.tesc"),
        module(TESE, "tess.tese"),
        module(GS, "tri.geom"),
        module(FS, "tri.frag"),
        module(PUSH_VS, "push.vert"),
        module(SAMPLED_FS, "sampled.frag"),
        module(CS, "fill.comp"),
        (
            tag::SAMPLER,
            SAMPLER,
            doc(
                "samplers",
                SAMPLER,
                json!({"flags": 0, "magFilter": 1, "minFilter": 0, "mipmapMode": 1,
                "addressModeU": 0, "addressModeV": 1, "addressModeW": 2, "mipLodBias": 0.5, "anisotropyEnable": 0,
                "maxAnisotropy": 1.0, "compareEnable": 0, "compareOp": 0, "minLod": 0.0, "maxLod": 4.0,
                "borderColor": 3, "unnormalizedCoordinates": 0}),
            ),
        ),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_TEX,
            doc(
                "setLayouts",
                SET_TEX,
                json!({"flags": 0, "bindings": [{"binding": 0, "descriptorType": 1,
                "descriptorCount": 1, "stageFlags": 16, "immutableSamplers": [hex(SAMPLER)]}]}),
            ),
        ),
        (
            tag::DESCRIPTOR_SET_LAYOUT,
            SET_BUF,
            doc(
                "setLayouts",
                SET_BUF,
                json!({"flags": 0, "bindings": [{"binding": 0, "descriptorType": 7,
                "descriptorCount": 1, "stageFlags": 32}]}),
            ),
        ),
        (
            tag::PIPELINE_LAYOUT,
            EMPTY,
            doc("pipelineLayouts", EMPTY, json!({"flags": 0, "setLayouts": [], "pushConstantRanges": []})),
        ),
        (
            tag::PIPELINE_LAYOUT,
            PUSH,
            doc(
                "pipelineLayouts",
                PUSH,
                json!({"flags": 0, "setLayouts": [hex(SET_TEX)], "pushConstantRanges": [
                {"stageFlags": 1, "offset": 0, "size": 16}, {"stageFlags": 16, "offset": 16, "size": 16}]}),
            ),
        ),
        (
            tag::PIPELINE_LAYOUT,
            COMPUTE,
            doc(
                "pipelineLayouts",
                COMPUTE,
                json!({"flags": 0, "setLayouts": [hex(SET_BUF)], "pushConstantRanges": []}),
            ),
        ),
        (tag::RENDER_PASS, RP2, doc("renderPasses2", RP2, rp2)),
        (tag::RENDER_PASS, RP1, doc("renderPasses", RP1, rp1)),
        (tag::GRAPHICS_PIPELINE, FIVE, doc("graphicsPipelines", FIVE, five)),
        (tag::GRAPHICS_PIPELINE, LINES, doc("graphicsPipelines", LINES, lines)),
        (tag::GRAPHICS_PIPELINE, CLIP, doc("graphicsPipelines", CLIP, clip)),
        (tag::COMPUTE_PIPELINE, FILL, doc("computePipelines", FILL, fill)),
    ];
    let mut bytes = writer::header(6);
    for (t, h, payload) in entries {
        writer::entry(&mut bytes, t, h, &payload, writer::Store { deflate: true, crc: true });
    }
    std::fs::write(path, bytes).expect("write the database");
    vec![FIVE, LINES, CLIP, FILL]
}

// ---------------------------------------------------------------------------------------

/// Imports `db`, harvests its pipelines on `backend`'s device and returns the pipeline key
/// the harvest recorded for each Fossilize hash (empty where the device has no pipeline
/// binaries), with the pipelines granary refused and why.
fn harvest(
    backend: &Arc<granary_vulkan::VulkanBackend>,
    db: &Path,
    dir: &Path,
) -> (HashMap<u64, Vec<u8>>, Refused, Archived) {
    let report = granary::import::foz::import(&[db.to_path_buf()], dir).expect("import");
    assert!(report.databases_skipped.is_empty(), "{:?}", report.databases_skipped);
    let script = Script::load(&report.script).expect("the imported script");
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler = Compiler::with_backend(
        CompilerOptions { capture: Some(capture.clone()), ..Default::default() },
        backend.clone() as Arc<dyn Backend>,
    );
    let mut refused = Vec::new();
    for p in script.pipelines {
        let desc = p.descriptor.expect("an imported pipeline is valid");
        let label = desc.label().unwrap_or_default().to_string();
        if let Err(e) = compiler.compile(&desc) {
            refused.push((label, e.to_string()));
        }
    }
    let path = dir.join("harvest.granary");
    capture.write_archive(&path).expect("write the archive");
    let archive = Archive::open(&path).expect("open the archive");
    let mut keys = HashMap::new();
    let mut archived = Archived { context: archive.key_context(), pipelines: HashMap::new() };
    let devices = archive.devices().expect("device sections");
    let labels = archive.labels().expect("labels");
    for (label, index) in labels {
        let Some(h) = label.strip_prefix("foz/") else { continue };
        let h = u64::from_str_radix(h, 16).expect("a Fossilize hash");
        let p = archive.pipeline(index).expect("record");
        let key = match devices.first() {
            Some(d) => d.binaries(&p).expect("binaries").map(|s| s.pipeline_key().to_vec()).unwrap_or_default(),
            None => Vec::new(),
        };
        keys.insert(h, key);
        archived.pipelines.insert(h, (p.key(), p.native_state().expect("native state")));
    }
    (keys, refused, archived)
}

/// What the archive holds, for the lookup by create info: its key context, and per Fossilize
/// hash the pipeline's granary key and native state.
struct Archived {
    context: granary_archive::KeyContext,
    pipelines: HashMap<u64, (granary_archive::PipelineKey, Option<granary_archive::native::NativePipeline>)>,
}

/// Pipelines the harvest refused: label and message.
type Refused = Vec<(String, String)>;

/// What one database's comparison found.
#[derive(Default, Debug)]
struct Tally {
    compared: usize,
    equal: usize,
    created: usize,
    refused: Refused,
    linked: Vec<u64>,
    /// Pipelines whose create info, read by granary's lookup (`vulkan::graphics_pipeline` /
    /// `compute_pipeline` with the recorder), gives the harvested pipeline's key.
    found: usize,
    /// Those that did not: label and why.
    lost: Vec<(String, String)>,
}

fn compare(backend: &Arc<granary_vulkan::VulkanBackend>, gpu: &Arc<Gpu>, db: &Path, dir: &Path) -> Tally {
    let (recorded, refused, archived) = harvest(backend, db, dir);
    let device = gpu.raw_device();
    let mut objects = Objects::read(device, db);
    let mut tally = Tally { refused, ..Default::default() };
    let mut hashes: Vec<(u32, u64)> = objects
        .json
        .keys()
        .filter(|(t, _)| *t == tag::GRAPHICS_PIPELINE || *t == tag::COMPUTE_PIPELINE)
        .copied()
        .collect();
    hashes.sort();
    for (t, h) in hashes {
        let v = objects.get(t, h);
        let label = format!("foz/{}", hex(h));
        if n(&v, "flags") & 0x800 != 0 {
            continue; // a library: imported only as part of the pipeline linking it
        }
        if ext(&v, 1000290000).is_some() {
            tally.linked.push(h);
            continue;
        }
        // Not archived: the import skipped it (said in its report) or the harvest refused it
        // (in `tally.refused`, checked by the caller).
        let Some(granary_key) = recorded.get(&h) else { continue };
        let mut keep = Keep::default();
        // The lookup by the application's own create info finds the harvested pipeline.
        let (archived_key, archived_state) = &archived.pipelines[&h];
        let mut look =
            |app: Result<granary_archive::vulkan::AppPipeline, granary_archive::vulkan::CreateInfoError>| match app {
                Ok(a) if a.key(&archived.context) == *archived_key => tally.found += 1,
                Ok(a) => tally.lost.push((
                    label.clone(),
                    format!("another key: state read {:?}\narchived {:?}", a.state, archived_state),
                )),
                Err(e) => tally.lost.push((label.clone(), e.to_string())),
            };
        let (key, pipeline) = if t == tag::GRAPHICS_PIPELINE {
            let info = objects.graphics(&v, &mut keep);
            // SAFETY: `info` points into `keep` and at objects alive until `destroy`.
            look(unsafe { granary_archive::vulkan::graphics_pipeline(&objects.recorder, &info) });
            let key = gpu.captures_binaries().then(|| driver_key(device, &info));
            // SAFETY: `info` points into `keep` and at objects alive until `destroy`.
            let made = unsafe { device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
            (key, made.map(|(p, _)| p[0]))
        } else {
            let info = objects.compute(&v, &mut keep);
            // SAFETY: as above.
            look(unsafe { granary_archive::vulkan::compute_pipeline(&objects.recorder, &info) });
            let key = gpu.captures_binaries().then(|| driver_key(device, &info));
            // SAFETY: as above.
            let made = unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
            (key, made.map(|(p, _)| p[0]))
        };
        let pipeline = pipeline.unwrap_or_else(|e| panic!("{label}: the direct create info: {e:?}"));
        tally.created += 1;
        // SAFETY: created above, used by nothing else.
        unsafe { device.destroy_pipeline(pipeline, None) };
        if let Some(key) = key {
            tally.compared += 1;
            if key == *granary_key {
                tally.equal += 1;
            } else {
                eprintln!("{label}: vkGetPipelineKeyKHR differs: direct {key:02x?}, granary's {granary_key:02x?}");
            }
        }
    }
    objects.destroy();
    tally
}

#[test]
fn imported_pipelines_have_the_driver_key_of_the_create_info_the_database_records() {
    let options = granary_vulkan::VulkanOptions { validate: support::requested(), ..Default::default() };
    let backend = match granary_vulkan::VulkanBackend::open(&options) {
        Ok(b) => Arc::new(b),
        Err(e) => {
            support::fail_if_layer_missing(&e);
            support::no_driver(&e);
            return;
        }
    };
    let gpu = backend.gpu().clone();
    let log = backend.validation().cloned();
    let tmp = tempfile::tempdir().expect("temp dir");
    let renderer = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../granary-cli/tests/fixtures/foz/renderer.foz");
    let written = tmp.path().join("written.foz");
    let written_pipelines = written_database(&written);
    let mut total = Tally::default();
    for (name, db) in [("renderer", &renderer), ("written", &written)] {
        let dir = tmp.path().join(name);
        let t = compare(&backend, &gpu, db, &dir);
        eprintln!(
            "{name}: {} created directly, {} keys compared, {} equal; linked (not compared): {:x?}; refused: {:?}; \
             {} found by their own create info",
            t.created, t.compared, t.equal, t.linked, t.refused, t.found
        );
        for (label, why) in &t.lost {
            eprintln!("{label}: its create info does not find it: {why}");
        }
        assert!(t.lost.is_empty(), "{name}: every harvested pipeline is found by its own create info");
        assert_eq!(t.found, t.created, "{name}: every pipeline created directly was looked up");
        for (label, why) in &t.refused {
            // A feature the device lacks, or a limit it has (both name the device).
            let device_reason = ["(the device does not support it)", "' takes ", "' allows at most "];
            assert!(
                device_reason.iter().any(|r| why.contains(r)),
                "{label}: granary refused it for a reason not the device's: {why}"
            );
        }
        if name == "written" && gpu.captures_binaries() {
            assert_eq!(t.refused, vec![], "a device with pipeline binaries takes every written pipeline");
            assert_eq!(t.created, written_pipelines.len(), "every written pipeline compared");
        }
        total.compared += t.compared;
        total.equal += t.equal;
        total.created += t.created;
    }
    assert!(total.created >= 4, "at least the renderer database's whole pipelines were created directly");
    if gpu.captures_binaries() {
        assert_eq!(
            total.equal, total.compared,
            "granary's reconstruction has the driver key of the recorded create info"
        );
    } else {
        eprintln!(
            "key comparison skipped: device '{}' has no VK_KHR_pipeline_binary (both create infos created, {} pipelines)",
            gpu.info.identity.device_name, total.created
        );
    }
    drop(gpu);
    drop(backend);
    support::assert_clean(log);
}
