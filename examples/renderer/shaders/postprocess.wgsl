// Compute post-processing: auto-exposure (luminance histogram + average), bloom pyramid and a
// compute tonemapper writing straight to a storage texture.
//
// Entry points (all @compute)
//   cs_luminance_histogram  256-bin log-luminance histogram (workgroup atomics, 16×16)
//   cs_luminance_average    one workgroup of 256: weighted average → adapted exposure
//   cs_bloom_downsample     13-tap downsample; the first pass applies a threshold + Karis average
//   cs_bloom_upsample       3×3 tent upsample added onto the next larger mip
//   cs_tonemap              HDR → LDR storage texture, TILE_SIZE×TILE_SIZE workgroups
//
// Specialization
//   TILE_SIZE             workgroup edge for the image passes (8 or 16)
//   BLOOM_FIRST_PASS      threshold + Karis average (only the first downsample)
//   @id(0) BLOOM_THRESHOLD, BLOOM_KNEE
//   ADAPTATION_SPEED      exposure adaptation rate
//   TONEMAP               0 clamp, 1 Reinhard, 2 ACES fitted

const HISTOGRAM_BINS: u32 = 256u;

struct ExposureParams {
    min_log_luminance: f32,
    log_luminance_range: f32,
    delta_time: f32,
    pixel_count: u32,
};

struct Exposure {
    average_luminance: f32,
    exposure: f32,
};

@group(0) @binding(0) var hdr_input: texture_2d<f32>;
@group(0) @binding(1) var linear_sampler: sampler;
@group(0) @binding(2) var<uniform> exposure_params: ExposureParams;
@group(0) @binding(3) var<storage, read_write> histogram: array<atomic<u32>, 256>;
@group(0) @binding(4) var<storage, read_write> exposure: Exposure;
@group(0) @binding(5) var bloom_output: texture_storage_2d<rgba16float, write>;
@group(0) @binding(6) var ldr_output: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(7) var bloom_input: texture_2d<f32>;
@group(0) @binding(8) var bloom_accumulate: texture_2d<f32>;

override TILE_SIZE: u32 = 8u;
override BLOOM_FIRST_PASS: bool = false;
@id(0) override BLOOM_THRESHOLD: f32 = 1.0;
override BLOOM_KNEE: f32 = 0.5;
override ADAPTATION_SPEED: f32 = 1.5;
override TONEMAP: u32 = 2u;

var<workgroup> histogram_shared: array<atomic<u32>, 256>;
var<workgroup> weighted_shared: array<f32, 256>;

fn luminance(c: vec3<f32>) -> f32 {
    return dot(c, vec3<f32>(0.2126, 0.7152, 0.0722));
}

fn luminance_bin(l: f32) -> u32 {
    if l < 0.005 {
        return 0u;
    }
    let t = clamp((log2(l) - exposure_params.min_log_luminance) / exposure_params.log_luminance_range, 0.0, 1.0);
    return u32(t * 254.0 + 1.0);
}

@compute @workgroup_size(16, 16, 1)
fn cs_luminance_histogram(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_index) index: u32,
) {
    atomicStore(&histogram_shared[index], 0u);
    workgroupBarrier();
    let size = textureDimensions(hdr_input);
    if all(gid.xy < size) {
        let c = textureLoad(hdr_input, vec2<i32>(gid.xy), 0).rgb;
        atomicAdd(&histogram_shared[luminance_bin(luminance(c))], 1u);
    }
    workgroupBarrier();
    atomicAdd(&histogram[index], atomicLoad(&histogram_shared[index]));
}

@compute @workgroup_size(256, 1, 1)
fn cs_luminance_average(@builtin(local_invocation_index) index: u32) {
    let count = atomicLoad(&histogram[index]);
    weighted_shared[index] = f32(count) * f32(index);
    atomicStore(&histogram[index], 0u);
    workgroupBarrier();
    for (var stride = HISTOGRAM_BINS / 2u; stride > 0u; stride >>= 1u) {
        if index < stride {
            weighted_shared[index] += weighted_shared[index + stride];
        }
        workgroupBarrier();
    }
    if index == 0u {
        let dark = f32(count);
        let lit = max(f32(exposure_params.pixel_count) - dark, 1.0);
        let log_average = weighted_shared[0] / lit - 1.0;
        let l = exp2(log_average / 254.0 * exposure_params.log_luminance_range + exposure_params.min_log_luminance);
        let previous = exposure.average_luminance;
        let adapted = previous + (l - previous) * (1.0 - exp(-exposure_params.delta_time * ADAPTATION_SPEED));
        exposure.average_luminance = adapted;
        exposure.exposure = 0.18 / max(adapted, 1e-4);
    }
}

fn soft_threshold(c: vec3<f32>) -> vec3<f32> {
    let brightness = max(c.r, max(c.g, c.b));
    let knee = BLOOM_THRESHOLD * BLOOM_KNEE + 1e-5;
    var soft = clamp(brightness - BLOOM_THRESHOLD + knee, 0.0, 2.0 * knee);
    soft = soft * soft / (4.0 * knee);
    let contribution = max(soft, brightness - BLOOM_THRESHOLD) / max(brightness, 1e-5);
    return c * contribution;
}

