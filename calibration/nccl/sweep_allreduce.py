#!/usr/bin/env python3
"""All-reduce sweep with PyTorch's NCCL backend, one process per GPU, written as nccl-tests tables.

    python3 calibration/nccl/sweep_allreduce.py --gpus 8 --out OUTDIR [--variants default,ring-ll,...]

For each NCCL_ALGO / NCCL_PROTO variant (a fresh torchrun, since NCCL reads them at communicator
creation) it sweeps bf16 all-reduce from --min-bytes to --max-bytes by doubling, eager and replayed
from a CUDA graph, and writes one table per (variant, mode) in the nccl-tests all_reduce_perf layout
of 2022-08 onwards (docs/references/nccl.md#nccl-tests-header, #nccl-tests-columns), so that `specsim calibrate nccl` reads it:

    OUTDIR/h200-8x-ring-ll-graph.log, OUTDIR/h200-8x-ring-ll-eager.log, ...
    OUTDIR/topo.txt (nvidia-smi topo -m), OUTDIR/sweep.conditions.yaml, OUTDIR/<variant>.run.log

Timing follows nccl-tests (common.cu; docs/references/nccl.md#nccl-tests-timing): `iters` all-reduces are issued back to back and
the host waits once; eager time = wall time / iters; graph mode captures the `iters` calls in one CUDA
graph, launches it `graph-launches` times and divides by launches x iters. The per-rank times are
averaged over the ranks. torch.distributed.all_reduce works in place only, so the table's
out-of-place and in-place columns hold two in-place passes (the first and the second) of the same
size; the header's `##` lines say so. `#wrong` counts elements that differ from the exact sum after
one all-reduce of (rank + 1) everywhere.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1), in this process and every one it starts. A variant that fails (NCCL
refusing the algorithm, a CUDA graph capture error, as NCCL_ALGO=Tree did on the 8x RTX PRO 6000
box) is recorded in sweep.conditions.yaml with the end of its log, and the sweep goes on.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import socket
import subprocess
import sys
import time

NO_MULTICAST = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

# name -> NCCL_ALGO, NCCL_PROTO (None: NCCL's own choice)
VARIANTS = {
    "default": (None, None),
    "ring-ll": ("Ring", "LL"),
    "ring-ll128": ("Ring", "LL128"),
    "ring-simple": ("Ring", "Simple"),
    "tree-ll": ("Tree", "LL"),
    "tree-ll128": ("Tree", "LL128"),
    "tree-simple": ("Tree", "Simple"),
}


def parse_bytes(text: str) -> int:
    units = {"": 1, "B": 1, "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30}
    t = text.strip().upper()
    i = len(t)
    while i > 0 and not t[i - 1].isdigit():
        i -= 1
    if i == 0 or t[i:] not in units:
        raise argparse.ArgumentTypeError(f"{text!r}: a byte count such as 8, 64K, 256M")
    return int(t[:i]) * units[t[i:]]


def time_field(us: float) -> str:
    # nccl-tests: %7.2f below 100 us, %7.1f below 10 ms, %7.0f above.
    if us < 100:
        return f"{us:7.2f}"
    if us < 10000:
        return f"{us:7.1f}"
    return f"{us:7.0f}"


def table_row(size: int, count: int, passes: list[tuple[float, int]], ranks: int) -> str:
    row = f"{size:12d}  {count:12d}  {'bfloat16':>8s}  {'sum':>6s}  {-1:6d}"
    for us, wrong in passes:
        algbw = size / (us * 1e-6) / 1e9
        busbw = algbw * 2 * (ranks - 1) / ranks
        row += f"  {time_field(us)}  {algbw:6.2f}  {busbw:6.2f}  {wrong:5d}"
    return row


def render_table(meta: dict, devices: list[str], nccl_lines: list[str], rows: list[str], busbw: list[float]) -> str:
    out = [f"## {k}: {v}" for k, v in meta["notes"].items()]
    out.append(
        f"# nThread 1 nGpus 1 minBytes {meta['min_bytes']} maxBytes {meta['max_bytes']} step: 2(factor) "
        f"warmup iters: {meta['warmup']} iters: {meta['iters']} agg iters: 1 validation: 1 graph: {meta['graph']}"
    )
    out += ["#", "# Using devices"] + devices + nccl_lines + ["#"]
    out.append("#                                                              out-of-place                       in-place")
    out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)")
    out += rows
    out.append("# Out of bounds values : 0 OK")
    out.append(f"# Avg bus bandwidth    : {sum(busbw) / max(len(busbw), 1):.5g}")
    out.append("#")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------
# Worker: one process per GPU, started by torchrun.


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)

    sizes = []
    b = args.min_bytes
    while b <= args.max_bytes:
        sizes.append(b)
        b *= 2
    buf = torch.zeros(args.max_bytes // 2, dtype=torch.bfloat16, device=dev)

    def mean_over_ranks(seconds: float) -> float:
        t = torch.tensor([seconds], dtype=torch.float64, device=dev)
        dist.all_reduce(t)
        return t.item() / world

    def wrong_count(x) -> int:
        x.fill_(rank + 1)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        return int((x != float(world * (world + 1) // 2)).sum().item())

    def eager_pass(x) -> float:
        for _ in range(args.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        return mean_over_ranks((time.perf_counter() - t0) / args.iters)

    def capture(x):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(args.warmup):
                dist.all_reduce(x)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(args.iters):
                dist.all_reduce(x)
        torch.cuda.synchronize()
        return g

    def graph_pass(g) -> float:
        g.replay()
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(args.graph_launches):
            g.replay()
        torch.cuda.synchronize()
        return mean_over_ranks((time.perf_counter() - t0) / (args.graph_launches * args.iters))

    results = {"eager": [], "graph": []}
    for size in sizes:
        x = buf[: size // 2]
        first, second = eager_pass(x), eager_pass(x)
        wrong = wrong_count(x)
        results["eager"].append((size, [(first * 1e6, wrong), (second * 1e6, wrong)]))
        x.zero_()
        g = capture(x)
        first, second = graph_pass(g), graph_pass(g)
        del g
        wrong = wrong_count(x)
        results["graph"].append((size, [(first * 1e6, wrong), (second * 1e6, wrong)]))
        x.zero_()
        if rank == 0:
            print(f"{size:>10d} B  eager {results['eager'][-1][1][0][0]:9.2f} us  "
                  f"graph {results['graph'][-1][1][0][0]:9.2f} us", flush=True)

    # Device lines of every rank, gathered on rank 0, in nccl-tests' newest layout.
    props = torch.cuda.get_device_properties(dev)
    bus = getattr(props, "pci_bus_id", 0)
    domain = getattr(props, "pci_domain_id", 0)
    devno = getattr(props, "pci_device_id", 0)
    line = (f"#  Rank {rank:2d} Group  0 Pid {os.getpid():6d} on {socket.gethostname()[:10]:>10s} device {local:2d} "
            f"[{domain:04x}:{bus:02x}:{devno:02x}] {props.name}")
    lines = [None] * world
    dist.all_gather_object(lines, line)

    if rank == 0:
        nccl_lines = []
        debug_file = os.environ.get("NCCL_DEBUG_FILE", "")
        path = debug_file.replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))
        if path and os.path.exists(path):
            with open(path, errors="replace") as f:
                nccl_lines = [l.rstrip("\n") for l in f if "NCCL version" in l or "set by environment" in l]
        for mode in ("eager", "graph"):
            rows = [table_row(size, size // 2, passes, world) for size, passes in results[mode]]
            busbw = [size / (us * 1e-6) / 1e9 * 2 * (world - 1) / world
                     for size, passes in results[mode] for us, _ in passes]
            meta = {
                "min_bytes": args.min_bytes, "max_bytes": args.max_bytes, "warmup": args.warmup, "iters": args.iters,
                "graph": args.graph_launches if mode == "graph" else 0,
                "notes": {
                    "tool": "calibration/nccl/sweep_allreduce.py (torch.distributed NCCL backend, one process per GPU; "
                            "not nccl-tests, same table layout)",
                    "variant": f"{args.variant} (NCCL_ALGO={os.environ.get('NCCL_ALGO', 'unset')}, "
                               f"NCCL_PROTO={os.environ.get('NCCL_PROTO', 'unset')})",
                    "mode": mode + (f" ({args.iters} all-reduces captured in one CUDA graph, launched "
                                    f"{args.graph_launches} times)" if mode == "graph" else " (no graph)"),
                    "columns": "torch.distributed.all_reduce is in place: 'out-of-place' is a first in-place pass, "
                               "'in-place' a second one",
                    "torch": torch.__version__,
                    "nccl_version": ".".join(str(v) for v in torch.cuda.nccl.version()),
                    "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
            }
            name = f"{args.prefix}-{world}x-{args.variant}-{mode}.log"
            with open(os.path.join(args.out, name), "w") as f:
                f.write(render_table(meta, lines, nccl_lines, rows, busbw))
    dist.barrier()
    dist.destroy_process_group()


# --------------------------------------------------------------------------------------------------
# Driver: one torchrun per variant.


def driver(args: argparse.Namespace) -> int:
    os.makedirs(args.out, exist_ok=True)
    env_base = dict(os.environ, **NO_MULTICAST)
    os.environ.update(NO_MULTICAST)
    for k in ("NCCL_ALGO", "NCCL_PROTO"):
        env_base.pop(k, None)
    topo = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True)
    with open(os.path.join(args.out, "topo.txt"), "w") as f:
        f.write(topo.stdout or topo.stderr)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                          "--format=csv,noheader"], capture_output=True, text=True)

    outcomes = {}
    for variant in args.variants:
        algo, proto = VARIANTS[variant]
        env = dict(env_base)
        if algo:
            env["NCCL_ALGO"] = algo
        if proto:
            env["NCCL_PROTO"] = proto
        env["NCCL_DEBUG"] = "INFO"
        env["NCCL_DEBUG_SUBSYS"] = "INIT,ENV"
        env["NCCL_DEBUG_FILE"] = os.path.join(args.out, f".nccl-{variant}.%h.%p.txt")
        env["PYTHONUNBUFFERED"] = "1"
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={args.gpus}",
               os.path.abspath(__file__), "--worker", "--variant", variant, "--out", args.out, "--prefix", args.prefix,
               "--min-bytes", str(args.min_bytes), "--max-bytes", str(args.max_bytes), "--iters", str(args.iters),
               "--warmup", str(args.warmup), "--graph-launches", str(args.graph_launches)]
        t0 = time.time()
        log_path = os.path.join(args.out, f"{variant}.run.log")
        with open(log_path, "w") as log:
            try:
                rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=args.variant_timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        with open(log_path, errors="replace") as f:
            tail = f.read().splitlines()[-12:]
        outcomes[variant] = {"algo": algo or "unset", "proto": proto or "unset", "rc": rc,
                             "seconds": round(time.time() - t0, 1), "tail": tail if rc != 0 else []}
        print(f"{variant}: rc {rc} in {time.time() - t0:.0f} s", flush=True)

    import torch
    with open(os.path.join(args.out, "sweep.conditions.yaml"), "w") as f:
        f.write(f"date_utc: {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
        f.write(f"host: {platform.node()}\n")
        f.write(f"gpus: {args.gpus}\n")
        f.write(f"gpu: \"{smi.stdout.strip().splitlines()[0] if smi.stdout.strip() else 'unknown'}\"\n")
        f.write(f"torch: {torch.__version__}\n")
        f.write(f"cuda: {torch.version.cuda}\n")
        f.write(f"nccl: {'.'.join(str(v) for v in torch.cuda.nccl.version())}\n")
        f.write("env: {" + ", ".join(f"{k}: '{v}'" for k, v in NO_MULTICAST.items()) + "}\n")
        f.write(f"sizes: {args.min_bytes} B .. {args.max_bytes} B by 2x, bf16\n")
        f.write(f"iters: {args.iters}\nwarmup: {args.warmup}\ngraph_launches: {args.graph_launches}\n")
        f.write("variants:\n")
        for v, o in outcomes.items():
            f.write(f"  {v}: {{algo: {o['algo']}, proto: {o['proto']}, rc: {o['rc']}, seconds: {o['seconds']}}}\n")
            for line in o["tail"]:
                f.write(f"    # {line}\n")
    return 0 if all(o["rc"] == 0 for o in outcomes.values()) else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, default=8, help="processes (GPUs) per run")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--prefix", default="h200", help="table file name prefix (GPU name)")
    p.add_argument("--variants", type=lambda s: s.split(","), default=list(VARIANTS),
                   help="comma-separated: " + ",".join(VARIANTS))
    p.add_argument("--min-bytes", type=parse_bytes, default=8)
    p.add_argument("--max-bytes", type=parse_bytes, default=256 << 20)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--graph-launches", type=int, default=5)
    p.add_argument("--variant-timeout", type=float, default=600, help="seconds per variant")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--variant", default="default", help=argparse.SUPPRESS)
    args = p.parse_args()
    for v in args.variants:
        if v not in VARIANTS:
            p.error(f"--variants: unknown '{v}' (known: {', '.join(VARIANTS)})")
    if args.min_bytes < 2 or args.max_bytes < args.min_bytes:
        p.error("--min-bytes must be >= 2 and <= --max-bytes")
    if args.worker:
        worker(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
