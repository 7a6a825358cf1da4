#!/usr/bin/env bash
# The Vulkan layer on one device, from prebuilt binaries (a release `granary`, the Vulkan test
# binaries, `spirv-val`): every Vulkan test binary with GRANARY_REQUIRE_VULKAN=1 under the
# Khronos validation layer, the bundled example harvested and warmed under the layer, and the
# real-shader corpora (scripts/corpus-harvest.sh: SPIR-V passthrough, native pipelines, warm
# from binaries). One line per step in OUT/summary.txt; everything else under OUT.
#
#   scripts/device-suite.sh BIN OUT [CORPORA]
#
# Each test binary runs with --nocapture, so what a test reports (skips, key comparisons) is in
# OUT/tests/NAME.txt. BIN holds `granary`, `spirv-val` and the test binaries (`*-test`, each a `cargo test
# --no-run` executable renamed). Point VK_ADD_LAYER_PATH at a validation layer that knows the
# device's extensions (1.3.296 or newer for VK_KHR_pipeline_binary).
set -uo pipefail
BIN=$(realpath "$1"); OUT=$(realpath -m "$2"); C=${3:-}
mkdir -p "$OUT/tests"
cd "$(dirname "$0")/.."
SUM=$OUT/summary.txt; : > "$SUM"
export GRANARY_SPIRV_VAL=$BIN/spirv-val GRANARY_REQUIRE_VULKAN=1 GRANARY_VALIDATE=1
export GRANARY_VALIDATE_EXPECT=${GRANARY_VALIDATE_EXPECT:-WARNING-vkGetDeviceProcAddr-device,UNASSIGNED-CoreValidation-Shader-OutputNotConsumed}
export __GL_SHADER_DISK_CACHE=0
"$BIN/granary" devices --json > "$OUT/devices.json" 2>&1
echo "devices: $(grep -o '"name": "[^"]*"' "$OUT/devices.json" | head -1)" >> "$SUM"
for t in "$BIN"/*-test; do
  n=$(basename "$t")
  timeout -k 10 300 "$t" --test-threads 4 --nocapture > "$OUT/tests/$n.txt" 2>&1
  echo "$n: exit $? $(grep -E '^test result' "$OUT/tests/$n.txt" | tail -1)" >> "$SUM"
done
ONLY=example STEP_TIMEOUT=240 scripts/validate-vulkan.sh "$BIN/granary" "$OUT/validate" > /dev/null 2>&1
sed 's/^/validate: /' "$OUT/validate/summary.txt" >> "$SUM"
if [ -n "$C" ]; then
  scripts/corpus-harvest.sh "$BIN/granary" "$OUT/corpus" "$C" > /dev/null 2>&1
  sed 's/^/corpus: /' "$OUT/corpus/summary.txt" >> "$SUM"
fi
cat "$SUM"
