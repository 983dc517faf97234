#!/usr/bin/env bash
# Reliability as a tie-breaker, measured: saturate replays of every pod list of the shared
# Alibaba traces with seeded node reliabilities (`--reliability-seed`, the draw's seed),
# once as spot (the tie-break off: the same placements as without reliabilities) and
# once as on-demand (the tie-break on); two at a time, one JSON line per run prefixed by
# the list, seed and class. Usage (from the repository root, after
# `cargo build --release -p neocloud-scheduler --bin neocloud-sched`):
#   scheduler/scripts/reliability.sh [TRACES_DIR] [POLICIES] [SEEDS] [ARRIVE] > runs.jsonl
#   scheduler/scripts/reliability_table.py runs.jsonl
set -euo pipefail
traces=${1:-../shared/traces/alibaba-gpu-v2023}
policies=${2:-"topo best-fit"}
seeds=${3:-"42 43 44 45 46 47 48 49 50 51"}
arrive=${4:-1.2}
bin=${NEOCLOUD_SCHED:-${CARGO_TARGET_DIR:-target}/release/neocloud-sched}
export traces arrive bin
for pods in "$traces"/openb_pod_list_*.csv; do
  for policy in $policies; do
    for seed in $seeds; do
      for class in spot on-demand; do
        printf '%s %s %s %s\n' "$pods" "$policy" "$seed" "$class"
      done
    done
  done
done | xargs -P "${JOBS:-2}" -L 1 sh -c '
  name=$(basename "$0" .csv); name=${name#openb_pod_list_}
  line=$("$bin" replay --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$0" \
    --policy "$1" --mode saturate --arrive "$arrive" --seed "$2" --reliability-seed "$2" \
    --class "$3" --json | tail -n 1)
  printf "{\"list\":\"%s\",\"seed\":%s,\"run\":%s}\n" "$name" "$2" "$line"'
