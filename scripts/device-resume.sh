#!/usr/bin/env bash
# `--resume` onto a device whose binaries the archive lacks (issue 23 item 4), on a real driver
# that captures VK_KHR_pipeline_binary binaries: the bundled example harvested without a device,
# then resumed on this one (every pipeline compiled there), warmed from the binaries, resumed
# again (nothing to do), and compared with a fresh device harvest merged with the first archive.
# Optionally runs a prebuilt Vulkan test binary (`cargo test --release --test vulkan --no-run`).
#
#   scripts/device-resume.sh GRANARY OUT [VULKAN_TEST_BINARY]
#
# One line per step in OUT/summary.txt; each command's JSON and stderr under OUT.
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); T=${3:-}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
SUM=$OUT/summary.txt; : > "$SUM"
EX=examples/renderer/pipelines.json
W=$(mktemp -d)
J=${JOBS:-16}
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }
step() { local name=$1; shift; /usr/bin/time -f "%e s wall, %M KiB peak" -o "$OUT/$name.time" "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"; echo "$?"; }

"$G" devices --json > "$OUT/devices.json" 2>&1
echo "device: $(field "$OUT/devices.json" "d['devices'][0]['device_name'] + ', ' + d['devices'][0]['driver_info']")" >> "$SUM"
rc=$(step none "$G" harvest "$EX" -o "$W/a.granary" --json -q -j "$J")
echo "harvest --backend none: exit $rc, $(field "$OUT/none.json" "d['succeeded']") pipelines; $(cat "$OUT/none.time")" >> "$SUM"
cp "$W/a.granary" "$W/none.granary"
rc=$(step resume1 "$G" harvest "$EX" -o "$W/a.granary" --json -q -j "$J" --resume --backend vulkan --capture device)
echo "resume onto the device: exit $rc, resumed $(field "$OUT/resume1.json" "d['resumed']"), recompiled_for_device $(field "$OUT/resume1.json" "d['recompiled_for_device']"), created $(field "$OUT/resume1.json" "d['device']['pipelines_created']") pipelines + $(field "$OUT/resume1.json" "d['device']['libraries_created']") libraries, $(field "$OUT/resume1.json" "d['device']['binaries']") binaries captured ($(field "$OUT/resume1.json" "d['device']['captures']")); $(cat "$OUT/resume1.time")" >> "$SUM"
rc=$(step warm1 "$G" warm "$W/a.granary" --json -j "$J")
echo "warm after the resume: exit $rc, $(field "$OUT/warm1.json" "{k: v for k, v in d.items() if k in ('pipelines', 'from_binaries', 'compiled', 'fell_back', 'failed', 'key_mismatches', 'matches_device', 'hit_rate')}"); $(cat "$OUT/warm1.time")" >> "$SUM"
cp "$W/a.granary" "$W/after1.granary"
rc=$(step resume2 "$G" harvest "$EX" -o "$W/a.granary" --json -q -j "$J" --resume --backend vulkan --capture device)
same=$(cmp -s "$W/a.granary" "$W/after1.granary" && echo "archive unchanged" || echo "ARCHIVE CHANGED")
echo "second resume: exit $rc, resumed $(field "$OUT/resume2.json" "d['resumed']"), recompiled_for_device $(field "$OUT/resume2.json" "d['recompiled_for_device']"), created $(field "$OUT/resume2.json" "d['device']['pipelines_created']"); $same" >> "$SUM"
rc=$(step fresh "$G" harvest "$EX" -o "$W/fresh.granary" --json -q -j "$J" --backend vulkan --capture device)
"$G" merge "$W/fresh.granary" "$W/none.granary" -o "$W/merged.granary" > "$OUT/merge.txt" 2>&1
"$G" ls "$W/merged.granary" --json > "$OUT/ls-merged.json" 2>&1
"$G" ls "$W/after1.granary" --json > "$OUT/ls-resumed.json" 2>&1
python3 - "$OUT/ls-merged.json" "$OUT/ls-resumed.json" >> "$SUM" <<'EOF'
import json, sys
m, r = (json.load(open(p)) for p in sys.argv[1:3])
shape = lambda d: sorted((e["key"], tuple(e["labels"]), len(e["devices"])) for e in d["entries"])
dev = lambda d: [(x["pipelines"], x["pipeline_binaries"]) for x in d["devices"]]
print("fresh device harvest merged with the none archive vs the resumed archive: entries and labels %s; device sections %s vs %s (binary bytes differ per compile on this driver)"
      % ("equal" if shape(m) == shape(r) else "DIFFER", dev(m), dev(r)))
EOF
if [ -n "$T" ]; then
  GRANARY_REQUIRE_VULKAN=1 timeout -k 10 400 "$T" --test-threads 4 > "$OUT/vulkan-tests.txt" 2>&1
  echo "tests/vulkan.rs: exit $? $(grep -E '^test result' "$OUT/vulkan-tests.txt" | tail -1)" >> "$SUM"
fi
rm -rf "$W"
cat "$SUM"
