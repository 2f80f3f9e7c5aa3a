"""Indexing ops: gather, scatter, scatter_add, scatter_reduce, index_select, index_add,
index_copy, index_fill, index_put, masked_fill, masked_select, masked_scatter, take,
take_along_dim, put, nonzero/argwhere, and the in-place `_` variants (where is in arith.py).

Each op's array work is a kernel that writes into a given array: the out-of-place op runs it on
a copy; the in-place op runs it on the tensor's own memory when no graph is recorded, and
otherwise goes through inplace.write_result so the tensor takes over the op's history.
Backward formulas follow PyTorch's derivatives.yaml and are written in these same ops, so
double backward works.
"""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops import inplace as _inplace
from rtx._tensor.ops._util import cast, check_same_device, sum_to, to_tensor, wrap_dim
from rtx._tensor.ops.arith import where
from rtx._tensor.ops.shape import Reshape, add_at, expand, getitem, reshape
from rtx._tensor.tensor import Tensor
from rtx.runtime.devices import array_module

# ---- argument checks -----------------------------------------------------------------------------


def _check_tensor(x, name, op):
    if type(x) is not Tensor:
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _long_index(index, op, allow_int32=False):
    _check_tensor(index, "index", op)
    dt = index._data.dtype
    if dt == np.int64 or (allow_int32 and dt == np.int32):
        return index._data
    want = "int32 or int64" if allow_int32 else "int64"
    raise RuntimeError(f"{op}(): Expected dtype {want} for index, but got {index.dtype}")


def _check_range(idx, size, dim, op):
    """Every index within [0, size); the error names the first bad one."""
    if idx.size == 0:
        return
    bad = (idx < 0) | (idx >= size)
    if bool(bad.any()):
        first = int(idx[bad].ravel()[0])
        raise IndexError(f"{op}(): index {first} is out of bounds for dimension {dim} with size {size}")


def _same_dtype(a, b, op, what="src"):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to {what}.dtype, but got {a.dtype} and "
                           f"{b.dtype}")


def _scatter_dim_index(idx, dim):
    """Index arrays selecting, for every position p of idx, input[p with p[dim] -> idx[p]]."""
    xp = array_module(idx)
    nd = idx.ndim
    out = []
    for d, n in enumerate(idx.shape):
        if d == dim:
            out.append(idx)
        else:
            shape = [1] * nd
            shape[d] = n
            out.append(xp.arange(n).reshape(shape))
    return tuple(out)


def _lead(shape):
    return tuple(slice(0, n) for n in shape)


def _gather_args(input, dim, index, op):
    _check_tensor(input, "input", op)
    idx = _long_index(index, op)
    check_same_device(input, index, op)
    nd = max(input._data.ndim, 1)
    d = wrap_dim(dim, nd, op)
    if idx.ndim != input._data.ndim and not (idx.ndim <= 1 and input._data.ndim <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(index.shape)}, input {list(input.shape)})")
    return d, idx


def _check_sizes(shape, idx_shape, d, op, src_shape=None):
    for k, n in enumerate(idx_shape):
        if (k != d and n > shape[k]) or (src_shape is not None and n > src_shape[k]):
            extra = "" if src_shape is None else f" and to be no larger size than src {list(src_shape)}"
            raise RuntimeError(f"{op}(): Expected index {list(idx_shape)} to be no larger than self {list(shape)} "
                               f"apart from dimension {d}{extra}")


# ---- gather ---------------------------------------------------------------------------------------


class Gather(Primitive):
    @staticmethod
    def forward(ctx, a, *, dim, index):
        ctx.shape, ctx.dim, ctx.index = a._data.shape, dim, index
        return a._data[_scatter_dim_index(index, dim)]

    @staticmethod
    def backward(ctx, grad):
        zeros = Tensor._make(array_module(grad._data).zeros(ctx.shape, dtype=grad._data.dtype))
        return ScatterAdd.apply(zeros, grad, dim=ctx.dim, index=ctx.index)


