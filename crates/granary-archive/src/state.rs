//! Fixed-function pipeline state: vertex layouts, primitive, colour attachments, depth/stencil,
//! and [`RenderState`], the whole fixed-function state of a render pipeline as the archive
//! stores it (docs/FORMAT.md §1.11), so a run-time loader can create the pipeline again.
//!
//! These types are plain data. With the `serde` feature they also (de)serialize with the
//! pipelines script's JSON spelling (docs/FORMAT.md §2); the offline crate adds their canonical
//! encoding for keys.

/// Declares a fieldless enum with stable discriminants, kebab-case JSON names, and an encoding
/// that stores the discriminant.
macro_rules! stable_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $n:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "kebab-case"))]
        #[repr(u8)]
        pub enum $name { $($(#[$vm])* $variant = $n),+ }
        impl $name {
            /// Every value, in discriminant order (the archive's state encoding, docs/FORMAT.md
            /// §1.11, stores the discriminant).
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The value with discriminant `n`, if any.
            pub fn from_u8(n: u8) -> Option<$name> {
                $name::ALL.get(usize::from(n)).copied().filter(|v| *v as u8 == n)
            }
        }
    };
}

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

stable_enum!(
    /// Format of one vertex attribute.
    VertexFormat {
        /// 1 × f32
        Float32 = 0, /// 2 × f32
        Float32x2 = 1, /// 3 × f32
        Float32x3 = 2, /// 4 × f32
        Float32x4 = 3, /// 1 × u32
        Uint32 = 4, /// 2 × u32
        Uint32x2 = 5, /// 3 × u32
        Uint32x3 = 6, /// 4 × u32
        Uint32x4 = 7, /// 1 × i32
        Sint32 = 8, /// 2 × i32
        Sint32x2 = 9, /// 3 × i32
        Sint32x3 = 10, /// 4 × i32
        Sint32x4 = 11, /// 2 × f16
        Float16x2 = 12, /// 4 × f16
        Float16x4 = 13, /// 4 × u8 normalized to [0, 1]
        Unorm8x4 = 14, /// 4 × i8 normalized to [-1, 1]
        Snorm8x4 = 15, /// 4 × u8
        Uint8x4 = 16, /// 4 × u16 normalized
        Unorm16x4 = 17, /// 2 × u16 normalized
        Unorm16x2 = 18, /// 4 × u16
        Uint16x4 = 19, /// 2 × i16 normalized
        Snorm16x2 = 20, /// 4 × i16 normalized
        Snorm16x4 = 21,
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

stable_enum!(
    /// Whether a vertex buffer advances per vertex or per instance.
    StepMode { /// Per vertex.
        Vertex = 0, /// Per instance.
        Instance = 1 }
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

stable_enum!(
    /// Primitive topology.
    Topology { /// Points.
        PointList = 0, /// Separate lines.
        LineList = 1, /// Connected lines.
        LineStrip = 2, /// Separate triangles.
        TriangleList = 3, /// Connected triangles.
        TriangleStrip = 4 }
);
stable_enum!(
    /// Which faces are culled.
    CullMode { /// Nothing culled.
        None = 0, /// Front faces culled.
        Front = 1, /// Back faces culled.
        Back = 2 }
);
stable_enum!(
    /// Winding order of front faces.
    FrontFace { /// Counter-clockwise.
        Ccw = 0, /// Clockwise.
        Cw = 1 }
);
stable_enum!(
    /// Index format for strip topologies.
    IndexFormat { /// 16-bit indices.
        Uint16 = 0, /// 32-bit indices.
        Uint32 = 1 }
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

stable_enum!(
    /// Texture formats usable as colour or depth/stencil attachments.
    TextureFormat {
        /// 8-bit unorm red.
        R8unorm = 0, /// 8-bit unorm red-green.
        Rg8unorm = 1, /// 8-bit unorm RGBA.
        Rgba8unorm = 2, /// 8-bit unorm RGBA, sRGB.
        Rgba8unormSrgb = 3, /// 8-bit unorm BGRA.
        Bgra8unorm = 4, /// 8-bit unorm BGRA, sRGB.
        Bgra8unormSrgb = 5, /// 10-10-10-2 unorm.
        Rgb10a2unorm = 6, /// 11-11-10 float.
        Rg11b10ufloat = 7, /// 16-bit float red.
        R16float = 8, /// 16-bit float red-green.
        Rg16float = 9, /// 16-bit float RGBA.
        Rgba16float = 10, /// 32-bit float red.
        R32float = 11, /// 32-bit float red-green.
        Rg32float = 12, /// 32-bit float RGBA.
        Rgba32float = 13, /// 32-bit uint red.
        R32uint = 14, /// 32-bit uint red-green.
        Rg32uint = 15, /// 32-bit uint RGBA.
        Rgba32uint = 16, /// 32-bit sint red.
        R32sint = 17, /// 32-bit sint RGBA.
        Rgba32sint = 18, /// 16-bit uint RGBA.
        Rgba16uint = 19, /// 8-bit uint RGBA.
        Rgba8uint = 20, /// 16-bit unorm depth.
        Depth16unorm = 21, /// 24-bit (or better) depth.
        Depth24plus = 22, /// 24-bit depth, 8-bit stencil.
        Depth24plusStencil8 = 23, /// 32-bit float depth.
        Depth32float = 24, /// 32-bit float depth, 8-bit stencil.
        Depth32floatStencil8 = 25, /// 8-bit stencil.
        Stencil8 = 26,
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

stable_enum!(
    /// Blend factor.
    BlendFactor {
        /// 0
        Zero = 0, /// 1
        One = 1, /// source colour
        Src = 2, /// 1 − source colour
        OneMinusSrc = 3, /// source alpha
        SrcAlpha = 4, /// 1 − source alpha
        OneMinusSrcAlpha = 5, /// destination colour
        Dst = 6, /// 1 − destination colour
        OneMinusDst = 7, /// destination alpha
        DstAlpha = 8, /// 1 − destination alpha
        OneMinusDstAlpha = 9, /// saturated source alpha
        SrcAlphaSaturated = 10, /// blend constant
        Constant = 11, /// 1 − blend constant
        OneMinusConstant = 12,
    }
);
stable_enum!(
    /// Blend operation.
    BlendOp { /// src + dst
        Add = 0, /// src − dst
        Subtract = 1, /// dst − src
        ReverseSubtract = 2, /// min
        Min = 3, /// max
        Max = 4 }
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

/// A value that may be left unspecialized (Metal's `MTLPixelFormatUnspecialized`,
/// `MTL4BlendStateUnspecialized`, …): the compiled pipeline then works with any value, which
/// is fixed later. In JSON, the string `"unspecialized"` or the value itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spec<T> {
    /// Left open.
    Unspecialized,
    /// Fixed to this value.
    Is(T),
}

#[cfg(feature = "serde")]
fn unspecialized<T>() -> Spec<T> {
    Spec::Unspecialized
}

/// One colour attachment. Each of format, blend and write mask may be `"unspecialized"`, which
/// is also the default when a field is left out.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(deny_unknown_fields))]
pub struct ColorAttachment {
    /// Pixel format.
    #[cfg_attr(feature = "serde", serde(default = "unspecialized"))]
    pub format: Spec<TextureFormat>,
    /// Blend setting.
    #[cfg_attr(feature = "serde", serde(default = "unspecialized"))]
    pub blend: Spec<Blend>,
    /// Channel write mask.
    #[cfg_attr(feature = "serde", serde(default = "unspecialized"))]
    pub write_mask: Spec<ColorWrites>,
}

impl ColorAttachment {
    /// An attachment with everything unspecialized.
    pub fn unspecialized() -> Self {
        ColorAttachment { format: Spec::Unspecialized, blend: Spec::Unspecialized, write_mask: Spec::Unspecialized }
    }

    /// Whether its format, blend or write mask is left unspecialized.
    pub fn is_unspecialized(&self) -> bool {
        matches!(self.format, Spec::Unspecialized)
            || matches!(self.blend, Spec::Unspecialized)
            || matches!(self.write_mask, Spec::Unspecialized)
    }
}

stable_enum!(
    /// Depth or stencil comparison.
    CompareFunction {
        /// never passes
        Never = 0, /// <
        Less = 1, /// ==
        Equal = 2, /// <=
        LessEqual = 3, /// >
        Greater = 4, /// !=
        NotEqual = 5, /// >=
        GreaterEqual = 6, /// always passes
        Always = 7 }
);
stable_enum!(
    /// Stencil operation.
    StencilOp {
        /// keep
        Keep = 0, /// set to 0
        Zero = 1, /// set to reference
        Replace = 2, /// bitwise invert
        Invert = 3, /// increment, clamp
        IncrementClamp = 4, /// decrement, clamp
        DecrementClamp = 5, /// increment, wrap
        IncrementWrap = 6, /// decrement, wrap
        DecrementWrap = 7 }
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
    use super::{ColorWrites, Spec};
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

    impl<T: Serialize> Serialize for Spec<T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Spec::Unspecialized => s.serialize_str("unspecialized"),
                Spec::Is(v) => v.serialize(s),
            }
        }
    }

    /// `"unspecialized"`, or the value: strings other than `"unspecialized"`, numbers,
    /// booleans and objects are handed to `T` unchanged, so its own error messages reach the
    /// user.
    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spec<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct SpecVisitor<T>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for SpecVisitor<T> {
                type Value = Spec<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("\"unspecialized\" or a value")
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Spec<T>, E> {
                    if s == "unspecialized" {
                        return Ok(Spec::Unspecialized);
                    }
                    T::deserialize(s.into_deserializer()).map(Spec::Is)
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Spec<T>, E> {
                    T::deserialize(v.into_deserializer()).map(Spec::Is)
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Spec<T>, E> {
                    T::deserialize(v.into_deserializer()).map(Spec::Is)
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Spec<T>, E> {
                    T::deserialize(v.into_deserializer()).map(Spec::Is)
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<Spec<T>, E> {
                    T::deserialize(v.into_deserializer()).map(Spec::Is)
                }
                fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Spec<T>, A::Error> {
                    T::deserialize(de::value::MapAccessDeserializer::new(m)).map(Spec::Is)
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

/// A state blob that does not decode: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateError {
    /// Byte offset within the state blob.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "render state, byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for StateError {}

/// Magic of an encoded [`RenderState`].
pub const STATE_MAGIC: [u8; 4] = *b"GST1";
/// Most vertex buffers a state may have (Vulkan's `maxVertexInputBindings` minimum is 16).
pub const MAX_VERTEX_BUFFERS: usize = 32;
/// Most attributes one vertex buffer may have.
pub const MAX_VERTEX_ATTRIBUTES: usize = 64;
/// Most colour attachments a state may have.
pub const MAX_COLOR_ATTACHMENTS: usize = 16;
const UNSPEC: u8 = 0xFF;

fn float_bits(v: f32) -> u32 {
    if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits()
    }
}

impl RenderState {
    /// Whether any colour attachment leaves its format, blend or write mask unspecialized (the
    /// pipeline is then built as a library whose fragment-output part is linked at run time).
    pub fn is_unspecialized(&self) -> bool {
        self.color_attachments.iter().any(ColorAttachment::is_unspecialized)
    }

    /// The canonical bytes (docs/FORMAT.md §1.11): a pure function of the state, attributes in
    /// (location, offset) order and every NaN folded, so equal states share one blob. A state
    /// beyond the limits ([`MAX_VERTEX_BUFFERS`], [`MAX_VERTEX_ATTRIBUTES`],
    /// [`MAX_COLOR_ATTACHMENTS`]) is refused by name.
    pub fn encode(&self) -> Result<Vec<u8>, StateError> {
        let limit = |what: &str, n: usize, max: usize| {
            if n > max {
                Err(StateError { offset: 0, message: format!("{n} {what} (at most {max})") })
            } else {
                Ok(n as u8)
            }
        };
        let nb = limit("vertex buffers", self.vertex_buffers.len(), MAX_VERTEX_BUFFERS)?;
        let nc = limit("colour attachments", self.color_attachments.len(), MAX_COLOR_ATTACHMENTS)?;
        let mut o = Vec::with_capacity(64);
        o.extend_from_slice(&STATE_MAGIC);
        o.extend_from_slice(&self.sample_count.to_le_bytes());
        let ds = self.depth_stencil.as_ref();
        let flags = u8::from(self.alpha_to_coverage)
            | u8::from(ds.is_some()) << 1
            | u8::from(ds.is_some_and(|d| d.stencil.is_some())) << 2;
        let p = &self.primitive;
        o.extend_from_slice(&[
            flags,
            p.topology as u8,
            p.strip_index_format.map_or(UNSPEC, |f| f as u8),
            p.front_face as u8,
            p.cull as u8,
            nb,
            nc,
            0,
        ]);
        for (i, b) in self.vertex_buffers.iter().enumerate() {
            let na = limit(&format!("attributes in vertex buffer {i}"), b.attributes.len(), MAX_VERTEX_ATTRIBUTES)?;
            o.extend_from_slice(&b.stride.to_le_bytes());
            o.extend_from_slice(&[b.step as u8, na, 0, 0, 0, 0, 0, 0]);
            let mut attrs: Vec<&VertexAttribute> = b.attributes.iter().collect();
            attrs.sort_by_key(|a| (a.location, a.offset));
            for a in attrs {
                o.extend_from_slice(&a.location.to_le_bytes());
                o.extend_from_slice(&[a.format as u8, 0, 0, 0]);
                o.extend_from_slice(&a.offset.to_le_bytes());
            }
        }
        for c in &self.color_attachments {
            let format = match c.format {
                Spec::Is(f) => f as u8,
                Spec::Unspecialized => UNSPEC,
            };
            let (blend, eq) = match c.blend {
                Spec::Unspecialized => (UNSPEC, [0; 6]),
                Spec::Is(Blend::Off) => (0, [0; 6]),
                Spec::Is(Blend::On(b)) => (
                    1,
                    [
                        b.color.src as u8,
                        b.color.dst as u8,
                        b.color.op as u8,
                        b.alpha.src as u8,
                        b.alpha.dst as u8,
                        b.alpha.op as u8,
                    ],
                ),
            };
            let mask = match c.write_mask {
                Spec::Is(m) => m.0 & 0xf,
                Spec::Unspecialized => UNSPEC,
            };
            o.extend_from_slice(&[format, blend, mask, 0]);
            o.extend_from_slice(&eq);
            o.extend_from_slice(&[0; 6]);
        }
        if let Some(d) = ds {
            o.extend_from_slice(&[d.format as u8, u8::from(d.depth_write), d.depth_compare as u8, 0]);
            o.extend_from_slice(&d.depth_bias.to_le_bytes());
            o.extend_from_slice(&float_bits(d.depth_bias_slope_scale).to_le_bytes());
            o.extend_from_slice(&float_bits(d.depth_bias_clamp).to_le_bytes());
            if let Some(s) = &d.stencil {
                for f in [s.front, s.back] {
                    o.extend_from_slice(&[f.compare as u8, f.fail_op as u8, f.depth_fail_op as u8, f.pass_op as u8]);
                }
                o.extend_from_slice(&s.read_mask.to_le_bytes());
                o.extend_from_slice(&s.write_mask.to_le_bytes());
            }
        }
        Ok(o)
    }

    /// Parses bytes written by [`encode`](Self::encode); refuses anything else (wrong magic,
    /// unknown values, non-zero padding, counts over the limits, trailing bytes).
    pub fn decode(b: &[u8]) -> Result<RenderState, StateError> {
        let mut r = StateReader { b, at: 0 };
        if r.take(4)? != STATE_MAGIC {
            return Err(r.err(0, "bad magic"));
        }
        let sample_count = r.u32()?;
        let [flags, topology, strip, front, cull, nb, nc, pad] = r.array()?;
        if flags & !0b111 != 0 || pad != 0 || (flags & 0b100 != 0 && flags & 0b010 == 0) {
            return Err(r.err(8, "bad flags or padding"));
        }
        if usize::from(nb) > MAX_VERTEX_BUFFERS || usize::from(nc) > MAX_COLOR_ATTACHMENTS {
            return Err(r.err(13, "too many vertex buffers or colour attachments"));
        }
        let primitive = PrimitiveState {
            topology: r.value(9, topology, Topology::from_u8)?,
            strip_index_format: if strip == UNSPEC { None } else { Some(r.value(10, strip, IndexFormat::from_u8)?) },
            front_face: r.value(11, front, FrontFace::from_u8)?,
            cull: r.value(12, cull, CullMode::from_u8)?,
        };
        let mut vertex_buffers = Vec::with_capacity(usize::from(nb));
        for _ in 0..nb {
            let at = r.at;
            let stride = r.u64()?;
            let [step, na, z @ ..] = r.array::<8>()?;
            if z != [0; 6] || usize::from(na) > MAX_VERTEX_ATTRIBUTES {
                return Err(r.err(at + 9, "bad attribute count or padding"));
            }
            let step = r.value(at + 8, step, StepMode::from_u8)?;
            let mut attributes = Vec::with_capacity(usize::from(na));
            for _ in 0..na {
                let at = r.at;
                let location = r.u32()?;
                let [format, z @ ..] = r.array::<4>()?;
                if z != [0; 3] {
                    return Err(r.err(at + 5, "padding is not zero"));
                }
                let format = r.value(at + 4, format, VertexFormat::from_u8)?;
                let offset = r.u64()?;
                if attributes.last().is_some_and(|p: &VertexAttribute| (p.location, p.offset) > (location, offset)) {
                    return Err(r.err(at, "attributes are not sorted"));
                }
                attributes.push(VertexAttribute { location, format, offset });
            }
            vertex_buffers.push(VertexBufferLayout { stride, step, attributes });
        }
        let mut color_attachments = Vec::with_capacity(usize::from(nc));
        for _ in 0..nc {
            let at = r.at;
            let [format, blend, mask, z0, cs, cd, co, as_, ad, ao, z @ ..] = r.array::<16>()?;
            if z0 != 0 || z != [0; 6] || (blend != 1 && [cs, cd, co, as_, ad, ao] != [0; 6]) {
                return Err(r.err(at + 3, "padding is not zero"));
            }
            let format = if format == UNSPEC {
                Spec::Unspecialized
            } else {
                Spec::Is(r.value(at, format, TextureFormat::from_u8)?)
            };
            let component = |r: &StateReader<'_>, o: usize, s: u8, d: u8, op: u8| {
                Ok::<_, StateError>(BlendComponent {
                    src: r.value(at + o, s, BlendFactor::from_u8)?,
                    dst: r.value(at + o + 1, d, BlendFactor::from_u8)?,
                    op: r.value(at + o + 2, op, BlendOp::from_u8)?,
                })
            };
            let blend = match blend {
                UNSPEC => Spec::Unspecialized,
                0 => Spec::Is(Blend::Off),
                1 => Spec::Is(Blend::On(BlendState {
                    color: component(&r, 4, cs, cd, co)?,
                    alpha: component(&r, 7, as_, ad, ao)?,
                })),
                _ => return Err(r.err(at + 1, "unknown blend setting")),
            };
            let write_mask = match mask {
                UNSPEC => Spec::Unspecialized,
                m if m <= 0xf => Spec::Is(ColorWrites(m)),
                _ => return Err(r.err(at + 2, "bad write mask")),
            };
            color_attachments.push(ColorAttachment { format, blend, write_mask });
        }
        let depth_stencil = if flags & 0b010 != 0 {
            let at = r.at;
            let [format, write, compare, z] = r.array()?;
            if write > 1 || z != 0 {
                return Err(r.err(at + 1, "bad depth-write flag or padding"));
            }
            let format = r.value(at, format, TextureFormat::from_u8)?;
            let depth_compare = r.value(at + 2, compare, CompareFunction::from_u8)?;
            let depth_bias = r.u32()? as i32;
            let depth_bias_slope_scale = f32::from_bits(r.u32()?);
            let depth_bias_clamp = f32::from_bits(r.u32()?);
            let stencil = if flags & 0b100 != 0 {
                let at = r.at;
                let faces: [u8; 8] = r.array()?;
                let face = |i: usize| {
                    Ok::<_, StateError>(StencilFace {
                        compare: r.value(at + i, faces[i], CompareFunction::from_u8)?,
                        fail_op: r.value(at + i + 1, faces[i + 1], StencilOp::from_u8)?,
                        depth_fail_op: r.value(at + i + 2, faces[i + 2], StencilOp::from_u8)?,
                        pass_op: r.value(at + i + 3, faces[i + 3], StencilOp::from_u8)?,
                    })
                };
                let (front, back) = (face(0)?, face(4)?);
                Some(StencilState { front, back, read_mask: r.u32()?, write_mask: r.u32()? })
            } else {
                None
            };
            Some(DepthStencilState {
                format,
                depth_write: write == 1,
                depth_compare,
                stencil,
                depth_bias,
                depth_bias_slope_scale,
                depth_bias_clamp,
            })
        } else {
            None
        };
        if r.at != b.len() {
            return Err(r.err(r.at, "trailing bytes"));
        }
        Ok(RenderState {
            vertex_buffers,
            primitive,
            color_attachments,
            depth_stencil,
            sample_count,
            alpha_to_coverage: flags & 1 != 0,
        })
    }
}

/// A bounds-checked cursor over a state blob.
struct StateReader<'a> {
    b: &'a [u8],
    at: usize,
}

impl StateReader<'_> {
    fn err(&self, offset: usize, m: &str) -> StateError {
        StateError { offset, message: m.to_string() }
    }
    fn take(&mut self, n: usize) -> Result<&[u8], StateError> {
        let end =
            self.at.checked_add(n).filter(|e| *e <= self.b.len()).ok_or_else(|| self.err(self.at, "cut short"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], StateError> {
        let at = self.at;
        self.take(N)?.try_into().map_err(|_| self.err(at, "cut short"))
    }
    fn u32(&mut self) -> Result<u32, StateError> {
        self.array().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, StateError> {
        self.array().map(u64::from_le_bytes)
    }
    fn value<T>(&self, at: usize, v: u8, f: impl Fn(u8) -> Option<T>) -> Result<T, StateError> {
        f(v).ok_or_else(|| self.err(at, &format!("unknown value {v}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rich() -> RenderState {
        let face = StencilFace {
            compare: CompareFunction::NotEqual,
            fail_op: StencilOp::Zero,
            depth_fail_op: StencilOp::IncrementWrap,
            pass_op: StencilOp::Replace,
        };
        RenderState {
            vertex_buffers: vec![
                VertexBufferLayout {
                    stride: 32,
                    step: StepMode::Vertex,
                    attributes: vec![
                        VertexAttribute { location: 2, format: VertexFormat::Unorm8x4, offset: 28 },
                        VertexAttribute { location: 0, format: VertexFormat::Float32x3, offset: 0 },
                    ],
                },
                VertexBufferLayout { stride: 64, step: StepMode::Instance, attributes: vec![] },
            ],
            primitive: PrimitiveState {
                topology: Topology::TriangleStrip,
                strip_index_format: Some(IndexFormat::Uint32),
                front_face: FrontFace::Cw,
                cull: CullMode::Back,
            },
            color_attachments: vec![
                ColorAttachment::unspecialized(),
                ColorAttachment {
                    format: Spec::Is(TextureFormat::Rgba16float),
                    blend: Spec::Is(Blend::On(BlendState {
                        color: BlendComponent {
                            src: BlendFactor::SrcAlpha,
                            dst: BlendFactor::OneMinusSrcAlpha,
                            op: BlendOp::Add,
                        },
                        alpha: BlendComponent { src: BlendFactor::One, dst: BlendFactor::Zero, op: BlendOp::Max },
                    })),
                    write_mask: Spec::Is(ColorWrites(0b0111)),
                },
                ColorAttachment {
                    format: Spec::Is(TextureFormat::R32uint),
                    blend: Spec::Is(Blend::Off),
                    write_mask: Spec::Unspecialized,
                },
            ],
            depth_stencil: Some(DepthStencilState {
                format: TextureFormat::Depth24plusStencil8,
                depth_write: true,
                depth_compare: CompareFunction::GreaterEqual,
                stencil: Some(StencilState { front: face, back: face, read_mask: 0x0f, write_mask: 0xf0 }),
                depth_bias: -3,
                depth_bias_slope_scale: 1.5,
                depth_bias_clamp: 0.25,
            }),
            sample_count: 4,
            alpha_to_coverage: true,
        }
    }

    #[test]
    fn a_state_round_trips_with_attributes_in_canonical_order() {
        let s = rich();
        let bytes = s.encode().unwrap();
        let back = RenderState::decode(&bytes).unwrap();
        let mut sorted = s.clone();
        sorted.vertex_buffers[0].attributes.sort_by_key(|a| (a.location, a.offset));
        assert_eq!(back, sorted);
        assert_eq!(back.encode().unwrap(), bytes, "encode ∘ decode is the identity on bytes");
        assert!(back.is_unspecialized());
        let plain = RenderState { color_attachments: vec![], depth_stencil: None, ..s };
        assert_eq!(RenderState::decode(&plain.encode().unwrap()).unwrap().depth_stencil, None);
    }

    #[test]
    fn every_truncation_and_every_trailing_byte_is_refused() {
        let bytes = rich().encode().unwrap();
        for cut in 0..bytes.len() {
            assert!(RenderState::decode(&bytes[..cut]).is_err(), "cut at {cut} accepted");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(RenderState::decode(&long).unwrap_err().message, "trailing bytes");
    }

    #[test]
    fn unknown_values_and_padding_are_refused_and_no_byte_flip_panics() {
        let bytes = rich().encode().unwrap();
        let mut bad = bytes.clone();
        bad[9] = 200; // topology
        assert!(RenderState::decode(&bad).unwrap_err().message.contains("unknown value 200"));
        let mut bad = bytes.clone();
        bad[15] = 1; // padding
        assert!(RenderState::decode(&bad).is_err());
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                let _ = RenderState::decode(&b); // an error or another valid state, never a panic
            }
        }
    }

    #[test]
    fn over_the_limits_is_refused_by_name() {
        let s = RenderState {
            color_attachments: vec![ColorAttachment::unspecialized(); MAX_COLOR_ATTACHMENTS + 1],
            ..rich()
        };
        assert!(s.encode().unwrap_err().message.contains("colour attachments"));
    }

    #[test]
    fn discriminants_round_trip() {
        for f in TextureFormat::ALL {
            assert_eq!(TextureFormat::from_u8(*f as u8), Some(*f));
        }
        assert_eq!(TextureFormat::from_u8(TextureFormat::ALL.len() as u8), None);
        assert_eq!(VertexFormat::from_u8(255), None);
    }
}
