#!/usr/bin/env python3
"""Re-time the forward grid of measure_forward.py with the eager runs interleaved.

measure_forward.py times one (model, tokens, context) point after another. Replayed from a CUDA
graph that is fine (p10..p90 within ~1%), but an eager forward is bound by the host CPU that
launches its ~1000-2400 ops, and on a shared host that CPU's speed drifts over minutes: in the
first run one block of contexts ran ~30% slower than the next, which no model of the forward
can explain. Here all three models are built at once and every eager point is visited once per
round, in a new random order each round, so a slow minute falls on all points alike; the median
over the rounds is reported. A launch probe (tiny CUDA ops per second) is timed every round so
the drift itself is on record.

Same model code, weights, routing draws and attention variants as measure_forward.py (the
variant per point is read from the committed h200-forward-detail.csv, so both runs time the same
kernels). Output, in --out:

    h200-forward-interleaved.csv             model,gpu,tp,layers_timed,tokens,context,mode,time_ms
    h200-forward-interleaved-detail.csv      median / min / p10 / p90 / n per point
    h200-forward-interleaved-probe.csv       per round: launch probe, wall time
    h200-forward-interleaved.conditions.yaml
    h200-forward-interleaved.log

Run:  python3 calibration/compute/measure_interleaved.py --out DIR
"""
import argparse
import csv
import datetime
import gc
import os
import platform
import random
import statistics
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_forward as mf  # noqa: E402

MODELS = ("llama-3.1-8b", "llama-3.3-70b", "deepseek-v3-moe-grouped")


def log(*a):
    mf.log(*a)


def read_attention_choice(path):
    """(model, tokens, context) -> attention variant, from a measure_forward detail CSV."""
    choice = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            choice[(r["model"], int(r["tokens"]), int(r["context"]))] = r["attention"]
    return choice


