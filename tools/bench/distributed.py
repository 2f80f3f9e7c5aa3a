#!/usr/bin/env python3
"""Distributed benchmarks (issue: rtx-distributed), every job started through mpiexec:

1. all-reduce of a 64 MB float32 buffer on 2 ranks: rtx.distributed.all_reduce on a tensor
   against raw mpi4py (comm.Allreduce(MPI.IN_PLACE, ndarray)) in the same processes, interleaved
   (goal: rtx >= 90% of raw mpi4py's bandwidth); with --torch-python, PyTorch's gloo all_reduce too.
2. DDP on the MLP 784-512-512-10 (batch 128 per rank, SGD momentum, one full training step:
   forward, cross-entropy, backward with the gradient all-reduce, optimizer step): 1 rank with
   1 BLAS thread, 1 rank with 2 threads, 2 ranks with 1 thread each. Weak-scaling efficiency =
   t(1 rank, 1 thread) / t(2 ranks); the machine has 2 cores, so 2 ranks use all of it. A run of
   2 ranks without DDP (same work, no communication) separates what sharing the machine costs
   from what DDP's gradient all-reduce costs.
   The workload is written once against the PyTorch API (lib = rtx or torch, gloo for torch).

    .venv/bin/python tools/bench/distributed.py --torch-python /work/torch-venv/bin/python
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
MB64 = 64 * 1024 * 1024
SIZES, BATCH = (784, 512, 512, 10), 128


# ---- worker side (one per rank) --------------------------------------------------------------------------


def _init(lib_name):
    if lib_name == "rtx":
        import rtx
        import rtx.distributed as dist
        dist.init_process_group("mpi")
        return rtx, dist, dist.DistributedDataParallel
    import torch
    import torch.distributed as dist
    os.environ.setdefault("RANK", os.environ.get("PMI_RANK", "0"))
    os.environ.setdefault("WORLD_SIZE", os.environ.get("PMI_SIZE", "1"))
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    return torch, dist, torch.nn.parallel.DistributedDataParallel


def worker_allreduce(lib_name, reps):
    lib, dist, _ = _init(lib_name)
    import numpy as np
    t = lib.ones(MB64 // 4, dtype=lib.float32)
    out = {}
    raw = None
    if lib_name == "rtx":
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        arr = np.ones(MB64 // 4, np.float32)
        raw = lambda: comm.Allreduce(MPI.IN_PLACE, arr)  # noqa: E731
    ours = lambda: dist.all_reduce(t)  # noqa: E731
    times = {"lib": [], "mpi4py": []}
    for f in (ours, raw):
        if f is not None:
            f()
    for _ in range(reps):
        for name, f in (("lib", ours), ("mpi4py", raw)):
            if f is None:
                continue
            dist.barrier()
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    if dist.get_rank() == 0:
        for name, ts in times.items():
            if ts:
                out[name] = {"min": min(ts), "median": statistics.median(ts)}
        print("RESULT " + json.dumps(out), flush=True)


def worker_ddp(lib_name, steps, wrap=True):
    lib, dist, DDP = _init(lib_name)
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(), nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                          nn.Linear(SIZES[2], SIZES[3]))
    ddp = DDP(model) if wrap else model  # unwrapped: the ranks compute side by side, no communication
    opt = lib.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    x, y = lib.randn(BATCH, SIZES[0]), lib.randint(0, 10, (BATCH,))

    def step():
        opt.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
    for _ in range(5):
        step()
    runs = []
    for _ in range(3):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        dist.barrier()
        runs.append((time.perf_counter() - t0) / steps)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"step": min(runs)}), flush=True)


# ---- driver -------------------------------------------------------------------------------------------------


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else "mpiexec"


def job(python, n, threads, *args):
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "MASTER_ADDR": "127.0.0.1", "PYTHONPATH": ""}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        env["MASTER_PORT"] = str(s.getsockname()[1])
    cmd = [_mpiexec(), "-n", str(n), python, HERE, "--worker", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    p.add_argument("--torch-python", default=os.environ.get("RTX_BENCH_TORCH_PYTHON"))
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--steps", type=int, default=30)
    a = p.parse_args()
    if a.worker:
        kind, lib_name = a.worker[0], a.worker[1]
        if kind == "allreduce":
            worker_allreduce(lib_name, int(a.worker[2]))
        else:
            worker_ddp(lib_name, int(a.worker[2]), wrap=kind == "ddp")
        return
    libs = [("rtx", sys.executable)] + ([("torch", a.torch_python)] if a.torch_python else [])
    gb = lambda t: MB64 / t / 1e9  # noqa: E731
    print(f"all-reduce, 64 MB float32, 2 ranks, {a.reps} reps (GB/s = buffer bytes / time)")
    r = job(sys.executable, 2, 1, "allreduce", "rtx", str(a.reps))
    rows = [("rtx.distributed.all_reduce", r["lib"]), ("raw mpi4py Allreduce", r["mpi4py"])]
    if a.torch_python:
        rows.append(("torch gloo all_reduce", job(a.torch_python, 2, 1, "allreduce", "torch", str(a.reps))["lib"]))
    for name, t in rows:
        print(f"  {name:<28} best {t['min'] * 1e3:7.1f} ms {gb(t['min']):6.2f} GB/s   median "
              f"{t['median'] * 1e3:7.1f} ms {gb(t['median']):6.2f} GB/s")
    print(f"  rtx / raw mpi4py bandwidth: best {r['mpi4py']['min'] / r['lib']['min']:.1%}, median "
          f"{r['mpi4py']['median'] / r['lib']['median']:.1%}")
    print(f"\nDDP training step, MLP {'-'.join(map(str, SIZES))}, batch {BATCH} per rank, SGD momentum")
    for lib_name, python in libs:
        t11 = job(python, 1, 1, "ddp", lib_name, str(a.steps))["step"]
        t12 = job(python, 1, 2, "ddp", lib_name, str(a.steps))["step"]
        t21 = job(python, 2, 1, "ddp", lib_name, str(a.steps))["step"]
        t2p = job(python, 2, 1, "plain", lib_name, str(a.steps))["step"]
        print(f"  {lib_name}: 1 rank x 1 thread {t11 * 1e3:6.2f} ms | 1 rank x 2 threads {t12 * 1e3:6.2f} ms | "
              f"2 ranks x 1 thread {t21 * 1e3:6.2f} ms | 2 ranks without DDP (no communication) {t2p * 1e3:6.2f} ms")
        print(f"  {lib_name}: weak-scaling efficiency (2 ranks vs 1, same per-rank batch) {t11 / t21:.1%}; "
              f"of which the two ranks sharing the machine cost {t11 / t2p:.1%} and DDP's communication "
              f"{t2p / t21:.1%}; throughput 2 ranks vs 1 rank with 2 threads {2 * t12 / t21:.2f}x")


if __name__ == "__main__":
    main()