def _as1d(t):
    return Reshape.apply(t, shape=(1,)) if t._data.ndim == 0 else t


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """out[i][j] = input[index[i][j]][j] for dim=0 (and so on): values along dim picked by index."""
    d, idx = _gather_args(input, dim, index, "gather")
    if input._data.ndim == 0 or idx.ndim == 0:
        res = gather(_as1d(input), 0, _as1d(index))
        return _out(reshape(res, tuple(index.shape)), out)
    _check_sizes(input._data.shape, idx.shape, d, "gather")
    _check_range(idx, input._data.shape[d], d, "gather")
    return _out(Gather.apply(input, dim=d, index=idx), out)


def _out(result, out):
    if out is None:
        return result
    out.copy_(result)
    return out


# ---- scatter, scatter_add, scatter_reduce ----------------------------------------------------------


def _k_scatter(out, dim, idx, src, reduce):
    pos = _scatter_dim_index(idx, dim)
    vals = src[_lead(idx.shape)] if hasattr(src, "shape") and src.ndim else src
    if reduce is None:
        out[pos] = vals
        return
    if not hasattr(vals, "shape"):
        vals = array_module(out).full(idx.shape, vals, dtype=out.dtype)
    (add_at if reduce == "add" else _multiply_at)(out, pos, vals)


def _multiply_at(out, pos, vals):
    if type(out) is np.ndarray:
        np.multiply.at(out, pos, vals)
    else:  # CuPy has no multiply.at: do the (rare) product scatter on the host
        host = out.get()
        np.multiply.at(host, tuple(w.get() if hasattr(w, "get") else w for w in pos),
                       vals.get() if hasattr(vals, "get") else vals)
        out[...] = array_module(out).asarray(host)


class Scatter(Primitive):
    """input with values from src (a Tensor or a scalar) written at index along dim."""

    @staticmethod
    def forward(ctx, a, src, *, dim, index, reduce):
        ctx.dim, ctx.index, ctx.reduce = dim, index, reduce
        ctx.src_shape = src._data.shape if type(src) is Tensor else None
        out = a._data.copy()
        _k_scatter(out, dim, index, src._data if type(src) is Tensor else src, reduce)
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gs = ctx.needs_input_grad
        if ctx.reduce == "multiply":
            raise RuntimeError("scatter(): the derivative of reduce='multiply' is not implemented; use "
                               "scatter_reduce(..., reduce='prod')")
        idx = Tensor._make(ctx.index)
        ra = rs = None
        if ga:
            ra = grad if ctx.reduce == "add" else Scatter.apply(grad, 0, dim=ctx.dim, index=ctx.index, reduce=None)
        if gs:
            rs = _pad_to(gather(grad, ctx.dim, idx), ctx.src_shape)
        return ra, rs


def _pad_to(g, shape):
    """g placed in the leading corner of a zero tensor of `shape` (src may be larger than index)."""
    if tuple(g.shape) == tuple(shape):
        return g
    from rtx._tensor.ops.shape import IndexBackward
    return IndexBackward.apply(g, shape=tuple(shape), index=_lead(g.shape))


class ScatterAdd(Primitive):
    @staticmethod
    def forward(ctx, a, src, *, dim, index):
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src._data.shape
        out = a._data.copy()
        _k_scatter(out, dim, index, src._data, "add")
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gs = ctx.needs_input_grad
        rs = _pad_to(Gather.apply(grad, dim=ctx.dim, index=ctx.index), ctx.src_shape) if gs else None
        return (grad if ga else None), rs


def _scatter_args(input, dim, index, src, op):
    d, idx = _gather_args(input, dim, index, op)
    if type(src) is Tensor:
        check_same_device(input, src, op)
        _same_dtype(input, src, op)
        if src._data.ndim != idx.ndim:
            raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as src tensor")
        _check_sizes(input._data.shape, idx.shape, d, op, src._data.shape)
    else:
        _check_sizes(input._data.shape, idx.shape, d, op)
    _check_range(idx, input._data.shape[d] if input._data.ndim else 1, d, op)
    return d, idx


def _scalar(value, op):
    if type(value) is Tensor:
        if value._data.ndim != 0:
            raise RuntimeError(f"{op}(): value must be a 0-dimensional tensor or a number, got a tensor of shape "
                               f"{list(value.shape)}")
        return value.item()
    return value


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """input with src (or the scalar value) written at `index` along dim. reduce='add' or
    'multiply' combines instead of overwriting (the legacy argument)."""
    if src is None and value is None:
        raise TypeError("scatter(): expected a src tensor or a value")
    if src is None:
        src = value
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    if type(src) is not Tensor:
        src = _scalar(src, "scatter")
    d, idx = _scatter_args(input, dim, index, src, "scatter")
    if input._data.ndim == 0:
        return reshape(scatter(_as1d(input), 0, _as1d(index), _as1d(src) if type(src) is Tensor else src,
                               reduce=reduce), ())
    return Scatter.apply(input, src, dim=d, index=idx, reduce=reduce)


