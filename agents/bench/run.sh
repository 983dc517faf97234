#!/usr/bin/env bash
# The agent benchmark (docs/benchmarks.md, "## Agent"): the simulated host of 8 GPUs ×
# 64 processes sampled at 1 Hz.
#  1. cycle_bench: CPU time per sampling cycle, with the spool (fsync) and without it
#     (baseline), measured in one run, in virtual time.
#  2. The release binary for SECONDS of real time at 1 Hz, 10 s windows, shipping to a
#     stand-in server that accepts everything; and, at the same time, the same binary
#     without a server (spool only). CPU time (utime+stime) and peak RSS (VmHWM) are read
#     from /proc just before SIGINT.
# Usage: agents/bench/run.sh [SECONDS]   (from the repository root; default 60)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_TO_RUN="${1:-60}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p neocloud-agent --example cycle_bench --bin neocloud-agent
BIN="$CARGO_TARGET_DIR/release/neocloud-agent"
WORK="$(mktemp -d)"
PORT=18777
python3 agents/bench/accept.py "$PORT" & SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

echo "== cycle_bench (virtual time, 600 cycles)"
"$CARGO_TARGET_DIR/release/examples/cycle_bench" 600

common=(run --simulate --sim-profile agents/bench/8x64.json --agent-id bench-8x64 --interval 10 --metrics-listen off)
"$BIN" "${common[@]}" --server "http://127.0.0.1:$PORT" --token nca_bench --spool "$WORK/ship" 2>"$WORK/ship.log" & SHIP=$!
"$BIN" "${common[@]}" --spool "$WORK/spool" 2>"$WORK/spool.log" & SPOOL=$!
sleep "$SECONDS_TO_RUN"

report() {
    local name=$1 pid=$2
    local ticks hz rss
    hz=$(getconf CLK_TCK)
    ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    awk -v n="$name" -v t="$ticks" -v hz="$hz" -v s="$SECONDS_TO_RUN" -v r="$rss" 'BEGIN {
        printf "%-28s CPU %.2f s in %d s = %.3f %% of one core, peak RSS %.1f MiB\n", n, t / hz, s, 100 * t / hz / s, r / 1024 }'
}
echo "== release binary, ${SECONDS_TO_RUN} s at 1 Hz"
report "run + ship (gzip, HTTP)" "$SHIP"
report "run, spool only" "$SPOOL"
kill -INT "$SHIP" "$SPOOL"
wait "$SHIP" "$SPOOL" || true
grep -h "Agent stopped" "$WORK/ship.log" "$WORK/spool.log" | sed 's/^.*Agent stopped/Agent stopped/'
