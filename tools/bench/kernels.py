"""Time each rtx.kernel kernel's fast CPU path against its NumPy reference.

    uv run --all-packages python tools/bench/kernels.py [--dtype float32] [--only softmax,gelu]

Every kernel runs on its own "bench" samples (realistic sizes, from the kernel registry). Each
timing is the best of several calls (rounds of three calls in a row, the reference and the CPU
path taking turns, for about 1.2 s), so a sample takes under 2 s unless one call is slow (the
special functions' references: Python's math, element by element). In-place kernels (adam_step,
sgd_step) update the same arrays on every call, as in training. The ratio is reference time /
CPU time: above 1, the fast path pays for itself.
"""
from __future__ import annotations

import argparse
import functools
import os
import time

import numpy as np

from rtx.kernel import KERNELS


def best_times(fns, budget=1.2, min_rounds=2, max_rounds=40, calls=3) -> list[float]:
    """The best time of each function over rounds in which each runs `calls` times in a row,
    for about `budget` seconds. In a row, because malloc's reuse of big blocks depends on what
    ran just before (alternating single calls gave one function 2x different times by order);
    rounds, so that load from elsewhere on the machine hits every function alike."""
    best = [float("inf")] * len(fns)
    start, rounds = time.perf_counter(), 0
    while rounds < min_rounds or (time.perf_counter() - start < budget and rounds < max_rounds):
        for i, fn in enumerate(fns):
            for _ in range(calls):
                t = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - t)
        rounds += 1
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--only", default="", help="comma-separated kernel names")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or sorted(KERNELS)
    dtype = np.dtype(args.dtype)
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, {dtype}")
    print(f"{'kernel':<22} {'sample':<34} {'reference ms':>12} {'cpu ms':>9} {'ratio':>6}")
    for name in names:
        kernel = KERNELS[name]
        for sample in kernel.samples(np.random.default_rng(0), dtype, "bench"):
            fns = [functools.partial(kernel.reference, *sample.args, **sample.kwargs)]
            if kernel.cpu is not kernel.reference:
                fns.append(functools.partial(kernel.cpu, *sample.args, **sample.kwargs))
            ref, cpu = (best_times(fns) * 2)[:2]
            same = "  (cpu path is the reference)" if kernel.cpu is kernel.reference else ""
            print(f"{name:<22} {sample.label:<34} {ref * 1e3:12.2f} {cpu * 1e3:9.2f} {ref / cpu:6.2f}{same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
