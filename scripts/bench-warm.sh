#!/usr/bin/env bash
# Cold harvest against the baseline a Vulkan developer writes, then warm start, on the local
# Vulkan device (an NVIDIA H200 with 16 cores, or lavapipe). Writes one JSON per step into OUT,
# a one-line-per-step OUT/summary.txt, OUT/sizes.txt, each step's stderr under OUT/logs, and
# all of it as OUT/all.tar.gz at the end.
#
#   scripts/bench-warm.sh GRANARY OUT
#
# GRANARY is a release `granary` binary; OUT a folder (created). Workloads: the bundled example
# (examples/renderer/pipelines.json) and a 2,000-pipeline seed-shaped one (970 vertex
# functions, runs up to 250), as scripts/bench-vulkan.sh uses.
#
#   a. devices.json          `granary devices --json`
#   b.                       `granary gen seed-scale` (the seed2k workload)
#   c. harvest-W-none.json   the translations alone (`--backend none`), for comparison
#      harvest-W-jJ.json     granary, cold: `harvest --backend vulkan -j J` (captures binaries)
#      base-W-jJ.json        the baseline, cold: `warm ARCHIVE_jJ --source spirv -j J` (N
#                            threads, one shared VkPipelineCache, written with
#                            --pipeline-cache-out), at J = 1 2 4 8 16 (J above nproc skipped)
#   d. warm-W-binaries-jJ.json  `warm ARCHIVE_BIN --source auto` (ARCHIVE_BIN: c's harvest
#                            at the largest J; binaries where the device has them)
#      warm-W-cachein-jJ.json   `warm ARCHIVE_BIN --source spirv --pipeline-cache-in` c's
#                            baseline cache at the largest J (a warm driver cache)
#      warm-W-spirv-jJ.json     `warm ARCHIVE_BIN --source spirv` (cold), at J = 1 and the
#                            largest
#   e. workaround.json       `granary bench --backend vulkan --json -j JMAX` (granary's schedule
#                            and the report's workaround, both on the driver)
#   f. sizes.txt             `ls -l` of the archives and pipeline-cache files
#   g. all.tar.gz            every JSON, summary.txt, sizes.txt and logs/
#
# Memory: the commands' own JSON carries their peak resident memory (no /usr/bin/time -v).
# A step that fails is reported in summary.txt (with the last lines of its stderr) and the
# script goes on; steps that need its output say why they are skipped. Exit status 1 from
# harvest means it finished with some pipelines failed (lavapipe rejects some sample counts):
# its JSON is still a result.
#
# Environment: ONLY (workloads, default "example seed2k"; "seed" is the full 33,000-pipeline
# seed-scale workload; "seed2kx" and "seedx" are those with every unspecialized colour
# attachment expanded to rgba8unorm and harvested with --no-pipeline-libraries, i.e. whole
# pipelines), LIBCOMPILE (1 adds `warm --libraries compile` steps), WORKAROUND (0 skips step e), COLD_THREADS (thread counts of the cold
# warm-spirv step, default "1 JMAX": a cold single-thread pass over 33,000 pipelines takes
# half an hour on a real driver),
# THREADS (default "1 2 4 8 16"), STEP_TIMEOUT (seconds per step, default 600),
# BUDGET (seconds for the whole script, default 0 = none: steps that would start after it are
# skipped and each step's timeout is cut to what is left, so the tarball is always written).
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 GRANARY OUT" >&2
  exit 2
fi
G=$(realpath "$1"); OUT=$(realpath -m "$2")
mkdir -p "$OUT/logs"
W=$(mktemp -d)
cd "$(dirname "$0")/.."
# No driver's on-disk shader cache may hide a compile (NVIDIA; Mesa for lavapipe).
export __GL_SHADER_DISK_CACHE=0
export MESA_SHADER_CACHE_DISABLE=true
EX=examples/renderer/pipelines.json
SUM=$OUT/summary.txt
CORES=$(nproc)
STEP_TIMEOUT=${STEP_TIMEOUT:-600}
BUDGET=${BUDGET:-0}
START=$(date +%s)
: > "$SUM"

