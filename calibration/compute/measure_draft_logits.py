#!/usr/bin/env python3
"""Time the logits part of one EAGLE draft step: a full-vocabulary head against a reduced one.

vLLM V1's EagleProposer.propose computes each draft step's logits outside the drafter's CUDA graph,
op by op, with `self.model.compute_logits(hidden)` and then `logits.argmax(dim=-1)`. The two head
shapes behave differently there (vLLM's vllm/model_executor/models/llama_eagle3.py, stored commit
008603a3, docs/references/engine-overheads-research.md section 9):

    e1_full    EAGLE-1 head: the target's LM head over the full vocabulary V, then argmax
    e3_expand  EAGLE-3 head with a reduced draft vocabulary Vd (and a d2t offset table): the Vd
               logits, then an arange, an add, a V-wide fill with -inf and an indexed copy of the
               Vd logits into it (`logits_new[:, targets] = logits`), then argmax over V
    e3_map     the same reduced head with the argmax taken over the Vd logits and the offset
               gathered for the winner only (`ids + d2t[ids]`), for contrast

The question it answers: how much longer does the reduced head's step take than its GEMM alone, on
the GPU and on the host? specsim prices a draft step's LM head by the bytes it reads (a 32k head
is a quarter of a 128k one); the expansion's ops are launched eagerly each step.

Per (variant, batch) point, timed in interleaved rounds (e1_full, e3_expand, e3_map, e1_full, ...):

    time_ms   CUDA events around one step's logits, synchronize before each (median of rounds)
    wall_ms   host clock over N back-to-back steps, one synchronize at the end, divided by N
    host_ms   host clock around one step's launches, no synchronize: what the host spends submitting
    queued_ms CUDA events around one step queued behind torch.cuda._sleep: the GPU's own span
    kernels   GPU kernels one step launches (torch.profiler, one step)

Shapes: Llama-3.1-8B and its heads: hidden 4096, V 128256, Vd 32000 (yuhuili/EAGLE3-LLaMA3.1-
Instruct-8B's draft_vocab_size), bf16 weights, random values; the d2t table is a random offset
table whose targets are distinct (a sorted sample of V, minus arange(Vd)) as the real one is.

Output, in --out (h200-draft-logits.*):
    h200-draft-logits.csv              variant,batch,time_ms,wall_ms,host_ms,queued_ms,kernels
    h200-draft-logits-detail.csv       p10 / median / p90 / n of each clock per point
    h200-draft-logits.conditions.yaml  GPU, driver, clocks, torch, the run's settings
    h200-draft-logits.log

Run:  python3 calibration/compute/measure_draft_logits.py --out DIR
No downloads; needs only PyTorch with CUDA.
"""
import argparse
import csv
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HIDDEN = 4096
VOCAB = 128256
DRAFT_VOCAB = 32000


def quantiles(values):
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
    return pick(0.1), statistics.median(ordered), pick(0.9)


class Heads:
    def __init__(self, device):
        g = torch.Generator(device="cpu").manual_seed(7)
        scale = HIDDEN ** -0.5
        self.full = (torch.randn(VOCAB, HIDDEN, generator=g) * scale).to(device, torch.bfloat16)
        self.draft = (torch.randn(DRAFT_VOCAB, HIDDEN, generator=g) * scale).to(device, torch.bfloat16)
        chosen = torch.randperm(VOCAB, generator=g)[:DRAFT_VOCAB].sort().values
        self.d2t = (chosen - torch.arange(DRAFT_VOCAB)).to(device)  # offsets: target = draft id + d2t
        self.device = device

    def e1_full(self, h):
        return F.linear(h, self.full).argmax(dim=-1)

    def e3_expand(self, h):
        logits = F.linear(h, self.draft)
        base = torch.arange(DRAFT_VOCAB, device=self.device)
        targets = base + self.d2t
        expanded = logits.new_full((logits.shape[0], VOCAB), float("-inf"))
        expanded[:, targets] = logits
        return expanded.argmax(dim=-1)

    def e3_map(self, h):
        ids = F.linear(h, self.draft).argmax(dim=-1)
        return ids + self.d2t[ids]


