#!/usr/bin/env bash
# The Vulkan layer under the Khronos validation layer, on the local device (an NVIDIA H200, or
# lavapipe): harvest and warm with `--validate`, libraries and whole pipelines, from binaries
# and from pipeline-cache data. One JSON per step into OUT, a line per step in
# OUT/summary.txt (exit status, wall time, validation messages, how pipelines were made),
# each step's stderr under OUT/logs, all of it as OUT/all.tar.gz.
#
#   scripts/validate-vulkan.sh GRANARY OUT
#
# GRANARY is a release `granary` binary. The layer must be one that knows the extensions the
# device has (VK_KHR_pipeline_binary needs 1.3.296 or newer: Debian 12's 1.3.239 does not):
# point VK_ADD_LAYER_PATH at its folder. Workloads: the bundled example, seed2k (2,000
# pipelines over 970 vertex functions, runs up to 250: `gen seed-scale`) with libraries for
# its unspecialized attachments, and seed2kx (seed2k expanded to rgba8unorm, harvested with
# --no-pipeline-libraries: whole pipelines).
#
#   harvest-W-bin    harvest --backend vulkan --validate      (binaries where the device has them)
#   harvest-W-cache  harvest --backend vulkan --no-pipeline-binaries --validate
#   warm-W-bin       warm W-bin --validate                    (binaries; libraries from binaries)
#   warm-W-libcomp   warm W-bin --libraries compile --validate
#   warm-W-cache     warm W-cache --source cache --validate
#   warm-W-nolib     warm W-bin --no-pipeline-libraries --validate (library sets compiled whole)
#
# Environment: ONLY (workloads, default "example seed2k seed2kx"), STEP_TIMEOUT (default 600).
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 GRANARY OUT" >&2
  exit 2
fi
G=$(realpath "$1"); OUT=$(realpath -m "$2")
mkdir -p "$OUT/logs"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
SUM=$OUT/summary.txt
J=$(nproc); [ "$J" -gt 16 ] && J=16
: > "$SUM"
say() { echo "$*" | tee -a "$SUM"; }
fields() {
  [ -s "$1" ] || return 0
  grep -oE '"(validation_messages|errors|warnings|pipelines|compiled|failed|from_binaries|cache_hits|fell_back|key_mismatches|linked|wall_seconds)": [0-9.eE+-]+' "$1" \
    | tr -d '"' | tr '\n' ' '
}
step() {
  local name=$1 out=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout -k 10 "${STEP_TIMEOUT:-600}" "$@" > "$out" 2> "$OUT/logs/$name.err" < /dev/null
  rc=$?
  t1=$(date +%s.%N)
  say "$name: exit $rc, $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s; $(fields "$out")"
  grep -E "^granary: (validation|VK_LAYER)" "$OUT/logs/$name.err" | head -4 | sed 's/^/    /' | tee -a "$SUM"
  [ "$rc" -ge 2 ] && tail -n 3 "$OUT/logs/$name.err" | sed 's/^/    /' | tee -a "$SUM"
  return 0
}
say "granary: $("$G" --version 2>&1); $(uname -srm), -j $J; VK_ADD_LAYER_PATH=${VK_ADD_LAYER_PATH:-}"
step devices "$OUT/devices.json" "$G" devices --json
declare -A SCRIPT=([example]=examples/renderer/pipelines.json) HARGS=([example]="")
if "$G" gen seed-scale -o "$W/seed2k" --pipelines 2000 --vertex-functions 970 --max-run 250 > "$OUT/logs/gen.out" 2>&1; then
  SCRIPT[seed2k]=$W/seed2k/pipelines.json; HARGS[seed2k]=""
  mkdir -p "$W/seed2kx" && cp -r "$W/seed2k"/. "$W/seed2kx/" \
    && sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/seed2kx/pipelines.json" \
    && SCRIPT[seed2kx]=$W/seed2kx/pipelines.json && HARGS[seed2kx]="--no-pipeline-libraries"
fi
for w in ${ONLY:-example seed2k seed2kx}; do
  s=${SCRIPT[$w]:-}; [ -n "$s" ] || { say "$w: no script"; continue; }
  # shellcheck disable=SC2086
  step "harvest-$w-bin" "$OUT/harvest-$w-bin.json" "$G" harvest "$s" -o "$W/$w-bin.granary" --backend vulkan --capture device ${HARGS[$w]} -j "$J" --validate --json -q
  # shellcheck disable=SC2086
  step "harvest-$w-cache" "$OUT/harvest-$w-cache.json" "$G" harvest "$s" -o "$W/$w-cache.granary" --backend vulkan --no-pipeline-binaries ${HARGS[$w]} -j "$J" --validate --json -q
  step "warm-$w-bin" "$OUT/warm-$w-bin.json" "$G" warm "$W/$w-bin.granary" -j "$J" --validate --json
  step "warm-$w-libcomp" "$OUT/warm-$w-libcomp.json" "$G" warm "$W/$w-bin.granary" -j "$J" --libraries compile --validate --json
  step "warm-$w-cache" "$OUT/warm-$w-cache.json" "$G" warm "$W/$w-cache.granary" --source cache -j "$J" --validate --json
  step "warm-$w-nolib" "$OUT/warm-$w-nolib.json" "$G" warm "$W/$w-bin.granary" -j "$J" --no-pipeline-libraries --validate --json
done
(cd "$OUT" && shopt -s nullglob && tar -czf all.tar.gz -- *.json summary.txt logs)
echo "wrote $OUT/all.tar.gz"
