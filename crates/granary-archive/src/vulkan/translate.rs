//! Descriptor → Vulkan values: formats, blend, depth/stencil, vertex input, resource layout.
//!
//! Pure functions over plain data; no Vulkan call is made here. Everything a device may not
//! support comes back as a message naming the pipeline's field, which becomes that pipeline's
//! error (never a driver call with an invalid value).

use crate::layout::{BindingKind, PipelineLayout, StageMask};
use crate::render_state::{
    Blend, BlendFactor, BlendOp, ColorAttachment, ColorWrites, CompareFunction, CullMode, FrontFace, MaybeSpecialized,
    StencilFace, StencilOp, StepMode, TextureFormat, Topology, VertexBufferLayout, VertexFormat,
};
use crate::types::ShaderStage;
use vulkanalia::vk;

/// The Vulkan format of a vertex attribute format.
pub fn vertex_format(f: VertexFormat) -> vk::Format {
    use VertexFormat::*;
    match f {
        Float32 => vk::Format::R32_SFLOAT,
        Float32x2 => vk::Format::R32G32_SFLOAT,
        Float32x3 => vk::Format::R32G32B32_SFLOAT,
        Float32x4 => vk::Format::R32G32B32A32_SFLOAT,
        Uint32 => vk::Format::R32_UINT,
        Uint32x2 => vk::Format::R32G32_UINT,
        Uint32x3 => vk::Format::R32G32B32_UINT,
        Uint32x4 => vk::Format::R32G32B32A32_UINT,
        Sint32 => vk::Format::R32_SINT,
        Sint32x2 => vk::Format::R32G32_SINT,
        Sint32x3 => vk::Format::R32G32B32_SINT,
        Sint32x4 => vk::Format::R32G32B32A32_SINT,
        Float16x2 => vk::Format::R16G16_SFLOAT,
        Float16x4 => vk::Format::R16G16B16A16_SFLOAT,
        Unorm8x4 => vk::Format::R8G8B8A8_UNORM,
        Snorm8x4 => vk::Format::R8G8B8A8_SNORM,
        Uint8x4 => vk::Format::R8G8B8A8_UINT,
        Unorm16x4 => vk::Format::R16G16B16A16_UNORM,
        Unorm16x2 => vk::Format::R16G16_UNORM,
        Uint16x4 => vk::Format::R16G16B16A16_UINT,
        Snorm16x2 => vk::Format::R16G16_SNORM,
        Snorm16x4 => vk::Format::R16G16B16A16_SNORM,
    }
}

/// The Vulkan formats that can stand for `f`, best first (`depth24plus` is "24 bits or
/// better": the device's format table picks the first one it supports as an attachment).
pub fn texture_format_candidates(f: TextureFormat) -> &'static [vk::Format] {
    use TextureFormat::*;
    match f {
        R8unorm => &[vk::Format::R8_UNORM],
        Rg8unorm => &[vk::Format::R8G8_UNORM],
        Rgba8unorm => &[vk::Format::R8G8B8A8_UNORM],
        Rgba8unormSrgb => &[vk::Format::R8G8B8A8_SRGB],
        Bgra8unorm => &[vk::Format::B8G8R8A8_UNORM],
        Bgra8unormSrgb => &[vk::Format::B8G8R8A8_SRGB],
        Rgb10a2unorm => &[vk::Format::A2B10G10R10_UNORM_PACK32],
        Rg11b10ufloat => &[vk::Format::B10G11R11_UFLOAT_PACK32],
        R16float => &[vk::Format::R16_SFLOAT],
        Rg16float => &[vk::Format::R16G16_SFLOAT],
        Rgba16float => &[vk::Format::R16G16B16A16_SFLOAT],
        R32float => &[vk::Format::R32_SFLOAT],
        Rg32float => &[vk::Format::R32G32_SFLOAT],
        Rgba32float => &[vk::Format::R32G32B32A32_SFLOAT],
        R32uint => &[vk::Format::R32_UINT],
        Rg32uint => &[vk::Format::R32G32_UINT],
        Rgba32uint => &[vk::Format::R32G32B32A32_UINT],
        R32sint => &[vk::Format::R32_SINT],
        Rgba32sint => &[vk::Format::R32G32B32A32_SINT],
        Rgba16uint => &[vk::Format::R16G16B16A16_UINT],
        Rgba8uint => &[vk::Format::R8G8B8A8_UINT],
        Depth16unorm => &[vk::Format::D16_UNORM],
        Depth24plus => &[vk::Format::X8_D24_UNORM_PACK32, vk::Format::D32_SFLOAT],
        Depth24plusStencil8 => &[vk::Format::D24_UNORM_S8_UINT, vk::Format::D32_SFLOAT_S8_UINT],
        Depth32float => &[vk::Format::D32_SFLOAT],
        Depth32floatStencil8 => &[vk::Format::D32_SFLOAT_S8_UINT],
        Stencil8 => &[vk::Format::S8_UINT, vk::Format::D24_UNORM_S8_UINT, vk::Format::D32_SFLOAT_S8_UINT],
    }
}

