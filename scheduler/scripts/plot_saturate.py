#!/usr/bin/env python3
"""Draws the FGD paper's figure for every pod list given: the share of GPUs left
unallocated against the workload arrived (a share of the fleet's GPUs), one line per
policy, from `neocloud-sched replay --mode saturate --json` (its `curve`), and the lower
bound on what any policy leaves (`lower_bound_curve`, dashed). Writes one SVG per pod
list into --out. Standard library only.

    scheduler/scripts/plot_saturate.py --sched target/release/neocloud-sched \\
        --nodes NODES.csv --out docs/plots POD_LIST.csv [POD_LIST.csv ...]
"""

import argparse
import json
import os
import pathlib
import subprocess

POLICIES = ["topo", "fgd", "best-fit", "first-fit", "random"]
COLOURS = {"topo": "#d62728", "fgd": "#1f77b4", "best-fit": "#2ca02c",
           "first-fit": "#9467bd", "random": "#7f7f7f", "lower bound": "#000000"}
W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 400, 60, 130, 30, 50


def curve(args, pods, policy):
    out = subprocess.run(
        [args.sched, "replay", "--mode", "saturate", "--json", "--nodes", args.nodes,
         "--pods", pods, "--policy", policy, "--arrive", str(args.arrive),
         "--seed", str(args.seed)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def svg(title, lines, x0, x1):
    y1 = max((y for pts, _ in lines.values() for x, y in pts if x >= x0), default=1.0)
    y1 = max(0.05, round(y1 + 0.05, 1))
    sx = lambda x: LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT)
    sy = lambda y: H - BOTTOM - y / y1 * (H - TOP - BOTTOM)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(6):
        x = x0 + (x1 - x0) * i / 5
        parts.append(f'<line x1="{sx(x):.1f}" y1="{sy(0)}" x2="{sx(x):.1f}" y2="{sy(y1)}" stroke="#eee"/>')
        parts.append(f'<text x="{sx(x):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{x:.0%}</text>')
    for i in range(6):
        y = y1 * i / 5
        parts.append(f'<line x1="{sx(x0)}" y1="{sy(y):.1f}" x2="{sx(x1)}" y2="{sy(y):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.0%}</text>')
    parts.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">'
                 'arrived workload (GPUs requested / fleet GPUs)</text>')
    parts.append(f'<text x="16" y="{H / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {H / 2})">GPUs unallocated</text>')
    for n, (policy, (pts, end)) in enumerate(lines.items()):
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts if x >= x0)
        dash = ' stroke-dasharray="5,4"' if policy == "lower bound" else ""
        parts.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[policy]}" stroke-width="1.6"{dash}/>')
        ly = TOP + 20 + 18 * n
        parts.append(f'<line x1="{W - RIGHT + 10}" y1="{ly - 4}" x2="{W - RIGHT + 30}" y2="{ly - 4}" '
                     f'stroke="{COLOURS[policy]}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{W - RIGHT + 35}" y="{ly}">{policy} {end:.3f}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    p.add_argument("--sched", default=os.path.join(target, "release", "neocloud-sched"))
    p.add_argument("--nodes", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--arrive", type=float, default=1.3)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--from", dest="x0", type=float, default=0.5, help="left end of the x axis")
    p.add_argument("pods", nargs="+")
    args = p.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for pods in args.pods:
        name = pathlib.Path(pods).stem.removeprefix("openb_pod_list_")
        reports = {policy: curve(args, pods, policy) for policy in POLICIES}
        lines = {policy: (r["curve"], r["unallocated_gpu_share"]) for policy, r in reports.items()}
        bound = reports["topo"]["lower_bound_curve"]
        lines["lower bound"] = (bound, bound[-1][1])
        title = f"{name}: unallocated GPUs vs arrived workload (seed {args.seed})"
        (out / f"{name}.svg").write_text(svg(title, lines, args.x0, args.arrive))
        print(name, {k: round(v[1], 4) for k, v in lines.items()})


if __name__ == "__main__":
    main()
