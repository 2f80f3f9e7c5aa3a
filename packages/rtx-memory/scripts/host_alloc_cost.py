"""How much does allocating the output cost NumPy ops on the CPU? (The measurement behind
rtx-memory's README section "Why there is no CPU buffer pool".)

    uv run --all-packages python packages/rtx-memory/scripts/host_alloc_cost.py

For float32 arrays of typical op sizes, times an op that allocates its result against the same
op writing into a preallocated buffer (what a buffer pool would give at best, before its own
bookkeeping), for one op and for a chain of three ops (three temporaries). Each figure is the
best of repeated calls, as in a training loop, where the same sizes come round again.
"""
from __future__ import annotations

import functools
import time

import numpy as np


def best(fn, budget=0.3, calls=5):
    fn()
    times, start = [], time.perf_counter()
    while len(times) < calls or time.perf_counter() - start < budget:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if len(times) > 2000:
            break
    return min(times)


def chain(a, b):
    return (a * b + a) * b


def chain_into(a, b, c, d, e):
    return np.multiply(np.add(np.multiply(a, b, out=c), a, out=d), b, out=e)


def main():
    print(f"{'elements':>10} {'MB':>6} {'op alloc us':>12} {'op out= us':>11} {'extra':>6} "
          f"{'chain alloc us':>15} {'chain out= us':>14} {'extra':>6}")
    rng = np.random.default_rng(0)
    for n in (1_000, 16_000, 256_000, 1_000_000, 4_000_000, 16_000_000):
        a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        c, d, e = np.empty_like(a), np.empty_like(a), np.empty_like(a)
        one_alloc = best(functools.partial(np.add, a, b))
        one_out = best(functools.partial(np.add, a, b, out=c))
        chain_alloc = best(functools.partial(chain, a, b))
        chain_out = best(functools.partial(chain_into, a, b, c, d, e))
        print(f"{n:>10} {n * 4 / 2**20:6.2f} {one_alloc * 1e6:12.1f} {one_out * 1e6:11.1f} "
              f"{one_alloc / one_out:6.2f} {chain_alloc * 1e6:15.1f} {chain_out * 1e6:14.1f} "
              f"{chain_alloc / chain_out:6.2f}")


if __name__ == "__main__":
    main()
