//! Vulkan enum values (as Fossilize records them, plain numbers) to the pipelines script's
//! spellings (docs/FORMAT.md §2 and §4). `None`: granary cannot represent the value.

/// A colour or depth/stencil `VkFormat` to a granary texture format.
pub fn texture_format(f: u64) -> Option<&'static str> {
    Some(match f {
        9 => "r8unorm",
        16 => "rg8unorm",
        37 => "rgba8unorm",
        41 => "rgba8uint",
        43 => "rgba8unorm-srgb",
        44 => "bgra8unorm",
        50 => "bgra8unorm-srgb",
        64 => "rgb10a2unorm",
        76 => "r16float",
        83 => "rg16float",
        95 => "rgba16uint",
        97 => "rgba16float",
        98 => "r32uint",
        99 => "r32sint",
        100 => "r32float",
        101 => "rg32uint",
        103 => "rg32float",
        107 => "rgba32uint",
        108 => "rgba32sint",
        109 => "rgba32float",
        122 => "rg11b10ufloat",
        124 => "depth16unorm",
        125 => "depth24plus",
        126 => "depth32float",
        127 => "stencil8",
        129 => "depth24plus-stencil8",
        130 => "depth32float-stencil8",
        _ => return None,
    })
}

/// A vertex attribute `VkFormat` to a granary vertex format.
pub fn vertex_format(f: u64) -> Option<&'static str> {
    Some(match f {
        100 => "float32",
        103 => "float32x2",
        106 => "float32x3",
        109 => "float32x4",
        98 => "uint32",
        101 => "uint32x2",
        104 => "uint32x3",
        107 => "uint32x4",
        99 => "sint32",
        102 => "sint32x2",
        105 => "sint32x3",
        108 => "sint32x4",
        83 => "float16x2",
        97 => "float16x4",
        37 => "unorm8x4",
        38 => "snorm8x4",
        41 => "uint8x4",
        77 => "unorm16x2",
        91 => "unorm16x4",
        95 => "uint16x4",
        78 => "snorm16x2",
        92 => "snorm16x4",
        _ => return None,
    })
}

/// `VkPrimitiveTopology`.
pub fn topology(t: u64) -> Option<&'static str> {
    Some(match t {
        0 => "point-list",
        1 => "line-list",
        2 => "line-strip",
        3 => "triangle-list",
        4 => "triangle-strip",
        _ => return None,
    })
}

/// `VkCompareOp` (the same order as granary's).
pub fn compare(op: u64) -> Option<&'static str> {
    ["never", "less", "equal", "less-equal", "greater", "not-equal", "greater-equal", "always"]
        .get(op as usize)
        .copied()
}

/// `VkStencilOp`.
pub fn stencil_op(op: u64) -> Option<&'static str> {
    ["keep", "zero", "replace", "increment-clamp", "decrement-clamp", "invert", "increment-wrap", "decrement-wrap"]
        .get(op as usize)
        .copied()
}

/// `VkBlendFactor`.
pub fn blend_factor(f: u64) -> Option<&'static str> {
    Some(match f {
        0 => "zero",
        1 => "one",
        2 => "src",
        3 => "one-minus-src",
        4 => "dst",
        5 => "one-minus-dst",
        6 => "src-alpha",
        7 => "one-minus-src-alpha",
        8 => "dst-alpha",
        9 => "one-minus-dst-alpha",
        10 => "constant",
        11 => "one-minus-constant",
        14 => "src-alpha-saturated",
        _ => return None,
    })
}

/// `VkBlendOp` (the core five; advanced blend is not representable).
pub fn blend_op(op: u64) -> Option<&'static str> {
    ["add", "subtract", "reverse-subtract", "min", "max"].get(op as usize).copied()
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
