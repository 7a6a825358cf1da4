//! The stage functions the generator can name: entry points, the overrides each one is
//! specialized with, and how a variant number maps to constant values.
//!
//! Variant 0 of an entry point is the plain `{library, function}`; variant `k ≥ 1` is a
//! specialized descriptor giving every override the entry point reads. The discrete overrides
//! (bools, small u32 sets) take their values as the mixed-radix digits of `k − 1`, and the last
//! override, an `f32` with an `@id`, takes `default + step × (rest + 1)`, so every `k` gives a
//! distinct constant set and none equals the defaults: an entry point has unboundedly many
//! variants, each a distinct stage function.

/// A constant value in the script.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    /// `{"bool": ..}`
    Bool(bool),
    /// `{"u32": ..}`
    U32(u32),
    /// `{"f32": ..}`
    F32(f32),
}

/// Which override a constant sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Override {
    /// By name, for named constants.
    Name(&'static str),
    /// By `@id`, for numbered constants.
    Id(u16),
}

/// One constant of a specialized descriptor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Constant {
    /// The override it sets.
    pub which: Override,
    /// The value.
    pub value: Value,
}

/// The values a discrete override takes across variants.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Discrete {
    /// `false`, `true`.
    Bool,
    /// These `u32` values.
    U32(&'static [u32]),
}

impl Discrete {
    fn radix(self) -> usize {
        match self {
            Discrete::Bool => 2,
            Discrete::U32(v) => v.len().max(1),
        }
    }
    fn value(self, digit: usize) -> Value {
        match self {
            Discrete::Bool => Value::Bool(digit % 2 == 1),
            Discrete::U32(v) => Value::U32(v.get(digit).copied().unwrap_or(0)),
        }
    }
}

/// Which vertex buffers a vertex entry point reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VertexInputs {
    /// Not a vertex entry point.
    None,
    /// Position, normal, uv, tangent (locations 0–3).
    Mesh,
    /// Mesh plus joints (`vec4<u32>`, location 4) and weights (location 5).
    Skinned,
    /// Mesh plus a per-instance transform, colour and flags (locations 6–11).
    Instanced,
}

/// One entry point and its specialization knobs.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Entry-point name.
    pub function: &'static str,
    /// Vertex inputs (vertex entry points only).
    pub inputs: VertexInputs,
    /// Colour outputs `@location(0..outputs)` (fragment entry points only).
    pub outputs: usize,
    /// Discrete overrides, by name.
    pub discrete: &'static [(&'static str, Discrete)],
    /// The `f32` override set by `@id` (the id is per library).
    pub float_default: f32,
    /// Step between its specialized values.
    pub float_step: f32,
}

impl Entry {
    /// The constants of variant `k` (`k ≥ 1`; variant 0 is unspecialized), `float_id` being
    /// the library's `@id` for the entry's `f32` override.
    pub fn constants(&self, float_id: u16, k: usize) -> Vec<Constant> {
        let mut j = k.saturating_sub(1);
        let mut out = Vec::with_capacity(self.discrete.len() + 1);
        for &(name, d) in self.discrete {
            let r = d.radix();
            out.push(Constant { which: Override::Name(name), value: d.value(j % r) });
            j /= r;
        }
        // j + 1 ≤ 2^24 keeps every value exact and distinct; no workload comes near it.
        let v = self.float_default + self.float_step * (j as f32 + 1.0);
        out.push(Constant { which: Override::Id(float_id), value: Value::F32(v) });
        out
    }
}

const BONES: &[u32] = &[32, 64, 128, 256];
const MORPHS: &[u32] = &[1, 2, 4, 8];
const LIGHTS: &[u32] = &[1, 2, 4, 8];
const FEW_LIGHTS: &[u32] = &[1, 2, 4];
const LAYERS: &[u32] = &[2, 3, 4];

