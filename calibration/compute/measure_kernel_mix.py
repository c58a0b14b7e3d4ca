#!/usr/bin/env python3
"""Time the forward grid of measure_forward.py with a different kernel mix, graph mode only.

The shipped compute profile (calibration/profiles/h200-torch-compute.yaml) is fitted on
h200-forward-interleaved.csv: fused QKV and gate/up GEMMs, one RMSNorm kernel, the fastest
attention variant per point. A user's engine fuses differently. This run times the same shapes
and weights with an unfused mix, so that `specsim forward --decode-step` (one measured step on
this curve, rescaling the profile fitted on the other) can be scored on a curve it never saw:

  - RMSNorm written out: float cast, square, mean, add eps, rsqrt, two multiplies, cast back;
  - q, k and v as three GEMMs; gate and up as two GEMMs (slices of the same weights: the same
    bytes are read); SiLU and the gating multiply as separate kernels;
  - attention always FLASH_ATTENTION (no per-point choice);
  - the MoE layer keeps its grouped GEMMs (the routed experts), with the same changes to its
    norm and shared expert.

Output, in --out:
    h200-forward-unfused.csv              model,gpu,tp,layers_timed,tokens,context,mode,time_ms
    h200-forward-unfused-detail.csv       median / min / p10 / p90 / n per point, GPU events
    h200-forward-unfused.conditions.yaml
    h200-forward-unfused.log

Run:  python3 calibration/compute/measure_kernel_mix.py --out DIR
"""
import argparse
import csv
import datetime
import os
import platform
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_forward as mf  # noqa: E402

MODELS = ("llama-3.1-8b", "llama-3.3-70b", "deepseek-v3-moe-grouped")
STEM = "h200-forward-unfused"


def rms_norm_unfused(x, w):
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    return (xf * torch.rsqrt(var + mf.EPS)).to(mf.DT) * w


def attn_unfused(self, x, st):
    T, C = st["T"], st["C"]
    hq, hkv, d = self.hq, self.hkv, mf.HEAD_DIM
    h = rms_norm_unfused(x, self.ln)
    q = F.linear(h, self.wqkv[:hq * d])
    k = F.linear(h, self.wqkv[hq * d:(hq + hkv) * d])
    v = F.linear(h, self.wqkv[(hq + hkv) * d:])
    q = mf.rope(q.view(T, hq, d), st["cos"], st["sin"])
    k = mf.rope(k.view(T, hkv, d), st["cos"], st["sin"])
    self.kc[:, C:C + T].copy_(k.transpose(0, 1))
    self.vc[:, C:C + T].copy_(v.view(T, hkv, d).transpose(0, 1))
    qh = q.transpose(0, 1).unsqueeze(0)
    o = mf.attention("flash", qh, self.kc, self.vc, C + T)
    o = o.squeeze(0).transpose(0, 1).reshape(T, hq * d)
    return x + F.linear(o, self.wo)


def swiglu_unfused(h, wgu, wd):
    n = wgu.shape[0] // 2
    g = F.linear(h, wgu[:n])
    u = F.linear(h, wgu[n:])
    return F.linear(F.silu(g) * u, wd)


def dense_mlp_unfused(self, x, st):
    return x + swiglu_unfused(rms_norm_unfused(x, self.ln), self.wgu, self.wd)


