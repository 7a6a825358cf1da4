//! Fixed-function pipeline state: vertex layouts, primitive, colour attachments, depth/stencil.
//!
//! These types are plain data with serde support (their JSON spelling is the pipelines script's,
//! docs/FORMAT.md) and a canonical encoding for keys.

use super::key::{Canonical, Encoder};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a fieldless enum with stable discriminants, kebab-case JSON names, and an encoding
/// that writes the discriminant.
macro_rules! stable_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $n:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum $name { $($(#[$vm])* $variant = $n),+ }
        impl Canonical for $name {
            fn encode(&self, e: &mut Encoder) { e.u8(*self as u8) }
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VertexAttribute {
    /// The shader input location it feeds.
    pub location: u32,
    /// Its format in the buffer.
    pub format: VertexFormat,
    /// Byte offset within one element.
    #[serde(default)]
    pub offset: u64,
}

/// One vertex buffer's layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VertexBufferLayout {
    /// Bytes between consecutive elements.
    pub stride: u64,
    /// Per-vertex or per-instance stepping.
    #[serde(default = "default_step")]
    pub step: StepMode,
    /// Attributes; their order does not matter (the encoding sorts them by location).
    pub attributes: Vec<VertexAttribute>,
}

fn default_step() -> StepMode {
    StepMode::Vertex
}

impl Canonical for VertexBufferLayout {
    fn encode(&self, e: &mut Encoder) {
        e.u64(self.stride);
        self.step.encode(e);
        let mut attrs: Vec<&VertexAttribute> = self.attributes.iter().collect();
        attrs.sort_by_key(|a| (a.location, a.offset));
        e.u64(attrs.len() as u64);
        for a in attrs {
            e.u32(a.location);
            a.format.encode(e);
            e.u64(a.offset);
        }
    }
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimitiveState {
    /// Topology (default `triangle-list`).
    #[serde(default = "default_topology")]
    pub topology: Topology,
    /// Index format for strips with primitive restart.
    #[serde(default)]
    pub strip_index_format: Option<IndexFormat>,
    /// Front-face winding (default `ccw`).
    #[serde(default = "default_front_face")]
    pub front_face: FrontFace,
    /// Culling (default `none`).
    #[serde(default = "default_cull")]
    pub cull: CullMode,
}

fn default_topology() -> Topology {
    Topology::TriangleList
}
fn default_front_face() -> FrontFace {
    FrontFace::Ccw
}
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

impl Canonical for PrimitiveState {
    fn encode(&self, e: &mut Encoder) {
        self.topology.encode(e);
        self.strip_index_format.encode(e);
        self.front_face.encode(e);
        self.cull.encode(e);
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlendComponent {
    /// Factor applied to the source.
    pub src: BlendFactor,
    /// Factor applied to the destination.
    pub dst: BlendFactor,
    /// How they combine (default `add`).
    #[serde(default = "default_op")]
    pub op: BlendOp,
}

fn default_op() -> BlendOp {
    BlendOp::Add
}

/// Colour and alpha blend equations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlendState {
    /// RGB channels.
    pub color: BlendComponent,
    /// Alpha channel.
    pub alpha: BlendComponent,
}

impl Canonical for BlendState {
    fn encode(&self, e: &mut Encoder) {
        for c in [self.color, self.alpha] {
            c.src.encode(e);
            c.dst.encode(e);
            c.op.encode(e);
        }
    }
}

/// Blend setting of an attachment: off, or an equation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Blend {
    /// Blending disabled (`"off"`).
    Off,
    /// Blending with the given equations.
    #[serde(untagged)]
    On(BlendState),
}

impl Canonical for Blend {
    fn encode(&self, e: &mut Encoder) {
        match self {
            Blend::Off => e.u8(0),
            Blend::On(b) => {
                e.u8(1);
                b.encode(e)
            }
        }
    }
}

/// Which colour channels are written: a bit mask (r = 1, g = 2, b = 4, a = 8). In JSON a string
/// of the letters written, e.g. `"rgba"`, `"rgb"`, `""`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ColorWrites(pub u8);

impl ColorWrites {
    /// All four channels.
    pub const ALL: ColorWrites = ColorWrites(0xf);
}

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
                    return Err(serde::de::Error::custom(format!(
                        "write mask {s:?}: expected letters from \"rgba\" or \"unspecialized\""
                    )))
                }
            };
            if mask & bit != 0 {
                return Err(serde::de::Error::custom(format!("write mask {s:?} repeats '{c}'")));
            }
            mask |= bit;
        }
        Ok(ColorWrites(mask))
    }
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

