#!/usr/bin/env bash
# Every NVIDIA run the open issues still wait for, in one command with a time limit per step,
# most needed first (device time is scarce: one call, one start):
#   1. ray tracing (issue 21 item 7): scripts/device-ray-tracing.sh — the native tests (the
#      warm-from-binaries test with its group handles among them) and the corpora's
#      ray-tracing pipelines counted apart;
#   2. the frame loop's three modes with drawing and the pixel check (issue 25), plus seed2kx
#      (binaries that carry NVIDIA's dictionary) and seed2kx-reuse (--reuse-binaries-by-key,
#      issue 24 item 1): scripts/device-frames.sh with EXTRA;
#   3. GPU time of fast-linked against whole pipelines (issue 24 item 6): scripts/device-link-cost.sh;
#   4. what --calibrate-pipelines' sample size decides on seed2kx (issue 24 item 4):
#      scripts/device-capture-auto.sh with SAMPLES;
#   5. whole variants against fast-linked libraries, harvest and warm (issue 24 item 6):
#      scripts/device-whole-variants.sh;
#   6. seed2kx with NVIDIA's dictionary binary and without it (one process against shards),
#      capture, bytes and warm at -j1/4/16 (issue 24 item 2), and where the frame loop's crash on
#      the dictionary archive strikes (warm --hold, frame_loop --trace): scripts/device-dictionary.sh.
#
#   scripts/device-pending.sh BIN OUT CORPORA
#
# BIN holds granary (release), native-test (`cargo test --release --no-run -p granary-vulkan
# --test native`), frame_loop and link_cost (`cargo build --release -p granary-vulkan
# --example frame_loop --example link_cost`) and spirv-val. VL_PATH and VL_LIB, where set, put
# the Khronos validation layer (1.3.296 or newer) on the layer and library paths of step 1.
# OUT/steps.txt has each step's exit status; each step's own summary is under OUT/STEP/.
# STEPS (default "rt frames link-cost capture-auto variants dictionary") picks steps; a device call runs
# at most 600 s, so split them: STEPS="rt variants" (at most 450 s), then STEPS="frames
# link-cost" (at most 550 s), then STEPS="capture-auto". RT_LIMIT, FRAMES_LIMIT, LINK_LIMIT,
# AUTO_LIMIT, VARIANTS_LIMIT, DICT_LIMIT set each step's seconds; FRAMES_EXTRA (default "seed2kx
# seed2kx-reuse") the frame step's extra workloads.
# The native tests run one at a time (TEST_THREADS, default 1): with four threads in one
# process four of them never ended on an H100 (2026-12-07), a hang not yet explained.
set -uo pipefail
BIN=$(realpath "$1"); OUT=$(realpath -m "$2"); C=$(realpath "$3")
mkdir -p "$OUT"; cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "$name: exit $? after $((SECONDS - t0)) s (limit $limit)" | tee -a "$OUT/steps.txt"
}
: > "$OUT/steps.txt"
want() { [[ " ${STEPS:-rt frames link-cost capture-auto variants dictionary} " == *" $1 "* ]]; }
want rt && step rt "${RT_LIMIT:-330}" env ${VL_PATH:+VK_ADD_LAYER_PATH=$VL_PATH LD_LIBRARY_PATH=${VL_LIB:-}} TEST_TIMEOUT="${TEST_TIMEOUT:-120}" TEST_THREADS="${TEST_THREADS:-1}" \
  scripts/device-ray-tracing.sh "$BIN" "$OUT/rt" "$C"
want frames && step frames "${FRAMES_LIMIT:-400}" env CHECK=64 EXTRA="${FRAMES_EXTRA-seed2kx seed2kx-reuse}" scripts/device-frames.sh "$BIN/granary" "$BIN/frame_loop" "$OUT/frames"
want link-cost && step link-cost "${LINK_LIMIT:-150}" scripts/device-link-cost.sh "$BIN/granary" "$BIN/link_cost" "$OUT/link-cost"
want capture-auto && step capture-auto "${AUTO_LIMIT:-180}" env SAMPLES="256 1000" scripts/device-capture-auto.sh "$BIN/granary" "$OUT/capture-auto"
want variants && step variants "${VARIANTS_LIMIT:-120}" scripts/device-whole-variants.sh "$BIN/granary" "$OUT/variants"
want dictionary && step dictionary "${DICT_LIMIT:-150}" scripts/device-dictionary.sh "$BIN/granary" "$OUT/dictionary" "$BIN/frame_loop"
for s in rt frames link-cost capture-auto variants dictionary; do
  [ -f "$OUT/$s/summary.txt" ] && { echo "== $s"; cat "$OUT/$s/summary.txt"; }
done
