// Full-screen passes: one oversized triangle from the vertex index, no vertex buffers.
//
// Entry points
//   vs_fullscreen  outputs uv at @location(0)
//   fs_tonemap     HDR → display: exposure, bloom, tone curve, optional sRGB encode and dither
//   fs_fxaa        FXAA 3.11-style edge antialiasing on the tonemapped image
//   fs_blit        copy (with optional mip level)
//
// Specialization
//   TONEMAP           0 clamp, 1 Reinhard (luminance), 2 ACES fitted, 3 Uncharted 2
//   USE_BLOOM, ENCODE_SRGB (for unorm swapchains), DITHER
//   @id(0) FXAA_EDGE_THRESHOLD, FXAA_SEARCH_STEPS
//   BLIT_LOD

struct PostParams {
    exposure: f32,
    bloom_intensity: f32,
    white_point: f32,
    frame_index: u32,
    inverse_size: vec2<f32>,
    _pad: vec2<f32>,
};

@group(0) @binding(0) var source_texture: texture_2d<f32>;
@group(0) @binding(1) var source_sampler: sampler;
@group(0) @binding(2) var bloom_texture: texture_2d<f32>;
@group(0) @binding(3) var<uniform> post: PostParams;

override TONEMAP: u32 = 2u;
override USE_BLOOM: bool = true;
override ENCODE_SRGB: bool = false;
override DITHER: bool = true;
@id(0) override FXAA_EDGE_THRESHOLD: f32 = 0.125;
override FXAA_SEARCH_STEPS: u32 = 8u;
override BLIT_LOD: f32 = 0.0;

struct FullscreenOutput {
    @builtin(position) position: vec4<f32>,
    @location(0) uv: vec2<f32>,
};

@vertex
fn vs_fullscreen(@builtin(vertex_index) vertex_index: u32) -> FullscreenOutput {
    let uv = vec2<f32>(f32((vertex_index << 1u) & 2u), f32(vertex_index & 2u));
    var out: FullscreenOutput;
    out.position = vec4<f32>(uv * vec2<f32>(2.0, -2.0) + vec2<f32>(-1.0, 1.0), 0.0, 1.0);
    out.uv = uv;
    return out;
}

fn luminance(c: vec3<f32>) -> f32 {
    return dot(c, vec3<f32>(0.2126, 0.7152, 0.0722));
}

fn aces_fitted(c: vec3<f32>) -> vec3<f32> {
    let input = mat3x3<f32>(
        vec3<f32>(0.59719, 0.07600, 0.02840),
        vec3<f32>(0.35458, 0.90834, 0.13383),
        vec3<f32>(0.04823, 0.01566, 0.83777),
    );
    let output = mat3x3<f32>(
        vec3<f32>(1.60475, -0.10208, -0.00327),
        vec3<f32>(-0.53108, 1.10813, -0.07276),
        vec3<f32>(-0.07367, -0.00605, 1.07602),
    );
    let v = input * c;
    let a = v * (v + vec3<f32>(0.0245786)) - vec3<f32>(0.000090537);
    let b = v * (0.983729 * v + vec3<f32>(0.4329510)) + vec3<f32>(0.238081);
    return clamp(output * (a / b), vec3<f32>(0.0), vec3<f32>(1.0));
}

fn uncharted2_curve(x: vec3<f32>) -> vec3<f32> {
    let a = 0.15;
    let b = 0.50;
    let c = 0.10;
    let d = 0.20;
    let e = 0.02;
    let f = 0.30;
    return ((x * (a * x + c * b) + d * e) / (x * (a * x + b) + d * f)) - e / f;
}

fn tonemap(c: vec3<f32>) -> vec3<f32> {
    switch TONEMAP {
        case 1u: {
            let l = luminance(c);
            let w2 = post.white_point * post.white_point;
            return c * (1.0 + l / w2) / (1.0 + l);
        }
        case 2u: {
            return aces_fitted(c);
        }
        case 3u: {
            let white = uncharted2_curve(vec3<f32>(post.white_point));
            return uncharted2_curve(c * 2.0) / white;
        }
        default: {
            return clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
        }
    }
}

