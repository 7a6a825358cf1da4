#!/usr/bin/env python3
"""Writes the SPIR-V-input twin of a pipelines script: the same pipelines, each stage a SPIR-V
library holding exactly the module an earlier harvest of the script archived for it (naga's
translation, specialization constants applied), so that a harvest of the twin starts where
the hand-written baseline (`granary warm ARCHIVE --source spirv --pipeline-cache-out`) starts:
from finished SPIR-V, as a Vulkan game's Fossilize capture does. Identical modules are one
library (named by their SHA-256), so the twin has one library per distinct stage output.

    scripts/spirv-input.py GRANARY SCRIPT ARCHIVE OUT_DIR

ARCHIVE is a harvest of SCRIPT with the spirv target (any backend). Each script pipeline is
found in it by its label, or by LABEL@FORMAT for a pipeline the script's `expand_unspecialized`
turns into variants (the first such variant's modules: the variants of one pipeline share
their stages). The script's other fields (`expand_unspecialized`, states, labels) are kept.
Writes OUT_DIR/pipelines.json and OUT_DIR/modules/*.spv; prints a one-line summary. Exit
status 1 when a pipeline cannot be found in the archive.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile


def main():
    granary, script_path, archive, out = sys.argv[1:5]
    script = json.load(open(script_path))
    listing = json.loads(subprocess.run([granary, "ls", archive, "--json"], check=True, capture_output=True).stdout)
    key_of = {}
    for e in listing["entries"]:
        for label in e["labels"]:
            key_of[label] = e["key"]
            base = label.split("@", 1)[0]
            if base != label:
                key_of.setdefault(base, e["key"])
    os.makedirs(os.path.join(out, "modules"), exist_ok=True)
    libraries = {}
    missing = 0
    with tempfile.TemporaryDirectory() as tmp:
        for p in script["pipelines"]:
            key = key_of.get(p.get("label"))
            kind = "render" if "render" in p else "compute" if "compute" in p else None
            if key is None or kind is None:
                missing += 1
                print(f"not in the archive: {p.get('label')}", file=sys.stderr)
                continue
            subprocess.run([granary, "extract", archive, key, "--target", "spirv", "-o", tmp],
                           check=True, capture_output=True)
            for stage in ("vertex", "fragment", "compute"):
                ref = p[kind].get(stage)
                if not isinstance(ref, dict):
                    continue
                module = open(os.path.join(tmp, f"{key}.{stage}.spv"), "rb").read()
                name = hashlib.sha256(module).hexdigest()[:32]
                if name not in libraries:
                    path = os.path.join("modules", name + ".spv")
                    with open(os.path.join(out, path), "wb") as f:
                        f.write(module)
                    libraries[name] = {"name": name, "path": path}
                function = ref.get("specialize", ref)["function"]
                p[kind][stage] = {"library": name, "function": function}
    script["libraries"] = sorted(libraries.values(), key=lambda l: l["name"])
    with open(os.path.join(out, "pipelines.json"), "w") as f:
        json.dump(script, f)
    print(f"{len(script['pipelines']) - missing} pipelines over {len(libraries)} SPIR-V libraries "
          f"({missing} not found) -> {os.path.join(out, 'pipelines.json')}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
