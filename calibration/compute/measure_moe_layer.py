#!/usr/bin/env python3
"""Time ONE MoE layer's forward on one GPU against the tokens per step and the experts they touch.

What one timed forward runs (bf16 weights and activations, random values, no attention, no norm):

    router     logits = x @ W_router^T  [T, E], plus a routing bias that makes top-k pick the
               generated experts (below); top-k; combine weights softmax over the k chosen logits
    dispatch   on the device: argsort of the T*k expert ids, token order, per-expert counts
               (index_add), cumulative group ends (int32)
    experts    gate/up grouped GEMM [T*k, H] x [E, H, 2I], SiLU(gate) * up, down grouped GEMM
               [T*k, I] x [E, I, H]; torch._grouped_mm (PyTorch's grouped GEMM, CUTLASS on sm90:
               groups with no rows read no weights), or with --impl loop (the documented fallback,
               used automatically where torch._grouped_mm is missing or fails its check) one
               torch.mm pair per touched expert
    combine    rows scaled by their weights and summed back per token (index_add_)
    shared     where the shape has one: a dense SwiGLU of the same width over all T tokens

Shapes (models/llm/qwen3-30b-a3b.yaml, models/llm/deepseek-v3.yaml, whole layer on one GPU, TP1):
    qwen3-30b-a3b-moe-layer  hidden 2048, 128 experts, top-8, expert FFN 768, no shared expert
    deepseek-v3-moe-layer    hidden 7168, 256 experts, top-8, expert FFN 2048, 1 shared expert of
                             FFN 2048; bf16 here (the released weights are FP8) and plain top-8
                             (DeepSeek-V3's grouped n_group/topk_group routing is not modelled)

Routing, generated on the host per (shape, routing, T) with a fixed seed:
    uniform     each token picks k distinct experts uniformly at random, independently of the others
    correlated  token 0 as uniform; every later token fills each of its k slots, with probability
                --reuse (default 0.75), from the experts earlier tokens of the same step already
                chose (uniformly among those not yet in the token), otherwise from the rest
                uniformly. About k (1 - reuse) of each later token's picks are fresh, so distinct
                experts grow by ~2 per token (at 0.75) until all E are touched: the verify tokens
                of one request that keep to a small set of experts. The reuse value is a stress
                setting, not a measured property of a model.
    shared      token 0 as uniform; every later slot, with probability --reuse, takes an expert
                earlier tokens chose (as correlated), otherwise draws uniformly from all E experts
                not yet in the token, which may be one an earlier token already chose. This is the
                routing specsim's compute.routing_skew = 1 - reuse describes (1 + (T - 1)(1 - reuse)
                tokens' worth of uniform draws, docs/references/models.md#distinct-experts); the
                correlated generator's fresh picks never hit a touched expert, so it touches more.

Modes: graph (the layer captured once per point into a torch.cuda.CUDAGraph and replayed) and
eager (the same Python launched op by op; includes the host's launch time while the GPU idles).

Timing: per point --warmup untimed runs, then --reps timed runs, each bracketed by
torch.cuda.synchronize() and CUDA events on the current stream; median, p10, p90. The Qwen layer
(1.2 GB) is held in --copies copies and the runs rotate through them so that the 50 MB L2 cannot
hold the experts between runs (one DeepSeek layer is 22.5 GB and never fits).

Output, in --out (<card>-moe-layer.*, card = h200 / h100 / the GPU name):
    <card>-moe-layer.csv              model,gpu,tp,layers_timed,tokens,context,mode,routing,impl,
                                      distinct_experts,expert_bytes_touched,fixed_bytes,
                                      time_ms,time_ms_p10,time_ms_p90,n
        time_ms = median; expert_bytes_touched = distinct experts x 3 H I x 2 B; fixed_bytes = the
        router and shared expert weights read whatever the routing; context 0 (no attention);
        the first eight columns are those `specsim calibrate compute` reads.
    <card>-moe-layer.conditions.yaml  GPU, driver, clocks, torch, checks, an HBM read probe
    <card>-moe-layer.log              the run log
    <card>-moe-layer-nvidia-smi.txt   nvidia-smi before and after

Run:  python3 calibration/compute/measure_moe_layer.py --out DIR
No downloads; needs only PyTorch with CUDA.
"""
import argparse
import csv
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

DT = torch.bfloat16
BYTES = 2  # bf16

