"""The arithmetic of affine quantization, x ~ (q - zero_point) * scale, in PyTorch's names:
qparams from a range, quantize/dequantize (per tensor and per channel), fake quantization with a
straight-through gradient, and the exact integer matmul the quantized layers run on.
"""
from __future__ import annotations

import numpy as np

import rtx
from rtx.autograd import Function
from rtx.compress.qtypes import as_qdtype

__all__ = ["calculate_qparams", "quantize_per_tensor", "quantize_per_channel", "dequantize",
           "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine", "int_matmul", "exact_gemm",
           "quantize_array"]

_EPS = float(np.finfo(np.float32).eps)  # PyTorch's floor for a scale (torch.finfo(float32).eps)
_SCHEMES = ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric")


def calculate_qparams(min_val, max_val, quant_min, quant_max, qscheme="per_tensor_affine", symmetric_zero=0,
                      eps=_EPS):
    """(scale float32, zero_point int64) arrays for the range [min_val, max_val] (scalars or per-channel
    arrays), as torch.ao.quantization's observers compute them: the range always holds 0 (so 0 is exact);
    symmetric schemes use max(|min|, |max|) and the zero point `symmetric_zero`."""
    if qscheme not in _SCHEMES:
        raise ValueError(f"qscheme must be one of {_SCHEMES}, got {qscheme!r}")
    min_val = np.asarray(min_val, dtype=np.float64)
    max_val = np.asarray(max_val, dtype=np.float64)
    if np.any(min_val > max_val):
        raise ValueError(f"min_val should be less than or equal to max_val, got {min_val} > {max_val}")
    min_neg = np.minimum(min_val, 0.0)
    max_pos = np.maximum(max_val, 0.0)
    if qscheme.endswith("symmetric"):
        amax = np.maximum(-min_neg, max_pos)
        scale = amax / ((quant_max - quant_min) / 2)
        scale = np.maximum(scale, eps)
        zero_point = np.full(scale.shape, symmetric_zero, dtype=np.int64)
    else:
        scale = np.maximum((max_pos - min_neg) / float(quant_max - quant_min), eps)
        zero_point = quant_min - np.round(min_neg / scale).astype(np.int64)
        zero_point = np.clip(zero_point, quant_min, quant_max)
    return scale.astype(np.float32), zero_point.astype(np.int64)


def _bcast(v, ndim, axis):
    """A per-channel vector shaped to broadcast along `axis` of an ndim array (a scalar as is)."""
    v = np.asarray(v)
    if axis is None or v.ndim == 0:
        return v
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


def quantize_array(x, scale, zero_point, quant_min, quant_max, storage, axis=None):
    """NumPy: clamp(round(x / scale) + zero_point, quant_min, quant_max) as `storage` (round half to even,
    as PyTorch's nearbyint)."""
    x = np.asarray(x, dtype=np.float32)
    s = _bcast(np.asarray(scale, dtype=np.float32), x.ndim, axis)
    z = _bcast(np.asarray(zero_point, dtype=np.int64), x.ndim, axis)
    q = np.rint(x / s) + z
    return np.clip(q, quant_min, quant_max).astype(storage)


def _numpy(t, what):
    if isinstance(t, np.ndarray):
        return t
    if not getattr(type(t), "_is_rtx_tensor", False):
        raise TypeError(f"{what} must be an rtx Tensor or a NumPy array, got {type(t).__name__}")
    return t.detach().cpu().numpy()


def quantize_per_tensor(input, scale, zero_point, dtype):
    """The integer tensor (int8 storage for qint8, uint8 for quint8) of `input` quantized with one
    (scale, zero_point), as torch.quantize_per_tensor (rtx returns the integers; keep scale and zero
    point next to them, or use dequantize)."""
    d = as_qdtype(dtype)
    q = quantize_array(_numpy(input, "input"), float(scale), int(zero_point), d.qmin, d.qmax, d.np)
    return rtx.from_numpy(q)


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """As torch.quantize_per_channel: one (scale, zero_point) per index along `axis`."""
    d = as_qdtype(dtype)
    x = _numpy(input, "input")
    scales, zero_points = _numpy(scales, "scales"), _numpy(zero_points, "zero_points")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis must be in [{-x.ndim}, {x.ndim}) for a {x.ndim}-d input, got {axis}")
    axis %= x.ndim
    if scales.shape != (x.shape[axis],) or zero_points.shape != (x.shape[axis],):
        raise ValueError(f"expected {x.shape[axis]} scales and zero points (input.size({axis})), got "
                         f"{scales.shape} and {zero_points.shape}")
    return rtx.from_numpy(quantize_array(x, scales, zero_points, d.qmin, d.qmax, d.np, axis))


