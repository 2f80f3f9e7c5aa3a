"""Reductions: sum, mean, nansum, nanmean, prod, amax/amin, aminmax, max/min, argmax/argmin,
var/std (and var_mean/std_mean), norm, logsumexp, all/any, count_nonzero, median, nanmedian,
mode, and the scans cumsum/cumprod/cummax/cummin.

`dim` is an int or a tuple of ints, negative counting from the end; an empty tuple means every
dim, as in PyTorch. Ops that pick one element per slice with a dim (max/min/median/mode, and
cummax/cummin) return (values, indices) and send the gradient to the picked index; the forms
without a dim (max(), amax, median()) share it evenly among tied elements, as PyTorch does."""
from __future__ import annotations

import builtins
import math

import numpy as np

from rtx._tensor import autocast_state as _autocast
from rtx._tensor.function import Primitive, _active
from rtx._tensor.ops import return_types
from rtx._tensor.ops._util import cast, dims, wrap_dim, xp_of
from rtx._tensor.ops.arith import maximum, minimum, scalar_name, where
from rtx._tensor.tensor import Tensor
from rtx.autograd.grad_mode import _state
from rtx.runtime import dtypes as _dt
from rtx.runtime.devices import array_module

_PLAIN_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _plain(input):
    """True when the call needs no graph and no recording hook follows this thread: the op may
    then compute on the array directly instead of composing Primitives."""
    return not _active[0] and not (input.requires_grad and _state.enabled)


def _axes(dim, ndim, op):
    """dim (None, an int, or a sequence; empty means all) as a sorted tuple of axes."""
    if type(dim) is int and -ndim <= dim < ndim:  # the commonest form, already in range
        return (dim + ndim if dim < 0 else dim,)
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    axes = dims(dim, ndim, op)
    return axes if ndim else ()  # a 0-d tensor accepts dim 0 / -1 and has nothing to reduce


def _count(shape, axes):
    return math.prod(shape[a] for a in axes)


def _expand_back(grad, shape, axes, keepdim):
    """Broadcast a reduced gradient back over the reduced axes."""
    if not keepdim and axes:
        grad = grad.reshape(tuple(1 if i in axes else s for i, s in enumerate(shape)))
    return grad.expand(shape)


def _keepdims(arr, axes, keepdim):
    return arr if keepdim or not axes else array_module(arr).expand_dims(arr, axes)


def _accumulator(np_dtype):
    # float16 and bfloat16 are summed in float32, as PyTorch does.
    return np.float32 if np_dtype == np.float16 or _dt.is_bfloat16(np_dtype) else None


def _check_float(input, op, msg=None):
    if not _dt.is_float(input._data.dtype):
        raise RuntimeError(msg or f"{op}(): input dtype should be either floating point or complex. "
                                  f"Got {scalar_name(input.dtype)} instead.")


def _check_nonempty(shape, axes, op):
    for a in axes:
        if shape[a] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {a} to have non-zero size.")


def _check_numel(input, op):
    if input._data.size == 0:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           f"reduction dim with the 'dim' argument.")


def _const(arr):
    return Tensor._make(arr)


# ---- sum, mean, prod ---------------------------------------------------------------------------


class Sum(Primitive):
    @staticmethod
    def forward(ctx, a, *, axes, keepdim, np_dtype=None):
        ctx.shape, ctx.axes, ctx.keepdim = a._data.shape, axes, keepdim
        d = a._data
        acc = _accumulator(d.dtype) if np_dtype is None else None
        if acc is not None:
            return d.sum(axis=axes, keepdims=keepdim, dtype=acc).astype(d.dtype)
        return d.sum(axis=axes, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx.shape, ctx.axes, ctx.keepdim)