def scatter_add(input, dim, index, src):
    """input with src added at `index` along dim (repeated indices accumulate)."""
    _check_tensor(src, "src", "scatter_add")
    d, idx = _scatter_args(input, dim, index, src, "scatter_add")
    if input._data.ndim == 0:
        return reshape(scatter_add(_as1d(input), 0, _as1d(index), _as1d(src)), ())
    return ScatterAdd.apply(input, src, dim=d, index=idx)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _k_scatter_reduce(out, dim, idx, src, reduce, include_self):
    xp = array_module(out)
    pos = _scatter_dim_index(idx, dim)
    vals = src[_lead(idx.shape)]
    if not include_self:
        if reduce in ("sum", "mean"):
            init = 0
        elif reduce == "prod":
            init = 1
        elif out.dtype.kind == "f":
            init = -np.inf if reduce == "amax" else np.inf
        elif out.dtype.kind == "b":
            init = reduce != "amax"
        else:
            info = np.iinfo(out.dtype)
            init = info.min if reduce == "amax" else info.max
        out[pos] = init
    if reduce in ("sum", "mean"):
        add_at(out, pos, vals)
    elif reduce == "prod":
        _multiply_at(out, pos, vals)
    elif type(out) is np.ndarray:
        (np.maximum if reduce == "amax" else np.minimum).at(out, pos, vals)
    else:
        import cupyx
        (cupyx.scatter_max if reduce == "amax" else cupyx.scatter_min)(out, pos, vals)
    if reduce == "mean":
        count = xp.zeros(out.shape, dtype=out.dtype)
        add_at(count, pos, xp.ones(idx.shape, dtype=out.dtype))
        count += 1 if include_self else 0
        count[count == 0] = 1
        if out.dtype.kind in "iub":
            out[...] = xp.floor_divide(out, count)
        else:
            out /= count


class ScatterReduce(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a, src, *, dim, index, reduce, include_self):
        ctx.save_for_backward(a, src)
        ctx.dim, ctx.index, ctx.reduce, ctx.include_self = dim, index, reduce, include_self
        out = a._data.copy()
        _k_scatter_reduce(out, dim, index, src._data, reduce, include_self)
        return out

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's scatter_reduce_backward (derivatives.yaml), in Tensor ops.
        self, src = ctx.saved_tensors
        dim, reduce, include_self = ctx.dim, ctx.reduce, ctx.include_self
        index = Tensor._make(ctx.index)
        src_sub = _lead_slice(src, ctx.index.shape)
        if reduce == "sum":
            g_self, g_src = grad, gather(grad, dim, index)
        elif reduce == "prod":
            result = ctx.output()
            masked_self = masked_fill(self, self == 0, 1)
            masked_self_result = scatter_reduce(masked_self, dim, index, src, reduce, include_self=include_self)
            g_self = grad * masked_self_result / masked_self
            src_zero = src_sub == 0
            n_zeros = gather(scatter_add(_zeros_like(self), dim, index, src_zero.to(self.dtype)), dim, index)
            single_zero = src_zero & (n_zeros == 1)
            masked_src = _pad_to(masked_fill(src_sub, single_zero, 1), tuple(src.shape))
            masked_src_result = scatter_reduce(self, dim, index, masked_src, reduce, include_self=include_self)
            g_src1 = gather(grad * masked_src_result, dim, index)
            g_src = where(single_zero, g_src1,
                          gather(grad * result, dim, index) / masked_fill(src_sub, src_zero, 1))
        elif reduce == "mean":
            ones = _zeros_like(self) + 1
            n = scatter_add(ones if include_self else _zeros_like(self), dim, index, _zeros_like(src_sub) + 1)
            n = masked_fill(n, n == 0, 1)
            g_self = grad / n
            g_src = gather(g_self, dim, index)
        else:  # amax / amin: ties share the gradient evenly
            result = ctx.output()
            value = gather(result, dim, index)
            self_is_result = (self == result).to(grad.dtype)
            src_is_result = (src_sub == value).to(grad.dtype)
            if not include_self:
                self_is_result = scatter(self_is_result, dim, index, 0)
            n = scatter_add(self_is_result, dim, index, src_is_result)
            g_dist = grad / n
            g_self = self_is_result * g_dist
            g_src = src_is_result * gather(g_dist, dim, index)
        if not include_self:
            g_self = scatter(g_self, dim, index, 0)
        return g_self, _pad_to(g_src, tuple(src.shape))


