"""The dropout mask of flash attention, regenerated per tile from a seed (nothing of size
seq x seq is kept between forward and backward).

Element (row, col) of the (batch * heads, L, S) attention matrix is kept when

    u = hash(seed, ((bh * L + i) * S + j)) / 2**24 >= p

where hash is SplitMix64's finaliser over a Weyl step (a counter-based generator, as Philox is
for FlashAttention's CUDA kernels). The CUDA kernels use the same function (_cuda.py), so the
CPU and GPU paths drop the same elements for the same seed.
"""
from __future__ import annotations

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def uniform(seed: int, index) -> np.ndarray:
    """Uniform float32 numbers in [0, 1), one per element of the uint64 array `index`."""
    with np.errstate(over="ignore"):
        x = index * np.uint64(GOLDEN) + np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
        x ^= x >> np.uint64(30)
        x *= np.uint64(MIX1)
        x ^= x >> np.uint64(27)
        x *= np.uint64(MIX2)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / (1 << 24))


def keep_scale(seed: int, p: float, row_base, rows, cols, S: int, dtype):
    """The tile's dropout factor: 1 / (1 - p) where kept, 0 where dropped.

    row_base: uint64 array (..., 1, 1) holding bh * L for each (batch, head) of the tile;
    rows, cols: the tile's query and key positions (1-D integer arrays). Returns an array of
    shape broadcast(row_base, (len(rows), len(cols))) in `dtype`."""
    index = (row_base + rows.astype(np.uint64)[:, None]) * np.uint64(S) + cols.astype(np.uint64)[None, :]
    u = uniform(seed, index)
    return np.where(u >= np.float32(p), dtype.type(1.0 / (1.0 - p)), dtype.type(0.0))
