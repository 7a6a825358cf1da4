//! Vulkan enum values (as Fossilize records them, plain numbers) to granary's state values
//! (docs/FORMAT.md §4); their script spelling is the values' own (`name()`). `None`: granary
//! cannot represent the value.

use granary_archive::{BlendFactor, BlendOp, CompareFunction, StencilOp, TextureFormat, Topology, VertexFormat};

/// A colour or depth/stencil `VkFormat` to a granary texture format.
pub fn texture_format(f: u64) -> Option<TextureFormat> {
    Some(match f {
        9 => TextureFormat::R8unorm,
        16 => TextureFormat::Rg8unorm,
        37 => TextureFormat::Rgba8unorm,
        41 => TextureFormat::Rgba8uint,
        43 => TextureFormat::Rgba8unormSrgb,
        44 => TextureFormat::Bgra8unorm,
        50 => TextureFormat::Bgra8unormSrgb,
        64 => TextureFormat::Rgb10a2unorm,
        76 => TextureFormat::R16float,
        83 => TextureFormat::Rg16float,
        95 => TextureFormat::Rgba16uint,
        97 => TextureFormat::Rgba16float,
        98 => TextureFormat::R32uint,
        99 => TextureFormat::R32sint,
        100 => TextureFormat::R32float,
        101 => TextureFormat::Rg32uint,
        103 => TextureFormat::Rg32float,
        107 => TextureFormat::Rgba32uint,
        108 => TextureFormat::Rgba32sint,
        109 => TextureFormat::Rgba32float,
        122 => TextureFormat::Rg11b10ufloat,
        124 => TextureFormat::Depth16unorm,
        125 => TextureFormat::Depth24plus,
        126 => TextureFormat::Depth32float,
        127 => TextureFormat::Stencil8,
        129 => TextureFormat::Depth24plusStencil8,
        130 => TextureFormat::Depth32floatStencil8,
        _ => return None,
    })
}

/// A vertex attribute `VkFormat` to a granary vertex format.
pub fn vertex_format(f: u64) -> Option<VertexFormat> {
    Some(match f {
        100 => VertexFormat::Float32,
        103 => VertexFormat::Float32x2,
        106 => VertexFormat::Float32x3,
        109 => VertexFormat::Float32x4,
        98 => VertexFormat::Uint32,
        101 => VertexFormat::Uint32x2,
        104 => VertexFormat::Uint32x3,
        107 => VertexFormat::Uint32x4,
        99 => VertexFormat::Sint32,
        102 => VertexFormat::Sint32x2,
        105 => VertexFormat::Sint32x3,
        108 => VertexFormat::Sint32x4,
        83 => VertexFormat::Float16x2,
        97 => VertexFormat::Float16x4,
        37 => VertexFormat::Unorm8x4,
        38 => VertexFormat::Snorm8x4,
        41 => VertexFormat::Uint8x4,
        77 => VertexFormat::Unorm16x2,
        91 => VertexFormat::Unorm16x4,
        95 => VertexFormat::Uint16x4,
        78 => VertexFormat::Snorm16x2,
        92 => VertexFormat::Snorm16x4,
        _ => return None,
    })
}

/// `VkPrimitiveTopology`.
pub fn topology(t: u64) -> Option<Topology> {
    Some(match t {
        0 => Topology::PointList,
        1 => Topology::LineList,
        2 => Topology::LineStrip,
        3 => Topology::TriangleList,
        4 => Topology::TriangleStrip,
        _ => return None,
    })
}

/// `VkCompareOp` (the same order as granary's).
pub fn compare(op: u64) -> Option<CompareFunction> {
    [
        CompareFunction::Never,
        CompareFunction::Less,
        CompareFunction::Equal,
        CompareFunction::LessEqual,
        CompareFunction::Greater,
        CompareFunction::NotEqual,
        CompareFunction::GreaterEqual,
        CompareFunction::Always,
    ]
    .get(op as usize)
    .copied()
}

/// `VkStencilOp`.
pub fn stencil_op(op: u64) -> Option<StencilOp> {
    [
        StencilOp::Keep,
        StencilOp::Zero,
        StencilOp::Replace,
        StencilOp::IncrementClamp,
        StencilOp::DecrementClamp,
        StencilOp::Invert,
        StencilOp::IncrementWrap,
        StencilOp::DecrementWrap,
    ]
    .get(op as usize)
    .copied()
}

/// `VkBlendFactor`.
pub fn blend_factor(f: u64) -> Option<BlendFactor> {
    Some(match f {
        0 => BlendFactor::Zero,
        1 => BlendFactor::One,
        2 => BlendFactor::Src,
        3 => BlendFactor::OneMinusSrc,
        4 => BlendFactor::Dst,
        5 => BlendFactor::OneMinusDst,
        6 => BlendFactor::SrcAlpha,
        7 => BlendFactor::OneMinusSrcAlpha,
        8 => BlendFactor::DstAlpha,
        9 => BlendFactor::OneMinusDstAlpha,
        10 => BlendFactor::Constant,
        11 => BlendFactor::OneMinusConstant,
        14 => BlendFactor::SrcAlphaSaturated,
        _ => return None,
    })
}

/// `VkBlendOp` (the core five; advanced blend is not representable).
pub fn blend_op(op: u64) -> Option<BlendOp> {
    [BlendOp::Add, BlendOp::Subtract, BlendOp::ReverseSubtract, BlendOp::Min, BlendOp::Max].get(op as usize).copied()
}

/// `VkShaderStageFlagBits` bit values.
pub mod stage {
    /// Vertex.
    pub const VERTEX: u64 = 0x1;
    /// Fragment.
    pub const FRAGMENT: u64 = 0x10;
    /// Compute.
    pub const COMPUTE: u64 = 0x20;

    /// A name for messages.
    pub fn name(s: u64) -> &'static str {
        match s {
            0x1 => "vertex",
            0x2 => "tessellation control",
            0x4 => "tessellation evaluation",
            0x8 => "geometry",
            0x10 => "fragment",
            0x20 => "compute",
            0x40 => "task",
            0x80 => "mesh",
            0x100..=0x2000 => "ray tracing",
            _ => "unknown",
        }
    }
}

/// Dynamic states whose value is chosen at draw time and that change state the script fixes
/// (`VkDynamicState`, values checked against the Vulkan registry as vulkanalia-sys 0.35
/// generates it): a pipeline using one is skipped.
pub fn unrepresentable_dynamic_state(s: u64) -> Option<&'static str> {
    Some(match s {
        1000267000 => "CULL_MODE",
        1000267001 => "FRONT_FACE",
        1000267002 => "PRIMITIVE_TOPOLOGY",
        1000267005 => "VERTEX_INPUT_BINDING_STRIDE",
        1000267006 => "DEPTH_TEST_ENABLE",
        1000267007 => "DEPTH_WRITE_ENABLE",
        1000267008 => "DEPTH_COMPARE_OP",
        1000267009 => "DEPTH_BOUNDS_TEST_ENABLE",
        1000267010 => "STENCIL_TEST_ENABLE",
        1000267011 => "STENCIL_OP",
        1000377001 => "RASTERIZER_DISCARD_ENABLE",
        1000377002 => "DEPTH_BIAS_ENABLE",
        1000377004 => "PRIMITIVE_RESTART_ENABLE",
        1000352000 => "VERTEX_INPUT_EXT",
        1000455003..=1000455032 => "extended dynamic state 3",
        _ => return None,
    })
}
