//! Fragment libraries: forward and deferred PBR, unlit, alpha-tested foliage and layered
//! terrain, each with a per-library colour grade so that no two are byte-identical.

use super::catalog::{Entry, FS_FORWARD, FS_GBUFFER, FS_LAYERED, FS_MASKED, FS_UNLIT};
use super::rng::Rng;
use super::wgsl::{lit, near_identity_columns, vec3};

/// One generated fragment library.
pub(crate) struct FragmentLibrary {
    /// Short kind name, used in file names.
    pub kind: &'static str,
    /// WGSL source.
    pub source: String,
    /// Its entry points.
    pub entries: Vec<&'static Entry>,
    /// `@id` of the library's `f32` override.
    pub float_id: u16,
}

const COMMON: &str = r#"// granary seed-scale workload: fragment library $INDEX, $KIND (generated; do not edit).

const PI: f32 = 3.14159265;
const MAX_LIGHTS: u32 = 16u;

struct View {
    view_proj: mat4x4<f32>,
    view: mat4x4<f32>,
    camera_position: vec3<f32>,
    time: f32,
};

struct Light {
    position: vec3<f32>,
    range: f32,
    color: vec3<f32>,
    intensity: f32,
    direction: vec3<f32>,
    kind: u32,
};

struct Lights {
    items: array<Light, 16>,
    count: u32,
    ambient: f32,
    shadow_bias: f32,
    fog_density: f32,
    ambient_color: vec4<f32>,
    fog_color: vec4<f32>,
    shadow_view_proj: mat4x4<f32>,
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> lights: Lights;
@group(0) @binding(2) var shadow_map: texture_depth_2d;
@group(0) @binding(3) var shadow_sampler: sampler_comparison;

struct FragmentInput {
    @builtin(position) frag_coord: vec4<f32>,
    @builtin(front_facing) front_facing: bool,
    @location(0) world_position: vec3<f32>,
    @location(1) world_normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) world_tangent: vec4<f32>,
    @location(4) color: vec4<f32>,
};

// Punctual light direction and attenuation; w is 0 when the light does not reach.
fn light_vector(light: Light, world: vec3<f32>) -> vec4<f32> {
    if light.kind == 0u {
        return vec4<f32>(-normalize(light.direction), 1.0);
    }
    let to_light = light.position - world;
    let dist = length(to_light);
    let ratio = dist / max(light.range, 1e-4);
    let falloff = clamp(1.0 - ratio * ratio * ratio * ratio, 0.0, 1.0);
    return vec4<f32>(to_light / max(dist, 1e-4), falloff * falloff / max(dist * dist, 1e-4));
}

fn shadow_pcf(world: vec3<f32>) -> f32 {
    let clip = lights.shadow_view_proj * vec4<f32>(world, 1.0);
    let ndc = clip.xyz / clip.w;
    let uv = ndc.xy * vec2<f32>(0.5, -0.5) + vec2<f32>(0.5);
    if any(uv < vec2<f32>(0.0)) || any(uv > vec2<f32>(1.0)) {
        return 1.0;
    }
    let texel = 1.0 / vec2<f32>(textureDimensions(shadow_map));
    var lit = 0.0;
    for (var y = -1; y <= 1; y++) {
        for (var x = -1; x <= 1; x++) {
            lit += textureSampleCompareLevel(shadow_map, shadow_sampler, uv + vec2<f32>(f32(x), f32(y)) * texel, ndc.z - lights.shadow_bias);
        }
    }
    return lit / 9.0;
}
"#;

const PBR: &str = r#"
struct Material {
    base_color: vec4<f32>,
    emissive: vec3<f32>,
    metallic: f32,
    roughness: f32,
    normal_scale: f32,
    occlusion_strength: f32,
    specular: f32,
};

