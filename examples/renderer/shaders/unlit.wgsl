// Unlit materials: UI-in-world, emissive signage, particles-on-meshes, debug overlays.
//
// Entry points
//   fs_unlit  textured and/or vertex-coloured, with the material's alpha mode
//   fs_solid  one flat colour from the material uniform (wireframes, selection outlines)
//
// Specialization
//   @id(0) ALPHA_CUTOFF, @id(1) ALPHA_MODE (0 opaque, 1 mask, 2 blend: premultiplied output)
//   USE_TEXTURE, USE_VERTEX_COLOR
//   BRIGHTNESS   HDR multiplier for emissive-looking unlit surfaces

struct UnlitMaterial {
    color: vec4<f32>,
    uv_transform: vec4<f32>,
};

@group(2) @binding(0) var<uniform> material: UnlitMaterial;
@group(2) @binding(1) var color_texture: texture_2d<f32>;
@group(2) @binding(2) var color_sampler: sampler;

@id(0) override ALPHA_CUTOFF: f32 = 0.5;
@id(1) override ALPHA_MODE: u32 = 0u;
override USE_TEXTURE: bool = true;
override USE_VERTEX_COLOR: bool = false;
override BRIGHTNESS: f32 = 1.0;

struct FragmentInput {
    @builtin(position) frag_coord: vec4<f32>,
    @location(2) uv: vec2<f32>,
    @location(4) color: vec4<f32>,
};

@fragment
fn fs_unlit(in: FragmentInput) -> @location(0) vec4<f32> {
    var color = material.color;
    if USE_TEXTURE {
        let uv = in.uv * material.uv_transform.zw + material.uv_transform.xy;
        color = color * textureSample(color_texture, color_sampler, uv);
    }
    if USE_VERTEX_COLOR {
        color = color * in.color;
    }
    if ALPHA_MODE == 1u && color.a < ALPHA_CUTOFF {
        discard;
    }
    let rgb = color.rgb * BRIGHTNESS;
    if ALPHA_MODE == 2u {
        return vec4<f32>(rgb * color.a, color.a);
    }
    return vec4<f32>(rgb, 1.0);
}

@fragment
fn fs_solid() -> @location(0) vec4<f32> {
    return vec4<f32>(material.color.rgb * BRIGHTNESS, material.color.a);
}
