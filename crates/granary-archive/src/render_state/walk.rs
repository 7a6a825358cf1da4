//! The one walk over a [`RenderState`]'s fields. Two byte encodings of a render state exist and
//! both are frozen: the archive's state blob (docs/FORMAT.md §1.11, [`RenderState::encode`])
//! and the pipeline key's canonical encoding (docs/FORMAT.md §1.5, in the offline crate). They
//! visit the same fields with the same canonicalization, so that lives here once:
//! [`RenderState::walk`] destructures every struct exhaustively (a field added to a state type
//! does not compile until the walk hands it on), sorts each buffer's attributes by
//! `(location, offset)`, folds every NaN to one quiet NaN, and hands the values to a
//! [`StateSink`] in one order — the key's order, which is the state's declaration order.
//!
//! Why the two sinks still differ (and must: pinned keys and pinned archive bytes are frozen):
//! - **Layout.** The archive blob is fixed-width and self-checking: a 16-byte header first
//!   (magic, sample count, presence flags, primitive, both counts) so a reader checks the
//!   counts against the limits before reading any record; records padded to 4/8 bytes; "no
//!   value" is the sentinel `0xFF`. The key encoding is a hash input: lengths as `u64` where
//!   they occur, options as a `0`/`1` tag, no padding, no magic.
//! - **Order.** The archive places sample count and alpha-to-coverage in the header, and a
//!   depth/stencil record's stencil after the depth bias (fixed-size depth part first); the
//!   key writes them in the walk's order. The archive sink therefore fills its header and
//!   holds the stencil bytes back; the key sink writes as it is told.
//! - **Limits.** Only the archive refuses states over [`MAX_VERTEX_BUFFERS`],
//!   [`MAX_VERTEX_ATTRIBUTES`], [`MAX_COLOR_ATTACHMENTS`] (its counts are one byte); a key
//!   exists for any state.
//!
//! [`MAX_VERTEX_BUFFERS`]: super::codec::MAX_VERTEX_BUFFERS
//! [`MAX_VERTEX_ATTRIBUTES`]: super::codec::MAX_VERTEX_ATTRIBUTES
//! [`MAX_COLOR_ATTACHMENTS`]: super::codec::MAX_COLOR_ATTACHMENTS

use super::{
    Blend, BlendComponent, BlendState, ColorAttachment, ColorWrites, CompareFunction, CullMode, DepthStencilState,
    FrontFace, IndexFormat, MaybeSpecialized, PrimitiveState, RenderState, StencilFace, StencilState, StepMode,
    TextureFormat, Topology, VertexAttribute, VertexBufferLayout, VertexFormat,
};

/// Receives a [`RenderState`]'s fields from [`RenderState::walk`], in the walk's order (the
/// order of the methods below); a sink lays them out as its encoding needs.
pub trait StateSink {
    /// Why the sink refuses a state (`std::convert::Infallible` if it never does).
    type Error;
    /// First: how many vertex buffers follow.
    fn vertex_buffers(&mut self, count: usize) -> Result<(), Self::Error>;
    /// Vertex buffer `index` (its `attributes` attributes follow, sorted by location, offset).
    fn vertex_buffer(
        &mut self,
        index: usize,
        stride: u64,
        step: StepMode,
        attributes: usize,
    ) -> Result<(), Self::Error>;
    /// One attribute of the buffer announced last.
    fn vertex_attribute(&mut self, location: u32, format: VertexFormat, offset: u64) -> Result<(), Self::Error>;
    /// The primitive and rasterizer state.
    fn primitive(
        &mut self,
        topology: Topology,
        strip_index_format: Option<IndexFormat>,
        front_face: FrontFace,
        cull: CullMode,
    ) -> Result<(), Self::Error>;
    /// How many colour attachments follow.
    fn color_attachments(&mut self, count: usize) -> Result<(), Self::Error>;
    /// One colour attachment. A blend equation's values are in [`BlendState::numbers`] order.
    fn color_attachment(
        &mut self,
        format: MaybeSpecialized<TextureFormat>,
        blend: MaybeSpecialized<Blend>,
        write_mask: MaybeSpecialized<ColorWrites>,
    ) -> Result<(), Self::Error>;
    /// The depth/stencil state, if any: when `None`, none of the three depth calls follow.
    fn depth(&mut self, depth: Option<(TextureFormat, bool, CompareFunction)>) -> Result<(), Self::Error>;
    /// The stencil test of the depth/stencil state (only after `depth(Some(..))`): the eight
    /// face values (front compare, fail, depth-fail, pass, then back), then the read and write masks.
    fn stencil(&mut self, stencil: Option<([u8; 8], u32, u32)>) -> Result<(), Self::Error>;
    /// The depth bias of the depth/stencil state (only after `depth(Some(..))`): constant,
    /// then the slope scale's and the clamp's IEEE bits with every NaN folded.
    fn depth_bias(&mut self, constant: i32, slope_scale_bits: u32, clamp_bits: u32) -> Result<(), Self::Error>;
    /// Last: samples per pixel and alpha-to-coverage.
    fn multisample(&mut self, sample_count: u32, alpha_to_coverage: bool) -> Result<(), Self::Error>;
}