fn linear_to_srgb(c: vec3<f32>) -> vec3<f32> {
    let lo = c * 12.92;
    let hi = 1.055 * pow(c, vec3<f32>(1.0 / 2.4)) - vec3<f32>(0.055);
    return select(hi, lo, c <= vec3<f32>(0.0031308));
}

@fragment
fn fs_tonemap(in: FullscreenOutput) -> @location(0) vec4<f32> {
    var hdr = textureSampleLevel(source_texture, source_sampler, in.uv, 0.0).rgb;
    if USE_BLOOM {
        hdr += textureSampleLevel(bloom_texture, source_sampler, in.uv, 0.0).rgb * post.bloom_intensity;
    }
    var ldr = tonemap(hdr * post.exposure);
    if ENCODE_SRGB {
        ldr = linear_to_srgb(ldr);
    }
    if DITHER {
        let p = in.position.xy + vec2<f32>(f32(post.frame_index % 64u) * 5.588238);
        let noise = fract(52.9829189 * fract(dot(p, vec2<f32>(0.06711056, 0.00583715))));
        ldr += vec3<f32>((noise - 0.5) / 255.0);
    }
    return vec4<f32>(ldr, luminance(ldr));
}

fn luma_at(uv: vec2<f32>) -> f32 {
    return textureSampleLevel(source_texture, source_sampler, uv, 0.0).a;
}

@fragment
fn fs_fxaa(in: FullscreenOutput) -> @location(0) vec4<f32> {
    let px = post.inverse_size;
    let center = textureSampleLevel(source_texture, source_sampler, in.uv, 0.0);
    let n = luma_at(in.uv + vec2<f32>(0.0, -px.y));
    let s = luma_at(in.uv + vec2<f32>(0.0, px.y));
    let e = luma_at(in.uv + vec2<f32>(px.x, 0.0));
    let w = luma_at(in.uv + vec2<f32>(-px.x, 0.0));
    let lo = min(center.a, min(min(n, s), min(e, w)));
    let hi = max(center.a, max(max(n, s), max(e, w)));
    let range = hi - lo;
    if range < max(0.0312, hi * FXAA_EDGE_THRESHOLD) {
        return vec4<f32>(center.rgb, 1.0);
    }
    let horizontal = abs(n + s - 2.0 * center.a) >= abs(e + w - 2.0 * center.a);
    let step = select(vec2<f32>(px.x, 0.0), vec2<f32>(0.0, px.y), horizontal);
    let along = select(vec2<f32>(0.0, px.y), vec2<f32>(px.x, 0.0), horizontal);
    let gradient_pos = select(e, s, horizontal) - center.a;
    let gradient_neg = select(w, n, horizontal) - center.a;
    var offset_dir = 1.0;
    if abs(gradient_neg) > abs(gradient_pos) {
        offset_dir = -1.0;
    }
    let edge_luma = center.a + 0.5 * select(gradient_pos, gradient_neg, offset_dir < 0.0);
    let threshold = range * 0.25;
    var pos_dist = 0.0;
    var neg_dist = 0.0;
    var pos_done = false;
    var neg_done = false;
    let edge_uv = in.uv + step * (0.5 * offset_dir);
    for (var i = 1u; i <= FXAA_SEARCH_STEPS; i++) {
        if !pos_done {
            pos_dist = f32(i);
            pos_done = abs(luma_at(edge_uv + along * pos_dist) - edge_luma) >= threshold;
        }
        if !neg_done {
            neg_dist = f32(i);
            neg_done = abs(luma_at(edge_uv - along * neg_dist) - edge_luma) >= threshold;
        }
        if pos_done && neg_done {
            break;
        }
    }
    let span = pos_dist + neg_dist;
    let blend = max(0.5 - min(pos_dist, neg_dist) / span, 0.0);
    let uv = in.uv + step * (blend * offset_dir);
    return vec4<f32>(textureSampleLevel(source_texture, source_sampler, uv, 0.0).rgb, 1.0);
}

@fragment
fn fs_blit(in: FullscreenOutput) -> @location(0) vec4<f32> {
    return textureSampleLevel(source_texture, source_sampler, in.uv, BLIT_LOD);
}
