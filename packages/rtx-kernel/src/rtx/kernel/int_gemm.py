"""Exact integer matrix products on a float GEMM, for NumPy and CuPy arrays.

NumPy has no integer BLAS (and CuPy's integer matmul is a slow fallback), but a float GEMM over
integer values is exact as long as every partial sum is an integer the float type holds: with
|a| <= A and |b| <= B over K products every partial sum is at most K*A*B, whatever order the
BLAS adds in, so float32 (24-bit significand) is exact while K*A*B < 2**24 and float64 while
K*A*B < 2**53. The int8/uint8 products of quantized layers (rtx.compress) and of int8 ONNX graphs
(rtx.inference) both run through here.

- `gemm_dtype(k, a_max, b_max)`: the float type that is exact for such a product.
- `exact_matmul(a, b, bound)`: a @ b for arrays holding integers (already centred on their zero
  points, often carried as floats), in the float type exact for `bound`.
- `int_matmul(a, b, a_zero_point, b_zero_point)`: ONNX MatMulInteger / an int32 accumulator:
  (a - a_zero_point) @ (b - b_zero_point) for integer arrays, returned as int32.

On CUDA the float32 GEMM must be true float32: CuPy's default (CUPY_TF32 unset or 0) is; with
TF32 enabled the products would be rounded to 10-bit mantissas and no longer exact.
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["gemm_dtype", "exact_matmul", "int_matmul", "FLOAT32_EXACT", "FLOAT64_EXACT", "INT32_LIMIT", "INT_RANGES"]

# (qmin, qmax) of every integer type ONNX quantizes to, by NumPy/ml_dtypes name: the one table
# (rtx.onnx's QuantizeLinear and rtx.inference's int8 kernels read it).
INT_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
              "uint4": (0, 15), "int4": (-8, 7), "uint2": (0, 3), "int2": (-2, 1)}

FLOAT32_EXACT = 2 ** 24   # every integer of magnitude below this is a float32
FLOAT64_EXACT = 2 ** 53
INT32_LIMIT = 2 ** 31     # an int32 accumulator holds sums of magnitude below this


def _xp(a):
    """numpy or cupy, whichever owns `a` (anything else is taken as NumPy data)."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np
    if type(a).__module__.startswith("cupy"):
        return sys.modules["cupy"]
    return np


def _float_for_bound(bound):
    bound = int(bound)
    if bound < 0:
        raise ValueError(f"the bound on the partial sums must be >= 0, got {bound}")
    if bound < FLOAT32_EXACT:
        return np.dtype(np.float32)
    if bound < FLOAT64_EXACT:
        return np.dtype(np.float64)
    raise ValueError(f"an integer matmul whose partial sums reach {bound} would overflow float64's exact "
                     "integers (2**53)")


def gemm_dtype(k, a_max, b_max):
    """float32 when every partial sum of k products with |a| <= a_max, |b| <= b_max is exact in it
    (k * a_max * b_max < 2**24), else float64 (< 2**53); ValueError beyond."""
    if int(k) < 0 or int(a_max) < 0 or int(b_max) < 0:
        raise ValueError(f"gemm_dtype: k, a_max and b_max must be >= 0, got {k}, {a_max}, {b_max}")
    return _float_for_bound(int(k) * int(a_max) * int(b_max))


def exact_matmul(a, b, bound, out=None, *, int32=True):
    """a @ b (matmul's shapes and broadcasting) for arrays holding integers, exactly: computed in
    gemm's float type for `bound` (an upper bound on K * max|a| * max|b|, which the caller knows
    cheaply, e.g. from the weights and the activation's integer range). Returns integer-valued
    float32 or float64 (written into `out` when given; it must have that dtype).

    int32=True (the default): the result stands for an int32 accumulator, so a bound of 2**31 or
    more raises OverflowError rather than return sums an int32 could not hold."""
    if int32 and int(bound) >= INT32_LIMIT:
        raise OverflowError(f"integer matmul: sums up to {int(bound)} could overflow the int32 accumulator "
                            "(K * max|a| * max|b| must stay below 2**31)")
    ft = _float_for_bound(bound)
    xp = _xp(a)
    a = xp.asarray(a)
    b = xp.asarray(b)
    if out is not None and out.dtype != ft:
        raise TypeError(f"exact_matmul: out has dtype {out.dtype}, the exact product needs {ft}")
    return xp.matmul(a.astype(ft, copy=False), b.astype(ft, copy=False), out=out)


def _centred(xp, x, zero_point, axis, ft, what):
    """x - zero_point in float type ft; zero_point a scalar or one value per index along `axis`."""
    x = x.astype(ft)
    if zero_point is None:
        return x
    zp = xp.asarray(zero_point)
    if zp.dtype.kind not in "iu":
        raise TypeError(f"int_matmul: {what}_zero_point must be integer, got {zp.dtype}")
    if zp.ndim == 0 or zp.size == 1:
        z = int(zp.reshape(-1)[0])
        if z:
            x -= z
        return x
    if zp.ndim != 1 or x.ndim < 2 or zp.shape[0] != x.shape[axis]:
        where = "rows (a.shape[-2])" if what == "a" else "columns (b.shape[-1])"
        raise ValueError(f"int_matmul: {what}_zero_point must be a scalar or have one value per {where}: "
                         f"{what} has shape {tuple(x.shape)}, the zero point shape {tuple(zp.shape)}")
    x -= (zp[:, None] if axis == -2 else zp).astype(ft)
    return x


def _abs_max(xp, x):
    return int(xp.abs(x).max()) if x.size else 0


def int_matmul(a, b, a_zero_point=None, b_zero_point=None, *, a_max=None, b_max=None):
    """(a - a_zero_point) @ (b - b_zero_point) as int32, exactly, as ONNX MatMulInteger and an int32
    accumulator compute it. a (..., M, K) or (K,), b (..., K, N) or (K,) integer arrays (int8, uint8,
    int16, ...; matmul's broadcasting of leading dimensions); a_zero_point a scalar or one per row of
    a (M,), b_zero_point a scalar or one per column of b (N,).

    a_max / b_max: known bounds on |a - a_zero_point| and |b - b_zero_point| (else they are scanned).
    Raises OverflowError when K * a_max * b_max reaches 2**31 (an int32 accumulator could overflow)."""
    xp = _xp(a)
    a, b = xp.asarray(a), xp.asarray(b)
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        raise TypeError(f"int_matmul takes integer arrays, got {a.dtype} and {b.dtype}")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"int_matmul: both operands need at least one dimension, got shapes {a.shape} and {b.shape}")
    k = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if kb != k:
        raise ValueError(f"int_matmul: shapes {a.shape} and {b.shape} do not multiply (K {k} vs {kb})")
    # centre in float64 (exact for any int32 values and zero points), then pick the GEMM type
    ac = _centred(xp, a, a_zero_point, -2, np.float64, "a")
    bc = _centred(xp, b, b_zero_point, -1, np.float64, "b")
    amax = int(a_max) if a_max is not None else _abs_max(xp, ac)
    bmax = int(b_max) if b_max is not None else _abs_max(xp, bc)
    return exact_matmul(ac, bc, k * amax * bmax).astype(np.int32)
