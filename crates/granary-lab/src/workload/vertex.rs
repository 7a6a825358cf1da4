//! Vertex libraries: skinning, morph targets, instancing and wind, with per-library helper
//! code so that no two libraries are byte-identical.

use super::catalog::{Entry, VS_INSTANCED, VS_MORPH, VS_SKINNED, VS_STATIC};
use super::rng::Rng;
use super::wgsl::{lit, near_identity_columns, vec3};

/// One generated vertex library.
pub(crate) struct VertexLibrary {
    /// WGSL source.
    pub source: String,
    /// Its entry points.
    pub entries: Vec<&'static Entry>,
    /// `@id` of the `SCALE` override.
    pub float_id: u16,
}

const HEADER: &str = r#"// granary seed-scale workload: vertex library $INDEX (generated; do not edit).
// Entry points: $ENTRIES.
// Overrides: BONE_COUNT, NORMALIZE_WEIGHTS, MORPH_TARGETS, WIND, INSTANCE_FADE, @id($ID) SCALE.

struct View {
    view_proj: mat4x4<f32>,
    view: mat4x4<f32>,
    camera_position: vec3<f32>,
    time: f32,
};

struct Object {
    model: mat4x4<f32>,
    color: vec4<f32>,
    joint_offset: u32,
    morph_offset: u32,
    vertex_count: u32,
    wind_phase: f32,
};

struct MorphDelta {
    position: vec4<f32>,
    normal: vec4<f32>,
    tangent: vec4<f32>,
};

@group(0) @binding(0) var<uniform> view: View;
@group(1) @binding(0) var<uniform> object: Object;
@group(1) @binding(1) var<storage, read> joint_matrices: array<mat4x4<f32>>;
@group(1) @binding(2) var<storage, read> morph_deltas: array<MorphDelta>;
@group(1) @binding(3) var<storage, read> morph_weights: array<f32>;

override BONE_COUNT: u32 = 64u;
override NORMALIZE_WEIGHTS: bool = false;
override MORPH_TARGETS: u32 = 4u;
override WIND: bool = false;
override INSTANCE_FADE: bool = false;
@id($ID) override SCALE: f32 = 1.0;

const MAX_MORPH_TARGETS: u32 = 8u;
const WIND_DIRECTION: vec3<f32> = $WIND_DIRECTION;
const WIND_HEIGHT_FALLOFF: f32 = $WIND_FALLOFF;
const FADE_NEAR: f32 = $FADE_NEAR;
const FADE_FAR: f32 = $FADE_FAR;

struct MeshInput {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) tangent: vec4<f32>,
};

struct SkinInput {
    @location(4) joints: vec4<u32>,
    @location(5) weights: vec4<f32>,
};

struct InstanceInput {
    @location(6) model_0: vec4<f32>,
    @location(7) model_1: vec4<f32>,
    @location(8) model_2: vec4<f32>,
    @location(9) model_3: vec4<f32>,
    @location(10) color: vec4<f32>,
    @location(11) flags: u32,
};

struct VertexOutput {
    @builtin(position) clip_position: vec4<f32>,
    @location(0) world_position: vec3<f32>,
    @location(1) world_normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) world_tangent: vec4<f32>,
    @location(4) color: vec4<f32>,
};
"#;

const FINISH: &str = r#"
fn finish(model: mat4x4<f32>, position: vec3<f32>, normal: vec3<f32>, uv: vec2<f32>, tangent: vec4<f32>, color: vec4<f32>) -> VertexOutput {
    var world = (model * vec4<f32>(position * SCALE, 1.0)).xyz;
    if WIND {
        let height = clamp(position.y * WIND_HEIGHT_FALLOFF, 0.0, 1.0);
        world += wind_offset(world, object.wind_phase + view.time) * height * height;
    }
    let m3 = mat3x3<f32>(model[0].xyz, model[1].xyz, model[2].xyz);
    var out: VertexOutput;
    out.clip_position = view.view_proj * vec4<f32>(world, 1.0);
    out.world_position = world;
    out.world_normal = normalize(m3 * normal);
    out.uv = uv_transform(uv);
    out.world_tangent = vec4<f32>(normalize(m3 * tangent.xyz), tangent.w);
    out.color = color_grade(color);
    return out;
}
"#;

