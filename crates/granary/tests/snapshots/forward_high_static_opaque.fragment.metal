// language: metal2.4
#include <metal_stdlib>
#include <simd/simd.h>

using metal::uint;

struct View {
    metal::float4x4 view_proj;
    metal::float4x4 inverse_view_proj;
    metal::float4x4 view;
    metal::packed_float3 camera_position;
    float time;
    metal::float2 viewport_size;
    float near;
    float far;
};
struct Light {
    metal::packed_float3 position;
    float range;
    metal::packed_float3 direction;
    uint kind;
    metal::packed_float3 color;
    float intensity;
    float spot_scale;
    float spot_offset;
    int shadow_index;
    float _pad;
};
struct type_6 {
    Light inner[16];
};
struct type_8 {
    metal::float4x4 inner[4];
};
struct Lights {
    type_6 items;
    uint count;
    float ambient_intensity;
    float shadow_bias;
    float shadow_normal_bias;
    metal::float4 ambient_color;
    metal::float4 cascade_splits;
    type_8 cascade_view_proj;
};
struct Material {
    metal::float4 base_color_factor;
    metal::packed_float3 emissive_factor;
    float metallic_factor;
    float roughness_factor;
    float normal_scale;
    float occlusion_strength;
    float emissive_strength;
};
struct FragmentInput {
    metal::float4 frag_coord;
    bool front_facing;
    char _pad2[15];
    metal::float3 world_position;
    metal::float3 world_normal;
    metal::float2 uv;
    char _pad5[8];
    metal::float4 world_tangent;
    metal::float4 color;
};
struct Surface {
    metal::float4 base_color;
    metal::packed_float3 normal;
    float metallic;
    float roughness;
    float occlusion;
    char _pad5[8];
    metal::float3 emissive;
};
constant float PI = 3.1415927;
constant uint MAX_LIGHTS = 16u;
constant uint MAX_CASCADES = 4u;
constant uint ALPHA_OPAQUE = 0u;
constant uint ALPHA_MASK = 1u;
constant uint ALPHA_BLEND = 2u;
constant uint LIGHT_DIRECTIONAL = 0u;
constant uint LIGHT_POINT = 1u;
constant uint LIGHT_SPOT = 2u;
constant float ALPHA_CUTOFF = 0.5;
constant uint ALPHA_MODE = 0u;
constant bool USE_NORMAL_MAP = false;
constant bool USE_METALLIC_ROUGHNESS_MAP = true;
constant bool USE_OCCLUSION_MAP = false;
constant bool USE_EMISSIVE_MAP = false;
constant bool USE_VERTEX_COLOR = false;
constant bool DOUBLE_SIDED = false;
constant uint LIGHT_COUNT = 16u;
constant bool RECEIVE_SHADOWS = true;
constant uint SHADOW_CASCADES = 4u;
constant int SHADOW_PCF_RADIUS = 1;
constant bool USE_IBL = true;
constant float ENV_MIP_COUNT = 9.0;

