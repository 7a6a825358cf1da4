// Instanced meshes (vegetation, rocks, debris): buffer 0 steps per vertex (position, normal,
// uv, tangent); buffer 1 steps per instance and carries the model matrix as four columns
// (@location(5..8)) and a tint (@location(9), usually unorm8x4).
//
// Entry points
//   vs_main      full varyings for the colour passes
//   vs_depth     clip position only
//   vs_depth_uv  clip position + uv (alpha-tested casters)
//
// Specialization
//   NON_UNIFORM_SCALE   build a proper normal matrix (cofactors) instead of reusing the model's
//   USE_INSTANCE_TINT   multiply the tint into the vertex colour
//   @id(2) FADE_DISTANCE  > 0 fades instances out (colour alpha) towards that distance
//   DEPTH_PANCAKE       clamps depth to the near plane (directional shadows)

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

@group(0) @binding(0) var<uniform> view: View;

override NON_UNIFORM_SCALE: bool = false;
override USE_INSTANCE_TINT: bool = true;
@id(2) override FADE_DISTANCE: f32 = 0.0;
override DEPTH_PANCAKE: bool = false;

struct VertexInput {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) tangent: vec4<f32>,
};

struct InstanceInput {
    @location(5) model_0: vec4<f32>,
    @location(6) model_1: vec4<f32>,
    @location(7) model_2: vec4<f32>,
    @location(8) model_3: vec4<f32>,
    @location(9) tint: vec4<f32>,
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

fn instance_model(i: InstanceInput) -> mat4x4<f32> {
    return mat4x4<f32>(i.model_0, i.model_1, i.model_2, i.model_3);
}

fn normal_matrix(m: mat3x3<f32>) -> mat3x3<f32> {
    if NON_UNIFORM_SCALE {
        // Cofactor matrix: the inverse transpose up to a scale that normalize() removes.
        return mat3x3<f32>(cross(m[1], m[2]), cross(m[2], m[0]), cross(m[0], m[1]));
    }
    return m;
}

fn to_clip(world: vec3<f32>) -> vec4<f32> {
    var clip = view.view_proj * vec4<f32>(world, 1.0);
    if DEPTH_PANCAKE {
        clip.z = max(clip.z, 0.0);
    }
    return clip;
}

@vertex
fn vs_main(in: VertexInput, instance: InstanceInput) -> VertexOutput {
    let model = instance_model(instance);
    let m3 = mat3x3<f32>(model[0].xyz, model[1].xyz, model[2].xyz);
    let world = (model * vec4<f32>(in.position, 1.0)).xyz;
    var out: VertexOutput;
    out.clip_position = to_clip(world);
    out.world_position = world;
    out.world_normal = normalize(normal_matrix(m3) * in.normal);
    out.world_tangent = vec4<f32>(normalize(m3 * in.tangent.xyz), in.tangent.w);
    out.uv = in.uv;
    var color = vec4<f32>(1.0);
    if USE_INSTANCE_TINT {
        color = instance.tint;
    }
    if FADE_DISTANCE > 0.0 {
        let d = distance(view.camera_position, model[3].xyz);
        color.a = color.a * (1.0 - smoothstep(FADE_DISTANCE * 0.8, FADE_DISTANCE, d));
    }
    out.color = color;
    return out;
}

@vertex
fn vs_depth(@location(0) position: vec3<f32>, instance: InstanceInput) -> @builtin(position) vec4<f32> {
    let model = instance_model(instance);
    return to_clip((model * vec4<f32>(position, 1.0)).xyz);
}

@vertex
fn vs_depth_uv(@location(0) position: vec3<f32>, @location(2) uv: vec2<f32>, instance: InstanceInput) -> DepthUvOutput {
    let model = instance_model(instance);
    var out: DepthUvOutput;
    out.clip_position = to_clip((model * vec4<f32>(position, 1.0)).xyz);
    out.uv = uv;
    return out;
}