def check_same_tokens(heads, h):
    # The two reduced-vocabulary paths must pick the same target token.
    a, b = heads.e3_expand(h), heads.e3_map(h)
    torch.cuda.synchronize()
    if not torch.equal(a, b):
        raise SystemExit("e3_expand and e3_map disagree: the measurement is of the wrong ops")


def count_kernels(fn, h):
    from torch.profiler import ProfilerActivity, profile
    fn(h)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(h)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def one_round(fn, h, back_to_back, sleep_cycles):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn(h)
    end.record()
    torch.cuda.synchronize()
    time_ms = start.elapsed_time(end)

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(back_to_back):
        fn(h)
    torch.cuda.synchronize()
    wall_ms = (time.perf_counter() - t0) * 1e3 / back_to_back

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(h)
    host_ms = (time.perf_counter() - t0) * 1e3
    torch.cuda.synchronize()

    torch.cuda._sleep(sleep_cycles)
    start.record()
    fn(h)
    end.record()
    torch.cuda.synchronize()
    queued_ms = start.elapsed_time(end)
    return time_ms, wall_ms, host_ms, queued_ms


def conditions(args, elapsed_s):
    def smi(query):
        try:
            return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            return f"unavailable ({e})"
    props = torch.cuda.get_device_properties(0)
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": props.name,
        "nvidia_smi_gpu": smi("name,driver_version,memory.total,clocks.sm,clocks.mem,power.limit"),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "sm_count": str(props.multi_processor_count),
        "command_line": " ".join(sys.argv),
        "elapsed_s": f"{elapsed_s:.1f}",
        "rounds": str(args.rounds),
        "back_to_back": str(args.back_to_back),
        "sleep_cycles": str(args.sleep_cycles),
        "batches": " ".join(str(b) for b in args.batches),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--back-to-back", type=int, default=50)
    parser.add_argument("--sleep-cycles", type=int, default=20_000_000)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    began = time.perf_counter()
    device = torch.device("cuda")
    heads = Heads(device)
    variants = [("e1_full", heads.e1_full), ("e3_expand", heads.e3_expand), ("e3_map", heads.e3_map)]
    log = open(os.path.join(args.out, "h200-draft-logits.log"), "w")
    rows, detail = [], []
    for batch in args.batches:
        h = torch.randn(batch, HIDDEN, device=device, dtype=torch.bfloat16)
        check_same_tokens(heads, h)
        kernels = {name: count_kernels(fn, h) for name, fn in variants}
        for _ in range(5):  # warm-up
            for _, fn in variants:
                one_round(fn, h, args.back_to_back, args.sleep_cycles)
        clocks = {name: [] for name, _ in variants}
        for _ in range(args.rounds):
            for name, fn in variants:
                clocks[name].append(one_round(fn, h, args.back_to_back, args.sleep_cycles))
        for name, _ in variants:
            columns = list(zip(*clocks[name]))
            medians = [statistics.median(c) for c in columns]
            rows.append([name, batch] + [f"{m:.4f}" for m in medians] + [kernels[name]])
            for clock, values in zip(("time_ms", "wall_ms", "host_ms", "queued_ms"), columns):
                p10, p50, p90 = quantiles(values)
                detail.append([name, batch, clock, f"{p10:.4f}", f"{p50:.4f}", f"{p90:.4f}", len(values)])
            print(name, batch, rows[-1][2:], file=log, flush=True)
            print(name, batch, rows[-1][2:], flush=True)
    with open(os.path.join(args.out, "h200-draft-logits.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "batch", "time_ms", "wall_ms", "host_ms", "queued_ms", "kernels"])
        w.writerows(rows)
    with open(os.path.join(args.out, "h200-draft-logits-detail.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "batch", "clock", "p10", "median", "p90", "n"])
        w.writerows(detail)
    with open(os.path.join(args.out, "h200-draft-logits.conditions.yaml"), "w") as f:
        f.write("# Conditions of calibration/compute/h200-draft-logits.csv (written by measure_draft_logits.py)\n")
        for key, value in conditions(args, time.perf_counter() - began).items():
            f.write(f'{key}: "{value}"\n')
    log.close()


if __name__ == "__main__":
    main()
