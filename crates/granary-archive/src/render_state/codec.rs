//! The archive's byte encoding of a [`RenderState`] (docs/FORMAT.md §1.11): [`RenderState::encode`]
//! is the archive's sink of the one field walk ([`super::walk`]); [`RenderState::decode`] its
//! checked inverse, refusing anything `encode` does not write.

use super::walk::StateSink;
use super::{
    Blend, BlendComponent, BlendFactor, BlendOp, BlendState, ColorAttachment, ColorWrites, CompareFunction, CullMode,
    DepthStencilState, FrontFace, IndexFormat, MaybeSpecialized, PrimitiveState, RenderState, StencilFace, StencilOp,
    StencilState, StepMode, TextureFormat, Topology, VertexAttribute, VertexBufferLayout, VertexFormat,
};

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

/// The archive's layout of the walk (docs/FORMAT.md §1.11): a 16-byte header filled in as its
/// fields arrive, then the vertex buffers with their attributes, the colour attachments, and
/// the depth/stencil record with its stencil part held back until after the depth bias.
struct ArchiveSink {
    out: Vec<u8>,
    stencil: Option<[u8; 16]>,
}

/// Header offsets: flags, primitive (4 bytes), vertex-buffer count, colour-attachment count.
const FLAGS: usize = 8;
const PRIMITIVE: usize = 9;
const BUFFER_COUNT: usize = 13;
const COLOR_COUNT: usize = 14;

impl StateSink for ArchiveSink {
    type Error = StateError;
    fn vertex_buffers(&mut self, count: usize) -> Result<(), StateError> {
        self.out[BUFFER_COUNT] = limit("vertex buffers", count, MAX_VERTEX_BUFFERS)?;
        Ok(())
    }
    fn vertex_buffer(
        &mut self,
        index: usize,
        stride: u64,
        step: StepMode,
        attributes: usize,
    ) -> Result<(), StateError> {
        let na = limit(&format!("attributes in vertex buffer {index}"), attributes, MAX_VERTEX_ATTRIBUTES)?;
        self.out.extend_from_slice(&stride.to_le_bytes());
        self.out.extend_from_slice(&[step as u8, na, 0, 0, 0, 0, 0, 0]);
        Ok(())
    }
    fn vertex_attribute(&mut self, location: u32, format: VertexFormat, offset: u64) -> Result<(), StateError> {
        self.out.extend_from_slice(&location.to_le_bytes());
        self.out.extend_from_slice(&[format as u8, 0, 0, 0]);
        self.out.extend_from_slice(&offset.to_le_bytes());
        Ok(())
    }
    fn primitive(
        &mut self,
        topology: Topology,
        strip_index_format: Option<IndexFormat>,
        front_face: FrontFace,
        cull: CullMode,
    ) -> Result<(), StateError> {
        self.out[PRIMITIVE..PRIMITIVE + 4].copy_from_slice(&[
            topology as u8,
            strip_index_format.map_or(UNSPEC, |f| f as u8),
            front_face as u8,
            cull as u8,
        ]);
        Ok(())
    }
    fn color_attachments(&mut self, count: usize) -> Result<(), StateError> {
        self.out[COLOR_COUNT] = limit("colour attachments", count, MAX_COLOR_ATTACHMENTS)?;
        Ok(())
    }
    fn color_attachment(
        &mut self,
        format: MaybeSpecialized<TextureFormat>,
        blend: MaybeSpecialized<Blend>,
        write_mask: MaybeSpecialized<ColorWrites>,
    ) -> Result<(), StateError> {
        let format = match format {
            MaybeSpecialized::Is(f) => f as u8,
            MaybeSpecialized::Unspecialized => UNSPEC,
        };
        let (blend, eq) = match blend {
            MaybeSpecialized::Unspecialized => (UNSPEC, [0; 6]),
            MaybeSpecialized::Is(Blend::Off) => (0, [0; 6]),
            MaybeSpecialized::Is(Blend::On(b)) => (1, b.numbers()),
        };
        let mask = match write_mask {
            MaybeSpecialized::Is(m) => m.0 & 0xf,
            MaybeSpecialized::Unspecialized => UNSPEC,
        };
        self.out.extend_from_slice(&[format, blend, mask, 0]);
        self.out.extend_from_slice(&eq);
        self.out.extend_from_slice(&[0; 6]);
        Ok(())
    }
    fn depth(&mut self, depth: Option<(TextureFormat, bool, CompareFunction)>) -> Result<(), StateError> {
        if let Some((format, write, compare)) = depth {
            self.out[FLAGS] |= 0b010;
            self.out.extend_from_slice(&[format as u8, u8::from(write), compare as u8, 0]);
        }
        Ok(())
    }
    fn stencil(&mut self, stencil: Option<([u8; 8], u32, u32)>) -> Result<(), StateError> {
        if let Some((faces, read_mask, write_mask)) = stencil {
            self.out[FLAGS] |= 0b100;
            let mut held = [0; 16];
            held[..8].copy_from_slice(&faces);
            held[8..12].copy_from_slice(&read_mask.to_le_bytes());
            held[12..].copy_from_slice(&write_mask.to_le_bytes());
            self.stencil = Some(held);
        }
        Ok(())
    }
    fn depth_bias(&mut self, constant: i32, slope_scale_bits: u32, clamp_bits: u32) -> Result<(), StateError> {
        self.out.extend_from_slice(&constant.to_le_bytes());
        self.out.extend_from_slice(&slope_scale_bits.to_le_bytes());
        self.out.extend_from_slice(&clamp_bits.to_le_bytes());
        if let Some(held) = self.stencil.take() {
            self.out.extend_from_slice(&held);
        }
        Ok(())
    }
    fn multisample(&mut self, sample_count: u32, alpha_to_coverage: bool) -> Result<(), StateError> {
        self.out[4..8].copy_from_slice(&sample_count.to_le_bytes());
        self.out[FLAGS] |= u8::from(alpha_to_coverage);
        Ok(())
    }
}

