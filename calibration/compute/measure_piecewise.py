#!/usr/bin/env python3
"""Time one Llama-3.1-8B forward as a full CUDA graph, as piecewise graphs, and eager, across contexts.

specsim prices a piecewise forward (vLLM's cudagraph_mode PIECEWISE: every op but attention runs
inside CUDA graphs, the KV-cache write and the attention kernel are launched by the host between
graph replays) as overlap(gpu, (L + 1) t_graph + 2 L t_launch) (docs/model.md#launch-modes). This
run measures that forward on one GPU so the equation can be scored against it.

The forward is measure_forward.py's llama-3.1-8b stack (TP1, 32 layers, H 4096, GQA 32/8 x 128,
FFN 14336 SwiGLU, V 128256, random bf16 weights, embedding + 32 layers + final RMSNorm + lm_head),
batch 1, T new tokens over a preallocated KV cache of C tokens. It is cut at the attention op:

    piece 0        embedding, layer 0 up to q/k/v (RMSNorm, fused QKV GEMM, RoPE)
    attention i    k and v written into layer i's cache, flash attention of the T queries over
                   C + T keys, its output copied into a static [T, 4096] buffer       (eager part)
    piece i        layer i-1 from the output projection on (o-proj, residual, MLP), layer i up
                   to q/k/v                                                          (i = 1..31)
    piece 32       layer 31 from the output projection on, final RMSNorm, lm_head

and the three modes run the same kernels in the same order:

    graph      pieces and attention captured as ONE torch.cuda.CUDAGraph, one replay a forward
    piecewise  33 CUDA graphs (one per piece, one shared memory pool), replayed one by one with
               the 32 attention parts launched from Python between them (4 PyTorch ops,
               5 GPU kernels by torch.profiler, each)
    eager      everything launched op by op from Python

Attention is F.scaled_dot_product_attention with only the FLASH_ATTENTION backend enabled, set once
globally (torch.backends.cuda.enable_*_sdp), enable_gqa=True, non-causal over the C + T keys as in
measure_forward.py's "flash" variant (measure_kernel_mix.py uses the same backend). Setting it once
avoids the per-call cost of the sdpa_kernel context manager, which an engine does not pay.

Per (T, C) point the modes are timed in interleaved rounds (graph, piecewise, eager, graph, ...):

    time_ms   CUDA events around one forward, synchronize before each: the GPU's span of the
              forward, including the time it waits for the host's launches (median over rounds)
    wall_ms   host clock over N back-to-back forwards, synchronize at the end, divided by N: the
              steady-state rate when nothing else runs on the host (median over rounds)
    host_ms   host clock around the launches of one forward, no synchronize: what the host spends
              submitting it (median over rounds)
    queued_ms CUDA events around one forward queued while a sleep kernel holds the GPU: the GPU's
              own span of it, with no wait for the host (median over rounds)

Output, in --out (h200-piecewise.*):
    h200-piecewise.csv              model,gpu,tp,batch,tokens,context,mode,time_ms,wall_ms,host_ms,queued_ms
    h200-piecewise-detail.csv       median / p10 / p90 / n of each of the three clocks per point
    h200-piecewise.conditions.yaml  GPU, driver, clocks, torch, the checks
    h200-piecewise.log

Run:  python3 calibration/compute/measure_piecewise.py --out DIR
No downloads; needs only PyTorch with CUDA.
"""
import argparse
import csv
import datetime
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_forward as mf  # noqa: E402
from measure_interleaved import time_once as event_ms  # noqa: E402  CUDA events around one call

STEM = "h200-piecewise"
MODEL = "llama-3.1-8b"
MODES = ("graph", "piecewise", "eager")
CLOCKS = ("time", "wall", "host", "queued")


def use_flash_only():
    """Leave FLASH_ATTENTION the only SDPA backend, once, for the whole run."""
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(False)
    if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
        torch.backends.cuda.enable_cudnn_sdp(False)


