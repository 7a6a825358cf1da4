#!/usr/bin/env bash
# GPU cost of fast-linked pipelines against the same pipelines created whole (issue 24 item 6).
#
#   scripts/device-link-cost.sh GRANARY LINK_COST OUT
#
# LINK_COST is `cargo build --release -p granary-vulkan --example link_cost`. The bundled
# example (335 pipelines, 202 archived as graphics pipeline libraries) is harvested on this
# device with -j 16 (binaries where the driver has them); then link_cost takes every pipeline
# the loader fast-links there, makes it again whole the way Warmup::optimize_linked does, and
# times draws of both with GPU timestamps: SIZE×SIZE targets (default 1024), DRAWS timed draws
# each way per repetition (default 16), REPS repetitions (default 5), WORKERS creating threads
# (default 4). OUT/example.txt has one line per pipeline (GPU ns per draw both ways, the ratio,
# creation times); OUT/summary.txt the harvest's exit and link_cost's summary line (or its
# "timestamps unsupported" line); with JSON=1 also OUT/example.json (a second run, --json).
set -uo pipefail
G=$(realpath "$1"); L=$(realpath "$2"); OUT=$(realpath -m "$3")
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
SUM=$OUT/summary.txt; : > "$SUM"
W=$(mktemp -d)
say() { echo "$*" | tee -a "$SUM"; }
"$G" harvest examples/renderer/pipelines.json -o "$W/example.granary" --backend vulkan --capture device -q -j 16 > /dev/null \
  2> "$OUT/example-harvest.err"
say "example harvest: exit $?"
args=(--size "${SIZE:-1024}" --draws "${DRAWS:-16}" --reps "${REPS:-5}" --workers "${WORKERS:-4}")
timeout 500 "$L" "$W/example.granary" "${args[@]}" > "$OUT/example.txt" 2>&1
say "example link_cost: exit $?; $(grep -E '^link_cost ' "$OUT/example.txt")"
grep -E '^  (not drawable|failed):' "$OUT/example.txt" | head -20 | tee -a "$SUM"
if [ "${JSON:-0}" = 1 ]; then
  timeout 500 "$L" "$W/example.granary" "${args[@]}" --json > "$OUT/example.json" 2> "$OUT/example-json.err"
  say "example link_cost --json: exit $?"
fi
rm -rf "$W"
