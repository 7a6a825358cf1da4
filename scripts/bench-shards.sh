#!/usr/bin/env bash
# What sharding costs on the seed-scale workload (issue 13 item 5), with `--backend none`.
#
#   scripts/bench-shards.sh GRANARY OUT [N...]
#
# GRANARY is a release `granary` binary; OUT a folder (created); N the shard counts (default
# 2 4 16 64). Steps, one JSON each in OUT:
#
#   gen                   `granary gen seed-scale -o OUT/work/seed` (33,000 pipelines)
#   single.json           `granary harvest SEED -o single.granary --backend none -j J --json -q`
#   plan-N.json           `granary plan SEED --shards N --json`
#   shard-N-I.json        `granary harvest SEED -o shard-N-I.granary --shard I/N --backend none
#                          -j J --json -q`, for I = 0..N-1, one after another
#   merge-N.log           `granary merge shard-N-*.granary -o merged-N.granary`, then
#   cmp-N.txt             `cmp merged-N.granary single.granary`
#   summary.json          per N: sums and ratios against single.json (jq)
#   summary.txt           one line per step, then the table
#
# J is THREADS (default 2). Shard archives are deleted after each N's merge (disk). The
# shards run one after another on this machine, so "wall" per shard is that shard's own
# wall time, not a cluster's; sums of CPU seconds are what N machines would spend in all.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 GRANARY OUT [N...]" >&2
  exit 2
fi
G=$(realpath "$1"); OUT=$(realpath -m "$2"); shift 2
NS=${*:-2 4 16 64}
J=${THREADS:-2}
mkdir -p "$OUT/logs" "$OUT/work"
WK=$OUT/work
SEED=$WK/seed/pipelines.json
SUM=$OUT/summary.txt
: > "$SUM"
say() { echo "$*" | tee -a "$SUM"; }

say "granary: $G ($("$G" --version 2>/dev/null))"
say "machine: $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

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

step gen "$OUT/logs/gen.out" "$G" gen seed-scale -o "$WK/seed" || exit 1
step single "$OUT/single.json" \
  "$G" harvest "$SEED" -o "$WK/single.granary" --backend none -j "$J" --json -q || exit 1

for n in $NS; do
  step "plan-$n" "$OUT/plan-$n.json" "$G" plan "$SEED" --shards "$n" --json
  ok=1
  for ((i = 0; i < n; i++)); do
    step "shard-$n-$i" "$OUT/shard-$n-$i.json" \
      "$G" harvest "$SEED" -o "$WK/shard-$n-$i.granary" --shard "$i/$n" \
      --backend none -j "$J" --json -q || ok=0
  done
  if [ "$ok" = 1 ]; then
    step "merge-$n" "$OUT/merge-$n.log" \
      "$G" merge "$WK"/shard-"$n"-*.granary -o "$WK/merged-$n.granary"
    if cmp "$WK/merged-$n.granary" "$WK/single.granary" > "$OUT/cmp-$n.txt" 2>&1; then
      echo identical >> "$OUT/cmp-$n.txt"
    fi
    say "cmp-$n: $(tail -n 1 "$OUT/cmp-$n.txt")"
    rm -f "$WK/merged-$n.granary"
  fi
  rm -f "$WK"/shard-"$n"-*.granary
done

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
say "| N | shards measured | sum shard task CPU / single | sum shard process CPU / single | stage functions compiled / single | extra compiles (plan) | plan imbalance | shard wall max / mean (s) | merge = single |"
say "|---:|---:|---:|---:|---:|---:|---:|---:|---|"
jq -r '.[] | "| \(.shards) | \(.shards_measured) | \(.sum_task_cpu_s*1000|round/1000) / \(.single_task_cpu_s*1000|round/1000) = \(.task_cpu_ratio*1000|round/1000) | \(.sum_process_cpu_s*1000|round/1000) / \(.single_process_cpu_s*1000|round/1000) = \(.process_cpu_ratio*1000|round/1000) | \(.sum_stage_functions) / \(.single_stage_functions) = \(.stage_function_ratio*1000|round/1000) | \(.extra_compiles) (\(.plan_extra_compiles)) | \(.plan_imbalance*1000|round/1000) | \(.max_wall_s*1000|round/1000) / \(.mean_wall_s*1000|round/1000) = \(.wall_max_over_mean*1000|round/1000) | \(.merge) |"' \
  "$OUT/summary.json" | tee -a "$SUM"
