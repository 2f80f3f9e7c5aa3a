"""Shared by the benchmarks: time a workload written once against the PyTorch API and run
with `lib` = rtx or torch. PyTorch runs in its own interpreter (a side venv with the CPU wheel,
found through --torch-python or $RTX_BENCH_TORCH_PYTHON), never as a dependency of rtx; both
are measured in the same invocation so the printed ratios come from one run."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import timeit


def best_of(fn, repeat=7, min_time=0.2):
    """Median-free minimum per call: the least disturbed estimate on a noisy machine."""
    fn()
    number = 1
    while True:
        t = timeit.timeit(fn, number=number)
        if t >= min_time / 5 or number >= 1 << 20:
            break
        number *= 2
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def blas_info():
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
    args = p.parse_args()
    names = [n for n in workloads if not args.only or n in args.only]
    lib = __import__(args.lib)
    results = {n: workloads[n](lib) for n in names}
    if args.json:
        print(json.dumps(results))
        return
    other = {}
    torch_python = args.torch_python
    if torch_python is None:
        try:
            import torch  # noqa: F401
            torch_python = sys.executable
        except ImportError:
            pass
    if torch_python:
        cmd = [torch_python, sys.argv[0], "--lib", "torch", "--json"] + sum((["--only", n] for n in names), [])
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
        if out.returncode == 0:
            other = json.loads(out.stdout.strip().splitlines()[-1])
        else:
            print("torch run failed:", out.stderr[-2000:])
    print(f"BLAS: {'; '.join(blas_info())}")
    print(f"{'workload':<34} {'rtx':>12} {'torch':>12} {'rtx/torch':>10}")
    for n in names:
        r = results[n]
        t = other.get(n)
        unit, scale = ("us", 1e6) if r < 1e-2 else ("ms", 1e3)
        ts = f"{t * scale:10.2f}{unit}" if t else f"{'-':>12}"
        ratio = f"{r / t:9.2f}x" if t else f"{'-':>10}"
        print(f"{n:<34} {r * scale:10.2f}{unit} {ts} {ratio}")
