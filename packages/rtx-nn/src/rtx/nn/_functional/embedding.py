"""embedding and embedding_bag, as torch.nn.functional.

The lookup is a gather (weight[indices]); its gradient is a scatter-add into a weight-shaped
tensor, where the padding_idx row gets nothing and, with scale_grad_by_freq, each row's
gradient is divided by how often it occurs in the batch. Gather and scatter are each other's
backward, so double backward works. Gradients are dense: sparse=True is accepted but gives a
dense gradient (rtx has no sparse tensors). One deliberate difference: PyTorch's double backward
of embedding drops the scale_grad_by_freq factor; here it is kept (the exact derivative of the
first backward).
"""
from __future__ import annotations

import numpy as np

from rtx.extend import Primitive, Tensor, add_at, increment_version, raw, wrap
from rtx.runtime.devices import array_module

__all__ = ["embedding", "embedding_bag"]


# ---- gather / scatter along dim 0, each the other's backward ----------------------------------------


class Embedding(Primitive):
    """y = w[idx] * fscale (per-position scale, or None); backward: scatter of g * bscale."""

    @staticmethod
    def forward(ctx, w, *, idx, fscale, bscale):
        ctx.idx, ctx.bscale, ctx.n = idx, bscale, raw(w).shape[0]
        out = raw(w)[idx]
        if fscale is not None:
            out *= _expand(fscale, out)
        return out

    @staticmethod
    def backward(ctx, g):
        return EmbeddingDenseBackward.apply(g, idx=ctx.idx, scale=ctx.bscale, n=ctx.n)


class EmbeddingDenseBackward(Primitive):
    """y[r] = sum of g[i] * scale[i] over positions i with idx[i] == r (n rows)."""

    op = "embedding_dense_backward"

    @staticmethod
    def forward(ctx, g, *, idx, scale, n):
        ctx.idx, ctx.scale = idx, scale
        gd = raw(g)
        if scale is not None:
            gd = gd * _expand(scale, gd)
        flat = idx.reshape(-1)
        rest = gd.shape[idx.ndim:]
        out = array_module(gd).zeros((n,) + rest, dtype=gd.dtype)
        add_at(out, flat, gd.reshape((flat.size,) + rest))
        return out

    @staticmethod
    def backward(ctx, gg):
        return Embedding.apply(gg, idx=ctx.idx, fscale=ctx.scale, bscale=ctx.scale)


def _expand(scale, like):
    return scale.reshape(scale.shape + (1,) * (like.ndim - scale.ndim)).astype(like.dtype, copy=False)


# ---- embedding ------------------------------------------------------------------------------------


def _check_indices(input, op):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if raw(input).dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype} instead (while checking arguments for {op})")


def _check_range(idx, n):
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
        bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
        raise IndexError(f"index out of range in self (index {bad} for an embedding table of {n} rows)")


def _padding(padding_idx, n):
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= n or padding_idx < 0 and padding_idx < -n:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + n if padding_idx < 0 else padding_idx


def _renorm_(weight, idx, max_norm, norm_type):
    """Rescale, in place, the rows of weight used by idx whose norm exceeds max_norm to norm
    max_norm (PyTorch's embedding_renorm_; no gradient is recorded)."""
    xp = array_module(raw(weight))
    rows = xp.unique(idx.reshape(-1))
    w = raw(weight)
    sel = w[rows]
    if norm_type == float("inf"):
        norms = xp.abs(sel).max(axis=-1)
    else:
        norms = (xp.abs(sel) ** norm_type).sum(axis=-1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] = sel * scale[:, None]
    increment_version(weight)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """weight[input]: one row of weight per index. The padding_idx row receives no gradient;
    max_norm renormalises the looked-up rows of weight in place first."""
    _check_indices(input, "embedding")
    if type(weight) is not Tensor:
        raise TypeError(f"embedding(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got a weight of shape {list(weight.shape)}")
    n = weight.shape[0]
    pad = _padding(padding_idx, n)
    idx = raw(input)
    _check_range(idx, n)
    if max_norm is not None:
        _renorm_(weight, idx, max_norm, norm_type)
    bscale = None
    if pad is not None or scale_grad_by_freq:
        xp = array_module(idx)
        bscale = xp.ones(idx.shape, dtype=np.float64)
        if scale_grad_by_freq:
            counts = xp.bincount(idx.reshape(-1).astype(np.int64), minlength=n)
            bscale = bscale / counts[idx]
        if pad is not None:
            bscale = bscale * (idx != pad)
    return Embedding.apply(weight, idx=idx, fscale=None, bscale=bscale)


# ---- embedding_bag --------------------------------------------------------------------------------


