#!/usr/bin/env bash
# NVIDIA's dictionary binary, with it and without it (issue 24 item 2). seed2kx (`gen
# seed-scale --pipelines 2000 --vertex-functions 970 --max-run 250`, every unspecialized
# attachment expanded to rgba8unorm, whole pipelines: --no-pipeline-libraries) harvested with
# binaries at -j J (default 16) two ways:
#   one      one process, one device: past about 1,000 compiles the driver starts returning a
#            large binary that joins every later pipeline's set (the dictionary);
#   shards   SHARDS (default 4) processes one after another (`--shard I/N`, each its own device,
#            ~500 compiles, so no dictionary forms), then `granary merge`.
# Then each archive warmed from binaries at -j 1, 4 and 16, REPS times (default 2), the two
# interleaved. OUT/summary.txt: the capture wall (the shards' summed), the archive bytes, what
# the binaries are (how many sets carry a binary of at least 64 KiB that other sets share, the
# bytes a pipeline hands the driver: p50 and total, the archive's unique binary bytes), and
# per warm its wall, p50 per pipeline and the driver's p50 — the figures that explain where
# each way's time and bytes go.
# (Every warm passes --dictionary-binaries: the loader's default compiles the dictionary's sets
# instead, and one default warm at -j16 says what that costs.)
# Then the frame-loop crash (docs/BENCHMARKS.md, "The dictionary binary at draw time"): `warm
# --hold` of each archive at -j1 (every pipeline kept alive, as the frame loop keeps them) and,
# with FRAME_LOOP (`cargo build --release -p granary-vulkan --example frame_loop`), the blocking
# frame loop with one worker and --trace, three ways on the dictionary archive: its exit status
# and the last phase it printed.
#
#   scripts/device-dictionary.sh GRANARY OUT [FRAME_LOOP]
set -uo pipefail
G=$(realpath "$1"); OUT=$(realpath -m "$2"); F=${3:+$(realpath "$3")}
mkdir -p "$OUT"; cd "$(dirname "$0")/.."
W=$OUT/work; mkdir -p "$W"
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
J=${J:-16}; N=${SHARDS:-4}; REPS=${REPS:-2}
"$G" gen seed-scale -o "$W/seed" --pipelines "${SEED_PIPELINES:-2000}" --vertex-functions "${SEED_VERTEX_FUNCTIONS:-970}" \
  --max-run "${SEED_MAX_RUN:-250}" > /dev/null
sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/seed/pipelines.json"
H=(harvest "$W/seed/pipelines.json" --backend vulkan --capture device --no-pipeline-libraries -j "$J" --json -q)
"$G" "${H[@]}" -o "$W/one.granary" > "$OUT/one.harvest.json" 2> "$OUT/one.harvest.err"
echo "one harvest: exit $?"
for ((i = 0; i < N; i++)); do
  "$G" "${H[@]}" --shard "$i/$N" -o "$W/shard-$i.granary" > "$OUT/shard-$i.harvest.json" 2> "$OUT/shard-$i.harvest.err"
  echo "shard $i/$N harvest: exit $?"
done
"$G" merge "$W"/shard-*.granary -o "$W/shards.granary" > "$OUT/merge.txt" 2>&1
echo "merge: exit $?"
for a in one shards; do "$G" ls "$W/$a.granary" --json > "$W/$a.ls.json" 2> "$OUT/$a.ls.err"; done
for rep in $(seq "$REPS"); do
  for j in 1 4 16; do
    for a in one shards; do
      "$G" warm "$W/$a.granary" -j "$j" --no-pipeline-libraries --dictionary-binaries --json > "$OUT/$a.warm-j$j-$rep.json" 2> "$OUT/$a.warm-j$j-$rep.err"
      echo "$a warm -j$j rep $rep: exit $?"
    done
  done
done
# What the loader's default costs on the dictionary archive: its 959-odd dictionary sets compiled.
"$G" warm "$W/one.granary" -j 16 --no-pipeline-libraries --json > "$OUT/one.warm-default-j16.json" 2> "$OUT/one.warm-default-j16.err"
echo "one warm -j16 (default: dictionary sets compiled): exit $?; $(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("wall %.3f s, from binaries %s, fell back %s, compiled %s, cache hits %s" % (d["wall_seconds"], d["from_binaries"],
      d["fell_back"], d["compiled"], d["cache_hits"]))' "$OUT/one.warm-default-j16.json" 2>&1)" | tee -a "$OUT/crash.txt"