threads() { for j in ${THREADS:-1 2 4 8 16}; do [ "$j" -le "$CORES" ] && echo "$j"; done; }
JMAX=$(threads | tail -1)
JMAX=${JMAX:-1}
say() { echo "$*" | tee -a "$SUM"; }

# Seconds a step may take: STEP_TIMEOUT, cut to what is left of BUDGET.
allowed() {
  if [ "$BUDGET" -le 0 ]; then echo "$STEP_TIMEOUT"; return; fi
  local left=$(( BUDGET - ($(date +%s) - START) - 15 ))
  [ "$left" -lt "$STEP_TIMEOUT" ] && echo "$left" || echo "$STEP_TIMEOUT"
}

# A few figures of a JSON result for the summary line (whatever of these fields it has).
fields() {
  [ -s "$1" ] || return 0
  grep -oE '"(wall_seconds|cpu_seconds|compiled|failed|pipelines|driver_seconds|peak_rss_bytes|[a-z_]*peak[a-z_]*)": [0-9.eE+-]+' "$1" \
    | head -8 | tr -d '"' | tr '\n' ' '
}

# step NAME OUTFILE CMD...: runs CMD with a timeout, stdout to OUTFILE, stderr to logs/NAME.err;
# one summary line; returns CMD's status (125: skipped for the budget).
step() {
  local name=$1 out=$2; shift 2
  local t rc t0 t1 st
  t=$(allowed)
  if [ "$t" -le 0 ]; then
    say "$name: SKIPPED (budget of $BUDGET s spent)"
    return 125
  fi
  t0=$(date +%s.%N)
  timeout -k 10 "$t" "$@" > "$out" 2> "$OUT/logs/$name.err" < /dev/null
  rc=$?
  t1=$(date +%s.%N)
  case $rc in
    0) st=ok ;;
    1) st="finished with failures" ;;
    124|137) st="TIMED OUT after $t s" ;;
    *) st=FAILED ;;
  esac
  say "$name: exit $rc ($st), $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s wall; $(fields "$out")"
  if [ "$rc" -ge 2 ]; then
    tail -n 3 "$OUT/logs/$name.err" | sed 's/^/    /' | tee -a "$SUM"
  fi
  [ -s "$out" ] || rm -f "$out"
  return "$rc"
}

# need FILE WHAT: whether FILE (an earlier step's output) exists, else a summary line.
need() {
  [ -s "$1" ] && return 0
  say "$2: SKIPPED ($(basename "$1") is missing: an earlier step failed)"
  return 1
}