def _zeros_like(t):
    return Tensor._make(array_module(t._data).zeros(t._data.shape, dtype=t._data.dtype))


def _lead_slice(t, shape):
    if tuple(t.shape) == tuple(shape):
        return t
    return getitem(t, _lead(shape))


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Combine src into input at `index` along dim with reduce in sum, prod, mean, amax, amin;
    include_self=False leaves the scattered-to entries of input out of the reduction."""
    _check_tensor(src, "src", "scatter_reduce")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, idx = _scatter_args(input, dim, index, src, "scatter_reduce")
    if input._data.ndim == 0:
        return reshape(scatter_reduce(_as1d(input), 0, _as1d(index), _as1d(src), reduce,
                                      include_self=include_self), ())
    return ScatterReduce.apply(input, src, dim=d, index=idx, reduce=reduce, include_self=bool(include_self))


# ---- index_select, index_add, index_copy, index_fill ---------------------------------------------


def _dim_index(input, dim, index, op, allow_int32=True):
    _check_tensor(input, "input", op)
    idx = _long_index(index, op, allow_int32)
    check_same_device(input, index, op)
    if idx.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got a tensor of shape {list(index.shape)}")
    idx = idx.reshape(-1)
    nd = input._data.ndim
    d = wrap_dim(dim, max(nd, 1), op)
    size = input._data.shape[d] if nd else 1
    _check_range(idx, size, d, op)
    return d, idx


def _at_dim(d, idx):
    return (slice(None),) * d + (idx,)


class IndexSelect(Primitive):
    @staticmethod
    def forward(ctx, a, *, dim, index):
        ctx.shape, ctx.dim, ctx.index = a._data.shape, dim, index
        return array_module(a._data).take(a._data, index, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        zeros = Tensor._make(array_module(grad._data).zeros(ctx.shape, dtype=grad._data.dtype))
        return IndexAdd.apply(zeros, grad, dim=ctx.dim, index=ctx.index, alpha=1)


def index_select(input, dim, index, *, out=None):
    d, idx = _dim_index(input, dim, index, "index_select")
    if input._data.ndim == 0:
        return _out(reshape(IndexSelect.apply(_as1d(input), dim=0, index=idx), (idx.size,) if index.ndim else ()),
                    out)
    return _out(IndexSelect.apply(input, dim=d, index=idx), out)


def _check_source(input, source, d, idx, op):
    _check_tensor(source, "source", op)
    check_same_device(input, source, op)
    want = list(input.shape)
    if want:
        want[d] = idx.size
    got = list(source.shape)
    if got != want and not (source._data.size == idx.size and len(want) <= 1):
        raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes: expected source of "
                           f"shape {want} (self {list(input.shape)} with dimension {d} of size {idx.size}), "
                           f"got {got}")


def _k_index_add(out, d, idx, src, alpha):
    if out.ndim == 0:
        out[...] += src.reshape(()) * alpha if idx.size else 0
        return
    add_at(out, _at_dim(d, idx), src * alpha if alpha != 1 else src)


class IndexAdd(Primitive):
    @staticmethod
    def forward(ctx, a, source, *, dim, index, alpha):
        ctx.dim, ctx.index, ctx.alpha = dim, index, alpha
        out = a._data.copy()
        _k_index_add(out, dim, index, source._data, alpha)
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gs = ctx.needs_input_grad
        rs = None
        if gs:
            rs = IndexSelect.apply(grad, dim=ctx.dim, index=ctx.index)
            rs = rs * ctx.alpha if ctx.alpha != 1 else rs
        return (grad if ga else None), rs


def _index_add_args(input, dim, index, source, op):
    d, idx = _dim_index(input, dim, index, op)
    _check_source(input, source, d, idx, op)
    if input._data.dtype != source._data.dtype:
        raise RuntimeError(f"{op}(): self ({input.dtype}) and source ({source.dtype}) must have the same scalar "
                           "type")
    return d, idx


def index_add(input, dim, index, source, *, alpha=1):
    """input with alpha * source added at the positions `index` along dim (repeats accumulate)."""
    d, idx = _index_add_args(input, dim, index, source, "index_add")
    source = source if source._data.ndim == input._data.ndim else reshape(source, _slice_shape(input, d, idx))
    return IndexAdd.apply(input, source, dim=d, index=idx, alpha=alpha)


def _slice_shape(input, d, idx):
    s = list(input.shape)
    if s:
        s[d] = idx.size
    return tuple(s)


def _k_index_copy(out, d, idx, src):
    if out.ndim == 0:
        if idx.size:
            out[...] = src.reshape(())
        return
    out[_at_dim(d, idx)] = src


class IndexCopy(Primitive):
    @staticmethod
    def forward(ctx, a, source, *, dim, index):
        ctx.dim, ctx.index = dim, index
        out = a._data.copy()
        _k_index_copy(out, dim, index, source._data)
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gs = ctx.needs_input_grad
        ra = IndexFill.apply(grad, 0, dim=ctx.dim, index=ctx.index) if ga else None
        rs = IndexSelect.apply(grad, dim=ctx.dim, index=ctx.index) if gs else None
        return ra, rs


def index_copy(input, dim, index, source):
    """input with the slices `index` along dim replaced by source's slices."""
    d, idx = _dim_index(input, dim, index, "index_copy", allow_int32=False)
    _check_source(input, source, d, idx, "index_copy")
    _same_dtype(input, source, "index_copy", "source")
    source = source if source._data.ndim == input._data.ndim else reshape(source, _slice_shape(input, d, idx))
    return IndexCopy.apply(input, source, dim=d, index=idx)


