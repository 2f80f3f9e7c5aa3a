"""Sorting and selection: sort, argsort, msort, topk, kthvalue, unique, unique_consecutive,
searchsorted, bucketize.

The order is computed on arrays (never differentiable); the values are then read with gather,
so their gradient flows back to the chosen positions (scatter-add), and double backward works.
NaN sorts as the largest value, as in PyTorch. Sorts are stable: equal values keep their input
order, ascending and descending.
"""
from __future__ import annotations

import numpy as np

from rtx._tensor.ops import return_types
from rtx._tensor.ops._util import check_same_device, wrap_dim
from rtx._tensor.ops.index import Gather
from rtx._tensor.ops.shape import Reshape, reshape
from rtx._tensor.tensor import Tensor
from rtx.runtime.devices import array_module


def _check(input, op):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{op}(): not supported for complex tensors (got {input.dtype})")


def _argsort(arr, axis, descending):
    """Stable argsort along axis; descending keeps equal elements in their input order."""
    xp = array_module(arr)
    if not descending:
        return xp.argsort(arr, axis=axis, kind="stable")
    # Reverse, sort ascending stably, reverse back: the order is descending, ties in input order.
    n = arr.shape[axis]
    rev = xp.flip(arr, axis)
    order = xp.flip(xp.argsort(rev, axis=axis, kind="stable"), axis)
    return (n - 1) - order


# Gather under the names PyTorch gives these nodes (SortBackward0, ...): backward scatters the
# gradient of the values back to the chosen positions.
class Sort(Gather):
    pass


class Topk(Gather):
    pass


class Kthvalue(Gather):
    pass


def _with_dim(input, dim, op):
    """(input as at least 1-D, the wrapped dim, whether to squeeze the result back to 0-d)."""
    if input._data.ndim == 0:
        wrap_dim(dim, 0, op)
        return Reshape.apply(input, shape=(1,)), 0, True
    return input, wrap_dim(dim, input._data.ndim, op), False


