"""Helpers shared by the op families: operand promotion, broadcasting reductions for
gradients, dim normalisation, and the cast primitive."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.tensor import Tensor, _wrap_dim
from rtx.runtime import dtypes as _dt
from rtx.runtime.devices import array_module, device_of

wrap_dim = _wrap_dim


def data(x):
    """The array behind a Tensor, or the Python scalar itself."""
    return x._data if type(x) is Tensor else x


def to_tensor(x, like=None, dtype=None):
    """Make x a Tensor (on `like`'s device when given)."""
    if type(x) is Tensor:
        return x
    from rtx._tensor.ops.creation import tensor
    dev = like.device if like is not None else None
    return tensor(x, dtype=dtype, device=dev)


class Cast(Primitive):
    @staticmethod
    def forward(ctx, a, *, np_dtype):
        ctx.src = a._data.dtype
        return a._data.astype(np_dtype)

    @staticmethod
    def backward(ctx, grad):
        src = ctx.src
        if not _dt.is_float(src):
            return None
        if src.kind != "c" and grad._data.dtype.kind == "c":
            grad = grad.real
        return cast(grad, src)


def cast(t: Tensor, np_dtype) -> Tensor:
    np_dtype = np.dtype(np_dtype)
    if t._data.dtype == np_dtype:
        return t
    return Cast.apply(t, np_dtype=np_dtype)


def check_same_device(a: Tensor, b: Tensor, op: str):
    if type(a._data) is not type(b._data) or (type(a._data) is not np.ndarray and a.device != b.device):
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at least two "
                           f"devices, {a.device} and {b.device}!")


def operands(a, b, op: str):
    """(a, b) ready for an elementwise op under PyTorch's promotion rules: both Tensors of one
    dtype, or one Tensor and a Python scalar that NumPy treats as weakly typed (NEP 50), which
    matches PyTorch except where the scalar is of a higher kind than the tensor."""
    ta, tb = type(a) is Tensor, type(b) is Tensor
    if ta and tb:
        return _tensor_pair(a, b, op)
    if ta:
        t, s = a, b
    elif tb:
        t, s = b, a
    else:
        raise TypeError(f"{op}: expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    if isinstance(s, np.generic):
        s = s.item()
    if isinstance(s, (bool, int, float, complex)):
        t = _promote_for_scalar(t, s)
        return (t, s) if ta else (s, t)
    try:
        other = to_tensor(s, like=t)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: unsupported operand type {type(s).__name__} (expected a Tensor or a number)") \
            from None
    return _tensor_pair(a if ta else other, b if tb else other, op)


def _tensor_pair(a, b, op):
    if a._data.shape != b._data.shape:
        from rtx._tensor.fastpath import check_broadcast
        check_broadcast(a._data.shape, b._data.shape)
    da, db = a._data.dtype, b._data.dtype
    if type(a._data) is not type(b._data):
        check_same_device(a, b, op)
    if da == db:
        return a, b
    dims = [t.dtype for t in (a, b) if t._data.ndim]
    zeros = [t.dtype for t in (a, b) if not t._data.ndim]
    target = _dt.result_type_of(dims, zeros, ()).np
    return cast(a, target), cast(b, target)


def _promote_for_scalar(t, s):
    kind = t._data.dtype.kind
    if isinstance(s, bool):
        return t
    if isinstance(s, int):
        return cast(t, np.int64) if kind == "b" else t
    if isinstance(s, float):
        return cast(t, _dt.get_default_dtype().np) if kind in "iub" else t
    if kind != "c":
        return cast(t, _dt.promote_types(t.dtype, _dt.default_complex()).np)
    return t


def sum_to(grad: Tensor, shape) -> Tensor:
    """Reduce a broadcast gradient back to `shape` (the inverse of broadcasting)."""
    gshape = grad._data.shape
    shape = tuple(shape)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    if axes:
        grad = grad.sum(axes, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def dims(dim, ndim, op="op"):
    """Normalise dim (None, int, or a sequence of ints) to a sorted tuple of axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        return (wrap_dim(dim, ndim, op),)
    out = tuple(sorted({wrap_dim(d, ndim, op) for d in dim}))
    if len(out) != len(tuple(dim)):
        raise RuntimeError(f"{op}: dim {tuple(dim)} appears multiple times in the list of dims")
    return out


def xp_of(t):
    return array_module(t._data)


def dev_of(t):
    return device_of(t._data)


def is_float_array(a):
    return _dt.is_float(a.dtype)