const STATIC: &str = r#"
@vertex
fn vs_static(in: MeshInput) -> VertexOutput {
    return finish(object.model, in.position, in.normal, in.uv, in.tangent, object.color);
}
"#;

const SKINNED: &str = r#"
fn skin_matrix(joints: vec4<u32>, weights: vec4<f32>) -> mat4x4<f32> {
    let last = max(BONE_COUNT, 1u) - 1u;
    var w = weights;
    if NORMALIZE_WEIGHTS {
        let total = w.x + w.y + w.z + w.w;
        if total > 0.0 {
            w = w / total;
        }
    }
    let base = object.joint_offset;
    return joint_matrices[base + min(joints.x, last)] * w.x
        + joint_matrices[base + min(joints.y, last)] * w.y
        + joint_matrices[base + min(joints.z, last)] * w.z
        + joint_matrices[base + min(joints.w, last)] * w.w;
}

@vertex
fn vs_skinned(in: MeshInput, skin: SkinInput) -> VertexOutput {
    let model = object.model * skin_matrix(skin.joints, skin.weights);
    return finish(model, in.position, in.normal, in.uv, in.tangent, object.color);
}
"#;

const MORPH: &str = r#"
@vertex
fn vs_morph(in: MeshInput, @builtin(vertex_index) vertex_index: u32) -> VertexOutput {
    var position = in.position;
    var normal = in.normal;
    var tangent = in.tangent.xyz;
    let targets = min(MORPH_TARGETS, MAX_MORPH_TARGETS);
    for (var i = 0u; i < targets; i++) {
        let weight = morph_weights[i];
        if weight != 0.0 {
            let delta = morph_deltas[object.morph_offset + i * object.vertex_count + vertex_index];
            position += delta.position.xyz * weight;
            normal += delta.normal.xyz * weight;
            tangent += delta.tangent.xyz * weight;
        }
    }
    return finish(object.model, position, normal, in.uv, vec4<f32>(tangent, in.tangent.w), object.color);
}
"#;

const INSTANCED: &str = r#"
@vertex
fn vs_instanced(in: MeshInput, inst: InstanceInput) -> VertexOutput {
    let model = mat4x4<f32>(inst.model_0, inst.model_1, inst.model_2, inst.model_3);
    var color = inst.color * object.color;
    if INSTANCE_FADE {
        let distance_to_camera = distance(inst.model_3.xyz, view.camera_position);
        color.a *= 1.0 - smoothstep(FADE_NEAR, FADE_FAR, distance_to_camera);
    }
    if (inst.flags & 1u) != 0u {
        color = vec4<f32>(color.rgb * 0.5, color.a);
    }
    return finish(model, in.position, in.normal, in.uv, in.tangent, color);
}
"#;

/// Generates vertex library `index`.
pub(crate) fn vertex_library(index: usize, rng: &mut Rng) -> VertexLibrary {
    let mut entries = vec![&VS_STATIC];
    if rng.chance(0.85) {
        entries.push(&VS_SKINNED);
    }
    if rng.chance(0.5) {
        entries.push(&VS_MORPH);
    }
    if rng.chance(0.6) {
        entries.push(&VS_INSTANCED);
    }
    let float_id = 10 + (index % 40) as u16;
    let names: Vec<&str> = entries.iter().map(|e| e.function).collect();
    let near = rng.coef(20.0, 80.0);
    let mut src = HEADER
        .replace("$INDEX", &index.to_string())
        .replace("$ENTRIES", &names.join(", "))
        .replace("$ID", &float_id.to_string())
        .replace("$WIND_DIRECTION", &vec3([rng.coef(-1.0, 1.0), 0.0, rng.coef(-1.0, 1.0)]))
        .replace("$WIND_FALLOFF", &lit(rng.coef(0.05, 0.5)))
        .replace("$FADE_NEAR", &lit(near))
        .replace("$FADE_FAR", &lit(near + rng.coef(10.0, 120.0)));
    src.push_str(&wind_fn(rng));
    src.push_str(&uv_fn(rng));
    src.push_str(&color_fn(rng));
    src.push_str(FINISH);
    for e in &entries {
        src.push_str(match e.function {
            "vs_static" => STATIC,
            "vs_skinned" => SKINNED,
            "vs_morph" => MORPH,
            _ => INSTANCED,
        });
    }
    VertexLibrary { source: src, entries, float_id }
}