def dequantize(q, scale, zero_point, axis=None):
    """float32 (q - zero_point) * scale; per channel along `axis` when scale is a vector."""
    qa = _numpy(q, "q").astype(np.float32)
    s = _bcast(np.asarray(_numpy(scale, "scale") if not np.isscalar(scale) else scale, np.float32), qa.ndim, axis)
    z = _bcast(np.asarray(_numpy(zero_point, "zero_point") if not np.isscalar(zero_point) else zero_point,
                          np.float32), qa.ndim, axis)
    return rtx.from_numpy(((qa - z) * s).astype(np.float32))


class _FakeQuantize(Function):
    """Quantize-dequantize in the forward; the straight-through estimator in the backward: the
    gradient passes unchanged where x fell inside the integer range and is zero where it was clipped
    (PyTorch's fake_quantize_*_affine backward)."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, quant_min, quant_max):
        q = (x / scale).round() + zero_point
        inside = (q >= quant_min) & (q <= quant_max)
        ctx.save_for_backward(inside)
        return (q.clamp(quant_min, quant_max) - zero_point) * scale

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside.to(grad.dtype), None, None, None, None


def _qrange(quant_min, quant_max):
    if not quant_min < quant_max:
        raise ValueError(f"quant_min must be less than quant_max, got {quant_min} and {quant_max}")
    return int(quant_min), int(quant_max)


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """As torch.fake_quantize_per_tensor_affine: (clamp(round(x/scale) + zp, qmin, qmax) - zp) * scale,
    with the straight-through gradient."""
    qmin, qmax = _qrange(quant_min, quant_max)
    s = rtx.tensor(float(scale), dtype=input.dtype, device=input.device)
    z = rtx.tensor(float(int(zero_point)), dtype=input.dtype, device=input.device)
    return _FakeQuantize.apply(input, s, z, qmin, qmax)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """As torch.fake_quantize_per_channel_affine: one (scale, zero_point) per index along `axis`."""
    qmin, qmax = _qrange(quant_min, quant_max)
    axis %= input.dim()
    shape = [1] * input.dim()
    shape[axis] = -1
    s = rtx.as_tensor(np.asarray(_numpy(scale, "scale"), np.float64).reshape(shape),
                      dtype=input.dtype, device=input.device)
    z = rtx.as_tensor(np.asarray(_numpy(zero_point, "zero_point"), np.float64).reshape(shape),
                      dtype=input.dtype, device=input.device)
    if s.shape[axis] != input.shape[axis]:
        raise ValueError(f"expected {input.shape[axis]} scales (input.size({axis})), got {s.shape[axis]}")
    return _FakeQuantize.apply(input, s, z, qmin, qmax)


def exact_gemm(a, b, bound):
    """a @ b for integer-valued float arrays, exact: float32 when every partial sum stays under
    2**24 in magnitude (bound = K * max|a| * max|b|), float64 otherwise. Returns integer-valued floats."""
    if bound >= 2 ** 31:
        raise OverflowError(f"int_matmul: sums up to {bound} could overflow the int32 accumulator")
    ft = np.float32 if bound < 2 ** 24 else np.float64
    return np.matmul(a.astype(ft, copy=False), b.astype(ft, copy=False))


def int_matmul(a, b, a_max=None, b_max=None):
    """Exact int32 product of two integer matrices (..., K) @ (K, N), fast.

    NumPy has no BLAS for integers, so the integers go through a float GEMM: every partial sum of
    int8-range products is an integer, and a float holds integers exactly up to 2**24 (float32) or
    2**53 (float64); when K * max|a| * max|b| stays under 2**24 float32 is exact whatever order BLAS
    adds in, beyond that float64 is. a_max / b_max: known bounds on |a| and |b| (saves two scans)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        raise TypeError(f"int_matmul takes integer arrays, got {a.dtype} and {b.dtype}")
    k = a.shape[-1]
    if b.shape[0] != k:
        raise ValueError(f"int_matmul: shapes {a.shape} and {b.shape} do not multiply (K {k} vs {b.shape[0]})")
    amax = a_max if a_max is not None else max(abs(int(a.min())), abs(int(a.max()))) if a.size else 0
    bmax = b_max if b_max is not None else max(abs(int(b.min())), abs(int(b.max()))) if b.size else 0
    return exact_gemm(a, b, k * amax * bmax).astype(np.int32)
