#!/usr/bin/env bash
# Replays every pod list of the shared Alibaba traces under the given policies and modes
# and prints one JSON line per run. Usage (from the repository root, after
# `cargo build --release -p neocloud-scheduler --bin neocloud-sched`):
#   scheduler/scripts/replay-table.sh [TRACES_DIR] [POLICIES] [MODES]
set -euo pipefail
traces=${1:-../shared/traces/alibaba-gpu-v2023}
policies=${2:-"topo best-fit first-fit random fgd"}
modes=${3:-"timeline saturate"}
bin=${NEOCLOUD_SCHED:-${CARGO_TARGET_DIR:-target}/release/neocloud-sched}
for pods in "$traces"/openb_pod_list_*.csv; do
  name=$(basename "$pods" .csv); name=${name#openb_pod_list_}
  for mode in $modes; do
    for policy in $policies; do
      printf '%s\t' "$name"
      "$bin" replay --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$pods" \
        --policy "$policy" --mode "$mode" --json | tail -n 1
    done
  done
done
