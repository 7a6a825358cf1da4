#!/usr/bin/env bash
# The frame loop's three modes on a real driver (issue 25, "prove it where players feel it").
#
#   scripts/device-frames.sh GRANARY FRAME_LOOP OUT
#
# FRAME_LOOP is `cargo build --release -p granary-vulkan --example frame_loop`. The bundled
# example (335 pipelines, PER_FRAME_EXAMPLE new ones a frame, default 4) and seed2k (`gen
# seed-scale --pipelines 2000 --vertex-functions 970 --max-run 250`, PER_FRAME_SEED, default
# 20) are harvested on this device with -j 16 (binaries where the driver has them), then each
# mode runs in its own process (a fresh driver, no in-process cache shared between modes)
# with WORKERS warm-up threads (default 4). The blocking run also does the pixel check on
# CHECK pipelines of the archive (default 64; 0 skips it): each drawn with the pipeline the
# loader makes from the archive's binaries and with the same pipeline compiled from SPIR-V,
# outputs compared byte for byte (its `pixels` line and the pipelines that differ, or could
# not be compared, are in OUT/NAME-blocking.txt). OUT/summary.txt has one line per run.
# MODES (default "compile blocking progressive") picks the modes; SEED_PIPELINES,
# SEED_VERTEX_FUNCTIONS and SEED_MAX_RUN size seed2k (for a quick run); EXTRA adds workloads:
# seed2kx (seed2k's pipelines whole, no libraries: created from binaries that carry NVIDIA's
# dictionary) and seed2kx-reuse (the same harvested with --reuse-binaries-by-key: whether
# binaries substituted by key draw the same).
set -uo pipefail
G=$(realpath "$1"); F=$(realpath "$2"); OUT=$(realpath -m "$3")
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export __GL_SHADER_DISK_CACHE=0 MESA_SHADER_CACHE_DISABLE=true
SUM=$OUT/summary.txt; : > "$SUM"
W=$(mktemp -d)
say() { echo "$*" | tee -a "$SUM"; }
rc=0
"$G" gen seed-scale -o "$W/seed2k" --pipelines "${SEED_PIPELINES:-2000}" --vertex-functions "${SEED_VERTEX_FUNCTIONS:-970}" \
  --max-run "${SEED_MAX_RUN:-250}" > /dev/null 2>&1
# seed2kx: the same pipelines whole (every unspecialized attachment expanded to rgba8unorm,
# harvested --no-pipeline-libraries), so its binaries (NVIDIA's dictionary among them) are
# what the loader creates from; seed2kx-reuse: harvested with --reuse-binaries-by-key.
mkdir -p "$W/seed2kx" && cp -r "$W/seed2k"/. "$W/seed2kx/"
sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/seed2kx/pipelines.json"
work="example:examples/renderer/pipelines.json:${PER_FRAME_EXAMPLE:-4} seed2k:$W/seed2k/pipelines.json:${PER_FRAME_SEED:-20}"
for x in ${EXTRA:-}; do
  work="$work $x:$W/seed2kx/pipelines.json:${PER_FRAME_SEED:-20}"
done
for w in $work; do
  IFS=: read -r n s per <<< "$w"
  hx=()
  case $n in
    seed2kx) hx=(--no-pipeline-libraries) ;;
    seed2kx-reuse) hx=(--no-pipeline-libraries --reuse-binaries-by-key) ;;
  esac
  "$G" harvest "$s" -o "$W/$n.granary" --backend vulkan --capture device -q -j 16 "${hx[@]}" > /dev/null 2> "$OUT/$n-harvest.err"
  say "$n harvest: exit $?"
  for mode in ${MODES:-compile blocking progressive}; do
    check=0
    [ "$mode" = blocking ] && check=${CHECK:-64}
    timeout 400 "$F" "$W/$n.granary" --mode "$mode" --per-frame "$per" --workers "${WORKERS:-4}" --tail 10 \
      --check "$check" > "$OUT/$n-$mode.txt" 2>&1
    code=$?
    [ "$code" = 0 ] || rc=1
    say "$n $mode: exit $code; $(grep '^mode=' "$OUT/$n-$mode.txt")"
    if [ "$check" != 0 ]; then say "$n $mode: $(grep '^pixels' "$OUT/$n-$mode.txt")"; fi
  done
done
rm -rf "$W"
# Nonzero when any run failed (a crash among them).
exit $rc
