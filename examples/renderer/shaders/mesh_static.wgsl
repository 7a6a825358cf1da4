// Static meshes: one interleaved vertex buffer (position, normal, uv, tangent[, colour]).
//
// Entry points
//   vs_main          full varyings for the colour passes (PBR, unlit, G-buffer)
//   vs_vertex_color  as vs_main, plus a per-vertex colour at @location(4)
//   vs_depth         clip position only (depth prepass, opaque shadow casters)
//   vs_depth_uv      clip position + uv (alpha-tested depth prepass and shadow casters)
//
// Specialization
//   @id(1) WIND_AMPLITUDE  > 0 turns on foliage sway (metres at unit height above the pivot)
//   WIND_FREQUENCY         sway speed in radians per second
//   DEPTH_PANCAKE          clamps depth to the near plane (directional shadow "pancaking")

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

@id(1) override WIND_AMPLITUDE: f32 = 0.0;
override WIND_FREQUENCY: f32 = 1.5;
override DEPTH_PANCAKE: bool = false;

struct VertexInput {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) tangent: vec4<f32>,
};

struct ColoredVertexInput {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) tangent: vec4<f32>,
    @location(4) color: vec4<f32>,
};

// The varyings every colour pass agrees on (same in every mesh library).
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

fn apply_wind(world: vec3<f32>, local_height: f32) -> vec3<f32> {
    if WIND_AMPLITUDE <= 0.0 {
        return world;
    }
    let phase = dot(world.xz, vec2<f32>(0.7, 0.3)) + view.time * WIND_FREQUENCY;
    let bend = WIND_AMPLITUDE * max(local_height, 0.0) * max(local_height, 0.0);
    return world + vec3<f32>(sin(phase), 0.0, cos(phase * 1.37)) * bend;
}

fn world_position(position: vec3<f32>) -> vec3<f32> {
    let world = (object.model * vec4<f32>(position, 1.0)).xyz;
    return apply_wind(world, position.y);
}

fn to_clip(world: vec3<f32>) -> vec4<f32> {
    var clip = view.view_proj * vec4<f32>(world, 1.0);
    if DEPTH_PANCAKE {
        clip.z = max(clip.z, 0.0);
    }
    return clip;
}

fn normal_to_world(n: vec3<f32>) -> vec3<f32> {
    let m = mat3x3<f32>(object.normal_matrix[0].xyz, object.normal_matrix[1].xyz, object.normal_matrix[2].xyz);
    return normalize(m * n);
}

fn shade_vertex(position: vec3<f32>, normal: vec3<f32>, uv: vec2<f32>, tangent: vec4<f32>) -> VertexOutput {
    var out: VertexOutput;
    let world = world_position(position);
    out.clip_position = to_clip(world);
    out.world_position = world;
    out.world_normal = normal_to_world(normal);
    let model3 = mat3x3<f32>(object.model[0].xyz, object.model[1].xyz, object.model[2].xyz);
    out.world_tangent = vec4<f32>(normalize(model3 * tangent.xyz), tangent.w);
    out.uv = uv;
    out.color = object.color;
    return out;
}

@vertex
fn vs_main(in: VertexInput) -> VertexOutput {
    return shade_vertex(in.position, in.normal, in.uv, in.tangent);
}

@vertex
fn vs_vertex_color(in: ColoredVertexInput) -> VertexOutput {
    var out = shade_vertex(in.position, in.normal, in.uv, in.tangent);
    out.color = out.color * in.color;
    return out;
}

@vertex
fn vs_depth(@location(0) position: vec3<f32>) -> @builtin(position) vec4<f32> {
    return to_clip(world_position(position));
}

@vertex
fn vs_depth_uv(@location(0) position: vec3<f32>, @location(2) uv: vec2<f32>) -> DepthUvOutput {
    var out: DepthUvOutput;
    out.clip_position = to_clip(world_position(position));
    out.uv = uv;
    return out;
}