def _sum(t, axes, keepdim=False):
    return Sum.apply(t, axes=axes, keepdim=keepdim, np_dtype=np.int64 if t._data.dtype.kind in "biu" else None)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over dim (all by default); integers and bools are summed in int64, as PyTorch."""
    if dtype is None and _autocast.active:  # on CUDA autocast's float32 list (unless dtype= is given)
        (input,) = _autocast.fp32("sum", input)
    elif dtype is None and input._data.dtype in _PLAIN_FLOATS and _plain(input):
        return _const(input._data.sum(axis=_axes(dim, input._data.ndim, "sum"), keepdims=keepdim))
    np_dtype = None
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    elif input._data.dtype.kind in "biu":
        np_dtype = np.int64
    return Sum.apply(input, axes=_axes(dim, input._data.ndim, "sum"), keepdim=keepdim, np_dtype=np_dtype)


class Mean(Primitive):
    @staticmethod
    def forward(ctx, a, *, axes, keepdim):
        d = a._data
        ctx.shape, ctx.axes, ctx.keepdim = d.shape, axes, keepdim
        ctx.n = n = _count(d.shape, axes)
        s = d.sum(axis=axes, keepdims=keepdim, dtype=_accumulator(d.dtype))
        if n:
            return (s / n).astype(d.dtype, copy=False)
        with np.errstate(invalid="ignore"):  # the mean of nothing is NaN
            return (s * np.nan).astype(d.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad / builtins.max(ctx.n, 1), ctx.shape, ctx.axes, ctx.keepdim)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    d = input._data
    if dtype is None and d.dtype in _PLAIN_FLOATS and d.size and _plain(input):
        # Mean.forward's steps (a sum, then a division that keeps the float dtype) without the op
        axes = _axes(dim, d.ndim, "mean")
        return _const(d.sum(axis=axes, keepdims=keepdim) / _count(d.shape, axes))
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    if not _dt.is_float(input._data.dtype):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {scalar_name(input.dtype)}")
    return Mean.apply(input, axes=_axes(dim, input._data.ndim, "mean"), keepdim=keepdim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """sum, treating NaN as zero (which gets no gradient)."""
    if _dt.is_float(input._data.dtype):
        input = where(input.isnan(), 0, input)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """mean over the elements that are not NaN."""
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    if not _dt.is_float(input._data.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{scalar_name(input.dtype)}")
    count = sum(~input.isnan(), dim, keepdim)
    return nansum(input, dim, keepdim) / count


class Prod(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, axes, keepdim, np_dtype=None):
        ctx.save_for_backward(a)
        ctx.shape, ctx.axes, ctx.keepdim = a._data.shape, axes, keepdim
        return a._data.prod(axis=axes, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g = _expand_back(grad, ctx.shape, ctx.axes, ctx.keepdim)
        if bool((x._data == 0).any()):
            others = _prod_of_others(x, ctx.axes)
        else:
            others = _expand_back(ctx.output(), ctx.shape, ctx.axes, ctx.keepdim) / x
        return g * (others.conj() if x.is_complex() else others)


def _prod_of_others(x, axes):
    """For each element, the product of the other elements of its slice: the gradient of prod.
    Exact with zeros, and so are its own derivatives (double backward): each case below is
    the true product written so that it stays differentiable where the slice has zeros."""
    is0 = x == 0
    nz = _sum(is0, axes, keepdim=True)            # zeros per slice
    x1 = where(is0, 1, x)
    p1 = Prod.apply(x1, axes=axes, keepdim=True)  # product of the nonzero elements
    z = _sum(where(is0, x, 0), axes, keepdim=True)  # the zeros' sum: 0, but it carries their gradient
    one_zero = where(is0, p1, z * p1 / x1)        # at the zero: p1; elsewhere: the zero times the rest
    two_zeros = where(is0, (z - x) * p1, 0)       # at a zero: the other zero times the rest
    return where(nz == 0, p1 / x1, where(nz == 1, one_zero, where(nz == 2, two_zeros, 0)))


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over one dim (or all); integers and bools multiply in int64. The gradient is
    exact when the input has zeros."""
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    if dtype is None and _autocast.active:  # on autocast's float32 list (unless dtype= is given)
        (input,) = _autocast.fp32("prod", input)
    np_dtype = None
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    elif input._data.dtype.kind in "biu":
        np_dtype = np.int64
    return Prod.apply(input, axes=_axes(dim, input._data.ndim, "prod"), keepdim=keepdim, np_dtype=np_dtype)


