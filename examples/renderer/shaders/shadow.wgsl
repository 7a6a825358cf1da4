// Fragment stages for depth-only passes (depth prepass and shadow maps). Opaque casters need
// no fragment stage at all; these are for the cases that do.
//
// Entry points
//   fs_alpha_test      alpha-tested casters (foliage, fences); pairs with vs_depth_uv
//   fs_shadow_moments  exponential variance shadow maps: writes (e^cz, e^2cz, -e^-cz, e^-2cz)
//                      to an rgba16float/rgba32float attachment; pairs with vs_depth
//
// Specialization
//   @id(0) ALPHA_CUTOFF
//   DITHERED      stochastic transparency for alpha-blended casters (alpha as coverage)
//   EVSM_POSITIVE_EXPONENT, EVSM_NEGATIVE_EXPONENT

struct Material {
    base_color_factor: vec4<f32>,
    emissive_factor: vec3<f32>,
    metallic_factor: f32,
    roughness_factor: f32,
    normal_scale: f32,
    occlusion_strength: f32,
    emissive_strength: f32,
};

@group(2) @binding(0) var<uniform> material: Material;
@group(2) @binding(1) var base_color_texture: texture_2d<f32>;
@group(2) @binding(2) var base_color_sampler: sampler;

@id(0) override ALPHA_CUTOFF: f32 = 0.5;
override DITHERED: bool = false;
override EVSM_POSITIVE_EXPONENT: f32 = 40.0;
override EVSM_NEGATIVE_EXPONENT: f32 = 5.0;

struct MaskedInput {
    @builtin(position) frag_coord: vec4<f32>,
    @location(2) uv: vec2<f32>,
};

// Jimenez's interleaved gradient noise.
fn interleaved_gradient_noise(p: vec2<f32>) -> f32 {
    return fract(52.9829189 * fract(dot(p, vec2<f32>(0.06711056, 0.00583715))));
}

@fragment
fn fs_alpha_test(in: MaskedInput) {
    let alpha = material.base_color_factor.a * textureSample(base_color_texture, base_color_sampler, in.uv).a;
    var threshold = ALPHA_CUTOFF;
    if DITHERED {
        threshold = interleaved_gradient_noise(in.frag_coord.xy);
    }
    if alpha < threshold {
        discard;
    }
}

@fragment
fn fs_shadow_moments(@builtin(position) frag_coord: vec4<f32>) -> @location(0) vec4<f32> {
    let depth = frag_coord.z * 2.0 - 1.0;
    let pos = exp(EVSM_POSITIVE_EXPONENT * depth);
    let neg = -exp(-EVSM_NEGATIVE_EXPONENT * depth);
    return vec4<f32>(pos, pos * pos, neg, neg * neg);
}
