"""The ONNX op table: OPS[(domain, op_type)] = fn(inputs, attrs, opset) -> outputs.

Each family lives in its own file and registers itself with `@op("Name", ...)`. An op receives
its inputs as rtx Tensors (None for a missing optional input; a list for a sequence), its
attributes as Python values (ints, floats, strings, NumPy arrays, bound subgraphs) and the
opset version of its domain, and returns one value or a tuple of values.

Float math goes through rtx ops, so gradients flow into the initializers of an imported model;
integer, boolean and string work (shapes, indices, masks) is NumPy on the arrays, wrapped as
constants, with ONNX's semantics (no type promotion, C-style integer division, ...).
"""
from __future__ import annotations

import numpy as np

from rtx.extend import Tensor, raw, wrap

OPS: dict = {}

DEFAULT_DOMAIN = "ai.onnx"


def domain_of(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", "ai.onnx") else domain


def op(*names, domain=DEFAULT_DOMAIN):
    """Register fn under every name in `names`."""
    def deco(fn):
        for name in names:
            OPS[(domain, name)] = fn
        return fn
    return deco


# ---- values ------------------------------------------------------------------------------------
def arr(t):
    """The array behind a value (None stays None)."""
    if t is None:
        return None
    if type(t) is Tensor:
        return raw(t)
    return np.asarray(t)


def const(a) -> Tensor:
    """Wrap an array (or scalar) as a constant tensor: no gradient flows through it."""
    if type(a) is Tensor:
        return a
    if not hasattr(a, "shape") or isinstance(a, np.generic):
        a = np.asarray(a)
    return wrap(a)


def is_float(t) -> bool:
    """Floating point (bfloat16 and the float8 types included, which NumPy shows as kind 'V')."""
    dt = arr(t).dtype
    return dt.kind == "f" or (dt.kind == "V" and dt.name.startswith(("bfloat", "float")))


_RTX_FLOATS = frozenset(np.dtype(d) for d in (np.float16, np.float32, np.float64))


def is_grad_float(t) -> bool:
    """Float types that rtx ops compute in (float8/float4 are storage types only; ml_dtypes gives
    float8_e5m2 kind 'f', so the test is by dtype, not by kind)."""
    dt = arr(t).dtype
    return dt in _RTX_FLOATS or dt.name == "bfloat16"


def ints(t) -> list[int]:
    """A 0-d or 1-d integer tensor as a list of Python ints (shapes, axes, pads)."""
    return [int(v) for v in np.asarray(_host(arr(t))).reshape(-1)]


def scalar(t):
    return np.asarray(_host(arr(t))).reshape(-1)[0].item()


def _host(a):
    get = getattr(a, "get", None)  # CuPy arrays: copy to the host for shape arithmetic
    return get() if get is not None and not isinstance(a, np.ndarray) else a


def xp_of(*ts):
    from rtx.runtime import array_module
    for t in ts:
        if t is not None and type(t) is Tensor:
            return array_module(raw(t))
    return np


def wrap_axis(axis: int, ndim: int, op_type: str = "") -> int:
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise ValueError(f"{op_type}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis + ndim if axis < 0 else axis


def np_dtype(elem_type: int):
    """The NumPy dtype of an ONNX TensorProto element type."""
    from onnx import helper
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def cast_array(a, dtype, saturate=True, round_mode="up"):
    """Cast with ONNX's rules where they differ from NumPy's (strings, float8 saturation, e8m0)."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype:
        return a
    if dtype.name == "float8_e8m0fnu":
        return _to_e8m0(a, saturate, round_mode)
    if dtype.kind == "O":
        if a.dtype.kind == "f":
            return np.array([_float_str(v) for v in a.reshape(-1)], dtype=object).reshape(a.shape)
        return a.astype(str).astype(object)
    if a.dtype == object:
        if dtype.kind in "iub":
            return np.array([int(float(v)) for v in a.reshape(-1)], dtype=np.float64).astype(dtype).reshape(a.shape)
        return a.astype(np.float32).astype(dtype) if dtype.kind == "V" else a.astype(dtype)
    if dtype.name.startswith("float8") and saturate:
        import ml_dtypes
        info = ml_dtypes.finfo(dtype)
        src = a.astype(np.float32) if a.dtype.kind == "V" else a
        with np.errstate(invalid="ignore"):
            src = np.where(np.isinf(src), np.sign(src) * float(info.max), src)
            src = np.clip(src, -float(info.max), float(info.max))
        return src.astype(dtype)
    if dtype.kind in "iu" and a.dtype.kind in "fV":
        with np.errstate(invalid="ignore", over="ignore"):
            return a.astype(np.float64).astype(dtype) if a.dtype.kind == "V" else a.astype(dtype)
    return a.astype(dtype)


def _to_e8m0(a, saturate, round_mode):
    """float -> float8_e8m0fnu (a power of two 2**(e-127); 0xFF is NaN) from the float32 bits."""
    import ml_dtypes
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    e = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = e == 0xFF
    if round_mode == "up":
        inc = ((bits & 0x7FFFFF) > 0) & ~special
    elif round_mode == "nearest":
        g, r = (bits & 0x400000) > 0, (bits & 0x200000) > 0
        s = (bits & 0x1FFFFF) > 0
        inc = g & (r | s | (e > 0)) & ~special
    elif round_mode == "down":
        inc = np.zeros(e.shape, bool)
    else:
        raise ValueError(f"Cast: unknown round_mode {round_mode!r} (expected 'up', 'down' or 'nearest')")
    if saturate:
        inc &= e != 0xFE
    e = e + inc
    out = np.where(special | (e > 0xFF), 0xFF, e).astype(np.uint8)
    return out.view(ml_dtypes.float8_e8m0fnu)


def _float_str(v):
    v = float(v)
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "INF" if v > 0 else "-INF"
    return repr(v) if v != int(v) or abs(v) >= 1e16 else repr(v)


def unsupported(op_type: str, domain: str, opset: int, why: str = ""):
    from rtx.onnx.load import UnsupportedOpError
    raise UnsupportedOpError(op_type, domain, opset, why)


def load_all():
    """Import every family file so that OPS is complete."""
    import importlib
    for name in FAMILIES:
        importlib.import_module(f"rtx.onnx._ops.{name}")


FAMILIES = ("elementwise", "reduce", "shape", "nn", "rnn", "control", "sequence", "quant", "misc", "strings", "ml",
            "training")