@group(2) @binding(0) var<uniform> material: Material;
@group(2) @binding(1) var base_color_texture: texture_2d<f32>;
@group(2) @binding(2) var normal_texture: texture_2d<f32>;
@group(2) @binding(3) var metallic_roughness_texture: texture_2d<f32>;
@group(2) @binding(4) var occlusion_texture: texture_2d<f32>;
@group(2) @binding(5) var emissive_texture: texture_2d<f32>;
@group(2) @binding(6) var material_sampler: sampler;

override LIGHT_COUNT: u32 = 4u;
override USE_NORMAL_MAP: bool = true;
override USE_OCCLUSION_MAP: bool = false;
override USE_EMISSIVE_MAP: bool = false;
override RECEIVE_SHADOWS: bool = true;
@id($ID) override ALPHA_CUTOFF: f32 = 0.0;

struct Surface {
    base_color: vec4<f32>,
    normal: vec3<f32>,
    metallic: f32,
    roughness: f32,
    occlusion: f32,
    emissive: vec3<f32>,
};

fn sample_surface(in: FragmentInput) -> Surface {
    var s: Surface;
    s.base_color = material.base_color * textureSample(base_color_texture, material_sampler, in.uv) * in.color;
    var n = normalize(in.world_normal);
    if USE_NORMAL_MAP {
        let tn = textureSample(normal_texture, material_sampler, in.uv).xyz * 2.0 - vec3<f32>(1.0);
        let t = normalize(in.world_tangent.xyz - n * dot(n, in.world_tangent.xyz));
        let b = cross(n, t) * in.world_tangent.w;
        n = normalize(mat3x3<f32>(t, b, n) * vec3<f32>(tn.xy * material.normal_scale, tn.z));
    }
    if !in.front_facing {
        n = -n;
    }
    s.normal = n;
    let mr = textureSample(metallic_roughness_texture, material_sampler, in.uv);
    s.metallic = material.metallic * mr.b;
    s.roughness = clamp(material.roughness * mr.g, 0.045, 1.0);
    s.occlusion = 1.0;
    if USE_OCCLUSION_MAP {
        let ao = textureSample(occlusion_texture, material_sampler, in.uv).r;
        s.occlusion = mix(1.0, ao, material.occlusion_strength);
    }
    s.emissive = material.emissive;
    if USE_EMISSIVE_MAP {
        s.emissive *= textureSample(emissive_texture, material_sampler, in.uv).rgb;
    }
    return s;
}

fn d_ggx(n_dot_h: f32, roughness: f32) -> f32 {
    let a = roughness * roughness;
    let a2 = a * a;
    let d = n_dot_h * n_dot_h * (a2 - 1.0) + 1.0;
    return a2 / (PI * d * d);
}

fn v_smith(n_dot_v: f32, n_dot_l: f32, roughness: f32) -> f32 {
    let a2 = pow(roughness, 4.0);
    let gv = n_dot_l * sqrt(n_dot_v * n_dot_v * (1.0 - a2) + a2);
    let gl = n_dot_v * sqrt(n_dot_l * n_dot_l * (1.0 - a2) + a2);
    return 0.5 / max(gv + gl, 1e-5);
}

fn f_schlick(cos_theta: f32, f0: vec3<f32>) -> vec3<f32> {
    return f0 + (vec3<f32>(1.0) - f0) * pow(1.0 - cos_theta, 5.0);
}