fn karis_weight(c: vec3<f32>) -> f32 {
    return 1.0 / (1.0 + luminance(c));
}

fn tap(uv: vec2<f32>) -> vec3<f32> {
    return textureSampleLevel(bloom_input, linear_sampler, uv, 0.0).rgb;
}

@compute @workgroup_size(TILE_SIZE, TILE_SIZE, 1)
fn cs_bloom_downsample(@builtin(global_invocation_id) gid: vec3<u32>) {
    let out_size = textureDimensions(bloom_output);
    if any(gid.xy >= out_size) {
        return;
    }
    let texel = 1.0 / vec2<f32>(textureDimensions(bloom_input));
    let uv = (vec2<f32>(gid.xy) + vec2<f32>(0.5)) / vec2<f32>(out_size);
    let a = tap(uv + texel * vec2<f32>(-2.0, -2.0));
    let b = tap(uv + texel * vec2<f32>(0.0, -2.0));
    let c = tap(uv + texel * vec2<f32>(2.0, -2.0));
    let d = tap(uv + texel * vec2<f32>(-2.0, 0.0));
    let e = tap(uv);
    let f = tap(uv + texel * vec2<f32>(2.0, 0.0));
    let g = tap(uv + texel * vec2<f32>(-2.0, 2.0));
    let h = tap(uv + texel * vec2<f32>(0.0, 2.0));
    let i = tap(uv + texel * vec2<f32>(2.0, 2.0));
    let j = tap(uv + texel * vec2<f32>(-1.0, -1.0));
    let k = tap(uv + texel * vec2<f32>(1.0, -1.0));
    let l = tap(uv + texel * vec2<f32>(-1.0, 1.0));
    let m = tap(uv + texel * vec2<f32>(1.0, 1.0));
    var groups = array<vec3<f32>, 5>(
        (j + k + l + m) * 0.25,
        (a + b + d + e) * 0.25,
        (b + c + e + f) * 0.25,
        (d + e + g + h) * 0.25,
        (e + f + h + i) * 0.25,
    );
    let weights = array<f32, 5>(0.5, 0.125, 0.125, 0.125, 0.125);
    var sum = vec3<f32>(0.0);
    var total = 0.0;
    for (var n = 0u; n < 5u; n++) {
        var w = weights[n];
        if BLOOM_FIRST_PASS {
            groups[n] = soft_threshold(groups[n]);
            w = w * karis_weight(groups[n]);
        }
        sum += groups[n] * w;
        total += w;
    }
    textureStore(bloom_output, vec2<i32>(gid.xy), vec4<f32>(sum / total, 1.0));
}

@compute @workgroup_size(TILE_SIZE, TILE_SIZE, 1)
fn cs_bloom_upsample(@builtin(global_invocation_id) gid: vec3<u32>) {
    let out_size = textureDimensions(bloom_output);
    if any(gid.xy >= out_size) {
        return;
    }
    let texel = 1.0 / vec2<f32>(textureDimensions(bloom_input));
    let uv = (vec2<f32>(gid.xy) + vec2<f32>(0.5)) / vec2<f32>(out_size);
    var sum = vec3<f32>(0.0);
    for (var y = -1; y <= 1; y++) {
        for (var x = -1; x <= 1; x++) {
            let w = f32((2 - abs(x)) * (2 - abs(y))) / 16.0;
            sum += tap(uv + vec2<f32>(f32(x), f32(y)) * texel) * w;
        }
    }
    let base = textureLoad(bloom_accumulate, vec2<i32>(gid.xy), 0).rgb;
    textureStore(bloom_output, vec2<i32>(gid.xy), vec4<f32>(base + sum, 1.0));
}

fn aces_approx(c: vec3<f32>) -> vec3<f32> {
    let v = c * 0.6;
    return clamp((v * (2.51 * v + vec3<f32>(0.03))) / (v * (2.43 * v + vec3<f32>(0.59)) + vec3<f32>(0.14)), vec3<f32>(0.0), vec3<f32>(1.0));
}

@compute @workgroup_size(TILE_SIZE, TILE_SIZE, 1)
fn cs_tonemap(@builtin(global_invocation_id) gid: vec3<u32>) {
    let size = textureDimensions(ldr_output);
    if any(gid.xy >= size) {
        return;
    }
    let hdr = textureLoad(hdr_input, vec2<i32>(gid.xy), 0).rgb * exposure.exposure;
    var ldr: vec3<f32>;
    switch TONEMAP {
        case 1u: {
            ldr = hdr / (vec3<f32>(1.0) + vec3<f32>(luminance(hdr)));
        }
        case 2u: {
            ldr = aces_approx(hdr);
        }
        default: {
            ldr = clamp(hdr, vec3<f32>(0.0), vec3<f32>(1.0));
        }
    }
    textureStore(ldr_output, vec2<i32>(gid.xy), vec4<f32>(ldr, 1.0));
}