def _k_index_fill(out, d, idx, value):
    if out.ndim == 0:
        if idx.size:
            out[...] = value
        return
    out[_at_dim(d, idx)] = value


class IndexFill(Primitive):
    @staticmethod
    def forward(ctx, a, value, *, dim, index):
        ctx.dim, ctx.index = dim, index
        out = a._data.copy()
        _k_index_fill(out, dim, index, value._data if type(value) is Tensor else value)
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gv = ctx.needs_input_grad
        ra = IndexFill.apply(grad, 0, dim=ctx.dim, index=ctx.index) if ga else None
        rv = IndexSelect.apply(grad, dim=ctx.dim, index=ctx.index).sum() if gv else None
        return ra, rv


def _fill_value(input, value, op):
    if type(value) is Tensor:
        if value._data.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        if value.requires_grad and value.device == input.device:
            return cast(value, input._data.dtype)
        return value.item()
    if not isinstance(value, (bool, int, float, complex, np.generic)):
        raise TypeError(f"{op}(): value must be a number or a 0-dimensional tensor, not {type(value).__name__}")
    return value


def index_fill(input, dim, index, value):
    """input with the slices `index` along dim set to value (a number or a 0-d tensor)."""
    d, idx = _dim_index(input, dim, index, "index_fill", allow_int32=False)
    return IndexFill.apply(input, _fill_value(input, value, "index_fill_"), dim=d, index=idx)


# ---- index_put -----------------------------------------------------------------------------------


def _put_index(input, indices, op):
    if type(indices) is Tensor or not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' must be a tuple of Tensors")
    out = []
    for i, t in enumerate(indices):
        if t is None:
            out.append(slice(None))
            continue
        _check_tensor(t, f"indices[{i}]", op)
        if t._data.dtype.kind not in "iub":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {t.dtype}")
        check_same_device(input, t, op)
        out.append(t._data)
    return tuple(out)


def _k_index_put(out, index, values, accumulate):
    try:
        if accumulate:
            xp = array_module(out)
            add_at(out, index, xp.broadcast_to(values, out[index].shape) if hasattr(values, "shape") else values)
        else:
            out[index] = values
    except IndexError as e:
        raise IndexError(f"index_put(): {str(e).replace('axis', 'dimension')}") from None
    except ValueError as e:
        raise RuntimeError(f"shape mismatch: values cannot be broadcast to the indexed shape ({e})") from None


