#!/usr/bin/env bash
# Where a capture harvest's time goes on a driver with VK_KHR_pipeline_binary, against the
# baseline a Vulkan developer writes (N threads sharing one VkPipelineCache), and what each
# archive warms at (issue 24). Workload: seed2kx (`gen seed-scale --pipelines 2000
# --vertex-functions 970 --max-run 250`, every unspecialized attachment expanded to
# rgba8unorm, whole pipelines: --no-pipeline-libraries), and the bundled example.
#
#   scripts/device-capture.sh GRANARY OUT [VULKAN_TEST_BINARY]
#
# Per round (ROUNDS, default 2; granary and the baseline interleaved, order alternating):
#   cap      harvest, binaries (every binary fetched; equal keys with other bytes counted)
#   reuse    harvest, binaries, --reuse-binaries-by-key (a key and size seen before not fetched)
#   internal harvest, --capture-from-internal-cache (compile with a shared cache, binaries from
#            the driver's internal cache by create info)
#   cache    harvest, --no-pipeline-binaries (VkPipelineCache data)
#   base     warm cap's archive --source spirv --pipeline-cache-out (the baseline, cold)
# then warm: cap's archive from binaries at -j 1 2 4 8 16; the baseline's cache file
# (--source spirv --pipeline-cache-in) and the cache-mode archive at -j 1 and 16; internal's and
# reuse's archives from binaries at -j 1. The example: cap and base once each. With
# VULKAN_TEST_BINARY, `tests/vulkan.rs` (release) runs last.
#
# OTHER (a path to another granary build) adds, per round, its cache-mode harvest (cache-other)
# beside granary's (after it in odd rounds, before it in even ones), and its archive's warm at -j 1 and 16: an A/B of two builds in one run.
# PIPELINES, VERTEX_FUNCTIONS, MAX_RUN resize the workload (a quick check on lavapipe, or
# the full 33,000/16,000/1,000); SKIP lists step-name prefixes not to run ("internal reuse").
# OUT/summary.txt has one line per step (wall, peak RSS and the JSON's main figures); every
# JSON and stderr goes into OUT/all.tar.gz (only a few files come back from the device).
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); T=${3:-}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
R=$OUT/raw; mkdir -p "$R"
SUM=$OUT/summary.txt; : > "$SUM"
W=$(mktemp -d)
J=${JOBS:-16}
ROUNDS=${ROUNDS:-2}
say() { echo "$*" | tee -a "$SUM"; }
# step NAME CMD...: runs CMD with its JSON to raw/NAME.json, stderr to raw/NAME.err, timed.
step() {
  local name=$1; shift
  for s in ${SKIP:-}; do [[ $name == $s* ]] && return 0; done
  /usr/bin/time -f "%e %M" -o "$R/$name.time" timeout -k 5 "${STEP_TIMEOUT:-300}" "$@" > "$R/$name.json" 2> "$R/$name.err"
  local rc=$?
  say "$name: exit $rc, $(python3 - "$R/$name.json" "$R/$name.time" <<'EOF'
import json, sys
t = open(sys.argv[2]).read().split()
out = "%s s wall, %.0f MiB peak" % (t[-2], int(t[-1]) / 1024) if len(t) >= 2 else "no time"
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(out + "; no JSON"); sys.exit()
keep = {}
for k in ("succeeded", "failed", "wall_seconds", "pipelines", "from_binaries", "compiled", "fell_back",
          "key_mismatches", "hit_rate", "p50_us", "p99_us", "cache_hits", "bytes_written", "peak_rss_bytes"):
    if k in d:
        keep[k] = d[k]
dev = d.get("device") or {}
for k in ("pipelines_created", "cache_hits", "driver_seconds", "key_seconds", "capture_seconds", "binaries", "binary_bytes",
          "binary_fetches_skipped", "binary_key_mismatches"):
    if isinstance(dev, dict) and k in dev:
        keep["device." + k] = round(dev[k], 3) if isinstance(dev[k], float) else dev[k]
for k in ("per_pipeline_us", "driver_us"):
    if isinstance(d.get(k), dict):
        keep[k] = {q: round(v, 1) for q, v in d[k].items() if q in ("p50", "p99")}
for k in ("cpu_seconds", "pipeline_cache_out_bytes", "resumed"):
    if k in d:
        keep[k] = round(d[k], 3) if isinstance(d[k], float) else d[k]
if d.get("failures"):
    keep["first_failure"] = d["failures"][0].get("message", "")[:160]
print(out + "; " + json.dumps(keep, sort_keys=True))
EOF
)"
}

