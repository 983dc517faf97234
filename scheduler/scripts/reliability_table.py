#!/usr/bin/env python3
"""Table of a reliability run (scheduler/scripts/reliability.sh): per pod list and policy,
the unallocated GPU share at the end without the tie-break (spot) and with it (on-demand),
means over seeds, the packing cost (relative increase of the unallocated share, mean of
the per-seed changes, and the worst seed), and the mean reliability (basis points) of the
allocated GPUs at the end and at 50 % arrivals.

    reliability_table.py runs.jsonl
"""
import json
import sys
from collections import defaultdict
from statistics import mean


def at(curve, level):
    """The value at the first curve point whose arrivals reach `level`."""
    return next((v for arrived, v in curve if arrived >= level - 1e-9), curve[-1][1])


runs = defaultdict(dict)
for line in open(sys.argv[1]):
    r = json.loads(line)
    run = r["run"]
    runs[(r["list"], run["policy"], r["seed"])][run["class"]] = run
cells = defaultdict(list)
for (pods, policy, seed), by_class in sorted(runs.items()):
    off, on = by_class["spot"], by_class["on_demand"]
    cells[(pods, policy)].append((off, on))
print("| pod list | policy | seeds | unallocated without | with | packing cost mean (worst seed) "
      "| reliability at the end without / with | at 50 % arrivals without / with |")
print("|---|---|---|---|---|---|---|---|")
for (pods, policy), pairs in sorted(cells.items(), key=lambda c: (c[0][1] != "topo", c[0])):
    u = lambda r: r["unallocated_gpu_share"]
    cost = [u(on) / u(off) - 1 for off, on in pairs]
    end = lambda i: mean(p[i]["allocated_gpu_reliability"] for p in pairs)
    half = lambda i: mean(at(p[i]["reliability_curve"], 0.5) for p in pairs)
    print(f"| {pods} | {policy} | {len(pairs)} | {mean(u(p[0]) for p in pairs):.4f} "
          f"| {mean(u(p[1]) for p in pairs):.4f} | {100 * mean(cost):+.2f} % ({100 * max(cost):+.2f} %) "
          f"| {end(0):.1f} / {end(1):.1f} | {half(0):.0f} / {half(1):.0f} |")