class Pieces:
    """The forward of mf.Model (dense) cut at each attention op, for one (T, C) point."""

    def __init__(self, model, st):
        self.m, self.st = model, st
        self.T, self.C = st["T"], st["C"]
        a0 = model.attn[0]
        self.hq, self.hkv = a0.hq, a0.hkv
        # the attention output, written by the eager part and read by the next piece
        self.o_buf = torch.empty((self.T, self.hq * mf.HEAD_DIM), device=model.dev, dtype=mf.DT)

    def pre(self, i, x):
        """Layer i up to its attention: RMSNorm, fused QKV GEMM, RoPE on q and k."""
        a, T, d = self.m.attn[i], self.T, mf.HEAD_DIM
        h = F.rms_norm(x, (x.shape[-1],), a.ln, mf.EPS)
        q, k, v = F.linear(h, a.wqkv).split([self.hq * d, self.hkv * d, self.hkv * d], dim=-1)
        q = mf.rope(q.view(T, self.hq, d), self.st["cos"], self.st["sin"])
        k = mf.rope(k.view(T, self.hkv, d), self.st["cos"], self.st["sin"])
        return q, k, v.view(T, self.hkv, d)

    def attention(self, i, q, k, v):
        """The eager part: KV-cache write (k, v), flash attention, output into o_buf: 4 PyTorch ops."""
        a, T, C = self.m.attn[i], self.T, self.C
        a.kc[:, C:C + T].copy_(k.transpose(0, 1))
        a.vc[:, C:C + T].copy_(v.transpose(0, 1))
        o = F.scaled_dot_product_attention(q.transpose(0, 1).unsqueeze(0), a.kc[:, :C + T].unsqueeze(0),
                                           a.vc[:, :C + T].unsqueeze(0), enable_gqa=True)
        self.o_buf.view(T, self.hq, mf.HEAD_DIM).copy_(o.squeeze(0).transpose(0, 1))

    def piece(self, i, x):
        """Piece i: (layer i-1's o-proj, residual and MLP) then (layer i's pre-attention)."""
        m = self.m
        if i == 0:
            x = F.embedding(self.st["ids"], m.embed)
        else:
            x = x + F.linear(self.o_buf, m.attn[i - 1].wo)
            x = m.mlp[i - 1](x, self.st)
        if i == m.layers:
            return F.linear(F.rms_norm(x, (m.H,), m.norm, mf.EPS), m.lm_head), None
        return x, self.pre(i, x)

    def eager(self):
        x, qkv = self.piece(0, None)
        for i in range(self.m.layers):
            self.attention(i, *qkv)
            x, qkv = self.piece(i + 1, x)
        return x


def warm(fn, times=2):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(times):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


class Piecewise:
    """33 graphs sharing one pool; replay() runs them with the eager attention between."""

    def __init__(self, pc):
        self.pc = pc
        warm(pc.eager)
        pool = torch.cuda.graph_pool_handle()
        self.graphs, self.qkv = [], []
        x = None
        for i in range(pc.m.layers + 1):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                x, qkv = pc.piece(i, x)
            self.graphs.append(g)
            self.qkv.append(qkv)
        self.out = x

    def replay(self):
        pc, graphs = self.pc, self.graphs
        for i in range(pc.m.layers):
            graphs[i].replay()
            pc.attention(i, *self.qkv[i])
        graphs[-1].replay()
        return self.out


class FullGraph:
    def __init__(self, pc):
        warm(pc.eager)
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            self.out = pc.eager()

    def replay(self):
        self.g.replay()
        return self.out