# ---- max, min, and other value-picking reductions ----------------------------------------------


class Evenly(Primitive):
    """The value picked from each slice (max, min, median) computed by the caller; the gradient
    is shared evenly by the elements equal to it (NaN counts as equal to a NaN result)."""

    @staticmethod
    def forward(ctx, a, *, value, axes, keepdim):
        ctx.save_for_backward(a)
        ctx.value, ctx.axes, ctx.keepdim = value, axes, keepdim
        return value

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        d = x._data
        v = _keepdims(ctx.value, ctx.axes, ctx.keepdim)
        hit = (d == v) | (np.isnan(d) & np.isnan(v))
        w = hit / hit.sum(axis=ctx.axes, keepdims=True)
        return _expand_back(grad, d.shape, ctx.axes, ctx.keepdim) * _const(w.astype(d.dtype))


def _evenly(input, value, axes, keepdim):
    return Evenly.apply(input, value=xp_of(input).asarray(value), axes=axes, keepdim=keepdim)


def _extreme(input, dim, keepdim, op):
    axes = _axes(dim, input._data.ndim, op)
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        _check_numel(input, op)
    _check_nonempty(input._data.shape, axes, op)
    value = getattr(xp_of(input), op[1:])(input._data, axis=axes, keepdims=keepdim)
    return _evenly(input, value, axes, keepdim)


