#!/usr/bin/env bash
# The real-shader corpora through granary: for each of ../shared/corpora/willems/shaders/{hlsl,slang}
# (and glslang-hlsl, where scripts/corpus-glslang.sh wrote it beside them),
# a pipelines script made by scripts/corpus-pipelines.py, harvested with the none backend, then
# with the Vulkan backend under the validation layer (-j 2, the validation record) and without it
# (-j 2, the reference), then the contracts on the device backend against the reference: the
# pipeline records (`granary ls --json`: keys, labels, stages, layouts, state, the driver's binary
# keys; the binaries' bytes left out, which a driver need not reproduce run to run) of -j 1 and
# --isolate equal to -j 2's, and the whole archives compared byte for byte (equal on a device
# whose binaries are deterministic, such as lavapipe); then a warm start from the binaries alone,
# of the reference without the layer and of the validated harvest under it (harvest and warm
# must agree on the layer: with it loaded, NVIDIA's vkGetPipelineKeyKHR differs for some
# pipelines, docs/BENCHMARKS.md). One line per step in OUT/summary.txt, the JSON summaries in
# OUT, and the failures grouped by cause in OUT/causes-*.txt.
#
#   scripts/corpus-harvest.sh GRANARY OUT [CORPORA]
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); C=${3:-$(dirname "$0")/../../shared/corpora/willems/shaders}
mkdir -p "$OUT"; cd "$(dirname "$0")/.."
SUM=$OUT/summary.txt; : > "$SUM"
export GRANARY_VALIDATE_EXPECT=${GRANARY_VALIDATE_EXPECT:-UNASSIGNED-CoreValidation-Shader-OutputNotConsumed}
for c in hlsl slang glslang-hlsl; do
  [ -d "$C/$c" ] || { echo "$c: no corpus at $C/$c" | tee -a "$SUM"; continue; }
  python3 scripts/corpus-pipelines.py "$C/$c" "$OUT/$c/pipelines.json" 2> "$OUT/$c-script.txt"
  cat "$OUT/$c-script.txt" >> "$SUM"
  for step in "none:--backend none -j 2" "validate:--backend vulkan --capture device --validate -j 2" "vulkan:--backend vulkan --capture device -j 2" \
      "vulkan-j1:--backend vulkan --capture device -j 1" "isolate:--backend vulkan --capture device --isolate -j 2"; do
    name=${step%%:*}; args=${step#*:}
    # shellcheck disable=SC2086
    "$G" harvest "$OUT/$c/pipelines.json" -o "$OUT/$c/$name.granary" $args --json -q > "$OUT/$c-$name.json" 2> "$OUT/$c-$name.err"
    rc=$?
    python3 - "$OUT/$c-$name.json" "$c $name exit $rc" >> "$SUM" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d.get("validation") or {}
print("%s: %s of %s pipelines, %s failed%s" % (sys.argv[2], d.get("succeeded"), d.get("pipelines"), d.get("failed"),
      "; validation %s errors, %s warnings (%s)" % (v.get("errors"), v.get("warnings"), ", ".join("%s %s" % (k, x["errors"] + x["warnings"]) for k, x in v.get("by_id", {}).items())) if v else ""))
PY
  done
  # Warm start from the harvest's binaries only: every archived pipeline must come back from them.
  for w in "vulkan:" "validate:--validate"; do
    name=${w%%:*}; flag=${w#*:}
    # shellcheck disable=SC2086
    "$G" warm "$OUT/$c/$name.granary" --source binaries $flag --json > "$OUT/$c-warm-$name.json" 2> "$OUT/$c-warm-$name.err"
    rc=$?
    python3 - "$OUT/$c-warm-$name.json" "$c warm-from-binaries ($name${flag:+, $flag}) exit $rc" >> "$SUM" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    d = {}
print("%s: %s of %s pipelines from binaries, %s compiled, %s failed, %s key mismatches" % (sys.argv[2],
      d.get("from_binaries"), d.get("pipelines"), d.get("compiled"), d.get("failed"), d.get("key_mismatches")))
PY
  done
  for name in vulkan vulkan-j1 isolate; do
    "$G" ls "$OUT/$c/$name.granary" --json > "$OUT/$c/$name.ls.json" 2>> "$OUT/$c-ls.err"
  done
  for other in vulkan-j1 isolate; do
    python3 - "$OUT/$c/vulkan.ls.json" "$OUT/$c/$other.ls.json" "$c: $other against -j 2" >> "$SUM" <<'PY'
import json, sys
def records(path):
    try:
        pipelines = json.load(open(path))["entries"]
    except (OSError, ValueError, KeyError):
        return None
    for p in pipelines:
        for d in p.get("devices", []):
            d.pop("bytes", None)
            for b in d.get("binary_list", []):
                b.pop("bytes", None); b.pop("hash", None)
    return pipelines
a, b = records(sys.argv[1]), records(sys.argv[2])
if a is None or b is None:
    print("%s: no records to compare" % sys.argv[3])
elif a == b:
    print("%s: %d pipeline records equal" % (sys.argv[3], len(a)))
else:
    diff = sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))
    print("%s: pipeline records DIFFER (%d of %d/%d)" % (sys.argv[3], diff, len(a), len(b)))
PY
    cmp -s "$OUT/$c/vulkan.granary" "$OUT/$c/$other.granary" && echo "$c: $other archive byte-identical to -j 2's" >> "$SUM" \
      || echo "$c: $other archive bytes differ from -j 2's (the driver's binaries, where the records are equal)" >> "$SUM"
  done
  # The issue's measure: of the pipelines whose modules spirv-val accepts, the share that
  # harvest, and of the rest, how many fail for a reason of the device's (a feature or limit it
  # lacks) and how many for any other (link errors, the input's own faults, granary's limits).
  python3 - "$OUT/$c-vulkan.json" "$c" >> "$SUM" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
fails = d.get("failures", [])
rejected = sum(1 for f in fails if "spirv-val" in f.get("message", ""))
device = sum(1 for f in fails if "spirv-val" not in f.get("message", "") and any(
    r in f.get("message", "") for r in ("(the device does not support it)", "' takes ", "' allows at most ")))
clean = d.get("pipelines", 0) - rejected
ok = d.get("succeeded", 0)
print("%s: %d of %d validator-clean pipelines harvest (%.1f %%); %d rejected by spirv-val; of the rest %d fail for the device's reasons, %d for others" % (
    sys.argv[2], ok, clean, 100.0 * ok / clean if clean else 0.0, rejected, device, clean - ok - device))
PY
  python3 - "$OUT/$c-validate.json" > "$OUT/causes-$c.txt" <<'PY'
import json, re, sys
from collections import Counter
d = json.load(open(sys.argv[1]))
def cause(m):
    m = m.split(".spv: ", 1)[-1]
    m = re.sub(r"%\d+", "%N", m); m = re.sub(r"\[\d+\]", "[N]", m); m = re.sub(r"\b\d+\b", "N", m)
    return m[:110]
for (phase, c), n in Counter((f.get("phase"), cause(f.get("message", ""))) for f in d["failures"]).most_common():
    print("%4d  [%s] %s" % (n, phase, c))
PY
done
cat "$SUM"