fn shade(s: Surface, world: vec3<f32>) -> vec3<f32> {
    let v = normalize(view.camera_position - world);
    let f0 = mix(vec3<f32>(0.04 * material.specular), s.base_color.rgb, s.metallic);
    let n_dot_v = max(dot(s.normal, v), 1e-4);
    var color = s.emissive + lights.ambient_color.rgb * lights.ambient * s.base_color.rgb * s.occlusion;
    let count = min(min(LIGHT_COUNT, MAX_LIGHTS), lights.count);
    for (var i = 0u; i < count; i++) {
        let light = lights.items[i];
        let lv = light_vector(light, world);
        let l = lv.xyz;
        var attenuation = lv.w;
        if RECEIVE_SHADOWS && light.kind == 0u {
            attenuation *= shadow_pcf(world);
        }
        let n_dot_l = max(dot(s.normal, l), 0.0);
        if n_dot_l <= 0.0 || attenuation <= 0.0 {
            continue;
        }
        let h = normalize(l + v);
        let f = f_schlick(max(dot(v, h), 0.0), f0);
        let specular = f * d_ggx(max(dot(s.normal, h), 0.0), s.roughness) * v_smith(n_dot_v, n_dot_l, s.roughness);
        let diffuse = (vec3<f32>(1.0) - f) * (1.0 - s.metallic) * s.base_color.rgb / PI;
        color += (diffuse + specular) * light.color * light.intensity * attenuation * n_dot_l;
    }
    return color;
}
"#;

const FORWARD: &str = r#"
@fragment
fn fs_forward(in: FragmentInput) -> @location(0) vec4<f32> {
    let s = sample_surface(in);
    if s.base_color.a < ALPHA_CUTOFF {
        discard;
    }
    return vec4<f32>(grade(shade(s, in.world_position)), s.base_color.a);
}
"#;

const GBUFFER: &str = r#"
struct GBuffer {
    @location(0) albedo: vec4<f32>,
    @location(1) normal: vec4<f32>,
    @location(2) material: vec4<f32>,
    @location(3) emissive: vec4<f32>,
};

@fragment
fn fs_gbuffer(in: FragmentInput) -> GBuffer {
    let s = sample_surface(in);
    if s.base_color.a < ALPHA_CUTOFF {
        discard;
    }
    var out: GBuffer;
    out.albedo = vec4<f32>(grade(s.base_color.rgb), s.occlusion);
    out.normal = vec4<f32>(s.normal * 0.5 + vec3<f32>(0.5), s.roughness);
    out.material = vec4<f32>(s.metallic, s.occlusion, material.specular, 0.0);
    out.emissive = vec4<f32>(s.emissive, 1.0);
    return out;
}
"#;

const UNLIT: &str = r#"
struct UnlitMaterial {
    tint: vec4<f32>,
    detail_scale: vec2<f32>,
    detail_strength: f32,
    emissive_boost: f32,
};

@group(2) @binding(0) var<uniform> material: UnlitMaterial;
@group(2) @binding(1) var base_texture: texture_2d<f32>;
@group(2) @binding(2) var detail_texture: texture_2d<f32>;
@group(2) @binding(3) var unlit_sampler: sampler;

override USE_VERTEX_COLOR: bool = true;
override FOG: bool = false;
@id($ID) override TINT_STRENGTH: f32 = 1.0;

@fragment
fn fs_unlit(@location(0) world_position: vec3<f32>, @location(2) uv: vec2<f32>, @location(4) color: vec4<f32>) -> @location(0) vec4<f32> {
    var c = textureSample(base_texture, unlit_sampler, uv);
    let detail = textureSample(detail_texture, unlit_sampler, uv * material.detail_scale);
    c = vec4<f32>(c.rgb * mix(vec3<f32>(1.0), detail.rgb * 2.0, material.detail_strength), c.a);
    if USE_VERTEX_COLOR {
        c *= color;
    }
    var rgb = mix(c.rgb, c.rgb * material.tint.rgb, TINT_STRENGTH) * (1.0 + material.emissive_boost);
    if FOG {
        let d = distance(world_position, view.camera_position);
        let f = exp(-d * lights.fog_density);
        rgb = mix(lights.fog_color.rgb, rgb, f);
    }
    return vec4<f32>(grade(rgb), c.a);
}
"#;

const MASKED: &str = r#"
struct FoliageMaterial {
    tint: vec4<f32>,
    translucency_color: vec4<f32>,
    wrap: f32,
    normal_strength: f32,
    translucency_power: f32,
    translucency_scale: f32,
};