def amax(input, dim=(), keepdim=False, *, out=None):
    """The largest value over dim (all by default); NaN propagates; ties share the gradient."""
    return _out(_extreme(input, dim, keepdim, "amax"), out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """The smallest value over dim (all by default); NaN propagates; ties share the gradient."""
    return _out(_extreme(input, dim, keepdim, "amin"), out)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over dim (all by default), as return_types.aminmax."""
    d = () if dim is None else dim
    return return_types.aminmax(amin(input, d, keepdim), amax(input, d, keepdim))


def _select(input, dim, keepdim, op, pick):
    """(values, indices) of the element `pick(array, axis)` chooses in each slice along dim;
    the gradient goes to that element (a gather)."""
    from rtx._tensor.ops.index import Gather
    nd = input._data.ndim
    axis = wrap_dim(dim, nd, op)
    x = input if nd else input.reshape(1)
    if x._data.shape[axis] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {axis} to have non-zero size.")
    idx = pick(x._data, axis)  # with the reduced axis kept, as gather wants
    values = Gather.apply(x, dim=axis, index=idx)
    xp = xp_of(input)
    if nd == 0:
        values, idx = values.reshape(()), idx.reshape(())
    elif not keepdim:
        values, idx = values.squeeze(axis), xp.squeeze(idx, axis)
    return getattr(return_types, op)(values, _const(idx.astype(np.int64, copy=False)))


def _select_plain(input, dim, keepdim, op):
    """max/min(input, dim) without a graph: the array's own reduction and arg-reduction (the
    value at the first extreme index is the extreme, NaN included), or None for the rarer forms
    (0-d, an empty dim, a dim out of range) that _select handles and reports."""
    d = input._data
    nd = d.ndim
    if type(dim) is not int or not -nd <= dim < nd or d.shape[dim] == 0 or d.dtype.kind == "c":
        return None
    if op == "max":
        values, idx = d.max(axis=dim, keepdims=keepdim), d.argmax(axis=dim, keepdims=keepdim)
    else:
        values, idx = d.min(axis=dim, keepdims=keepdim), d.argmin(axis=dim, keepdims=keepdim)
    return getattr(return_types, op)(_const(values), _const(idx.astype(np.int64, copy=False)))


def _argmax_keep(a, axis):
    return array_module(a).argmax(a, axis=axis, keepdims=True)


def _argmin_keep(a, axis):
    return array_module(a).argmin(a, axis=axis, keepdims=True)


def max(input, dim=None, keepdim=False, *, out=None):
    """max(input): the largest value. max(input, dim): (values, indices). max(input, other): maximum."""
    if type(dim) is Tensor:
        return maximum(input, dim, out=out)
    if dim is None:
        _check_numel(input, "max")
        axes = tuple(range(input._data.ndim))
        return _out(_evenly(input, xp_of(input).max(input._data), axes, False), out)
    if _plain(input):
        fast = _select_plain(input, dim, keepdim, "max")
        if fast is not None:
            return fast
    return _select(input, dim, keepdim, "max", _argmax_keep)


def min(input, dim=None, keepdim=False, *, out=None):
    """min(input): the smallest value. min(input, dim): (values, indices). min(input, other): minimum."""
    if type(dim) is Tensor:
        return minimum(input, dim, out=out)
    if dim is None:
        _check_numel(input, "min")
        axes = tuple(range(input._data.ndim))
        return _out(_evenly(input, xp_of(input).min(input._data), axes, False), out)
    if _plain(input):
        fast = _select_plain(input, dim, keepdim, "min")
        if fast is not None:
            return fast
    return _select(input, dim, keepdim, "min", _argmin_keep)


def _arg(input, dim, keepdim, op, fn):
    d = input._data
    xp = xp_of(input)
    if dim is None:
        _check_numel(input, op)
        r = fn(d.reshape(-1))
        r = xp.asarray(r).reshape((1,) * d.ndim if keepdim else ())
    else:
        axis = wrap_dim(dim, d.ndim, op)
        if d.ndim == 0:
            r = xp.zeros((), np.int64)
        else:
            _check_nonempty(d.shape, (axis,), op)
            r = fn(d, axis=axis, keepdims=keepdim)
    return _const(xp.asarray(r).astype(np.int64, copy=False))


def argmax(input, dim=None, keepdim=False):
    """Index of the largest value (of the flattened input when dim is None); the first of ties;
    a NaN counts as the largest."""
    return _arg(input, dim, keepdim, "argmax", xp_of(input).argmax)


def argmin(input, dim=None, keepdim=False):
    """Index of the smallest value (of the flattened input when dim is None); the first of ties."""
    return _arg(input, dim, keepdim, "argmin", xp_of(input).argmin)


def _median_index(a, axis, ignore_nan):
    """The index (axis kept) of the lower median of each slice: the NaN's, if the slice has
    one and ignore_nan is off; the median of the other elements if it is on."""
    xp = array_module(a)
    order = xp.argsort(a, axis=axis, kind="stable")  # NaN sorts last
    n = a.shape[axis]
    if _dt.is_float(a.dtype):
        valid = n - xp.isnan(a).sum(axis=axis, keepdims=True)
        k = xp.maximum((valid - 1) // 2, 0) if ignore_nan else xp.where(valid < n, valid, (n - 1) // 2)
    else:
        k = xp.full(order.shape[:axis] + (1,) + order.shape[axis + 1:], (n - 1) // 2)
    return xp.take_along_axis(order, k, axis=axis)


def _median(input, dim, keepdim, op, ignore_nan):
    d = input._data
    if dim is not None:
        return _select(input, dim, keepdim, op, lambda a, axis: _median_index(a, axis, ignore_nan))
    flat = d.reshape(-1)
    axes = tuple(range(d.ndim))
    if flat.size == 0:
        return _const(xp_of(input).full((), np.nan, dtype=d.dtype))
    value = flat[_median_index(flat, 0, ignore_nan)[0]]
    return _evenly(input, value, axes, False)


def median(input, dim=None, keepdim=False):
    """median(input): the lower median (NaN if there is one). median(input, dim): (values, indices)."""
    return _median(input, dim, keepdim, "median", False)


def nanmedian(input, dim=None, keepdim=False):
    """median that ignores NaN (NaN only for an all-NaN slice)."""
    return _median(input, dim, keepdim, "nanmedian", True)


def _mode_index(a, axis):
    """Index (axis kept) of the most frequent value of each slice: the smallest such value,
    at its last occurrence (as PyTorch's CPU kernel)."""
    xp = array_module(a)
    m = xp.moveaxis(a, axis, -1)
    lead, n = m.shape[:-1], m.shape[-1]
    order = xp.argsort(m, axis=-1, kind="stable")
    s = xp.take_along_axis(m, order, axis=-1)
    starts = xp.ones(s.shape, bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    run = xp.cumsum(starts, axis=-1) - 1  # the run of equal values each sorted element is in
    rows = math.prod(lead)
    flat = (xp.arange(rows).reshape(lead + (1,)) * n + run).reshape(-1)
    counts = xp.bincount(flat, minlength=rows * n)[flat].reshape(s.shape)
    best = xp.argmax(counts, axis=-1, keepdims=True)  # the first longest run: the smallest value
    last = best + xp.take_along_axis(counts, best, axis=-1) - 1
    return xp.moveaxis(xp.take_along_axis(order, last, axis=-1), -1, axis)


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along dim (the smallest of ties)."""
    return _select(input, dim, keepdim, "mode", _mode_index)


# ---- var, std, norm, logsumexp ---------------------------------------------------------------


class SafeSqrt(Primitive):
    """sqrt whose gradient is 0 where the result is 0: PyTorch's choice for std and norm."""
    saves_output = True

    @staticmethod
    def forward(ctx, a):
        return np.sqrt(a._data)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output()
        zero = y == 0
        return where(zero, 0, grad / (2 * where(zero, 1, y)))


def _var_args(op, dim, unbiased, correction):
    if isinstance(dim, bool):  # the legacy var(input, unbiased)
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{op}: can't specify both unbiased and correction")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


def _var_plain(input, dim, correction, keepdim):
    """(var, mean kept over the axes) as arrays for a float32/64 input that needs no graph (and
    no recording hook): the steps, and so the bits, of the composed Primitives of _var_mean
    (mean, subtract, square, sum, divide), minus the ops. None for every other case."""
    d = input._data
    if d.dtype not in _PLAIN_FLOATS or not _plain(input):
        return None
    axes = _axes(dim, d.ndim, "var")
    n = _count(d.shape, axes)
    if n <= correction:
        return None  # a zero or negative divisor: the general path's NaN/inf and warnings
    mu = d.sum(axis=axes, keepdims=True)
    mu = mu / n
    x = d - mu
    x *= x
    return x.sum(axis=axes, keepdims=keepdim) / (n - correction), mu


def _var_mean(input, dim, correction, keepdim, op):
    _check_float(input, op, "std and var only support floating point and complex dtypes")
    axes = _axes(dim, input._data.ndim, op)
    n = _count(input._data.shape, axes)
    mu = Mean.apply(input, axes=axes, keepdim=True)
    d = input - mu
    sq = d.real * d.real + d.imag * d.imag if d.is_complex() else d * d
    var = Sum.apply(sq, axes=axes, keepdim=keepdim) / builtins.max(n - correction, 0)
    return var, (mu if keepdim else mu.reshape(tuple(var.shape)))


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over dim with `correction` (1: Bessel's; legacy `unbiased=False` means 0)."""
    dim, correction = _var_args("var", dim, unbiased, correction)
    fast = _var_plain(input, dim, correction, keepdim)
    if fast is not None:
        return _const(fast[0])
    return _var_mean(input, dim, correction, keepdim, "var")[0]


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation; its gradient is 0 where it is 0 (a constant slice)."""
    dim, correction = _var_args("std", dim, unbiased, correction)
    fast = _var_plain(input, dim, correction, keepdim)
    if fast is not None:
        return _const(array_module(fast[0]).sqrt(fast[0]))
    return SafeSqrt.apply(_var_mean(input, dim, correction, keepdim, "std")[0])


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _var_args("var_mean", dim, unbiased, correction)
    fast = _var_plain(input, dim, correction, keepdim)
    if fast is not None:
        var, mu = fast
        return _const(var), _const(mu if keepdim else mu.reshape(var.shape))
    return _var_mean(input, dim, correction, keepdim, "var_mean")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _var_args("std_mean", dim, unbiased, correction)
    v, m = _var_mean(input, dim, correction, keepdim, "std_mean")
    return SafeSqrt.apply(v), m


class VectorNorm(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, p, axes, keepdim):
        ctx.save_for_backward(a)
        ctx.p, ctx.axes, ctx.keepdim = p, axes, keepdim
        xp = xp_of(a)
        x = xp.abs(a._data)
        kw = {"axis": axes, "keepdims": keepdim}
        if p == 2:
            r = xp.sqrt((x * x).sum(**kw))
        elif p == 1:
            r = x.sum(**kw)
        elif p == math.inf:
            r = x.max(**kw)
        elif p == -math.inf:
            r = x.min(**kw)
        elif p == 0:
            r = (x != 0).sum(**kw)
        else:
            r = (x ** p).sum(**kw) ** (1 / p)
        return xp.asarray(r, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        p, axes, keepdim, shape = ctx.p, ctx.axes, ctx.keepdim, x._data.shape
        g = _expand_back(grad, shape, axes, keepdim)
        if p == 0:
            return x * 0
        if p == 1:
            return g * x.sgn()
        y = _expand_back(ctx.output(), shape, axes, keepdim)
        zero = y == 0  # the gradient of the norm at 0 is 0, as PyTorch's subgradient
        if p == 2:
            return x * where(zero, 0, g / where(zero, 1, y))
        if math.isinf(p):
            hit = xp_of(x).abs(x._data) == y._data  # ties share the gradient, as amax
            w = hit / hit.sum(axis=axes, keepdims=True)
            return g * x.sgn() * _const(w.astype(y._data.dtype))
        ax = x.abs()
        if p < 1:  # |x|**(p-1) is infinite at 0, where sgn(x) is 0
            ax = where(ax == 0, 1, ax)
        return x.sgn() * ax ** (p - 1) * where(zero, 0, g / where(zero, 1, y) ** (p - 1))


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The vector p-norm over dim (all by default): p = 2 ('fro'), 1, inf, -inf, 0 (the count of
    nonzeros) or any other number. Complex inputs give a real norm."""
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    elif _autocast.active:  # on CUDA autocast's float32 list
        (input,) = _autocast.fp32("norm", input)
    _check_float(input, "norm")
    if isinstance(p, str):
        if p == "nuc":
            raise RuntimeError("norm: p='nuc' is the nuclear (matrix) norm: use rtx.linalg.matrix_norm(input, "
                               "'nuc')")
        if p != "fro":
            raise RuntimeError(f"norm: unknown p={p!r}; expected a number, 'fro' or 'nuc'")
        p = 2
    if p is None:
        p = 2
    p = float(p)
    axes = _axes(dim, input._data.ndim, "norm")
    if math.isinf(p):
        _check_nonempty(input._data.shape, axes, "linalg.vector_norm")
    return _out(VectorNorm.apply(input, p=p, axes=axes, keepdim=keepdim), out)


class LogSumExp(Primitive):
    op = "logsumexp"
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, axes, keepdim):
        ctx.save_for_backward(a)
        ctx.axes, ctx.keepdim = axes, keepdim
        d = a._data
        xp = xp_of(a)
        if len(axes) == 1 and d.ndim > 1 and 2 <= d.shape[axes[0]] <= 4:
            return _logsumexp_short(xp, d, axes[0], keepdim)
        if _count(d.shape, axes) == 0 or d.size == 0:
            m = xp.zeros(tuple(1 if i in axes else s for i, s in enumerate(d.shape)), d.dtype)
        else:
            # subtract the max so exp cannot overflow; an infinite max is left out (inf - inf)
            m = d.max(axis=axes, keepdims=True)
            m = xp.where(xp.isinf(m), 0, m).astype(d.dtype, copy=False)
        with np.errstate(divide="ignore"):  # log(0) = -inf for an empty or all -inf slice
            out = xp.log(xp.exp(d - m).sum(axis=axes, keepdims=True)) + m
        return out if keepdim else out.reshape(tuple(s for i, s in enumerate(d.shape) if i not in axes))

    @staticmethod
    def backward(ctx, grad):
        # d/dx logsumexp = softmax(x) = exp(x - out)
        (x,) = ctx.saved_tensors
        shape = x._data.shape
        g = _expand_back(grad, shape, ctx.axes, ctx.keepdim)
        return g * (x - _expand_back(ctx.output(), shape, ctx.axes, ctx.keepdim)).exp()


def _logsumexp_short(xp, d, axis, keepdim):
    """logsumexp along one axis of 2 to 4 elements of an array of 2 or more dims, by column
    arithmetic: NumPy's reductions along a short axis are slow (a (256, 2) max and sum took
    ~20 us; these ufuncs ~4 us). The general path's steps: shift by the max (0 where it is
    infinite), exp, sum, log."""
    lead = (slice(None),) * axis
    cols = [d[lead + (i,)] for i in range(d.shape[axis])]
    m = xp.maximum(cols[0], cols[1])
    for c in cols[2:]:
        xp.maximum(m, c, out=m)
    m[xp.isinf(m)] = 0
    s = xp.exp(cols[0] - m)
    for c in cols[1:]:
        s += xp.exp(c - m)
    with np.errstate(divide="ignore"):  # log(0) = -inf for an all -inf slice
        out = xp.log(s, out=s)
    out += m
    return xp.expand_dims(out, axis) if keepdim else out


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over dim, computed without overflow for large inputs."""
    if input._data.dtype.kind in "biu":
        input = cast(input, _dt.get_default_dtype().np)
    axes = _axes(dim, input._data.ndim, "logsumexp")
    return _out(LogSumExp.apply(input, axes=axes, keepdim=keepdim), out)


# ---- all, any, count_nonzero -------------------------------------------------------------------


def _logical(input, dim, keepdim, op):
    d = input._data
    xp = xp_of(input)
    r = getattr(xp, op)(d, axis=_axes(dim, d.ndim, op), keepdims=keepdim)
    # PyTorch keeps uint8 for uint8 inputs; every other dtype gives bool
    return _const(xp.asarray(r, dtype=np.uint8 if d.dtype == np.uint8 else np.bool_))


def all(input, dim=None, keepdim=False, *, out=None):
    """True where every element over dim is nonzero (True for an empty slice)."""
    return _out(_logical(input, dim, keepdim, "all"), out)


def any(input, dim=None, keepdim=False, *, out=None):
    """True where some element over dim is nonzero (False for an empty slice)."""
    return _out(_logical(input, dim, keepdim, "any"), out)


def count_nonzero(input, dim=None):
    d = input._data
    return _const(xp_of(input).asarray((d != 0).sum(axis=_axes(dim, d.ndim, "count_nonzero"), dtype=np.int64)))


# ---- scans ----------------------------------------------------------------------------------


def _flip(t, axis):
    from rtx._tensor.ops.shape import Flip
    return Flip.apply(t, axes=(axis,))


def _revcumsum(t, axis):
    """out[k] = sum over j >= k of t[j], along axis."""
    return _flip(CumSum.apply(_flip(t, axis), axis=axis), axis)


class CumSum(Primitive):
    op = "cumsum"

    @staticmethod
    def forward(ctx, a, *, axis, np_dtype=None):
        ctx.axis = axis
        return xp_of(a).cumsum(a._data, axis=axis, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        return _revcumsum(grad, ctx.axis)


class CumProd(Primitive):
    op = "cumprod"
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, axis, np_dtype=None):
        ctx.save_for_backward(a)
        ctx.axis = axis
        return xp_of(a).cumprod(a._data, axis=axis, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        y = ctx.output()
        if x.is_complex():
            return _cumprod_grad(grad.conj(), x, y, ctx.axis).conj()
        return _cumprod_grad(grad, x, y, ctx.axis)


def _cumprod_grad(g, x, y, axis):
    """sum over j >= k of g[j] * dy[j]/dx[k], exact when x has zeros. Before the first zero of a
    slice it is (reverse cumsum of g*y)[k] / x[k]; at the first zero, the reverse cumsum of g
    times the cumulative product with that zero replaced by 1; after it, 0. Its own derivative
    (double backward) is exact where x has no zeros."""
    d = x._data
    is0 = d == 0
    if not bool(is0.any()):
        return _revcumsum(g * y, axis) / x
    seen = xp_of(x).cumsum(is0, axis=axis)
    before, first = _const(seen == 0), _const(is0 & (seen == 1))
    head = _revcumsum(where(before, g * y, 0), axis) / where(before, x, 1)
    at_zero = _revcumsum(where(before, 0, g * CumProd.apply(where(first, 1, x), axis=axis)), axis)
    return where(before, head, where(first, at_zero, 0))


def _scan(cls, input, dim, dtype, op):
    nd = input._data.ndim
    axis = wrap_dim(dim, nd, op)
    np_dtype = None
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    elif input._data.dtype.kind in "biu":
        np_dtype = np.int64  # PyTorch scans integers and bools in int64
    if nd == 0:
        return cls.apply(input.reshape(1), axis=0, np_dtype=np_dtype).reshape(())
    return cls.apply(input, axis=axis, np_dtype=np_dtype)


def cumsum(input, dim, *, dtype=None, out=None):
    return _out(_scan(CumSum, input, dim, dtype, "cumsum"), out)


def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product along dim. The gradient is exact with zeros in the input; double
    backward is exact for inputs without zeros."""
    return _out(_scan(CumProd, input, dim, dtype, "cumprod"), out)


def _cum_index(ufunc):
    def pick(a, axis):
        # The running max/min and, for each position, the last index where it was reached
        # (a NaN, once seen, stays the result, indexed at the latest NaN), as PyTorch.
        xp = array_module(a)
        run = getattr(xp, ufunc).accumulate(a, axis=axis)
        hit = a == run
        if _dt.is_float(a.dtype):
            hit |= xp.isnan(a)
        pos = xp.arange(a.shape[axis]).reshape(tuple(-1 if i == axis else 1 for i in range(a.ndim)))
        return xp.maximum.accumulate(xp.where(hit, pos, 0), axis=axis)
    return pick


def _cum_select(input, dim, op, ufunc):
    from rtx._tensor.ops.index import Gather
    nd = input._data.ndim
    axis = wrap_dim(dim, nd, op)
    x = input if nd else input.reshape(1)
    idx = _cum_index(ufunc)(x._data, axis)
    values = Gather.apply(x, dim=axis, index=idx)
    if nd == 0:
        values, idx = values.reshape(()), idx.reshape(())
    return getattr(return_types, op)(values, _const(idx.astype(np.int64, copy=False)))


def cummax(input, dim):
    """(values, indices): the running maximum along dim and where it was (last) reached."""
    return _cum_select(input, dim, "cummax", "maximum")


def cummin(input, dim):
    """(values, indices): the running minimum along dim and where it was (last) reached."""
    return _cum_select(input, dim, "cummin", "minimum")


def _out(result, out):
    if out is None:
        return result
    out.copy_(result)
    return out


def _inplace_scan(fn):
    from rtx._tensor.ops import inplace
    return inplace.inplace_unary(fn)


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['sum', 'mean', 'nansum', 'nanmean', 'prod', 'amax', 'amin', 'aminmax', 'max', 'min', 'argmax', 'argmin',
           'var', 'std', 'norm', 'logsumexp', 'all', 'any', 'count_nonzero', 'median', 'nanmedian', 'mode',
           'cumsum', 'cumprod', 'cummax', 'cummin']
TENSOR_ATTRS = {"cumsum_": _inplace_scan(cumsum), "cumprod_": _inplace_scan(cumprod)}
