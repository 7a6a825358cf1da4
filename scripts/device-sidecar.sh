#!/usr/bin/env bash
# The after-update sidecar and the C API on a real driver (issue 25 items 5 and 6).
#
#   scripts/device-sidecar.sh GRANARY WARM_C OUT [TEST_BINARY...]
#
# For the bundled example (335 pipelines) and seed2k (`gen seed-scale --pipelines 2000
# --vertex-functions 970 --max-run 250`): an archive with nothing for this device (harvested
# with `--backend none`, as after a driver update: no section matches) warmed at -j 1 three
# times with `--fallback compile --sidecar FILE` — the first launch compiles and writes the
# sidecar, the second and third read it — beside the same script harvested on this device and
# warmed from its binaries and from its own cache data (`--source cache`), the references.
# Then WARM_C (crates/granary-capi/examples/warm.c built against libgranary_capi.a) on the
# device-harvested example, pumping and with 2 workers; then each TEST_BINARY (release test
# binaries) with GRANARY_REQUIRE_VULKAN=1. OUT/summary.txt has one line per step; every JSON
# and stderr goes into OUT/all.tar.gz.
set -uo pipefail
G=$(realpath "$1"); C=$(realpath "$2"); OUT=$(realpath -m "$3"); shift 3
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
R=$OUT/raw; mkdir -p "$R"
SUM=$OUT/summary.txt; : > "$SUM"
W=$(mktemp -d)
say() { echo "$*" | tee -a "$SUM"; }
step() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$R/$name.time" timeout -k 5 "${STEP_TIMEOUT:-300}" "$@" > "$R/$name.json" 2> "$R/$name.err"
  local rc=$?
  say "$name: exit $rc, $(python3 - "$R/$name.json" "$R/$name.time" <<'PY'
import json, sys
t = open(sys.argv[2]).read().split()
out = "%s s wall, %.0f MiB peak" % (t[-2], int(t[-1]) / 1024) if len(t) >= 2 else "no time"
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print(out + "; no JSON"); sys.exit()
keep = {k: d[k] for k in ("succeeded", "failed", "created", "from_binaries", "compiled", "cache_hits",
                          "wall_seconds", "sidecar") if k in d}
if isinstance(d.get("per_pipeline_us"), dict):
    keep["per_pipeline_us"] = {q: round(v, 1) for q, v in d["per_pipeline_us"].items() if q in ("p50", "p99")}
print(out + "; " + json.dumps(keep, sort_keys=True))
PY
)"
}

"$G" devices --json > "$R/devices.json" 2>&1
say "device: $(python3 -c "import json; d=json.load(open('$R/devices.json'))['devices'][0]; print(d['device_name'], d['driver_info'])")"
"$G" gen seed-scale -o "$W/seed2k" --pipelines 2000 --vertex-functions 970 --max-run 250 > /dev/null 2>&1
for w in example:examples/renderer/pipelines.json seed2k:$W/seed2k/pipelines.json; do
  n=${w%%:*}; s=${w#*:}
  step "$n-harvest-none" "$G" harvest "$s" -o "$W/$n-none.granary" --backend none --json -q -j 16
  step "$n-harvest-device" "$G" harvest "$s" -o "$W/$n-dev.granary" --backend vulkan --capture device --json -q -j 16
  for i in 1 2 3; do
    step "$n-sidecar-launch$i" "$G" warm "$W/$n-none.granary" --fallback compile --sidecar "$W/$n.sidecar" -j 1 --json
  done
  step "$n-warm-binaries" "$G" warm "$W/$n-dev.granary" -j 1 --json
  step "$n-warm-cache" "$G" warm "$W/$n-dev.granary" --source cache -j 1 --json
done
for mode in pump workers; do
  extra=(); [ "$mode" = workers ] && extra=(--workers 2)
  timeout 300 "$C" "$W/example-dev.granary" "${extra[@]}" > "$R/capi-$mode.txt" 2>&1
  say "capi-$mode: exit $?; $(grep -E '^(warmup|loader):' "$R/capi-$mode.txt" | tr '\n' ' ')"
done
for t in "$@"; do
  b=$(basename "$t")
  GRANARY_REQUIRE_VULKAN=1 timeout 600 "$t" > "$R/test-$b.txt" 2>&1
  say "test $b: exit $?; $(grep -E '^test result' "$R/test-$b.txt" | tr '\n' ' ')"
done
tar -czf "$OUT/all.tar.gz" -C "$R" .
cat "$SUM"
