"""Shared by the benchmarks: time a workload written once against the PyTorch API and run
with `lib` = rtx or torch. PyTorch runs in its own interpreter (a side venv with the CPU wheel,
found through --torch-python or $RTX_BENCH_TORCH_PYTHON), never as a dependency of rtx; both
are measured in the same invocation so the printed ratios come from one run.

On a shared machine add `--rounds R` (R alternating rounds of an rtx process and a torch process, the
minimum per library kept: measured one after the other, the two libraries can see different loads,
and ratios from 0.75x to 3.8x were seen for the same code) and `--clock cpu` (process CPU time per
call, with one thread a side the work done however busy the machine is)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import timeit


def best_of(fn, repeat=7, min_time=0.2):
    """Median-free minimum per call: the least disturbed estimate on a noisy machine. Wall time, or
    with RTX_BENCH_CLOCK=cpu (set by --clock cpu) process CPU time over the same calls."""
    if os.environ.get("RTX_BENCH_CLOCK") == "cpu":
        return best_of_cpu(fn, repeat, min_time)
    fn()
    number = 1
    while True:
        t = timeit.timeit(fn, number=number)
        if t >= min_time / 5 or number >= 1 << 20:
            break
        number *= 2
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def best_of_cpu(fn, repeat=7, min_time=0.2):
    """best_of in process CPU time: with one thread a side the work done, however busy the machine is."""
    fn()
    number = 1
    while True:
        c = time.process_time()
        for _ in range(number):
            fn()
        t = time.process_time() - c
        if t >= min_time / 5 or number >= 1 << 20:
            break
        number *= 2
    times = []
    for _ in range(repeat):
        c = time.process_time()
        for _ in range(number):
            fn()
        times.append(time.process_time() - c)
    return min(times) / number


def blas_info():
    import numpy  # noqa: F401  (loads the BLAS threadpoolctl reports; the workloads run in subprocesses)
    try:
        from threadpoolctl import threadpool_info
        return [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} threads={i.get('num_threads')}"
                for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        return ["threadpoolctl not installed"]


def main(workloads, description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--lib", default="rtx", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--torch-python", default=os.environ.get("RTX_BENCH_TORCH_PYTHON"),
                   help="python of a venv with torch installed (pip install torch==2.13.0)")
    p.add_argument("--only", action="append", help="run only these workloads")
    p.add_argument("--rounds", type=int, default=1,
                   help="alternating rounds of an rtx and a torch process; the minimum per library is kept")
    p.add_argument("--clock", choices=["wall", "cpu"], default=os.environ.get("RTX_BENCH_CLOCK", "wall"),
                   help="cpu: process CPU time per call (run one thread a side), not affected by the load")
    args = p.parse_args()
    os.environ["RTX_BENCH_CLOCK"] = args.clock
    unknown = sorted(set(args.only or ()) - set(workloads))
    if unknown:  # else the run would time every workload and print none
        p.error(f"--only {unknown}: not a workload here; choose from {list(workloads)}")
    names = [n for n in workloads if not args.only or n in args.only]
    if args.json:
        lib = __import__(args.lib)
        print(json.dumps({n: workloads[n](lib) for n in names}))
        return
    torch_python = args.torch_python
    if torch_python is None:
        try:
            import torch  # noqa: F401
            torch_python = sys.executable
        except ImportError:
            pass
    only = sum((["--only", n] for n in names), [])
    best = {"rtx": {}, "torch": {}}
    for r in range(max(1, args.rounds)):
        for lib, py in (("rtx", sys.executable), ("torch", torch_python)):
            if py is None:
                continue
            env = {**os.environ, "PYTHONPATH": ""} if lib == "torch" else dict(os.environ)
            out = subprocess.run([py, sys.argv[0], "--lib", lib, "--json"] + only, capture_output=True, text=True,
                                 env=env)
            if out.returncode != 0:
                print(f"{lib} run failed:", out.stderr[-2000:])
                continue
            for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items():
                best[lib][k] = min(v, best[lib].get(k, v))
            if args.rounds > 1:
                print(f"round {r + 1} {lib} done (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
    results, other = best["rtx"], best["torch"]
    print(f"BLAS: {'; '.join(blas_info())}")
    print(f"{'workload':<34} {'rtx':>12} {'torch':>12} {'rtx/torch':>10}  "
          f"(min of {max(1, args.rounds)} round(s), {args.clock} time)")
    for n in names:
        if n not in results:
            continue
        r = results[n]
        t = other.get(n)
        unit, scale = ("us", 1e6) if r < 1e-2 else ("ms", 1e3)
        ts = f"{t * scale:10.2f}{unit}" if t else f"{'-':>12}"
        ratio = f"{r / t:9.2f}x" if t else f"{'-':>10}"
        print(f"{n:<34} {r * scale:10.2f}{unit} {ts} {ratio}")