def _result(cls, values, indices, scalar):
    if scalar:
        values, indices = reshape(values, ()), reshape(indices, ())
    return cls(values, indices)


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) sorted along dim."""
    _check(input, "sort")
    x, d, scalar = _with_dim(input, dim, "sort")
    idx = _argsort(x._data, d, descending).astype(np.int64)
    indices = Tensor._make(idx)
    return _result(return_types.sort, Sort.apply(x, dim=d, index=idx), indices, scalar)


def argsort(input, dim=-1, descending=False, stable=False):
    _check(input, "argsort")
    x, d, scalar = _with_dim(input, dim, "argsort")
    idx = Tensor._make(_argsort(x._data, d, descending).astype(np.int64))
    return reshape(idx, ()) if scalar else idx


def msort(input):
    """Sorted along the first dim (torch.msort)."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """(values, indices) of the k largest (or smallest) elements along dim, in sorted order."""
    _check(input, "topk")
    x, d, scalar = _with_dim(input, dim, "topk")
    n = x._data.shape[d]
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range: k = {k} but the size of dimension {d} is {n}")
    idx = _argsort(x._data, d, largest)
    idx = idx[(slice(None),) * d + (slice(0, k),)].astype(np.int64)
    indices = Tensor._make(idx)
    return _result(return_types.topk, Topk.apply(x, dim=d, index=idx), indices, scalar)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """(values, indices) of the k-th smallest element (1-based) along dim."""
    _check(input, "kthvalue")
    x, d, scalar = _with_dim(input, dim, "kthvalue")
    n = x._data.shape[d]
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k = {k} out of range for dimension {d} of size {n}")
    idx = _argsort(x._data, d, False)
    idx = idx[(slice(None),) * d + (slice(k - 1, k),)].astype(np.int64)
    indices = Tensor._make(idx)
    values = Kthvalue.apply(x, dim=d, index=idx)
    if not keepdim or scalar:
        shape = x._data.shape[:d] + x._data.shape[d + 1:]
        values, indices = reshape(values, shape), reshape(indices, shape)
    return _result(return_types.kthvalue, values, indices, scalar)


# ---- unique ----------------------------------------------------------------------------------------


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (always sorted, as PyTorch does on CPU and CUDA), with the inverse map
    (input's shape; 1-D along dim) and the counts when asked. Not differentiable."""
    arr = input._data
    xp = array_module(arr)
    if dim is None:
        vals, inv, counts = xp.unique(arr.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(arr.shape)
    else:
        d = wrap_dim(dim, arr.ndim, "unique")
        if arr.shape[d] == 0:
            vals = arr
            inv = xp.zeros((0,), dtype=np.int64)
            counts = xp.zeros((0,), dtype=np.int64)
        else:
            vals, inv, counts = xp.unique(arr, return_inverse=True, return_counts=True, axis=d)
            inv = inv.reshape(-1)
    return _unique_result(vals, inv, counts, return_inverse, return_counts)


def _unique_result(vals, inv, counts, return_inverse, return_counts):
    out = Tensor._make(vals)
    if not (return_inverse or return_counts):
        return out
    res = (out,)
    if return_inverse:
        res += (Tensor._make(inv.astype(np.int64)),)
    if return_counts:
        res += (Tensor._make(counts.astype(np.int64)),)
    return res


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (or slices along dim) into one."""
    arr = input._data
    xp = array_module(arr)
    if dim is None:
        flat = arr.reshape(-1)
        keys = flat
        d = 0
    else:
        d = wrap_dim(dim, arr.ndim, "unique_consecutive")
        flat = arr
        keys = xp.moveaxis(arr, d, 0).reshape(arr.shape[d], -1)
    n = keys.shape[0]
    if n == 0:
        vals = flat
        inv = xp.zeros(arr.shape if dim is None else (0,), dtype=np.int64)
        counts = xp.zeros((0,), dtype=np.int64)
        return _unique_result(vals, inv, counts, return_inverse, return_counts)
    change = keys[1:] != keys[:-1]
    if change.ndim > 1:
        change = change.any(axis=1)
    starts = xp.concatenate([xp.ones(1, dtype=bool), change])
    first = xp.nonzero(starts)[0]
    vals = xp.take(flat, first, axis=d)
    inv = xp.cumsum(starts) - 1
    counts = xp.diff(xp.concatenate([first, xp.asarray([n])]))
    if dim is None:
        inv = inv.reshape(arr.shape)
    return _unique_result(vals, inv, counts, return_inverse, return_counts)


# ---- searchsorted, bucketize ----------------------------------------------------------------------


def _side(right, side):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        return side
    return "right" if right else "left"


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Where `input` would be inserted into sorted_sequence (along its last dim) to keep it
    sorted. A 1-D sequence serves every value; otherwise leading dims must match input's."""
    side = _side(right, side)
    seq = sorted_sequence._data
    scalar = type(input) is not Tensor
    vals = array_module(seq).asarray(input, dtype=seq.dtype) if scalar else input._data
    if not scalar:
        check_same_device(sorted_sequence, input, "searchsorted")
    xp = array_module(seq)
    srt = None
    if sorter is not None:
        if sorter._data.shape != seq.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)} and got sorter tensor {list(sorter.shape)}")
        srt = sorter._data
        seq = xp.take_along_axis(seq, srt, axis=-1)
    if seq.ndim <= 1:
        res = xp.searchsorted(seq.reshape(-1), vals, side=side)
    else:
        if seq.shape[:-1] != vals.shape[:-1] or vals.ndim != seq.ndim:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}")
        s2 = seq.reshape(-1, seq.shape[-1])
        v2 = vals.reshape(-1, vals.shape[-1])
        res = xp.stack([xp.searchsorted(s2[i], v2[i], side=side) for i in range(s2.shape[0])]).reshape(vals.shape) \
            if s2.shape[0] else xp.zeros(vals.shape, dtype=np.int64)
    res = xp.asarray(res).astype(np.int32 if out_int32 else np.int64)
    result = Tensor._make(res)
    if out is not None:
        out.copy_(result)
        return out
    return result


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value: i with boundaries[i-1] < x <= boundaries[i] (right=False) or
    boundaries[i-1] <= x < boundaries[i] (right=True)."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive", "searchsorted",
           "bucketize"]
# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive"]
