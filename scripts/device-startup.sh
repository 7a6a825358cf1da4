#!/usr/bin/env bash
# What a process pays to start and stop Vulkan, and whether `--capture auto`'s calibration could
# measure warm starts without a process each (issue 24 item 4: the calibration's cost).
#
#   scripts/device-startup.sh GRANARY OUT     (on the device, after . .gl/setup.sh)
#
# Steps (ROUNDS, default 3, interleaved):
#   one-cache   a one-pipeline harvest, --capture cache: the summary's device_seconds (open, close)
#               against the process's wall (/usr/bin/time);
#   one-auto    the same with --capture auto answered by the machine's record (it inspects the
#               device once more before opening it);
#   devices     `granary devices --json`: the driver loaded and the devices listed, no device made;
#   warm-b/-k   the 1/32 sample of seed2kx harvested with binaries / cache data (as the calibration
#               does), each warmed at -j1 by a fresh process (what the calibration runs now);
#   rep-b/-k    the same archives warmed by one process with --repeat 3 (a fresh loader per pass):
#               per-pass walls, to compare with the fresh processes'.
# OUT/summary.txt holds one line per step.
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2")
mkdir -p "$OUT/raw"; R=$OUT/raw; SUM=$OUT/summary.txt; : > "$SUM"
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
W=$(mktemp -d); ROUNDS=${ROUNDS:-3}
# shellcheck source=scripts/lib/step.sh
. "$(dirname "$0")/lib/step.sh"
step() { step_run "$1" 120 "${@:2}"; step_say "$1" $?; }
$G gen seed-scale -o "$W/one" --pipelines 1 --vertex-functions 1 --max-run 1 > /dev/null
$G gen seed-scale -o "$W/s" --pipelines 2000 --vertex-functions 970 --max-run 250 > /dev/null
for f in "$W/one/pipelines.json" "$W/s/pipelines.json"; do
  sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$f"
done
H="harvest --backend vulkan --no-pipeline-libraries --json -q"
# The calibration's sample (its default: 1/32 of seed2kx's 2,000 pipelines, -j16).
$G $H "$W/s/pipelines.json" -o "$W/b.granary" --capture binaries --shard 0/32 -j 16 --check-outputs off > /dev/null 2>&1
$G $H "$W/s/pipelines.json" -o "$W/k.granary" --capture cache --shard 0/32 -j 16 --check-outputs off > /dev/null 2>&1
export GRANARY_CACHE_DIR=$W/record
$G $H "$W/one/pipelines.json" -o "$W/auto0.granary" --capture auto > "$R/auto-record.json" 2>&1
for r in $(seq 1 "$ROUNDS"); do
  step "one-cache-r$r" $G $H "$W/one/pipelines.json" -o "$W/one-$r.granary" --capture cache
  step "one-auto-r$r" $G $H "$W/one/pipelines.json" -o "$W/auto-$r.granary" --capture auto
  step "devices-r$r" $G devices --json
  for i in 1 2 3; do
    step "warm-b-r$r.$i" $G warm "$W/b.granary" -j 1 --no-pipeline-libraries --json
    step "warm-k-r$r.$i" $G warm "$W/k.granary" -j 1 --no-pipeline-libraries --json
  done
  step "rep-b-r$r" $G warm "$W/b.granary" -j 1 --no-pipeline-libraries --repeat 3 --json
  step "rep-k-r$r" $G warm "$W/k.granary" -j 1 --no-pipeline-libraries --repeat 3 --json
done
ls -l "$W"/*.granary >> "$SUM"
tar czf "$OUT/raw.tar.gz" -C "$R" . && rm -rf "$R"
