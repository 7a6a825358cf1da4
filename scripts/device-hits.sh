#!/usr/bin/env bash
# Why granary's cache-data harvest finds fewer pipelines in its shared VkPipelineCache than the
# baseline's run does (issue 24 item 5), and what the pipeline order has to do with it.
# Workload: seed2kx (as scripts/device-capture.sh makes it); "shuffled" is the same script with
# its pipelines in a fixed random order (the baseline creates them in archive order, which is
# sorted by pipeline key, so effectively random too). At one thread no two creations overlap:
# equal hit counts there mean the two create the same things and any gap at -j16 comes from
# the order or the overlap; unequal counts mean the create infos differ.
#
#   [OTHER=granary-build] scripts/device-hits.sh GRANARY OUT   (on the device, after . .gl/setup.sh)
#
# Steps (ROUNDS of the -j16 ones, interleaved, then the -j1 runs once; SKIP as in
# device-capture.sh): c16 / c16s harvest --capture cache at -j16 of the script / the shuffled
# script; b16 the baseline (warm --source spirv --pipeline-cache-out) at -j16; c1, c1s, b1 the
# same at -j1; auto16 harvest --capture auto (calibration included) at -j16, auto16r the same
# to a new output, answered by the machine's record that auto16 wrote. With OTHER (another
# build, an A/B in one run): o16 and o1, its harvest of the script at -j16 and -j1. Where the
# rest of the wall goes: n16 harvests with --check-outputs off (no validator runs), f16 and
# f16n run the front end alone (--backend none) with and without the checks, v16 harvests the
# script's SPIR-V-input twin (the baseline's own input: no translation), and t16 is one
# c16 with --trace (OUT/trace.json, the threads' timelines). J1_ROUNDS (default 1) repeats the
# -j1 steps. OUT/summary.txt: wall, peak RSS, cache hits and driver time of each step.
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2")
mkdir -p "$OUT/raw"; R=$OUT/raw; SUM=$OUT/summary.txt; : > "$SUM"
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
W=$(mktemp -d); ROUNDS=${ROUNDS:-3}
say() { echo "$*" | tee -a "$SUM"; }
# shellcheck source=scripts/lib/step.sh
. "$(dirname "$0")/lib/step.sh"
step() {
  local name=$1; shift
  for s in ${SKIP:-}; do [[ $name == $s* ]] && return 0; done
  step_run "$name" 300 "$@"
  step_say "$name" $?
}
$G gen seed-scale -o "$W/s" --pipelines ${PIPELINES:-2000} --vertex-functions ${VERTEX_FUNCTIONS:-970} --max-run ${MAX_RUN:-250} > /dev/null
sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/s/pipelines.json"
mkdir -p "$W/r"; cp -r "$W/s/." "$W/r/"
python3 - "$W/r/pipelines.json" <<'EOF'
import json, random, sys
d = json.load(open(sys.argv[1])); random.Random(1).shuffle(d["pipelines"]); json.dump(d, open(sys.argv[1], "w"))
EOF
H="harvest --backend vulkan --no-pipeline-libraries --json -q"
# The baseline's input: an archive of the same pipelines (its SPIR-V; the capture is not used).
$G $H "$W/s/pipelines.json" -o "$W/in.granary" --capture cache -j 16 > /dev/null 2>&1
# The script's SPIR-V-input twin (scripts/spirv-input.py): each stage the module in.granary
# holds for it, so v16 starts from the same finished SPIR-V as the baseline.
python3 "$(dirname "$0")/spirv-input.py" "$G" "$W/s/pipelines.json" "$W/in.granary" "$W/v" >> "$SUM" 2>&1
for r in $(seq 1 "$ROUNDS"); do
  step "c16-r$r" $G $H "$W/s/pipelines.json" -o "$W/c16-$r.granary" --capture cache -j 16
  step "b16-r$r" $G warm "$W/in.granary" --source spirv -j 16 --no-pipeline-libraries --pipeline-cache-out "$W/b16-$r.cache" --json
  step "c16s-r$r" $G $H "$W/r/pipelines.json" -o "$W/c16s-$r.granary" --capture cache -j 16
  [ -n "${OTHER:-}" ] && step "o16-r$r" "$OTHER" $H "$W/s/pipelines.json" -o "$W/o16-$r.granary" --capture cache -j 16
  step "n16-r$r" $G $H "$W/s/pipelines.json" -o "$W/n16-$r.granary" --capture cache -j 16 --check-outputs off
  step "v16-r$r" $G $H "$W/v/pipelines.json" -o "$W/v16-$r.granary" --capture cache -j 16
  step "f16-r$r" $G harvest --backend none --json -q "$W/s/pipelines.json" -o "$W/f16-$r.granary" -j 16
  step "f16n-r$r" $G harvest --backend none --json -q "$W/s/pipelines.json" -o "$W/f16n-$r.granary" -j 16 --check-outputs off
done
step t16 $G $H "$W/s/pipelines.json" -o "$W/t16.granary" --capture cache -j 16 --trace "$OUT/trace.json"
# The machine's record of --capture auto decisions starts empty: auto16 calibrates and records,
# auto16r harvests to a new output and keeps the record's choice.
export GRANARY_CACHE_DIR=$W/record
step auto16 $G $H "$W/s/pipelines.json" -o "$W/auto.granary" --capture auto -j 16
step auto16r $G $H "$W/s/pipelines.json" -o "$W/auto-r.granary" --capture auto -j 16
for r in $(seq 1 "${J1_ROUNDS:-1}"); do
  step "c1-r$r" $G $H "$W/s/pipelines.json" -o "$W/c1.granary" --capture cache -j 1
  [ -n "${OTHER:-}" ] && step "o1-r$r" "$OTHER" $H "$W/s/pipelines.json" -o "$W/o1.granary" --capture cache -j 1
  step "c1s-r$r" $G $H "$W/r/pipelines.json" -o "$W/c1s.granary" --capture cache -j 1
  step "b1-r$r" $G warm "$W/in.granary" --source spirv -j 1 --no-pipeline-libraries --pipeline-cache-out "$W/b1.cache" --json
done
ls -l "$W"/*.cache "$W"/*.granary >> "$SUM"
tar czf "$OUT/raw.tar.gz" -C "$R" . && rm -rf "$R"