/// Whether a depth/stencil format has a depth aspect and a stencil aspect.
pub fn depth_stencil_aspects(f: TextureFormat) -> (bool, bool) {
    use TextureFormat::*;
    match f {
        Depth16unorm | Depth24plus | Depth32float => (true, false),
        Depth24plusStencil8 | Depth32floatStencil8 => (true, true),
        Stencil8 => (false, true),
        _ => (false, false),
    }
}

fn factor(f: BlendFactor) -> vk::BlendFactor {
    use BlendFactor::*;
    match f {
        Zero => vk::BlendFactor::ZERO,
        One => vk::BlendFactor::ONE,
        Src => vk::BlendFactor::SRC_COLOR,
        OneMinusSrc => vk::BlendFactor::ONE_MINUS_SRC_COLOR,
        SrcAlpha => vk::BlendFactor::SRC_ALPHA,
        OneMinusSrcAlpha => vk::BlendFactor::ONE_MINUS_SRC_ALPHA,
        Dst => vk::BlendFactor::DST_COLOR,
        OneMinusDst => vk::BlendFactor::ONE_MINUS_DST_COLOR,
        DstAlpha => vk::BlendFactor::DST_ALPHA,
        OneMinusDstAlpha => vk::BlendFactor::ONE_MINUS_DST_ALPHA,
        SrcAlphaSaturated => vk::BlendFactor::SRC_ALPHA_SATURATE,
        Constant => vk::BlendFactor::CONSTANT_COLOR,
        OneMinusConstant => vk::BlendFactor::ONE_MINUS_CONSTANT_COLOR,
    }
}

fn op(o: BlendOp) -> vk::BlendOp {
    match o {
        BlendOp::Add => vk::BlendOp::ADD,
        BlendOp::Subtract => vk::BlendOp::SUBTRACT,
        BlendOp::ReverseSubtract => vk::BlendOp::REVERSE_SUBTRACT,
        BlendOp::Min => vk::BlendOp::MIN,
        BlendOp::Max => vk::BlendOp::MAX,
    }
}

/// One colour attachment's blend state.
pub fn blend_attachment(blend: Blend, writes: ColorWrites) -> vk::PipelineColorBlendAttachmentState {
    let mut s = vk::PipelineColorBlendAttachmentState {
        color_write_mask: vk::ColorComponentFlags::from_bits_truncate(u32::from(writes.0 & 0xf)),
        ..Default::default()
    };
    if let Blend::On(b) = blend {
        s.blend_enable = vk::TRUE;
        s.src_color_blend_factor = factor(b.color.src);
        s.dst_color_blend_factor = factor(b.color.dst);
        s.color_blend_op = op(b.color.op);
        s.src_alpha_blend_factor = factor(b.alpha.src);
        s.dst_alpha_blend_factor = factor(b.alpha.dst);
        s.alpha_blend_op = op(b.alpha.op);
    }
    s
}

/// The blend an unspecialized blend is linked with (the fragment-output part made at run time).
pub const LINK_BLEND: Blend = Blend::Off;

/// The write mask an unspecialized write mask is linked with.
pub const LINK_WRITE_MASK: ColorWrites = ColorWrites::ALL;

/// The blend state an attachment is created with: unspecialized blend is off, an
/// unspecialized write mask writes every channel.
pub fn blend_state(c: &ColorAttachment) -> vk::PipelineColorBlendAttachmentState {
    let blend = match c.blend {
        MaybeSpecialized::Is(b) => b,
        MaybeSpecialized::Unspecialized => LINK_BLEND,
    };
    let writes = match c.write_mask {
        MaybeSpecialized::Is(m) => m,
        MaybeSpecialized::Unspecialized => LINK_WRITE_MASK,
    };
    blend_attachment(blend, writes)
}

/// A depth or stencil comparison.
pub fn compare(c: CompareFunction) -> vk::CompareOp {
    use CompareFunction::*;
    match c {
        Never => vk::CompareOp::NEVER,
        Less => vk::CompareOp::LESS,
        Equal => vk::CompareOp::EQUAL,
        LessEqual => vk::CompareOp::LESS_OR_EQUAL,
        Greater => vk::CompareOp::GREATER,
        NotEqual => vk::CompareOp::NOT_EQUAL,
        GreaterEqual => vk::CompareOp::GREATER_OR_EQUAL,
        Always => vk::CompareOp::ALWAYS,
    }
}