SHAPES = {
    "qwen3-30b-a3b-moe-layer": dict(hidden=2048, experts=128, topk=8, inter=768, shared=0, copies=4),
    "deepseek-v3-moe-layer": dict(hidden=7168, experts=256, topk=8, inter=2048, shared=1, copies=1),
}
TOKENS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
# Added to the router logits of the generated experts: far above any logit of the random router
# (|logit| < ~10 at std 1/sqrt(H) weights), so top-k returns exactly the generated choice.
ROUTE_BIAS = 1.0e4

LOG = None


def log(*parts):
    msg = " ".join(str(p) for p in parts)
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


def grouped_mm_fn():
    return getattr(torch, "_grouped_mm", None) or getattr(F, "grouped_mm", None)


# --------------------------------------------------------------------------------------
# routing generators
# --------------------------------------------------------------------------------------
def route_uniform(T, E, k, gen):
    return torch.rand((T, E), generator=gen).argsort(dim=-1)[:, :k]


def route_correlated(T, E, k, reuse, gen, fresh_only=True):
    """See the module docstring: each slot reuses an expert of earlier tokens with prob `reuse`;
    otherwise a fresh expert (fresh_only, `correlated`) or any the token lacks (`shared`)."""
    ids = torch.empty((T, k), dtype=torch.int64)
    ids[0] = torch.randperm(E, generator=gen)[:k]
    used = set(ids[0].tolist())
    for t in range(1, T):
        mine = []
        for _ in range(k):
            pool_old = [e for e in used if e not in mine]
            take_old = pool_old and torch.rand((), generator=gen).item() < reuse
            if take_old:
                pool = pool_old
            else:
                pool = [e for e in range(E) if e not in used and e not in mine] if fresh_only else []
                if not pool:
                    pool = [e for e in range(E) if e not in mine]
            mine.append(pool[int(torch.randint(len(pool), (), generator=gen))])
        ids[t] = torch.tensor(mine)
        used.update(mine)
    return ids


def make_routes(routing, T, E, k, reuse, seed):
    gen = torch.Generator().manual_seed(seed)
    if routing == "uniform":
        return route_uniform(T, E, k, gen)
    if routing == "shared":
        return route_correlated(T, E, k, reuse, gen, fresh_only=False)
    if routing == "correlated":
        return route_correlated(T, E, k, reuse, gen)
    raise SystemExit(f"unknown routing {routing!r} (uniform, correlated, shared)")


# --------------------------------------------------------------------------------------
# the layer
# --------------------------------------------------------------------------------------
class MoeLayer:
    def __init__(self, shape, dev):
        H, E, I = shape["hidden"], shape["experts"], shape["inter"]
        self.H, self.E, self.k, self.I = H, E, shape["topk"], I
        self.wr = param((E, H), H, dev)
        self.w1 = param((E, 2 * I, H), H, dev)     # gate+up, K (= H) contiguous
        self.w2 = param((E, H, I), I, dev)         # down,    K (= I) contiguous
        self.sgu = param((2 * I * shape["shared"], H), H, dev) if shape["shared"] else None
        self.sd = param((H, I * shape["shared"]), I, dev) if shape["shared"] else None

    def expert_bytes(self):
        return 3 * self.H * self.I * BYTES

    def fixed_bytes(self):
        b = self.wr.numel() * BYTES
        if self.sgu is not None:
            b += (self.sgu.numel() + self.sd.numel()) * BYTES
        return b

    def forward(self, x, st, impl):
        T, k = x.shape[0], self.k
        logits = F.linear(x, self.wr).float()
        _, ids = (logits + st["bias"]).topk(k, dim=-1)
        w = torch.softmax(logits.gather(1, ids), dim=-1).to(DT).reshape(-1)        # [T*k]
        flat = ids.reshape(-1)
        out = torch.zeros_like(x)
        if impl == "grouped":
            order = torch.argsort(flat, stable=True)
            tok = torch.div(order, k, rounding_mode="floor")
            counts = torch.zeros(self.E, dtype=torch.int64, device=x.device).index_add_(0, flat, st["ones"])
            offs = torch.cumsum(counts, 0).to(torch.int32)
            gmm = grouped_mm_fn()
            xs = x.index_select(0, tok)
            g, u = gmm(xs, self.w1.transpose(-2, -1), offs=offs).chunk(2, dim=-1)
            y = gmm(F.silu(g) * u, self.w2.transpose(-2, -1), offs=offs)
            out.index_add_(0, tok, y * w.index_select(0, order).unsqueeze(-1))
        else:
            # Fallback: one GEMM pair per touched expert, the host-known routing (st["loop"]). Its
            # slots are in the host's order, while top-k orders them by logit: the combine weights
            # are taken in the host's order too (softmax over the same k logits, permuted).
            wh = torch.softmax(logits.gather(1, st["ids"]), dim=-1).to(DT).reshape(-1)
            for e, tok_e, slots_e in st["loop"]:
                g, u = torch.mm(x.index_select(0, tok_e), self.w1[e].t()).chunk(2, dim=-1)
                ye = torch.mm(F.silu(g) * u, self.w2[e].t())
                out.index_add_(0, tok_e, ye * wh.index_select(0, slots_e).unsqueeze(-1))
        if self.sgu is not None:
            sg, su = F.linear(x, self.sgu).chunk(2, dim=-1)
            out = out + F.linear(F.silu(sg) * su, self.sd)
        return out