class IndexPut(Primitive):
    @staticmethod
    def forward(ctx, a, values, *, index, accumulate):
        ctx.index, ctx.accumulate, ctx.v_shape = index, accumulate, values._data.shape
        out = a._data.copy()
        _k_index_put(out, index, values._data, accumulate)
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gv = ctx.needs_input_grad
        ra = rv = None
        if ga:
            ra = grad if ctx.accumulate else _inplace.ZeroAt.apply(grad, index=ctx.index)
        if gv:
            rv = _sum_to_value(getitem(grad, ctx.index), ctx.v_shape)
        return ra, rv


def _sum_to_value(g, shape):
    """Reduce a gradient of the indexed region to the shape of the (broadcast) value."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    if len(shape) > g.ndim:  # the value had extra leading 1s that assignment dropped
        return reshape(g, shape)
    return sum_to(g, shape)


def index_put(input, indices, values, accumulate=False):
    """input with input[indices] = values (or += with accumulate=True, repeats accumulating)."""
    idx = _put_index(input, indices, "index_put")
    values = _value_tensor(input, values, "index_put")
    return IndexPut.apply(input, values, index=idx, accumulate=bool(accumulate))


def _value_tensor(input, values, op):
    if type(values) is not Tensor:
        values = to_tensor(values, like=input, dtype=input.dtype)
    check_same_device(input, values, op)
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(f"{op}(): Index put requires the source and destination dtypes match, got "
                           f"{input.dtype} for the destination and {values.dtype} for the source.")
    return values


# ---- masked ops ----------------------------------------------------------------------------------


def _mask(input, mask, op):
    _check_tensor(mask, "mask", op)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {mask.dtype}")
    check_same_device(input, mask, op)
    return mask


class MaskedFill(Primitive):
    @staticmethod
    def forward(ctx, a, mask, value):
        ctx.shape, ctx.mask = a._data.shape, mask
        xp = array_module(a._data)
        v = value._data if type(value) is Tensor else value
        return xp.where(mask._data, xp.asarray(v, dtype=a._data.dtype), a._data)

    @staticmethod
    def backward(ctx, grad, *_):
        ga, _, gv = ctx.needs_input_grad
        mask = ctx.mask
        ra = sum_to(masked_fill(grad, mask, 0), ctx.shape) if ga else None
        rv = masked_fill(grad, ~mask, 0).sum() if gv else None
        return ra, None, rv


def masked_fill(input, mask, value):
    """input with value (a number or a 0-d tensor) where mask is True; mask broadcasts."""
    _check_tensor(input, "input", "masked_fill")
    mask = _mask(input, mask, "masked_fill_")
    return MaskedFill.apply(input, mask, _fill_value(input, value, "masked_fill_"))


def _broadcast(input, mask, op):
    try:
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    except ValueError:
        raise RuntimeError(f"{op}: The size of tensor a ({list(input.shape)}) must match the size of tensor b "
                           f"({list(mask.shape)}) (they must be broadcastable)") from None
    return shape


def masked_select(input, mask):
    """The elements of input where mask is True, as a 1-D tensor (both broadcast first)."""
    _check_tensor(input, "input", "masked_select")
    mask = _mask(input, mask, "masked_select")
    shape = _broadcast(input, mask, "masked_select")
    return getitem(expand(input, shape), expand(mask, shape))


class MaskedScatter(Primitive):
    @staticmethod
    def forward(ctx, a, mask, source):
        ctx.shape, ctx.mask = a._data.shape, mask
        xp = array_module(a._data)
        m = xp.broadcast_to(mask._data, a._data.shape)
        n = int(m.sum())
        if source._data.size < n:
            raise RuntimeError(f"masked_scatter: Number of elements of source ({source._data.size}) < number of "
                               f"ones in mask ({n})")
        ctx.src_shape, ctx.n = source._data.shape, n
        out = a._data.copy()
        out[m] = source._data.reshape(-1)[:n]
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, _, gs = ctx.needs_input_grad
        ra = masked_fill(grad, ctx.mask, 0) if ga else None
        rs = None
        if gs:
            from rtx._tensor.ops.shape import cat
            sel = masked_select(grad, ctx.mask)
            total = 1
            for s in ctx.src_shape:
                total *= s
            if total > ctx.n:
                sel = cat([sel, Tensor._make(array_module(grad._data).zeros(total - ctx.n, dtype=grad._data.dtype))])
            rs = reshape(sel, ctx.src_shape)
        return ra, None, rs


def masked_scatter(input, mask, source):
    """input with the leading elements of source copied, in order, where mask is True."""
    _check_tensor(input, "input", "masked_scatter")
    _check_tensor(source, "source", "masked_scatter")
    mask = _mask(input, mask, "masked_scatter_")
    _same_dtype(input, source, "masked_scatter", "source")
    shape = _broadcast(input, mask, "masked_scatter")
    return MaskedScatter.apply(expand(input, shape), mask, source)


# ---- take, take_along_dim, put -------------------------------------------------------------------


def take(input, index):
    """input treated as 1-D, read at index; the result has index's shape."""
    _check_tensor(input, "input", "take")
    idx = _long_index(index, "take")
    check_same_device(input, index, "take")
    n = input._data.size
    if idx.size and bool(((idx < -n) | (idx >= n)).any()):
        bad = idx[(idx < -n) | (idx >= n)].ravel()
        raise IndexError(f"take(): out of range: tried to access index {int(bad[0])} on a tensor of {n} elements.")
    return getitem(reshape(input, -1), index)


