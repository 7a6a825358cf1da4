#!/usr/bin/env bash
# The run-time loader on a driver with VK_KHR_pipeline_binary and graphics pipeline
# libraries (issue 24 item 2, issue 25): whether the loader recognises library sets that carry
# a binary other pipelines share (NVIDIA's dictionary) and compiles their part instead of
# linking them (which crashes NVIDIA 580), and what that costs at warm start.
#
#   scripts/device-loader.sh GRANARY OUT [TEST_BINARY...]
#
# Workloads: the bundled example (335 pipelines, 202 archived as libraries) and seed2k
# (`gen seed-scale --pipelines 2000 --vertex-functions 970 --max-run 250`, libraries on),
# each harvested once at -j JOBS (default 16) with binaries; then each archive warmed at -j 1
# with `--libraries binaries` (the default: shared-binary library sets compiled),
# `binaries-all` (every library linked from its binaries; expected to crash on seed2k) and
# `compile` (every library part compiled). Each TEST_BINARY (release test binaries) runs
# last with GRANARY_REQUIRE_VULKAN=1. OUT/summary.txt has one line per step; every JSON and
# stderr goes into OUT/all.tar.gz.
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); shift 2
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
R=$OUT/raw; mkdir -p "$R"
SUM=$OUT/summary.txt; : > "$SUM"
W=$(mktemp -d)
J=${JOBS:-16}
say() { echo "$*" | tee -a "$SUM"; }
step() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$R/$name.time" timeout -k 5 "${STEP_TIMEOUT:-300}" "$@" > "$R/$name.json" 2> "$R/$name.err"
  local rc=$?
  say "$name: exit $rc, $(python3 - "$R/$name.json" "$R/$name.time" <<'PY'
import json, sys, collections
t = open(sys.argv[2]).read().split()
out = "%s s wall, %.0f MiB peak" % (t[-2], int(t[-1]) / 1024) if len(t) >= 2 else "no time"
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print(out + "; no JSON"); sys.exit()
keep = {k: d[k] for k in ("succeeded", "failed", "from_binaries", "compiled", "cache_hits", "fell_back",
                          "key_mismatches", "linked", "wall_seconds") if k in d}
for k in ("per_pipeline_us",):
    if isinstance(d.get(k), dict):
        keep[k] = {q: round(v, 1) for q, v in d[k].items() if q in ("p50", "p99")}
reasons = collections.Counter()
for p in d.get("pipelines_detail", d.get("records", [])) if isinstance(d.get("pipelines_detail", d.get("records")), list) else []:
    r = p.get("fallback_reason")
    if r:
        reasons[r[:60]] += 1
if reasons:
    keep["fallback_reasons"] = dict(reasons)
print(out + "; " + json.dumps(keep, sort_keys=True))
PY
)"
}

"$G" devices --json > "$R/devices.json" 2>&1
say "device: $(python3 -c "import json; d=json.load(open('$R/devices.json'))['devices'][0]; print(d['device_name'], d['driver_info'])")"
"$G" gen seed-scale -o "$W/seed2k" --pipelines "${PIPELINES:-2000}" --vertex-functions "${VERTEX_FUNCTIONS:-970}" --max-run "${MAX_RUN:-250}" > /dev/null 2>&1
for w in example:examples/renderer/pipelines.json seed2k:$W/seed2k/pipelines.json; do
  n=${w%%:*}; s=${w#*:}
  step "$n-harvest" "$G" harvest "$s" --backend vulkan --capture device --json -q -j "$J" -o "$W/$n.granary"
  for l in binaries binaries-all compile; do
    step "$n-warm-$l" "$G" warm "$W/$n.granary" -j 1 --libraries "$l" --json
  done
done
for t in "$@"; do
  name=$(basename "$t")
  GRANARY_REQUIRE_VULKAN=1 timeout -k 5 "${TEST_TIMEOUT:-400}" "$t" --test-threads 1 > "$R/test-$name.out" 2>&1
  say "test $name: exit $? ($(grep -E '^test result' "$R/test-$name.out" | tail -1))"
done
tar -czf "$OUT/all.tar.gz" -C "$R" .
rm -rf "$W"
