#!/usr/bin/env python3
"""How far NCCL's analytic model (specsim's all-reduce prior) sits from measured tables.

For every graph-mode NCCL profile that a shipped topology names (models/topology comm_profile),
`specsim comm --topology` prints the measured time and NCCL's model at each message size; this
script pools measured / prior over the sizes a decode or verify all-reduce has (4 KiB to 1 MiB)
that the table measured, and prints each box's median and the pooled p10, median and p90. Those
are the spread of the all-reduce prior (kPriorAllReduceRatio, its row in lib/src/model/priors.cpp;
docs/references/nccl.md#prior-spread).

Run from the repository root:  SPECSIM_BIN=build/release/bin/specsim python3 scripts/allreduce_prior_spread.py
"""
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = os.environ.get("SPECSIM_BIN", str(ROOT / "build/release/bin/specsim"))
SIZES = [4096 * 2**i for i in range(9)]  # 4 KiB .. 1 MiB


def field(text, key):
    m = re.search(rf"^{key}:\s*([^\s#]+)", text, re.M)
    return m.group(1) if m else None


def boxes():
    for topo in sorted((ROOT / "models/topology").glob("*.yaml")):
        profile = field(topo.read_text(), "comm_profile")
        if not profile:
            continue
        text = (ROOT / "calibration/profiles" / f"{profile}.yaml").read_text()
        if field(text, "mode") != "graph" or "custom" in profile:
            continue
        yield topo.stem, profile, field(text, "ranks")


def nearest_rank(values, q):
    ordered = sorted(values)
    k = max(1, min(len(ordered), -(-int(q * len(ordered) * 1000) // 1000)))
    return ordered[k - 1]


def main():
    env = dict(os.environ, SPECSIM_DATA_DIR=str(ROOT))
    pooled = []
    for topo, profile, ranks in boxes():
        out = subprocess.run([BIN, "comm", "--profile", profile, "--ranks", ranks, "--topology", topo, "--size",
                              ",".join(str(s) for s in SIZES), "--json"], env=env, check=True, capture_output=True,
                             text=True).stdout
        text = subprocess.run([BIN, "comm", "--profile", profile, "--ranks", ranks, "--topology", topo, "--size",
                               ",".join(str(s) for s in SIZES)], env=env, check=True, capture_output=True,
                              text=True).stdout
        points = json.loads(out)["points"]
        ratios = [p["measured_over_prior"] for p, line in zip(points, text.splitlines()[1:])
                  if "extrapolated" not in line]
        if not ratios:
            print(f"{topo:28} {profile:36} no measured point in 4 KiB - 1 MiB")
            continue
        pooled += ratios
        print(f"{topo:28} {profile:36} {len(ratios):2} sizes  measured/prior median {statistics.median(ratios):.2f}"
              f"  ({min(ratios):.2f} - {max(ratios):.2f})")
    if not pooled:
        sys.exit("no measured points")
    print(f"pooled over {len(pooled)} points: p10 {nearest_rank(pooled, 0.1):.2f}  median "
          f"{statistics.median(pooled):.2f}  p90 {nearest_rank(pooled, 0.9):.2f}")


if __name__ == "__main__":
    main()
