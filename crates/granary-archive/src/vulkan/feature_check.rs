//! The device-facing half of the feature checks: [`features`](super::features) says, purely,
//! which features a pipeline or a SPIR-V module needs; this module refuses one that needs
//! a feature (or extension, or extended-dynamic-state member) the [`Gpu`] did not enable,
//! naming it, the field that needs it and the device, before any driver call. (Split from
//! `features` so that module depends on nothing of the device, and `device` → `features` is
//! the only direction.)

use super::device::Gpu;
use super::features::{never_enabled, required, required_by_spirv, required_native, Need};
use crate::device::DeviceFeatures;
use crate::layout::PipelineLayout;
use crate::native::NativePipeline;
use crate::render_state::RenderState;
use crate::types::ShaderStage;

/// Whether `gpu` enabled `need`; its name and kind (`feature` or `extension`) otherwise.
fn missing(gpu: &Gpu, need: Need) -> Option<(String, &'static str)> {
    let enabled = gpu.features();
    match need {
        Need::Feature(f) if !enabled.contains(f) => Some((f.to_string(), "feature")),
        Need::Extension(mask, name) if enabled.intersection(mask).is_empty() => Some((name.to_string(), "extension")),
        Need::AnyOf(mask) if enabled.intersection(mask).is_empty() => Some((mask.names().join(" or "), "feature")),
        Need::Eds3(i, name)
            if !enabled.contains(DeviceFeatures::EXTENDED_DYNAMIC_STATE3) || gpu.eds3 & (1 << i) == 0 =>
        {
            Some((format!("{name} (VK_EXT_extended_dynamic_state3)"), "feature"))
        }
        _ => None,
    }
}