def host_ms(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e3


def wall_ms(fn, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / n


# cycles of torch.cuda._sleep that hold the GPU while the host queues one forward (~1980 MHz):
# longer than each mode's host submit time (h200-piecewise.csv, host_ms), so the GPU finds it queued
SLEEP_CYCLES = {"graph": 4_000_000, "piecewise": 30_000_000, "eager": 80_000_000}


def queued_ms(fn, cycles):
    """CUDA events around one forward that the host queued while a sleep kernel held the GPU.

    The GPU's span of the forward with the host out of the way: graph boundaries and launch gaps
    the GPU itself pays stay in it, waiting for the host does not. Also whether the host was
    still ahead when it returned (the start event not yet reached)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(cycles)
    s.record()
    fn()
    ahead = not s.query()
    e.record()
    e.synchronize()
    return s.elapsed_time(e), ahead


def quantiles(xs):
    s = sorted(xs)
    n = len(s)
    return dict(median=statistics.median(s), p10=s[max(0, int(0.1 * n))], p90=s[min(n - 1, int(0.9 * n))], n=n)


def check(pc, runners):
    """Max |logit difference| of graph and piecewise against eager, and the output scale."""
    ref = pc.eager().float().clone()
    res = {"output_max": round(ref.abs().max().item(), 4), "finite": bool(torch.isfinite(ref).all())}
    for mode, r in runners.items():
        out = r.replay()
        torch.cuda.synchronize()
        res[f"{mode}_vs_eager_maxabs"] = round((out.float() - ref).abs().max().item(), 5)
    return res


def kernels_per(fn):
    """CUDA kernels (and memcpy/memset) one call of fn puts on the GPU, by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(e.count for e in prof.key_averages() if "CUDA" in str(getattr(e, "device_type", "")))


def host_split(pc, pw, trials=20):
    """Host time of the 33 piece replays alone and of the 32 eager attention parts alone, per unit (us).

    Each is launched with the GPU idle (synchronize before), no synchronize inside; replaying the
    pieces without the attention between them reads a stale o_buf, which changes no timing.
    """
    def replays():
        for g in pw.graphs:
            g.replay()

    def attentions():
        for i in range(pc.m.layers):
            pc.attention(i, *pw.qkv[i])

    rep = statistics.median(host_ms(replays) for _ in range(trials))
    att = statistics.median(host_ms(attentions) for _ in range(trials))
    return {"host_us_per_graph_replay": round(rep * 1e3 / len(pw.graphs), 2),
            "host_us_per_eager_attention_part": round(att * 1e3 / pc.m.layers, 2)}


def sdpa_choice(pc):
    try:
        q = torch.randn((1, pc.hq, pc.T, mf.HEAD_DIM), device=pc.m.dev, dtype=mf.DT)
        k = pc.m.attn[0].kc[:, :pc.C + pc.T].unsqueeze(0)
        c = torch._fused_sdp_choice(q, k, k, None, 0.0, False, scale=None, enable_gqa=True)
        from torch.nn.attention import SDPBackend
        return SDPBackend(c).name
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__}: {str(e)[:80]})"


def time_point(pc, runners, rounds, wall_n):
    """Interleaved rounds: each round times every mode once on each clock."""
    fns = {"eager": pc.eager, **{m: r.replay for m, r in runners.items()}}
    for fn in fns.values():
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    got = {m: {c: [] for c in CLOCKS} for m in MODES}
    ahead = {m: 0 for m in MODES}
    for _ in range(rounds):
        for mode in MODES:
            fn = fns[mode]
            got[mode]["time"].append(event_ms(fn))
            got[mode]["host"].append(host_ms(fn))
            got[mode]["wall"].append(wall_ms(fn, wall_n))
            q, a = queued_ms(fn, SLEEP_CYCLES[mode])
            got[mode]["queued"].append(q)
            ahead[mode] += a
    res = {m: {k: quantiles(v) for k, v in clocks.items()} for m, clocks in got.items()}
    for m in MODES:
        res[m]["queued_host_ahead"] = ahead[m] / rounds
    return res