class EmbeddingBag(Primitive):
    """Columnwise max of the rows of v in each segment (seg sorted, B segments; empty ones
    give 0); the gradient goes to the first row holding each maximum, as PyTorch's."""

    @staticmethod
    def forward(ctx, v, *, seg, B):
        vd = raw(v)
        xp = array_module(vd)
        N, D = vd.shape
        out = xp.full((B, D), -xp.inf, dtype=vd.dtype)
        _scatter_reduce(out, seg, vd, "max")
        pos = xp.where(vd == out[seg], xp.arange(N)[:, None], N)
        arg = xp.full((B, D), N, dtype=np.int64)
        _scatter_reduce(arg, seg, pos, "min")
        empty = arg == N
        out[empty] = 0
        ctx.arg, ctx.N = arg, N
        return out

    @staticmethod
    def backward(ctx, g):
        return _PickScatter.apply(g, arg=ctx.arg, N=ctx.N)


class _PickScatter(Primitive):
    """y[arg[b, d], d] = g[b, d] (rows with arg == N are dropped); backward picks them back."""

    @staticmethod
    def forward(ctx, g, *, arg, N):
        gd = raw(g)
        xp = array_module(gd)
        ctx.arg, ctx.N = arg, N
        out = xp.zeros((N + 1,) + gd.shape[1:], dtype=gd.dtype)
        cols = xp.broadcast_to(xp.arange(gd.shape[1]), arg.shape)
        out[arg, cols] = gd
        return out[:N]

    @staticmethod
    def backward(ctx, gg):
        return _Pick.apply(gg, arg=ctx.arg, N=ctx.N)


class _Pick(Primitive):
    @staticmethod
    def forward(ctx, v, *, arg, N):
        vd = raw(v)
        xp = array_module(vd)
        ctx.arg, ctx.N = arg, N
        padded = xp.concatenate([vd, xp.zeros((1,) + vd.shape[1:], dtype=vd.dtype)])
        cols = xp.broadcast_to(xp.arange(vd.shape[1]), arg.shape)
        return padded[arg, cols]

    @staticmethod
    def backward(ctx, g):
        return _PickScatter.apply(g, arg=ctx.arg, N=ctx.N)


def _scatter_reduce(out, index, values, op):
    """out[index[i]] = op(out[index[i]], values[i]) (NumPy's ufunc.at; cupyx's scatter_max/min)."""
    if type(out) is np.ndarray:
        (np.maximum if op == "max" else np.minimum).at(out, index, values)
    else:
        import cupyx
        (cupyx.scatter_max if op == "max" else cupyx.scatter_min)(out, index, values)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embeddings without building the (N, D) lookup for the
    caller. input is 2-D (B, L: B bags of L indices) or 1-D with offsets (the start of each
    bag). Entries equal to padding_idx are left out of their bag (and out of the mean's count);
    empty bags give zeros. per_sample_weights (same shape as input) scales each entry, for
    mode='sum' only."""
    _check_indices(input, "embedding_bag")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must "
                         f"have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        B, L = input.shape
        starts = np.arange(0, B * L, L, dtype=np.int64) if L else np.zeros(B, dtype=np.int64)
        ends = starts + L
        idx = raw(input).reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        o = np.asarray(offsets.__array__(), dtype=np.int64)
        idx = raw(input)
        N = idx.shape[0]
        if include_last_offset:
            if o.size == 0:
                raise ValueError("embedding_bag: include_last_offset=True needs at least one offset")
            starts, ends = o[:-1], o[1:]
        else:
            starts, ends = o, np.append(o[1:], N)
        if o.size and o[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {int(o[0])}")
        if o.size and (np.any(np.diff(o) < 0) or o[-1] > N):
            raise RuntimeError(f"offsets must be non-decreasing and at most the input length {N}, got {o.tolist()}")
        B = starts.shape[0]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    n = weight.shape[0]
    _check_range(idx, n)
    if max_norm is not None:
        _renorm_(weight, idx, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    xp = array_module(idx)
    seg = np.repeat(np.arange(B, dtype=np.int64), ends - starts)
    if xp is not np:
        seg = xp.asarray(seg)
    pad = _padding(padding_idx, n)
    if pad is not None:
        keep = idx != pad
        idx, seg = idx[keep], seg[keep]
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights[wrap(keep)]
    bscale = None
    if scale_grad_by_freq:
        counts = xp.bincount(idx.astype(np.int64), minlength=n)
        bscale = 1.0 / counts[idx]
    rows = Embedding.apply(weight, idx=idx, fscale=None, bscale=bscale)
    if mode == "max":
        return EmbeddingBag.apply(rows, seg=seg, B=B)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(rows.dtype)
    out = EmbeddingDenseBackward.apply(rows, idx=seg, scale=None, n=B)
    if mode == "mean":
        count = xp.bincount(seg, minlength=B).astype(raw(out).dtype)
        out = out / wrap(xp.maximum(count, 1)[:, None])
    return out