def make_state(layer, ids, dev, seed):
    T = ids.shape[0]
    gen = torch.Generator().manual_seed(seed + 1)
    bias = torch.zeros((T, layer.E), dtype=torch.float32)
    bias.scatter_(1, ids, ROUTE_BIAS)
    flat = ids.reshape(-1)
    loop = []
    for e in torch.unique(flat).tolist():
        slots = (flat == e).nonzero().flatten()
        loop.append((e, (slots // layer.k).to(dev), slots.to(dev)))
    return {
        "x": torch.randn((T, layer.H), generator=gen).to(DT).to(dev),
        "bias": bias.to(dev),
        "ids": ids.to(dev),
        "ones": torch.ones(T * layer.k, dtype=torch.int64, device=dev),
        "loop": loop,
        "distinct": len(loop),
    }


def reference(layer, st, ids):
    """fp32 per-expert reference of the routed part plus shared expert, for the correctness check."""
    x = st["x"].float()
    logits = F.linear(x, layer.wr.float())
    w = torch.softmax(logits.gather(1, ids.to(x.device)), dim=-1)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(layer.k):
            e = int(ids[t, j])
            g, u = (layer.w1[e].float() @ x[t]).chunk(2)
            out[t] += w[t, j] * (layer.w2[e].float() @ (F.silu(g) * u))
    if layer.sgu is not None:
        sg, su = F.linear(x, layer.sgu.float()).chunk(2, dim=-1)
        out += F.linear(F.silu(sg) * su, layer.sd.float())
    return out


# --------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------
def quantiles(values):
    s = sorted(values)
    n = len(s)
    return s[max(0, int(0.1 * n))], statistics.median(s), s[min(n - 1, int(0.9 * n))]


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


def time_runs(runs, warmup, reps):
    """runs: callables rotated through (one per weight copy). Returns the per-run times in ms."""
    for i in range(warmup):
        runs[i % len(runs)]()
    torch.cuda.synchronize()
    ts = []
    for i in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        runs[i % len(runs)]()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return ts


def count_kernels(fn):
    """GPU kernels (and memcpy/memset) one eager call launches (torch.profiler, CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(e.count for e in prof.key_averages() if "CUDA" in str(getattr(e, "device_type", "")))


def hbm_read_probe(dev):
    """Read bandwidth of a 4 GiB bf16 sum (read-bound), median of 10, GB/s (1e9)."""
    a = torch.empty(2 * 2**30, dtype=DT, device=dev).normal_()
    ts = time_runs([lambda: a.sum()], 3, 10)
    gbps = a.numel() * BYTES / (statistics.median(ts) * 1e-3) / 1e9
    del a
    torch.cuda.empty_cache()
    return gbps


# --------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------
def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--tokens", default=",".join(str(t) for t in TOKENS))
    ap.add_argument("--routings", default="uniform,correlated,shared")
    ap.add_argument("--modes", default="graph,eager")
    ap.add_argument("--impl", default="auto", choices=("auto", "grouped", "loop"),
                    help="auto: grouped where torch._grouped_mm exists and passes its check, else loop")
    ap.add_argument("--reuse", type=float, default=0.75, help="correlated routing: probability a slot reuses an expert")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting new points after this")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()

    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(0)
    card = card_of(gpu)
    prefix = os.path.join(args.out, f"{card}-moe-layer")
    LOG = open(prefix + ".log", "w")
    smi_path = prefix + "-nvidia-smi.txt"
    with open(smi_path, "w") as f:
        f.write("===== before =====\n" + sh("nvidia-smi") + "\n" +
                sh("nvidia-smi -q -d CLOCK,POWER,PERFORMANCE") + "\n")
    log(f"torch {torch.__version__} cuda {torch.version.cuda} gpu {gpu}; python {platform.python_version()}")
    torch.manual_seed(args.seed)

    fn = grouped_mm_fn()
    checks = {"grouped_mm_api": "torch._grouped_mm" if getattr(torch, "_grouped_mm", None) else
              ("torch.nn.functional.grouped_mm" if fn else "none")}
    hbm = hbm_read_probe(dev)
    log(f"HBM read probe: {hbm:.0f} GB/s")

    shapes = [s for s in args.shapes.split(",") if s]
    tokens = [int(t) for t in args.tokens.split(",")]
    routings = args.routings.split(",")
    modes = args.modes.split(",")
    rows, skipped, failed, kernels = [], [], [], {}
    for name in shapes:
        shape = SHAPES[name]
        layers = [MoeLayer(shape, dev) for _ in range(shape["copies"])]
        layer = layers[0]
        log(f"{name}: expert {layer.expert_bytes() / 1e6:.2f} MB, fixed {layer.fixed_bytes() / 1e6:.2f} MB, "
            f"{shape['copies']} copies, GPU memory {torch.cuda.memory_allocated() / 1e9:.1f} GB")
        impl = args.impl
        # Correctness: grouped (and loop) against an fp32 per-token reference, T = 5, eager and graph.
        ids = make_routes("uniform", 5, layer.E, layer.k, args.reuse, args.seed)
        st = make_state(layer, ids, dev, args.seed)
        ref = reference(layer, st, ids)
        for cand in ("grouped", "loop"):
            try:
                if cand == "grouped" and fn is None:
                    raise RuntimeError("no grouped GEMM API in this PyTorch")
                y = layer.forward(st["x"], st, cand).float()
                g, yg = capture(lambda: layer.forward(st["x"], st, cand))
                g.replay()
                torch.cuda.synchronize()
                err = max((y - ref).abs().max().item(), (yg.float() - ref).abs().max().item()) / ref.abs().max().item()
                checks[f"{name}:{cand}"] = f"{'ok' if err < 3e-2 else 'WRONG'} (max rel err {err:.3g}, eager and graph)"
                del g
                if cand == "grouped" and impl == "auto":
                    impl = "grouped" if err < 3e-2 else "loop"
            except Exception as e:  # noqa: BLE001
                checks[f"{name}:{cand}"] = f"failed: {repr(e)[:200]}"
                torch.cuda.synchronize()
                if cand == "grouped" and impl in ("auto", "grouped"):
                    impl = "loop"
        log(f"   checks: " + "; ".join(f"{k}={v}" for k, v in checks.items() if k.startswith(name)) + f"; impl {impl}")

        for routing in routings:
            for T in tokens:
                seed = args.seed * 1000003 + T * 101 + {"uniform": 0, "correlated": 7, "shared": 13}[routing]
                ids = make_routes(routing, T, layer.E, layer.k, args.reuse, seed)
                sts = [make_state(l, ids, dev, seed) for l in layers]
                distinct = sts[0]["distinct"]
                for mode in modes:
                    if time.time() - t0 > args.budget_s:
                        skipped.append(f"{name} {routing} T={T} {mode} (time budget)")
                        continue
                    try:
                        calls = [(lambda l=l, s=s: l.forward(s["x"], s, impl)) for l, s in zip(layers, sts)]
                        graphs = []
                        if mode == "graph":
                            graphs = [capture(c) for c in calls]
                            runs = [g.replay for g, _ in graphs]
                        else:
                            runs = calls
                        ts = time_runs(runs, args.warmup, args.reps)
                        del graphs
                    except Exception as e:  # noqa: BLE001
                        failed.append(f"{name} {routing} T={T} {mode}: {repr(e)[:200]}")
                        log("   FAILED", failed[-1])
                        torch.cuda.synchronize()
                        continue
                    p10, p50, p90 = quantiles(ts)
                    eb = distinct * layer.expert_bytes()
                    rows.append([name, gpu_short(gpu), 1, 1, T, 0, mode, routing, impl, distinct, eb,
                                 layer.fixed_bytes(), f"{p50:.5f}", f"{p10:.5f}", f"{p90:.5f}", len(ts)])
                    bw = (eb + layer.fixed_bytes()) / (p50 * 1e-3) / 1e9
                    log(f"   {name} {routing:10s} {mode:5s} T={T:4d} distinct {distinct:3d}: "
                        f"{p50 * 1e3:8.1f} us (p10 {p10 * 1e3:.1f}, p90 {p90 * 1e3:.1f}), {bw:6.0f} GB/s of weights")
                del sts
        # Kernel counts last: a profiler run earlier in a process slowed later graph replays
        # (docs/references/measured-compute.md#piecewise).
        for T in (1, 64):
            ids = make_routes("uniform", T, layer.E, layer.k, args.reuse, args.seed)
            st = make_state(layer, ids, dev, args.seed)
            try:
                kernels[f"{name}:T{T}"] = count_kernels(lambda: layer.forward(st["x"], st, impl))
            except Exception as e:  # noqa: BLE001
                kernels[f"{name}:T{T}"] = f"failed: {repr(e)[:120]}"
        log(f"   kernels per eager forward: " + str({k: v for k, v in kernels.items() if k.startswith(name)}))
        del layers, layer
        torch.cuda.empty_cache()

    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "gpu", "tp", "layers_timed", "tokens", "context", "mode", "routing", "impl",
                    "distinct_experts", "expert_bytes_touched", "fixed_bytes", "time_ms", "time_ms_p10",
                    "time_ms_p90", "n"])
        w.writerows(rows)
    with open(smi_path, "a") as f:
        f.write("\n===== after =====\n" + sh("nvidia-smi") + "\n" +
                sh("nvidia-smi -q -d CLOCK,POWER,PERFORMANCE") + "\n")
    props = torch.cuda.get_device_properties(0)
    cond = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu,
        "nvidia_smi_gpu": sh("nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                             "clocks.max.mem,power.limit --format=csv,noheader"),
        "cuda_driver_api": sh("nvidia-smi | grep -o 'CUDA Version: [0-9.]*'"),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "python": platform.python_version(),
        "sm_count": str(props.multi_processor_count),
        "l2_cache_bytes": str(getattr(props, "L2_cache_size", "unknown")),
        "hbm_read_probe_gb_per_s": f"{hbm:.0f}",
        "command_line": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "elapsed_s": f"{time.time() - t0:.1f}",
        "warmup": str(args.warmup),
        "reps": str(args.reps),
        "correlated_reuse": str(args.reuse),
        "seed": str(args.seed),
    }
    with open(prefix + ".conditions.yaml", "w") as f:
        f.write(f"# Conditions of calibration/compute/{card}-moe-layer.csv (written by measure_moe_layer.py)\n")
        for key, value in cond.items():
            f.write(f'{key}: "{value}"\n')
        f.write("checks:\n")
        for key, value in checks.items():
            f.write(f'  "{key}": "{value}"\n')
        f.write("kernels_per_eager_forward:\n")
        for key, value in kernels.items():
            f.write(f'  "{key}": "{value}"\n')
        f.write("shapes:\n")
        for name in shapes:
            s = SHAPES[name]
            f.write(f'  {name}: "hidden {s["hidden"]}, {s["experts"]} experts, top-{s["topk"]}, expert FFN '
                    f'{s["inter"]}, shared experts {s["shared"]}, {s["copies"]} weight copies rotated"\n')
        f.write("skipped:\n" + "".join(f'  - "{s}"\n' for s in skipped) if skipped else "skipped: []\n")
        f.write("failed:\n" + "".join(f'  - "{s}"\n' for s in failed) if failed else "failed: []\n")
    log(f"done in {time.time() - t0:.1f} s: {len(rows)} rows, {len(skipped)} skipped, {len(failed)} failed")
    LOG.close()


def card_of(name):
    """The file-name prefix of a device name: h200, h100, b200, a100, or the name in lower case."""
    return next((c for c in ("h200", "h100", "b200", "a100") if c in name.lower()), name.lower().replace(" ", "-"))


def gpu_short(name):
    for c in ("H200", "H100", "B200", "A100"):
        if c in name:
            return c
    return name.replace(",", " ")


if __name__ == "__main__":
    main()
