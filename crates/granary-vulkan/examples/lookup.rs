//! Use granary's archive from an engine that builds its own Vulkan create infos: look a
//! pipeline up by the application's own `VkComputePipelineCreateInfo` and create it from the
//! archived binaries (where the driver's pipeline key agrees) or the archive's pipeline cache.
//!
//!     cargo run -p granary-vulkan --example lookup
//!
//! 1. Offline (what `granary harvest` does with a pipelines script in the native Vulkan form):
//!    harvest one compute pipeline — the SPIR-V of `tests/native/fill.comp` with a storage
//!    buffer at set 0 binding 0 and two specialization constants — into `lookup.granary` in a
//!    temporary folder, on the first Vulkan device.
//! 2. At run time, in the engine: open the archive, create the engine's own shader module,
//!    set layout and pipeline layout, record them with an `ObjectRecorder` as they are created,
//!    write the `VkComputePipelineCreateInfo` by hand, and ask the `PipelineLoader` for it.
//!
//! It prints the key, what the archive offers and how the pipeline was made. `cargo test -p
//! granary-vulkan --example lookup` runs it as a test (lavapipe in CI; it prints `SKIPPED`
//! without a Vulkan driver, a failure under `GRANARY_REQUIRE_VULKAN=1`).

use granary::capture::{Capture, CaptureMode};
use granary::compiler::{Compiler, CompilerOptions};
use granary::descriptor::{
    FunctionDescriptor, Library, NativePipelineDescriptor, NativeStage, PipelineDescriptor, ShaderStage,
};
use granary_archive::native::*;
use granary_archive::vulkan::vulkanalia::prelude::v1_3::*;
use granary_archive::vulkan::{LoaderOptions, ObjectRecorder, Offer, PipelineLoader, VulkanError};
use granary_vulkan::{VulkanBackend, VulkanOptions};
use std::sync::Arc;

/// The compute shader: `fill.comp` (workgroup size and value from specialization constants).
fn spirv() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/native/fill.comp.spv")).expect("fill.comp.spv")
}

/// The two specialization constants, as the engine passes them: size 64, value 7.
fn constants() -> Specialization {
    let mut data = 64u32.to_le_bytes().to_vec();
    data.extend(7u32.to_le_bytes());
    Specialization {
        map_entries: vec![
            SpecializationMapEntry { constant_id: 0, offset: 0, size: 4 },
            SpecializationMapEntry { constant_id: 1, offset: 4, size: 4 },
        ],
        data,
    }
}

/// Step 1, offline: the pipeline in the native form (what a script's `"vulkan"` entry says),
/// harvested on `backend`'s device into an archive at `path`.
fn harvest(backend: Arc<VulkanBackend>, path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let state = NativePipeline {
        flags: 0,
        stages: vec![StageState { flags: 0, required_subgroup_size: None }],
        layout: NativeLayout {
            flags: 0,
            set_layouts: vec![SetLayout {
                flags: 0,
                bindings: vec![SetLayoutBinding {
                    binding: 0,
                    descriptor_type: 7, // STORAGE_BUFFER
                    descriptor_count: 1,
                    stage_flags: 0x20, // COMPUTE
                    immutable_samplers: vec![],
                    binding_flags: 0,
                }],
            }],
            push_constant_ranges: vec![],
        },
        graphics: None,
        ray_tracing: None,
    };
    let pipeline = PipelineDescriptor::Native(NativePipelineDescriptor {
        label: Some("fill".into()),
        stages: vec![NativeStage {
            stage: ShaderStage::Compute,
            function: FunctionDescriptor::library(Library::spirv("fill.comp.spv", spirv()), "main"),
            specialization: Some(Arc::new(constants())),
        }],
        state: Arc::new(state),
    });
    let capture = Arc::new(Capture::new(CaptureMode::Outputs));
    let compiler =
        Compiler::with_backend(CompilerOptions { capture: Some(capture.clone()), ..Default::default() }, backend);
    compiler.compile(&pipeline)?;
    capture.write_archive(path)?;
    Ok(())
}

