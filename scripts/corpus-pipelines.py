#!/usr/bin/env python3
"""Writes a granary pipelines script for a folder of compiled SPIR-V shaders laid out as the
Vulkan samples' are (SAMPLE/NAME.STAGE.spv): one render pipeline per NAME.vert.spv (with
NAME.frag.spv where there is one), one compute pipeline per NAME.comp.spv, in the portable
form. The state the samples' C++ sets is derived from the SPIR-V itself: one vertex buffer with
an attribute per vertex-shader input location (tightly packed, in location order), one
unspecialized colour attachment per fragment output location, no depth. Pipelines with
tessellation, geometry or mesh/task stages are written in the native Vulkan form
(docs/FORMAT.md §2.6): the stages of that name (tessellation and geometry stages take the
folder's vertex and fragment stage of the same name, else `base`, else the only one), a
pipeline layout reflected from the modules' descriptor decorations and push-constant blocks,
dynamic rendering with one colour format per fragment output and a depth attachment, dynamic
viewport and scissor. A vertex+fragment pipeline whose fragment stage reads input attachments
is written in the native form too, as subpass 1 of a render pass whose subpass 0 writes them,
and so is a pipeline with an unsized binding array (given 16 descriptors) or an
acceleration-structure binding, which the portable form cannot say. A
vertex+fragment pair that a native pipeline joins through a tessellation or geometry stage is
not also made on its own (the samples never create it). The ray-tracing stages of a sample
folder make one ray-tracing pipeline in the native form, as the samples' C++ does: its stages
in the order ray generation, miss (`miss` first), closest hit, any hit, intersection,
callable; a general group for each ray-generation, miss and callable stage, and a hit group
per closest-hit stage (with the folder's any-hit stage, and its intersection stage, which
makes it a procedural group); recursion depth 2; the layout reflected as for the other native
pipelines. What is not made is counted in the summary on stderr, with the reason.

    scripts/corpus-pipelines.py SHADERS_DIR OUT/pipelines.json

The script references the .spv files by absolute path. Exit status 0.
"""
import json
import os
import struct
import sys
from collections import Counter

INPUT, OUTPUT = 1, 3
LOCATION, BUILTIN = 30, 11


def words(path):
    data = open(path, "rb").read()
    n = len(data) // 4
    w = struct.unpack("<%dI" % n, data[: n * 4])
    if not w or w[0] != 0x07230203:
        raise ValueError("not little-endian SPIR-V")
    return w


def interface(path):
    """(entry name, {location: (base, width, signed, count)} of inputs, output locations)."""
    w = words(path)
    i = 5
    types, pointers, variables, locations, builtins = {}, {}, {}, {}, set()
    entry, iface = None, []
    while i < len(w):
        op, n = w[i] & 0xFFFF, w[i] >> 16
        if n == 0:
            raise ValueError("zero-length instruction")
        a = w[i + 1 : i + n]
        if op == 15 and entry is None:  # OpEntryPoint model id name... interface...
            raw = b"".join(struct.pack("<I", x) for x in a[2:])
            name = raw.split(b"\0", 1)[0].decode()
            used = (len(name) + 4) // 4
            entry, iface = name, list(a[2 + used :])
        elif op == 71 and len(a) >= 2:  # OpDecorate
            if a[1] == LOCATION and len(a) >= 3:
                locations[a[0]] = a[2]
            elif a[1] == BUILTIN:
                builtins.add(a[0])
        elif op == 22:  # OpTypeFloat
            types[a[0]] = ("float", a[1], False, 1)
        elif op == 21:  # OpTypeInt
            types[a[0]] = ("int", a[1], bool(a[2]), 1)
        elif op == 23:  # OpTypeVector
            base = types.get(a[1])
            if base:
                types[a[0]] = (base[0], base[1], base[2], a[2])
        elif op == 32:  # OpTypePointer
            pointers[a[0]] = (a[1], a[2])
        elif op == 59:  # OpVariable
            variables[a[1]] = (a[0], a[2])
        i += n
    inputs, outputs = {}, set()
    for v in iface:
        if v not in variables or v in builtins or v not in locations:
            continue
        ptr, storage = variables[v]
        pointee = pointers.get(ptr, (None, None))[1]
        if storage == INPUT:
            inputs[locations[v]] = types.get(pointee)
        elif storage == OUTPUT:
            outputs.add(locations[v])
    return entry or "main", inputs, outputs


