#!/usr/bin/env bash
# Measures `harvest --backend vulkan` on the local Vulkan device; docs/BENCHMARKS.md records
# the figures with this command. Every harvest writes its --json summary into OUT.
#
#   scripts/bench-vulkan.sh GRANARY OUT [PART]
#
# GRANARY is a release `granary` binary; OUT a folder for the summaries. PART picks what to
# run (default `scaling`):
#   scaling  the bundled example and a 2,000-pipeline seed-shaped workload at 1, 2, 4, 8 and 16
#            threads (-j above the core count is skipped), the `none` backend for comparison,
#            a second -j16 example harvest and `ls --json` of both (binary keys and content
#            hashes, to measure run-to-run determinism), and the example under --isolate.
#   full     the full seed-scale workload (33,000 pipelines) at the highest thread count, with
#            `ls --json` (gzipped) and `verify`.
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); PART=${3:-scaling}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$(dirname "$0")/.."
EX=examples/renderer/pipelines.json
CORES=$(nproc)
threads() { for j in 1 2 4 8 16; do [ "$j" -le "$CORES" ] && echo "$j"; done; }
harvest() { # NAME SCRIPT ARGS...
  local name=$1 script=$2; shift 2
  "$G" harvest "$script" -o "$W/$name.granary" --json -q "$@" > "$OUT/$name.json"
  echo "$name: exit $? $(grep -o '"wall_seconds": [0-9.]*' "$OUT/$name.json")"
}
"$G" devices --json > "$OUT/devices.json"
"$G" devices
case "$PART" in
scaling)
  "$G" gen seed-scale -o "$W/seed2k" --pipelines 2000 --vertex-functions 970 --max-run 250 > /dev/null
  for j in $(threads); do harvest "example-j$j" "$EX" --backend vulkan --capture device -j "$j"; done
  for j in $(threads); do harvest "seed2k-j$j" "$W/seed2k/pipelines.json" --backend vulkan --capture device -j "$j"; done
  J=$(threads | tail -1)
  harvest example-none "$EX" -j "$J"
  harvest seed2k-none "$W/seed2k/pipelines.json" -j "$J"
  harvest example-again "$EX" --backend vulkan --capture device -j "$J"
  "$G" ls "$W/example-j$J.granary" --json > "$OUT/example-j$J.ls.json"
  "$G" ls "$W/example-again.granary" --json > "$OUT/example-again.ls.json"
  "$G" ls "$W/seed2k-j$J.granary" --json | gzip > "$OUT/seed2k-j$J.ls.json.gz"
  harvest example-isolate "$EX" --backend vulkan --capture device --isolate -j "$J"
  "$G" verify "$W"/*.granary
  ;;
full)
  "$G" gen seed-scale -o "$W/seed" > /dev/null
  J=$(threads | tail -1)
  harvest "seed-j$J" "$W/seed/pipelines.json" --backend vulkan --capture device -j "$J"
  "$G" ls "$W/seed-j$J.granary" --json | gzip > "$OUT/seed-j$J.ls.json.gz"
  "$G" verify "$W/seed-j$J.granary"
  ;;
*) echo "unknown part $PART"; exit 2 ;;
esac
