"""Reductions (ReduceSum ... ReduceLogSumExp), ArgMax/ArgMin, CumSum/CumProd."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.onnx._ops import arr, const, ints, is_grad_float, op, scalar, wrap_axis


def _axes(inputs, attrs, opset, since):
    """The reduced axes (None = all) or () for a no-op, per the opset's axes convention."""
    x = inputs[0]
    nd = arr(x).ndim
    if opset >= since:
        axes = inputs[1] if len(inputs) > 1 else None
        axes = None if axes is None else ints(axes)
    else:
        axes = attrs.get("axes")
    if not axes:
        return () if attrs.get("noop_with_empty_axes", 0) else None
    return tuple(sorted({wrap_axis(a, nd, "Reduce") for a in axes}))


def _reduce(name, since, rtx_fn, np_fn, empty, post=None, pre=None):
    """Register Reduce<name>: pre (elementwise, before summing), the reduction, post (after)."""
    @op(name)
    def fn(inputs, attrs, opset):
        x = inputs[0]
        a = arr(x)
        axes = _axes(inputs, attrs, opset, since)
        keep = bool(attrs.get("keepdims", 1))
        if axes == ():  # noop_with_empty_axes: only the elementwise parts apply
            if is_grad_float(x):
                return _post(post, pre(x) if pre else x)
            return const(_np_post(post, _np_pre(pre, a)).astype(a.dtype))
        dims = tuple(range(a.ndim)) if axes is None else axes
        if is_grad_float(x) and a.size:
            return _post(post, rtx_fn(pre(x) if pre else x, dims, keep))
        # NumPy: non-float types, and empty inputs (a reduction over nothing gives its identity)
        src = _np_pre(pre, a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if src.size == 0:
                shape = [1 if d in dims else s for d, s in enumerate(src.shape)] if keep else \
                    [s for d, s in enumerate(src.shape) if d not in dims]
                out = np.full(shape, empty(src.dtype), dtype=np.float64 if src.dtype.kind == "V" else src.dtype)
            else:
                out = np_fn(src.astype(np.float32) if src.dtype.kind == "V" else src, dims, keep)
            out = _np_post(post, out)
        return const(np.asarray(out).astype(a.dtype))
    return fn


def _np_post(post, out):
    with np.errstate(divide="ignore", invalid="ignore"):
        if post == "log":
            return np.log(out)
        if post == "sqrt":
            return np.sqrt(out)
    return np.asarray(out)


def _np_pre(pre, a):
    if pre is _abs:
        return np.abs(a)
    if pre is _square:
        return a * a
    return a


def _post(post, out):
    if post == "log":
        return rtx.log(out)
    if post == "sqrt":
        return rtx.sqrt(out)
    return out


def _abs(x):
    return rtx.abs(x)


def _square(x):
    return x * x


def _neg_inf(dt):
    if dt.kind == "b":
        return False
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return -np.inf


def _pos_inf(dt):
    if dt.kind == "b":
        return True
    if dt.kind in "iu":
        return np.iinfo(dt).max
    return np.inf


def _np_mean(a, d, k):
    return np.mean(a.astype(np.float64) if a.dtype.kind in "iub" else a, axis=d, keepdims=k)


def _logsumexp_rtx(x, dims, keep):
    return rtx.logsumexp(x, dim=dims, keepdim=keep)


def _logsumexp_np(a, dims, keep):
    m = np.max(a, axis=dims, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
    return out if keep else np.squeeze(out, axis=dims)


_reduce("ReduceSum", 13, lambda x, d, k: rtx.sum(x, dim=d, keepdim=k), lambda a, d, k: np.sum(a, axis=d, keepdims=k),
        lambda dt: 0)
_reduce("ReduceMean", 18, lambda x, d, k: rtx.mean(x, dim=d, keepdim=k), _np_mean, lambda dt: np.nan)
_reduce("ReduceMax", 18, lambda x, d, k: rtx.amax(x, dim=d, keepdim=k), lambda a, d, k: np.max(a, axis=d, keepdims=k),
        _neg_inf)
_reduce("ReduceMin", 18, lambda x, d, k: rtx.amin(x, dim=d, keepdim=k), lambda a, d, k: np.min(a, axis=d, keepdims=k),
        _pos_inf)
_reduce("ReduceL1", 18, lambda x, d, k: rtx.sum(x, dim=d, keepdim=k), lambda a, d, k: np.sum(a, axis=d, keepdims=k),
        lambda dt: 0, pre=_abs)
_reduce("ReduceL2", 18, lambda x, d, k: rtx.sum(x, dim=d, keepdim=k), lambda a, d, k: np.sum(a, axis=d, keepdims=k),
        lambda dt: 0, pre=_square, post="sqrt")
_reduce("ReduceSumSquare", 18, lambda x, d, k: rtx.sum(x, dim=d, keepdim=k),
        lambda a, d, k: np.sum(a, axis=d, keepdims=k), lambda dt: 0, pre=_square)
_reduce("ReduceLogSum", 18, lambda x, d, k: rtx.sum(x, dim=d, keepdim=k),
        lambda a, d, k: np.sum(a, axis=d, keepdims=k), lambda dt: 0, post="log")
_reduce("ReduceLogSumExp", 18, _logsumexp_rtx, _logsumexp_np, lambda dt: -np.inf)


@op("ReduceProd")
def reduce_prod(inputs, attrs, opset):
    x = inputs[0]
    axes = _axes(inputs, attrs, opset, 18)
    keep = bool(attrs.get("keepdims", 1))
    if axes == ():
        return x
    a = arr(x)
    dims = tuple(range(a.ndim)) if axes is None else axes
    if is_grad_float(x) and a.size:
        out = x
        for d in sorted(dims, reverse=True):
            out = rtx.prod(out, dim=d, keepdim=keep)
        return out
    return const(np.asarray(np.prod(a, axis=dims, keepdims=keep)).astype(a.dtype))


def _arg(name, np_fn):
    @op(name)
    def fn(inputs, attrs, opset):
        a = arr(inputs[0])
        if a.dtype.kind == "V":
            a = a.astype(np.float32)
        axis = wrap_axis(attrs.get("axis", 0), a.ndim, name)
        keep = bool(attrs.get("keepdims", 1))
        if attrs.get("select_last_index", 0):
            flipped = np.flip(a, axis)
            out = a.shape[axis] - 1 - np_fn(flipped, axis=axis)
        else:
            out = np_fn(a, axis=axis)
        if keep:
            out = np.expand_dims(out, axis)
        return const(np.asarray(out, dtype=np.int64))
    return fn


_arg("ArgMax", np.argmax)
_arg("ArgMin", np.argmin)


def _cum(name, rtx_fn, np_fn):
    @op(name)
    def fn(inputs, attrs, opset):
        x = inputs[0]
        a = arr(x)
        axis = wrap_axis(scalar(inputs[1]), a.ndim, name)
        exclusive, reverse = attrs.get("exclusive", 0), attrs.get("reverse", 0)
        if is_grad_float(x):
            y = rtx.flip(x, (axis,)) if reverse else x
            out = rtx_fn(y, axis)
            if exclusive:
                # shift by one along axis, filling with the identity
                n = a.shape[axis]
                ident = 0.0 if name == "CumSum" else 1.0
                head = rtx.full_like(rtx.narrow(out, axis, 0, 1), ident)
                out = rtx.cat([head, rtx.narrow(out, axis, 0, n - 1)], axis) if n > 1 else head
            return rtx.flip(out, (axis,)) if reverse else out
        y = np.flip(a, axis) if reverse else a
        out = np_fn(y, axis=axis, dtype=a.dtype)
        if exclusive:
            ident = 0 if name == "CumSum" else 1
            out = np.concatenate([np.full_like(np.take(out, [0], axis), ident), np.delete(out, -1, axis)], axis)
        if reverse:
            out = np.flip(out, axis)
        return const(np.ascontiguousarray(out))
    return fn


_cum("CumSum", lambda x, d: rtx.cumsum(x, d), np.cumsum)
_cum("CumProd", lambda x, d: rtx.cumprod(x, d), np.cumprod)
