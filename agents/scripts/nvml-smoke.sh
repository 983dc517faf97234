#!/usr/bin/env bash
# NVML smoke test for a host with an NVIDIA GPU and driver.
#
# Builds neocloud-agent and runs `neocloud-agent probe` against the real driver: one
# sample (two cycles a second apart) printed as the ingest batch the agent would ship.
# It reads only: it changes no GPU setting (no MIG reconfiguration, no accounting mode,
# no clocks, no persistence mode). Paste its output into docs/agent.md.
#
# Usage: agents/scripts/nvml-smoke.sh            (from the repository root)
set -euo pipefail

cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"

echo "== host"
uname -a
date -u +%Y-%m-%dT%H:%M:%SZ
if command -v nvidia-smi >/dev/null 2>&1; then
    echo "== nvidia-smi (read-only queries)"
    nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,mig.mode.current --format=csv || true
    nvidia-smi -L || true
    # Each GPU's NVLink links and their state: what onboarding checks (docs/providers.md).
    nvidia-smi nvlink --status || true
else
    echo "nvidia-smi not found (the probe below still tries NVML)"
fi
ls -l /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 2>/dev/null || ldconfig -p | grep libnvidia-ml || true

echo "== build"
cargo build --release -p neocloud-agent --bin neocloud-agent

echo "== probe (real NVML)"
status=0
"$CARGO_TARGET_DIR/release/neocloud-agent" probe > /tmp/nvml-probe.json || status=$?
if [ "$status" -ne 0 ]; then
    echo "probe failed with status $status"
    exit "$status"
fi
cat /tmp/nvml-probe.json

echo "== hardware report (real NVML: NVLink links and fabric, as onboarding checks them)"
"$CARGO_TARGET_DIR/release/neocloud-agent" probe --hardware || echo "hardware probe failed with status $?"

echo "== summary"
python3 - <<'PY' || true
import json
b = json.load(open("/tmp/nvml-probe.json"))
print("window", b["window"]["start"], "->", b["window"]["end"])
for d in b["devices"]:
    kind = "MIG " + (d.get("mig_profile") or "?") if d["uuid"].startswith("MIG-") else "GPU"
    print(f'{kind:12} {d["uuid"]}  sm={d.get("sm_util_pct")}  fb={d.get("fb_used_bytes")}  '
          f'energy_mj={d.get("energy_mj")}  power_mw={d.get("power_mw")}  temp={d.get("temp_c")}  '
          f'health={d.get("health")}  processes={len(d.get("processes", []))}')
PY
