// Metallic-roughness PBR (glTF 2.0 material model).
//
// Entry points
//   fs_main     forward shading: punctual lights, cascaded directional shadow, optional IBL
//   fs_gbuffer  deferred: writes albedo/normal/material/emissive to four colour attachments
//
// Both read the shared mesh varyings (@location(0..4)), so they pair with any mesh library's
// vs_main.
//
// Specialization
//   @id(0) ALPHA_CUTOFF          mask threshold
//   @id(1) ALPHA_MODE            0 opaque, 1 mask (alpha test), 2 blend (premultiplied output)
//   USE_NORMAL_MAP, USE_METALLIC_ROUGHNESS_MAP, USE_OCCLUSION_MAP, USE_EMISSIVE_MAP
//   USE_VERTEX_COLOR             multiply the interpolated colour into the base colour
//   DOUBLE_SIDED                 flip the normal on back faces
//   LIGHT_COUNT                  punctual lights evaluated (at most MAX_LIGHTS)
//   RECEIVE_SHADOWS, SHADOW_CASCADES, SHADOW_PCF_RADIUS
//   USE_IBL, ENV_MIP_COUNT       image-based ambient from prefiltered cube maps

const PI: f32 = 3.14159265359;
const MAX_LIGHTS: u32 = 16u;
const MAX_CASCADES: u32 = 4u;

const ALPHA_OPAQUE: u32 = 0u;
const ALPHA_MASK: u32 = 1u;
const ALPHA_BLEND: u32 = 2u;

const LIGHT_DIRECTIONAL: u32 = 0u;
const LIGHT_POINT: u32 = 1u;
const LIGHT_SPOT: u32 = 2u;

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

struct Light {
    position: vec3<f32>,
    range: f32,
    direction: vec3<f32>,
    kind: u32,
    color: vec3<f32>,
    intensity: f32,
    spot_scale: f32,
    spot_offset: f32,
    shadow_index: i32,
    _pad: f32,
};

struct Lights {
    items: array<Light, 16>,
    count: u32,
    ambient_intensity: f32,
    shadow_bias: f32,
    shadow_normal_bias: f32,
    ambient_color: vec4<f32>,
    cascade_splits: vec4<f32>,
    cascade_view_proj: array<mat4x4<f32>, 4>,
};

struct Material {
    base_color_factor: vec4<f32>,
    emissive_factor: vec3<f32>,
    metallic_factor: f32,
    roughness_factor: f32,
    normal_scale: f32,
    occlusion_strength: f32,
    emissive_strength: f32,
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> lights: Lights;
@group(0) @binding(2) var shadow_map: texture_depth_2d_array;
@group(0) @binding(3) var shadow_sampler: sampler_comparison;
@group(0) @binding(4) var env_specular: texture_cube<f32>;
@group(0) @binding(5) var env_irradiance: texture_cube<f32>;
@group(0) @binding(6) var env_brdf_lut: texture_2d<f32>;
@group(0) @binding(7) var env_sampler: sampler;

@group(2) @binding(0) var<uniform> material: Material;
@group(2) @binding(1) var base_color_texture: texture_2d<f32>;
@group(2) @binding(2) var base_color_sampler: sampler;
@group(2) @binding(3) var normal_texture: texture_2d<f32>;
@group(2) @binding(4) var metallic_roughness_texture: texture_2d<f32>;
@group(2) @binding(5) var occlusion_texture: texture_2d<f32>;
@group(2) @binding(6) var emissive_texture: texture_2d<f32>;
@group(2) @binding(7) var material_sampler: sampler;

@id(0) override ALPHA_CUTOFF: f32 = 0.5;
@id(1) override ALPHA_MODE: u32 = 0u;
override USE_NORMAL_MAP: bool = false;
override USE_METALLIC_ROUGHNESS_MAP: bool = true;
override USE_OCCLUSION_MAP: bool = false;
override USE_EMISSIVE_MAP: bool = false;
override USE_VERTEX_COLOR: bool = false;
override DOUBLE_SIDED: bool = false;
override LIGHT_COUNT: u32 = 4u;
override RECEIVE_SHADOWS: bool = true;
override SHADOW_CASCADES: u32 = 4u;
override SHADOW_PCF_RADIUS: i32 = 1;
override USE_IBL: bool = false;
override ENV_MIP_COUNT: f32 = 8.0;

struct FragmentInput {
    @builtin(position) frag_coord: vec4<f32>,
    @builtin(front_facing) front_facing: bool,
    @location(0) world_position: vec3<f32>,
    @location(1) world_normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) world_tangent: vec4<f32>,
    @location(4) color: vec4<f32>,
};

struct Surface {
    base_color: vec4<f32>,
    normal: vec3<f32>,
    metallic: f32,
    roughness: f32,
    occlusion: f32,
    emissive: vec3<f32>,
};