Surface sample_surface(
    FragmentInput in_1,
    constant Material& material,
    metal::texture2d<float, metal::access::sample> base_color_texture,
    metal::sampler base_color_sampler,
    metal::texture2d<float, metal::access::sample> normal_texture,
    metal::texture2d<float, metal::access::sample> metallic_roughness_texture,
    metal::texture2d<float, metal::access::sample> occlusion_texture,
    metal::texture2d<float, metal::access::sample> emissive_texture,
    metal::sampler material_sampler
) {
    Surface s = {};
    metal::float3 n = {};
    metal::float3 t = {};
    bool local = {};
    metal::float4 _e5 = material.base_color_factor;
    metal::float4 _e9 = base_color_texture.sample(base_color_sampler, in_1.uv);
    s.base_color = _e5 * _e9;
    if (USE_VERTEX_COLOR) {
        metal::float4 _e14 = s.base_color;
        s.base_color = _e14 * in_1.color;
    }
    n = metal::normalize(in_1.world_normal);
    t = in_1.world_tangent.xyz;
    if (DOUBLE_SIDED) {
        local = !(in_1.front_facing);
    } else {
        local = false;
    }
    bool _e29 = local;
    if (_e29) {
        metal::float3 _e30 = n;
        n = -(_e30);
        metal::float3 _e32 = t;
        t = -(_e32);
    }
    if (USE_NORMAL_MAP) {
        metal::float4 _e38 = normal_texture.sample(material_sampler, in_1.uv);
        metal::float3 tn = (_e38.xyz * 2.0) - metal::float3(1.0);
        float _e48 = material.normal_scale;
        metal::float3 scaled = metal::float3(tn.xy * _e48, tn.z);
        metal::float3 _e52 = t;
        metal::float3 _e53 = n;
        metal::float3 _e54 = n;
        metal::float3 _e55 = t;
        metal::float3 tangent = metal::normalize(_e52 - (_e53 * metal::dot(_e54, _e55)));
        metal::float3 _e60 = n;
        metal::float3 bitangent = metal::cross(_e60, tangent) * in_1.world_tangent.w;
        metal::float3 _e65 = n;
        n = metal::normalize(metal::float3x3(tangent, bitangent, _e65) * scaled);
    }
    metal::float3 _e70 = n;
    s.normal = _e70;
    float _e74 = material.metallic_factor;
    s.metallic = _e74;
    float _e78 = material.roughness_factor;
    s.roughness = _e78;
    if (USE_METALLIC_ROUGHNESS_MAP) {
        metal::float4 mr = metallic_roughness_texture.sample(material_sampler, in_1.uv);
        float _e86 = s.metallic;
        s.metallic = _e86 * mr.z;
        float _e91 = s.roughness;
        s.roughness = _e91 * mr.y;
    }
    float _e96 = s.roughness;
    s.roughness = metal::clamp(_e96, 0.045, 1.0);
    s.occlusion = 1.0;
    if (USE_OCCLUSION_MAP) {
        metal::float4 _e106 = occlusion_texture.sample(material_sampler, in_1.uv);
        float ao = _e106.x;
        float _e111 = material.occlusion_strength;
        s.occlusion = metal::mix(1.0, ao, _e111);
    }
    metal::float3 _e117 = material.emissive_factor;
    float _e120 = material.emissive_strength;
    s.emissive = _e117 * _e120;
    if (USE_EMISSIVE_MAP) {
        metal::float3 _e125 = s.emissive;
        metal::float4 _e129 = emissive_texture.sample(material_sampler, in_1.uv);
        s.emissive = _e125 * _e129.xyz;
    }
    Surface _e132 = s;
    return _e132;
}

void alpha_test(
    float alpha
) {
    bool local_1 = {};
    if (false) {
        local_1 = alpha < ALPHA_CUTOFF;
    } else {
        local_1 = false;
    }
    bool _e11 = local_1;
    if (_e11) {
        metal::discard_fragment();
    } else {
        return;
    }
}

float d_ggx(
    float n_dot_h,
    float roughness
) {
    float a = roughness * roughness;
    float a2_ = a * a;
    float d = ((n_dot_h * n_dot_h) * (a2_ - 1.0)) + 1.0;
    return a2_ / ((PI * d) * d);
}

float v_smith_ggx_correlated(
    float n_dot_v,
    float n_dot_l,
    float roughness_1
) {
    float a2_1 = metal::pow(roughness_1, 4.0);
    float gv = n_dot_l * metal::sqrt(((n_dot_v * n_dot_v) * (1.0 - a2_1)) + a2_1);
    float gl = n_dot_v * metal::sqrt(((n_dot_l * n_dot_l) * (1.0 - a2_1)) + a2_1);
    return 0.5 / metal::max(gv + gl, 0.00001);
}

metal::float3 f_schlick(
    float cos_theta,
    metal::float3 f0_
) {
    return f0_ + ((metal::float3(1.0) - f0_) * metal::pow(1.0 - cos_theta, 5.0));
}

float range_attenuation(
    float distance,
    float range
) {
    if (range <= 0.0) {
        return 1.0 / metal::max(distance * distance, 0.0001);
    }
    float ratio = distance / range;
    float falloff = metal::clamp(1.0 - (((ratio * ratio) * ratio) * ratio), 0.0, 1.0);
    return (falloff * falloff) / metal::max(distance * distance, 0.0001);
}

