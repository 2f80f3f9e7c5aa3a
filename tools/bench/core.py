#!/usr/bin/env python3
"""Tensor-core benchmarks (issue: tensor core): per-op overhead, a small autograd chain,
BLAS-bound matmul against NumPy itself, and import time.

    .venv/bin/python tools/bench/core.py --torch-python /path/to/torch-venv/bin/python
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead  # noqa: E402  (the small-op workloads are built there, timed here by the harness)
from _harness import best_of, main  # noqa: E402


def add16(lib):
    return best_of(overhead.add16(lib))


def chain10(lib):
    return best_of(overhead.chain10(lib))


def matmul1024(lib):
    a, b = lib.randn(1024, 1024), lib.randn(1024, 1024)
    return best_of(lambda: a @ b, repeat=5)


def numpy_matmul1024(lib):
    import numpy as np
    a = np.random.standard_normal((1024, 1024)).astype(np.float32)
    b = np.random.standard_normal((1024, 1024)).astype(np.float32)
    return best_of(lambda: a @ b, repeat=5)


def import_time(lib):
    name = lib.__name__
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {name}"], check=True)
        times.append(time.perf_counter() - t0)
    base = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        base.append(time.perf_counter() - t0)
    return min(times) - min(base)


WORKLOADS = {"a + b (16 floats)": add16, "10-op chain fwd+bwd (16 floats)": chain10,
             "matmul f32 1024^2": matmul1024, "numpy's own matmul f32 1024^2": numpy_matmul1024,
             "import time (s, minus bare python)": import_time}

if __name__ == "__main__":
    main(WORKLOADS, __doc__)
