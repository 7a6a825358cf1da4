//! Render and compute pipeline descriptors, and their keys.

use super::function::FunctionDescriptor;
use super::key::KeyContext;
use super::key::{Canonical, Encoder, PipelineKey, StageKey};
use super::layout::ExplicitLayout;
use super::native::NativePipelineDescriptor;
use super::{PipelineKind, ShaderStage};
use granary_archive::RenderState;

/// The key of one stage function compiled for `stage` under `ctx`.
pub fn stage_key(function: &FunctionDescriptor, stage: ShaderStage, ctx: &KeyContext) -> StageKey {
    StageKey(stage_key_encoder(function, stage, ctx).finish())
}

/// The encoding [`stage_key`] hashes, for keys that append to it.
pub(super) fn stage_key_encoder(function: &FunctionDescriptor, stage: ShaderStage, ctx: &KeyContext) -> Encoder {
    let mut e = Encoder::new(b"stage");
    let (library, entry) = function.base();
    e.u128(library.hash().0);
    e.str(entry);
    e.u8(stage as u8);
    function.resolved_constants().encode(&mut e);
    e.u128(ctx.target_options);
    e
}

/// A render pipeline (Metal's `MTL4RenderPipelineDescriptor`, Vulkan's graphics pipeline
/// create info).
#[derive(Clone, Debug)]
pub struct RenderPipelineDescriptor {
    /// A name for lookup and messages; never part of the key.
    pub label: Option<String>,
    /// Vertex function.
    pub vertex: FunctionDescriptor,
    /// Fragment function; `None` for depth-only pipelines.
    pub fragment: Option<FunctionDescriptor>,
    /// The fixed-function state: vertex input, primitive, colour attachments, depth/stencil,
    /// samples and alpha-to-coverage — exactly what the archive stores per pipeline
    /// (docs/FORMAT.md §1.11).
    pub state: RenderState,
    /// The resource layout given explicitly (`None`: derived from the shaders).
    pub layout: Option<std::sync::Arc<ExplicitLayout>>,
}

/// A compute pipeline.
#[derive(Clone, Debug)]
pub struct ComputePipelineDescriptor {
    /// A name for lookup and messages; never part of the key.
    pub label: Option<String>,
    /// Compute function.
    pub compute: FunctionDescriptor,
    /// The resource layout given explicitly (`None`: derived from the shaders).
    pub layout: Option<std::sync::Arc<ExplicitLayout>>,
}

/// Either kind of pipeline.
#[derive(Clone, Debug)]
pub enum PipelineDescriptor {
    /// A render pipeline.
    Render(RenderPipelineDescriptor),
    /// A compute pipeline.
    Compute(ComputePipelineDescriptor),
    /// A pipeline in the native Vulkan form (any graphics stages, or compute).
    Native(NativePipelineDescriptor),
}

impl PipelineDescriptor {
    /// The label, if any.
    pub fn label(&self) -> Option<&str> {
        match self {
            PipelineDescriptor::Render(r) => r.label.as_deref(),
            PipelineDescriptor::Compute(c) => c.label.as_deref(),
            PipelineDescriptor::Native(n) => n.label.as_deref(),
        }
    }

    /// Render, compute or ray tracing.
    pub fn kind(&self) -> PipelineKind {
        match self {
            PipelineDescriptor::Render(_) => PipelineKind::Render,
            PipelineDescriptor::Compute(_) => PipelineKind::Compute,
            PipelineDescriptor::Native(n) => n.state.kind(),
        }
    }

    /// The explicit resource layout, if the pipeline has one.
    pub fn explicit_layout(&self) -> Option<&ExplicitLayout> {
        match self {
            PipelineDescriptor::Render(r) => r.layout.as_deref(),
            PipelineDescriptor::Compute(c) => c.layout.as_deref(),
            PipelineDescriptor::Native(_) => None,
        }
    }

    /// The stage functions with their stages, in pipeline order.
    pub fn stages(&self) -> Vec<(ShaderStage, &FunctionDescriptor)> {
        match self {
            PipelineDescriptor::Render(r) => {
                let mut v = vec![(ShaderStage::Vertex, &r.vertex)];
                if let Some(f) = &r.fragment {
                    v.push((ShaderStage::Fragment, f));
                }
                v
            }
            PipelineDescriptor::Compute(c) => vec![(ShaderStage::Compute, &c.compute)],
            PipelineDescriptor::Native(n) => n.stages.iter().map(|s| (s.stage, &s.function)).collect(),
        }
    }

    /// Whether a device backend builds this pipeline as a graphics pipeline library with the
    /// fragment-output part left for run time: a render pipeline whose fixed-function state
    /// leaves a colour attachment's format, blend or write mask unspecialized
    /// ([`RenderState::is_unspecialized`]). Compute pipelines never are.
    pub fn needs_libraries(&self) -> bool {
        match self {
            PipelineDescriptor::Render(r) => r.state.is_unspecialized(),
            PipelineDescriptor::Compute(_) | PipelineDescriptor::Native(_) => false,
        }
    }

    /// The pipeline key under `ctx`.
    pub fn key(&self, ctx: &KeyContext) -> PipelineKey {
        self.key_with_stage_keys(&self.stage_keys(ctx))
    }

    /// The stage keys under `ctx`, in [`Self::stages`] order (a native stage's key covers its
    /// specialization, [`super::native::native_stage_key`]).
    pub fn stage_keys(&self, ctx: &KeyContext) -> Vec<StageKey> {
        match self {
            PipelineDescriptor::Native(n) => n.stage_keys(ctx),
            _ => self.stages().iter().map(|(s, f)| stage_key(f, *s, ctx)).collect(),
        }
    }

    /// The pipeline key given already computed stage keys (in [`Self::stages`] order).
    pub fn key_with_stage_keys(&self, stage_keys: &[StageKey]) -> PipelineKey {
        if let PipelineDescriptor::Native(n) = self {
            return n.key_with_stage_keys(stage_keys);
        }
        let mut e = Encoder::new(b"pipeline");
        e.u8(self.kind() as u8);
        e.u64(stage_keys.len() as u64);
        for (k, (stage, _)) in stage_keys.iter().zip(self.stages()) {
            e.u8(stage as u8);
            e.u128(k.0);
        }
        if let PipelineDescriptor::Render(r) = self {
            Canonical::encode(&r.state, &mut e);
        }
        // Appended only when present, so keys of pipelines without an explicit layout are
        // unchanged (their derived layout is a function of the stage keys).
        if let Some(l) = self.explicit_layout() {
            e.u8(1);
            l.encode(&mut e);
        }
        PipelineKey(e.finish())
    }
}
