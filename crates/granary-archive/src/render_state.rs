//! Fixed-function pipeline state: vertex layouts, primitive, colour attachments, depth/stencil,
//! and [`RenderState`], the whole fixed-function state of a render pipeline as the archive
//! stores it (docs/FORMAT.md §1.11), so a run-time loader can create the pipeline again.
//!
//! These types are plain data. Their stored enums spell themselves once (`stored_enum!`: the
//! stored number and the pipelines script's JSON name); with the `serde` feature the structs
//! (de)serialize with the script's JSON spelling (docs/FORMAT.md §2).
//!
//! - [`walk`]: the one walk over every field, in one order, that both byte encodings follow
//!   (the archive's, [`codec`], and the pipeline key's in the offline crate).
//! - [`codec`]: the archive's byte encoding of a [`RenderState`] (docs/FORMAT.md §1.11) and its
//!   checked decoder.

pub(crate) mod codec;
pub(crate) mod walk;

/// Scalar kind of a shader interface value or an attachment's texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// Floating point (including normalized formats).
    Float,
    /// Signed integer.
    Sint,
    /// Unsigned integer.
    Uint,
}

stored_enum!(
    /// Format of one vertex attribute.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum VertexFormat: u8 {
        /// 1 × f32
        Float32 = 0 => "float32",
        /// 2 × f32
        Float32x2 = 1 => "float32x2",
        /// 3 × f32
        Float32x3 = 2 => "float32x3",
        /// 4 × f32
        Float32x4 = 3 => "float32x4",
        /// 1 × u32
        Uint32 = 4 => "uint32",
        /// 2 × u32
        Uint32x2 = 5 => "uint32x2",
        /// 3 × u32
        Uint32x3 = 6 => "uint32x3",
        /// 4 × u32
        Uint32x4 = 7 => "uint32x4",
        /// 1 × i32
        Sint32 = 8 => "sint32",
        /// 2 × i32
        Sint32x2 = 9 => "sint32x2",
        /// 3 × i32
        Sint32x3 = 10 => "sint32x3",
        /// 4 × i32
        Sint32x4 = 11 => "sint32x4",
        /// 2 × f16
        Float16x2 = 12 => "float16x2",
        /// 4 × f16
        Float16x4 = 13 => "float16x4",
        /// 4 × u8 normalized to [0, 1]
        Unorm8x4 = 14 => "unorm8x4",
        /// 4 × i8 normalized to [-1, 1]
        Snorm8x4 = 15 => "snorm8x4",
        /// 4 × u8
        Uint8x4 = 16 => "uint8x4",
        /// 4 × u16 normalized
        Unorm16x4 = 17 => "unorm16x4",
        /// 2 × u16 normalized
        Unorm16x2 = 18 => "unorm16x2",
        /// 4 × u16
        Uint16x4 = 19 => "uint16x4",
        /// 2 × i16 normalized
        Snorm16x2 = 20 => "snorm16x2",
        /// 4 × i16 normalized
        Snorm16x4 = 21 => "snorm16x4",
    }
);

impl VertexFormat {
    /// The scalar kind and component count a shader sees for this format.
    pub fn shader_type(self) -> (ScalarKind, u8) {
        use VertexFormat::*;
        match self {
            Float32 => (ScalarKind::Float, 1),
            Float32x2 | Float16x2 | Unorm16x2 | Snorm16x2 => (ScalarKind::Float, 2),
            Float32x3 => (ScalarKind::Float, 3),
            Float32x4 | Float16x4 | Unorm8x4 | Snorm8x4 | Unorm16x4 | Snorm16x4 => (ScalarKind::Float, 4),
            Uint32 => (ScalarKind::Uint, 1),
            Uint32x2 => (ScalarKind::Uint, 2),
            Uint32x3 => (ScalarKind::Uint, 3),
            Uint32x4 | Uint8x4 | Uint16x4 => (ScalarKind::Uint, 4),
            Sint32 => (ScalarKind::Sint, 1),
            Sint32x2 => (ScalarKind::Sint, 2),
            Sint32x3 => (ScalarKind::Sint, 3),
            Sint32x4 => (ScalarKind::Sint, 4),
        }
    }
}