# Descriptor types (VkDescriptorType).
SAMPLER, COMBINED, SAMPLED_IMAGE, STORAGE_IMAGE, UNIFORM_TEXEL, STORAGE_TEXEL, UNIFORM_BUFFER, STORAGE_BUFFER = 0, 1, 2, 3, 4, 5, 6, 7
INPUT_ATTACHMENT, ACCELERATION_STRUCTURE = 10, 1000150000
# The descriptor count a layout gives an unsized binding array.
RUNTIME_ARRAY = 16
# Execution models and the VkShaderStageFlagBits of each.
STAGE_BITS = {0: 0x1, 1: 0x2, 2: 0x4, 3: 0x8, 4: 0x10, 5: 0x20, 5364: 0x40, 5365: 0x80, 5267: 0x40, 5268: 0x80,
              5313: 0x100, 5314: 0x1000, 5315: 0x200, 5316: 0x400, 5317: 0x800, 5318: 0x2000}
# Ray-tracing stage file suffixes, in pipeline order, with granary's stage names.
RT_STAGES = [("rgen", "ray_generation"), ("rmiss", "miss"), ("rchit", "closest_hit"), ("rahit", "any_hit"),
             ("rint", "intersection"), ("rcall", "callable")]
UNUSED = 0xFFFFFFFF


