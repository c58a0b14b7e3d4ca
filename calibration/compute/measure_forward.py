#!/usr/bin/env python3
"""Time ONE tensor-parallel rank's forward pass (decode / verify step) on one GPU.

Random bf16 weights, batch 1 (one request), T new tokens attending to a KV cache of
context C.  Each point is timed replayed from a CUDA graph ("graph") and launched
eagerly from Python ("eager").  Output: a CSV with header

    model,gpu,tp,layers_timed,tokens,context,mode,time_ms

(time_ms = median over --reps timed runs, CUDA events, synchronize around each run),
a detail CSV (min / p10 / p90 / distinct experts), and a conditions YAML.

Models (shapes from docs/references/models.md#targets):
  llama-3.1-8b     TP1: 32 layers, H 4096, GQA 32/8, head_dim 128, FFN 14336, V 128256
  llama-3.3-70b    one TP8 rank: 80 layers, H 8192, 8 q heads / 1 kv head, FFN 3584, V 16032
  deepseek-v3-moe-grouped / -loop
                   one TP8 rank of DeepSeek-V3-like MoE decoder layers (--moe-layers, default 4):
                   H 7168, 256 routed experts, top-8, expert FFN 2048/8 = 256 per rank,
                   1 shared expert (FFN 256 per rank).  MLA attention is approximated by GQA
                   with 18 q heads / 2 kv heads of dim 128 (same per-rank attention weight
                   bytes as MLA at TP8, ~36.7M params; KV 1024 B/token/layer vs MLA's 1152).
                   Each token is routed to 8 distinct experts drawn uniformly at random
                   (seeded per T and layer); only the touched experts are computed:
                   "grouped" = torch._grouped_mm over the sorted tokens (groups with no
                   tokens read no weights), "loop" = one GEMM pair per touched expert.

Run:  python3 calibration/compute/measure_forward.py --out DIR
No downloads; needs only PyTorch with CUDA.
"""
import argparse
import csv
import datetime
import gc
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

DT = torch.bfloat16
EPS = 1e-5
HEAD_DIM = 128