@group(2) @binding(0) var<uniform> material: FoliageMaterial;
@group(2) @binding(1) var albedo_texture: texture_2d<f32>;
@group(2) @binding(2) var normal_texture: texture_2d<f32>;
@group(2) @binding(3) var translucency_texture: texture_2d<f32>;
@group(2) @binding(4) var foliage_sampler: sampler;

override LIGHT_COUNT: u32 = 2u;
override TRANSLUCENCY: bool = true;
@id($ID) override CUTOFF: f32 = 0.5;

@fragment
fn fs_masked(in: FragmentInput) -> @location(0) vec4<f32> {
    let albedo = textureSample(albedo_texture, foliage_sampler, in.uv) * material.tint * in.color;
    let tn = textureSample(normal_texture, foliage_sampler, in.uv).xyz * 2.0 - vec3<f32>(1.0);
    let thickness = textureSample(translucency_texture, foliage_sampler, in.uv).r;
    if albedo.a < CUTOFF {
        discard;
    }
    var n = normalize(in.world_normal + tn * material.normal_strength);
    if !in.front_facing {
        n = -n;
    }
    let v = normalize(view.camera_position - in.world_position);
    var color = lights.ambient_color.rgb * lights.ambient * albedo.rgb;
    let count = min(min(LIGHT_COUNT, MAX_LIGHTS), lights.count);
    for (var i = 0u; i < count; i++) {
        let light = lights.items[i];
        let lv = light_vector(light, in.world_position);
        let radiance = light.color * light.intensity * lv.w;
        let wrapped = max((dot(n, lv.xyz) + material.wrap) / (1.0 + material.wrap), 0.0);
        color += albedo.rgb * radiance * wrapped;
        if TRANSLUCENCY {
            let back = pow(max(dot(v, -lv.xyz), 0.0), material.translucency_power);
            color += material.translucency_color.rgb * radiance * back * thickness * material.translucency_scale;
        }
    }
    return vec4<f32>(grade(color), 1.0);
}
"#;

const LAYERED: &str = r#"
struct Terrain {
    layer_tiling: vec4<f32>,
    height_blend: vec4<f32>,
    roughness: vec4<f32>,
};

@group(2) @binding(0) var<uniform> terrain: Terrain;
@group(2) @binding(1) var splat_texture: texture_2d<f32>;
@group(2) @binding(2) var layer_albedo: texture_2d_array<f32>;
@group(2) @binding(3) var layer_normal: texture_2d_array<f32>;
@group(2) @binding(4) var terrain_sampler: sampler;

override LAYER_COUNT: u32 = 4u;
override LIGHT_COUNT: u32 = 1u;
@id($ID) override BLEND_SHARPNESS: f32 = 4.0;

@fragment
fn fs_layered(in: FragmentInput) -> @location(0) vec4<f32> {
    let splat = textureSample(splat_texture, terrain_sampler, in.uv);
    var albedo = vec3<f32>(0.0);
    var tn = vec3<f32>(0.0);
    var roughness = 0.0;
    var total = 0.0;
    let layers = clamp(LAYER_COUNT, 1u, 4u);
    for (var i = 0u; i < layers; i++) {
        let uv = in.uv * terrain.layer_tiling[i];
        let a = textureSample(layer_albedo, terrain_sampler, uv, i32(i));
        let w = pow(max(splat[i] + a.a * terrain.height_blend[i], 1e-3), BLEND_SHARPNESS);
        albedo += a.rgb * w;
        tn += (textureSample(layer_normal, terrain_sampler, uv, i32(i)).xyz * 2.0 - vec3<f32>(1.0)) * w;
        roughness += terrain.roughness[i] * w;
        total += w;
    }
    albedo /= total;
    roughness /= total;
    let n = normalize(in.world_normal + tn / total);
    let v = normalize(view.camera_position - in.world_position);
    var color = lights.ambient_color.rgb * lights.ambient * albedo;
    let count = min(min(LIGHT_COUNT, MAX_LIGHTS), lights.count);
    for (var i = 0u; i < count; i++) {
        let light = lights.items[i];
        let lv = light_vector(light, in.world_position);
        var attenuation = lv.w;
        if light.kind == 0u {
            attenuation *= shadow_pcf(in.world_position);
        }
        let h = normalize(lv.xyz + v);
        let spec = pow(max(dot(n, h), 0.0), mix(256.0, 4.0, roughness)) * (1.0 - roughness);
        color += (albedo * max(dot(n, lv.xyz), 0.0) + vec3<f32>(spec)) * light.color * light.intensity * attenuation;
    }
    return vec4<f32>(grade(color), 1.0);
}
"#;

