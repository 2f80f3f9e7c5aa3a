"""Reductions: sum, mean, prod, amax/amin, max/min (values and indices), argmax/argmin,
var/std, norm, logsumexp, all/any, cumsum/cumprod, median."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, dims
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt


def _expand_back(grad, shape, axes, keepdim):
    """Broadcast a reduced gradient back over the reduced axes."""
    if not keepdim and axes:
        grad = grad.reshape(tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return grad.expand(shape)


class Sum(Primitive):
    @staticmethod
    def forward(ctx, a, *, axes, keepdim, np_dtype):
        ctx.shape, ctx.axes, ctx.keepdim = a._data.shape, axes, keepdim
        return a._data.sum(axis=axes, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx.shape, ctx.axes, ctx.keepdim)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    axes = dims(dim, input._data.ndim, "sum")
    if dtype is not None:
        np_dtype = _dt.as_dtype(dtype).np
    elif input._data.dtype.kind in "biu":
        np_dtype = np.int64  # PyTorch sums integers and bools in int64
    else:
        np_dtype = None
    return Sum.apply(input, axes=axes, keepdim=keepdim, np_dtype=np_dtype)


class Mean(Primitive):
    @staticmethod
    def forward(ctx, a, *, axes, keepdim):
        ctx.shape, ctx.axes, ctx.keepdim = a._data.shape, axes, keepdim
        n = 1
        for ax in axes:
            n *= a._data.shape[ax]
        ctx.n = n
        return a._data.mean(axis=axes, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad / ctx.n, ctx.shape, ctx.axes, ctx.keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    if not input.is_floating_point() and not input.is_complex():
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {input.dtype.name.capitalize()}")
    return Mean.apply(input, axes=dims(dim, input._data.ndim, "mean"), keepdim=keepdim)


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['sum', 'mean']
