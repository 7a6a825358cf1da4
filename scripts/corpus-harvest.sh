#!/usr/bin/env bash
# The real-shader corpora through granary: for each of ../shared/corpora/willems/shaders/{hlsl,slang},
# a pipelines script made by scripts/corpus-pipelines.py, harvested with the none backend and with
# the Vulkan backend under the validation layer (-j 2), then the contracts on the device backend:
# -j 1 byte-identical to -j 2 (on a device whose cache data is deterministic, such as lavapipe),
# and --isolate byte-identical to in-process; then a warm start from the binaries alone. One line per step in OUT/summary.txt, the JSON
# summaries in OUT, and the failures grouped by cause in OUT/causes-*.txt.
#
#   scripts/corpus-harvest.sh GRANARY OUT [CORPORA]
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); C=${3:-$(dirname "$0")/../../shared/corpora/willems/shaders}
mkdir -p "$OUT"; cd "$(dirname "$0")/.."
SUM=$OUT/summary.txt; : > "$SUM"
export GRANARY_VALIDATE_EXPECT=${GRANARY_VALIDATE_EXPECT:-UNASSIGNED-CoreValidation-Shader-OutputNotConsumed}
for c in hlsl slang; do
  [ -d "$C/$c" ] || { echo "$c: no corpus at $C/$c" | tee -a "$SUM"; continue; }
  python3 scripts/corpus-pipelines.py "$C/$c" "$OUT/$c/pipelines.json" 2> "$OUT/$c-script.txt"
  cat "$OUT/$c-script.txt" >> "$SUM"
  for step in "none:--backend none -j 2" "vulkan:--backend vulkan --validate -j 2" "vulkan-j1:--backend vulkan -j 1" "isolate:--backend vulkan --isolate -j 2"; do
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
  "$G" warm "$OUT/$c/vulkan.granary" --source binaries --json > "$OUT/$c-warm.json" 2> "$OUT/$c-warm.err"
  rc=$?
  python3 - "$OUT/$c-warm.json" "$c warm-from-binaries exit $rc" >> "$SUM" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    d = {}
print("%s: %s of %s pipelines from binaries, %s compiled, %s failed, %s key mismatches" % (sys.argv[2],
      d.get("from_binaries"), d.get("pipelines"), d.get("compiled"), d.get("failed"), d.get("key_mismatches")))
PY
  cmp -s "$OUT/$c/vulkan.granary" "$OUT/$c/vulkan-j1.granary" && echo "$c: -j1 and -j2 archives identical" >> "$SUM" || echo "$c: -j1 and -j2 archives DIFFER" >> "$SUM"
  cmp -s "$OUT/$c/vulkan.granary" "$OUT/$c/isolate.granary" && echo "$c: --isolate and in-process archives identical" >> "$SUM" || echo "$c: --isolate and in-process archives DIFFER" >> "$SUM"
  python3 - "$OUT/$c-vulkan.json" > "$OUT/causes-$c.txt" <<'PY'
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
