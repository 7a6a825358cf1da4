#!/usr/bin/env python3
"""Generates examples/renderer/pipelines.json: the pipelines of a small forward+/deferred
renderer, laid out the way a real engine's pipeline list looks.

- Colour passes iterate vertex path by vertex path, and within a path over every material
  permutation of both quality tiers, so long runs of consecutive pipelines share one vertex
  function while the fragment function changes with each material.
- Materials are permutations of the PBR library's specialization constants (texture maps,
  alpha mode, double-sidedness, vertex colour) times a quality tier (light count, shadow
  cascades and filtering, image-based lighting, MSAA).
- Depth prepass and shadow pipelines use the depth-only vertex functions, most with no
  fragment stage; alpha-tested casters add a small fragment stage.
- Full-screen post passes and a handful of compute pipelines close the frame.

Deterministic: no randomness, no clocks, no environment; the output depends only on this file.
Standard library only. Run it from anywhere:

    python3 examples/renderer/gen_pipelines.py
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "pipelines.json")

LIBRARIES = [
    ("mesh_static", "shaders/mesh_static.wgsl"),
    ("mesh_skinned", "shaders/mesh_skinned.wgsl"),
    ("mesh_instanced", "shaders/mesh_instanced.wgsl"),
    ("pbr", "shaders/pbr.wgsl"),
    ("unlit", "shaders/unlit.wgsl"),
    ("shadow", "shaders/shadow.wgsl"),
    ("fullscreen", "shaders/fullscreen.wgsl"),
    ("postprocess", "shaders/postprocess.wgsl"),
    ("light_cull", "shaders/light_cull.wgsl"),
]

# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def const(key, ty, value):
    """One specialization constant; `key` is an override name (str) or an @id (int)."""
    c = {"id": key} if isinstance(key, int) else {"name": key}
    c[ty] = value
    return c


def function(library, entry, constants=None, name=None):
    """A stage function: plain, or specialized when `constants` is given (even if empty)."""
    base = {"library": library, "function": entry}
    if constants is None:
        return base
    f = {"specialize": base, "constants": constants}
    if name:
        f["name"] = name
    return f


def attr(location, fmt, offset):
    return {"location": location, "format": fmt, "offset": offset}


def buffer(stride, attributes, step="vertex"):
    return {"stride": stride, "step": step, "attributes": attributes}


def primitive(cull="back", topology="triangle-list", front_face="ccw"):
    return {"topology": topology, "cull": cull, "front_face": front_face}


UNSPECIALIZED = {"format": "unspecialized", "blend": "unspecialized", "write_mask": "unspecialized"}

PREMULTIPLIED = {
    "color": {"src": "one", "dst": "one-minus-src-alpha", "op": "add"},
    "alpha": {"src": "one", "dst": "one-minus-src-alpha", "op": "add"},
}
ADDITIVE = {
    "color": {"src": "one", "dst": "one", "op": "add"},
    "alpha": {"src": "zero", "dst": "one", "op": "add"},
}
STRAIGHT_ALPHA = {
    "color": {"src": "src-alpha", "dst": "one-minus-src-alpha", "op": "add"},
    "alpha": {"src": "one", "dst": "one-minus-src-alpha", "op": "add"},
}

# Main view: reversed-Z depth. The depth prepass writes with `greater`; opaque and masked
# colour passes then test `equal` without writing; transparent ones test `greater`.
MAIN_DEPTH = "depth32float"


def depth(fmt, write, compare, bias=0, slope=0.0, clamp=0.0, stencil=None):
    d = {"format": fmt, "depth_write": write, "depth_compare": compare}
    if stencil is not None:
        d["stencil"] = stencil
    if bias or slope or clamp:
        d["depth_bias"] = bias
        d["depth_bias_slope_scale"] = slope
        d["depth_bias_clamp"] = clamp
    return d


# --------------------------------------------------------------------------------------------
# Vertex layouts
# --------------------------------------------------------------------------------------------

# position f32x3, normal f32x3, uv f32x2, tangent f32x4 — 48 bytes
STANDARD = [
    attr(0, "float32x3", 0),
    attr(1, "float32x3", 12),
    attr(2, "float32x2", 24),
    attr(3, "float32x4", 32),
]
# position f32x3, normal snorm8x4, uv f16x2, tangent snorm8x4 — 24 bytes
PACKED = [
    attr(0, "float32x3", 0),
    attr(1, "snorm8x4", 12),
    attr(2, "float16x2", 16),
    attr(3, "snorm8x4", 20),
]
INSTANCE_BUFFER = buffer(
    68,
    [attr(5, "float32x4", 0), attr(6, "float32x4", 16), attr(7, "float32x4", 32),
     attr(8, "float32x4", 48), attr(9, "unorm8x4", 64)],
    step="instance",
)


def pick(attributes, locations):
    return [a for a in attributes if a["location"] in locations]


class Layout:
    """A mesh vertex layout and the attribute subsets its depth-only passes fetch."""

    def __init__(self, stride, attributes, extra_buffers=(), skin_locations=()):
        self.stride = stride
        self.attributes = attributes
        self.extra = list(extra_buffers)
        self.skin = set(skin_locations)

    def full(self):
        return [buffer(self.stride, self.attributes)] + self.extra

    def depth(self):
        return [buffer(self.stride, pick(self.attributes, {0} | self.skin))] + self.extra

    def depth_uv(self):
        return [buffer(self.stride, pick(self.attributes, {0, 2} | self.skin))] + self.extra


LAYOUT_STANDARD = Layout(48, STANDARD)
LAYOUT_PACKED = Layout(24, PACKED)
LAYOUT_COLORED = Layout(52, STANDARD + [attr(4, "unorm8x4", 48)])
# joints uint8x4, weights unorm8x4 — 56 bytes
LAYOUT_SKINNED = Layout(56, STANDARD + [attr(4, "uint8x4", 48), attr(5, "unorm8x4", 52)], skin_locations=(4, 5))
# joints uint16x4, weights float32x4 — 72 bytes
LAYOUT_SKINNED_HQ = Layout(72, STANDARD + [attr(4, "uint16x4", 48), attr(5, "float32x4", 56)], skin_locations=(4, 5))
LAYOUT_INSTANCED = Layout(48, STANDARD, extra_buffers=[INSTANCE_BUFFER])

# --------------------------------------------------------------------------------------------
# Vertex paths: a vertex library, its specialization, a layout, and which material families
# the engine draws with it.
# --------------------------------------------------------------------------------------------


class VertexPath:
    def __init__(self, name, library, layout, constants=None, color_entry="vs_main", tag=""):
        self.name = name
        self.library = library
        self.layout = layout
        self.constants = constants  # None: plain functions
        self.color_entry = color_entry
        self.tag = tag

    def _fn(self, entry, extra=()):
        consts = list(self.constants or []) + list(extra)
        if not consts:
            return function(self.library, entry)
        suffix = self.tag + ("_pancake" if extra else "")
        return function(self.library, entry, consts, name=f"{entry}_{suffix.strip('_')}")

    def color(self):
        return self._fn(self.color_entry)

    def depth(self, pancake=False):
        return self._fn("vs_depth", [const("DEPTH_PANCAKE", "bool", True)] if pancake else [])

    def depth_uv(self, pancake=False):
        return self._fn("vs_depth_uv", [const("DEPTH_PANCAKE", "bool", True)] if pancake else [])


WIND = [const(1, "f32", 0.08), const("WIND_FREQUENCY", "f32", 1.7)]

PATHS = {
    "static": VertexPath("static", "mesh_static", LAYOUT_STANDARD),
    "static-packed": VertexPath("static-packed", "mesh_static", LAYOUT_PACKED),
    "static-vcolor": VertexPath("static-vcolor", "mesh_static", LAYOUT_COLORED, color_entry="vs_vertex_color"),
    "foliage": VertexPath("foliage", "mesh_static", LAYOUT_STANDARD, WIND, tag="wind"),
    "skinned": VertexPath(
        "skinned", "mesh_skinned", LAYOUT_SKINNED,
        [const("MAX_BONES", "u32", 128), const("NORMALIZE_WEIGHTS", "bool", True)], tag="b128"),
    "skinned-hq": VertexPath(
        "skinned-hq", "mesh_skinned", LAYOUT_SKINNED_HQ, [const("MAX_BONES", "u32", 256)], tag="b256"),
    "skinned-lod": VertexPath(
        "skinned-lod", "mesh_skinned", LAYOUT_SKINNED,
        [const("MAX_BONES", "u32", 128), const("NORMALIZE_WEIGHTS", "bool", True), const(1, "u32", 2)],
        tag="b128_lod"),
    "instanced": VertexPath("instanced", "mesh_instanced", LAYOUT_INSTANCED),
    "instanced-debris": VertexPath(
        "instanced-debris", "mesh_instanced", LAYOUT_INSTANCED,
        [const("NON_UNIFORM_SCALE", "bool", True), const("USE_INSTANCE_TINT", "bool", False)], tag="nus"),
    "instanced-grass": VertexPath(
        "instanced-grass", "mesh_instanced", LAYOUT_INSTANCED, [const(2, "f32", 120.0)], tag="fade"),
}

# --------------------------------------------------------------------------------------------
# Materials
# --------------------------------------------------------------------------------------------

ALPHA_MODES = {"opaque": 0, "mask": 1, "blend": 2}


class Material:
    def __init__(self, alpha, normal=False, occlusion=False, emissive=False, double_sided=False,
                 vertex_color=False, metallic_roughness=True, cutoff=0.5):
        self.alpha = alpha
        self.normal = normal
        self.occlusion = occlusion
        self.emissive = emissive
        self.double_sided = double_sided
        self.vertex_color = vertex_color
        self.metallic_roughness = metallic_roughness
        self.cutoff = cutoff

    def name(self):
        parts = [self.alpha]
        if self.alpha == "mask" and self.cutoff != 0.5:
            parts.append(f"c{int(round(self.cutoff * 100))}")
        for flag, tag in [(self.double_sided, "ds"), (self.normal, "nm"), (self.occlusion, "ao"),
                          (self.emissive, "em"), (self.vertex_color, "vc"), (not self.metallic_roughness, "nomr")]:
            if flag:
                parts.append(tag)
        return "+".join(parts)

    def constants(self):
        c = [const("ALPHA_MODE", "u32", ALPHA_MODES[self.alpha])]
        if self.alpha == "mask":
            c.append(const(0, "f32", self.cutoff))
        c += [
            const("USE_NORMAL_MAP", "bool", self.normal),
            const("USE_METALLIC_ROUGHNESS_MAP", "bool", self.metallic_roughness),
            const("USE_OCCLUSION_MAP", "bool", self.occlusion),
            const("USE_EMISSIVE_MAP", "bool", self.emissive),
            const("USE_VERTEX_COLOR", "bool", self.vertex_color),
            const("DOUBLE_SIDED", "bool", self.double_sided),
        ]
        return c


class Tier:
    def __init__(self, name, lights, cascades, pcf, ibl, samples):
        self.name = name
        self.lights = lights
        self.cascades = cascades
        self.pcf = pcf
        self.ibl = ibl
        self.samples = samples

    def constants(self):
        return [
            const("LIGHT_COUNT", "u32", self.lights),
            const("SHADOW_CASCADES", "u32", self.cascades),
            const("SHADOW_PCF_RADIUS", "i32", self.pcf),
            const("USE_IBL", "bool", self.ibl),
        ] + ([const("ENV_MIP_COUNT", "f32", 9.0)] if self.ibl else [])


TIERS = [
    Tier("low", lights=4, cascades=2, pcf=0, ibl=False, samples=1),
    Tier("high", lights=16, cascades=4, pcf=1, ibl=True, samples=4),
]


def combos(alphas, normal=(False, True), occlusion=(False, True), emissive=(False,), double_sided=(False,), **kw):
    out = []
    for a in alphas:
        for ds in double_sided:
            for n in normal:
                for o in occlusion:
                    for e in emissive:
                        out.append(Material(a, normal=n, occlusion=o, emissive=e, double_sided=ds, **kw))
    return out


# Which materials each vertex path is drawn with in the forward pass.
FORWARD_MATERIALS = {
    "static": combos(["opaque", "mask", "blend"], emissive=(False, True))
    + combos(["mask"], double_sided=(True,), emissive=(False, True)),
    "static-packed": combos(["opaque", "mask"]),
    "static-vcolor": combos(["opaque", "blend"], occlusion=(False,), vertex_color=True),
    "foliage": combos(["mask"], double_sided=(True,), cutoff=0.33),
    "skinned": combos(["opaque"], emissive=(False, True))
    + combos(["mask", "blend"], occlusion=(False,)),
    "skinned-hq": combos(["opaque"], normal=(True,), emissive=(False, True)),
    "skinned-lod": combos(["opaque"], normal=(False,), occlusion=(False,), emissive=(False, True)),
    "instanced": combos(["opaque", "mask"]) + combos(["mask"], double_sided=(True,)),
    "instanced-debris": combos(["opaque"]),
    "instanced-grass": combos(["mask"], occlusion=(False,), double_sided=(True,), vertex_color=True, cutoff=0.33)
    + combos(["blend"], occlusion=(False,), double_sided=(True,), vertex_color=True),
}

# Deferred path (G-buffer): opaque and masked only.
GBUFFER_MATERIALS = {
    "static": combos(["opaque", "mask"], emissive=(False, True)),
    "skinned": combos(["opaque"], emissive=(False, True)),
    "instanced": combos(["opaque", "mask"]),
}


def pbr_forward(material, tier):
    consts = material.constants() + tier.constants()
    return function("pbr", "fs_main", consts, name=f"fs_pbr[{material.name()}][{tier.name}]")


def pbr_gbuffer(material):
    return function("pbr", "fs_gbuffer", material.constants(), name=f"fs_gbuffer[{material.name()}]")


def alpha_test(cutoff=0.5, dithered=False):
    consts = [const(0, "f32", cutoff)]
    if dithered:
        consts.append(const("DITHERED", "bool", True))
    return function("shadow", "fs_alpha_test", consts,
                    name="fs_alpha_test_dithered" if dithered else f"fs_alpha_test_c{int(round(cutoff * 100))}")


# --------------------------------------------------------------------------------------------
# Pipelines
# --------------------------------------------------------------------------------------------

pipelines = []


def render(label, vertex, fragment, vertex_buffers, prim, colors, depth_stencil, samples=1, a2c=False):
    body = {"vertex": vertex}
    if fragment is not None:
        body["fragment"] = fragment
    if vertex_buffers:
        body["vertex_buffers"] = vertex_buffers
    body["primitive"] = prim
    if colors:
        body["color_attachments"] = colors
    if depth_stencil is not None:
        body["depth_stencil"] = depth_stencil
    body["sample_count"] = samples
    if a2c:
        body["alpha_to_coverage"] = True
    pipelines.append({"label": label, "render": body})


def compute(label, fn):
    pipelines.append({"label": label, "compute": {"function": fn}})


def needs_mask(materials):
    return sorted({(m.double_sided, m.cutoff) for m in materials if m.alpha == "mask"})


# 1. Depth prepass (per tier: the prepass matches the colour pass's sample count).
for tier in TIERS:
    for pname, path in PATHS.items():
        materials = FORWARD_MATERIALS[pname]
        if any(m.alpha == "opaque" for m in materials):
            render(f"prepass/{tier.name}/{pname}/opaque", path.depth(), None, path.layout.depth(),
                   primitive("back"), [], depth(MAIN_DEPTH, True, "greater"), tier.samples)
        for ds, cutoff in needs_mask(materials):
            label = f"prepass/{tier.name}/{pname}/mask" + ("+ds" if ds else "") + (f"+c{int(round(cutoff * 100))}" if cutoff != 0.5 else "")
            render(label, path.depth_uv(), alpha_test(cutoff), path.layout.depth_uv(),
                   primitive("none" if ds else "back"), [], depth(MAIN_DEPTH, True, "greater"), tier.samples)

# 2. Shadow maps: cascaded directional (pancaked, depth32float), spot (depth16unorm atlas),
#    point (cube faces, front-face culling).
SHADOW_KINDS = [
    ("directional", True, "depth32float", "back", 2, 1.5),
    ("spot", False, "depth16unorm", "back", 4, 2.0),
    ("point", False, "depth16unorm", "front", 1, 1.0),
]
for kind, pancake, fmt, cull, bias, slope in SHADOW_KINDS:
    for pname, path in PATHS.items():
        materials = FORWARD_MATERIALS[pname]
        ds_state = depth(fmt, True, "less-equal", bias=bias, slope=slope, clamp=0.01)
        if any(m.alpha == "opaque" for m in materials):
            render(f"shadow/{kind}/{pname}/opaque", path.depth(pancake), None, path.layout.depth(),
                   primitive(cull), [], ds_state)
        masks = needs_mask(materials)
        if masks:
            cutoff = masks[0][1]
            render(f"shadow/{kind}/{pname}/mask", path.depth_uv(pancake), alpha_test(cutoff),
                   path.layout.depth_uv(), primitive("none"), [], ds_state)
        if kind == "directional" and any(m.alpha == "blend" for m in materials):
            render(f"shadow/{kind}/{pname}/dithered", path.depth_uv(pancake), alpha_test(dithered=True),
                   path.layout.depth_uv(), primitive("none"), [], ds_state)

# Exponential variance shadow maps for the hero characters and large static geometry.
for pname in ["static", "skinned"]:
    path = PATHS[pname]
    for fmt, pos, neg in [("rgba16float", 5.54, 5.0), ("rgba32float", 40.0, 5.0)]:
        moments = function("shadow", "fs_shadow_moments",
                           [const("EVSM_POSITIVE_EXPONENT", "f32", pos), const("EVSM_NEGATIVE_EXPONENT", "f32", neg)],
                           name=f"fs_evsm_{fmt}")
        render(f"shadow/evsm-{fmt}/{pname}", path.depth(), moments, path.layout.depth(), primitive("back"),
               [{"format": fmt, "blend": "off", "write_mask": "rgba"}], depth("depth32float", True, "less-equal"))

# 3. Forward colour pass: one run per vertex path covering every material of both tiers.
for pname, path in PATHS.items():
    for tier in TIERS:
        for m in FORWARD_MATERIALS[pname]:
            cull = "none" if m.double_sided else "back"
            if m.alpha == "blend":
                color = {"format": "rgba16float", "blend": PREMULTIPLIED, "write_mask": "rgba"}
                ds_state = depth(MAIN_DEPTH, False, "greater")
            else:
                color = UNSPECIALIZED
                ds_state = depth(MAIN_DEPTH, False, "equal")
            a2c = m.alpha == "mask" and tier.samples > 1 and pname in ("foliage", "instanced-grass")
            render(f"forward/{tier.name}/{pname}/{m.name()}", path.color(), pbr_forward(m, tier),
                   path.layout.full(), primitive(cull), [color], ds_state, tier.samples, a2c)

# 4. Deferred G-buffer pass: four render targets, stencil marks lit pixels.
GBUFFER_STENCIL = {
    "front": {"compare": "always", "pass_op": "replace"},
    "back": {"compare": "always", "pass_op": "replace"},
    "read_mask": 255,
    "write_mask": 255,
}
for pname, materials in GBUFFER_MATERIALS.items():
    path = PATHS[pname]
    for m in materials:
        colors = [UNSPECIALIZED, UNSPECIALIZED, UNSPECIALIZED,
                  {"format": "unspecialized", "blend": "off", "write_mask": "rgb"}]
        render(f"gbuffer/{pname}/{m.name()}", path.color(), pbr_gbuffer(m), path.layout.full(),
               primitive("none" if m.double_sided else "back"), colors,
               depth("depth24plus-stencil8", True, "greater-equal", stencil=GBUFFER_STENCIL))

# 5. Unlit materials.
UNLIT_VARIANTS = [
    # (name, USE_TEXTURE, ALPHA_MODE, cutoff, brightness, blend)
    ("opaque+tex", True, 0, None, None, None),
    ("opaque", False, 0, None, None, None),
    ("mask+tex", True, 1, 0.5, None, None),
    ("blend+tex", True, 2, None, None, PREMULTIPLIED),
    ("blend", False, 2, None, None, PREMULTIPLIED),
    ("additive+tex", True, 2, None, 4.0, ADDITIVE),
    ("additive", False, 2, None, 4.0, ADDITIVE),
]
UNLIT_PATHS = {"static": UNLIT_VARIANTS, "static-vcolor": UNLIT_VARIANTS[:2] + UNLIT_VARIANTS[3:5],
               "instanced": UNLIT_VARIANTS[:1] + UNLIT_VARIANTS[3:4] + UNLIT_VARIANTS[5:6]}
for pname, variants in UNLIT_PATHS.items():
    path = PATHS[pname]
    vc = pname == "static-vcolor"
    for name, tex, mode, cutoff, brightness, blend in variants:
        consts = [const("ALPHA_MODE", "u32", mode), const("USE_TEXTURE", "bool", tex), const("USE_VERTEX_COLOR", "bool", vc)]
        if cutoff is not None:
            consts.append(const(0, "f32", cutoff))
        if brightness is not None:
            consts.append(const("BRIGHTNESS", "f32", brightness))
        frag = function("unlit", "fs_unlit", consts, name=f"fs_unlit[{name}{'+vc' if vc else ''}]")
        if blend is None:
            color, ds_state = UNSPECIALIZED, depth(MAIN_DEPTH, True, "greater")
        else:
            color, ds_state = {"format": "unspecialized", "blend": blend, "write_mask": "rgb"}, depth(MAIN_DEPTH, False, "greater")
        render(f"unlit/{pname}/{name}", path.color(), frag, path.layout.full(), primitive("back"), [color], ds_state)

# Debug and editor overlays: wireframes and selection outlines in one flat colour.
for pname in ["static", "skinned", "instanced"]:
    path = PATHS[pname]
    render(f"debug/wireframe/{pname}", path.color(), function("unlit", "fs_solid"), path.layout.full(),
           primitive("none", topology="line-list"), [{"format": "unspecialized", "blend": STRAIGHT_ALPHA, "write_mask": "rgba"}],
           depth(MAIN_DEPTH, False, "greater-equal"))
for pname in ["static", "skinned"]:
    path = PATHS[pname]
    render(f"debug/outline/{pname}", path.color(),
           function("unlit", "fs_solid", [const("BRIGHTNESS", "f32", 2.0)], name="fs_solid_bright"),
           path.layout.full(), primitive("front"), [UNSPECIALIZED], depth(MAIN_DEPTH, False, "always"))

# 6. Full-screen post passes (no vertex buffers, no depth).
FULLSCREEN = function("fullscreen", "vs_fullscreen")
TONEMAPS = {"reinhard": 1, "aces": 2, "uncharted2": 3}
SWAPCHAINS = [("bgra8unorm-srgb", False), ("bgra8unorm", True), ("rgba8unorm", True)]
for tname, op in TONEMAPS.items():
    for fmt, encode in SWAPCHAINS:
        frag = function("fullscreen", "fs_tonemap",
                        [const("TONEMAP", "u32", op), const("ENCODE_SRGB", "bool", encode)],
                        name=f"fs_tonemap[{tname}{'+srgb' if encode else ''}]")
        render(f"post/tonemap/{tname}/{fmt}", FULLSCREEN, frag, [], primitive("none"),
               [{"format": fmt, "blend": "off", "write_mask": "rgba"}], None)
for tname in ["clamp", "aces"]:
    frag = function("fullscreen", "fs_tonemap",
                    [const("TONEMAP", "u32", 0 if tname == "clamp" else 2), const("USE_BLOOM", "bool", False),
                     const("DITHER", "bool", False)],
                    name=f"fs_tonemap[{tname}+nobloom]")
    render(f"post/tonemap/{tname}-nobloom/unspecialized", FULLSCREEN, frag, [], primitive("none"), [UNSPECIALIZED], None)
for preset, threshold, steps in [("low", 0.166, 4), ("medium", 0.125, 8), ("high", 0.063, 12)]:
    frag = function("fullscreen", "fs_fxaa",
                    [const(0, "f32", threshold), const("FXAA_SEARCH_STEPS", "u32", steps)], name=f"fs_fxaa[{preset}]")
    render(f"post/fxaa/{preset}", FULLSCREEN, frag, [], primitive("none"), [UNSPECIALIZED], None)
render("post/blit/unspecialized", FULLSCREEN, function("fullscreen", "fs_blit"), [], primitive("none"), [UNSPECIALIZED], None)
render("post/blit/rgba16float", FULLSCREEN, function("fullscreen", "fs_blit"), [], primitive("none"),
       [{"format": "rgba16float", "blend": "off", "write_mask": "rgba"}], None)
render("post/blit/mip1", FULLSCREEN, function("fullscreen", "fs_blit", [const("BLIT_LOD", "f32", 1.0)], name="fs_blit_mip1"),
       [], primitive("none"), [UNSPECIALIZED], None)

# 7. Compute.
compute("compute/light-cull/16x16", function("light_cull", "cs_cull_lights"))
compute("compute/light-cull/8x8", function("light_cull", "cs_cull_lights",
                                           [const("TILE_SIZE", "u32", 8), const("MAX_LIGHTS_PER_TILE", "u32", 64)],
                                           name="cs_cull_lights_8x8"))
compute("compute/light-cull/16x16-forward-z", function("light_cull", "cs_cull_lights",
                                                       [const("REVERSED_Z", "bool", False)], name="cs_cull_lights_fwdz"))
compute("compute/exposure/histogram", function("postprocess", "cs_luminance_histogram"))
compute("compute/exposure/average", function("postprocess", "cs_luminance_average"))
compute("compute/exposure/average-fast", function("postprocess", "cs_luminance_average",
                                                  [const("ADAPTATION_SPEED", "f32", 4.0)], name="cs_luminance_average_fast"))
compute("compute/bloom/prefilter", function("postprocess", "cs_bloom_downsample",
                                            [const("BLOOM_FIRST_PASS", "bool", True), const(0, "f32", 1.0),
                                             const("BLOOM_KNEE", "f32", 0.5)], name="cs_bloom_prefilter"))
compute("compute/bloom/downsample", function("postprocess", "cs_bloom_downsample"))
compute("compute/bloom/upsample", function("postprocess", "cs_bloom_upsample"))
for tname, op in [("reinhard", 1), ("aces", 2)]:
    for tile in [8, 16]:
        compute(f"compute/tonemap/{tname}/{tile}x{tile}",
                function("postprocess", "cs_tonemap", [const("TILE_SIZE", "u32", tile), const("TONEMAP", "u32", op)],
                         name=f"cs_tonemap[{tname}][{tile}]"))

# --------------------------------------------------------------------------------------------
# Checks, statistics, output
# --------------------------------------------------------------------------------------------


def canonical(fn):
    """(library, entry, constants) of a stage function, for counting distinct functions."""
    if "specialize" in fn:
        lib, entry, _ = canonical(fn["specialize"])
        consts = []
        for c in fn["constants"]:
            key = ("id", c["id"]) if "id" in c else ("name", c["name"])
            (ty, value), = [(k, v) for k, v in c.items() if k not in ("id", "name")]
            consts.append((key, ty, value))
        return (lib, entry, tuple(sorted(consts)))
    return (fn["library"], fn["function"], ())


labels = [p["label"] for p in pipelines]
duplicates = sorted({l for l in labels if labels.count(l) > 1})
if duplicates:
    sys.exit(f"duplicate labels: {duplicates}")

vertex_fns, fragment_fns, compute_fns = set(), set(), set()
runs, previous = [], None
for p in pipelines:
    if "render" in p:
        v = canonical(p["render"]["vertex"])
        vertex_fns.add(v)
        if "fragment" in p["render"]:
            fragment_fns.add(canonical(p["render"]["fragment"]))
        if v == previous:
            runs[-1] += 1
        else:
            runs.append(1)
        previous = v
    else:
        compute_fns.add(canonical(p["compute"]["function"]))
        previous = None

script = {
    "granary_script": 1,
    "libraries": [{"name": n, "path": p} for n, p in LIBRARIES],
    "pipelines": pipelines,
}
with open(OUTPUT, "w", encoding="utf-8", newline="\n") as f:
    json.dump(script, f, indent=1)
    f.write("\n")

render_count = sum(1 for p in pipelines if "render" in p)
depth_only = sum(1 for p in pipelines if "render" in p and "fragment" not in p["render"])
print(f"wrote {os.path.relpath(OUTPUT)}: {len(pipelines)} pipelines "
      f"({render_count} render, of which {depth_only} depth-only; {len(pipelines) - render_count} compute)")
print(f"distinct stage functions: {len(vertex_fns)} vertex, {len(fragment_fns)} fragment, {len(compute_fns)} compute")
print(f"runs of consecutive render pipelines sharing a vertex function: {len(runs)} (longest {max(runs)})")