finished=0
finish() {
  [ "$finished" = 1 ] && return
  finished=1
  ls -l "$W"/*.granary "$W"/*.cache > "$OUT/sizes.txt" 2>&1
  say "total: $(( $(date +%s) - START )) s"
  (cd "$OUT" && shopt -s nullglob && tar -czf all.tar.gz -- *.json summary.txt sizes.txt logs)
  echo "wrote $OUT/all.tar.gz"
}
trap 'say "interrupted"; finish; exit 130' INT TERM
trap 'rm -rf "$W"' EXIT

say "granary: $("$G" --version 2>&1); host $(uname -srm), $CORES cores; threads: $(threads | tr '\n' ' ')"
say "env: __GL_SHADER_DISK_CACHE=$__GL_SHADER_DISK_CACHE MESA_SHADER_CACHE_DISABLE=$MESA_SHADER_CACHE_DISABLE STEP_TIMEOUT=$STEP_TIMEOUT BUDGET=$BUDGET"

# a. Devices.
step devices "$OUT/devices.json" "$G" devices --json

# b. Workloads.
declare -A SCRIPT=([example]=$EX)
declare -A HARGS=([example]="")
WANT=" ${ONLY:-example seed2k} "
# expand NAME FROM: a copy of workload FROM whose unspecialized colour attachments are
# expanded to rgba8unorm (harvested with --no-pipeline-libraries: whole pipelines, no linking).
expand() {
  mkdir -p "$W/$1" && cp -r "$(dirname "${SCRIPT[$2]}")"/. "$W/$1/" \
    && sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$W/$1/pipelines.json" \
    && SCRIPT[$1]=$W/$1/pipelines.json && HARGS[$1]="--no-pipeline-libraries"
}
if [[ $WANT == *" seed "* || $WANT == *" seedx "* ]] \
  && step gen-seed "$OUT/logs/gen-seed.out" "$G" gen seed-scale -o "$W/seed" && [ -s "$W/seed/pipelines.json" ]; then
  SCRIPT[seed]=$W/seed/pipelines.json; HARGS[seed]=""
  [[ $WANT == *" seedx "* ]] && expand seedx seed
fi
if [[ $WANT == *" seed2k "* || $WANT == *" seed2kx "* ]] \
  && step gen-seed2k "$OUT/logs/gen-seed2k.out" "$G" gen seed-scale -o "$W/seed2k" --pipelines 2000 --vertex-functions 970 --max-run 250 \
  && [ -s "$W/seed2k/pipelines.json" ]; then
  SCRIPT[seed2k]=$W/seed2k/pipelines.json; HARGS[seed2k]=""
  [[ $WANT == *" seed2kx "* ]] && expand seed2kx seed2k
fi
WORKLOADS=()
for w in $WANT; do [ -n "${SCRIPT[$w]:-}" ] && WORKLOADS+=("$w"); done

# c. Cold: granary's harvest against the baseline, thread count by thread count. The baseline
# reads the archive granary just wrote (its SPIR-V and states: the same pipelines, expanded or
# not), opening the device without VK_KHR_pipeline_binary.
for w in "${WORKLOADS[@]}"; do
  s=${SCRIPT[$w]}
  # shellcheck disable=SC2086
  step "harvest-$w-none" "$OUT/harvest-$w-none.json" \
    "$G" harvest "$s" -o "$W/$w-none.granary" --backend none -j "$JMAX" --json -q
  for j in $(threads); do
    # shellcheck disable=SC2086
    step "harvest-$w-j$j" "$OUT/harvest-$w-j$j.json" \
      "$G" harvest "$s" -o "$W/$w-j$j.granary" --backend vulkan --capture device ${HARGS[$w]} -j "$j" --json -q
    need "$W/$w-j$j.granary" "base-$w-j$j" \
      && step "base-$w-j$j" "$OUT/base-$w-j$j.json" \
        "$G" warm "$W/$w-j$j.granary" --source spirv -j "$j" --pipeline-cache-out "$W/$w-base-j$j.cache" --json
  done
done

# d. Warm start, at 1 thread and the most.
for w in "${WORKLOADS[@]}"; do
  for j in $(printf '%s\n' 1 "$JMAX" | sort -un); do
    need "$W/$w-j$JMAX.granary" "warm-$w-binaries-j$j" \
      && step "warm-$w-binaries-j$j" "$OUT/warm-$w-binaries-j$j.json" \
        "$G" warm "$W/$w-j$JMAX.granary" --source auto -j "$j" --json
    [ "${LIBCOMPILE:-0}" = 1 ] && need "$W/$w-j$JMAX.granary" "warm-$w-libcompile-j$j" \
      && step "warm-$w-libcompile-j$j" "$OUT/warm-$w-libcompile-j$j.json" \
        "$G" warm "$W/$w-j$JMAX.granary" --source auto --libraries compile -j "$j" --json
    need "$W/$w-j$JMAX.granary" "warm-$w-cachein-j$j" && need "$W/$w-base-j$JMAX.cache" "warm-$w-cachein-j$j" \
      && step "warm-$w-cachein-j$j" "$OUT/warm-$w-cachein-j$j.json" \
        "$G" warm "$W/$w-j$JMAX.granary" --source spirv --pipeline-cache-in "$W/$w-base-j$JMAX.cache" -j "$j" --json
    [[ " ${COLD_THREADS:-1 $JMAX} " == *" $j "* ]] && need "$W/$w-j$JMAX.granary" "warm-$w-spirv-j$j" \
      && step "warm-$w-spirv-j$j" "$OUT/warm-$w-spirv-j$j.json" \
        "$G" warm "$W/$w-j$JMAX.granary" --source spirv -j "$j" --json
  done
done

# e. The report's workaround against granary's schedule, on the driver.
[ "${WORKAROUND:-1}" = 1 ] && step workaround "$OUT/workaround.json" "$G" bench --backend vulkan --json -j "$JMAX"

# f, g.
finish