/// A sum of 2–6 travelling sine waves with per-library frequencies.
fn wind_fn(rng: &mut Rng) -> String {
    let mut s = String::from("\nfn wind_offset(p: vec3<f32>, phase: f32) -> vec3<f32> {\n    var sway = 0.0;\n");
    for _ in 0..rng.range(2, 6) {
        let dir = vec3([rng.coef(-1.0, 1.0), rng.coef(0.0, 0.3), rng.coef(-1.0, 1.0)]);
        s.push_str(&format!(
            "    sway += sin(dot(p, {dir}) * {} + phase * {}) * {};\n",
            lit(rng.coef(0.1, 3.0)),
            lit(rng.coef(0.5, 4.0)),
            lit(rng.coef(0.01, 0.2))
        ));
    }
    s.push_str("    let gust = 0.5 + 0.5 * sin(phase * ");
    s.push_str(&lit(rng.coef(0.05, 0.5)));
    s.push_str(");\n    return WIND_DIRECTION * sway * gust;\n}\n");
    s
}

/// Tiling, offset and an optional rotation or flip of the texture coordinates.
fn uv_fn(rng: &mut Rng) -> String {
    let mut s = String::from("\nfn uv_transform(uv: vec2<f32>) -> vec2<f32> {\n");
    s.push_str(&format!(
        "    var t = uv * vec2<f32>({}, {}) + vec2<f32>({}, {});\n",
        lit(rng.coef(0.5, 4.0)),
        lit(rng.coef(0.5, 4.0)),
        lit(rng.coef(0.0, 1.0)),
        lit(rng.coef(0.0, 1.0))
    ));
    match rng.below(3) {
        0 => {
            let a = rng.coef(0.0, std::f64::consts::TAU);
            s.push_str(&format!(
                "    let r = mat2x2<f32>({c}, {sn}, {nsn}, {c});\n    t = r * (t - vec2<f32>(0.5)) + vec2<f32>(0.5);\n",
                c = lit(a.cos()),
                sn = lit(a.sin()),
                nsn = lit(-a.sin())
            ));
        }
        1 => s.push_str("    t = vec2<f32>(t.x, 1.0 - t.y);\n"),
        _ => {}
    }
    s.push_str("    return t;\n}\n");
    s
}

/// A per-library colour transform: a 3×3 matrix, a lift and 0–3 extra steps.
fn color_fn(rng: &mut Rng) -> String {
    let mut s = String::from("\nfn color_grade(c: vec4<f32>) -> vec4<f32> {\n");
    let (c0, c1, c2) = near_identity_columns(rng, 0.1);
    s.push_str(&format!("    var rgb = mat3x3<f32>({c0}, {c1}, {c2}) * c.rgb;\n"));
    s.push_str(&format!("    rgb += {};\n", vec3([rng.coef(0.0, 0.05), rng.coef(0.0, 0.05), rng.coef(0.0, 0.05)])));
    for _ in 0..rng.below(4) {
        match rng.below(3) {
            0 => s.push_str(&format!(
                "    rgb = mix(rgb, vec3<f32>(dot(rgb, vec3<f32>(0.2126, 0.7152, 0.0722))), {});\n",
                lit(rng.coef(0.0, 0.5))
            )),
            1 => s.push_str(&format!("    rgb = rgb / (rgb + vec3<f32>({}));\n", lit(rng.coef(0.5, 2.0)))),
            _ => s.push_str(&format!(
                "    rgb = pow(max(rgb, vec3<f32>(0.0)), vec3<f32>({}));\n",
                lit(rng.coef(0.8, 1.25))
            )),
        }
    }
    s.push_str("    return vec4<f32>(rgb, c.a);\n}\n");
    s
}