def take_along_dim(input, indices, dim=None, *, out=None):
    """Values along dim picked by indices, input and indices broadcast in the other dims
    (np.take_along_axis); dim=None works on the flattened input."""
    _long_index(indices, "take_along_dim")
    if dim is None:
        return _out(gather(reshape(input, -1), 0, reshape(indices, -1)), out)
    nd = input._data.ndim
    if indices._data.ndim != nd:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {nd} dimensions for input, and {indices._data.ndim} dimensions "
                           "for indices")
    d = wrap_dim(dim, nd, "take_along_dim")
    si, sx = list(input.shape), list(indices.shape)
    si[d] = sx[d] = 1
    try:
        common = list(np.broadcast_shapes(tuple(si), tuple(sx)))
    except ValueError:
        raise RuntimeError(f"take_along_dim(): input {list(input.shape)} and indices {list(indices.shape)} are not "
                           f"broadcastable apart from dimension {d}") from None
    ti, tx = list(common), list(common)
    ti[d], tx[d] = input._data.shape[d], indices._data.shape[d]
    return _out(gather(expand(input, tuple(ti)), d, expand(indices, tuple(tx))), out)


def put(input, index, source, accumulate=False):
    """input (as 1-D) with source written (or added) at index; the result has input's shape."""
    _long_index(index, "put")
    flat = reshape(input, -1)
    n = flat._data.size
    idx = index._data
    if idx.size and bool(((idx < -n) | (idx >= n)).any()):
        bad = idx[(idx < -n) | (idx >= n)].ravel()
        raise IndexError(f"put(): out of range: tried to access index {int(bad[0])} on a tensor of {n} elements.")
    if source._data.size != idx.size:
        raise RuntimeError(f"put(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source._data.size}, index.numel() = {idx.size}")
    return reshape(index_put(flat, (reshape(index, -1),), reshape(source, -1), accumulate), tuple(input.shape))


# ---- nonzero, argwhere ---------------------------------------------------------------------


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    arr = input._data
    xp = array_module(arr)
    if as_tuple:
        a = arr.reshape(1) if arr.ndim == 0 else arr
        return tuple(Tensor._make(i.astype(np.int64)) for i in xp.nonzero(a))
    return _out(Tensor._make(xp.argwhere(arr).astype(np.int64)), out)


def argwhere(input):
    return nonzero(input)


# ---- in-place variants ----------------------------------------------------------------------------


def _record(self, *others):
    return _inplace._recording(self) or any(_inplace._recording(self, o) for o in others)


def _write(self, kernel):
    """Run `kernel(array)` on self's own memory (the no-graph path of an in-place op)."""
    self._check_inplace()
    try:
        kernel(self._data)
    except ValueError as e:
        if "read-only" in str(e):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the "
                               "operation.") from None
        raise
    self._vc[0] += 1
    return self


