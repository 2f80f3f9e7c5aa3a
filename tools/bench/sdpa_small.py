#!/usr/bin/env python3
"""F.scaled_dot_product_attention at a UNet's small shapes (issue 16): forward (no_grad) and forward +
backward, CPU milliseconds (process time), best of 5 after a warm-up, one interpreter per library.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python tools/bench/sdpa_small.py \\
        [--torch-python /work/torch-venv/bin/python]

Heads are viewed out of (B, L, H*E) projections (reshape + transpose, strided) as the UNet makes them,
no mask. rtx applies rtx.runtime.threads.keep_freed_memory() first, as the UNet's first convolution
does: without it every MB-sized score matrix is a fresh mmap whose pages fault on first write.
"""
from __future__ import annotations

import argparse
import subprocess
import time

import numpy as np

SHAPES = [(8, 8, 64, 8), (32, 8, 64, 8), (8, 1, 64, 64), (32, 1, 64, 64)]


def best_ms(fn, n):
    fn()
    fn()
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t) / n)
    return best * 1e3


def run(lib):
    if lib == "torch":
        import torch as T
        T.set_num_threads(1)
    else:
        import rtx as T
        from rtx.runtime.threads import keep_freed_memory
        keep_freed_memory()
    F = T.nn.functional
    rng = np.random.default_rng(0)
    for B, H, L, E in SHAPES:
        arrays = [rng.standard_normal((B, L, H * E)).astype(np.float32) for _ in range(3)]
        leaves = [T.tensor(a, requires_grad=True) for a in arrays]

        def heads(ts, shape=(B, L, H, E)):
            return [t.reshape(shape).transpose(1, 2) for t in ts]

        def forward(leaves=leaves):
            with T.no_grad():
                F.scaled_dot_product_attention(*heads(leaves))

        def forward_backward(leaves=leaves):
            F.scaled_dot_product_attention(*heads(leaves)).sum().backward()

        print(f"{lib:6s} {str((B, H, L, E)):16s} forward {best_ms(forward, 50):7.3f} ms   "
              f"forward+backward {best_ms(forward_backward, 20):7.3f} ms", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--torch-python", help="an interpreter with torch, timed first for reference")
    p.add_argument("--lib", choices=["rtx", "torch"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.lib:
        return run(a.lib)
    if a.torch_python:
        subprocess.run([a.torch_python, __file__, "--lib", "torch"], check=True)
    run("rtx")


if __name__ == "__main__":
    main()