SPECS = {
    "llama-3.1-8b": dict(kind="dense", tp=1, layers=32, hidden=4096, q_heads=32, kv_heads=8,
                         ffn=14336, vocab=128256),
    "llama-3.3-70b": dict(kind="dense", tp=8, layers=80, hidden=8192, q_heads=64 // 8,
                          kv_heads=8 // 8, ffn=28672 // 8, vocab=128256 // 8),
    "deepseek-v3-moe": dict(kind="moe", tp=8, layers=4, hidden=7168, q_heads=18, kv_heads=2,
                            experts=256, topk=8, expert_ffn=2048 // 8, shared_ffn=2048 // 8),
}

LOG = None


def gmm(a, b, offs):
    """Grouped GEMM a[M,K] x b[G,K,N] with group ends offs (int32): torch._grouped_mm."""
    fn = getattr(torch, "_grouped_mm", None)
    if fn is None:
        fn = getattr(F, "grouped_mm")
    return fn(a, b, offs=offs)


def log(*a):
    msg = " ".join(str(x) for x in a)
    print(msg, flush=True)
    if LOG is not None:
        LOG.write(msg + "\n")
        LOG.flush()


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"<failed: {e}>"


def param(shape, fan_in, dev):
    return torch.empty(shape, device=dev, dtype=DT).normal_(0.0, 1.0 / math.sqrt(fan_in))


# --------------------------------------------------------------------------------------
# model pieces
# --------------------------------------------------------------------------------------
class Attn:
    """GQA attention of one rank with a KV cache laid out [kv_heads, S_max, head_dim]."""

    def __init__(self, hidden, hq, hkv, s_max, dev):
        self.hq, self.hkv = hq, hkv
        self.ln = torch.ones(hidden, device=dev, dtype=DT)
        self.wqkv = param(((hq + 2 * hkv) * HEAD_DIM, hidden), hidden, dev)
        self.wo = param((hidden, hq * HEAD_DIM), hq * HEAD_DIM, dev)
        self.kc = torch.empty((hkv, s_max, HEAD_DIM), device=dev, dtype=DT).normal_()
        self.vc = torch.empty((hkv, s_max, HEAD_DIM), device=dev, dtype=DT).normal_()

    def weight_bytes(self):
        return (self.wqkv.numel() + self.wo.numel() + self.ln.numel()) * 2

    def __call__(self, x, st):
        T, C = st["T"], st["C"]
        hq, hkv = self.hq, self.hkv
        h = F.rms_norm(x, (x.shape[-1],), self.ln, EPS)
        qkv = F.linear(h, self.wqkv)
        q, k, v = qkv.split([hq * HEAD_DIM, hkv * HEAD_DIM, hkv * HEAD_DIM], dim=-1)
        q = rope(q.view(T, hq, HEAD_DIM), st["cos"], st["sin"])
        k = rope(k.view(T, hkv, HEAD_DIM), st["cos"], st["sin"])
        self.kc[:, C:C + T].copy_(k.transpose(0, 1))
        self.vc[:, C:C + T].copy_(v.view(T, hkv, HEAD_DIM).transpose(0, 1))
        qh = q.transpose(0, 1).unsqueeze(0)            # [1, hq, T, d]
        o = attention(st["attn"], qh, self.kc, self.vc, C + T)
        o = o.squeeze(0).transpose(0, 1).reshape(T, hq * HEAD_DIM)
        return x + F.linear(o, self.wo)


ATTN_VARIANTS = ("sdpa", "flash", "splitkv")


def splitkv_splits(hq, T, S):
    """Number of KV splits so that splits x q-heads x q-blocks fills ~2 waves of 132 SMs."""
    blocks = hq * -(-T // 128)
    return max(1, min(S // 256, -(-264 // blocks)))


def attention(variant, qh, kc, vc, S):
    """qh [1, hq, T, d] against the first S keys of the cache kc/vc [hkv, S_max, d].

    Non-causal: the T new tokens all see each other (approximation of the causal verify
    mask; it reads the same S keys).
      sdpa    F.scaled_dot_product_attention, PyTorch's default backend choice
      flash   the same, restricted to the FLASH_ATTENTION backend
      splitkv flash-decoding by hand: the S keys cut into n equal chunks run as a batch of n
              through aten._scaled_dot_product_flash_attention, partial outputs merged by
              their log-sum-exp (reads up to n-1 extra cache rows past S)
    """
    hq, hkv = qh.shape[1], kc.shape[0]
    gqa = hq != hkv
    if variant == "sdpa":
        return F.scaled_dot_product_attention(qh, kc[:, :S].unsqueeze(0), vc[:, :S].unsqueeze(0), enable_gqa=gqa)
    if variant == "flash":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(qh, kc[:, :S].unsqueeze(0), vc[:, :S].unsqueeze(0),
                                                  enable_gqa=gqa)
    if variant == "splitkv":
        T = qh.shape[2]
        n = splitkv_splits(hq, T, S)
        if n == 1:
            return attention("flash", qh, kc, vc, S)
        chunk = -(-S // n)
        k = kc[:, :chunk * n].view(hkv, n, chunk, HEAD_DIM).transpose(0, 1)   # [n, hkv, chunk, d]
        v = vc[:, :chunk * n].view(hkv, n, chunk, HEAD_DIM).transpose(0, 1)
        q = qh.expand(n, hq, T, HEAD_DIM).contiguous()
        res = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False, False)
        out, lse = res[0], res[1]                                             # [n,hq,T,d], [n,hq,T]
        wgt = torch.exp(lse - lse.amax(0, keepdim=True))
        o = (out.float() * wgt.unsqueeze(-1)).sum(0) / wgt.sum(0).unsqueeze(-1)
        return o.to(DT).unsqueeze(0)
    raise ValueError(variant)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class DenseMLP:
    def __init__(self, hidden, ffn, dev):
        self.ln = torch.ones(hidden, device=dev, dtype=DT)
        self.wgu = param((2 * ffn, hidden), hidden, dev)
        self.wd = param((hidden, ffn), ffn, dev)

    def weight_bytes(self):
        return (self.wgu.numel() + self.wd.numel() + self.ln.numel()) * 2

    def __call__(self, x, st):
        h = F.rms_norm(x, (x.shape[-1],), self.ln, EPS)
        g, u = F.linear(h, self.wgu).chunk(2, dim=-1)
        return x + F.linear(F.silu(g) * u, self.wd)


class MoE:
    """DeepSeek-V3-like MoE FFN of one TP rank (experts sharded along the FFN dim)."""

    def __init__(self, hidden, E, topk, I, shared_I, dev):
        self.E, self.topk, self.I = E, topk, I
        self.ln = torch.ones(hidden, device=dev, dtype=DT)
        self.wr = param((E, hidden), hidden, dev)               # router, replicated per rank
        self.w1 = param((E, 2 * I, hidden), hidden, dev)        # gate+up, [E, N, K] (K contiguous)
        self.w2 = param((E, hidden, I), I, dev)                 # down,    [E, N, K]
        self.sgu = param((2 * shared_I, hidden), hidden, dev)   # shared expert
        self.sd = param((hidden, shared_I), shared_I, dev)
        self.impl = "grouped"
        self.host_dispatch = False

    def weight_bytes(self):
        return sum(t.numel() for t in (self.ln, self.wr, self.w1, self.w2, self.sgu, self.sd)) * 2

    def expert_bytes(self):
        return (self.w1[0].numel() + self.w2[0].numel()) * 2

    def always_read_bytes(self):
        return sum(t.numel() for t in (self.ln, self.wr, self.sgu, self.sd)) * 2

    def prepare(self, ids_cpu, dev):
        """ids_cpu: [T, topk] int64 routing (host).  Builds static device tensors."""
        T = ids_cpu.shape[0]
        r = {"ids": ids_cpu.to(dev)}
        flat = ids_cpu.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=self.E)
        r["order"] = order.to(dev)
        r["tok"] = (order // self.topk).to(dev)
        r["offs"] = torch.cumsum(counts, 0).to(torch.int32).to(dev)
        r["ones"] = torch.ones(T * self.topk, dtype=torch.int64, device=dev)
        loop = []
        for e in torch.unique(flat).tolist():
            slots = (flat == e).nonzero().flatten()
            loop.append((e, (slots // self.topk).to(dev), slots.to(dev)))
        r["loop"] = loop
        r["distinct"] = len(loop)
        return r

    def __call__(self, x, st, r):
        h = F.rms_norm(x, (x.shape[-1],), self.ln, EPS)
        # router: computed for its cost (sigmoid scores, top-k weights as in DeepSeek-V3),
        # but the experts actually used are the uniform random draw in r["ids"].
        scores = F.linear(h, self.wr).float().sigmoid()
        topv, _ = scores.topk(self.topk, dim=-1)
        w = (topv / topv.sum(-1, keepdim=True)).to(DT).reshape(-1)          # [T*k]
        out = torch.zeros_like(x)
        if self.impl == "grouped":
            if self.host_dispatch:
                order, tok, offs = r["order"], r["tok"], r["offs"]
            else:
                flat = r["ids"].reshape(-1)
                order = torch.argsort(flat, stable=True)
                tok = torch.div(order, self.topk, rounding_mode="floor")
                counts = torch.zeros(self.E, dtype=torch.int64, device=x.device).index_add_(0, flat, r["ones"])
                offs = torch.cumsum(counts, 0).to(torch.int32)
            xs = h.index_select(0, tok)
            gu = gmm(xs, self.w1.transpose(-2, -1), offs)
            g, u = gu.chunk(2, dim=-1)
            a = F.silu(g) * u
            y = gmm(a, self.w2.transpose(-2, -1), offs)
            y = y * w.index_select(0, order).unsqueeze(-1)
            out.index_add_(0, tok, y)
        else:
            for e, tok_e, slots_e in r["loop"]:
                xe = h.index_select(0, tok_e)
                g, u = F.linear(xe, self.w1[e]).chunk(2, dim=-1)
                ye = F.linear(F.silu(g) * u, self.w2[e]) * w.index_select(0, slots_e).unsqueeze(-1)
                out.index_add_(0, tok_e, ye)
        sg, su = F.linear(h, self.sgu).chunk(2, dim=-1)
        return x + out + F.linear(F.silu(sg) * su, self.sd)


class Model:
    def __init__(self, name, spec, layers, s_max, dev):
        self.name, self.spec, self.kind = name, spec, spec["kind"]
        H = spec["hidden"]
        self.H = H
        self.attn = [Attn(H, spec["q_heads"], spec["kv_heads"], s_max, dev) for _ in range(layers)]
        if self.kind == "dense":
            self.mlp = [DenseMLP(H, spec["ffn"], dev) for _ in range(layers)]
            self.embed = param((spec["vocab"], H), 1, dev)
            self.norm = torch.ones(H, device=dev, dtype=DT)
            self.lm_head = param((spec["vocab"], H), H, dev)
        else:
            self.mlp = [MoE(H, spec["experts"], spec["topk"], spec["expert_ffn"], spec["shared_ffn"], dev)
                        for _ in range(layers)]
        self.layers = layers
        inv = 1.0 / (500000.0 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
        ang = torch.outer(torch.arange(s_max, dtype=torch.float32), inv)
        self.cos_t = ang.cos().to(DT).to(dev)
        self.sin_t = ang.sin().to(DT).to(dev)
        self.dev = dev

    def weight_bytes(self):
        b = sum(a.weight_bytes() for a in self.attn) + sum(m.weight_bytes() for m in self.mlp)
        if self.kind == "dense":
            b += (self.embed.numel() + self.lm_head.numel() + self.norm.numel()) * 2
        return b

    def set_moe_impl(self, impl):
        for m in self.mlp:
            m.impl = impl

    def make_state(self, T, C, seed, attn="sdpa"):
        st = {"T": T, "C": C, "attn": attn}
        st["cos"] = self.cos_t[C:C + T].unsqueeze(1)   # [T, 1, d/2]
        st["sin"] = self.sin_t[C:C + T].unsqueeze(1)
        if self.kind == "dense":
            g = torch.Generator().manual_seed(seed)
            st["ids"] = torch.randint(0, self.spec["vocab"], (T,), generator=g).to(self.dev)
        else:
            g = torch.Generator().manual_seed(seed)
            st["x0"] = torch.randn((T, self.H), generator=g).to(DT).to(self.dev)
            routes = []
            for li in range(self.layers):
                gl = torch.Generator().manual_seed(1000003 * T + 7919 * li + 17)
                ids = torch.rand((T, self.spec["experts"]), generator=gl).argsort(dim=-1)[:, :self.spec["topk"]]
                routes.append(self.mlp[li].prepare(ids.contiguous(), self.dev))
            st["routes"] = routes
            st["distinct"] = statistics.mean(r["distinct"] for r in routes)
        return st

    def forward(self, st):
        if self.kind == "dense":
            x = F.embedding(st["ids"], self.embed)
            for a, m in zip(self.attn, self.mlp):
                x = m(a(x, st), st)
            x = F.rms_norm(x, (self.H,), self.norm, EPS)
            return F.linear(x, self.lm_head)
        x = st["x0"]
        for a, m, r in zip(self.attn, self.mlp, st["routes"]):
            x = m(a(x, st), st, r)
        return x


# --------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------
def _stats(ts):
    s = sorted(ts)
    n = len(s)
    return dict(median=statistics.median(s), min=s[0], p10=s[max(0, int(0.1 * n))],
                p90=s[min(n - 1, int(0.9 * n))], n=n)


def time_eager(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return _stats(ts)


def capture(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g, out


def time_graph(fn, warmup, reps):
    g, out = capture(fn)
    for _ in range(warmup):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    del g, out
    return _stats(ts)


# --------------------------------------------------------------------------------------
# probes
# --------------------------------------------------------------------------------------
def probe_sdpa(dev):
    """Which SDPA backends accept the decode/verify shapes, and which one is chosen."""
    res = {}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}
    for hq, hkv, T, S in ((8, 1, 1, 1025), (32, 8, 4, 4100), (18, 2, 16, 1040)):
        kc = torch.randn((hkv, S + 64, HEAD_DIM), device=dev, dtype=DT)
        q = torch.randn((1, hq, T, HEAD_DIM), device=dev, dtype=DT)
        k = kc[:, :S].unsqueeze(0)
        v = kc[:, :S].unsqueeze(0)
        key = f"hq{hq}_hkv{hkv}_T{T}_S{S}"
        ok = []
        for b in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
            try:
                with sdpa_kernel([getattr(SDPBackend, b)]):
                    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                torch.cuda.synchronize()
                ok.append(b)
            except Exception:  # noqa: BLE001
                pass
        chosen = "unknown"
        try:
            c = torch._fused_sdp_choice(q, k, v, None, 0.0, False, scale=None, enable_gqa=True)
            chosen = SDPBackend(c).name
        except Exception as e:  # noqa: BLE001
            chosen = f"unknown ({type(e).__name__})"
        res[key] = {"accepted": ok, "default_choice": chosen}
    return res


def probe_grouped_mm(dev):
    """Check torch._grouped_mm against a per-group loop, with empty groups; check capture."""
    try:
        E, K, N = 16, 256, 128
        counts = torch.tensor([0, 3, 0, 0, 1, 5, 0, 2, 0, 0, 0, 7, 0, 1, 0, 0])
        M = int(counts.sum())
        a = torch.randn((M, K), device=dev, dtype=DT)
        w = torch.randn((E, N, K), device=dev, dtype=DT)
        offs = torch.cumsum(counts, 0).to(torch.int32).to(dev)
        y = gmm(a, w.transpose(-2, -1), offs)
        ref = torch.empty_like(y)
        start = 0
        for e in range(E):
            n = int(counts[e])
            if n:
                ref[start:start + n] = a[start:start + n] @ w[e].t()
            start += n
        err = (y.float() - ref.float()).abs().max().item() / max(1e-6, ref.float().abs().max().item())
        ok = err < 2e-2
        g = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            gmm(a, w.transpose(-2, -1), offs)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(g):
            y2 = gmm(a, w.transpose(-2, -1), offs)
        g.replay()
        torch.cuda.synchronize()
        err2 = (y2.float() - ref.float()).abs().max().item() / max(1e-6, ref.float().abs().max().item())
        return {"ok": bool(ok and err2 < 2e-2), "rel_err": err, "rel_err_graph": err2}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": repr(e)[:300]}


def bench_attention(shapes, tokens, contexts, dev, warmup, reps, nbuf, deadline, csv_path):
    """Graph-mode time of ONE attention call (per layer) for each variant and (T, C).

    nbuf separate KV caches are read one after the other in one graph (so small caches do
    not all sit in L2), time / nbuf.  Returns the fastest valid variant per (hq, hkv, T, C).
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel
    s_max = max(contexts) + max(tokens) + 512
    best, info = {}, {}
    f = open(csv_path, "w", newline="")
    w = csv.writer(f)
    w.writerow(["shape", "q_heads", "kv_heads", "tokens", "context", "backend", "time_us_per_layer",
                "kv_bytes_per_layer", "splits"])
    for name, hq, hkv in shapes:
        valid = []
        kc = torch.randn((hkv, 2048, HEAD_DIM), device=dev, dtype=DT)
        vc = torch.randn((hkv, 2048, HEAD_DIM), device=dev, dtype=DT)
        for var in ATTN_VARIANTS:
            try:
                errs = []
                for T in (1, 5):
                    S = 1024
                    qh = torch.randn((1, hq, T, HEAD_DIM), device=dev, dtype=DT)
                    with sdpa_kernel([SDPBackend.MATH]):
                        ref = F.scaled_dot_product_attention(qh.float(), kc[:, :S].unsqueeze(0).float(),
                                                             vc[:, :S].unsqueeze(0).float(), enable_gqa=hq != hkv)
                    o = attention(var, qh, kc, vc, S).float()
                    errs.append((o - ref).abs().max().item())
                ok = max(errs) < 3e-2
                info[f"{name}:{var}"] = f"{'ok' if ok else 'WRONG'} (max abs err {max(errs):.3g})"
                if ok:
                    valid.append(var)
            except Exception as e:  # noqa: BLE001
                info[f"{name}:{var}"] = f"failed: {repr(e)[:160]}"
                torch.cuda.synchronize()
        log(f"   attention check {name}: " + "; ".join(f"{k}={v}" for k, v in info.items() if k.startswith(name)))
        del kc, vc
        kcs = [torch.empty((hkv, s_max, HEAD_DIM), device=dev, dtype=DT).normal_() for _ in range(nbuf)]
        vcs = [torch.empty((hkv, s_max, HEAD_DIM), device=dev, dtype=DT).normal_() for _ in range(nbuf)]
        for C in contexts:
            for T in tokens:
                if time.time() > deadline:
                    info[f"{name}:time"] = "attention bench stopped early (time budget)"
                    break
                qh = torch.randn((1, hq, T, HEAD_DIM), device=dev, dtype=DT)
                times = {}
                for var in valid:
                    try:
                        r = time_graph(lambda: [attention(var, qh, kcs[i], vcs[i], C + T) for i in range(nbuf)],
                                       warmup, reps)
                    except Exception as e:  # noqa: BLE001
                        log(f"   attention {name} {var} T={T} C={C} failed: {repr(e)[:160]}")
                        torch.cuda.synchronize()
                        continue
                    times[var] = r["median"] * 1000.0 / nbuf
                    w.writerow([name, hq, hkv, T, C, var, f"{times[var]:.2f}", (C + T) * hkv * HEAD_DIM * 2 * 2,
                                splitkv_splits(hq, T, C + T) if var == "splitkv" else 1])
                f.flush()
                if times:
                    best[(hq, hkv, T, C)] = min(times, key=times.get)
                log(f"   attention {name} C={C:6d} T={T:4d}: " +
                    " ".join(f"{k} {v:.1f}us" for k, v in times.items()))
        kcs = vcs = None
        torch.cuda.empty_cache()
    f.close()
    return best, info


def profile_forward(model, st, label, fh):
    """Kernel count and top kernels of one eager forward (torch.profiler, CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile
    model.forward(st)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model.forward(st)
        torch.cuda.synchronize()
    ka = prof.key_averages()
    n = 0
    for e in ka:
        dt = getattr(e, "device_type", None)
        if dt is not None and "CUDA" in str(dt):
            n += e.count
    table = ""
    for key in ("self_device_time_total", "self_cuda_time_total", "device_time_total", "cuda_time_total"):
        try:
            table = ka.table(sort_by=key, row_limit=25, max_name_column_width=70)
            break
        except Exception:  # noqa: BLE001
            continue
    fh.write(f"===== {label}: {n} GPU events (kernels + memcpy/memset) in one forward =====\n{table}\n\n")
    fh.flush()
    return n


# --------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------
def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--models", default="llama-3.1-8b,llama-3.3-70b,deepseek-v3-moe-grouped,deepseek-v3-moe-loop")
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--contexts", default="1024,4096,16384,32768")
    ap.add_argument("--loop-contexts", default="1024,32768", help="contexts for the per-expert loop MoE variant")
    ap.add_argument("--modes", default="graph,eager")
    ap.add_argument("--moe-layers", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--budget-s", type=float, default=450.0, help="stop starting new points after this")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--attn", default="auto", choices=("auto",) + ATTN_VARIANTS,
                    help="attention implementation; auto = the fastest valid one per (shape, T, C) in the attention bench")
    ap.add_argument("--attn-bench-s", type=float, default=70.0, help="time budget of the attention bench")
    ap.add_argument("--attn-nbuf", type=int, default=16)
    ap.add_argument("--profile", type=int, default=1, help="profile kernel counts per model (1/0)")
    args = ap.parse_args()

    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    LOG = open(os.path.join(args.out, "h200-forward.log"), "w")
    dev = torch.device("cuda")
    torch.manual_seed(args.seed)
    gpu = torch.cuda.get_device_name(0)
    gpu_short = "H200" if "H200" in gpu else gpu.replace(",", " ")
    tokens = [int(x) for x in args.tokens.split(",")]
    contexts = [int(x) for x in args.contexts.split(",")]
    loop_contexts = [int(x) for x in args.loop_contexts.split(",") if int(x) in contexts] or contexts[:1]
    modes = args.modes.split(",")
    s_max = max(contexts) + max(tokens) + 512
    log(f"torch {torch.__version__} cuda {torch.version.cuda} gpu {gpu}; python {platform.python_version()}")

    cond = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu,
        "nvidia_smi_gpu": sh("nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader"),
        "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader"),
        "cuda_driver_api": sh("nvidia-smi | grep -o 'CUDA Version: [0-9.]*'"),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": str(torch.backends.cudnn.version()),
        "python": platform.python_version(),
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "command_line": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }
    cond["sdpa_probe"] = probe_sdpa(dev)
    log("sdpa probe:", cond["sdpa_probe"])
    cond_path = os.path.join(args.out, "h200-forward.conditions.yaml")
    runs = [m.strip() for m in args.models.split(",") if m.strip()]
    shapes = []
    for run in runs:
        sp = SPECS["deepseek-v3-moe" if run.startswith("deepseek-v3-moe") else run]
        key = ("deepseek-v3-moe" if run.startswith("deepseek-v3-moe") else run, sp["q_heads"], sp["kv_heads"])
        if key not in shapes:
            shapes.append(key)
    attn_best = {}
    cond["attention_choice"] = args.attn
    if args.attn == "auto":
        try:
            attn_best, cond["attention_check"] = bench_attention(
                shapes, tokens, contexts, dev, args.warmup, 20, args.attn_nbuf,
                time.time() + args.attn_bench_s, os.path.join(args.out, "h200-attention.csv"))
        except Exception as e:  # noqa: BLE001
            log("attention bench failed:", repr(e)[:300])
            log(traceback.format_exc())
            cond["attention_check"] = {"bench": f"failed: {repr(e)[:200]}"}
            torch.cuda.synchronize()
    prof_fh = open(os.path.join(args.out, "h200-forward-profile.txt"), "w") if args.profile else None

    csv_path = os.path.join(args.out, "h200-forward.csv")
    det_path = os.path.join(args.out, "h200-forward-detail.csv")
    fcsv = open(csv_path, "w", newline="")
    fdet = open(det_path, "w", newline="")
    w = csv.writer(fcsv)
    wd = csv.writer(fdet)
    w.writerow(["model", "gpu", "tp", "layers_timed", "tokens", "context", "mode", "time_ms"])
    wd.writerow(["model", "gpu", "tp", "layers_timed", "tokens", "context", "mode", "time_ms_median",
                 "time_ms_min", "time_ms_p10", "time_ms_p90", "n", "distinct_experts_per_layer",
                 "weight_bytes_read", "attention"])
    fcsv.flush()
    fdet.flush()

    shares = {"llama-3.1-8b": 1.0, "llama-3.3-70b": 1.4, "deepseek-v3-moe-grouped": 1.1, "deepseek-v3-moe-loop": 0.9}
    skipped, failed, model_info = [], [], {}
    moe_model = None

    for ri, run in enumerate(runs):
        base = "deepseek-v3-moe" if run.startswith("deepseek-v3-moe") else run
        spec = dict(SPECS[base])
        impl = run.rsplit("-", 1)[-1] if base == "deepseek-v3-moe" else None
        layers = args.moe_layers if spec["kind"] == "moe" else spec["layers"]
        now = time.time()
        remaining = args.budget_s - (now - t_start)
        rest = runs[ri:]
        cap = remaining * shares.get(run, 1.0) / sum(shares.get(r, 1.0) for r in rest)
        deadline = now + cap
        log(f"== {run}: budget {cap:.0f}s (remaining {remaining:.0f}s)")
        if remaining <= 5:
            skipped.append(f"{run}: all points (global budget spent)")
            continue
        try:
            if spec["kind"] == "moe":
                if moe_model is None:
                    moe_model = Model(base, spec, layers, s_max, dev)
                model = moe_model
                if impl == "grouped" and "grouped_mm_probe" not in cond:
                    # probed only now, after the dense models, so a failed capture cannot spoil them
                    cond["grouped_mm_probe"] = probe_grouped_mm(dev)
                    log("grouped_mm probe:", cond["grouped_mm_probe"])
                if impl == "grouped" and not cond["grouped_mm_probe"].get("ok"):
                    skipped.append(f"{run}: torch._grouped_mm failed its probe")
                    continue
                model.set_moe_impl(impl)
                # probe whether the on-device dispatch (argsort/index_add/cumsum) captures
                if impl == "grouped":
                    try:
                        stp = model.make_state(4, 1024, args.seed)
                        capture(lambda: model.forward(stp))
                        torch.cuda.synchronize()
                        cond["moe_dispatch"] = "on device (argsort + index_add counts + cumsum) inside the graph"
                    except Exception as e:  # noqa: BLE001
                        log("device dispatch capture failed, using host-precomputed dispatch:", repr(e)[:300])
                        torch.cuda.synchronize()
                        for m in model.mlp:
                            m.host_dispatch = True
                        cond["moe_dispatch"] = "host-precomputed sort/offsets (device dispatch did not capture)"
                    try:
                        stv = model.make_state(16, 1024, args.seed)
                        yg = model.forward(stv).float().clone()
                        model.set_moe_impl("loop")
                        yl = model.forward(stv).float()
                        model.set_moe_impl("grouped")
                        cond["grouped_vs_loop_check"] = (
                            f"T=16: max abs diff {(yg - yl).abs().max().item():.3g}, output max {yl.abs().max().item():.3g}")
                    except Exception as e:  # noqa: BLE001
                        model.set_moe_impl("grouped")
                        cond["grouped_vs_loop_check"] = f"failed: {repr(e)[:200]}"
                    log("   grouped vs loop:", cond["grouped_vs_loop_check"])
            else:
                model = Model(base, spec, layers, s_max, dev)
            torch.cuda.synchronize()
            wb = model.weight_bytes()
            info = {"tp": spec["tp"], "layers_timed": layers, "weight_bytes_total": wb,
                    "gpu_mem_allocated_gb": round(torch.cuda.memory_allocated() / 1e9, 2)}
            if spec["kind"] == "moe":
                m0 = model.mlp[0]
                info["moe_impl"] = impl
                info["expert_bytes_per_rank"] = m0.expert_bytes()
                info["moe_always_read_bytes_per_layer"] = m0.always_read_bytes()
                info["attn_bytes_per_layer"] = model.attn[0].weight_bytes()
            else:
                info["layer_bytes"] = model.attn[0].weight_bytes() + model.mlp[0].weight_bytes()
                info["lm_head_bytes"] = model.lm_head.numel() * 2
            model_info[run] = info
            log(f"   built: {info}")

            # correctness check: graph replay == eager for one point
            try:
                stc = model.make_state(4, 1024, args.seed)
                ref = model.forward(stc).float().clone()
                g, out = capture(lambda: model.forward(stc))
                g.replay()
                torch.cuda.synchronize()
                diff = (out.float() - ref).abs().max().item()
                scale = ref.abs().max().item()
                info["graph_vs_eager_maxabs"] = f"{diff:.3g} (output max {scale:.3g}, finite={bool(torch.isfinite(ref).all())})"
                del g, out, ref
            except Exception as e:  # noqa: BLE001
                info["graph_vs_eager_maxabs"] = f"check failed: {repr(e)[:200]}"
            log(f"   check: {info['graph_vs_eager_maxabs']}")

            ctxs = loop_contexts if impl == "loop" else contexts
            order = []
            for pri in ([min(ctxs), max(ctxs)], [c for c in ctxs if c not in (min(ctxs), max(ctxs))]):
                for mode in modes:
                    for C in pri:
                        for T in tokens:
                            order.append((mode, C, T))
            seen = set()
            order = [p for p in order if not (p in seen or seen.add(p))]
            state_cache = {}
            for (mode, C, T) in order:
                if time.time() > deadline:
                    skipped.append(f"{run} {mode} C={C} T={T} (time budget)")
                    continue
                try:
                    key = (T, C)
                    if key not in state_cache:
                        state_cache.clear()
                        av = args.attn if args.attn != "auto" else \
                            attn_best.get((spec["q_heads"], spec["kv_heads"], T, C), "sdpa")
                        state_cache[key] = model.make_state(T, C, args.seed + T, attn=av)
                    st = state_cache[key]
                    fn = lambda: model.forward(st)  # noqa: E731
                    res = time_graph(fn, args.warmup, args.reps) if mode == "graph" else \
                        time_eager(fn, args.warmup, args.reps)
                    distinct = st.get("distinct", "")
                    if spec["kind"] == "moe":
                        m0 = model.mlp[0]
                        rb = layers * (model.attn[0].weight_bytes() + m0.always_read_bytes()) + \
                            sum(r["distinct"] for r in st["routes"]) * m0.expert_bytes()
                    else:
                        rb = wb - model.embed.numel() * 2
                    row = [run, gpu_short, spec["tp"], layers, T, C, mode, f"{res['median']:.4f}"]
                    w.writerow(row)
                    wd.writerow(row[:-1] + [f"{res['median']:.4f}", f"{res['min']:.4f}", f"{res['p10']:.4f}",
                                            f"{res['p90']:.4f}", res["n"],
                                            (f"{distinct:.2f}" if distinct != "" else ""), rb, st["attn"]])
                    fcsv.flush()
                    fdet.flush()
                    log(f"   {run} {mode:5s} C={C:6d} T={T:4d} [{st['attn']}]: {res['median']:.4f} ms "
                        f"(min {res['min']:.4f} p90 {res['p90']:.4f})"
                        + (f" distinct {distinct:.1f}" if distinct != "" else ""))
                except Exception as e:  # noqa: BLE001
                    failed.append(f"{run} {mode} C={C} T={T}: {repr(e)[:200]}")
                    log("   FAILED", failed[-1])
                    log(traceback.format_exc())
                    torch.cuda.synchronize()
            state_cache.clear()
            if prof_fh is not None:
                kc_info = {}
                for (T, C) in ((1, min(ctxs)), (4, min(ctxs)), (4, max(ctxs))):
                    try:
                        av = args.attn if args.attn != "auto" else \
                            attn_best.get((spec["q_heads"], spec["kv_heads"], T, C), "sdpa")
                        stq = model.make_state(T, C, args.seed + T, attn=av)
                        kc_info[f"T{T}_C{C}_{av}"] = profile_forward(model, stq, f"{run} T={T} C={C} attention={av}",
                                                                     prof_fh)
                    except Exception as e:  # noqa: BLE001
                        kc_info[f"T{T}_C{C}"] = f"profile failed: {repr(e)[:150]}"
                        torch.cuda.synchronize()
                info["gpu_events_per_forward"] = kc_info
                log(f"   kernels per forward: {kc_info}")
        except Exception as e:  # noqa: BLE001
            failed.append(f"{run}: {repr(e)[:300]}")
            log("MODEL FAILED", failed[-1])
            log(traceback.format_exc())
        finally:
            model = None
            next_is_moe = ri + 1 < len(runs) and runs[ri + 1].startswith("deepseek-v3-moe")
            if not next_is_moe:
                moe_model = None
            gc.collect()
            torch.cuda.empty_cache()
            cond["elapsed_s"] = round(time.time() - t_start, 1)
            cond["models"], cond["skipped"], cond["failed"] = model_info, skipped, failed
            write_conditions(cond_path, cond, args, tokens, contexts, loop_contexts)

    fcsv.close()
    fdet.close()
    if prof_fh is not None:
        prof_fh.close()
    cond["elapsed_s"] = round(time.time() - t_start, 1)
    cond["models"] = model_info
    cond["skipped"] = skipped
    cond["failed"] = failed
    write_conditions(cond_path, cond, args, tokens, contexts, loop_contexts)
    log(f"done in {cond['elapsed_s']} s; {len(skipped)} skipped, {len(failed)} failed")


def yq(s):
    s = str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{s}"'


def write_conditions(path, c, args, tokens, contexts, loop_contexts):
    L = []
    L.append("# Conditions of calibration/compute/h200-forward.csv (written by measure_forward.py)")
    for k in ("date_utc", "gpu", "nvidia_smi_gpu", "driver", "cuda_driver_api", "torch", "torch_cuda", "cudnn",
              "python", "sm_count", "command_line", "elapsed_s"):
        L.append(f"{k}: {yq(c.get(k, ''))}")
    L.append("what_is_timed: >-")
    L.append("  The forward pass of ONE tensor-parallel rank for ONE request (batch 1) with T new tokens"
             " (T=1 decode, T=k+1 verify) attending to a KV cache of C earlier tokens. Random bf16 weights,"
             " bf16 activations. No tensor-parallel communication (no all-reduce) is included. No sampling.")
    L.append("time_ms: median of %d timed runs after %d warm-up runs; each run bracketed by"
             " torch.cuda.synchronize() and timed with CUDA events on the current stream." % (args.reps, args.warmup))
    L.append("modes:")
    L.append("  graph: the whole forward captured once per (T, C) into a torch.cuda.CUDAGraph and replayed (no CPU launch cost)")
    L.append("  eager: the same Python forward launched op by op (includes CPU launch/dispatch time; GPU idles while the CPU launches)")
    L.append(f"tokens: [{', '.join(map(str, tokens))}]")
    L.append(f"contexts: [{', '.join(map(str, contexts))}]")
    L.append(f"loop_variant_contexts: [{', '.join(map(str, loop_contexts))}]")
    L.append("models:")
    L.append("  llama-3.1-8b: {tp: 1, layers_timed: 32, shape: 'full Llama-3.1-8B stack: H 4096, 32 q / 8 kv heads x 128, FFN 14336 SwiGLU, V 128256', includes: 'embedding lookup, 32 decoder layers, final RMSNorm, lm_head over all T tokens'}")
    L.append("  llama-3.3-70b: {tp: 8, layers_timed: 80, shape: 'one TP8 rank of Llama-3.3-70B: H 8192, 8 q / 1 kv heads x 128, FFN 28672/8 = 3584, vocab shard 128256/8 = 16032', includes: 'embedding shard lookup, 80 decoder layers, final RMSNorm, lm_head shard over all T tokens; the 2 all-reduces per layer and the logits gather are NOT included'}")
    L.append(f"  deepseek-v3-moe-grouped: {{tp: 8, layers_timed: {args.moe_layers}, shape: 'one TP8 rank of {args.moe_layers} DeepSeek-V3-like MoE decoder layers: H 7168, 256 routed experts top-8, expert FFN 2048/8 = 256 per rank, 1 shared expert (FFN 256 per rank), router 7168x256 replicated', includes: 'attention + MoE of {args.moe_layers} layers only; no embedding, no lm_head, no dense layers, no all-reduce'}}")
    L.append(f"  deepseek-v3-moe-loop: {{tp: 8, layers_timed: {args.moe_layers}, same weights as -grouped, experts run as a Python loop of GEMM pairs over the touched experts (an unfused implementation; shows how much an unfused MoE costs)}}")
    L.append("approximations:")
    L.append("  - 'attention: q = T new tokens against all C+T keys (KV cache layout [kv_heads, S, 128], bf16), NON-causal among the T new tokens (reads the same keys as the causal verify mask); new K/V written into the cache each step; RoPE applied as rotate-half. Variants: sdpa = F.scaled_dot_product_attention with the default backend choice; flash = the same forced to FLASH_ATTENTION; splitkv = flash-decoding by hand (KV cut into n chunks run as a batch through aten._scaled_dot_product_flash_attention, merged by log-sum-exp in 5 extra small kernels; reads up to n-1 cache rows past C+T)'")
    L.append("  - 'DeepSeek-V3 MLA replaced by GQA with 18 q heads / 2 kv heads x 128 per rank: same per-rank attention weight bytes as MLA at TP8 (~36.7M params = 73 MB), KV cache 1024 B per token per layer (MLA latent: 1152 B)'")
    L.append("  - 'MoE routing: each token goes to 8 distinct experts drawn uniformly at random (seeded per T and layer, the same draw for every context and mode); the router GEMM + sigmoid + top-k are computed for their cost and give the combine weights, but do not choose the experts; no grouped (n_group/topk_group) routing. Distinct experts per layer are in h200-forward-detail.csv'")
    L.append("  - 'DeepSeek-V3 has 3 dense + 58 MoE layers (+ embedding, lm_head): only a few MoE layers are timed; scale per layer'")
    L.append("  - 'weights are random (normal, std 1/sqrt(fan_in)); timing of bf16 GEMMs does not depend on values beyond power effects'")
    L.append("  - 'the eager mode is plain PyTorch ops from Python (rms_norm, linear, rope, sdpa, silu...), not the fused kernels of an engine; treat it as an upper bound on the CPU-launch cost'")
    L.append(f"attention_choice: {yq(c.get('attention_choice'))}")
    L.append("attention_choice_meaning: 'auto = per (model shape, T, C) the fastest valid variant in the graph-mode attention bench (h200-attention.csv); the variant used for each row is in h200-forward-detail.csv, column attention'")
    L.append("attention_check:")
    for k, v in (c.get("attention_check") or {}).items():
        L.append(f"  {yq(k)}: {yq(v)}")
    L.append(f"moe_dispatch: {yq(c.get('moe_dispatch', 'n/a'))}")
    L.append(f"grouped_vs_loop_check: {yq(c.get('grouped_vs_loop_check', 'n/a'))}")
    L.append("sdpa_probe:")
    for k, v in (c.get("sdpa_probe") or {}).items():
        L.append(f"  {k}: {yq(v)}")
    L.append(f"grouped_mm_probe: {yq(c.get('grouped_mm_probe'))}")
    L.append("model_info:")
    for k, v in (c.get("models") or {}).items():
        L.append(f"  {k}:")
        for kk, vv in v.items():
            L.append(f"    {kk}: {yq(vv)}")
    L.append("skipped:")
    for s in c.get("skipped") or []:
        L.append(f"  - {yq(s)}")
    if not c.get("skipped"):
        L[-1] = "skipped: []"
    L.append("failed:")
    for s in c.get("failed") or []:
        L.append(f"  - {yq(s)}")
    if not c.get("failed"):
        L[-1] = "failed: []"
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