/// Why `gpu` cannot take these needs, or `Ok` when it enabled every one: "needs the X (why)
/// feature not enabled on device 'D'" (several: "features"; an extension among them: "the X
/// extension (why)").
fn refuse_missing(gpu: &Gpu, needs: Vec<(Need, String)>) -> Result<(), String> {
    never_enabled(&needs)?;
    let mut found: Vec<(String, &'static str)> = Vec::new();
    for (n, why) in needs {
        if let Some((name, kind)) = missing(gpu, n) {
            let item = (format!("{name} ({why})"), kind);
            if !found.contains(&item) {
                found.push(item);
            }
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let what = if found.iter().all(|(_, k)| *k == "feature") {
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        format!("the {} feature{}", names.join(", "), if found.len() == 1 { "" } else { "s" })
    } else {
        let names: Vec<String> = found.iter().map(|(n, k)| format!("the {n} {k}")).collect();
        names.join(", ")
    };
    Err(format!(
        "needs {what} not enabled on device '{}'{}",
        gpu.info.identity.device_name,
        if gpu.is_borrowed() { " (the application's device)" } else { " (the device does not support it)" }
    ))
}

fn features_only(needs: Vec<(DeviceFeatures, String)>) -> Vec<(Need, String)> {
    needs.into_iter().map(|(f, why)| (Need::Feature(f), why)).collect()
}

/// Refuses a shader module whose SPIR-V declares a capability needing a feature, or an
/// extension needing a device extension, `gpu` did not enable (before `vkCreateShaderModule`,
/// where it is `VUID-VkShaderModuleCreateInfo-pCode-08740`/`-08742`).
pub fn check_spirv(gpu: &Gpu, spirv: &[u8]) -> Result<(), String> {
    refuse_missing(gpu, required_by_spirv(spirv))
}

/// Refuses a pipeline that needs a feature `gpu` did not enable, naming the feature and why
/// the pipeline needs it.
pub fn check_features(gpu: &Gpu, layout: &PipelineLayout, state: Option<&RenderState>) -> Result<(), String> {
    refuse_missing(gpu, features_only(required(layout, state)))
}

/// Refuses a native pipeline (`state`, with stages `stages` in order) that needs a feature,
/// extension or dynamic-state member `gpu` did not enable, or a limit it exceeds, naming
/// each with the field that needs it, before any driver call.
pub fn check_native(gpu: &Gpu, state: &NativePipeline, stages: &[ShaderStage]) -> Result<(), String> {
    refuse_missing(gpu, required_native(state, stages)?)?;
    check_native_limits(gpu, state, stages)?;
    check_native_formats(gpu, state)
}

/// `VK_DYNAMIC_STATE_COLOR_BLEND_ENABLE_EXT`: `blendEnable` is then set at draw time.
const DYNAMIC_COLOR_BLEND_ENABLE: u32 = 1000455010;

/// The attachment formats of a native graphics state against the device's format features
/// (optimal tiling), before any driver call: with dynamic rendering each colour format must
/// be renderable (`COLOR_ATTACHMENT`, `VUID-VkGraphicsPipelineCreateInfo-renderPass-06582`)
/// and the depth and stencil formats `DEPTH_STENCIL_ATTACHMENT` (`-06587`, `-06588`); with
/// either, a colour attachment is blended only where its format has `COLOR_ATTACHMENT_BLEND`
/// (`-06041` with a render pass, `-06062` without). A create info recorded on another GPU
/// names formats this one may not have.
fn check_native_formats(gpu: &Gpu, state: &NativePipeline) -> Result<(), String> {
    use vulkanalia::vk::{self, FormatFeatureFlags as F};
    let Some(g) = &state.graphics else { return Ok(()) };
    let device = &gpu.info.identity.device_name;
    let has = |format: u32, want: F| {
        gpu.driver.optimal_features(gpu.info.handle, vk::Format::from_raw(format as i32)).contains(want)
    };
    let refuse = |what: String, feature: &str| {
        Err(format!("{what}: device '{device}' has no {feature} for it (the device does not support it)"))
    };
    // The colour formats the fragment output writes, by attachment index of the blend state.
    let colors: Vec<(String, u32)> = match (&g.render_pass, &g.rendering) {
        (Some(rp), _) => match rp.subpasses.get(g.subpass as usize) {
            Some(sp) => sp
                .color_attachments
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let format = rp.attachments.get(r.attachment as usize).map_or(0, |a| a.format);
                    (format!("renderPass subpass {} colour attachment {i} (format {format})", g.subpass), format)
                })
                .collect(),
            None => Vec::new(),
        },
        (None, Some(r)) => {
            for (i, &format) in r.color_attachment_formats.iter().enumerate() {
                if format != 0 && !has(format, F::COLOR_ATTACHMENT) {
                    return refuse(
                        format!("VkPipelineRenderingCreateInfo.pColorAttachmentFormats[{i}] is format {format}"),
                        "COLOR_ATTACHMENT",
                    );
                }
            }
            for (what, format) in [("depth", r.depth_attachment_format), ("stencil", r.stencil_attachment_format)] {
                if format != 0 && !has(format, F::DEPTH_STENCIL_ATTACHMENT) {
                    return refuse(
                        format!("VkPipelineRenderingCreateInfo.{what}AttachmentFormat is format {format}"),
                        "DEPTH_STENCIL_ATTACHMENT",
                    );
                }
            }
            r.color_attachment_formats
                .iter()
                .enumerate()
                .map(|(i, &f)| (format!("VkPipelineRenderingCreateInfo.pColorAttachmentFormats[{i}] (format {f})"), f))
                .collect()
        }
        (None, None) => Vec::new(),
    };
    if g.dynamic_states.contains(&DYNAMIC_COLOR_BLEND_ENABLE) {
        return Ok(());
    }
    let Some(blend) = &g.color_blend_state else { return Ok(()) };
    for (i, a) in blend.attachments.iter().enumerate() {
        if let Some((what, format)) = colors.get(i) {
            if a.blend_enable && *format != 0 && !has(*format, F::COLOR_ATTACHMENT_BLEND) {
                return refuse(
                    format!("colorBlendState.pAttachments[{i}].blendEnable is set for {what}"),
                    "COLOR_ATTACHMENT_BLEND",
                );
            }
        }
    }
    Ok(())
}

/// The limits of a native state: patch size, viewports, required subgroup sizes.
fn check_native_limits(gpu: &Gpu, state: &NativePipeline, stages: &[ShaderStage]) -> Result<(), String> {
    let l = &gpu.info.limits;
    let device = &gpu.info.identity.device_name;
    for (i, (s, stage)) in state.stages.iter().zip(stages).enumerate() {
        if let Some(n) = s.required_subgroup_size {
            if !n.is_power_of_two() || n < l.min_subgroup_size || n > l.max_subgroup_size {
                return Err(format!(
                    "stages[{i}].requiredSubgroupSize is {n}; device '{device}' takes powers of two from {} to {} \
                     (minSubgroupSize, maxSubgroupSize)",
                    l.min_subgroup_size, l.max_subgroup_size
                ));
            }
            let bit = super::translate::stage_flag(*stage).bits();
            if l.required_subgroup_size_stages & bit == 0 {
                return Err(format!(
                    "stages[{i}] ({stage}) has a requiredSubgroupSize; device '{device}' takes one only for stages \
                     {:#x} (requiredSubgroupSizeStages)",
                    l.required_subgroup_size_stages
                ));
            }
        }
    }
    if let Some(rt) = &state.ray_tracing {
        // VUID-VkRayTracingPipelineCreateInfoKHR-maxPipelineRayRecursionDepth-03589.
        if rt.max_pipeline_ray_recursion_depth > l.max_ray_recursion_depth {
            return Err(format!(
                "rayTracing.maxPipelineRayRecursionDepth is {}; device '{device}' allows at most {} (maxRayRecursionDepth)",
                rt.max_pipeline_ray_recursion_depth, l.max_ray_recursion_depth
            ));
        }
        // A ray-tracing library needs VK_KHR_pipeline_library, which granary enables (and an
        // application's device tells) with graphics pipeline libraries.
        if state.flags & vulkanalia::vk::PipelineCreateFlags::LIBRARY_KHR.bits() != 0 && !gpu.libraries() {
            return Err(format!(
                "flags has LIBRARY_KHR; device '{device}' has no VK_KHR_pipeline_library enabled (the device does not support it)"
            ));
        }
    }
    let Some(g) = &state.graphics else { return Ok(()) };
    if let Some(t) = &g.tessellation_state {
        if t.patch_control_points == 0 || t.patch_control_points > l.max_tessellation_patch_size {
            return Err(format!(
                "tessellationState.patchControlPoints is {}; device '{device}' takes 1 to {} (maxTessellationPatchSize)",
                t.patch_control_points, l.max_tessellation_patch_size
            ));
        }
    }
    if let Some(v) = &g.viewport_state {
        let n = v.viewport_count.max(v.scissor_count);
        if n > l.max_viewports {
            return Err(format!(
                "viewportState has {n} viewports; device '{device}' allows at most {} (maxViewports)",
                l.max_viewports
            ));
        }
    }
    Ok(())
}
