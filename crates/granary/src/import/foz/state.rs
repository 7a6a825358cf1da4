//! Fossilize's JSON of each Vulkan state structure to granary-archive's native model, member
//! by member (Fossilize spells them as Vulkan does), extension structures from the `pNext`
//! chain where the model has them. A `pNext` structure the model does not have, a missing
//! member or a value out of its type's range is an `Err` naming it; nothing is dropped.

use super::json::Obj;
use super::vk::{self, stype};
use granary_archive::native::*;

/// Every member of `VkPipelineVertexInputStateCreateInfo`, divisors from
/// `VkPipelineVertexInputDivisorStateCreateInfo`.
pub(super) fn vertex_input(o: &Obj<'_>) -> Result<VertexInputState, String> {
    let chain = o.chain(&[stype::VERTEX_DIVISOR])?;
    let divisors = match chain.get(stype::VERTEX_DIVISOR) {
        None => Vec::new(),
        Some(d) => {
            let list = d.objs("vertexBindingDivisors")?;
            if let Some(n) = d.opt("vertexBindingDivisorCount") {
                if n.as_u64() != Some(list.len() as u64) {
                    return Err(format!("{}: {n} for {} divisors", d.at("vertexBindingDivisorCount"), list.len()));
                }
            }
            list.iter()
                .map(|v| Ok(VertexDivisor { binding: v.u32("binding")?, divisor: v.u32("divisor")? }))
                .collect::<Result<_, String>>()?
        }
    };
    Ok(VertexInputState {
        flags: o.u32("flags")?,
        bindings: o
            .objs("bindings")?
            .iter()
            .map(|b| {
                Ok(VertexBinding {
                    binding: b.u32("binding")?,
                    stride: b.u32("stride")?,
                    input_rate: b.u32("inputRate")?,
                })
            })
            .collect::<Result<_, String>>()?,
        attributes: o
            .objs("attributes")?
            .iter()
            .map(|a| {
                Ok(VertexAttribute {
                    location: a.u32("location")?,
                    binding: a.u32("binding")?,
                    format: a.u32("format")?,
                    offset: a.u32("offset")?,
                })
            })
            .collect::<Result<_, String>>()?,
        divisors,
    })
}

/// `VkPipelineInputAssemblyStateCreateInfo`.
pub(super) fn input_assembly(o: &Obj<'_>) -> Result<InputAssemblyState, String> {
    o.chain(&[])?;
    Ok(InputAssemblyState {
        flags: o.u32("flags")?,
        topology: o.u32("topology")?,
        primitive_restart_enable: o.bool("primitiveRestartEnable")?,
    })
}

/// `VkPipelineTessellationStateCreateInfo` with its domain origin.
pub(super) fn tessellation(o: &Obj<'_>) -> Result<TessellationState, String> {
    let chain = o.chain(&[stype::DOMAIN_ORIGIN])?;
    Ok(TessellationState {
        flags: o.u32("flags")?,
        patch_control_points: o.u32("patchControlPoints")?,
        domain_origin: chain.get(stype::DOMAIN_ORIGIN).map(|d| d.u32("domainOrigin")).transpose()?,
    })
}

/// `VkPipelineViewportStateCreateInfo` with its depth clip control.
pub(super) fn viewport(o: &Obj<'_>) -> Result<ViewportState, String> {
    let chain = o.chain(&[stype::DEPTH_CLIP_CONTROL])?;
    Ok(ViewportState {
        flags: o.u32("flags")?,
        viewport_count: o.u32("viewportCount")?,
        viewports: o
            .objs("viewports")?
            .iter()
            .map(|v| {
                Ok(Viewport {
                    x: v.f32("x")?,
                    y: v.f32("y")?,
                    width: v.f32("width")?,
                    height: v.f32("height")?,
                    min_depth: v.f32("minDepth")?,
                    max_depth: v.f32("maxDepth")?,
                })
            })
            .collect::<Result<_, String>>()?,
        scissor_count: o.u32("scissorCount")?,
        scissors: o
            .objs("scissors")?
            .iter()
            .map(|r| Ok(Rect2D { x: r.i32("x")?, y: r.i32("y")?, width: r.u32("width")?, height: r.u32("height")? }))
            .collect::<Result<_, String>>()?,
        negative_one_to_one: chain.get(stype::DEPTH_CLIP_CONTROL).map(|d| d.bool("negativeOneToOne")).transpose()?,
    })
}

