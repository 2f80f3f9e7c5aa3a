"""ALiBi (Press et al. 2022): no position embeddings; each head adds -slope * distance to its
attention scores. Slopes are the geometric sequence of the paper (for a head count that is not
a power of two, the interleaved extension of the reference implementation, as BLOOM / MPT).

    slopes = alibi_slopes(n_heads)                 # (n_heads,) float32 array
    bias = alibi_bias(slopes, L, S)                # (n_heads, L, S) Tensor, causal offset S - L

With rtx-flash-attn installed, rtx.transformers.attend(..., alibi_slopes=slopes) adds the bias
tile by tile and never forms the (L, S) matrix.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.extend import Tensor, raw, wrap

__all__ = ["alibi_slopes", "alibi_bias"]


def alibi_slopes(n_heads: int) -> np.ndarray:
    """The per-head slopes: 2^(-8/n), 2^(-16/n), ... for n a power of two."""
    if n_heads <= 0:
        raise ValueError(f"alibi_slopes: n_heads must be positive, got {n_heads}")

    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n_heads).is_integer():
        s = pow2(n_heads)
    else:
        closest = 2 ** math.floor(math.log2(n_heads))
        s = pow2(closest) + pow2(2 * closest)[0::2][: n_heads - closest]
    return np.asarray(s, dtype=np.float32)


def alibi_bias(slopes, L: int, S: int, offset: int | None = None, dtype=np.float32) -> Tensor:
    """(n_heads, L, S): -slope * |i + offset - j| (offset defaults to S - L, the last L of S
    positions being the queries, as in decoding with a cache)."""
    offset = S - L if offset is None else offset
    slopes = np.asarray(raw(slopes) if type(slopes) is Tensor else slopes, dtype=np.float64)
    dist = np.abs(np.arange(L)[:, None] + offset - np.arange(S)[None, :])
    return wrap((-slopes[:, None, None] * dist).astype(dtype))
