// Skinned meshes: linear blend skinning with up to four joints per vertex. Joint matrices live
// in a storage buffer shared by every skinned object of the frame; each object's palette starts
// at `object.joint_offset`.
//
// Entry points
//   vs_main      full varyings for the colour passes
//   vs_depth     clip position only
//   vs_depth_uv  clip position + uv (alpha-tested casters)
//
// Specialization
//   MAX_BONES              joints per palette; joint indices are clamped to it
//   @id(1) SKIN_INFLUENCES 1–4 joints actually blended (LODs use fewer)
//   NORMALIZE_WEIGHTS      renormalize the blended weights (for quantized unorm8 weights)
//   DEPTH_PANCAKE          clamps depth to the near plane (directional shadows)

struct View {
    view_proj: mat4x4<f32>,
    inverse_view_proj: mat4x4<f32>,
    view: mat4x4<f32>,
    camera_position: vec3<f32>,
    time: f32,
    viewport_size: vec2<f32>,
    near: f32,
    far: f32,
};

struct Object {
    model: mat4x4<f32>,
    normal_matrix: mat4x4<f32>,
    color: vec4<f32>,
    joint_offset: u32,
    flags: u32,
    lod_fade: f32,
    _pad: f32,
};

@group(0) @binding(0) var<uniform> view: View;
@group(1) @binding(0) var<uniform> object: Object;
@group(1) @binding(1) var<storage, read> joint_matrices: array<mat4x4<f32>>;

override MAX_BONES: u32 = 64u;
@id(1) override SKIN_INFLUENCES: u32 = 4u;
override NORMALIZE_WEIGHTS: bool = false;
override DEPTH_PANCAKE: bool = false;

struct SkinnedInput {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) tangent: vec4<f32>,
    @location(4) joints: vec4<u32>,
    @location(5) weights: vec4<f32>,
};

struct VertexOutput {
    @builtin(position) clip_position: vec4<f32>,
    @location(0) world_position: vec3<f32>,
    @location(1) world_normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) world_tangent: vec4<f32>,
    @location(4) color: vec4<f32>,
};

struct DepthUvOutput {
    @builtin(position) clip_position: vec4<f32>,
    @location(2) uv: vec2<f32>,
};

fn skin_matrix(joints: vec4<u32>, weights: vec4<f32>) -> mat4x4<f32> {
    let influences = clamp(SKIN_INFLUENCES, 1u, 4u);
    var total = 0.0;
    for (var i = 0u; i < influences; i++) {
        total += weights[i];
    }
    var scale = 1.0;
    if NORMALIZE_WEIGHTS && total > 0.0 {
        scale = 1.0 / total;
    }
    var skin = mat4x4<f32>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var i = 0u; i < influences; i++) {
        let joint = object.joint_offset + min(joints[i], MAX_BONES - 1u);
        skin += joint_matrices[joint] * (weights[i] * scale);
    }
    return object.model * skin;
}

fn to_clip(world: vec3<f32>) -> vec4<f32> {
    var clip = view.view_proj * vec4<f32>(world, 1.0);
    if DEPTH_PANCAKE {
        clip.z = max(clip.z, 0.0);
    }
    return clip;
}

@vertex
fn vs_main(in: SkinnedInput) -> VertexOutput {
    let m = skin_matrix(in.joints, in.weights);
    // Joint matrices are rigid plus uniform scale, so the upper 3×3 serves for normals.
    let m3 = mat3x3<f32>(m[0].xyz, m[1].xyz, m[2].xyz);
    let world = (m * vec4<f32>(in.position, 1.0)).xyz;
    var out: VertexOutput;
    out.clip_position = to_clip(world);
    out.world_position = world;
    out.world_normal = normalize(m3 * in.normal);
    out.world_tangent = vec4<f32>(normalize(m3 * in.tangent.xyz), in.tangent.w);
    out.uv = in.uv;
    out.color = object.color;
    return out;
}

@vertex
fn vs_depth(
    @location(0) position: vec3<f32>,
    @location(4) joints: vec4<u32>,
    @location(5) weights: vec4<f32>,
) -> @builtin(position) vec4<f32> {
    let m = skin_matrix(joints, weights);
    return to_clip((m * vec4<f32>(position, 1.0)).xyz);
}

@vertex
fn vs_depth_uv(
    @location(0) position: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(4) joints: vec4<u32>,
    @location(5) weights: vec4<f32>,
) -> DepthUvOutput {
    let m = skin_matrix(joints, weights);
    var out: DepthUvOutput;
    out.clip_position = to_clip((m * vec4<f32>(position, 1.0)).xyz);
    out.uv = uv;
    return out;
}
