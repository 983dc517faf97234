#!/usr/bin/env python3
"""Tables of a family run (scheduler/scripts/family.sh): per pod list, arrival level and
policy the unallocated GPU share over seeds (mean, min, max), topo against best-fit (on
average and in the worst seed) and against fgd, the lower bound, how far topo is from it
and from the offline packing, and the replay time.

    family_table.py runs.jsonl [--paper analysis_allo_discrete.csv]

--paper reads the FGD paper's published allocation curves (the simulator repository's
experiments/analysis/expected_results/analysis_allo_discrete.csv: allocated GPU % at each
arrived workload %, per pod list, policy and seed) and compares our fgd and best-fit with
the paper's FGD and BestFit: the mean share at each level and the largest gap between the
mean curves.
"""
import argparse
import csv
import json
from collections import defaultdict

LEVELS = (1.0, 1.1, 1.2, 1.3)
PAPER = {"fgd": "06-FGD", "best-fit": "05-BestFit"}


def at(curve, level):
    """Unallocated share at the first curve point whose arrivals reach `level`."""
    for arrived, unallocated in curve:
        if arrived >= level - 1e-9:
            return unallocated
    return curve[-1][1]


def allocated_curve(curve, step=2):
    """Allocated GPU % at every `step` % of arrived workload."""
    out, k = {}, 0
    for arrived, unallocated in curve:
        while k * step <= arrived * 100 + 1e-9:
            out[k * step] = 100 * (1 - unallocated)
            k += 1
    return out


def load(path):
    runs = defaultdict(dict)  # (list, policy) -> seed -> run
    walls = defaultdict(list)  # (list, policy) -> [ms]
    for line in open(path):
        row = json.loads(line)
        key = (row["list"], row["run"]["policy"])
        runs[key][row["seed"]] = row["run"]
        if "wall_ms" in row:
            walls[key].append(row["wall_ms"])
    return runs, walls


def paper_curves(path):
    curves = defaultdict(list)  # (list, paper policy) -> [row]
    for row in csv.DictReader(open(path)):
        name = row["workload"].removeprefix("openb_pod_list_")
        curves[(name, row["sc_policy"])].append(row)
    return curves


def mean(xs):
    return sum(xs) / len(xs)


def bounds(runs, name):
    """The lower-bound curve of each seed of a list. It depends on the arrivals only, the
    same for every policy: taken from whichever policy's run has it."""
    curves = {}
    for (n, _), seeds in runs.items():
        if n == name:
            for seed, r in seeds.items():
                if "lower_bound_curve" in r:
                    curves[seed] = r["lower_bound_curve"]
    return list(curves.values())


def optimum_table(runs, lists):
    """Per list: the lower bound at each level, topo's share and the offline packing at
    the last level (means over seeds), and what topo leaves above the bound."""
    print("| pod list | lower bound at " + " / ".join(f"{l:.0%}" for l in LEVELS)
          + " | topo at " + " / ".join(f"{l:.0%}" for l in LEVELS)
          + f" | offline largest-first at {LEVELS[-1]:.0%} (min–max) |")
    print("|---|---|---|---|")
    for name in lists:
        seeds = runs.get((name, "topo"), {})
        if not seeds:
            continue
        bound = [mean([at(c, l) for c in bounds(runs, name)]) for l in LEVELS]
        topo = [mean([at(r["curve"], l) for r in seeds.values()]) for l in LEVELS]
        offline = [r["offline_unallocated_share"] for r in seeds.values()]
        print(f"| {name} | " + " / ".join(f"{b:.4f}" for b in bound) + " | "
              + " / ".join(f"{t:.4f}" for t in topo)
              + f" | {mean(offline):.4f} ({min(offline):.4f}–{max(offline):.4f}) |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--paper")
    args = ap.parse_args()
    runs, walls = load(args.runs)
    paper = paper_curves(args.paper) if args.paper else {}
    lists = sorted({k[0] for k in runs})
    print("| list | arrived | topo mean (min–max) | best-fit mean | fgd mean | topo vs best-fit: mean / worst seed | topo vs fgd | lower bound |"
          + (" paper FGD | paper BestFit |" if paper else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if paper else ""))
    for name in lists:
        for level in LEVELS:
            share = {}
            for policy in ("topo", "best-fit", "fgd"):
                seeds = runs.get((name, policy), {})
                share[policy] = {s: at(r["curve"], level) for s, r in seeds.items()}
            topo, bf, fgd = share["topo"], share["best-fit"], share["fgd"]
            if not topo or not bf or not fgd:
                continue
            per_seed = [1 - topo[s] / bf[s] for s in topo if s in bf and bf[s] > 0]
            bound = mean([at(c, level) for c in bounds(runs, name)])
            cells = [
                name, f"{level:.0%}",
                f"{mean(topo.values()):.4f} ({min(topo.values()):.4f}–{max(topo.values()):.4f})",
                f"{mean(bf.values()):.4f}", f"{mean(fgd.values()):.4f}",
                f"{1 - mean(topo.values()) / mean(bf.values()):+.1%} / {min(per_seed):+.1%}",
                f"{1 - mean(topo.values()) / mean(fgd.values()):+.1%}",
                f"{bound:.4f}",
            ]
            for policy in ("fgd", "best-fit") if paper else ():
                rows = paper.get((name, PAPER[policy]), [])
                cells.append(f"{mean([100 - float(r[str(round(level * 100))]) for r in rows]) / 100:.4f}" if rows else "–")
            print("| " + " | ".join(cells) + " |")
    if paper:
        print()
        print("| list | policy | largest gap between the mean allocation curves (points of GPU %) | at arrived |")
        print("|---|---|---|---|")
        for name in lists:
            for policy, theirs in PAPER.items():
                rows = paper.get((name, theirs), [])
                seeds = runs.get((name, policy), {})
                if not rows or not seeds:
                    continue
                ours = [allocated_curve(r["curve"]) for r in seeds.values()]
                gap, where = 0.0, 0
                for x in range(2, 131, 2):
                    if not all(x in c for c in ours):
                        continue
                    d = abs(mean([c[x] for c in ours]) - mean([float(r[str(x)]) for r in rows]))
                    if d > gap:
                        gap, where = d, x
                print(f"| {name} | {policy} | {gap:.2f} | {where}% |")
    print()
    optimum_table(runs, lists)
    print()
    print("| policy | mean replay time per run |")
    print("|---|---|")
    for policy in ("topo", "best-fit", "fgd"):
        t = [w / 1000 for (n, p), ws in walls.items() if p == policy for w in ws]
        t = [x for x in t if x is not None]
        if t:
            print(f"| {policy} | {mean(t):.1f} s |")


if __name__ == "__main__":
    main()