fn stencil_op(o: StencilOp) -> vk::StencilOp {
    use StencilOp::*;
    match o {
        Keep => vk::StencilOp::KEEP,
        Zero => vk::StencilOp::ZERO,
        Replace => vk::StencilOp::REPLACE,
        Invert => vk::StencilOp::INVERT,
        IncrementClamp => vk::StencilOp::INCREMENT_AND_CLAMP,
        DecrementClamp => vk::StencilOp::DECREMENT_AND_CLAMP,
        IncrementWrap => vk::StencilOp::INCREMENT_AND_WRAP,
        DecrementWrap => vk::StencilOp::DECREMENT_AND_WRAP,
    }
}

/// One face's stencil state (the reference is dynamic state).
pub fn stencil_face(f: StencilFace, read: u32, write: u32) -> vk::StencilOpState {
    vk::StencilOpState {
        fail_op: stencil_op(f.fail_op),
        pass_op: stencil_op(f.pass_op),
        depth_fail_op: stencil_op(f.depth_fail_op),
        compare_op: compare(f.compare),
        compare_mask: read,
        write_mask: write,
        reference: 0,
    }
}

/// Primitive topology.
pub fn topology(t: Topology) -> vk::PrimitiveTopology {
    match t {
        Topology::PointList => vk::PrimitiveTopology::POINT_LIST,
        Topology::LineList => vk::PrimitiveTopology::LINE_LIST,
        Topology::LineStrip => vk::PrimitiveTopology::LINE_STRIP,
        Topology::TriangleList => vk::PrimitiveTopology::TRIANGLE_LIST,
        Topology::TriangleStrip => vk::PrimitiveTopology::TRIANGLE_STRIP,
    }
}

/// Face culling.
pub fn cull(c: CullMode) -> vk::CullModeFlags {
    match c {
        CullMode::None => vk::CullModeFlags::NONE,
        CullMode::Front => vk::CullModeFlags::FRONT,
        CullMode::Back => vk::CullModeFlags::BACK,
    }
}

/// Front-face winding.
pub fn front_face(f: FrontFace) -> vk::FrontFace {
    match f {
        FrontFace::Ccw => vk::FrontFace::COUNTER_CLOCKWISE,
        FrontFace::Cw => vk::FrontFace::CLOCKWISE,
    }
}

/// Stage flags of a stage mask.
pub fn stage_flags(m: StageMask) -> vk::ShaderStageFlags {
    let mut f = vk::ShaderStageFlags::empty();
    for s in m.stages() {
        f |= stage_flag(s);
    }
    f
}

/// The stage flag of one stage.
pub fn stage_flag(s: ShaderStage) -> vk::ShaderStageFlags {
    match s {
        ShaderStage::Vertex => vk::ShaderStageFlags::VERTEX,
        ShaderStage::Fragment => vk::ShaderStageFlags::FRAGMENT,
        ShaderStage::Compute => vk::ShaderStageFlags::COMPUTE,
        ShaderStage::TessellationControl => vk::ShaderStageFlags::TESSELLATION_CONTROL,
        ShaderStage::TessellationEvaluation => vk::ShaderStageFlags::TESSELLATION_EVALUATION,
        ShaderStage::Geometry => vk::ShaderStageFlags::GEOMETRY,
        ShaderStage::Task => vk::ShaderStageFlags::TASK_EXT,
        ShaderStage::Mesh => vk::ShaderStageFlags::MESH_EXT,
        ShaderStage::RayGeneration => vk::ShaderStageFlags::RAYGEN_KHR,
        ShaderStage::AnyHit => vk::ShaderStageFlags::ANY_HIT_KHR,
        ShaderStage::ClosestHit => vk::ShaderStageFlags::CLOSEST_HIT_KHR,
        ShaderStage::Miss => vk::ShaderStageFlags::MISS_KHR,
        ShaderStage::Intersection => vk::ShaderStageFlags::INTERSECTION_KHR,
        ShaderStage::Callable => vk::ShaderStageFlags::CALLABLE_KHR,
    }
}

/// One descriptor-set binding, as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SetBinding {
    /// `binding` within the set.
    pub binding: u32,
    /// Descriptor type.
    pub ty: vk::DescriptorType,
    /// Descriptor count.
    pub count: u32,
    /// Stages.
    pub stages: vk::ShaderStageFlags,
}