/// `n` as a one-byte count, or the refusal naming `what` and the limit.
fn limit(what: &str, n: usize, max: usize) -> Result<u8, StateError> {
    match u8::try_from(n) {
        Ok(n) if usize::from(n) <= max => Ok(n),
        _ => Err(StateError { offset: 0, message: format!("{n} {what} (at most {max})") }),
    }
}

impl RenderState {
    /// The canonical bytes (docs/FORMAT.md §1.11): a pure function of the state, attributes in
    /// (location, offset) order and every NaN folded, so equal states share one blob (the
    /// archive's sink of [`RenderState::walk`]). A state beyond the limits
    /// (32 vertex buffers, 64 attributes per buffer, 16 colour attachments) is refused
    /// by name.
    pub fn encode(&self) -> Result<Vec<u8>, StateError> {
        // Both counts are checked before any buffer's attributes, as the header carries them.
        limit("vertex buffers", self.vertex_buffers.len(), MAX_VERTEX_BUFFERS)?;
        limit("colour attachments", self.color_attachments.len(), MAX_COLOR_ATTACHMENTS)?;
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&STATE_MAGIC);
        out.extend_from_slice(&[0; 12]);
        let mut sink = ArchiveSink { out, stencil: None };
        self.walk(&mut sink)?;
        Ok(sink.out)
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
                MaybeSpecialized::Unspecialized
            } else {
                MaybeSpecialized::Is(r.value(at, format, TextureFormat::from_u8)?)
            };
            let component = |r: &StateReader<'_>, o: usize, s: u8, d: u8, op: u8| {
                Ok::<_, StateError>(BlendComponent {
                    src: r.value(at + o, s, BlendFactor::from_u8)?,
                    dst: r.value(at + o + 1, d, BlendFactor::from_u8)?,
                    op: r.value(at + o + 2, op, BlendOp::from_u8)?,
                })
            };
            let blend = match blend {
                UNSPEC => MaybeSpecialized::Unspecialized,
                0 => MaybeSpecialized::Is(Blend::Off),
                1 => MaybeSpecialized::Is(Blend::On(BlendState {
                    color: component(&r, 4, cs, cd, co)?,
                    alpha: component(&r, 7, as_, ad, ao)?,
                })),
                _ => return Err(r.err(at + 1, "unknown blend setting")),
            };
            let write_mask = match mask {
                UNSPEC => MaybeSpecialized::Unspecialized,
                m if m <= 0xf => MaybeSpecialized::Is(ColorWrites(m)),
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
                    format: MaybeSpecialized::Is(TextureFormat::Rgba16float),
                    blend: MaybeSpecialized::Is(Blend::On(BlendState {
                        color: BlendComponent {
                            src: BlendFactor::SrcAlpha,
                            dst: BlendFactor::OneMinusSrcAlpha,
                            op: BlendOp::Add,
                        },
                        alpha: BlendComponent { src: BlendFactor::One, dst: BlendFactor::Zero, op: BlendOp::Max },
                    })),
                    write_mask: MaybeSpecialized::Is(ColorWrites(0b0111)),
                },
                ColorAttachment {
                    format: MaybeSpecialized::Is(TextureFormat::R32uint),
                    blend: MaybeSpecialized::Is(Blend::Off),
                    write_mask: MaybeSpecialized::Unspecialized,
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
            assert_eq!(TextureFormat::from_u8(f as u8), Some(f));
            assert_eq!(TextureFormat::from_name(f.name()), Some(f));
        }
        assert_eq!(TextureFormat::from_u8(TextureFormat::ALL.len() as u8), None);
        assert_eq!(VertexFormat::from_u8(255), None);
    }

    #[test]
    fn format_names_are_the_scripts_spelling() {
        assert_eq!(TextureFormat::Rgba8unormSrgb.name(), "rgba8unorm-srgb");
        assert_eq!(TextureFormat::Depth24plusStencil8.name(), "depth24plus-stencil8");
        assert_eq!(TextureFormat::Rg11b10ufloat.name(), "rg11b10ufloat");
        assert_eq!("depth32float-stencil8".parse(), Ok(TextureFormat::Depth32floatStencil8));
        assert!("depth24plusstencil8".parse::<TextureFormat>().is_err());
        assert_eq!(BlendFactor::OneMinusSrcAlpha.to_string(), "one-minus-src-alpha");
    }
}