/// A reserved `flags` member of an extension structure the model keeps without it: must be 0.
fn reserved_zero(o: &Obj<'_>) -> Result<(), String> {
    match o.opt("flags") {
        None => Ok(()),
        Some(_) if o.u32("flags")? == 0 => Ok(()),
        Some(v) => Err(format!("{}: {v} (reserved, must be 0)", o.at("flags"))),
    }
}

/// `VkPipelineRasterizationStateCreateInfo` with its line, provoking-vertex, conservative,
/// depth-clip and stream structures.
pub(super) fn rasterization(o: &Obj<'_>) -> Result<RasterizationState, String> {
    let chain =
        o.chain(&[stype::LINE, stype::PROVOKING_VERTEX, stype::CONSERVATIVE, stype::DEPTH_CLIP, stype::STREAM])?;
    let line = chain
        .get(stype::LINE)
        .map(|l| {
            Ok::<_, String>(LineState {
                line_rasterization_mode: l.u32("lineRasterizationMode")?,
                stippled_line_enable: l.bool("stippledLineEnable")?,
                line_stipple_factor: l.u32("lineStippleFactor")?,
                line_stipple_pattern: match l.u32("lineStipplePattern")? {
                    p if p <= 0xffff => p,
                    p => return Err(format!("{}: {p} is not a uint16_t", l.at("lineStipplePattern"))),
                },
            })
        })
        .transpose()?;
    let conservative = chain
        .get(stype::CONSERVATIVE)
        .map(|c| {
            Ok::<_, String>(ConservativeState {
                flags: c.u32("flags")?,
                conservative_rasterization_mode: c.u32("conservativeRasterizationMode")?,
                extra_primitive_overestimation_size: c.f32("extraPrimitiveOverestimationSize")?,
            })
        })
        .transpose()?;
    let depth_clip_enable = chain
        .get(stype::DEPTH_CLIP)
        .map(|d| {
            reserved_zero(d)?;
            d.bool("depthClipEnable")
        })
        .transpose()?;
    let rasterization_stream = chain
        .get(stype::STREAM)
        .map(|s| {
            reserved_zero(s)?;
            s.u32("rasterizationStream")
        })
        .transpose()?;
    Ok(RasterizationState {
        flags: o.u32("flags")?,
        depth_clamp_enable: o.bool("depthClampEnable")?,
        rasterizer_discard_enable: o.bool("rasterizerDiscardEnable")?,
        polygon_mode: o.u32("polygonMode")?,
        cull_mode: o.u32("cullMode")?,
        front_face: o.u32("frontFace")?,
        depth_bias_enable: o.bool("depthBiasEnable")?,
        depth_bias_constant_factor: o.f32("depthBiasConstantFactor")?,
        depth_bias_clamp: o.f32("depthBiasClamp")?,
        depth_bias_slope_factor: o.f32("depthBiasSlopeFactor")?,
        line_width: o.f32("lineWidth")?,
        line,
        provoking_vertex_mode: chain.get(stype::PROVOKING_VERTEX).map(|p| p.u32("provokingVertexMode")).transpose()?,
        conservative,
        depth_clip_enable,
        rasterization_stream,
    })
}

