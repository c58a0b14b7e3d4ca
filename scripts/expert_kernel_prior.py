#!/usr/bin/env python3
"""The expert-kernel prior (compute.expert_bandwidth_efficiency) from AIConfigurator's measured NVFP4
MoE tables on the RTX PRO 6000 (calibration/compute/aic-rtx-pro-6000-nvfp4-moe.csv: vLLM 0.24.0 and
SGLang 0.5.14, `balanced` routing, EP 1, up to 128 tokens, read from the parquet files with
scripts/parquet_to_csv.py; docs/references/nvfp4-moe-sm120.md#prior).

The rate of one point is the bytes of every touched expert, min(E, k T) x 3 x hidden x FFN / TP x
0.5625 B (four bits and one FP8 scale per 16 values), over its latency, as a share of the GPU's
1,792 GB/s. Pooled over the deployed shapes at 16-128 tokens, the p10, median and p90 are the
prior's p10, value and p90.

    python3 scripts/expert_kernel_prior.py            # per shape, then the pooled quantiles
    SPECSIM_BIN=build/dev/bin/specsim python3 scripts/expert_kernel_prior.py --check
                                                      # exit 1 unless the registry holds them
"""
import csv
import json
import math
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = ROOT / "calibration/compute/aic-rtx-pro-6000-nvfp4-moe.csv"
BANDWIDTH = 1792e9  # models/gpu/rtx-pro-6000-server.yaml
BYTES_PER_PARAMETER = 0.5625
# (hidden, expert FFN, top-k, experts, TP) as the corpus's targets deploy them. DeepSeek-V3's shape is
# left out: its rate reads above 100%, where the bytes counted are wrong for that kernel.
DEPLOYED = {
    (6144, 2048, 8, 256, 8): "GLM-5 TP8",
    (7168, 2048, 8, 384, 8): "Kimi-K2 TP8",
    (3072, 1536, 8, 256, 2): "MiniMax-M2 TP2",
    (4096, 1024, 10, 512, 4): "Qwen3.5-397B TP4",
    (2048, 768, 8, 128, 1): "Qwen3-30B-A3B TP1",
}


def rate(row):
    tokens, hidden, ffn, topk, experts, tp = (int(row[k]) for k in
                                              ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
                                               "moe_tp_size"))
    touched = min(experts, topk * tokens)
    return touched * 3 * hidden * ffn / tp * BYTES_PER_PARAMETER / (float(row["latency_ms"]) * 1e-3) / BANDWIDTH


def nearest_rank(ordered, q):
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def pooled():
    by_shape, points = {}, []
    with open(TABLE, newline="") as f:
        for row in csv.DictReader(f):
            key = tuple(int(row[k]) for k in ("hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size"))
            if key not in DEPLOYED or not 16 <= int(row["num_tokens"]) <= 128:
                continue
            r = rate(row)
            points.append(r)
            by_shape.setdefault((row["framework"], DEPLOYED[key]), []).append(r)
    points.sort()
    return by_shape, [round(nearest_rank(points, q), 2) for q in (0.1, 0.5, 0.9)], len(points)


def main():
    by_shape, (p10, p50, p90), n = pooled()
    if "--check" not in sys.argv:
        for (engine, shape), rates in sorted(by_shape.items()):
            print(f"{engine:7} {shape:18} {len(rates)} points  {min(rates):.2f}-{max(rates):.2f}")
        print(f"pooled over {n} points: p10 {p10:.2f}, median {p50:.2f}, p90 {p90:.2f}")
        return 0
    binary = os.environ.get("SPECSIM_BIN", str(ROOT / "build/release/bin/specsim"))
    out = subprocess.run([binary, "priors", "--json"], check=True, capture_output=True, text=True,
                         env=dict(os.environ, SPECSIM_DATA_DIR=str(ROOT))).stdout
    row = next(p for p in json.loads(out)["priors"] if p["key"] == "compute.expert_bandwidth_efficiency")
    held = (row["value"], row["p10"], row["p90"])
    if held != (p50, p10, p90):
        print(f"the registry holds value {held[0]}, p10 {held[1]}, p90 {held[2]}; {TABLE.name} gives "
              f"{p50}, {p10}, {p90}", file=sys.stderr)
        return 1
    print(f"compute.expert_bandwidth_efficiency {p50} ({p10}-{p90}) is the table's, {n} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
