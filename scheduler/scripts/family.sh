#!/usr/bin/env bash
# Saturate replays of every pod list of the shared Alibaba traces, for each policy and
# seed, two at a time; one JSON line per run, prefixed by the list and the seed. One run
# to 130 % arrivals gives the 100/110/120 % points too (its curve: the arrivals are the
# same prefix). Usage (from the repository root, after
# `cargo build --release -p neocloud-scheduler --bin neocloud-sched`):
#   scheduler/scripts/family.sh [TRACES_DIR] [POLICIES] [SEEDS] [ARRIVE] > runs.jsonl
set -euo pipefail
traces=${1:-../shared/traces/alibaba-gpu-v2023}
policies=${2:-"topo best-fit fgd"}
seeds=${3:-"42 43 44 45 46 47 48 49 50 51"}
arrive=${4:-1.3}
bin=${NEOCLOUD_SCHED:-${CARGO_TARGET_DIR:-target}/release/neocloud-sched}
export traces arrive bin
for pods in "$traces"/openb_pod_list_*.csv; do
  for policy in $policies; do
    for seed in $seeds; do
      printf '%s %s %s\n' "$pods" "$policy" "$seed"
    done
  done
done | xargs -P "${JOBS:-2}" -L 1 sh -c '
  name=$(basename "$0" .csv); name=${name#openb_pod_list_}
  start=$(date +%s%N)
  line=$("$bin" replay --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$0" \
    --policy "$1" --mode saturate --arrive "$arrive" --seed "$2" --json | tail -n 1)
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf "{\"list\":\"%s\",\"seed\":%s,\"wall_ms\":%s,\"run\":%s}\n" "$name" "$2" "$ms" "$line"'