/// `VkPipelineMultisampleStateCreateInfo` (`sampleMask`: Fossilize's (samples + 31) / 32 words).
pub(super) fn multisample(o: &Obj<'_>) -> Result<MultisampleState, String> {
    o.chain(&[])?;
    Ok(MultisampleState {
        flags: o.u32("flags")?,
        rasterization_samples: o.u32("rasterizationSamples")?,
        sample_shading_enable: o.bool("sampleShadingEnable")?,
        min_sample_shading: o.f32("minSampleShading")?,
        sample_mask: o.u32s("sampleMask")?,
        alpha_to_coverage_enable: o.bool("alphaToCoverageEnable")?,
        alpha_to_one_enable: o.bool("alphaToOneEnable")?,
    })
}

fn stencil(o: &Obj<'_>) -> Result<StencilOpState, String> {
    Ok(StencilOpState {
        fail_op: o.u32("failOp")?,
        pass_op: o.u32("passOp")?,
        depth_fail_op: o.u32("depthFailOp")?,
        compare_op: o.u32("compareOp")?,
        compare_mask: o.u32("compareMask")?,
        write_mask: o.u32("writeMask")?,
        reference: o.u32("reference")?,
    })
}

/// `VkPipelineDepthStencilStateCreateInfo`.
pub(super) fn depth_stencil(o: &Obj<'_>) -> Result<DepthStencilState, String> {
    o.chain(&[])?;
    Ok(DepthStencilState {
        flags: o.u32("flags")?,
        depth_test_enable: o.bool("depthTestEnable")?,
        depth_write_enable: o.bool("depthWriteEnable")?,
        depth_compare_op: o.u32("depthCompareOp")?,
        depth_bounds_test_enable: o.bool("depthBoundsTestEnable")?,
        stencil_test_enable: o.bool("stencilTestEnable")?,
        front: stencil(&o.obj("front")?)?,
        back: stencil(&o.obj("back")?)?,
        min_depth_bounds: o.f32("minDepthBounds")?,
        max_depth_bounds: o.f32("maxDepthBounds")?,
    })
}

/// `VkPipelineColorBlendStateCreateInfo` (`attachmentCount` as recorded where Fossilize writes
/// it, else the number of attachments).
pub(super) fn color_blend(o: &Obj<'_>) -> Result<ColorBlendState, String> {
    o.chain(&[])?;
    let attachments: Vec<ColorBlendAttachment> = o
        .objs("attachments")?
        .iter()
        .map(|a| {
            Ok(ColorBlendAttachment {
                blend_enable: a.bool("blendEnable")?,
                src_color_blend_factor: a.u32("srcColorBlendFactor")?,
                dst_color_blend_factor: a.u32("dstColorBlendFactor")?,
                color_blend_op: a.u32("colorBlendOp")?,
                src_alpha_blend_factor: a.u32("srcAlphaBlendFactor")?,
                dst_alpha_blend_factor: a.u32("dstAlphaBlendFactor")?,
                alpha_blend_op: a.u32("alphaBlendOp")?,
                color_write_mask: a.u32("colorWriteMask")?,
            })
        })
        .collect::<Result<_, String>>()?;
    let constants = o.opt("blendConstants").and_then(|v| v.as_array()).map(Vec::as_slice).unwrap_or_default();
    if constants.len() != 4 {
        return Err(format!("{}: not 4 floats", o.at("blendConstants")));
    }
    let mut blend_constants = [0.0f32; 4];
    for (i, (c, v)) in blend_constants.iter_mut().zip(constants).enumerate() {
        *c = v
            .as_f64()
            .map(|f| f as f32)
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("{}[{i}]: {v} is not a float", o.at("blendConstants")))?;
    }
    let attachment_count = match o.opt("attachmentCount") {
        Some(_) => o.u32("attachmentCount")?,
        None => attachments.len() as u32,
    };
    Ok(ColorBlendState {
        flags: o.u32("flags")?,
        logic_op_enable: o.bool("logicOpEnable")?,
        logic_op: o.u32("logicOp")?,
        attachment_count,
        attachments,
        blend_constants,
    })
}

/// `VkPipelineDynamicStateCreateInfo::pDynamicStates` (its `flags` are reserved).
pub(super) fn dynamic_states(o: &Obj<'_>) -> Result<Vec<u32>, String> {
    o.chain(&[])?;
    reserved_zero(o)?;
    o.u32s("dynamicState")
}

