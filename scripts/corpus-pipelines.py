#!/usr/bin/env python3
"""Writes a granary pipelines script for a folder of compiled SPIR-V shaders laid out as the
Vulkan samples' are (SAMPLE/NAME.STAGE.spv): one render pipeline per NAME.vert.spv (with
NAME.frag.spv where there is one), one compute pipeline per NAME.comp.spv. The state the
samples' C++ sets is derived from the SPIR-V itself: one vertex buffer with an attribute per
vertex-shader input location (tightly packed, in location order), one unspecialized colour
attachment per fragment output location, no depth. Stages granary's descriptor cannot say yet
(tessellation, geometry, mesh, task, ray tracing) are not turned into pipelines; they are
counted in the summary on stderr, with the reason.

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


def vertex_format(t):
    base, width, signed, count = t
    if width != 32:
        return None
    kind = "float32" if base == "float" else ("sint32" if signed else "uint32")
    return kind if count == 1 else "%sx%d" % (kind, count)


def main():
    root, out = sys.argv[1], sys.argv[2]
    libraries, pipelines, skipped = [], [], Counter()
    for sample in sorted(os.listdir(root)):
        folder = os.path.join(root, sample)
        if not os.path.isdir(folder):
            continue
        names = {}
        for f in sorted(os.listdir(folder)):
            if f.endswith(".spv"):
                stem, stage = f[:-4].rsplit(".", 1) if f[:-4].count(".") else (f[:-4], "?")
                names.setdefault(stem, {})[stage] = os.path.abspath(os.path.join(folder, f))
        for stem, stages in sorted(names.items()):
            label = "%s/%s" % (sample, stem)
            other = sorted(set(stages) - {"vert", "frag", "comp"})
            def lib(stage):
                name = "%s.%s" % (label, stage)
                libraries.append({"name": name, "path": stages[stage]})
                return name
            if other:
                for s in other:
                    skipped["%s stage (not representable in the descriptor)" % s] += 1
                if "vert" in stages:
                    skipped["render pipelines with a %s stage" % "+".join(other)] += 1
                continue
            if "comp" in stages:
                entry, _, _ = interface(stages["comp"])
                pipelines.append({"label": label + "/comp", "compute": {"function": {"library": lib("comp"), "function": entry}}})
            if "vert" in stages:
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
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    json.dump({"granary_script": 1, "libraries": libraries, "pipelines": pipelines}, open(out, "w"), indent=1)
    print("%d pipelines (%d render, %d compute) from %s" % (
        len(pipelines), sum("render" in p for p in pipelines), sum("compute" in p for p in pipelines), root), file=sys.stderr)
    for why, n in sorted(skipped.items()):
        print("  not made: %d × %s" % (n, why), file=sys.stderr)


if __name__ == "__main__":
    main()
