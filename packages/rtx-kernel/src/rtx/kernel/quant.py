"""Affine quantization parameters from a range: the one home of scale / zero-point arithmetic.

    x ~ (q - zero_point) * scale,  q in [qmin, qmax]

`choose_qparams(min_val, max_val, qmin, qmax, ...)` widens the range to hold 0 (so 0 is exact:
zero padding and ReLU's zeros survive), then

    affine:     scale = (max_pos - min_neg) / (qmax - qmin),   zero_point from min_neg / scale
    symmetric:  scale = max(-min_neg, max_pos) / ((qmax - qmin) / 2),   zero_point = symmetric_zero

Its users differ on purpose, each matching the runtime it must agree with, and the options say
exactly how (the defaults are PyTorch's observers):
- rtx.compress (torch.ao.quantization's observers): a scale below eps (float32's machine epsilon)
  is raised to eps; zero_point = qmin - round(min_neg / scale), with the float64 scale.
- rtx.edge (int8 ONNX QDQ files): the scale is rounded to float32 (the type the file stores)
  first; one below float32's smallest normal, or 0, becomes scale 1 with zero point 0, since a
  denormal scale would put inf/NaN into every runtime's math; zero_point = rint(qmin - min / scale).
- rtx.onnx's DynamicQuantizeLinear (the ONNX spec's formula): the float32 scale is kept even when
  tiny; a zero scale gets zero point 0; zero_point = rint(qmin - min / scale) in float32.
Every rounding is half to even (np.rint, np.round), and zero points saturate to [qmin, qmax].
"""
from __future__ import annotations

import numpy as np

__all__ = ["choose_qparams", "FLOAT32_EPS", "FLOAT32_TINY"]

FLOAT32_EPS = float(np.finfo(np.float32).eps)    # PyTorch's floor for a scale (torch.finfo(float32).eps)
FLOAT32_TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32

_TINY_SCALE = ("raise_to_eps", "one", "keep")
_ZP_ROUNDING = ("round_then_shift", "shift_then_round")


def choose_qparams(min_val, max_val, qmin, qmax, *, symmetric=False, symmetric_zero=0, eps=FLOAT32_EPS,
                   tiny_scale="raise_to_eps", zero_point_rounding="round_then_shift", scale_dtype=None,
                   zero_point_dtype=np.float64):
    """(scale float32, zero_point int64) arrays, shaped as min_val and max_val broadcast (0-d for
    scalars; per-channel ranges give per-channel parameters).

    symmetric, symmetric_zero: scale from max(|min|, |max|) over half the integer range; the zero
        point is symmetric_zero.
    tiny_scale: what a scale below `eps` becomes. "raise_to_eps": eps (PyTorch's max(scale, eps));
        "one": 1, with zero point 0 (NaN scales too); "keep": unchanged, and a scale of exactly 0
        gets zero point 0 (eps unused).
    zero_point_rounding: "round_then_shift": qmin - round(min_neg / scale) (PyTorch's observers);
        "shift_then_round": rint(qmin - min_neg / scale) (the ONNX spec). Both round half to even
        and then saturate to [qmin, qmax]; they differ only at ties when qmin is odd.
    scale_dtype: None computes the zero point from the float64 scale; np.float32 rounds the scale to
        float32 first (what is stored), and the tiny check sees that rounded scale.
    zero_point_dtype: the float type min_neg / scale is divided in (np.float64 or np.float32)."""
    if tiny_scale not in _TINY_SCALE:
        raise ValueError(f"tiny_scale must be one of {_TINY_SCALE}, got {tiny_scale!r}")
    if zero_point_rounding not in _ZP_ROUNDING:
        raise ValueError(f"zero_point_rounding must be one of {_ZP_ROUNDING}, got {zero_point_rounding!r}")
    if qmin >= qmax:
        raise ValueError(f"qmin must be below qmax, got qmin={qmin}, qmax={qmax}")
    min_neg = np.minimum(np.asarray(min_val, dtype=np.float64), 0.0)
    max_pos = np.maximum(np.asarray(max_val, dtype=np.float64), 0.0)
    if symmetric:
        scale = np.maximum(-min_neg, max_pos) / ((qmax - qmin) / 2)
    else:
        scale = (max_pos - min_neg) / float(qmax - qmin)
    if scale_dtype is not None:
        scale = scale.astype(scale_dtype)
    if tiny_scale == "raise_to_eps":
        scale = np.maximum(scale, eps)
        usable = None
    elif tiny_scale == "one":
        usable = scale >= eps            # False for NaN too
        scale = np.where(usable, scale, scale.dtype.type(1.0))
    else:
        usable = scale != 0
    if symmetric:
        zero_point = np.full(scale.shape, symmetric_zero, dtype=np.int64)
    else:
        zdt = np.dtype(zero_point_dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # unusable scales: replaced below
            ratio = min_neg.astype(zdt) / scale.astype(zdt)
            if zero_point_rounding == "round_then_shift":
                zero_point = np.clip(qmin - np.round(ratio).astype(np.int64), qmin, qmax)
            else:
                zero_point = np.clip(np.rint(zdt.type(qmin) - ratio), qmin, qmax).astype(np.int64)
    if usable is not None:
        zero_point = np.where(usable, zero_point, 0 if not symmetric else symmetric_zero).astype(np.int64)
    return scale.astype(np.float32), zero_point