/// `VkSamplerCreateInfo` with its reduction mode.
pub(super) fn sampler(o: &Obj<'_>) -> Result<SamplerState, String> {
    let chain = o.chain(&[stype::REDUCTION_MODE])?;
    Ok(SamplerState {
        flags: o.u32("flags")?,
        mag_filter: o.u32("magFilter")?,
        min_filter: o.u32("minFilter")?,
        mipmap_mode: o.u32("mipmapMode")?,
        address_mode_u: o.u32("addressModeU")?,
        address_mode_v: o.u32("addressModeV")?,
        address_mode_w: o.u32("addressModeW")?,
        mip_lod_bias: o.f32("mipLodBias")?,
        anisotropy_enable: o.bool("anisotropyEnable")?,
        max_anisotropy: o.f32("maxAnisotropy")?,
        compare_enable: o.bool("compareEnable")?,
        compare_op: o.u32("compareOp")?,
        min_lod: o.f32("minLod")?,
        max_lod: o.f32("maxLod")?,
        border_color: o.u32("borderColor")?,
        unnormalized_coordinates: o.bool("unnormalizedCoordinates")?,
        reduction_mode: chain.get(stype::REDUCTION_MODE).map(|r| r.u32("reductionMode")).transpose()?,
    })
}

fn attachment(o: &Obj<'_>) -> Result<AttachmentDescription, String> {
    o.chain(&[])?;
    Ok(AttachmentDescription {
        flags: o.u32("flags")?,
        format: o.u32("format")?,
        samples: o.u32("samples")?,
        load_op: o.u32("loadOp")?,
        store_op: o.u32("storeOp")?,
        stencil_load_op: o.u32("stencilLoadOp")?,
        stencil_store_op: o.u32("stencilStoreOp")?,
        initial_layout: o.u32("initialLayout")?,
        final_layout: o.u32("finalLayout")?,
    })
}

/// An attachment reference: `VkAttachmentReference2` (`aspect` `None`), or a version-1
/// `VkAttachmentReference` given the aspect mask its version-2 form has.
fn reference(o: &Obj<'_>, aspect: Option<u32>) -> Result<AttachmentReference, String> {
    o.chain(&[])?;
    Ok(AttachmentReference {
        attachment: o.u32("attachment")?,
        layout: o.u32("layout")?,
        aspect_mask: match aspect {
            Some(a) => a,
            None => o.u32("aspectMask")?,
        },
    })
}

/// Which form a recorded render pass has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum PassVersion {
    /// `VkRenderPassCreateInfo` (`renderPasses`), multiview in a chained
    /// `VkRenderPassMultiviewCreateInfo`.
    V1,
    /// `VkRenderPassCreateInfo2` (`renderPasses2`).
    V2,
}