def moe_unfused(self, x, st, r):
    h = rms_norm_unfused(x, self.ln)
    scores = F.linear(h, self.wr).float().sigmoid()
    topv, _ = scores.topk(self.topk, dim=-1)
    w = (topv / topv.sum(-1, keepdim=True)).to(mf.DT).reshape(-1)
    flat = r["ids"].reshape(-1)
    order = torch.argsort(flat, stable=True)
    tok = torch.div(order, self.topk, rounding_mode="floor")
    counts = torch.zeros(self.E, dtype=torch.int64, device=x.device).index_add_(0, flat, r["ones"])
    offs = torch.cumsum(counts, 0).to(torch.int32)
    xs = h.index_select(0, tok)
    gu = mf.gmm(xs, self.w1.transpose(-2, -1), offs)
    g, u = gu.chunk(2, dim=-1)
    y = mf.gmm(F.silu(g) * u, self.w2.transpose(-2, -1), offs)
    y = y * w.index_select(0, order).unsqueeze(-1)
    out = torch.zeros_like(x).index_add_(0, tok, y)
    return x + out + swiglu_unfused(h, self.sgu, self.sd)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64")
    ap.add_argument("--contexts", default="1024,4096,16384,32768")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    mf.LOG = open(os.path.join(args.out, STEM + ".log"), "w")
    dev = torch.device("cuda")
    torch.manual_seed(args.seed)
    tokens = [int(x) for x in args.tokens.split(",")]
    contexts = [int(x) for x in args.contexts.split(",")]
    s_max = max(contexts) + max(tokens) + 512
    mf.Attn.__call__ = attn_unfused
    mf.DenseMLP.__call__ = dense_mlp_unfused
    mf.MoE.__call__ = moe_unfused
    gpu = torch.cuda.get_device_name(0)
    rows, detail, events = [], [], {}
    for name in MODELS:
        base = "deepseek-v3-moe" if name.startswith("deepseek-v3-moe") else name
        spec = dict(mf.SPECS[base])
        layers = 4 if spec["kind"] == "moe" else spec["layers"]
        m = mf.Model(base, spec, layers, s_max, dev)
        torch.cuda.synchronize()
        mf.log(f"built {name}: {torch.cuda.memory_allocated() / 1e9:.1f} GB allocated")
        for C in contexts:
            for T in tokens:
                st = m.make_state(T, C, args.seed + T, attn="flash")
                res = mf.time_graph(lambda: m.forward(st), 3, args.reps)
                rows.append([name, "H200", spec["tp"], layers, T, C, "graph", f"{res['median']:.4f}"])
                detail.append([name, T, C, f"{res['median']:.4f}", f"{res['min']:.4f}", f"{res['p10']:.4f}",
                               f"{res['p90']:.4f}", res["n"]])
                mf.log(f"graph {name} T={T} C={C}: {res['median']:.4f} ms")
        st = m.make_state(4, contexts[0], args.seed + 4, attn="flash")
        with open(os.path.join(args.out, STEM + "-profile.txt"), "a") as fh:
            events[name] = mf.profile_forward(m, st, f"{name} T=4 C={contexts[0]} unfused", fh)
        mf.log(f"gpu events per forward {name}: {events[name]}")
        del m
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, STEM + ".csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["model", "gpu", "tp", "layers_timed", "tokens", "context", "mode", "time_ms"])
        w.writerows(rows)
    with open(os.path.join(args.out, STEM + "-detail.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["model", "tokens", "context", "median_ms", "min_ms", "p10_ms", "p90_ms", "n"])
        w.writerows(detail)
    with open(os.path.join(args.out, STEM + ".conditions.yaml"), "w") as fh:
        fh.write(f"# Conditions of calibration/compute/{STEM}.csv (written by measure_kernel_mix.py)\n")
        fh.write(f'date_utc: "{datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}"\n')
        fh.write(f'gpu: "{gpu}"\n')
        fh.write('nvidia_smi_gpu: "' + mf.sh("nvidia-smi --query-gpu=name,driver_version,memory.total,"
                                             "clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader")
                 + '"\n')
        fh.write(f'torch: "{torch.__version__}"\ntorch_cuda: "{torch.version.cuda}"\n')
        fh.write(f'python: "{platform.python_version()}"\n')
        fh.write(f'command_line: "{" ".join([os.path.basename(sys.executable)] + sys.argv)}"\n')
        fh.write(f'elapsed_s: "{time.time() - t0:.1f}"\n')
        fh.write("what_is_timed: >-\n  As measure_forward.py (one TP rank, batch 1, T new tokens over a KV cache of C, "
                 "random bf16 weights, no all-reduce, no sampling), graph replay only, with the unfused kernel mix "
                 "described in measure_kernel_mix.py's docstring.\n")
        fh.write(f"time_ms: median of {args.reps} graph replays after 3 warm-up replays, CUDA events\n")
        fh.write("gpu_events_per_forward_T4:\n")
        for k, v in events.items():
            fh.write(f"  {k}: {v}\n")


if __name__ == "__main__":
    main()
