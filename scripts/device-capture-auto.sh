#!/usr/bin/env bash
# `harvest --capture auto` on a driver with VK_KHR_pipeline_binary (issue 24 item 4): seed2kx
# (as scripts/device-capture.sh makes it) and the bundled example, each harvested with
# --capture auto at -j16 and warmed at -j1; then, with VULKAN_TEST_BINARY, tests/vulkan.rs.
#
#   scripts/device-capture-auto.sh GRANARY OUT [VULKAN_TEST_BINARY]
#
# SAMPLES (default "256 1000"): further seed2kx runs with --calibrate-pipelines N each.
#
# OUT/summary.txt: per workload the choice (mode, reason, calibration) and the wall times.
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); T=${3:-}
mkdir -p "$OUT"; cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
W=$(mktemp -d); SUM=$OUT/summary.txt; : > "$SUM"
"$G" gen seed-scale -o "$W/seed2k" --pipelines 2000 --vertex-functions 970 --max-run 250 > /dev/null 2>&1
mkdir -p "$W/seed2kx" && cp -r "$W/seed2k"/. "$W/seed2kx/"
sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/seed2kx/pipelines.json"
one() {
  local name=$1 script=$2; shift 2
  /usr/bin/time -f "%e" -o "$W/$name.time" "$G" harvest "$script" -o "$W/$name.granary" --backend vulkan --capture auto --json -q -j 16 "$@" ${HX:-} > "$W/$name.json" 2> "$W/$name.err"
  echo "$name harvest: exit $?, $(cat "$W/$name.time") s wall of the whole command (calibration included)" >> "$SUM"
  "$G" warm "$W/$name.granary" -j 1 --json "$@" > "$W/$name-warm.json" 2>> "$W/$name.err"
  python3 - "$W/$name.json" "$W/$name-warm.json" >> "$SUM" <<'PY'
import json, sys
h, w = (json.load(open(p)) for p in sys.argv[1:3])
print("  capture:", json.dumps(h.get("capture")))
print("  harvest wall_seconds %.2f, device captures %s, succeeded %s" % (h["wall_seconds"], h["device"]["captures"], h["succeeded"]))
print("  warm -j1: %.3f s, p50 %.1f us, from_binaries %s, cache_hits %s" % (w["wall_seconds"], w["per_pipeline_us"]["p50"], w["from_binaries"], w["cache_hits"]))
PY
}
one seed2kx "$W/seed2kx/pipelines.json" --no-pipeline-libraries
# What the sample's size decides on seed2kx (SAMPLES, default "256 1000"; 64 is the run above).
for n in ${SAMPLES-256 1000}; do
  HX="--calibrate-pipelines $n" one "seed2kx-sample$n" "$W/seed2kx/pipelines.json" --no-pipeline-libraries
done
one example examples/renderer/pipelines.json
if [ -n "$T" ]; then
  GRANARY_REQUIRE_VULKAN=1 timeout -k 10 300 "$T" --test-threads 4 > "$OUT/vulkan-tests.txt" 2>&1
  echo "tests/vulkan.rs: exit $? $(grep -E '^test result' "$OUT/vulkan-tests.txt" | tail -1)" >> "$SUM"
fi
tail -c 3000 "$W"/*.err > "$OUT/stderr.txt" 2>/dev/null
rm -rf "$W"; cat "$SUM"