/// A pipeline layout as plain values: one binding list per set `0..=max group` (gaps empty),
/// and the push-constant range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LayoutDesc {
    /// Bindings per set index.
    pub sets: Vec<Vec<SetBinding>>,
    /// `(size, stages)` of the push-constant range.
    pub push_constants: Option<(u32, vk::ShaderStageFlags)>,
}

/// Most descriptor sets a layout may have (`maxBoundDescriptorSets` is at least 4; checked
/// against the device when the layout is created).
pub const MAX_SETS: u32 = 32;

/// The Vulkan pipeline layout of a granary resource layout. Refuses what the backend cannot
/// express: unsized binding arrays, acceleration structures, external textures.
pub fn layout_desc(layout: &PipelineLayout) -> Result<LayoutDesc, String> {
    let mut sets: Vec<Vec<SetBinding>> = Vec::new();
    for b in &layout.bindings {
        if b.group >= MAX_SETS {
            return Err(format!("@group({}) is above the {MAX_SETS} descriptor sets the backend supports", b.group));
        }
        let ty = match b.kind {
            BindingKind::UniformBuffer => vk::DescriptorType::UNIFORM_BUFFER,
            BindingKind::StorageBuffer | BindingKind::ReadOnlyStorageBuffer => vk::DescriptorType::STORAGE_BUFFER,
            BindingKind::SampledTexture => vk::DescriptorType::SAMPLED_IMAGE,
            BindingKind::StorageTexture | BindingKind::ReadOnlyStorageTexture => vk::DescriptorType::STORAGE_IMAGE,
            BindingKind::Sampler | BindingKind::ComparisonSampler => vk::DescriptorType::SAMPLER,
            BindingKind::CombinedImageSampler => vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
            BindingKind::UniformTexelBuffer => vk::DescriptorType::UNIFORM_TEXEL_BUFFER,
            BindingKind::StorageTexelBuffer => vk::DescriptorType::STORAGE_TEXEL_BUFFER,
            BindingKind::InputAttachment => vk::DescriptorType::INPUT_ATTACHMENT,
            other => {
                return Err(format!(
                    "@group({}) @binding({}): {} bindings are not supported by the Vulkan backend",
                    b.group,
                    b.binding,
                    other.name()
                ))
            }
        };
        let count = match b.count {
            0 => 1,
            u32::MAX => {
                return Err(format!(
                    "@group({}) @binding({}): unsized binding arrays are not supported by the Vulkan backend",
                    b.group, b.binding
                ))
            }
            n => n,
        };
        let g = b.group as usize;
        if sets.len() <= g {
            sets.resize(g + 1, Vec::new());
        }
        sets[g].push(SetBinding { binding: b.binding, ty, count, stages: stage_flags(b.visibility) });
    }
    let push_constants = match layout.immediates {
        None => None,
        Some(i) => {
            let size = i.size.checked_next_multiple_of(4).filter(|s| *s > 0).ok_or_else(|| {
                format!("the push-constant (immediate data) block is {} bytes: it must be 1 to 2^32-4", i.size)
            })?;
            let stages = stage_flags(i.visibility);
            if stages.is_empty() {
                return Err("the push-constant (immediate data) block is visible to no stage".into());
            }
            Some((size, stages))
        }
    };
    Ok(LayoutDesc { sets, push_constants })
}

/// Vertex input bindings and attributes. Refuses two attributes at one location (across all
/// buffers), which Vulkan forbids.
pub fn vertex_input(
    buffers: &[VertexBufferLayout],
) -> Result<(Vec<vk::VertexInputBindingDescription>, Vec<vk::VertexInputAttributeDescription>), String> {
    let mut bindings = Vec::with_capacity(buffers.len());
    let mut attributes: Vec<vk::VertexInputAttributeDescription> = Vec::new();
    let mut locations: std::collections::HashMap<u32, (usize, usize)> = std::collections::HashMap::new();
    for (i, buffer) in buffers.iter().enumerate() {
        let stride = u32::try_from(buffer.stride)
            .map_err(|_| format!("vertex_buffers[{i}].stride {} does not fit 32 bits", buffer.stride))?;
        bindings.push(vk::VertexInputBindingDescription {
            binding: i as u32,
            stride,
            input_rate: match buffer.step {
                StepMode::Vertex => vk::VertexInputRate::VERTEX,
                StepMode::Instance => vk::VertexInputRate::INSTANCE,
            },
        });
        for (j, a) in buffer.attributes.iter().enumerate() {
            let offset = u32::try_from(a.offset)
                .map_err(|_| format!("vertex_buffers[{i}].attributes[{j}].offset {} does not fit 32 bits", a.offset))?;
            if let Some((bi, bj)) = locations.insert(a.location, (i, j)) {
                return Err(format!(
                    "vertex_buffers[{i}].attributes[{j}].location {} is also vertex_buffers[{bi}].attributes[{bj}]'s",
                    a.location
                ));
            }
            attributes.push(vk::VertexInputAttributeDescription {
                location: a.location,
                binding: i as u32,
                format: vertex_format(a.format),
                offset,
            });
        }
    }
    Ok((bindings, attributes))
}