float cascade_shadow(
    metal::float3 world_position,
    metal::float3 normal,
    metal::float3 l,
    constant View& view,
    constant Lights& lights,
    metal::depth2d_array<float, metal::access::sample> shadow_map,
    metal::sampler shadow_sampler
) {
    uint cascade = 0u;
    uint c = 0u;
    bool local_2 = {};
    bool local_3 = {};
    float lit = 0.0;
    float taps = 0.0;
    int y = -1;
    int x = {};
    metal::float4x4 _e11 = view.view;
    float view_depth = -((_e11 * metal::float4(world_position, 1.0)).z);
    uint2 loop_bound = uint2(4294967295u);
    bool loop_init = true;
    while(true) {
        if (metal::all(loop_bound == uint2(0u))) { break; }
        loop_bound -= uint2(loop_bound.y == 0u, 1u);
        if (!loop_init) {
            uint _e35 = c;
            c = _e35 + 1u;
        }
        loop_init = false;
        uint _e21 = c;
        if ((_e21 + 1u) < 4u) {
        } else {
            break;
        }
        {
            uint _e27 = c;
            float _e29 = lights.cascade_splits[_e27];
            if (view_depth > _e29) {
                uint _e31 = c;
                cascade = _e31 + 1u;
            }
        }
    }
    float _e39 = lights.shadow_normal_bias;
    metal::float3 offset = (normal * _e39) * (1.0 - metal::max(metal::dot(normal, l), 0.0));
    uint _e49 = cascade;
    metal::float4x4 _e51 = lights.cascade_view_proj.inner[_e49];
    metal::float4 clip = _e51 * metal::float4(world_position + offset, 1.0);
    metal::float3 ndc = clip.xyz / metal::float3(clip.w);
    metal::float2 uv = (ndc.xy * metal::float2(0.5, -0.5)) + metal::float2(0.5);
    if (!(metal::any(uv < metal::float2(0.0)))) {
        local_2 = metal::any(uv > metal::float2(1.0));
    } else {
        local_2 = true;
    }
    bool _e80 = local_2;
    if (!(_e80)) {
        local_3 = ndc.z > 1.0;
    } else {
        local_3 = true;
    }
    bool _e88 = local_3;
    if (_e88) {
        return 1.0;
    }
    metal::float2 texel = metal::float2(1.0) / static_cast<metal::float2>(metal::uint2(shadow_map.get_width(), shadow_map.get_height()));
    float _e99 = lights.shadow_bias;
    float depth = ndc.z - _e99;
    uint2 loop_bound_1 = uint2(4294967295u);
    bool loop_init_1 = true;
    while(true) {
        if (metal::all(loop_bound_1 == uint2(0u))) { break; }
        loop_bound_1 -= uint2(loop_bound_1.y == 0u, 1u);
        if (!loop_init_1) {
            int _e140 = y;
            y = as_type<int>(as_type<uint>(_e140) + as_type<uint>(1));
        }
        loop_init_1 = false;
        int _e109 = y;
        if (_e109 <= SHADOW_PCF_RADIUS) {
        } else {
            break;
        }
        {
            x = -1;
            uint2 loop_bound_2 = uint2(4294967295u);
            bool loop_init_2 = true;
            while(true) {
                if (metal::all(loop_bound_2 == uint2(0u))) { break; }
                loop_bound_2 -= uint2(loop_bound_2.y == 0u, 1u);
                if (!loop_init_2) {
                    int _e137 = x;
                    x = as_type<int>(as_type<uint>(_e137) + as_type<uint>(1));
                }
                loop_init_2 = false;
                int _e116 = x;
                if (_e116 <= SHADOW_PCF_RADIUS) {
                } else {
                    break;
                }
                {
                    int _e119 = x;
                    int _e121 = y;
                    metal::float2 p = uv + (metal::float2(static_cast<float>(_e119), static_cast<float>(_e121)) * texel);
                    float _e126 = lit;
                    uint _e129 = cascade;
                    float _e131 = shadow_map.sample_compare(shadow_sampler, p, static_cast<int>(_e129), depth);
                    lit = _e126 + _e131;
                    float _e133 = taps;
                    taps = _e133 + 1.0;
                }
            }
        }
    }
    float _e142 = lit;
    float _e143 = taps;
    return _e142 / _e143;
}