def conditions(args, cond):
    L = [f"# Conditions of calibration/compute/{STEM}.csv (written by measure_piecewise.py)"]
    for k in ("date_utc", "gpu", "nvidia_smi_gpu", "driver", "clocks_before", "clocks_after", "torch", "torch_cuda",
              "python", "sm_count", "command_line", "elapsed_s"):
        L.append(f"{k}: {mf.yq(cond.get(k, ''))}")
    L += ["what_is_timed: >-",
          "  One forward of a Llama-3.1-8B-shaped stack (TP1, 32 layers, random bf16 weights, embedding, final"
          " RMSNorm and lm_head included) for ONE request (batch 1) with T new tokens over a preallocated KV"
          " cache of C tokens; no sampling. The same kernels in the same order in all three modes"
          " (measure_piecewise.py's docstring).",
          "modes:",
          "  graph: the whole forward (pieces and attention) captured as one torch.cuda.CUDAGraph, one replay",
          "  piecewise: 33 CUDA graphs (embedding + layer 0 to q/k/v; o-proj + MLP of layer i-1 + layer i to q/k/v;"
          " o-proj + MLP of layer 31 + norm + lm_head) replayed from Python with each layer's attention launched"
          " eagerly between them: k and v copied into the cache, flash attention, output copied into a static"
          " buffer (4 PyTorch ops per layer, 5 GPU kernels by torch.profiler: kernels below; vLLM's attention op launches 2: reshape_and_cache_flash and the"
          " attention kernel writing into its output buffer)",
          "  eager: the same Python forward op by op, no graphs",
          "clocks:",
          f"  time_ms: CUDA events around one forward, synchronize before it; median of {args.rounds} interleaved"
          " rounds (graph, piecewise, eager in each round) after 3 warm-up forwards per mode",
          f"  wall_ms: time.perf_counter over {args.wall_n} back-to-back forwards with one synchronize at the end,"
          f" divided by {args.wall_n}; median of the rounds",
          "  host_ms: time.perf_counter around the launches of one forward (no synchronize inside): the host's"
          " submit time; median of the rounds",
          "  queued_ms: CUDA events around one forward that the host queued while torch.cuda._sleep held the GPU"
          " (graph 4e6, piecewise 3e7, eager 8e7 cycles): the GPU's span with no wait for the host; the detail"
          " CSV's queued_host_ahead is the share of rounds in which the host had queued all of it before the"
          " sleep ended; median of the rounds",
          "  warm_up: one unrecorded point (the first) of 3 rounds before the grid",
          "attention: " + mf.yq("F.scaled_dot_product_attention(enable_gqa=True), FLASH_ATTENTION the only enabled"
                                " backend (torch.backends.cuda.enable_*_sdp set once), non-causal over the C + T"
                                " keys as measure_forward.py's flash variant"),
          f"tokens: [{', '.join(map(str, cond['tokens']))}]",
          f"contexts: [{', '.join(map(str, cond['contexts']))}]"]
    L.append("host_split_meaning: 'per point, with the GPU idle before each: host time of the 33 piece replays"
             " launched back to back (per replay), and of the 32 eager attention parts back to back (per part);"
             " median of 20'")
    L.append("repeat_meaning: 'the first point timed again after the whole grid (medians of the same rounds),"
             " to show drift over the run'")
    for key in ("sdpa_choice", "checks", "kernels", "host_split", "repeat"):
        L.append(f"{key}:")
        for k, v in (cond.get(key) or {}).items():
            L.append(f"  {mf.yq(k)}: {mf.yq(v)}")
    for key in ("failed",):
        L.append(f"{key}:" if cond.get(key) else f"{key}: []")
        for s in cond.get(key) or []:
            L.append(f"  - {mf.yq(s)}")
    with open(os.path.join(args.out, STEM + ".conditions.yaml"), "w") as fh:
        fh.write("\n".join(L) + "\n")


def smi(query):
    return mf.sh(f"nvidia-smi --query-gpu={query} --format=csv,noheader")