stored_enum!(
    /// Whether a vertex buffer advances per vertex or per instance.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum StepMode: u8 {
        /// Per vertex.
        Vertex = 0 => "vertex",
        /// Per instance.
        Instance = 1 => "instance",
    }
);

/// One attribute read from a vertex buffer.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct VertexAttribute {
    /// The shader input location it feeds.
    pub location: u32,
    /// Its format in the buffer.
    pub format: VertexFormat,
    /// Byte offset within one element.
    #[cfg_attr(feature = "serde", serde(default))]
    pub offset: u64,
}

/// One vertex buffer's layout.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct VertexBufferLayout {
    /// Bytes between consecutive elements.
    pub stride: u64,
    /// Per-vertex or per-instance stepping.
    #[cfg_attr(feature = "serde", serde(default = "default_step"))]
    pub step: StepMode,
    /// Attributes; their order does not matter (the encoding sorts them by location).
    pub attributes: Vec<VertexAttribute>,
}

#[cfg(feature = "serde")]
fn default_step() -> StepMode {
    StepMode::Vertex
}

stored_enum!(
    /// Primitive topology.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Topology: u8 {
        /// Points.
        PointList = 0 => "point-list",
        /// Separate lines.
        LineList = 1 => "line-list",
        /// Connected lines.
        LineStrip = 2 => "line-strip",
        /// Separate triangles.
        TriangleList = 3 => "triangle-list",
        /// Connected triangles.
        TriangleStrip = 4 => "triangle-strip",
    }
);
stored_enum!(
    /// Which faces are culled.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum CullMode: u8 {
        /// Nothing culled.
        None = 0 => "none",
        /// Front faces culled.
        Front = 1 => "front",
        /// Back faces culled.
        Back = 2 => "back",
    }
);
stored_enum!(
    /// Winding order of front faces.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum FrontFace: u8 {
        /// Counter-clockwise.
        Ccw = 0 => "ccw",
        /// Clockwise.
        Cw = 1 => "cw",
    }
);
stored_enum!(
    /// Index format for strip topologies.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum IndexFormat: u8 {
        /// 16-bit indices.
        Uint16 = 0 => "uint16",
        /// 32-bit indices.
        Uint32 = 1 => "uint32",
    }
);

/// Primitive assembly and rasterizer state.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct PrimitiveState {
    /// Topology (default `triangle-list`).
    #[cfg_attr(feature = "serde", serde(default = "default_topology"))]
    pub topology: Topology,
    /// Index format for strips with primitive restart.
    #[cfg_attr(feature = "serde", serde(default))]
    pub strip_index_format: Option<IndexFormat>,
    /// Front-face winding (default `ccw`).
    #[cfg_attr(feature = "serde", serde(default = "default_front_face"))]
    pub front_face: FrontFace,
    /// Culling (default `none`).
    #[cfg_attr(feature = "serde", serde(default = "default_cull"))]
    pub cull: CullMode,
}

#[cfg(feature = "serde")]
fn default_topology() -> Topology {
    Topology::TriangleList
}
#[cfg(feature = "serde")]
fn default_front_face() -> FrontFace {
    FrontFace::Ccw
}
#[cfg(feature = "serde")]
fn default_cull() -> CullMode {
    CullMode::None
}

impl Default for PrimitiveState {
    fn default() -> Self {
        PrimitiveState {
            topology: Topology::TriangleList,
            strip_index_format: None,
            front_face: FrontFace::Ccw,
            cull: CullMode::None,
        }
    }
}