/// Step 2, the engine at run time. Returns what it printed.
fn run_time(backend: &VulkanBackend, path: &std::path::Path) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let archive = std::sync::Arc::new(granary_archive::Archive::open(path)?);
    // The engine's device (here the one the harvest ran on; a game wraps its own with
    // `Gpu::borrowed`) and the loader for the archive on it.
    let gpu = backend.gpu().clone();
    let loader = PipelineLoader::new(archive.clone(), gpu.clone(), LoaderOptions::default())?;
    let device = gpu.raw_device();

    // The engine creates its objects as usual and records each with its create info.
    let recorder = ObjectRecorder::new();
    let code = spirv();
    let module_info =
        vk::ShaderModuleCreateInfo { code_size: code.len(), code: code.as_ptr().cast(), ..Default::default() };
    // SAFETY: a valid create info whose code outlives the call; destroyed below.
    let module = unsafe { device.create_shader_module(&module_info, None) }?;
    // SAFETY: the create info the module was just made with.
    unsafe { recorder.record_shader_module(module, &module_info) }?;
    let binding = vk::DescriptorSetLayoutBinding {
        binding: 0,
        descriptor_type: vk::DescriptorType::STORAGE_BUFFER,
        descriptor_count: 1,
        stage_flags: vk::ShaderStageFlags::COMPUTE,
        immutable_samplers: std::ptr::null(),
    };
    let set_info = vk::DescriptorSetLayoutCreateInfo { binding_count: 1, bindings: &binding, ..Default::default() };
    // SAFETY: as above.
    let set_layout = unsafe { device.create_descriptor_set_layout(&set_info, None) }?;
    // SAFETY: as above.
    unsafe { recorder.record_set_layout(set_layout, &set_info) }?;
    let layout_info =
        vk::PipelineLayoutCreateInfo { set_layout_count: 1, set_layouts: &set_layout, ..Default::default() };
    // SAFETY: as above.
    let layout = unsafe { device.create_pipeline_layout(&layout_info, None) }?;
    // SAFETY: as above.
    unsafe { recorder.record_pipeline_layout(layout, &layout_info) }?;

    // The engine's own create info, written by hand.
    let spec = constants();
    let entries: Vec<vk::SpecializationMapEntry> = spec
        .map_entries
        .iter()
        .map(|m| vk::SpecializationMapEntry { constant_id: m.constant_id, offset: m.offset, size: m.size as usize })
        .collect();
    let specialization = vk::SpecializationInfo {
        map_entry_count: entries.len() as u32,
        map_entries: entries.as_ptr(),
        data_size: spec.data.len(),
        data: spec.data.as_ptr().cast(),
    };
    let info = vk::ComputePipelineCreateInfo {
        stage: vk::PipelineShaderStageCreateInfo {
            stage: vk::ShaderStageFlags::COMPUTE,
            module,
            name: c"main".as_ptr(),
            specialization_info: &specialization,
            ..Default::default()
        },
        layout,
        base_pipeline_index: -1,
        ..Default::default()
    };
    // SAFETY: `info` is valid for vkCreateComputePipelines on this device: every pointer in it
    // is a local alive here, its module and layout are alive.
    let lookup = unsafe { loader.lookup_compute(&recorder, &info) }?;
    out.push(format!("key {}", lookup.key));
    out.push(match &lookup.offer {
        Offer::Binaries => "offer: this device's binaries (the driver's pipeline key agrees)".to_string(),
        Offer::Cache { why } => format!("offer: the archive's pipeline cache ({why})"),
        Offer::Declined { why } => format!("offer: binaries declined, the archive's pipeline cache ({why})"),
        Offer::NotArchived => "offer: not archived (the engine compiles it itself)".to_string(),
    });
    if lookup.offer != Offer::NotArchived {
        // SAFETY: as above.
        let made = unsafe { loader.create_compute(&recorder, &info) }?;
        out.push(format!("created from {} in {:?}", made.source.name(), made.total_time));
        // The engine's now: destroy it before its layout (here: when `made` drops).
        drop(made);
    }
    drop(loader);
    // SAFETY: made on this device above; no pipeline made with them is alive.
    unsafe {
        device.destroy_pipeline_layout(layout, None);
        device.destroy_descriptor_set_layout(set_layout, None);
        device.destroy_shader_module(module, None);
    }
    recorder.forget_pipeline_layout(layout);
    recorder.forget_set_layout(set_layout);
    recorder.forget_shader_module(module);
    Ok(out)
}

/// Both steps, or `None` without a Vulkan driver.
fn run() -> Result<Option<Vec<String>>, Box<dyn std::error::Error>> {
    let validate = std::env::var("GRANARY_VALIDATE").is_ok_and(|v| v == "1");
    let backend = match VulkanBackend::open(&VulkanOptions { validate, ..Default::default() }) {
        Ok(b) => Arc::new(b),
        // Validation asked for and the layer missing is a failure, not a skip.
        Err(e @ VulkanError::NoValidationLayer { .. }) => return Err(e.into()),
        Err(e) => {
            if std::env::var("GRANARY_REQUIRE_VULKAN").is_ok_and(|v| v == "1") {
                return Err(format!("GRANARY_REQUIRE_VULKAN=1 and no Vulkan device: {e}").into());
            }
            eprintln!("SKIPPED: no Vulkan driver ({e})");
            return Ok(None);
        }
    };
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("lookup.granary");
    harvest(backend.clone(), &path)?;
    let out = run_time(&backend, &path)?;
    if let Some(log) = backend.validation() {
        let expected = std::env::var("GRANARY_VALIDATE_EXPECT").unwrap_or_default();
        let messages: Vec<String> = log
            .messages()
            .into_iter()
            .filter(|m| !expected.split(',').any(|id| id.trim() == m.id))
            .map(|m| format!("{} {}", m.id, m.text))
            .collect();
        if !messages.is_empty() {
            return Err(format!("the validation layer reported:\n{}", messages.join("\n")).into());
        }
    }
    Ok(Some(out))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for line in run()?.unwrap_or_default() {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_example_finds_and_creates_the_engines_own_create_info() {
        let Some(out) = super::run().unwrap_or_else(|e| panic!("{e}")) else { return };
        assert!(out[0].starts_with("key "), "{out:?}");
        assert!(!out[1].contains("not archived"), "the engine's create info finds its harvested pipeline: {out:?}");
        assert!(out[2].starts_with("created from "), "{out:?}");
    }
}