/// The sample count flag of `n` samples.
pub fn samples(n: u32) -> Result<vk::SampleCountFlags, String> {
    Ok(match n {
        1 => vk::SampleCountFlags::_1,
        2 => vk::SampleCountFlags::_2,
        4 => vk::SampleCountFlags::_4,
        8 => vk::SampleCountFlags::_8,
        16 => vk::SampleCountFlags::_16,
        32 => vk::SampleCountFlags::_32,
        64 => vk::SampleCountFlags::_64,
        n => return Err(format!("sample_count {n} is not a power of two up to 64")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_texture_format_has_a_candidate_and_aspects_agree() {
        for f in TextureFormat::ALL.iter().copied() {
            assert!(!texture_format_candidates(f).is_empty(), "{f:?}");
            let (d, s) = depth_stencil_aspects(f);
            assert_eq!(d || s, f.is_depth_stencil(), "{f:?}");
        }
    }

    #[test]
    fn blend_off_writes_only_the_mask() {
        let s = blend_attachment(Blend::Off, ColorWrites(0b0101));
        assert_eq!(s.blend_enable, vk::FALSE);
        assert_eq!(s.color_write_mask, vk::ColorComponentFlags::R | vk::ColorComponentFlags::B);
    }

    #[test]
    fn layouts_refuse_what_vulkan_cannot_express_here() {
        use crate::layout::{Immediates, LayoutBinding};
        let mut l = PipelineLayout {
            bindings: vec![
                LayoutBinding {
                    group: 2,
                    binding: 1,
                    kind: BindingKind::UniformBuffer,
                    count: 0,
                    visibility: StageMask(0b11),
                },
                LayoutBinding {
                    group: 0,
                    binding: 0,
                    kind: BindingKind::Sampler,
                    count: 4,
                    visibility: StageMask(0b10),
                },
            ],
            immediates: Some(Immediates { size: 6, visibility: StageMask(1) }),
            stages: vec![],
        };
        let d = layout_desc(&l).expect("expressible");
        assert_eq!(d.sets.len(), 3);
        assert!(d.sets[1].is_empty());
        assert_eq!(d.sets[0][0].count, 4);
        assert_eq!(d.sets[2][0].ty, vk::DescriptorType::UNIFORM_BUFFER);
        assert_eq!(d.push_constants, Some((8, vk::ShaderStageFlags::VERTEX)));
        l.bindings[1].count = u32::MAX;
        assert!(layout_desc(&l).unwrap_err().contains("unsized"));
    }

    #[test]
    fn push_constant_blocks_must_be_sized_visible_and_not_wrap() {
        use crate::layout::Immediates;
        let with = |size, visibility| PipelineLayout {
            bindings: vec![],
            immediates: Some(Immediates { size, visibility: StageMask(visibility) }),
            stages: vec![],
        };
        assert!(layout_desc(&with(0, 1)).unwrap_err().contains("0 bytes"));
        assert!(layout_desc(&with(u32::MAX - 1, 1)).unwrap_err().contains("4294967294 bytes"));
        assert!(layout_desc(&with(16, 0)).unwrap_err().contains("visible to no stage"));
        assert_eq!(layout_desc(&with(13, 2)).unwrap().push_constants, Some((16, vk::ShaderStageFlags::FRAGMENT)));
    }

    #[test]
    fn two_attributes_at_one_location_are_refused_across_buffers() {
        use crate::render_state::{VertexAttribute, VertexFormat};
        let attr = |location, offset| VertexAttribute { format: VertexFormat::Float32x4, offset, location };
        let buffers = vec![
            VertexBufferLayout { stride: 16, step: StepMode::Vertex, attributes: vec![attr(0, 0)] },
            VertexBufferLayout { stride: 32, step: StepMode::Instance, attributes: vec![attr(1, 0), attr(0, 16)] },
        ];
        let e = vertex_input(&buffers).unwrap_err();
        assert!(
            e.contains("vertex_buffers[1].attributes[1].location 0") && e.contains("vertex_buffers[0].attributes[0]"),
            "{e}"
        );
    }
}