stored_enum!(
    /// Texture formats usable as colour or depth/stencil attachments.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum TextureFormat: u8 {
        /// 8-bit unorm red.
        R8unorm = 0 => "r8unorm",
        /// 8-bit unorm red-green.
        Rg8unorm = 1 => "rg8unorm",
        /// 8-bit unorm RGBA.
        Rgba8unorm = 2 => "rgba8unorm",
        /// 8-bit unorm RGBA, sRGB.
        Rgba8unormSrgb = 3 => "rgba8unorm-srgb",
        /// 8-bit unorm BGRA.
        Bgra8unorm = 4 => "bgra8unorm",
        /// 8-bit unorm BGRA, sRGB.
        Bgra8unormSrgb = 5 => "bgra8unorm-srgb",
        /// 10-10-10-2 unorm.
        Rgb10a2unorm = 6 => "rgb10a2unorm",
        /// 11-11-10 float.
        Rg11b10ufloat = 7 => "rg11b10ufloat",
        /// 16-bit float red.
        R16float = 8 => "r16float",
        /// 16-bit float red-green.
        Rg16float = 9 => "rg16float",
        /// 16-bit float RGBA.
        Rgba16float = 10 => "rgba16float",
        /// 32-bit float red.
        R32float = 11 => "r32float",
        /// 32-bit float red-green.
        Rg32float = 12 => "rg32float",
        /// 32-bit float RGBA.
        Rgba32float = 13 => "rgba32float",
        /// 32-bit uint red.
        R32uint = 14 => "r32uint",
        /// 32-bit uint red-green.
        Rg32uint = 15 => "rg32uint",
        /// 32-bit uint RGBA.
        Rgba32uint = 16 => "rgba32uint",
        /// 32-bit sint red.
        R32sint = 17 => "r32sint",
        /// 32-bit sint RGBA.
        Rgba32sint = 18 => "rgba32sint",
        /// 16-bit uint RGBA.
        Rgba16uint = 19 => "rgba16uint",
        /// 8-bit uint RGBA.
        Rgba8uint = 20 => "rgba8uint",
        /// 16-bit unorm depth.
        Depth16unorm = 21 => "depth16unorm",
        /// 24-bit (or better) depth.
        Depth24plus = 22 => "depth24plus",
        /// 24-bit depth, 8-bit stencil.
        Depth24plusStencil8 = 23 => "depth24plus-stencil8",
        /// 32-bit float depth.
        Depth32float = 24 => "depth32float",
        /// 32-bit float depth, 8-bit stencil.
        Depth32floatStencil8 = 25 => "depth32float-stencil8",
        /// 8-bit stencil.
        Stencil8 = 26 => "stencil8",
    }
);

impl TextureFormat {
    /// Whether the format has depth or stencil aspects.
    pub fn is_depth_stencil(self) -> bool {
        (self as u8) >= TextureFormat::Depth16unorm as u8
    }
    /// Scalar kind a fragment shader must write to a colour attachment of this format.
    pub fn color_scalar_kind(self) -> Option<ScalarKind> {
        use TextureFormat::*;
        match self {
            R32uint | Rg32uint | Rgba32uint | Rgba16uint | Rgba8uint => Some(ScalarKind::Uint),
            R32sint | Rgba32sint => Some(ScalarKind::Sint),
            f if f.is_depth_stencil() => None,
            _ => Some(ScalarKind::Float),
        }
    }
}

