// Forward+ light culling: one workgroup per screen tile finds the tile's depth range from the
// depth prepass, tests every light's bounding sphere against the tile, and appends the indices
// of the lights that touch it to a global list.
//
// Entry point
//   cs_cull_lights  @workgroup_size(TILE_SIZE, TILE_SIZE, 1)
//
// Specialization
//   TILE_SIZE              tile edge in pixels (8 or 16)
//   MAX_LIGHTS_PER_TILE    capacity of the per-tile list (sizes a workgroup array)
//   REVERSED_Z             depth buffer convention

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

struct CullLight {
    position: vec3<f32>,
    radius: f32,
};

struct CullParams {
    light_count: u32,
    tiles_x: u32,
    tiles_y: u32,
    _pad: u32,
};

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<uniform> params: CullParams;
@group(0) @binding(2) var<storage, read> cull_lights: array<CullLight>;
// The depth prepass result, bound as an unfilterable-float view (textureLoad of depth
// textures has no GLSL equivalent).
@group(0) @binding(3) var depth_texture: texture_2d<f32>;
@group(0) @binding(4) var<storage, read_write> light_grid: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> light_index_list: array<u32>;
@group(0) @binding(6) var<storage, read_write> light_index_counter: atomic<u32>;

override TILE_SIZE: u32 = 16u;
override MAX_LIGHTS_PER_TILE: u32 = 128u;
override REVERSED_Z: bool = true;

var<workgroup> tile_min_depth: atomic<u32>;
var<workgroup> tile_max_depth: atomic<u32>;
var<workgroup> tile_light_count: atomic<u32>;
var<workgroup> tile_list_offset: u32;
var<workgroup> tile_lights: array<u32, MAX_LIGHTS_PER_TILE>;

fn world_from_ndc(ndc: vec3<f32>) -> vec3<f32> {
    let p = view.inverse_view_proj * vec4<f32>(ndc, 1.0);
    return p.xyz / p.w;
}

@compute @workgroup_size(TILE_SIZE, TILE_SIZE, 1)
fn cs_cull_lights(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) tile: vec3<u32>,
    @builtin(local_invocation_index) index: u32,
) {
    if index == 0u {
        atomicStore(&tile_min_depth, 0x7f7fffffu);
        atomicStore(&tile_max_depth, 0u);
        atomicStore(&tile_light_count, 0u);
    }
    workgroupBarrier();

    let size = textureDimensions(depth_texture);
    if all(gid.xy < size) {
        var depth = textureLoad(depth_texture, vec2<i32>(gid.xy), 0).r;
        if REVERSED_Z {
            depth = 1.0 - depth;
        }
        // Non-negative floats order like their bit patterns.
        atomicMin(&tile_min_depth, bitcast<u32>(depth));
        atomicMax(&tile_max_depth, bitcast<u32>(depth));
    }
    workgroupBarrier();

    var min_depth = bitcast<f32>(atomicLoad(&tile_min_depth));
    var max_depth = bitcast<f32>(atomicLoad(&tile_max_depth));
    if REVERSED_Z {
        let t = min_depth;
        min_depth = 1.0 - max_depth;
        max_depth = 1.0 - t;
    }

    // The tile's corners in NDC and its bounding sphere in world space.
    let tile_min = vec2<f32>(tile.xy * TILE_SIZE) / view.viewport_size;
    let tile_max = vec2<f32>((tile.xy + vec2<u32>(1u)) * TILE_SIZE) / view.viewport_size;
    let ndc_min = vec2<f32>(tile_min.x * 2.0 - 1.0, 1.0 - tile_max.y * 2.0);
    let ndc_max = vec2<f32>(tile_max.x * 2.0 - 1.0, 1.0 - tile_min.y * 2.0);
    let near_a = world_from_ndc(vec3<f32>(ndc_min, min_depth));
    let near_b = world_from_ndc(vec3<f32>(ndc_max, min_depth));
    let far_a = world_from_ndc(vec3<f32>(ndc_min, max_depth));
    let far_b = world_from_ndc(vec3<f32>(ndc_max, max_depth));
    let lo = min(min(near_a, near_b), min(far_a, far_b));
    let hi = max(max(near_a, near_b), max(far_a, far_b));

    let threads = TILE_SIZE * TILE_SIZE;
    for (var i = index; i < params.light_count; i += threads) {
        let light = cull_lights[i];
        let closest = clamp(light.position, lo, hi);
        let d = closest - light.position;
        if dot(d, d) <= light.radius * light.radius {
            let slot = atomicAdd(&tile_light_count, 1u);
            if slot < MAX_LIGHTS_PER_TILE {
                tile_lights[slot] = i;
            }
        }
    }
    workgroupBarrier();

    let count = min(atomicLoad(&tile_light_count), MAX_LIGHTS_PER_TILE);
    if index == 0u {
        tile_list_offset = atomicAdd(&light_index_counter, count);
        light_grid[tile.y * params.tiles_x + tile.x] = vec2<u32>(tile_list_offset, count);
    }
    workgroupBarrier();

    let offset = tile_list_offset;
    for (var i = index; i < count; i += threads) {
        light_index_list[offset + i] = tile_lights[i];
    }
}