metal::float3 punctual_light(
    Light light,
    Surface s_1,
    metal::float3 world_position_1,
    metal::float3 v,
    metal::float3 f0_1,
    constant View& view,
    constant Lights& lights,
    metal::depth2d_array<float, metal::access::sample> shadow_map,
    metal::sampler shadow_sampler
) {
    metal::float3 l_1 = {};
    float attenuation = 1.0;
    bool local_4 = {};
    bool local_5 = {};
    if (light.kind == LIGHT_DIRECTIONAL) {
        l_1 = -(metal::normalize(light.direction));
        if (RECEIVE_SHADOWS) {
            local_4 = light.shadow_index >= 0;
        } else {
            local_4 = false;
        }
        bool _e21 = local_4;
        if (_e21) {
            metal::float3 _e23 = l_1;
            float _e24 = cascade_shadow(world_position_1, s_1.normal, _e23, view, lights, shadow_map, shadow_sampler);
            attenuation = _e24;
        }
    } else {
        metal::float3 to_light = light.position - world_position_1;
        float distance_1 = metal::length(to_light);
        l_1 = to_light / metal::float3(metal::max(distance_1, 0.0001));
        float _e33 = range_attenuation(distance_1, light.range);
        attenuation = _e33;
        if (light.kind == LIGHT_SPOT) {
            metal::float3 _e39 = l_1;
            float cd = metal::dot(metal::normalize(light.direction), -(_e39));
            float spot = metal::clamp((cd * light.spot_scale) + light.spot_offset, 0.0, 1.0);
            float _e49 = attenuation;
            attenuation = (_e49 * spot) * spot;
        }
    }
    metal::float3 _e53 = l_1;
    float n_dot_l_1 = metal::max(metal::dot(s_1.normal, _e53), 0.0);
    if (!((n_dot_l_1 <= 0.0))) {
        float _e62 = attenuation;
        local_5 = _e62 <= 0.0;
    } else {
        local_5 = true;
    }
    bool _e66 = local_5;
    if (_e66) {
        return metal::float3(0.0);
    }
    metal::float3 _e69 = l_1;
    metal::float3 h = metal::normalize(_e69 + v);
    float n_dot_v_1 = metal::max(metal::dot(s_1.normal, v), 0.0001);
    float n_dot_h_1 = metal::max(metal::dot(s_1.normal, h), 0.0);
    float v_dot_h = metal::max(metal::dot(v, h), 0.0);
    metal::float3 _e83 = f_schlick(v_dot_h, f0_1);
    float _e85 = d_ggx(n_dot_h_1, s_1.roughness);
    float _e88 = v_smith_ggx_correlated(n_dot_v_1, n_dot_l_1, s_1.roughness);
    metal::float3 specular = (_e83 * _e85) * _e88;
    metal::float3 diffuse = (((metal::float3(1.0) - _e83) * (1.0 - s_1.metallic)) * s_1.base_color.xyz) / metal::float3(3.1415927);
    float _e108 = attenuation;
    return ((((diffuse + specular) * light.color) * light.intensity) * _e108) * n_dot_l_1;
}

metal::float3 ambient(
    Surface s_2,
    metal::float3 v_1,
    metal::float3 f0_2,
    constant Lights& lights,
    metal::texturecube<float, metal::access::sample> env_specular,
    metal::texturecube<float, metal::access::sample> env_irradiance,
    metal::texture2d<float, metal::access::sample> env_brdf_lut,
    metal::sampler env_sampler
) {
    float n_dot_v_2 = metal::max(metal::dot(s_2.normal, v_1), 0.0001);
    if (USE_IBL) {
        metal::float3 r = metal::reflect(-(v_1), s_2.normal);
        float lod = s_2.roughness * 8.0;
        metal::float4 _e19 = env_specular.sample(env_sampler, r, metal::level(lod));
        metal::float3 prefiltered = _e19.xyz;
        metal::float4 _e25 = env_irradiance.sample(env_sampler, s_2.normal, metal::level(0.0));
        metal::float3 irradiance = _e25.xyz;
        metal::float4 _e32 = env_brdf_lut.sample(env_sampler, metal::float2(n_dot_v_2, s_2.roughness), metal::level(0.0));
        metal::float2 brdf = _e32.xy;
        metal::float3 specular_1 = prefiltered * ((f0_2 * brdf.x) + metal::float3(brdf.y));
        metal::float3 diffuse_1 = (irradiance * s_2.base_color.xyz) * (1.0 - s_2.metallic);
        float _e50 = lights.ambient_intensity;
        return ((diffuse_1 + specular_1) * _e50) * s_2.occlusion;
    }
    metal::float4 _e56 = lights.ambient_color;
    metal::float3 sky = _e56.xyz * (0.5 + (0.5 * s_2.normal[1]));
    float _e76 = lights.ambient_intensity;
    return (((sky * s_2.base_color.xyz) * (1.0 - (0.5 * s_2.metallic))) * _e76) * s_2.occlusion;
}