stored_enum!(
    /// Blend factor.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum BlendFactor: u8 {
        /// 0
        Zero = 0 => "zero",
        /// 1
        One = 1 => "one",
        /// source colour
        Src = 2 => "src",
        /// 1 − source colour
        OneMinusSrc = 3 => "one-minus-src",
        /// source alpha
        SrcAlpha = 4 => "src-alpha",
        /// 1 − source alpha
        OneMinusSrcAlpha = 5 => "one-minus-src-alpha",
        /// destination colour
        Dst = 6 => "dst",
        /// 1 − destination colour
        OneMinusDst = 7 => "one-minus-dst",
        /// destination alpha
        DstAlpha = 8 => "dst-alpha",
        /// 1 − destination alpha
        OneMinusDstAlpha = 9 => "one-minus-dst-alpha",
        /// saturated source alpha
        SrcAlphaSaturated = 10 => "src-alpha-saturated",
        /// blend constant
        Constant = 11 => "constant",
        /// 1 − blend constant
        OneMinusConstant = 12 => "one-minus-constant",
    }
);
stored_enum!(
    /// Blend operation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum BlendOp: u8 {
        /// src + dst
        Add = 0 => "add",
        /// src − dst
        Subtract = 1 => "subtract",
        /// dst − src
        ReverseSubtract = 2 => "reverse-subtract",
        /// min
        Min = 3 => "min",
        /// max
        Max = 4 => "max",
    }
);

/// One channel group's blend equation.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct BlendComponent {
    /// Factor applied to the source.
    pub src: BlendFactor,
    /// Factor applied to the destination.
    pub dst: BlendFactor,
    /// How they combine (default `add`).
    #[cfg_attr(feature = "serde", serde(default = "default_op"))]
    pub op: BlendOp,
}

#[cfg(feature = "serde")]
fn default_op() -> BlendOp {
    BlendOp::Add
}

/// Colour and alpha blend equations.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct BlendState {
    /// RGB channels.
    pub color: BlendComponent,
    /// Alpha channel.
    pub alpha: BlendComponent,
}

/// Blend setting of an attachment: off, or an equation.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "kebab-case"))]
pub enum Blend {
    /// Blending disabled (`"off"`).
    Off,
    /// Blending with the given equations.
    #[cfg_attr(feature = "serde", serde(untagged))]
    On(BlendState),
}

/// Which colour channels are written: a bit mask (r = 1, g = 2, b = 4, a = 8). In JSON a string
/// of the letters written, e.g. `"rgba"`, `"rgb"`, `""`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ColorWrites(pub u8);

impl ColorWrites {
    /// All four channels.
    pub const ALL: ColorWrites = ColorWrites(0xf);
}

/// A value fixed when the pipeline is harvested, or left unspecialized for run time (Metal's
/// `MTLPixelFormatUnspecialized`, `MTL4BlendStateUnspecialized`, …): the compiled pipeline then
/// works with any value, which is fixed later (a fragment-output library linked at run time).
/// In JSON, the string `"unspecialized"` or the value itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MaybeSpecialized<T> {
    /// Left open.
    Unspecialized,
    /// Fixed to this value.
    Is(T),
}

#[cfg(feature = "serde")]
fn unspecialized<T>() -> MaybeSpecialized<T> {
    MaybeSpecialized::Unspecialized
}

/// One colour attachment. Each of format, blend and write mask may be `"unspecialized"`, which
/// is also the default when a field is left out.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct ColorAttachment {
    /// Pixel format.
    #[cfg_attr(feature = "serde", serde(default = "unspecialized"))]
    pub format: MaybeSpecialized<TextureFormat>,
    /// Blend setting.
    #[cfg_attr(feature = "serde", serde(default = "unspecialized"))]
    pub blend: MaybeSpecialized<Blend>,
    /// Channel write mask.
    #[cfg_attr(feature = "serde", serde(default = "unspecialized"))]
    pub write_mask: MaybeSpecialized<ColorWrites>,
}

impl ColorAttachment {
    /// An attachment with everything unspecialized.
    pub fn unspecialized() -> Self {
        ColorAttachment {
            format: MaybeSpecialized::Unspecialized,
            blend: MaybeSpecialized::Unspecialized,
            write_mask: MaybeSpecialized::Unspecialized,
        }
    }

    /// Whether its format, blend or write mask is left unspecialized (then the pipeline needs
    /// a fragment-output library linked at run time, as for [`RenderState::is_unspecialized`]).
    pub fn is_unspecialized(&self) -> bool {
        matches!(self.format, MaybeSpecialized::Unspecialized)
            || matches!(self.blend, MaybeSpecialized::Unspecialized)
            || matches!(self.write_mask, MaybeSpecialized::Unspecialized)
    }
}

