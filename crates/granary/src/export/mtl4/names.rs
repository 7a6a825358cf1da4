//! Metal's enum case names for granary's state values (as the serializer writes them, without
//! the `MTL…` prefix): a translation into Metal's vocabulary, like the Vulkan layer's
//! `translate.rs`; granary's own spelling of each value is the value's `name()`.

use granary_archive::{BlendFactor, BlendOp, TextureFormat, VertexFormat};

/// `MTLColorWriteMask` as `|`-joined option names (`All`, `None`, or e.g. `Red|Alpha`).
pub fn write_mask(bits: u8) -> String {
    match bits & 0xf {
        0xf => "All".into(),
        0 => "None".into(),
        b => {
            let names = [(1, "Red"), (2, "Green"), (4, "Blue"), (8, "Alpha")];
            names.iter().filter(|(bit, _)| b & bit != 0).map(|(_, n)| *n).collect::<Vec<_>>().join("|")
        }
    }
}

/// The `MTLPixelFormat` case name (without the `MTLPixelFormat` prefix, as the serializer
/// writes it). Depth formats are listed for completeness; a Metal 4 render pipeline has no
/// depth attachment.
pub fn pixel_format(f: TextureFormat) -> &'static str {
    use TextureFormat::*;
    match f {
        R8unorm => "R8Unorm",
        Rg8unorm => "RG8Unorm",
        Rgba8unorm => "RGBA8Unorm",
        Rgba8unormSrgb => "RGBA8Unorm_sRGB",
        Bgra8unorm => "BGRA8Unorm",
        Bgra8unormSrgb => "BGRA8Unorm_sRGB",
        Rgb10a2unorm => "RGB10A2Unorm",
        Rg11b10ufloat => "RG11B10Float",
        R16float => "R16Float",
        Rg16float => "RG16Float",
        Rgba16float => "RGBA16Float",
        R32float => "R32Float",
        Rg32float => "RG32Float",
        Rgba32float => "RGBA32Float",
        R32uint => "R32Uint",
        Rg32uint => "RG32Uint",
        Rgba32uint => "RGBA32Uint",
        R32sint => "R32Sint",
        Rgba32sint => "RGBA32Sint",
        Rgba16uint => "RGBA16Uint",
        Rgba8uint => "RGBA8Uint",
        Depth16unorm => "Depth16Unorm",
        Depth24plus => "Depth32Float",
        Depth24plusStencil8 => "Depth32Float_Stencil8",
        Depth32float => "Depth32Float",
        Depth32floatStencil8 => "Depth32Float_Stencil8",
        Stencil8 => "Stencil8",
    }
}

/// The `MTLVertexFormat` case name.
pub fn vertex_format(f: VertexFormat) -> &'static str {
    use VertexFormat::*;
    match f {
        Float32 => "Float",
        Float32x2 => "Float2",
        Float32x3 => "Float3",
        Float32x4 => "Float4",
        Uint32 => "UInt",
        Uint32x2 => "UInt2",
        Uint32x3 => "UInt3",
        Uint32x4 => "UInt4",
        Sint32 => "Int",
        Sint32x2 => "Int2",
        Sint32x3 => "Int3",
        Sint32x4 => "Int4",
        Float16x2 => "Half2",
        Float16x4 => "Half4",
        Unorm8x4 => "UChar4Normalized",
        Snorm8x4 => "Char4Normalized",
        Uint8x4 => "UChar4",
        Unorm16x4 => "UShort4Normalized",
        Unorm16x2 => "UShort2Normalized",
        Uint16x4 => "UShort4",
        Snorm16x2 => "Short2Normalized",
        Snorm16x4 => "Short4Normalized",
    }
}

/// The `MTLBlendFactor` case name.
pub fn blend_factor(f: BlendFactor) -> &'static str {
    use BlendFactor::*;
    match f {
        Zero => "Zero",
        One => "One",
        Src => "SourceColor",
        OneMinusSrc => "OneMinusSourceColor",
        SrcAlpha => "SourceAlpha",
        OneMinusSrcAlpha => "OneMinusSourceAlpha",
        Dst => "DestinationColor",
        OneMinusDst => "OneMinusDestinationColor",
        DstAlpha => "DestinationAlpha",
        OneMinusDstAlpha => "OneMinusDestinationAlpha",
        SrcAlphaSaturated => "SourceAlphaSaturated",
        Constant => "BlendColor",
        OneMinusConstant => "OneMinusBlendColor",
    }
}

/// The `MTLBlendOperation` case name.
pub fn blend_op(o: BlendOp) -> &'static str {
    match o {
        BlendOp::Add => "Add",
        BlendOp::Subtract => "Subtract",
        BlendOp::ReverseSubtract => "ReverseSubtract",
        BlendOp::Min => "Min",
        BlendOp::Max => "Max",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn export_write_mask_names() {
        assert_eq!(write_mask(0xf), "All");
        assert_eq!(write_mask(0), "None");
        assert_eq!(write_mask(1 | 8), "Red|Alpha");
    }

    #[test]
    fn export_every_format_has_a_distinct_metal_name() {
        let colour: HashSet<_> =
            TextureFormat::ALL.iter().filter(|f| !f.is_depth_stencil()).map(|f| pixel_format(*f)).collect();
        assert_eq!(colour.len(), TextureFormat::ALL.iter().filter(|f| !f.is_depth_stencil()).count());
        let vertex: HashSet<_> = VertexFormat::ALL.iter().map(|f| vertex_format(*f)).collect();
        assert_eq!(vertex.len(), VertexFormat::ALL.len());
        let factors: HashSet<_> = BlendFactor::ALL.iter().map(|f| blend_factor(*f)).collect();
        assert_eq!(factors.len(), BlendFactor::ALL.len());
    }
}