for a in one shards; do
  "$G" warm "$W/$a.granary" -j 1 --hold --dictionary-binaries --json > "$OUT/$a.hold.json" 2> "$OUT/$a.hold.err"
  echo "$a warm -j1 --hold --dictionary-binaries: exit $?" | tee -a "$OUT/crash.txt"
done
# The frame loop (blocking, one worker, traced) on the dictionary archive: the loader's default
# (dictionary sets compiled), the dictionary's binaries (the crash), and those binaries created
# per pipeline instead of once per loader (whether the shared handle is the trigger); then the
# shards' archive.
if [ -n "$F" ]; then
  frames() {
    local name=$1 a=$2; shift 2
    timeout 120 "$F" "$W/$a.granary" --mode blocking --per-frame 20 --workers 1 --check 0 --trace "$@" \
      > "$OUT/$name.frames.txt" 2> "$OUT/$name.frames.err"
    echo "$name frame_loop blocking, 1 worker $*: exit $?; last: $(tail -1 "$OUT/$name.frames.err")" | tee -a "$OUT/crash.txt"
  }
  frames one-default one
  frames one-dictionary one --dictionary-binaries
  frames one-unshared one --dictionary-binaries --share-binaries-from 18446744073709551615
  frames shards shards --dictionary-binaries
fi
python3 - "$OUT" "$W" "$N" "$REPS" > "$OUT/summary.txt" <<'PY'
import json, os, statistics, sys
out, w, n, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": str(e)}
def harvest(names):
    walls = [load(os.path.join(out, f + ".harvest.json")).get("wall_seconds") for f in names]
    return sum(x for x in walls if x is not None), walls
for a, names in (("one", ["one"]), ("shards", ["shard-%d" % i for i in range(n)])):
    total, walls = harvest(names)
    size = os.path.getsize(os.path.join(w, a + ".granary")) if os.path.exists(os.path.join(w, a + ".granary")) else None
    ls = load(os.path.join(w, a + ".ls.json"))
    users, sizes, per = {}, {}, []
    for e in ls.get("entries", []):
        for d in e.get("devices", []):
            if not d.get("binaries"):
                continue
            per.append(d["bytes"])
            for b in d["binary_list"]:
                users[b["hash"]] = users.get(b["hash"], 0) + 1
                sizes[b["hash"]] = b["bytes"]
    dict_blobs = {h for h, c in users.items() if c > 1 and sizes[h] >= 64 << 10}
    with_dict = sum(1 for e in ls.get("entries", []) for d in e.get("devices", [])
                    if any(b["hash"] in dict_blobs for b in d.get("binary_list", [])))
    print("%s: harvest %.2f s (%s), archive %s bytes; %d sets, %d carry one of %d shared binaries >= 64 KiB (%s); "
          "bytes handed to the driver per pipeline p50 %s, total %s; unique binary bytes %s" % (
        a, total, ", ".join("%.2f" % x for x in walls if x is not None), size, len(per), with_dict, len(dict_blobs),
        ", ".join(str(sizes[h]) for h in sorted(dict_blobs)[:4]),
        int(statistics.median(per)) if per else None, sum(per), sum(sizes.values())))
for j in (1, 4, 16):
    for a in ("one", "shards"):
        rows = [load(os.path.join(out, "%s.warm-j%d-%d.json" % (a, j, r))) for r in range(1, reps + 1)]
        print("warm -j%d %s: wall %s s; p50 per pipeline %s us; driver p50 %s us; from binaries %s" % (
            j, a, ", ".join(str(r.get("wall_seconds")) for r in rows),
            ", ".join(str((r.get("per_pipeline_us") or {}).get("p50")) for r in rows),
            ", ".join(str((r.get("driver_us") or {}).get("p50")) for r in rows),
            ", ".join(str(r.get("from_binaries")) for r in rows)))
PY
cat "$OUT/crash.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
rm -rf "$W"