// Samples every texture the material uses. All implicit-derivative sampling happens here, in
// uniform control flow, before any fragment is discarded.
fn sample_surface(in: FragmentInput) -> Surface {
    var s: Surface;
    s.base_color = material.base_color_factor * textureSample(base_color_texture, base_color_sampler, in.uv);
    if USE_VERTEX_COLOR {
        s.base_color = s.base_color * in.color;
    }

    var n = normalize(in.world_normal);
    var t = in.world_tangent.xyz;
    if DOUBLE_SIDED && !in.front_facing {
        n = -n;
        t = -t;
    }
    if USE_NORMAL_MAP {
        let tn = textureSample(normal_texture, material_sampler, in.uv).xyz * 2.0 - vec3<f32>(1.0);
        let scaled = vec3<f32>(tn.xy * material.normal_scale, tn.z);
        let tangent = normalize(t - n * dot(n, t));
        let bitangent = cross(n, tangent) * in.world_tangent.w;
        n = normalize(mat3x3<f32>(tangent, bitangent, n) * scaled);
    }
    s.normal = n;

    s.metallic = material.metallic_factor;
    s.roughness = material.roughness_factor;
    if USE_METALLIC_ROUGHNESS_MAP {
        let mr = textureSample(metallic_roughness_texture, material_sampler, in.uv);
        s.metallic = s.metallic * mr.b;
        s.roughness = s.roughness * mr.g;
    }
    s.roughness = clamp(s.roughness, 0.045, 1.0);

    s.occlusion = 1.0;
    if USE_OCCLUSION_MAP {
        let ao = textureSample(occlusion_texture, material_sampler, in.uv).r;
        s.occlusion = mix(1.0, ao, material.occlusion_strength);
    }

    s.emissive = material.emissive_factor * material.emissive_strength;
    if USE_EMISSIVE_MAP {
        s.emissive = s.emissive * textureSample(emissive_texture, material_sampler, in.uv).rgb;
    }
    return s;
}

fn alpha_test(alpha: f32) {
    if ALPHA_MODE == ALPHA_MASK && alpha < ALPHA_CUTOFF {
        discard;
    }
}

fn d_ggx(n_dot_h: f32, roughness: f32) -> f32 {
    let a = roughness * roughness;
    let a2 = a * a;
    let d = n_dot_h * n_dot_h * (a2 - 1.0) + 1.0;
    return a2 / (PI * d * d);
}

fn v_smith_ggx_correlated(n_dot_v: f32, n_dot_l: f32, roughness: f32) -> f32 {
    let a2 = pow(roughness, 4.0);
    let gv = n_dot_l * sqrt(n_dot_v * n_dot_v * (1.0 - a2) + a2);
    let gl = n_dot_v * sqrt(n_dot_l * n_dot_l * (1.0 - a2) + a2);
    return 0.5 / max(gv + gl, 1e-5);
}

fn f_schlick(cos_theta: f32, f0: vec3<f32>) -> vec3<f32> {
    return f0 + (vec3<f32>(1.0) - f0) * pow(1.0 - cos_theta, 5.0);
}

fn range_attenuation(distance: f32, range: f32) -> f32 {
    if range <= 0.0 {
        return 1.0 / max(distance * distance, 1e-4);
    }
    let ratio = distance / range;
    let falloff = clamp(1.0 - ratio * ratio * ratio * ratio, 0.0, 1.0);
    return falloff * falloff / max(distance * distance, 1e-4);
}

fn cascade_shadow(world_position: vec3<f32>, normal: vec3<f32>, l: vec3<f32>) -> f32 {
    let cascades = clamp(SHADOW_CASCADES, 1u, MAX_CASCADES);
    let view_depth = -(view.view * vec4<f32>(world_position, 1.0)).z;
    var cascade = 0u;
    for (var c = 0u; c + 1u < cascades; c++) {
        if view_depth > lights.cascade_splits[c] {
            cascade = c + 1u;
        }
    }
    let offset = normal * lights.shadow_normal_bias * (1.0 - max(dot(normal, l), 0.0));
    let clip = lights.cascade_view_proj[cascade] * vec4<f32>(world_position + offset, 1.0);
    let ndc = clip.xyz / clip.w;
    let uv = ndc.xy * vec2<f32>(0.5, -0.5) + vec2<f32>(0.5);
    if any(uv < vec2<f32>(0.0)) || any(uv > vec2<f32>(1.0)) || ndc.z > 1.0 {
        return 1.0;
    }
    let texel = 1.0 / vec2<f32>(textureDimensions(shadow_map));
    let depth = ndc.z - lights.shadow_bias;
    var lit = 0.0;
    var taps = 0.0;
    for (var y = -SHADOW_PCF_RADIUS; y <= SHADOW_PCF_RADIUS; y++) {
        for (var x = -SHADOW_PCF_RADIUS; x <= SHADOW_PCF_RADIUS; x++) {
            let p = uv + vec2<f32>(f32(x), f32(y)) * texel;
            lit += textureSampleCompareLevel(shadow_map, shadow_sampler, p, i32(cascade), depth);
            taps += 1.0;
        }
    }
    return lit / taps;
}

