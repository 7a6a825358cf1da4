#!/usr/bin/env bash
# Whole variants against fast-linked libraries on a device (issue 24 item 6): the example and
# seed2k (`gen seed-scale --pipelines 2000 --vertex-functions 970 --max-run 250`, every
# colour attachment unspecialized), each with `"expand_unspecialized": {"formats":
# ["rgba8unorm"]}`, harvested twice at -j J (default 16) — as libraries only, and with
# `--whole-variants` (the libraries plus one whole variant each) — then each archive warmed at
# -j1 REPS times (default 3), interleaved, linking with rgba8unorm: the libraries' archive
# fast-links every library pipeline (on a section with NVIDIA's dictionary, compiling its
# library part), the other creates the whole variant from its own binaries.
# OUT/summary.txt has one line per workload and mode: harvest wall and bytes, warm wall
# (median) and per-pipeline p50, and how the pipelines were made.
#
#   scripts/device-whole-variants.sh GRANARY OUT
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2")
mkdir -p "$OUT"; cd "$(dirname "$0")/.."
W=$OUT/work; mkdir -p "$W"
export __GL_SHADER_DISK_CACHE=0
J=${J:-16}; REPS=${REPS:-3}
EXPAND='{"expand_unspecialized":{"formats":["rgba8unorm"]},'
# The example with absolute library paths and the expansion.
python3 - examples/renderer/pipelines.json "$W/example.json" <<'PY'
import json, os, sys
src, dst = sys.argv[1:3]
s = json.load(open(src))
for lib in s["libraries"]:
    if "path" in lib:
        lib["path"] = os.path.join(os.path.dirname(os.path.abspath(src)), lib["path"])
s["expand_unspecialized"] = {"formats": ["rgba8unorm"]}
json.dump(s, open(dst, "w"))
PY
"$G" gen seed-scale -o "$W/seed2k" --pipelines "${SEED_PIPELINES:-2000}" --vertex-functions "${SEED_VERTEX_FUNCTIONS:-970}" \
  --max-run "${SEED_MAX_RUN:-250}" > /dev/null
sed -i "0,/{/s//$EXPAND/" "$W/seed2k/pipelines.json"
for w in example:$W/example.json seed2k:$W/seed2k/pipelines.json; do
  name=${w%%:*}; script=${w#*:}
  for mode in libraries whole-variants; do
    extra=(); [ "$mode" = whole-variants ] && extra=(--whole-variants)
    "$G" harvest "$script" -o "$W/$name-$mode.granary" --backend vulkan --capture device -j "$J" --json -q "${extra[@]}" \
      > "$OUT/$name-$mode.harvest.json" 2> "$OUT/$name-$mode.harvest.err"
    echo "$name $mode harvest: exit $?"
  done
  for rep in $(seq "$REPS"); do
    for mode in libraries whole-variants; do
      "$G" warm "$W/$name-$mode.granary" -j 1 --json --link-format rgba8unorm \
        > "$OUT/$name-$mode.warm$rep.json" 2> "$OUT/$name-$mode.warm$rep.err"
      echo "$name $mode warm $rep: exit $?"
    done
  done
done
python3 - "$OUT" "$REPS" > "$OUT/summary.txt" <<'PY'
import json, os, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": str(e)}
for name in ("example", "seed2k"):
    for mode in ("libraries", "whole-variants"):
        h = load(f"{out}/{name}-{mode}.harvest.json")
        warms = [load(f"{out}/{name}-{mode}.warm{r}.json") for r in range(1, reps + 1)]
        ok = [w for w in warms if "wall_seconds" in w]
        if "wall_seconds" not in h or not ok:
            print(f"{name} {mode}: failed ({h.get('error', '')}; {[w.get('error') for w in warms]})")
            continue
        # The pipelines a game asks for: the script's own, not the variants' entries (reached
        # through their library pipelines); at -j1 their creation times add up to their wall.
        own = lambda w: [r for r in w["records"] if "total_us" in r and "@" not in (r.get("label") or "")]
        sums = [sum(r["total_us"] for r in own(w)) / 1e6 for w in ok]
        p50s = [statistics.median([r["total_us"] for r in own(w)]) for w in ok]
        last = ok[-1]
        mine = own(last)
        count = lambda f: sum(1 for r in mine if f(r))
        print(f"{name} {mode}: harvest {h['wall_seconds']:.2f} s, {h['pipelines']} pipelines "
              f"({h['variants']} variants), {h['failed']} failed, {h['archive_bytes']} bytes; "
              f"warm -j1 of the script's {len(mine)} pipelines: median {statistics.median(sums):.3f} s "
              f"{['%.3f' % x for x in sums]}, p50 {statistics.median(p50s):.0f} us; "
              f"{count(lambda r: r['source'] == 'binaries')} from binaries, "
              f"{count(lambda r: r['linked'])} linked, {count(lambda r: r.get('variant'))} as whole variants, "
              f"{count(lambda r: r.get('fallback_reason'))} fell back; archive warm wall {last['wall_seconds']:.3f} s "
              f"({last['pipelines']} entries), {last['failed']} failed")
PY
cat "$OUT/summary.txt"