stored_enum!(
    /// Depth or stencil comparison.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum CompareFunction: u8 {
        /// never passes
        Never = 0 => "never",
        /// <
        Less = 1 => "less",
        /// ==
        Equal = 2 => "equal",
        /// <=
        LessEqual = 3 => "less-equal",
        /// >
        Greater = 4 => "greater",
        /// !=
        NotEqual = 5 => "not-equal",
        /// >=
        GreaterEqual = 6 => "greater-equal",
        /// always passes
        Always = 7 => "always",
    }
);
stored_enum!(
    /// Stencil operation.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum StencilOp: u8 {
        /// keep
        Keep = 0 => "keep",
        /// set to 0
        Zero = 1 => "zero",
        /// set to reference
        Replace = 2 => "replace",
        /// bitwise invert
        Invert = 3 => "invert",
        /// increment, clamp
        IncrementClamp = 4 => "increment-clamp",
        /// decrement, clamp
        DecrementClamp = 5 => "decrement-clamp",
        /// increment, wrap
        IncrementWrap = 6 => "increment-wrap",
        /// decrement, wrap
        DecrementWrap = 7 => "decrement-wrap",
    }
);

/// Stencil test for one face.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct StencilFace {
    /// Comparison against the reference.
    pub compare: CompareFunction,
    /// On stencil failure.
    #[cfg_attr(feature = "serde", serde(default = "keep"))]
    pub fail_op: StencilOp,
    /// On depth failure.
    #[cfg_attr(feature = "serde", serde(default = "keep"))]
    pub depth_fail_op: StencilOp,
    /// On pass.
    #[cfg_attr(feature = "serde", serde(default = "keep"))]
    pub pass_op: StencilOp,
}

#[cfg(feature = "serde")]
fn keep() -> StencilOp {
    StencilOp::Keep
}

/// Stencil state.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct StencilState {
    /// Front faces.
    pub front: StencilFace,
    /// Back faces.
    pub back: StencilFace,
    /// Bits read.
    #[cfg_attr(feature = "serde", serde(default = "full_mask"))]
    pub read_mask: u32,
    /// Bits written.
    #[cfg_attr(feature = "serde", serde(default = "full_mask"))]
    pub write_mask: u32,
}

#[cfg(feature = "serde")]
fn full_mask() -> u32 {
    0xff
}

/// Depth and stencil attachment state.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct DepthStencilState {
    /// A depth and/or stencil format.
    pub format: TextureFormat,
    /// Whether depth is written.
    #[cfg_attr(feature = "serde", serde(default))]
    pub depth_write: bool,
    /// Depth test (default `always`).
    #[cfg_attr(feature = "serde", serde(default = "always"))]
    pub depth_compare: CompareFunction,
    /// Stencil test, if any.
    #[cfg_attr(feature = "serde", serde(default))]
    pub stencil: Option<StencilState>,
    /// Constant depth bias.
    #[cfg_attr(feature = "serde", serde(default))]
    pub depth_bias: i32,
    /// Slope-scaled depth bias.
    #[cfg_attr(feature = "serde", serde(default))]
    pub depth_bias_slope_scale: f32,
    /// Maximum depth bias.
    #[cfg_attr(feature = "serde", serde(default))]
    pub depth_bias_clamp: f32,
}