impl<T: Canonical> Canonical for Spec<T> {
    fn encode(&self, e: &mut Encoder) {
        match self {
            Spec::Unspecialized => e.u8(0),
            Spec::Is(v) => {
                e.u8(1);
                v.encode(e)
            }
        }
    }
}

impl Canonical for ColorWrites {
    fn encode(&self, e: &mut Encoder) {
        e.u8(self.0)
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

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Spec<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        if v.as_str() == Some("unspecialized") {
            return Ok(Spec::Unspecialized);
        }
        T::deserialize(v).map(Spec::Is).map_err(serde::de::Error::custom)
    }
}

fn unspecialized<T>() -> Spec<T> {
    Spec::Unspecialized
}

/// One colour attachment. Each of format, blend and write mask may be `"unspecialized"`, which
/// is also the default when a field is left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColorAttachment {
    /// Pixel format.
    #[serde(default = "unspecialized")]
    pub format: Spec<TextureFormat>,
    /// Blend setting.
    #[serde(default = "unspecialized")]
    pub blend: Spec<Blend>,
    /// Channel write mask.
    #[serde(default = "unspecialized")]
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

impl Canonical for ColorAttachment {
    fn encode(&self, e: &mut Encoder) {
        self.format.encode(e);
        self.blend.encode(e);
        self.write_mask.encode(e);
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
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StencilFace {
    /// Comparison against the reference.
    pub compare: CompareFunction,
    /// On stencil failure.
    #[serde(default = "keep")]
    pub fail_op: StencilOp,
    /// On depth failure.
    #[serde(default = "keep")]
    pub depth_fail_op: StencilOp,
    /// On pass.
    #[serde(default = "keep")]
    pub pass_op: StencilOp,
}

fn keep() -> StencilOp {
    StencilOp::Keep
}

/// Stencil state.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StencilState {
    /// Front faces.
    pub front: StencilFace,
    /// Back faces.
    pub back: StencilFace,
    /// Bits read.
    #[serde(default = "full_mask")]
    pub read_mask: u32,
    /// Bits written.
    #[serde(default = "full_mask")]
    pub write_mask: u32,
}

fn full_mask() -> u32 {
    0xff
}

/// Depth and stencil attachment state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DepthStencilState {
    /// A depth and/or stencil format.
    pub format: TextureFormat,
    /// Whether depth is written.
    #[serde(default)]
    pub depth_write: bool,
    /// Depth test (default `always`).
    #[serde(default = "always")]
    pub depth_compare: CompareFunction,
    /// Stencil test, if any.
    #[serde(default)]
    pub stencil: Option<StencilState>,
    /// Constant depth bias.
    #[serde(default)]
    pub depth_bias: i32,
    /// Slope-scaled depth bias.
    #[serde(default)]
    pub depth_bias_slope_scale: f32,
    /// Maximum depth bias.
    #[serde(default)]
    pub depth_bias_clamp: f32,
}

fn always() -> CompareFunction {
    CompareFunction::Always
}

impl Canonical for DepthStencilState {
    fn encode(&self, e: &mut Encoder) {
        self.format.encode(e);
        e.bool(self.depth_write);
        self.depth_compare.encode(e);
        e.option(self.stencil.as_ref(), |e, s| {
            for f in [s.front, s.back] {
                f.compare.encode(e);
                f.fail_op.encode(e);
                f.depth_fail_op.encode(e);
                f.pass_op.encode(e);
            }
            e.u32(s.read_mask);
            e.u32(s.write_mask);
        });
        e.i32(self.depth_bias);
        e.f32(self.depth_bias_slope_scale);
        e.f32(self.depth_bias_clamp);
    }
}
