"""torch.cosine_similarity, torch.pairwise_distance and torch.pdist (also rtx.nn.functional's).

They live in rtx-tensor, not rtx-nn, because the embedding losses (rtx-losses, below rtx-nn) are
built on them. They share one p-norm Primitive (op "linalg_vector_norm") whose gradient is 0
(not NaN) at a zero vector, as PyTorch's linalg.vector_norm; rtx.nn.functional.normalize uses it
too, through the op registry.
"""
from __future__ import annotations

import math

import numpy as np

from rtx._tensor import autocast_state as _autocast
from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, dims
from rtx._tensor.ops.arith import where
from rtx._tensor.ops.shape import broadcast_tensors
from rtx._tensor.tensor import Tensor
from rtx.runtime import array_module
from rtx.runtime import dtypes as _dt

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


class LinalgVectorNorm(Primitive):
    """(sum |x|^p)^(1/p) over `axes`; p may be 0, inf or -inf."""

    saves_output = True

    @staticmethod
    def forward(ctx, x, *, p, axes, keepdim):
        ctx.save_for_backward(x)
        ctx.p, ctx.axes, ctx.keepdim = p, axes, keepdim
        a = np.abs(x._data)
        if p == 2:
            return np.sqrt((a * a).sum(axis=axes, keepdims=keepdim))
        if p == 1:
            return a.sum(axis=axes, keepdims=keepdim)
        if p == math.inf:
            return a.max(axis=axes, keepdims=keepdim)
        if p == -math.inf:
            return a.min(axis=axes, keepdims=keepdim)
        if p == 0:
            return (a != 0).sum(axis=axes, keepdims=keepdim).astype(a.dtype)
        return (a ** p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        p, axes = ctx.p, ctx.axes
        n = ctx.output()
        if not ctx.keepdim:
            shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
            grad, n = grad.reshape(shape), n.reshape(shape)
        if p == 0:
            return x * 0
        if p == 1:
            return grad * x.sgn()
        if abs(p) == math.inf:
            # Ties share the gradient evenly, as PyTorch's amax/amin.
            mask = cast(x.abs() == n, x._data.dtype)
            return grad * x.sgn() * mask / mask.sum(axes, keepdim=True)
        safe = where(n == 0, 1.0, n)  # a zero vector gets gradient 0, not NaN
        if p == 2:
            return grad * x / safe
        return grad * x.sgn() * x.abs() ** (p - 1) / safe ** (p - 1)


def _float(t, op):
    if type(t) is not Tensor:
        raise TypeError(f"{op}(): expected a Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        if t.is_complex():
            raise RuntimeError(f"{op}(): complex inputs are not supported")
        t = cast(t, _dt.get_default_dtype().np)
    return t


def _norm(x, p, dim, keepdim, op):
    p = float(p)
    if math.isnan(p):
        raise RuntimeError(f"{op}(): p must not be NaN")
    return LinalgVectorNorm.apply(x, p=p, axes=dims(dim, x.ndim, op), keepdim=keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1/||x1|| * x2/||x2||) along dim, each norm clamped below by eps (inputs broadcast).

    As PyTorch (>= 1.12): each input is divided by its norm first (the result stays within
    [-1, 1]), and the clamp is invisible to autograd: the gradient flows through the norm.
    """
    x1, x2 = _float(x1, "cosine_similarity"), _float(x2, "cosine_similarity")
    if _autocast.active:  # on CUDA autocast's float32 list
        x1, x2 = _autocast.fp32("cosine_similarity", x1, x2)
    if x1.dtype != x2.dtype:
        target = _dt.promote_types(x1.dtype, x2.dtype).np
        x1, x2 = cast(x1, target), cast(x2, target)
    try:
        x1, x2 = broadcast_tensors(x1, x2)
    except (RuntimeError, ValueError):
        raise RuntimeError(f"cosine_similarity(): x1 of shape {list(x1.shape)} and x2 of shape {list(x2.shape)} "
                           f"do not broadcast") from None
    n1 = _norm(x1, 2, dim, True, "cosine_similarity")
    n2 = _norm(x2, 2, dim, True, "cosine_similarity")
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dimension (of the larger input), as PyTorch."""
    x1, x2 = _float(x1, "pairwise_distance"), _float(x2, "pairwise_distance")
    nd = max(x1.ndim, x2.ndim)
    if nd == 0:
        raise RuntimeError("pairwise_distance(): expected inputs with at least 1 dimension, got 0-d tensors")
    return _norm(x1 - x2 + eps, p, nd - 1, keepdim, "pairwise_distance")


def pdist(input, p=2.0):
    """p-norm distances between the rows of an (N, M) input: the upper triangle of the distance
    matrix, row by row, as a vector of N*(N-1)/2 entries."""
    input = _float(input, "pdist")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if i.size == 0:
        return input.new_zeros(0)
    xp = array_module(input._data)
    i, j = Tensor._make(xp.asarray(i)), Tensor._make(xp.asarray(j))  # index on the input's device
    return _norm(input[i] - input[j], p, 1, False, "pdist")
