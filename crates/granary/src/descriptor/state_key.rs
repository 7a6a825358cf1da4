//! Fixed-function pipeline state. The types are defined in `granary-archive` (the archive
//! stores them, docs/FORMAT.md §1.11, and the run-time loader reads them) and re-exported
//! here; this module adds their canonical encoding for keys (docs/FORMAT.md §1.5): the key's
//! sink of the one field walk, [`RenderState::walk`] (whose documentation says why the key's
//! bytes and the archive's differ).

use super::key::{Canonical, Encoder};
use granary_archive::StateSink;
pub use granary_archive::{
    Blend, BlendComponent, BlendFactor, BlendOp, BlendState, ColorAttachment, ColorWrites, CompareFunction, CullMode,
    DepthStencilState, FrontFace, IndexFormat, MaybeSpecialized, PrimitiveState, RenderState, ScalarKind, StencilFace,
    StencilOp, StencilState, StepMode, TextureFormat, Topology, VertexAttribute, VertexBufferLayout, VertexFormat,
};
use std::convert::Infallible;

/// A render pipeline's state, in the order pipeline keys have always encoded it.
impl Canonical for RenderState {
    fn encode(&self, e: &mut Encoder) {
        match self.walk(&mut KeySink(e)) {
            Ok(()) => {}
            Err(never) => match never {},
        }
    }
}

/// The key's layout of the walk: fixed-width little-endian values in the walk's order, lists
/// as a `u64` length then the items, options and unspecialized values as a `0`/`1` tag then
/// the value, enums as their stored number.
struct KeySink<'a>(&'a mut Encoder);

impl KeySink<'_> {
    fn tag<T>(&mut self, v: MaybeSpecialized<T>, f: impl FnOnce(&mut Encoder, T)) {
        match v {
            MaybeSpecialized::Unspecialized => self.0.u8(0),
            MaybeSpecialized::Is(v) => {
                self.0.u8(1);
                f(self.0, v)
            }
        }
    }
}

impl StateSink for KeySink<'_> {
    type Error = Infallible;
    fn vertex_buffers(&mut self, count: usize) -> Result<(), Infallible> {
        self.0.u64(count as u64);
        Ok(())
    }
    fn vertex_buffer(
        &mut self,
        _index: usize,
        stride: u64,
        step: StepMode,
        attributes: usize,
    ) -> Result<(), Infallible> {
        self.0.u64(stride);
        self.0.u8(step as u8);
        self.0.u64(attributes as u64);
        Ok(())
    }
    fn vertex_attribute(&mut self, location: u32, format: VertexFormat, offset: u64) -> Result<(), Infallible> {
        self.0.u32(location);
        self.0.u8(format as u8);
        self.0.u64(offset);
        Ok(())
    }
    fn primitive(
        &mut self,
        topology: Topology,
        strip_index_format: Option<IndexFormat>,
        front_face: FrontFace,
        cull: CullMode,
    ) -> Result<(), Infallible> {
        self.0.u8(topology as u8);
        self.0.option(strip_index_format.as_ref(), |e, f| e.u8(*f as u8));
        self.0.u8(front_face as u8);
        self.0.u8(cull as u8);
        Ok(())
    }
    fn color_attachments(&mut self, count: usize) -> Result<(), Infallible> {
        self.0.u64(count as u64);
        Ok(())
    }
    fn color_attachment(
        &mut self,
        format: MaybeSpecialized<TextureFormat>,
        blend: MaybeSpecialized<Blend>,
        write_mask: MaybeSpecialized<ColorWrites>,
    ) -> Result<(), Infallible> {
        self.tag(format, |e, f| e.u8(f as u8));
        self.tag(blend, |e, b| match b {
            Blend::Off => e.u8(0),
            Blend::On(b) => {
                e.u8(1);
                b.numbers().into_iter().for_each(|n| e.u8(n));
            }
        });
        self.tag(write_mask, |e, m| e.u8(m.0));
        Ok(())
    }
    fn depth(&mut self, depth: Option<(TextureFormat, bool, CompareFunction)>) -> Result<(), Infallible> {
        self.0.option(depth.as_ref(), |e, (format, write, compare)| {
            e.u8(*format as u8);
            e.bool(*write);
            e.u8(*compare as u8);
        });
        Ok(())
    }
    fn stencil(&mut self, stencil: Option<([u8; 8], u32, u32)>) -> Result<(), Infallible> {
        self.0.option(stencil.as_ref(), |e, (faces, read_mask, write_mask)| {
            faces.iter().for_each(|n| e.u8(*n));
            e.u32(*read_mask);
            e.u32(*write_mask);
        });
        Ok(())
    }
    fn depth_bias(&mut self, constant: i32, slope_scale_bits: u32, clamp_bits: u32) -> Result<(), Infallible> {
        self.0.i32(constant);
        // The walk folded NaNs as `Encoder::f32` does, so these are the bytes `f32` wrote.
        self.0.u32(slope_scale_bits);
        self.0.u32(clamp_bits);
        Ok(())
    }
    fn multisample(&mut self, sample_count: u32, alpha_to_coverage: bool) -> Result<(), Infallible> {
        self.0.u32(sample_count);
        self.0.bool(alpha_to_coverage);
        Ok(())
    }
}
