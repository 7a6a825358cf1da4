#!/usr/bin/env bash
# What sharding costs on the seed-scale workload (issue 13 item 5).
#
#   scripts/bench-shards.sh GRANARY OUT [N...]
#   scripts/bench-shards.sh --summary OUT [N...]     # the table again, from OUT's JSON files
#
# GRANARY is a release `granary` binary; OUT a folder (created); N the shard counts (default
# 2 4 16 64). Steps, one JSON each in OUT:
#
#   gen                   `granary gen seed-scale -o OUT/work/seed` (33,000 pipelines); with
#                         EXPAND=1 the script gets `"expand_unspecialized": {"formats":
#                         ["rgba8unorm"]}` (whole pipelines on a device harvest, as "seedx" in
#                         scripts/bench-warm.sh)
#   single.json           `granary harvest SEED -o single.granary --backend B -j CORES --json -q ARGS`
#   single.fp             fingerprint of the single archive: sha256 of `granary ls --json` with
#                         each pipeline's device binaries left out (keys, labels, layouts, stage
#                         keys and output sizes), then how many pipelines carry device binaries
#   plan-N.json           `granary plan SEED --shards N --json`
#   shard-N-I.json        `granary harvest SEED -o shard-N-I.granary --shard I/N --backend B
#                          -j J --json -q ARGS`, I = 0..N-1, up to P at once
#   merge-N.log           `granary merge shard-N-*.granary -o merged-N.granary`, then
#   cmp-N.txt             `cmp merged-N.granary single.granary` ("identical" or where they
#                         differ) and the merge's fingerprint against single.fp
#   summary.json          per N: sums and ratios against single.json (jq)
#   summary.txt           one line per step, then the table
#
# Environment: GEN_ARGS (more `gen seed-scale` options, for a smaller trial), BACKEND (none; or vulkan), ARGS (more harvest options, e.g.
# "--no-pipeline-libraries"), CORES (the machine's cores to use, default 2): each shard gets
# J = max(1, CORES / N) threads and P = max(1, CORES / J) shards run at once, so every step
# keeps CORES threads busy and CPU seconds are comparable with the single harvest's.
# WORK is where the script and archives go (default OUT/work). SKIP_SINGLE=1 reuses OUT/single.json and OUT/single.fp from an earlier run (the device
# allows 10 minutes a command). Shard archives are deleted after each N's merge (disk).
# Sums of CPU seconds are what N machines would spend in all; wall times are this machine's.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 GRANARY OUT [N...] | $0 --summary OUT [N...]" >&2
  exit 2
fi
SUMMARY_ONLY=0
[ "$1" = --summary ] && SUMMARY_ONLY=1
G=$(realpath "$1"); OUT=$(realpath -m "$2"); shift 2
NS=${*:-2 4 16 64}
CORES=${CORES:-2}
BACKEND=${BACKEND:-none}
read -r -a EXTRA <<< "${ARGS:-}"
mkdir -p "$OUT/logs"
WK=${WORK:-$OUT/work}; mkdir -p "$WK"
SEED=$WK/seed/pipelines.json
SUM=$OUT/summary.txt
: > "$SUM"
say() { echo "$*" | tee -a "$SUM"; }

if [ "$SUMMARY_ONLY" = 0 ]; then
say "granary: $G ($("$G" --version 2>/dev/null))"
say "machine: $(nproc) cores, CORES=$CORES; backend $BACKEND ${ARGS:-}; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# step NAME OUTFILE CMD...: runs CMD, stdout to OUTFILE, stderr to logs/NAME.err, one line.
step() {
  local name=$1 out=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$@" > "$out" 2> "$OUT/logs/$name.err" < /dev/null
  rc=$?
  t1=$(date +%s.%N)
  say "$name: exit $rc, $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s"
  if [ "$rc" -ne 0 ]; then tail -n 3 "$OUT/logs/$name.err" | sed 's/^/    /' | tee -a "$SUM"; fi
  return "$rc"
}

# fingerprint ARCHIVE: what a merge must reproduce even where driver binaries differ run to run.
fingerprint() {
  "$G" ls "$1" --json > "$WK/ls.json" || return 1
  jq -c '[.entries[] | del(.devices)]' "$WK/ls.json" | sha256sum | cut -d' ' -f1
  jq '[.entries[] | select((.devices | length) > 0)] | length' "$WK/ls.json"
  rm -f "$WK/ls.json"
}

read -r -a GEN <<< "${GEN_ARGS:-}"
step gen "$OUT/logs/gen.out" "$G" gen seed-scale -o "$WK/seed" "${GEN[@]}" || exit 1
PLAN_ARGS=()
if [ "${EXPAND:-0}" = 1 ]; then
  [ "$BACKEND" = none ] || PLAN_ARGS=(--expand-unspecialized)
  sed -i '0,/{/s//{"expand_unspecialized":{"formats":["rgba8unorm"]},/' "$SEED" || exit 1
fi
if [ "${SKIP_SINGLE:-0}" != 1 ]; then
  step single "$OUT/single.json" \
    "$G" harvest "$SEED" -o "$WK/single.granary" --backend "$BACKEND" -j "$CORES" --json -q "${EXTRA[@]}"
  [ $? -ge 2 ] && exit 1  # 1: some pipelines failed (reported in the JSON), the rest archived
  fingerprint "$WK/single.granary" > "$OUT/single.fp"
  say "single fingerprint: $(tr '\n' ' ' < "$OUT/single.fp")"
fi

