//! The device-facing half of the feature checks: [`features`](super::features) says, purely,
//! which core features a pipeline or a SPIR-V module needs; this module refuses one that needs
//! a feature the [`Gpu`] did not enable, naming the feature and the device, before any driver
//! call. (Split from `features` so that module depends on nothing of the device, and
//! `device` → `features` is the only direction.)

use super::device::Gpu;
use super::features::{required, required_by_spirv};
use crate::device::DeviceFeatures;
use crate::layout::PipelineLayout;
use crate::render_state::RenderState;

/// Why `gpu` cannot take these needs, or `Ok` when it enabled every feature they name.
fn refuse_missing(gpu: &Gpu, needs: Vec<(DeviceFeatures, String)>) -> Result<(), String> {
    let enabled = gpu.features();
    let missing: Vec<String> =
        needs.into_iter().filter(|(f, _)| !enabled.contains(*f)).map(|(f, why)| format!("{f} ({why})")).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "needs the {} feature{} not enabled on device '{}'{}",
        missing.join(", "),
        if missing.len() == 1 { "" } else { "s" },
        gpu.info.identity.device_name,
        if gpu.is_borrowed() { " (the application's device)" } else { " (the device does not support it)" }
    ))
}

/// Refuses a shader module whose SPIR-V declares a capability needing a feature `gpu` did not
/// enable (before `vkCreateShaderModule`, where it is `VUID-VkShaderModuleCreateInfo-pCode-01091`).
pub fn check_spirv(gpu: &Gpu, spirv: &[u8]) -> Result<(), String> {
    refuse_missing(gpu, required_by_spirv(spirv))
}

/// Refuses a pipeline that needs a feature `gpu` did not enable, naming the feature and why
/// the pipeline needs it.
pub fn check_features(gpu: &Gpu, layout: &PipelineLayout, state: Option<&RenderState>) -> Result<(), String> {
    refuse_missing(gpu, required(layout, state))
}