fn punctual_light(light: Light, s: Surface, world_position: vec3<f32>, v: vec3<f32>, f0: vec3<f32>) -> vec3<f32> {
    var l: vec3<f32>;
    var attenuation = 1.0;
    if light.kind == LIGHT_DIRECTIONAL {
        l = -normalize(light.direction);
        if RECEIVE_SHADOWS && light.shadow_index >= 0 {
            attenuation = cascade_shadow(world_position, s.normal, l);
        }
    } else {
        let to_light = light.position - world_position;
        let distance = length(to_light);
        l = to_light / max(distance, 1e-4);
        attenuation = range_attenuation(distance, light.range);
        if light.kind == LIGHT_SPOT {
            let cd = dot(normalize(light.direction), -l);
            let spot = clamp(cd * light.spot_scale + light.spot_offset, 0.0, 1.0);
            attenuation = attenuation * spot * spot;
        }
    }
    let n_dot_l = max(dot(s.normal, l), 0.0);
    if n_dot_l <= 0.0 || attenuation <= 0.0 {
        return vec3<f32>(0.0);
    }
    let h = normalize(l + v);
    let n_dot_v = max(dot(s.normal, v), 1e-4);
    let n_dot_h = max(dot(s.normal, h), 0.0);
    let v_dot_h = max(dot(v, h), 0.0);
    let f = f_schlick(v_dot_h, f0);
    let specular = f * d_ggx(n_dot_h, s.roughness) * v_smith_ggx_correlated(n_dot_v, n_dot_l, s.roughness);
    let diffuse = (vec3<f32>(1.0) - f) * (1.0 - s.metallic) * s.base_color.rgb / PI;
    return (diffuse + specular) * light.color * light.intensity * attenuation * n_dot_l;
}

fn ambient(s: Surface, v: vec3<f32>, f0: vec3<f32>) -> vec3<f32> {
    let n_dot_v = max(dot(s.normal, v), 1e-4);
    if USE_IBL {
        let r = reflect(-v, s.normal);
        let lod = s.roughness * (ENV_MIP_COUNT - 1.0);
        let prefiltered = textureSampleLevel(env_specular, env_sampler, r, lod).rgb;
        let irradiance = textureSampleLevel(env_irradiance, env_sampler, s.normal, 0.0).rgb;
        let brdf = textureSampleLevel(env_brdf_lut, env_sampler, vec2<f32>(n_dot_v, s.roughness), 0.0).rg;
        let specular = prefiltered * (f0 * brdf.x + vec3<f32>(brdf.y));
        let diffuse = irradiance * s.base_color.rgb * (1.0 - s.metallic);
        return (diffuse + specular) * lights.ambient_intensity * s.occlusion;
    }
    // Hemispherical fallback.
    let sky = lights.ambient_color.rgb * (0.5 + 0.5 * s.normal.y);
    return sky * s.base_color.rgb * (1.0 - 0.5 * s.metallic) * lights.ambient_intensity * s.occlusion;
}

@fragment
fn fs_main(in: FragmentInput) -> @location(0) vec4<f32> {
    let s = sample_surface(in);
    alpha_test(s.base_color.a);

    let v = normalize(view.camera_position - in.world_position);
    let f0 = mix(vec3<f32>(0.04), s.base_color.rgb, s.metallic);
    var color = s.emissive + ambient(s, v, f0);
    let light_count = min(min(LIGHT_COUNT, MAX_LIGHTS), lights.count);
    for (var i = 0u; i < light_count; i++) {
        color += punctual_light(lights.items[i], s, in.world_position, v, f0);
    }

    if ALPHA_MODE == ALPHA_BLEND {
        return vec4<f32>(color * s.base_color.a, s.base_color.a);
    }
    return vec4<f32>(color, 1.0);
}

struct GBuffer {
    // rgb: base colour, a: specular occlusion
    @location(0) albedo: vec4<f32>,
    // xyz: world normal encoded to [0, 1], w: roughness
    @location(1) normal: vec4<f32>,
    // r: metallic, g: occlusion, b: material flags, a: unused
    @location(2) material: vec4<f32>,
    // rgb: emissive radiance (accumulated into the lighting buffer)
    @location(3) emissive: vec4<f32>,
};

@fragment
fn fs_gbuffer(in: FragmentInput) -> GBuffer {
    let s = sample_surface(in);
    alpha_test(s.base_color.a);
    var out: GBuffer;
    out.albedo = vec4<f32>(s.base_color.rgb, s.occlusion);
    out.normal = vec4<f32>(s.normal * 0.5 + vec3<f32>(0.5), s.roughness);
    var flags = 0.0;
    if DOUBLE_SIDED {
        flags = 1.0 / 255.0;
    }
    out.material = vec4<f32>(s.metallic, s.occlusion, flags, 0.0);
    out.emissive = vec4<f32>(s.emissive, 1.0);
    return out;
}