for n in $NS; do
  J=$((CORES / n)); [ "$J" -lt 1 ] && J=1
  P=$((CORES / J)); [ "$P" -lt 1 ] && P=1
  say "N=$n: -j $J per shard, $P at once"
  step "plan-$n" "$OUT/plan-$n.json" "$G" plan "$SEED" --shards "$n" --json "${PLAN_ARGS[@]}"
  t0=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do
    while [ "$(jobs -rp | wc -l)" -ge "$P" ]; do wait -n; done
    step "shard-$n-$i" "$OUT/shard-$n-$i.json" \
      "$G" harvest "$SEED" -o "$WK/shard-$n-$i.granary" --shard "$i/$n" \
      --backend "$BACKEND" -j "$J" --json -q "${EXTRA[@]}" &
  done
  wait
  t1=$(date +%s.%N)
  say "shards-$n: all $n in $(awk "BEGIN{printf \"%.2f\", $t1 - $t0}") s"
  awk "BEGIN{printf \"%.3f\", $t1 - $t0}" > "$OUT/shards-$n.wall"
  if [ "$(ls "$WK"/shard-"$n"-*.granary 2>/dev/null | wc -l)" = "$n" ] && step "merge-$n" "$OUT/merge-$n.log" \
    "$G" merge "$WK"/shard-"$n"-*.granary -o "$WK/merged-$n.granary"; then
    if [ -f "$WK/single.granary" ] && cmp "$WK/merged-$n.granary" "$WK/single.granary" > "$OUT/cmp-$n.txt" 2>&1; then
      echo identical >> "$OUT/cmp-$n.txt"
    else
      fingerprint "$WK/merged-$n.granary" > "$OUT/merged-$n.fp"
      if cmp -s "$OUT/merged-$n.fp" "$OUT/single.fp"; then
        echo "bytes differ (driver binaries); pipelines, labels, layouts and translations identical, binaries for $(tail -n 1 "$OUT/merged-$n.fp") pipelines" >> "$OUT/cmp-$n.txt"
      else
        echo "DIFFERENT: fingerprint $(tr '\n' ' ' < "$OUT/merged-$n.fp") vs single $(tr '\n' ' ' < "$OUT/single.fp")" >> "$OUT/cmp-$n.txt"
      fi
    fi
    say "cmp-$n: $(tail -n 1 "$OUT/cmp-$n.txt")"
    rm -f "$WK/merged-$n.granary"
  fi
  rm -f "$WK"/shard-"$n"-*.granary
done
fi

# Summary: per N, against the single-machine harvest.
{
  echo '['
  first=1
  for n in $NS; do
    files=()
    for ((i = 0; i < n; i++)); do files+=("$OUT/shard-$n-$i.json"); done
    [ "$first" = 1 ] || echo ','
    first=0
    jq -n --argjson n "$n" \
      --slurpfile single "$OUT/single.json" \
      --slurpfile plan "$OUT/plan-$n.json" \
      --arg cmp "$(tail -n 1 "$OUT/cmp-$n.txt" 2>/dev/null)" \
      --argjson all_wall "$(cat "$OUT/shards-$n.wall" 2>/dev/null || echo null)" \
      --slurpfile shards <(cat "${files[@]}" 2>/dev/null) '
      ($single[0]) as $s | ($plan[0]) as $p |
      {
        shards: $n,
        shards_measured: ($shards | length),
        single_task_cpu_s: $s.task_cpu_seconds,
        single_process_cpu_s: $s.process_cpu_seconds,
        single_stage_functions: $s.unique_stage_functions,
        single_wall_s: $s.wall_seconds,
        sum_task_cpu_s: ([$shards[].task_cpu_seconds] | add),
        sum_process_cpu_s: ([$shards[].process_cpu_seconds] | add),
        sum_stage_functions: ([$shards[].unique_stage_functions] | add),
        sum_pipelines: ([$shards[].archive_pipelines] | add),
        max_wall_s: ([$shards[].wall_seconds] | max),
        all_shards_wall_s: $all_wall,
        mean_wall_s: ([$shards[].wall_seconds] | add / length),
        sum_load_s: ([$shards[].phases.load_seconds] | add),
        plan_duplicated_stage_functions: ($p.duplicated_stage_functions | length),
        plan_extra_compiles: $p.extra_stage_function_compiles,
        plan_imbalance: $p.imbalance,
        merge: $cmp
      }
      | .task_cpu_ratio = (.sum_task_cpu_s / .single_task_cpu_s)
      | .process_cpu_ratio = (.sum_process_cpu_s / .single_process_cpu_s)
      | .stage_function_ratio = (.sum_stage_functions / .single_stage_functions)
      | .extra_compiles = (.sum_stage_functions - .single_stage_functions)
      | .wall_max_over_mean = (.max_wall_s / .mean_wall_s)'
  done
  echo ']'
} > "$OUT/summary.json"

say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
say ""
say "| N | shards measured | sum shard task CPU / single | sum shard process CPU / single | stage functions compiled / single | extra compiles (plan) | plan imbalance | shard wall max / mean (s) | all N shards wall (s) | merge = single |"
say "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
jq -r '.[] | "| \(.shards) | \(.shards_measured) | \(.sum_task_cpu_s*1000|round/1000) / \(.single_task_cpu_s*1000|round/1000) = \(.task_cpu_ratio*1000|round/1000) | \(.sum_process_cpu_s*1000|round/1000) / \(.single_process_cpu_s*1000|round/1000) = \(.process_cpu_ratio*1000|round/1000) | \(.sum_stage_functions) / \(.single_stage_functions) = \(.stage_function_ratio*1000|round/1000) | \(.extra_compiles) (\(.plan_extra_compiles)) | \(.plan_imbalance*1000|round/1000) | \(.max_wall_s*1000|round/1000) / \(.mean_wall_s*1000|round/1000) = \(.wall_max_over_mean*1000|round/1000) | \(.all_shards_wall_s) | \(.merge) |"' \
  "$OUT/summary.json" | tee -a "$SUM"