struct fs_mainInput {
    metal::float3 world_position_2 [[user(loc0), center_perspective]];
    metal::float3 world_normal [[user(loc1), center_perspective]];
    metal::float2 uv [[user(loc2), center_perspective]];
    metal::float4 world_tangent [[user(loc3), center_perspective]];
    metal::float4 color_1 [[user(loc4), center_perspective]];
};
struct fs_mainOutput {
    metal::float4 member [[color(0)]];
};
fragment fs_mainOutput fs_main(
  fs_mainInput varyings [[stage_in]]
, metal::float4 frag_coord [[position]]
, bool front_facing [[front_facing]]
, constant View& view [[buffer(0)]]
, constant Lights& lights [[buffer(1)]]
, metal::depth2d_array<float, metal::access::sample> shadow_map [[texture(0)]]
, metal::sampler shadow_sampler [[sampler(0)]]
, metal::texturecube<float, metal::access::sample> env_specular [[texture(1)]]
, metal::texturecube<float, metal::access::sample> env_irradiance [[texture(2)]]
, metal::texture2d<float, metal::access::sample> env_brdf_lut [[texture(3)]]
, metal::sampler env_sampler [[sampler(1)]]
, constant Material& material [[buffer(2)]]
, metal::texture2d<float, metal::access::sample> base_color_texture [[texture(4)]]
, metal::sampler base_color_sampler [[sampler(2)]]
, metal::texture2d<float, metal::access::sample> normal_texture [[texture(5)]]
, metal::texture2d<float, metal::access::sample> metallic_roughness_texture [[texture(6)]]
, metal::texture2d<float, metal::access::sample> occlusion_texture [[texture(7)]]
, metal::texture2d<float, metal::access::sample> emissive_texture [[texture(8)]]
, metal::sampler material_sampler [[sampler(3)]]
) {
    const FragmentInput in = { frag_coord, front_facing, {}, varyings.world_position_2, varyings.world_normal, varyings.uv, {}, varyings.world_tangent, varyings.color_1 };
    metal::float3 color = {};
    uint i = 0u;
    Surface _e1 = sample_surface(in, material, base_color_texture, base_color_sampler, normal_texture, metallic_roughness_texture, occlusion_texture, emissive_texture, material_sampler);
    alpha_test(_e1.base_color.w);
    metal::float3 _e6 = view.camera_position;
    metal::float3 v_2 = metal::normalize(_e6 - in.world_position);
    metal::float3 f0_3 = metal::mix(metal::float3(0.04), _e1.base_color.xyz, _e1.metallic);
    metal::float3 _e17 = ambient(_e1, v_2, f0_3, lights, env_specular, env_irradiance, env_brdf_lut, env_sampler);
    color = _e1.emissive + _e17;
    uint _e27 = lights.count;
    uint light_count = metal::min(16u, _e27);
    uint2 loop_bound_3 = uint2(4294967295u);
    bool loop_init_3 = true;
    while(true) {
        if (metal::all(loop_bound_3 == uint2(0u))) { break; }
        loop_bound_3 -= uint2(loop_bound_3.y == 0u, 1u);
        if (!loop_init_3) {
            uint _e43 = i;
            i = _e43 + 1u;
        }
        loop_init_3 = false;
        uint _e31 = i;
        if (_e31 < light_count) {
        } else {
            break;
        }
        {
            metal::float3 _e33 = color;
            uint _e36 = i;
            Light _e38 = lights.items.inner[_e36];
            metal::float3 _e40 = punctual_light(_e38, _e1, in.world_position, v_2, f0_3, view, lights, shadow_map, shadow_sampler);
            color = _e33 + _e40;
        }
    }
    if (false) {
        metal::float3 _e50 = color;
        return fs_mainOutput { metal::float4(_e50 * _e1.base_color.w, _e1.base_color.w) };
    }
    metal::float3 _e57 = color;
    return fs_mainOutput { metal::float4(_e57, 1.0) };
}