/// Static meshes.
pub(crate) const VS_STATIC: Entry = Entry {
    function: "vs_static",
    inputs: VertexInputs::Mesh,
    outputs: 0,
    discrete: &[("WIND", Discrete::Bool)],
    float_default: 1.0,
    float_step: 0.0625,
};
/// Linear-blend skinning, four joints per vertex.
pub(crate) const VS_SKINNED: Entry = Entry {
    function: "vs_skinned",
    inputs: VertexInputs::Skinned,
    outputs: 0,
    discrete: &[("BONE_COUNT", Discrete::U32(BONES)), ("NORMALIZE_WEIGHTS", Discrete::Bool)],
    float_default: 1.0,
    float_step: 0.0625,
};
/// Morph targets read from a storage buffer by vertex index.
pub(crate) const VS_MORPH: Entry = Entry {
    function: "vs_morph",
    inputs: VertexInputs::Mesh,
    outputs: 0,
    discrete: &[("MORPH_TARGETS", Discrete::U32(MORPHS)), ("WIND", Discrete::Bool)],
    float_default: 1.0,
    float_step: 0.0625,
};
/// Per-instance transforms from an instance-rate buffer.
pub(crate) const VS_INSTANCED: Entry = Entry {
    function: "vs_instanced",
    inputs: VertexInputs::Instanced,
    outputs: 0,
    discrete: &[("WIND", Discrete::Bool), ("INSTANCE_FADE", Discrete::Bool)],
    float_default: 1.0,
    float_step: 0.0625,
};

/// Forward PBR with a light loop.
pub(crate) const FS_FORWARD: Entry = Entry {
    function: "fs_forward",
    inputs: VertexInputs::None,
    outputs: 1,
    discrete: &[
        ("LIGHT_COUNT", Discrete::U32(LIGHTS)),
        ("USE_NORMAL_MAP", Discrete::Bool),
        ("USE_OCCLUSION_MAP", Discrete::Bool),
        ("USE_EMISSIVE_MAP", Discrete::Bool),
        ("RECEIVE_SHADOWS", Discrete::Bool),
    ],
    float_default: 0.0,
    float_step: 1.0 / 1024.0,
};
/// Deferred PBR: four G-buffer targets.
pub(crate) const FS_GBUFFER: Entry = Entry {
    function: "fs_gbuffer",
    inputs: VertexInputs::None,
    outputs: 4,
    discrete: &[
        ("USE_NORMAL_MAP", Discrete::Bool),
        ("USE_OCCLUSION_MAP", Discrete::Bool),
        ("USE_EMISSIVE_MAP", Discrete::Bool),
    ],
    float_default: 0.0,
    float_step: 1.0 / 1024.0,
};
/// Unlit with a detail texture and optional fog.
pub(crate) const FS_UNLIT: Entry = Entry {
    function: "fs_unlit",
    inputs: VertexInputs::None,
    outputs: 1,
    discrete: &[("USE_VERTEX_COLOR", Discrete::Bool), ("FOG", Discrete::Bool)],
    float_default: 1.0,
    float_step: 1.0 / 64.0,
};
/// Alpha-tested foliage with wrap lighting and translucency.
pub(crate) const FS_MASKED: Entry = Entry {
    function: "fs_masked",
    inputs: VertexInputs::None,
    outputs: 1,
    discrete: &[("LIGHT_COUNT", Discrete::U32(FEW_LIGHTS)), ("TRANSLUCENCY", Discrete::Bool)],
    float_default: 0.5,
    float_step: 1.0 / 1024.0,
};
/// Splat-mapped terrain: a loop over texture-array layers.
pub(crate) const FS_LAYERED: Entry = Entry {
    function: "fs_layered",
    inputs: VertexInputs::None,
    outputs: 1,
    discrete: &[("LAYER_COUNT", Discrete::U32(LAYERS)), ("LIGHT_COUNT", Discrete::U32(FEW_LIGHTS))],
    float_default: 4.0,
    float_step: 0.125,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_distinct_and_never_the_defaults() {
        for e in [&VS_STATIC, &VS_SKINNED, &FS_FORWARD, &FS_LAYERED] {
            let all: Vec<Vec<Constant>> = (1..200).map(|k| e.constants(7, k)).collect();
            for (a, ca) in all.iter().enumerate() {
                assert_ne!(ca.last().map(|c| c.value), Some(Value::F32(e.float_default)));
                for cb in &all[a + 1..] {
                    assert_ne!(ca, cb, "{}", e.function);
                }
            }
        }
    }
}
