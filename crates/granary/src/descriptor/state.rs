//! Fixed-function pipeline state. The types are defined in `granary-archive` (the archive
//! stores them, docs/FORMAT.md §1.11, and the run-time loader reads them) and re-exported
//! here; this module adds their canonical encoding for keys (docs/FORMAT.md §1.5).

use super::key::{Canonical, Encoder};
pub use granary_archive::state::{
    Blend, BlendComponent, BlendFactor, BlendOp, BlendState, ColorAttachment, ColorWrites, CompareFunction, CullMode,
    DepthStencilState, FrontFace, IndexFormat, PrimitiveState, RenderState, ScalarKind, Spec, StencilFace, StencilOp,
    StencilState, StepMode, TextureFormat, Topology, VertexAttribute, VertexBufferLayout, VertexFormat,
};

/// Fieldless enums encode their stable discriminant.
macro_rules! canonical_discriminant {
    ($($t:ty),+) => { $(impl Canonical for $t { fn encode(&self, e: &mut Encoder) { e.u8(*self as u8) } })+ };
}
canonical_discriminant!(
    VertexFormat,
    StepMode,
    Topology,
    CullMode,
    FrontFace,
    IndexFormat,
    TextureFormat,
    BlendFactor,
    BlendOp,
    CompareFunction,
    StencilOp
);

/// A render pipeline's state, in the order pipeline keys have always encoded it.
impl Canonical for RenderState {
    fn encode(&self, e: &mut Encoder) {
        self.vertex_buffers.encode(e);
        self.primitive.encode(e);
        self.color_attachments.encode(e);
        self.depth_stencil.encode(e);
        e.u32(self.sample_count);
        e.bool(self.alpha_to_coverage);
    }
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

impl Canonical for PrimitiveState {
    fn encode(&self, e: &mut Encoder) {
        self.topology.encode(e);
        self.strip_index_format.encode(e);
        self.front_face.encode(e);
        self.cull.encode(e);
    }
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

impl Canonical for ColorAttachment {
    fn encode(&self, e: &mut Encoder) {
        self.format.encode(e);
        self.blend.encode(e);
        self.write_mask.encode(e);
    }
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
