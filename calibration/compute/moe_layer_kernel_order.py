#!/usr/bin/env python3
"""The order of the GPU kernels one eager MoE-layer forward launches (measure_moe_layer.py's layer).

For each shape of measure_moe_layer.py and T = 1 and 64 tokens (uniform routing, the grouped GEMM
implementation), one eager forward is run under torch.profiler (CUDA and CPU activity) after two
unprofiled warm-up calls; the trace's GPU events (kernels, memcpy, memset) are listed in the order
they started on the device.

What it is for: in eager mode the GPU can start streaming the experts' weights only once the host
has launched the first grouped GEMM, so every kernel launched before it is host time the GPU cannot
hide behind that GEMM (docs/references/moe-layer-measured.md#kernel-order). The count of kernels
before the first expert GEMM is the layer's `kernels.launches_before_weights` (docs/schema.md#model).

Output, in --out:
    <card>-moe-layer-kernels.csv  model,tokens,index,kind,name,start_us,duration_us,expert_gemm
        index = position in device start order (0 = first); start_us = device start relative to
        the first GPU event of the forward; expert_gemm = 1 for the grouped GEMM kernels (name
        matched against --gemm-pattern). The profiler adds host time per op, so start_us shows
        the order and the gaps' shape, not an unprofiled forward's timing.
    <card>-moe-layer-kernels.log  the run log, with the first expert GEMM's index per point

Run:  python3 calibration/compute/moe_layer_kernel_order.py --out DIR
Needs PyTorch with CUDA and measure_moe_layer.py beside it; no downloads.
"""
import argparse
import csv
import json
import os
import re
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_moe_layer as mml  # noqa: E402

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def gpu_events(fn):
    """The GPU events of one profiled call of fn, in device start order: (cat, name, start, dur) in us."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    gpu = [(e["cat"], e["name"], float(e["ts"]), float(e.get("dur", 0.0)))
           for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES]
    gpu.sort(key=lambda e: e[2])
    return gpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=",".join(mml.SHAPES))
    ap.add_argument("--tokens", default="1,64")
    ap.add_argument("--gemm-pattern", default=r"grouped|cutlass|gemm_grouped|GroupProblemShape",
                    help="regular expression (case-insensitive) that names an expert grouped-GEMM kernel")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(0)
    prefix = os.path.join(args.out, f"{mml.card_of(gpu)}-moe-layer-kernels")
    mml.LOG = open(prefix + ".log", "w")
    mml.log(f"torch {torch.__version__} cuda {torch.version.cuda} gpu {gpu}; gemm pattern {args.gemm_pattern!r}")
    if mml.grouped_mm_fn() is None:
        sys.exit("no grouped GEMM API in this PyTorch: the layer would run the per-expert loop")
    pattern = re.compile(args.gemm_pattern, re.IGNORECASE)
    rows = []
    for name in [s for s in args.shapes.split(",") if s]:
        layer = mml.MoeLayer(mml.SHAPES[name], dev)
        for T in [int(t) for t in args.tokens.split(",")]:
            ids = mml.make_routes("uniform", T, layer.E, layer.k, 0.75, args.seed)
            st = mml.make_state(layer, ids, dev, args.seed)
            events = gpu_events(lambda: layer.forward(st["x"], st, "grouped"))
            t0 = events[0][2] if events else 0.0
            first = None
            for i, (cat, kname, ts, dur) in enumerate(events):
                expert = cat == "kernel" and bool(pattern.search(kname))
                if expert and first is None:
                    first = i
                rows.append([name, T, i, cat, kname[:160], f"{ts - t0:.1f}", f"{dur:.1f}", int(expert)])
            gemm_start = f"{events[first][2] - t0:.1f} us" if first is not None else "n/a"
            mml.log(f"{name} T={T}: {len(events)} GPU events; first expert GEMM at index "
                    f"{first if first is not None else 'none (pattern matched nothing)'}, started {gemm_start} "
                    f"after the first GPU event")
            for i, (cat, kname, ts, dur) in enumerate(events):
                mml.log(f"   {i:3d} {ts - t0:9.1f} us {dur:8.1f} us  {cat:10s} {kname[:110]}")
            del st
        del layer
        torch.cuda.empty_cache()
    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "tokens", "index", "kind", "name", "start_us", "duration_us", "expert_gemm"])
        w.writerows(rows)
    mml.LOG.close()


if __name__ == "__main__":
    main()