def launch_probe(n=2000):
    """Host cost of launching one tiny CUDA op from Python, in microseconds."""
    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def count_dispatched_ops(fn):
    """aten ops dispatched by one eager call of fn (each is one pass through the dispatcher)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.n += 1
            return func(*args, **(kwargs or {}))

    with Counter() as c:
        fn()
    torch.cuda.synchronize()
    return c.n


def time_once(fn):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--attention-from", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "h200-forward-detail.csv"))
    ap.add_argument("--tokens", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--contexts", default="1024,4096,16384,32768")
    ap.add_argument("--graph-reps", type=int, default=25)
    ap.add_argument("--rounds", type=int, default=20, help="eager rounds; each visits every point once")
    ap.add_argument("--timed-per-visit", type=int, default=2, help="timed eager runs after one untimed run")
    ap.add_argument("--budget-s", type=float, default=480.0, help="no new eager round after this")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    mf.LOG = open(os.path.join(args.out, "h200-forward-interleaved.log"), "w")
    dev = torch.device("cuda")
    torch.manual_seed(args.seed)
    tokens = [int(x) for x in args.tokens.split(",")]
    contexts = [int(x) for x in args.contexts.split(",")]
    s_max = max(contexts) + max(tokens) + 512
    choice = read_attention_choice(args.attention_from)
    gpu = torch.cuda.get_device_name(0)
    gpu_short = "H200" if "H200" in gpu else gpu.replace(",", " ")

    # One core for the launching thread: the scheduler cannot move it mid-run.
    cpus = sorted(os.sched_getaffinity(0))
    pinned = cpus[len(cpus) // 2]
    os.sched_setaffinity(0, {pinned})
    torch.set_num_threads(1)
    cond = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu,
        "nvidia_smi_gpu": mf.sh("nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                "clocks.max.mem,power.limit --format=csv,noheader"),
        "cpu": mf.sh("lscpu | grep -m1 'Model name' | sed 's/.*: *//'"),
        "cpus_visible": len(cpus),
        "pinned_cpu": pinned,
        "loadavg_start": mf.sh("cat /proc/loadavg"),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "python": platform.python_version(),
        "command_line": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }
    log(f"{gpu}; torch {torch.__version__}; cpu {cond['cpu']} pinned to {pinned}")

    models, points = {}, []
    for name in MODELS:
        base = "deepseek-v3-moe" if name.startswith("deepseek-v3-moe") else name
        spec = dict(mf.SPECS[base])
        layers = 4 if spec["kind"] == "moe" else spec["layers"]
        m = mf.Model(base, spec, layers, s_max, dev)
        if spec["kind"] == "moe":
            m.set_moe_impl("grouped")
        models[name] = (m, spec, layers)
        torch.cuda.synchronize()
        log(f"built {name}: {torch.cuda.memory_allocated() / 1e9:.1f} GB allocated")
        for C in contexts:
            for T in tokens:
                attn = choice.get((name, T, C))
                if attn is None:
                    raise SystemExit(f"{args.attention_from}: no attention variant for {name} T={T} C={C}")
                points.append((name, T, C, m.make_state(T, C, args.seed + T, attn=attn)))

    samples = {(p[0], p[1], p[2]): {"graph": [], "eager": []} for p in points}

    # Graph replay, point after point (stable: the GPU alone sets the time).
    for name, T, C, st in points:
        m = models[name][0]
        res = mf.time_graph(lambda: m.forward(st), 3, args.graph_reps)
        samples[(name, T, C)]["graph_stats"] = res
        log(f"graph {name} T={T} C={C}: {res['median']:.4f} ms")

    # Kernel and dispatched-op counts of one eager forward per model.
    counts = {}
    for name, (m, spec, layers) in models.items():
        st = next(p[3] for p in points if p[0] == name and p[1] == 4)
        try:
            ops = count_dispatched_ops(lambda: m.forward(st))
        except Exception as e:  # noqa: BLE001
            ops = f"failed: {repr(e)[:120]}"
        with open(os.path.join(args.out, "h200-forward-interleaved-profile.txt"), "a") as fh:
            kernels = mf.profile_forward(m, st, f"{name} T=4 C={st['C']} attention={st['attn']}", fh)
        counts[name] = {"aten_ops_per_forward_T4": ops, "gpu_events_per_forward_T4": kernels, "layers": layers}
        log(f"counts {name}: {counts[name]}")

    # Eager, interleaved.
    for name, T, C, st in points:   # one untimed pass of everything: allocator and caches warm
        models[name][0].forward(st)
    torch.cuda.synchronize()
    rng = random.Random(args.seed)
    probe_rows = []
    rounds_done = 0
    gc.collect()
    gc.disable()
    try:
        for rnd in range(args.rounds):
            if time.time() - t_start > args.budget_s:
                log(f"budget reached after {rounds_done} rounds")
                break
            t_round = time.time()
            probe_before = launch_probe()
            order = list(range(len(points)))
            rng.shuffle(order)
            for i in order:
                name, T, C, st = points[i]
                m = models[name][0]
                fn = lambda: m.forward(st)  # noqa: E731
                fn()
                for _ in range(args.timed_per_visit):
                    samples[(name, T, C)]["eager"].append(time_once(fn))
            probe_after = launch_probe()
            rounds_done += 1
            probe_rows.append((rnd, f"{probe_before:.3f}", f"{probe_after:.3f}", f"{time.time() - t_round:.2f}"))
            log(f"round {rnd}: {time.time() - t_round:.1f} s, launch probe {probe_before:.2f} / {probe_after:.2f} us")
    finally:
        gc.enable()

    def stats(ts):
        s = sorted(ts)
        n = len(s)
        return dict(median=statistics.median(s), min=s[0], p10=s[max(0, int(0.1 * n))],
                    p90=s[min(n - 1, int(0.9 * n))], n=n)

    head = ["model", "gpu", "tp", "layers_timed", "tokens", "context", "mode"]
    with open(os.path.join(args.out, "h200-forward-interleaved.csv"), "w", newline="") as f, \
            open(os.path.join(args.out, "h200-forward-interleaved-detail.csv"), "w", newline="") as fd:
        w, wd = csv.writer(f), csv.writer(fd)
        w.writerow(head + ["time_ms"])
        wd.writerow(head + ["time_ms_median", "time_ms_min", "time_ms_p10", "time_ms_p90", "n", "attention"])
        for mode in ("graph", "eager"):
            for name, T, C, st in points:
                spec, layers = models[name][1], models[name][2]
                s = samples[(name, T, C)]
                res = s["graph_stats"] if mode == "graph" else stats(s["eager"])
                row = [name, gpu_short, spec["tp"], layers, T, C, mode]
                w.writerow(row + [f"{res['median']:.4f}"])
                wd.writerow(row + [f"{res[k]:.4f}" for k in ("median", "min", "p10", "p90")] + [res["n"], st["attn"]])
    with open(os.path.join(args.out, "h200-forward-interleaved-probe.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "launch_probe_us_before", "launch_probe_us_after", "round_wall_s"])
        w.writerows(probe_rows)

    cond["rounds_done"] = rounds_done
    cond["loadavg_end"] = mf.sh("cat /proc/loadavg")
    cond["elapsed_s"] = round(time.time() - t_start, 1)
    with open(os.path.join(args.out, "h200-forward-interleaved.conditions.yaml"), "w") as f:
        f.write("# Conditions of h200-forward-interleaved.csv (written by measure_interleaved.py)\n")
        for k, v in cond.items():
            f.write(f"{k}: {mf.yq(v)}\n")
        f.write("what_is_timed: 'as h200-forward.conditions.yaml: one TP rank, batch 1, T new tokens against a"
                " KV cache of C tokens, random bf16 weights, no communication'\n")
        f.write(f"graph: 'median of {args.graph_reps} replays after 3 warm-up replays, point after point'\n")
        f.write(f"eager: 'median over {rounds_done} rounds x {args.timed_per_visit} timed runs; each round visits"
                " every (model, T, C) once in a new random order and runs it once untimed first; all models"
                " resident at once; launching thread pinned to one CPU; Python GC off during rounds'\n")
        f.write(f"attention_variants_from: {mf.yq(os.path.basename(args.attention_from))}\n")
        f.write("op_counts:\n")
        for name, c in counts.items():
            f.write(f"  {name}: {{aten_ops_per_forward_T4: {mf.yq(c['aten_ops_per_forward_T4'])}, "
                    f"gpu_events_per_forward_T4: {c['gpu_events_per_forward_T4']}, layers: {c['layers']}}}\n")
    log(f"done in {cond['elapsed_s']} s")


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        raise