/// A recorded render pass of either version as `RenderPassState` (the `VkRenderPassCreateInfo2`
/// form): a version-1 pass's multiview masks become the subpasses' `viewMask`s, its view
/// offsets the dependencies' `viewOffset`s and its correlation masks `correlatedViewMasks`; its
/// references get the aspect mask Vulkan gives them (an input attachment every aspect of its
/// format, any other reference 0, which Vulkan ignores).
pub(super) fn render_pass(o: &Obj<'_>, version: PassVersion) -> Result<RenderPassState, String> {
    let attachments = o.objs("attachments")?.iter().map(attachment).collect::<Result<Vec<_>, String>>()?;
    let (view_masks, view_offsets, correlated) = match version {
        PassVersion::V2 => {
            o.chain(&[])?;
            (None, None, o.u32s("correlatedViewMasks")?)
        }
        PassVersion::V1 => {
            let chain = o.chain(&[stype::MULTIVIEW])?;
            match chain.get(stype::MULTIVIEW) {
                None => (None, None, Vec::new()),
                Some(m) => (Some(m.u32s("viewMasks")?), Some(m.i32s("viewOffsets")?), m.u32s("correlationMasks")?),
            }
        }
    };
    let input_aspect = |r: &Obj<'_>| -> Result<Option<u32>, String> {
        if version == PassVersion::V2 {
            return Ok(None);
        }
        let a = r.u32("attachment")?;
        if a == vk::ATTACHMENT_UNUSED {
            return Ok(Some(0));
        }
        attachments
            .get(a as usize)
            .map(|d| Some(vk::format_aspects(d.format)))
            .ok_or_else(|| format!("{}: attachment {a} is not one of the pass's {}", r.path(), attachments.len()))
    };
    let v1_other = (version == PassVersion::V1).then_some(0);
    let subpass_objs = o.objs("subpasses")?;
    let mut subpasses = Vec::with_capacity(subpass_objs.len());
    for (i, s) in subpass_objs.iter().enumerate() {
        if version == PassVersion::V2 {
            s.chain(&[])?;
        }
        let view_mask = match (&view_masks, version) {
            (_, PassVersion::V2) => s.u32("viewMask")?,
            (Some(m), _) if !m.is_empty() => *m.get(i).ok_or_else(|| {
                format!("{}: {} view masks for {} subpasses", o.at("pNext"), m.len(), subpass_objs.len())
            })?,
            _ => 0,
        };
        let refs = |k: &str, aspect: &dyn Fn(&Obj<'_>) -> Result<Option<u32>, String>| {
            s.objs(k)?.iter().map(|r| reference(r, aspect(r)?)).collect::<Result<Vec<_>, String>>()
        };
        subpasses.push(SubpassDescription {
            flags: s.u32("flags")?,
            pipeline_bind_point: s.u32("pipelineBindPoint")?,
            view_mask,
            input_attachments: refs("inputAttachments", &input_aspect)?,
            color_attachments: refs("colorAttachments", &|_| Ok(v1_other))?,
            resolve_attachments: refs("resolveAttachments", &|_| Ok(v1_other))?,
            depth_stencil_attachment: s
                .opt_obj("depthStencilAttachment")?
                .map(|r| reference(&r, v1_other))
                .transpose()?,
            preserve_attachments: s.u32s("preserveAttachments")?,
        });
    }
    if let Some(m) = &view_masks {
        if m.len() > subpasses.len() {
            return Err(format!("{}: {} view masks for {} subpasses", o.at("pNext"), m.len(), subpasses.len()));
        }
    }
    let dependency_objs = o.objs("dependencies")?;
    let mut dependencies = Vec::with_capacity(dependency_objs.len());
    for (i, d) in dependency_objs.iter().enumerate() {
        if version == PassVersion::V2 {
            d.chain(&[])?;
        }
        let view_offset = match (&view_offsets, version) {
            (_, PassVersion::V2) => d.i32("viewOffset")?,
            (Some(v), _) if !v.is_empty() => *v.get(i).ok_or_else(|| {
                format!("{}: {} view offsets for {} dependencies", o.at("pNext"), v.len(), dependency_objs.len())
            })?,
            _ => 0,
        };
        dependencies.push(SubpassDependency {
            src_subpass: d.u32("srcSubpass")?,
            dst_subpass: d.u32("dstSubpass")?,
            src_stage_mask: d.u32("srcStageMask")?,
            dst_stage_mask: d.u32("dstStageMask")?,
            src_access_mask: d.u32("srcAccessMask")?,
            dst_access_mask: d.u32("dstAccessMask")?,
            dependency_flags: d.u32("dependencyFlags")?,
            view_offset,
        });
    }
    if let Some(v) = &view_offsets {
        if v.len() > dependencies.len() {
            return Err(format!("{}: {} view offsets for {} dependencies", o.at("pNext"), v.len(), dependencies.len()));
        }
    }
    Ok(RenderPassState {
        flags: o.u32("flags")?,
        attachments,
        subpasses,
        dependencies,
        correlated_view_masks: correlated,
    })
}