"$G" devices --json > "$R/devices.json" 2>&1
say "device: $(python3 -c "import json; d=json.load(open('$R/devices.json'))['devices'][0]; print(d['device_name'], d['driver_info'])")"
"$G" gen seed-scale -o "$W/seed2k" --pipelines "${PIPELINES:-2000}" --vertex-functions "${VERTEX_FUNCTIONS:-970}" --max-run "${MAX_RUN:-250}" > /dev/null 2>&1
mkdir -p "$W/seed2kx" && cp -r "$W/seed2k"/. "$W/seed2kx/"
sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/seed2kx/pipelines.json"
S=$W/seed2kx/pipelines.json
H=(harvest "$S" --backend vulkan --capture device --no-pipeline-libraries --json -q -j "$J")
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then
    step "cap-r$r" "$G" "${H[@]}" -o "$W/cap.granary"
    step "base-r$r" "$G" warm "$W/cap.granary" --source spirv -j "$J" --no-pipeline-libraries --pipeline-cache-out "$W/base.cache" --json
  else
    step "base-r$r" "$G" warm "$W/cap.granary" --source spirv -j "$J" --no-pipeline-libraries --pipeline-cache-out "$W/base.cache" --json
    step "cap-r$r" "$G" "${H[@]}" -o "$W/cap.granary"
  fi
  step "reuse-r$r" "$G" "${H[@]}" -o "$W/reuse.granary" --reuse-binaries-by-key
  step "internal-r$r" "$G" "${H[@]}" -o "$W/internal.granary" --capture-from-internal-cache
  [ -n "${OTHER:-}" ] && [ $((r % 2)) -eq 0 ] && step "cache-other-r$r" "$OTHER" "${H[@]}" -o "$W/other.granary" --no-pipeline-binaries
  step "cache-r$r" "$G" "${H[@]}" -o "$W/cache.granary" --no-pipeline-binaries
  [ -n "${OTHER:-}" ] && [ $((r % 2)) -eq 1 ] && step "cache-other-r$r" "$OTHER" "${H[@]}" -o "$W/other.granary" --no-pipeline-binaries
done
for j in 1 2 4 8 16; do
  step "warm-bin-j$j" "$G" warm "$W/cap.granary" -j "$j" --no-pipeline-libraries --json
done
for j in 1 16; do
  step "warm-cachein-j$j" "$G" warm "$W/cap.granary" --source spirv --pipeline-cache-in "$W/base.cache" -j "$j" --no-pipeline-libraries --json
  step "warm-cachemode-j$j" "$G" warm "$W/cache.granary" -j "$j" --no-pipeline-libraries --json
  [ -n "${OTHER:-}" ] && step "warm-cacheother-j$j" "$G" warm "$W/other.granary" -j "$j" --no-pipeline-libraries --json
done
[ -s "$W/internal.granary" ] && step "warm-internal-j1" "$G" warm "$W/internal.granary" -j 1 --no-pipeline-libraries --json
step "warm-reuse-j1" "$G" warm "$W/reuse.granary" -j 1 --no-pipeline-libraries --json
EX=examples/renderer/pipelines.json
step "example-cap" "$G" harvest "$EX" --backend vulkan --capture device --json -q -j "$J" -o "$W/ex.granary"
step "example-base" "$G" warm "$W/ex.granary" --source spirv -j "$J" --pipeline-cache-out "$W/ex.cache" --json
step "example-warm-bin-j1" "$G" warm "$W/ex.granary" -j 1 --json
ls -l "$W"/*.granary "$W"/*.cache >> "$SUM" 2>&1
# Per device section: the bytes the issue's goal compares with the baseline's cache file.
for a in cap cache other; do
  [ -s "$W/$a.granary" ] && "$G" ls "$W/$a.granary" --json 2> /dev/null | python3 -c 'import json, sys
d = json.load(sys.stdin)
print("%s.granary: %d bytes; device sections (cache data, binaries): %s" % (sys.argv[1], d["bytes"],
      [(x["cache_bytes"], x["binary_bytes"]) for x in d["devices"]]))' "$a" >> "$SUM"
done
if [ -n "$T" ]; then
  GRANARY_REQUIRE_VULKAN=1 timeout -k 10 300 "$T" --test-threads 4 > "$R/vulkan-tests.txt" 2>&1
  say "tests/vulkan.rs: exit $? $(grep -E '^test result' "$R/vulkan-tests.txt" | tail -1)"
fi
tar -czf "$OUT/all.tar.gz" -C "$OUT" raw summary.txt
rm -rf "$W" "$R"