/// Generates fragment library `index`; the kind cycles through PBR, unlit, masked, layered.
pub(crate) fn fragment_library(index: usize, rng: &mut Rng) -> FragmentLibrary {
    let (kind, body, entries): (&str, String, Vec<&'static Entry>) = match index % 4 {
        0 => ("pbr", format!("{PBR}{FORWARD}{GBUFFER}"), vec![&FS_FORWARD, &FS_GBUFFER]),
        1 => ("unlit", UNLIT.to_string(), vec![&FS_UNLIT]),
        2 => ("masked", MASKED.to_string(), vec![&FS_MASKED]),
        _ => ("layered", LAYERED.to_string(), vec![&FS_LAYERED]),
    };
    let float_id = 3 + (index % 29) as u16;
    let mut src = COMMON.replace("$INDEX", &index.to_string()).replace("$KIND", kind);
    src.push_str(&grade_fn(rng));
    src.push_str(&body.replace("$ID", &float_id.to_string()));
    FragmentLibrary { kind, source: src, entries, float_id }
}

/// A per-library colour grade: exposure, a 3×3 matrix, a tone curve and 0–3 extra steps.
fn grade_fn(rng: &mut Rng) -> String {
    let mut s = String::from("\nfn grade(c: vec3<f32>) -> vec3<f32> {\n");
    s.push_str(&format!("    var g = c * {};\n", lit(rng.coef(0.6, 1.6))));
    let (c0, c1, c2) = near_identity_columns(rng, 0.08);
    s.push_str(&format!("    g = mat3x3<f32>({c0}, {c1}, {c2}) * g;\n"));
    for _ in 0..rng.below(4) {
        match rng.below(4) {
            0 => s.push_str(&format!(
                "    g = mix(vec3<f32>(dot(g, vec3<f32>(0.2126, 0.7152, 0.0722))), g, {});\n",
                lit(rng.coef(0.7, 1.3))
            )),
            1 => s.push_str(&format!(
                "    g = g + {};\n",
                vec3([rng.coef(0.0, 0.03), rng.coef(0.0, 0.03), rng.coef(0.0, 0.03)])
            )),
            2 => s.push_str(&format!(
                "    g = g * (vec3<f32>(1.0) + g / vec3<f32>({w} * {w})) / (vec3<f32>(1.0) + g);\n",
                w = lit(rng.coef(2.0, 11.0))
            )),
            _ => s.push_str(&format!(
                "    g = smoothstep(vec3<f32>(0.0), vec3<f32>(1.0), g) * {} + g * {};\n",
                lit(0.25),
                lit(0.75)
            )),
        }
    }
    let (a, b, c, d, e) =
        (rng.coef(2.3, 2.7), rng.coef(0.02, 0.04), rng.coef(2.2, 2.6), rng.coef(0.5, 0.7), rng.coef(0.12, 0.16));
    s.push_str(&format!(
        "    g = clamp((g * ({a} * g + vec3<f32>({b}))) / (g * ({c} * g + vec3<f32>({d})) + vec3<f32>({e})), vec3<f32>(0.0), vec3<f32>(1.0));\n",
        a = lit(a),
        b = lit(b),
        c = lit(c),
        d = lit(d),
        e = lit(e)
    ));
    s.push_str("    return g;\n}\n");
    s
}