#[cfg(feature = "serde")]
fn always() -> CompareFunction {
    CompareFunction::Always
}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::{ColorWrites, MaybeSpecialized};
    use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::marker::PhantomData;

    impl Serialize for ColorWrites {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut out = String::new();
            for (bit, c) in [(1, 'r'), (2, 'g'), (4, 'b'), (8, 'a')] {
                if self.0 & bit != 0 {
                    out.push(c);
                }
            }
            s.serialize_str(&out)
        }
    }

    impl<'de> Deserialize<'de> for ColorWrites {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let s = String::deserialize(d)?;
            let mut mask = 0u8;
            for c in s.chars() {
                let bit = match c {
                    'r' => 1,
                    'g' => 2,
                    'b' => 4,
                    'a' => 8,
                    _ => {
                        return Err(de::Error::custom(format!(
                            "write mask {s:?}: expected letters from \"rgba\" or \"unspecialized\""
                        )))
                    }
                };
                if mask & bit != 0 {
                    return Err(de::Error::custom(format!("write mask {s:?} repeats '{c}'")));
                }
                mask |= bit;
            }
            Ok(ColorWrites(mask))
        }
    }

    impl<T: Serialize> Serialize for MaybeSpecialized<T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                MaybeSpecialized::Unspecialized => s.serialize_str("unspecialized"),
                MaybeSpecialized::Is(v) => v.serialize(s),
            }
        }
    }

    /// `"unspecialized"`, or the value: strings other than `"unspecialized"`, numbers,
    /// booleans and objects are handed to `T` unchanged, so its own error messages reach the
    /// user.
    impl<'de, T: Deserialize<'de>> Deserialize<'de> for MaybeSpecialized<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct SpecVisitor<T>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for SpecVisitor<T> {
                type Value = MaybeSpecialized<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("\"unspecialized\" or a value")
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<MaybeSpecialized<T>, E> {
                    if s == "unspecialized" {
                        return Ok(MaybeSpecialized::Unspecialized);
                    }
                    T::deserialize(s.into_deserializer()).map(MaybeSpecialized::Is)
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaybeSpecialized<T>, E> {
                    T::deserialize(v.into_deserializer()).map(MaybeSpecialized::Is)
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaybeSpecialized<T>, E> {
                    T::deserialize(v.into_deserializer()).map(MaybeSpecialized::Is)
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<MaybeSpecialized<T>, E> {
                    T::deserialize(v.into_deserializer()).map(MaybeSpecialized::Is)
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<MaybeSpecialized<T>, E> {
                    T::deserialize(v.into_deserializer()).map(MaybeSpecialized::Is)
                }
                fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<MaybeSpecialized<T>, A::Error> {
                    T::deserialize(de::value::MapAccessDeserializer::new(m)).map(MaybeSpecialized::Is)
                }
            }
            d.deserialize_any(SpecVisitor(PhantomData))
        }
    }
}

/// The whole fixed-function state of a render pipeline: what, with the stage functions and the
/// resource layout, creates the driver pipeline again. The archive stores it per render
/// pipeline as a content-addressed blob ([`RenderState::encode`], docs/FORMAT.md §1.11), so
/// pipelines with equal state share one copy, and a run-time loader reads it back with
/// [`PipelineRef::state`](crate::PipelineRef::state).
///
/// Thread safety: plain data (`Send + Sync`).
#[derive(Clone, Debug, PartialEq)]
pub struct RenderState {
    /// Vertex buffer layouts, by buffer slot.
    pub vertex_buffers: Vec<VertexBufferLayout>,
    /// Primitive and rasterizer state.
    pub primitive: PrimitiveState,
    /// Colour attachments, by index.
    pub color_attachments: Vec<ColorAttachment>,
    /// Depth/stencil state.
    pub depth_stencil: Option<DepthStencilState>,
    /// Samples per pixel (1 = no MSAA).
    pub sample_count: u32,
    /// Alpha-to-coverage.
    pub alpha_to_coverage: bool,
}

impl RenderState {
    /// Whether any colour attachment leaves its format, blend or write mask unspecialized (the
    /// pipeline is then built as a library whose fragment-output part is linked at run time).
    pub fn is_unspecialized(&self) -> bool {
        self.color_attachments.iter().any(ColorAttachment::is_unspecialized)
    }
}
