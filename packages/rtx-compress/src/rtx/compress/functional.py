"""The arithmetic of affine quantization, x ~ (q - zero_point) * scale, in PyTorch's names:
qparams from a range, quantize/dequantize (per tensor and per channel), fake quantization with a
straight-through gradient. The exact integer matmul the quantized layers run on is rtx.kernel's
(int_matmul, exact_matmul), shared with rtx.inference.
"""
from __future__ import annotations

import numpy as np

import rtx
from rtx.autograd import Function
from rtx.compress.qtypes import as_qdtype, qrange, storage
from rtx.kernel.int_gemm import int_matmul  # noqa: F401  (re-exported: rtx.compress.functional.int_matmul)
from rtx.kernel.quant import FLOAT32_EPS, choose_qparams

__all__ = ["calculate_qparams", "quantize_per_tensor", "quantize_per_channel", "dequantize",
           "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine", "int_matmul",
           "quantize_array"]

_EPS = FLOAT32_EPS  # PyTorch's floor for a scale (torch.finfo(float32).eps)
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
    # PyTorch's observers: a tiny scale is raised to eps, zero_point = quant_min - round(min / scale)
    # from the unrounded scale (rtx.kernel.quant says how rtx.edge and ONNX differ, and why)
    return choose_qparams(min_val, max_val, quant_min, quant_max, symmetric=qscheme.endswith("symmetric"),
                          symmetric_zero=symmetric_zero, eps=eps, tiny_scale="raise_to_eps",
                          zero_point_rounding="round_then_shift")


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


def _check_qparams(fn, scale, zero_point, qmin, qmax, what="zero_point"):
    """Scales must be positive and finite (a zero or negative one divides into inf or flips the
    grid); zero points must lie in the integer range (PyTorch's checkZeroPoint)."""
    s = np.asarray(scale, dtype=np.float64)
    if not np.all(np.isfinite(s) & (s > 0)):
        raise ValueError(f"{fn}: scale must be positive and finite, got {scale if s.ndim == 0 else s}")
    z = np.asarray(zero_point)
    if z.dtype.kind not in "iub" and not np.all(z == np.round(z)):
        raise TypeError(f"{fn}: {what} must be an integer, got {zero_point}")
    if np.any(z < qmin) or np.any(z > qmax):
        raise ValueError(f"{fn}: {what} must lie in [{qmin}, {qmax}], got {zero_point if z.ndim == 0 else z}")


def _float_input(x, fn):
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        raise TypeError(f"{fn}: quantization takes a floating point input, got {x.dtype}")
    return x


def quantize_per_tensor(input, scale, zero_point, dtype):
    """The integer tensor (int8 storage for qint8, uint8 for quint8) of `input` quantized with one
    (scale, zero_point), as torch.quantize_per_tensor (rtx returns the integers; keep scale and zero
    point next to them, or use dequantize)."""
    d = as_qdtype(dtype)
    x = _float_input(_numpy(input, "input"), "quantize_per_tensor")
    _check_qparams("quantize_per_tensor", scale, zero_point, *qrange(d))
    q = quantize_array(x, float(scale), int(zero_point), *qrange(d), storage(d))
    return rtx.from_numpy(q)


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """As torch.quantize_per_channel: one (scale, zero_point) per index along `axis`."""
    d = as_qdtype(dtype)
    x = _float_input(_numpy(input, "input"), "quantize_per_channel")
    scales, zero_points = _numpy(scales, "scales"), _numpy(zero_points, "zero_points")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis must be in [{-x.ndim}, {x.ndim}) for a {x.ndim}-d input, got {axis}")
    axis %= x.ndim
    if scales.shape != (x.shape[axis],) or zero_points.shape != (x.shape[axis],):
        raise ValueError(f"expected {x.shape[axis]} scales and zero points (input.size({axis})), got "
                         f"{scales.shape} and {zero_points.shape}")
    _check_qparams("quantize_per_channel", scales, zero_points, *qrange(d), "zero_points")
    return rtx.from_numpy(quantize_array(x, scales, zero_points, *qrange(d), storage(d), axis))


def dequantize(q, scale, zero_point, axis=None):
    """float32 (q - zero_point) * scale; per channel along `axis` when scale is a vector."""
    qa = _numpy(q, "q").astype(np.float32)
    n_scales = 1 if np.isscalar(scale) else int(np.size(_numpy(scale, "scale")))
    if axis is None and n_scales > 1:
        raise ValueError(f"dequantize: {n_scales} scales need the axis they run along (axis=...), got axis=None")
    if axis is not None:
        if not -qa.ndim <= axis < qa.ndim:
            raise ValueError(f"dequantize: axis must be in [{-qa.ndim}, {qa.ndim}) for a {qa.ndim}-d q, got {axis}")
        axis %= qa.ndim
        if n_scales not in (1, qa.shape[axis]):
            raise ValueError(f"dequantize: expected {qa.shape[axis]} scales (q.size({axis})), got {n_scales}")
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
    _check_qparams("fake_quantize_per_tensor_affine", float(scale), zero_point, qmin, qmax)
    s = rtx.tensor(float(scale), dtype=input.dtype, device=input.device)
    z = rtx.tensor(float(int(zero_point)), dtype=input.dtype, device=input.device)
    return _FakeQuantize.apply(input, s, z, qmin, qmax)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """As torch.fake_quantize_per_channel_affine: one (scale, zero_point) per index along `axis`."""
    qmin, qmax = _qrange(quant_min, quant_max)
    _check_qparams("fake_quantize_per_channel_affine", _numpy(scale, "scale"), _numpy(zero_point, "zero_point"),
                   qmin, qmax)
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