def write_csvs(args, rows, detail):
    with open(os.path.join(args.out, STEM + ".csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["model", "gpu", "tp", "batch", "tokens", "context", "mode"] + [c + "_ms" for c in CLOCKS])
        w.writerows(rows)
    with open(os.path.join(args.out, STEM + "-detail.csv"), "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["model", "tokens", "context", "mode", "clock", "median_ms", "p10_ms", "p90_ms", "n",
                    "queued_host_ahead"])
        w.writerows(detail)


def run_point(m, T, C, args, cond, rows=None, detail=None, tag=""):
    """Time one (T, C) point; rows and detail get its lines, or, with rows None, only the log does."""
    st = m.make_state(T, C, args.seed + T, attn="flash")
    pc = Pieces(m, st)
    runners = {"graph": FullGraph(pc), "piecewise": Piecewise(pc)}
    key = f"T{T}_C{C}{tag}"
    if rows is not None:
        cond["sdpa_choice"][key] = sdpa_choice(pc)
        cond["host_split"][key] = host_split(pc, runners["piecewise"])
        mf.log(f"host split {key}: {cond['host_split'][key]}")
        if (T, C) == (max(args.tokens), min(args.contexts)):
            cond["checks"][key] = check(pc, runners)
            mf.log(f"check {key}: {cond['checks'][key]}")
    res = time_point(pc, runners, args.rounds if rows is not None else 3, args.wall_n)
    gpu = "H200" if "H200" in cond["gpu"] else cond["gpu"].replace(",", " ")
    for mode in MODES:
        r = res[mode]
        if rows is not None:
            rows.append([MODEL, gpu, 1, 1, T, C, mode] + [f"{r[c]['median']:.4f}" for c in CLOCKS])
            for c in CLOCKS:
                detail.append([MODEL, T, C, mode, c + "_ms", f"{r[c]['median']:.4f}", f"{r[c]['p10']:.4f}",
                               f"{r[c]['p90']:.4f}", r[c]["n"], f"{r['queued_host_ahead']:.2f}"])
        mf.log(f"T={T} C={C:6d} {mode:9s} time {r['time']['median']:.4f} (p10 {r['time']['p10']:.4f} "
               f"p90 {r['time']['p90']:.4f}) wall {r['wall']['median']:.4f} host {r['host']['median']:.4f} "
               f"queued {r['queued']['median']:.4f} (host ahead {r['queued_host_ahead']:.2f}) ms")
    del runners, pc
    torch.cuda.synchronize()
    return res


def count_kernels(m, T, C, args, cond):
    """Kernels of one eager forward and of one eager attention part. Run last: after torch.profiler
    the host's launches were seen to slow down for the rest of the process (the first run of this
    script, 2026-12-04)."""
    st = m.make_state(T, C, args.seed + T, attn="flash")
    pc = Pieces(m, st)
    pw = Piecewise(pc)
    key = f"T{T}_C{C}"
    try:
        cond["kernels"]["eager_forward_" + key] = kernels_per(pc.eager)
        cond["kernels"]["eager_attention_part_" + key] = kernels_per(lambda: pc.attention(0, *pw.qkv[0]))
    except Exception as e:  # noqa: BLE001
        cond["kernels"]["failed"] = repr(e)[:200]
    mf.log(f"kernels: {cond['kernels']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokens", default="1,4")
    ap.add_argument("--contexts", default="512,2048,8192,32768")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--wall-n", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    args.tokens = [int(x) for x in args.tokens.split(",")]
    args.contexts = [int(x) for x in args.contexts.split(",")]

    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    mf.LOG = open(os.path.join(args.out, STEM + ".log"), "w")
    dev = torch.device("cuda")
    torch.manual_seed(args.seed)
    use_flash_only()
    cond = {"date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpu": torch.cuda.get_device_name(0),
            "nvidia_smi_gpu": smi("name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit"),
            "driver": smi("driver_version"), "clocks_before": smi("clocks.sm,clocks.mem,temperature.gpu,power.draw"),
            "torch": torch.__version__, "torch_cuda": torch.version.cuda, "python": platform.python_version(),
            "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
            "command_line": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "tokens": args.tokens, "contexts": args.contexts,
            "sdpa_choice": {}, "checks": {}, "kernels": {}, "host_split": {}, "repeat": {}, "failed": []}
    mf.log(f"torch {cond['torch']} gpu {cond['gpu']} ({cond['nvidia_smi_gpu']})")
    s_max = max(args.contexts) + max(args.tokens) + 512
    m = mf.Model(MODEL, dict(mf.SPECS[MODEL]), mf.SPECS[MODEL]["layers"], s_max, dev)
    torch.cuda.synchronize()
    mf.log(f"built {MODEL}: {torch.cuda.memory_allocated() / 1e9:.1f} GB allocated")
    rows, detail = [], []
    first = (min(args.tokens), min(args.contexts))
    run_point(m, *first, args, cond)   # warm-up: clocks up, kernels loaded; not recorded
    # the shortest and longest contexts first, so a failure midway still leaves the ends
    order = sorted(args.contexts, key=lambda c: (c not in (min(args.contexts), max(args.contexts)), c))
    for C in order:
        for T in args.tokens:
            try:
                run_point(m, T, C, args, cond, rows, detail)
            except Exception as e:  # noqa: BLE001
                cond["failed"].append(f"T={T} C={C}: {repr(e)[:300]}")
                mf.log("FAILED", cond["failed"][-1])
                torch.cuda.synchronize()
            rows.sort(key=lambda r: (r[4], r[5], MODES.index(r[6])))
            write_csvs(args, rows, detail)
    try:
        again = run_point(m, *first, args, cond, [], [], tag="_repeat")
        cond["repeat"] = {f"T{first[0]}_C{first[1]}_{mode}": {c: round(again[mode][c]["median"], 4) for c in CLOCKS}
                          for mode in MODES}
        count_kernels(m, max(args.tokens), min(args.contexts), args, cond)
    except Exception as e:  # noqa: BLE001
        cond["failed"].append(f"repeat or kernel count: {repr(e)[:300]}")
    cond["clocks_after"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    cond["elapsed_s"] = round(time.time() - t0, 1)
    conditions(args, cond)
    mf.log(f"done in {cond['elapsed_s']} s, {len(cond['failed'])} failed")


if __name__ == "__main__":
    main()