impl BlendState {
    /// The equation's six stored numbers: colour src, dst, op, then alpha src, dst, op (both
    /// encodings store them so).
    pub fn numbers(&self) -> [u8; 6] {
        let BlendState { color, alpha } = *self;
        let component = |c: BlendComponent| {
            let BlendComponent { src, dst, op } = c;
            [src as u8, dst as u8, op as u8]
        };
        let (c, a) = (component(color), component(alpha));
        [c[0], c[1], c[2], a[0], a[1], a[2]]
    }
}

/// A stencil test's eight face numbers: front compare, fail, depth-fail, pass, then back.
fn stencil_numbers(front: StencilFace, back: StencilFace) -> [u8; 8] {
    let face = |f: StencilFace| {
        let StencilFace { compare, fail_op, depth_fail_op, pass_op } = f;
        [compare as u8, fail_op as u8, depth_fail_op as u8, pass_op as u8]
    };
    let (f, b) = (face(front), face(back));
    [f[0], f[1], f[2], f[3], b[0], b[1], b[2], b[3]]
}

/// An `f32`'s IEEE bits with every NaN folded to the canonical quiet NaN, so equal states
/// encode equally.
pub(crate) fn float_bits(v: f32) -> u32 {
    if v.is_nan() {
        0x7fc0_0000
    } else {
        v.to_bits()
    }
}

impl RenderState {
    /// Hands every field to `sink`, in the walk's order (see [`StateSink`]); attributes sorted
    /// by (location, offset), NaNs folded. Both the archive's state encoding and the pipeline
    /// key's canonical encoding are sinks of this walk.
    pub fn walk<S: StateSink>(&self, sink: &mut S) -> Result<(), S::Error> {
        let RenderState {
            vertex_buffers,
            primitive,
            color_attachments,
            depth_stencil,
            sample_count,
            alpha_to_coverage,
        } = self;
        sink.vertex_buffers(vertex_buffers.len())?;
        for (index, b) in vertex_buffers.iter().enumerate() {
            let VertexBufferLayout { stride, step, attributes } = b;
            sink.vertex_buffer(index, *stride, *step, attributes.len())?;
            let mut sorted: Vec<&VertexAttribute> = attributes.iter().collect();
            sorted.sort_by_key(|a| (a.location, a.offset));
            for a in sorted {
                let VertexAttribute { location, format, offset } = *a;
                sink.vertex_attribute(location, format, offset)?;
            }
        }
        let PrimitiveState { topology, strip_index_format, front_face, cull } = *primitive;
        sink.primitive(topology, strip_index_format, front_face, cull)?;
        sink.color_attachments(color_attachments.len())?;
        for c in color_attachments {
            let ColorAttachment { format, blend, write_mask } = *c;
            sink.color_attachment(format, blend, write_mask)?;
        }
        match depth_stencil {
            None => sink.depth(None)?,
            Some(d) => {
                let DepthStencilState {
                    format,
                    depth_write,
                    depth_compare,
                    stencil,
                    depth_bias,
                    depth_bias_slope_scale,
                    depth_bias_clamp,
                } = *d;
                sink.depth(Some((format, depth_write, depth_compare)))?;
                sink.stencil(stencil.map(|StencilState { front, back, read_mask, write_mask }| {
                    (stencil_numbers(front, back), read_mask, write_mask)
                }))?;
                sink.depth_bias(depth_bias, float_bits(depth_bias_slope_scale), float_bits(depth_bias_clamp))?;
            }
        }
        sink.multisample(*sample_count, *alpha_to_coverage)
    }
}