def _source(self):
    return _inplace._old_self(self)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    if src is None:
        src = value
    if _record(self, src):
        return _inplace.write_result(self, scatter(_source(self), dim, index, src, reduce=reduce))
    if type(src) is not Tensor:
        src = _scalar(src, "scatter_")
    d, idx = _scatter_args(self, dim, index, src, "scatter_")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    if self._data.ndim == 0:
        return _inplace.write_result(self, scatter(self, dim, index, src, reduce=reduce))
    return _write(self, lambda out: _k_scatter(out, d, idx, src._data if type(src) is Tensor else src, reduce))


def scatter_add_(self, dim, index, src):
    if _record(self, src) or self._data.ndim == 0:
        return _inplace.write_result(self, scatter_add(_source(self) if _record(self, src) else self,
                                                       dim, index, src))
    d, idx = _scatter_args(self, dim, index, src, "scatter_add_")
    return _write(self, lambda out: _k_scatter(out, d, idx, src._data, "add"))


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    if _record(self, src) or self._data.ndim == 0:
        return _inplace.write_result(self, scatter_reduce(_source(self) if _record(self, src) else self,
                                                          dim, index, src, reduce, include_self=include_self))
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, idx = _scatter_args(self, dim, index, src, "scatter_reduce_")
    return _write(self, lambda out: _k_scatter_reduce(out, d, idx, src._data, reduce, bool(include_self)))


def index_add_(self, dim, index, source, *, alpha=1):
    if _record(self, source):
        return _inplace.write_result(self, index_add(_source(self), dim, index, source, alpha=alpha))
    d, idx = _index_add_args(self, dim, index, source, "index_add_")
    src = source._data.reshape(_slice_shape(self, d, idx))
    return _write(self, lambda out: _k_index_add(out, d, idx, src, alpha))


def index_copy_(self, dim, index, source):
    if _record(self, source):
        return _inplace.write_result(self, index_copy(_source(self), dim, index, source))
    d, idx = _dim_index(self, dim, index, "index_copy_", allow_int32=False)
    _check_source(self, source, d, idx, "index_copy_")
    _same_dtype(self, source, "index_copy_", "source")
    src = source._data.reshape(_slice_shape(self, d, idx))
    return _write(self, lambda out: _k_index_copy(out, d, idx, src))


def index_fill_(self, dim, index, value):
    if _record(self, value):
        return _inplace.write_result(self, index_fill(_source(self), dim, index, value))
    d, idx = _dim_index(self, dim, index, "index_fill_", allow_int32=False)
    v = _fill_value(self, value, "index_fill_")
    return _write(self, lambda out: _k_index_fill(out, d, idx, v))


def index_put_(self, indices, values, accumulate=False):
    if _record(self, values):
        return _inplace.write_result(self, index_put(_source(self), indices, values, accumulate))
    idx = _put_index(self, indices, "index_put_")
    v = _value_tensor(self, values, "index_put_")._data
    return _write(self, lambda out: _k_index_put(out, idx, v, bool(accumulate)))


def masked_fill_(self, mask, value):
    if _record(self, value):
        return _inplace.write_result(self, masked_fill(_source(self), mask, value))
    mask = _mask(self, mask, "masked_fill_")
    if _broadcast(self, mask, "masked_fill_") != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(_broadcast(self, mask, 'masked_fill_'))}")
    v = _fill_value(self, value, "masked_fill_")
    m = array_module(self._data).broadcast_to(mask._data, self._data.shape)
    return _write(self, lambda out: out.__setitem__(m, v))


def masked_scatter_(self, mask, source):
    src = _source(self) if _record(self, source) else self
    return _inplace.write_result(self, masked_scatter(src, mask, source))


def put_(self, index, source, accumulate=False):
    src = _source(self) if _record(self, source) else self
    return _inplace.write_result(self, put(src, index, source, accumulate))


__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
           "index_fill", "index_put", "index_put_", "masked_fill", "masked_select", "masked_scatter", "take",
           "take_along_dim", "put", "nonzero", "argwhere"]
# Functions that are also Tensor methods (methods.py attaches them).
METHODS = [n for n in __all__ if n != "index_put_"] + [
    "scatter_", "scatter_add_", "scatter_reduce_", "index_add_", "index_copy_", "index_fill_", "index_put_",
    "masked_fill_", "masked_scatter_", "put_"]
