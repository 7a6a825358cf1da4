//! Fixed-function state and vertex buffer layouts of generated pipelines.

use super::catalog::VertexInputs;
use super::render_json::{DepthJson, PrimitiveJson};
use super::rng::Rng;
use granary::descriptor::{
    CompareFunction, CullMode, FrontFace, IndexFormat, StepMode, TextureFormat, Topology, VertexAttribute,
    VertexBufferLayout, VertexFormat,
};

const CULL: [(u32, CullMode); 3] = [(60, CullMode::Back), (30, CullMode::None), (10, CullMode::Front)];
const FRONT: [(u32, FrontFace); 2] = [(85, FrontFace::Ccw), (15, FrontFace::Cw)];
const TOPOLOGY: [(u32, Topology, Option<IndexFormat>); 3] = [
    (95, Topology::TriangleList, None),
    (3, Topology::TriangleStrip, None),
    (2, Topology::TriangleStrip, Some(IndexFormat::Uint32)),
];
const DEPTH: [(u32, TextureFormat); 4] = [
    (50, TextureFormat::Depth32float),
    (25, TextureFormat::Depth24plus),
    (15, TextureFormat::Depth24plusStencil8),
    (10, TextureFormat::Depth32floatStencil8),
];
const COMPARE: [(u32, CompareFunction); 6] = [
    (35, CompareFunction::Less),
    (25, CompareFunction::Greater),
    (20, CompareFunction::LessEqual),
    (10, CompareFunction::GreaterEqual),
    (7, CompareFunction::Equal),
    (3, CompareFunction::Always),
];
const SAMPLES: [(u32, u32); 3] = [(70, 1), (25, 4), (5, 2)];

fn pick<T: Copy, const N: usize>(rng: &mut Rng, table: &[(u32, T); N]) -> u8 {
    let w: Vec<u32> = table.iter().map(|x| x.0).collect();
    rng.weighted(&w) as u8
}

/// A pipeline's fixed-function state, as table indices (hashable, to keep keys distinct).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct State {
    topology: u8,
    cull: u8,
    front_face: u8,
    depth_format: u8,
    depth_write: bool,
    compare: u8,
    samples: u8,
    alpha_to_coverage: bool,
    /// Constant depth bias: 0, except where a vertex function ran out of other combinations.
    pub depth_bias: i32,
}

impl State {
    /// A random state, weighted towards the common cases.
    pub fn random(rng: &mut Rng) -> State {
        let topology = rng.weighted(&TOPOLOGY.map(|t| t.0)) as u8;
        let cull = pick(rng, &CULL);
        let front_face = pick(rng, &FRONT);
        let depth_format = pick(rng, &DEPTH);
        let depth_write = rng.chance(0.75);
        let compare = pick(rng, &COMPARE);
        let samples = pick(rng, &SAMPLES);
        let alpha_to_coverage = SAMPLES[samples as usize].1 > 1 && rng.chance(0.3);
        State {
            topology,
            cull,
            front_face,
            depth_format,
            depth_write,
            compare,
            samples,
            alpha_to_coverage,
            depth_bias: 0,
        }
    }

    /// Primitive state JSON.
    pub fn primitive(&self) -> PrimitiveJson {
        let (_, topology, strip_index_format) = TOPOLOGY[self.topology as usize];
        PrimitiveJson {
            topology,
            strip_index_format,
            cull: CULL[self.cull as usize].1,
            front_face: FRONT[self.front_face as usize].1,
        }
    }

    /// Depth state JSON.
    pub fn depth(&self) -> DepthJson {
        DepthJson {
            format: DEPTH[self.depth_format as usize].1,
            depth_write: self.depth_write,
            depth_compare: COMPARE[self.compare as usize].1,
            depth_bias: self.depth_bias,
            depth_bias_slope_scale: if self.depth_bias != 0 { 1.5 } else { 0.0 },
        }
    }

    /// Sample count.
    pub fn sample_count(&self) -> u32 {
        SAMPLES[self.samples as usize].1
    }

    /// Alpha to coverage.
    pub fn alpha_to_coverage(&self) -> bool {
        self.alpha_to_coverage
    }
}

/// One buffer of `stride` bytes stepping per `step`, with its attributes as (location,
/// format, offset).
fn buffer(stride: u64, step: StepMode, attributes: &[(u32, VertexFormat, u64)]) -> VertexBufferLayout {
    VertexBufferLayout {
        stride,
        step,
        attributes: attributes
            .iter()
            .map(|&(location, format, offset)| VertexAttribute { location, format, offset })
            .collect(),
    }
}

/// Vertex buffers feeding a vertex entry point's inputs: full-precision or packed mesh data,
/// plus a skinning stream or an instance-rate buffer. Float inputs get float (or normalized)
/// formats, `u32` inputs uint formats.
pub(crate) fn vertex_buffers(inputs: VertexInputs, rng: &mut Rng) -> Vec<VertexBufferLayout> {
    use StepMode::{Instance, Vertex};
    use VertexFormat::*;
    let mesh = if rng.chance(0.6) {
        buffer(48, Vertex, &[(0, Float32x3, 0), (1, Float32x3, 12), (2, Float32x2, 24), (3, Float32x4, 32)])
    } else {
        buffer(24, Vertex, &[(0, Float32x3, 0), (1, Snorm8x4, 12), (3, Snorm8x4, 16), (2, Float16x2, 20)])
    };
    let mut out = vec![mesh];
    match inputs {
        VertexInputs::Skinned => {
            let (joints, joint_bytes) = if rng.chance(0.7) { (Uint8x4, 4) } else { (Uint16x4, 8) };
            let (weights, weight_bytes) = match rng.below(3) {
                0 => (Unorm8x4, 4),
                1 => (Unorm16x4, 8),
                _ => (Float32x4, 16),
            };
            out.push(buffer(joint_bytes + weight_bytes, Vertex, &[(4, joints, 0), (5, weights, joint_bytes)]));
        }
        VertexInputs::Instanced => out.push(buffer(
            72,
            Instance,
            &[
                (6, Float32x4, 0),
                (7, Float32x4, 16),
                (8, Float32x4, 32),
                (9, Float32x4, 48),
                (10, Unorm8x4, 64),
                (11, Uint32, 68),
            ],
        )),
        VertexInputs::Mesh | VertexInputs::None => {}
    }
    out
}
