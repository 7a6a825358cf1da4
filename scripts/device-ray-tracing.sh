#!/usr/bin/env bash
# Ray-tracing pipelines and the real-shader corpora on a device with VK_KHR_ray_tracing_pipeline
# (issue 21 item 7): the native Vulkan tests (ray-tracing fixtures of every group type and field,
# a harvest captured and warmed from its binaries with its group handles) without and with the
# Khronos validation layer, then scripts/corpus-harvest.sh on the corpora (each sample's
# ray-tracing pipeline among the others) and the ray-tracing pipelines of each harvest counted
# apart: archived with this device's binaries, and failed with their reasons. One line per step
# in OUT/summary.txt; everything else under OUT.
#
#   scripts/device-ray-tracing.sh BIN OUT CORPORA
#
# BIN holds `granary` (release), `spirv-val` and `native-test` (`cargo test --release --no-run
# -p granary-vulkan --test native`, renamed). Point VK_ADD_LAYER_PATH at a validation layer that
# knows the device's extensions (1.3.296 or newer for VK_KHR_pipeline_binary).
set -uo pipefail
BIN=$(realpath "$1"); OUT=$(realpath -m "$2"); C=$(realpath "$3")
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
SUM=$OUT/summary.txt; : > "$SUM"
export GRANARY_SPIRV_VAL=$BIN/spirv-val GRANARY_REQUIRE_VULKAN=1 __GL_SHADER_DISK_CACHE=0
export GRANARY_VALIDATE_EXPECT=${GRANARY_VALIDATE_EXPECT:-WARNING-vkGetDeviceProcAddr-device,UNASSIGNED-CoreValidation-Shader-OutputNotConsumed}
for v in 0 1; do
  GRANARY_VALIDATE=$v timeout -k 10 ${TEST_TIMEOUT:-300} "$BIN/native-test" --test-threads "${TEST_THREADS:-4}" --nocapture > "$OUT/native-validate$v.txt" 2>&1
  rc=$?
  echo "native-test (GRANARY_VALIDATE=$v): exit $rc $(grep -E '^test result' "$OUT/native-validate$v.txt" | tail -1)" >> "$SUM"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    # Out of time (a test hung): each test alone, in its own process, to name the one.
    "$BIN/native-test" --list 2>/dev/null | sed -n 's/: test$//p' | while read -r t; do
      GRANARY_VALIDATE=$v timeout -k 5 60 "$BIN/native-test" --exact "$t" --test-threads 1 --nocapture \
        > "$OUT/alone-$v-$t.txt" 2>&1
      echo "  alone: $t exit $?" >> "$SUM"
    done
  fi
  grep -E "^test .*ray_tracing|ray.tracing|group order|recursion|dynamic stack|SKIP_TRIANGLES|library with" \
    "$OUT/native-validate$v.txt" | sed 's/^/  /' >> "$SUM"
done
scripts/corpus-harvest.sh "$BIN/granary" "$OUT/corpus" "$C" > /dev/null 2>&1
sed 's/^/corpus: /' "$OUT/corpus/summary.txt" >> "$SUM"
for c in hlsl slang glslang-hlsl; do
  [ -f "$OUT/corpus/$c/vulkan.ls.json" ] || continue
  python3 - "$OUT/corpus/$c/pipelines.json" "$OUT/corpus/$c/vulkan.ls.json" "$OUT/corpus/$c-vulkan.json" "$c" >> "$SUM" <<'PY'
import json, sys
script, ls, harvest = (json.load(open(p)) for p in sys.argv[1:4])
name = sys.argv[4]
made = [p["label"] for p in script["pipelines"] if "rayTracing" in p.get("vulkan", {}).get("state", {})]
archived = [e for e in ls["entries"] if e.get("kind") == "ray_tracing"]
with_binaries = [e for e in archived if any(d.get("binaries") or d.get("binary_list") for d in e.get("devices", []))]
failed = [f for f in harvest.get("failures", []) if any(m in (f.get("message") or "") for m in made)
          or any(m in (f.get("pipeline") or "") for m in made)]
print("%s ray tracing: %d made, %d archived, %d with this device's binaries, %d failed%s" % (
    name, len(made), len(archived), len(with_binaries), len(failed),
    "".join("\n  %s: %s" % (f.get("pipeline"), (f.get("message") or "")[:200]) for f in failed)))
PY
done
cat "$SUM"