def reflect(path):
    """The module's descriptor bindings {(set, binding): (type, count)}, its push-constant
    block size (0 if none), its OutputVertices execution mode (tessellation control) and its
    entry point's stage bit."""
    w = words(path)
    i = 5
    decor, member_offset, member_matrix_stride, array_stride, names = {}, {}, {}, {}, {}
    types, consts, pointers, variables = {}, {}, {}, {}
    model, output_vertices = None, None
    while i < len(w):
        op, n = w[i] & 0xFFFF, w[i] >> 16
        if n == 0:
            raise ValueError("zero-length instruction")
        a = w[i + 1 : i + n]
        if op == 15 and model is None:
            model = a[0]
        elif op == 16 and len(a) >= 3 and a[1] == 26:  # OpExecutionMode OutputVertices
            output_vertices = a[2]
        elif op == 71 and len(a) >= 2:  # OpDecorate
            decor.setdefault(a[0], {})[a[1]] = a[2] if len(a) > 2 else True
            if a[1] == 6 and len(a) > 2:
                array_stride[a[0]] = a[2]
        elif op == 72 and len(a) >= 3:  # OpMemberDecorate
            if a[2] == 35 and len(a) > 3:
                member_offset[(a[0], a[1])] = a[3]
            elif a[2] == 7 and len(a) > 3:
                member_matrix_stride[(a[0], a[1])] = a[3]
        elif op in (19, 20):  # void, bool
            types[a[0]] = ("scalar", 4)
        elif op in (21, 22):  # int, float
            types[a[0]] = ("scalar", a[1] // 8)
        elif op == 23:  # vector
            types[a[0]] = ("vector", a[1], a[2])
        elif op == 24:  # matrix
            types[a[0]] = ("matrix", a[1], a[2])
        elif op == 25:  # image: sampled type, dim, depth, arrayed, ms, sampled
            types[a[0]] = ("image", a[2], a[6])
        elif op == 26:
            types[a[0]] = ("sampler",)
        elif op == 27:
            types[a[0]] = ("sampled_image",)
        elif op == 28:  # array
            types[a[0]] = ("array", a[1], a[2])
        elif op == 29:
            types[a[0]] = ("runtime_array", a[1])
        elif op == 30:
            types[a[0]] = ("struct", list(a[1:]))
        elif op == 5341:
            types[a[0]] = ("acceleration_structure",)
        elif op == 32:
            pointers[a[0]] = (a[1], a[2])
        elif op == 43 and len(a) >= 3:  # OpConstant
            consts[a[1]] = a[2]
        elif op == 59:
            variables[a[1]] = (a[0], a[2])
        i += n

    def size(t, stride=None):
        k = types.get(t, ("scalar", 4))
        if k[0] == "scalar":
            return k[1]
        if k[0] == "vector":
            return size(k[1]) * k[2]
        if k[0] == "matrix":
            return (stride or size(k[1])) * k[2]
        if k[0] == "array":
            return array_stride.get(t, size(k[1])) * consts.get(k[2], 1)
        if k[0] == "struct":
            end = 0
            for m, mt in enumerate(k[1]):
                end = max(end, member_offset.get((t, m), end) + size(mt, member_matrix_stride.get((t, m))))
            return end
        return 0

    bindings, push = {}, 0
    for var, (ptr, storage) in variables.items():
        pointee = pointers.get(ptr, (None, None))[1]
        if storage == 9:  # PushConstant
            push = max(push, size(pointee))
            continue
        d = decor.get(var, {})
        if 34 not in d or 33 not in d:
            continue
        t, count = pointee, 1
        k = types.get(t, ())
        if k and k[0] == "array":
            t, count = k[1], consts.get(k[2], 1)
        elif k and k[0] == "runtime_array":
            # An unsized array: the layout gives it room for RUNTIME_ARRAY descriptors.
            t, count = k[1], RUNTIME_ARRAY
        k = types.get(t, ())
        if not k:
            continue
        if k[0] == "sampler":
            ty = SAMPLER
        elif k[0] == "sampled_image":
            ty = COMBINED
        elif k[0] == "image":
            dim, sampled = k[1], k[2]
            if dim == 6:
                ty = INPUT_ATTACHMENT
            elif dim == 5:
                ty = UNIFORM_TEXEL if sampled == 1 else STORAGE_TEXEL
            else:
                ty = SAMPLED_IMAGE if sampled == 1 else STORAGE_IMAGE
        elif k[0] == "acceleration_structure":
            ty = ACCELERATION_STRUCTURE
        elif k[0] == "struct":
            block = decor.get(t, {})
            ty = STORAGE_BUFFER if storage == 12 or 3 in block else UNIFORM_BUFFER
        else:
            continue
        prev = bindings.get((d[34], d[33]))
        if prev and {prev[0], ty} == {SAMPLER, SAMPLED_IMAGE}:
            # DXC's [[vk::combinedImageSampler]]: a texture and a sampler at one binding.
            ty = COMBINED
        bindings[(d[34], d[33])] = (ty, max(count, prev[1] if prev else 0))
    return bindings, (push + 3) // 4 * 4, output_vertices, STAGE_BITS.get(model, 0)


def input_attachments(path):
    """Whether the module declares the InputAttachment capability, and the number of input
    attachments it reads (one more than the largest InputAttachmentIndex decoration)."""
    w = words(path)
    i, cap, count = 5, False, 0
    while i < len(w):
        op, n = w[i] & 0xFFFF, w[i] >> 16
        if n == 0:
            raise ValueError("zero-length instruction")
        a = w[i + 1 : i + n]
        if op == 17 and a and a[0] == 40:  # OpCapability InputAttachment
            cap = True
        elif op == 71 and len(a) >= 3 and a[1] == 43:  # OpDecorate InputAttachmentIndex
            count = max(count, a[2] + 1)
        i += n
    return cap, count


def portable(path):
    """Whether the portable form can say the module's bindings: not an unsized binding array
    nor an acceleration structure (the native form can)."""
    bindings = reflect(path)[0]
    return all(ty != ACCELERATION_STRUCTURE and count != RUNTIME_ARRAY for ty, count in bindings.values())


def render_pass(inputs, colors):
    """A two-subpass render pass: subpass 0 writes `inputs` colour attachments, subpass 1 (the
    pipeline's) reads them as input attachments 0..inputs-1 and writes `colors` colour
    attachments and a depth attachment, as the samples' deferred passes do."""
    def att(fmt, final):
        return {"format": fmt, "samples": 1, "loadOp": 1, "storeOp": 0, "stencilLoadOp": 2,
                "stencilStoreOp": 1, "initialLayout": 0, "finalLayout": final}
    attachments = [att(37, 5) for _ in range(inputs)] + [att(37, 2) for _ in range(colors)] + [att(126, 3)]
    ref = lambda a, layout, aspect=0: {"attachment": a, "layout": layout, "aspectMask": aspect}
    return {
        "attachments": attachments,
        "subpasses": [
            {"pipelineBindPoint": 0, "colorAttachments": [ref(a, 2) for a in range(inputs)]},
            {"pipelineBindPoint": 0, "inputAttachments": [ref(a, 5, 1) for a in range(inputs)],
             "colorAttachments": [ref(inputs + c, 2) for c in range(colors)],
             "depthStencilAttachment": ref(inputs + colors, 3)},
        ],
        "dependencies": [{"srcSubpass": 0, "dstSubpass": 1, "srcStageMask": 0x400, "dstStageMask": 0x80,
                          "srcAccessMask": 0x100, "dstAccessMask": 0x10, "dependencyFlags": 1}],
    }


NATIVE_STAGES = {"vert": "vertex", "tesc": "tessellation_control", "tese": "tessellation_evaluation",
                 "geom": "geometry", "task": "task", "mesh": "mesh", "frag": "fragment"}
ORDER = ["task", "mesh", "vert", "tesc", "tese", "geom", "frag"]


def layout_of(paths):
    """The pipeline layout of the modules at `paths` (bindings and push constants, each with
    the stage bits of the modules that declare them), or the reason there is none."""
    sets, push, push_stages = {}, 0, 0
    for path in paths:
        bindings, size, _, bit = reflect(path)
        for (s_, b), (ty, count) in bindings.items():
            prev = sets.setdefault(s_, {}).get(b)
            if prev and prev[0] != ty:
                return None, "stages declare set %d binding %d as different descriptor types" % (s_, b)
            sets[s_][b] = (ty, max(count, prev[1] if prev else 0), (prev[2] if prev else 0) | bit)
        if size:
            push, push_stages = max(push, size), push_stages | bit
    set_layouts = []
    for s_ in range(max(sets) + 1 if sets else 0):
        set_layouts.append({"bindings": [
            {"binding": b, "descriptorType": ty, "descriptorCount": count, "stageFlags": flags}
            for b, (ty, count, flags) in sorted(sets.get(s_, {}).items())]})
    layout = {"setLayouts": set_layouts}
    if push:
        layout["pushConstantRanges"] = [{"stageFlags": push_stages, "offset": 0, "size": push}]
    return layout, None


def ray_tracing_pipeline(label, files, lib):
    """A ray-tracing pipeline over `files` ({suffix: [paths]}), or the reason it cannot be made."""
    stages, paths, index = [], [], {}
    for suffix, name in RT_STAGES:
        ordered = sorted(files.get(suffix, []), key=lambda p: (os.path.basename(p) != "miss.rmiss.spv", p))
        for path in ordered:
            index.setdefault(suffix, []).append(len(stages))
            entry, _, _ = interface(path)
            stages.append({"stage": name, "function": {"library": lib(path), "function": entry}})
            paths.append(path)
    if "rgen" not in index:
        return None, "ray-tracing stages without a ray-generation stage"
    layout, why = layout_of(paths)
    if layout is None:
        return None, why

    def group(ty, general=UNUSED, closest=UNUSED, any_hit=UNUSED, intersection=UNUSED):
        return {"type": ty, "generalShader": general, "closestHitShader": closest, "anyHitShader": any_hit,
                "intersectionShader": intersection}

    groups = [group(0, general=i) for i in index["rgen"] + index.get("rmiss", [])]
    any_hit = index.get("rahit", [UNUSED])[0]
    intersection = index.get("rint", [UNUSED])[0]
    for i in index.get("rchit", []):
        groups.append(group(2 if intersection != UNUSED else 1, closest=i, any_hit=any_hit, intersection=intersection))
    groups += [group(0, general=i) for i in index.get("rcall", [])]
    state = {"stages": [{} for _ in stages], "layout": layout,
             "rayTracing": {"groups": groups, "maxPipelineRayRecursionDepth": 2}}
    return {"label": label, "vulkan": {"stages": stages, "state": state}}, None


def native_pipeline(label, files, lib):
    """A native-form pipeline over `files` ({stage: path}), or the reason it cannot be made."""
    stages, paths, patch = [], [], None
    for st in ORDER + ["comp"]:
        if st not in files:
            continue
        entry, _, _ = interface(files[st])
        if st == "tesc":
            patch = reflect(files[st])[2] or 3
        stages.append({"stage": NATIVE_STAGES.get(st, "compute"), "function": {"library": lib(st), "function": entry}})
        paths.append(files[st])
    layout, why = layout_of(paths)
    if layout is None:
        return None, why
    if "comp" in files:
        return {"label": label, "vulkan": {"stages": stages, "state": {"stages": [{}], "layout": layout}}}, None
    graphics = {
        "viewportState": {"viewportCount": 1, "scissorCount": 1},
        "rasterizationState": {"polygonMode": 0, "cullMode": 0, "frontFace": 0, "lineWidth": 1.0},
        "multisampleState": {"rasterizationSamples": 1},
        "depthStencilState": {"depthTestEnable": True, "depthWriteEnable": True, "depthCompareOp": 3},
        "dynamicStates": [0, 1],
    }
    if "vert" in files:
        _, inputs, _ = interface(files["vert"])
        attributes, offset = [], 0
        for loc in sorted(inputs):
            t = inputs[loc]
            fmt = t and vk_format(t)
            if fmt is None:
                return None, "vertex input of a type the generator cannot feed (not 32-bit scalar/vector)"
            attributes.append({"location": loc, "binding": 0, "format": fmt, "offset": offset})
            offset += 4 * t[3]
        graphics["vertexInputState"] = {
            "bindings": [{"binding": 0, "stride": offset, "inputRate": 0}] if attributes else [],
            "attributes": attributes}
        graphics["inputAssemblyState"] = {"topology": 10 if patch else 3}
    if patch:
        graphics["tessellationState"] = {"patchControlPoints": patch}
    colors = []
    if "frag" in files:
        _, _, outs = interface(files["frag"])
        colors = [37] * ((max(outs) + 1) if outs else 0)  # VK_FORMAT_R8G8B8A8_UNORM
    graphics["colorBlendState"] = {"attachmentCount": len(colors),
                                   "attachments": [{"colorWriteMask": 15} for _ in colors]}
    reads = input_attachments(files["frag"]) if "frag" in files else (False, 0)
    if reads[0]:
        # Input attachments need a render pass (dynamic rendering reads none without
        # VK_KHR_dynamic_rendering_local_read): the pipeline is subpass 1 of one.
        graphics["renderPass"] = render_pass(max(reads[1], 1), len(colors))
        graphics["subpass"] = 1
    else:
        graphics["rendering"] = {"colorAttachmentFormats": colors, "depthAttachmentFormat": 126}  # D32_SFLOAT
    state = {"stages": [{} for _ in stages], "layout": layout, "graphics": graphics}
    return {"label": label, "vulkan": {"stages": stages, "state": state}}, None


def vk_format(t):
    base, width, signed, count = t
    if width != 32:
        return None
    # VK_FORMAT_R32[G32[B32[A32]]]_{SFLOAT,SINT,UINT}
    table = {"float": [100, 103, 106, 109], "sint": [99, 102, 105, 108], "uint": [98, 101, 104, 107]}
    kind = "float" if base == "float" else ("sint" if signed else "uint")
    return table[kind][count - 1]


def vertex_format(t):
    base, width, signed, count = t
    if width != 32:
        return None
    kind = "float32" if base == "float" else ("sint32" if signed else "uint32")
    return kind if count == 1 else "%sx%d" % (kind, count)


def main():
    root, out = sys.argv[1], sys.argv[2]
    libraries, pipelines, skipped, known = [], [], Counter(), set()
    for sample in sorted(os.listdir(root)):
        folder = os.path.join(root, sample)
        if not os.path.isdir(folder):
            continue
        names = {}
        for f in sorted(os.listdir(folder)):
            if f.endswith(".spv"):
                stem, stage = f[:-4].rsplit(".", 1) if f[:-4].count(".") else (f[:-4], "?")
                names.setdefault(stem, {})[stage] = os.path.abspath(os.path.join(folder, f))
        all_stages = {(stem, st): path for stem, sts in names.items() for st, path in sts.items()}
        rt_files = {}
        for (_, st), path in all_stages.items():
            if st in dict(RT_STAGES):
                rt_files.setdefault(st, []).append(path)
        if rt_files:
            def rt_lib(path, sample=sample):
                name = "%s/%s" % (sample, os.path.basename(path)[:-4])
                if name not in known:
                    known.add(name)
                    libraries.append({"name": name, "path": path})
                return name
            p, why = ray_tracing_pipeline(sample + "/raytracing", rt_files, rt_lib)
            if p is None:
                skipped[why] += 1
            else:
                pipelines.append(p)
        by_stage = Counter(st for (_, st) in all_stages)
        only = {st: path for (_, st), path in all_stages.items() if by_stage[st] == 1}
        for stem, stages in sorted(names.items()):
            label = "%s/%s" % (sample, stem)
            other = sorted(set(stages) - {"vert", "frag", "comp"})
            def lib(stage):
                name = "%s/%s" % (sample, os.path.basename(stages[stage])[:-4])
                if name not in known:
                    known.add(name)
                    libraries.append({"name": name, "path": stages[stage]})
                return name
            native = [s_ for s_ in other if s_ in NATIVE_STAGES]
            rt = sorted(set(other) - set(native))  # the folder's ray-tracing pipeline has them
            if native:
                if not {"tesc", "tese", "geom", "mesh"} & set(native):
                    continue  # a task stage alone belongs to its mesh stage's pipeline
                files = {s_: stages[s_] for s_ in native}
                if "mesh" not in files:
                    for s_ in ("vert", "frag"):
                        pick = stages.get(s_) or all_stages.get(("base", s_)) or only.get(s_)
                        if pick:
                            files[s_] = pick
                        elif s_ == "vert":
                            files = None
                            break
                elif "frag" in stages:
                    files["frag"] = stages["frag"]
                if files is None:
                    skipped["%s stage with no vertex stage to pair with" % "+".join(native)] += 1
                    continue
                libnames = {}
                def native_lib(stage, files=files, libnames=libnames):
                    path = files[stage]
                    if path not in libnames:
                        libnames[path] = "%s/%s" % (sample, os.path.basename(path)[:-4])
                        if libnames[path] not in known:
                            known.add(libnames[path])
                            libraries.append({"name": libnames[path], "path": path})
                    return libnames[path]
                p, why = native_pipeline(label + "/" + "+".join(s_ for s_ in ORDER if s_ in files), files, native_lib)
                if p is None:
                    skipped[why] += 1
                else:
                    pipelines.append(p)
                continue
            if rt:
                continue
            if "comp" in stages and not portable(stages["comp"]):
                p, why = native_pipeline(label + "/comp", {"comp": stages["comp"]}, lambda st, lib=lib: lib(st))
                if p is None:
                    skipped[why] += 1
                else:
                    pipelines.append(p)
            elif "comp" in stages:
                entry, _, _ = interface(stages["comp"])
                pipelines.append({"label": label + "/comp", "compute": {"function": {"library": lib("comp"), "function": entry}}})
            native_pair = "vert" in stages and "frag" in stages and (
                input_attachments(stages["frag"])[0] or not portable(stages["vert"]) or not portable(stages["frag"]))
            if native_pair:
                files = {"vert": stages["vert"], "frag": stages["frag"]}
                p, why = native_pipeline(label, files, lambda st, lib=lib: lib(st))
                if p is None:
                    skipped[why] += 1
                else:
                    pipelines.append(p)
            elif "vert" in stages:
                entry, inputs, _ = interface(stages["vert"])
                attributes, offset, ok = [], 0, True
                for loc in sorted(inputs):
                    fmt = inputs[loc] and vertex_format(inputs[loc])
                    if not fmt:
                        ok = False
                        break
                    attributes.append({"location": loc, "format": fmt, "offset": offset})
                    offset += 4 * inputs[loc][3]
                if not ok:
                    skipped["vertex input of a type the script cannot feed (not 32-bit scalar/vector)"] += 1
                    continue
                render = {"vertex": {"library": lib("vert"), "function": entry}}
                if attributes:
                    render["vertex_buffers"] = [{"stride": offset, "step": "vertex", "attributes": attributes}]
                if "frag" in stages:
                    fentry, _, outs = interface(stages["frag"])
                    render["fragment"] = {"library": lib("frag"), "function": fentry}
                    render["color_attachments"] = [{} for _ in range((max(outs) + 1) if outs else 0)]
                else:
                    render["color_attachments"] = []
                    render["depth_stencil"] = {"format": "depth32float", "depth_write": True, "depth_compare": "less"}
                pipelines.append({"label": label, "render": render})
            elif "frag" in stages:
                skipped["fragment stage without a vertex stage of the same name"] += 1
    joined = set()
    for p in pipelines:
        if "vulkan" in p:
            libs = {s_["stage"]: s_["function"]["library"] for s_ in p["vulkan"]["stages"]}
            if len(libs) > 2 and "vertex" in libs and "fragment" in libs:
                joined.add((libs["vertex"], libs["fragment"]))
    kept = []
    for p in pipelines:
        r = p.get("render")
        if r and r.get("fragment") and (r["vertex"]["library"], r["fragment"]["library"]) in joined:
            skipped["vertex+fragment pair the sample joins through a tessellation or geometry stage"] += 1
        else:
            kept.append(p)
    pipelines = kept
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    json.dump({"granary_script": 1, "libraries": libraries, "pipelines": pipelines}, open(out, "w"), indent=1)
    ray_tracing = sum("rayTracing" in p.get("vulkan", {}).get("state", {}) for p in pipelines)
    print("%d pipelines (%d render, %d compute, %d native, of them %d ray tracing) from %s" % (
        len(pipelines), sum("render" in p for p in pipelines), sum("compute" in p for p in pipelines),
        sum("vulkan" in p for p in pipelines), ray_tracing, root), file=sys.stderr)
    for why, n in sorted(skipped.items()):
        print("  not made: %d × %s" % (n, why), file=sys.stderr)


if __name__ == "__main__":
    main()
