"""Shape and view ops: view/reshape, permute/transpose, expand, squeeze/unsqueeze, flatten,
indexing (__getitem__), cat/stack, narrow, clone/contiguous. Views share memory with their
base as in PyTorch."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import check_same_device, dims, wrap_dim
from rtx._tensor.tensor import Tensor


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer(shape, numel, op):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred, got shape {tuple(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"{op}: invalid shape dimension {s} in {tuple(shape)}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


class Reshape(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, *, shape):
        ctx.in_shape = a._data.shape
        return a._data.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


def reshape(input, *shape):
    shape = _infer(_shape_arg(shape), input._data.size, "reshape")
    if shape == input._data.shape:
        return Reshape.apply(input, shape=shape)
    return Reshape.apply(input, shape=shape)


def view(input, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        from rtx._tensor.ops.creation import _as_np_dtype
        return view_dtype(input, _as_np_dtype(shape[0]))
    shape = _infer(_shape_arg(shape), input._data.size, "view")
    out = Reshape.apply(input, shape=shape)
    if input._data.size and not np.may_share_memory(out._data, input._data):
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (input shape "
                           f"{tuple(input.shape)}, strides {input.stride()}, requested {shape}); use .reshape(...)")
    return out


def view_dtype(input, np_dtype):
    out = Tensor._make(input._data.view(np_dtype))
    out._vc, out._base = input._vc, input if input._base is None else input._base
    return out


def view_as(input, other):
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    return reshape(input, tuple(other.shape))


class Permute(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, *, axes):
        ctx.axes = axes
        return a._data.transpose(axes)

    @staticmethod
    def backward(ctx, grad):
        return grad.permute(tuple(np.argsort(ctx.axes).tolist()))


def permute(input, *dims_):
    d = _shape_arg(dims_)
    nd = input._data.ndim
    if len(d) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal "
                           f"to len(dims) = {len(d)}")
    axes = tuple(wrap_dim(x, nd, "permute") for x in d)
    if len(set(axes)) != nd:
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {d}")
    return Permute.apply(input, axes=axes)


def transpose(input, dim0, dim1):
    nd = input._data.ndim
    if nd == 0:
        return input.view_as(input) if False else Permute.apply(input, axes=())
    a, b = wrap_dim(dim0, nd, "transpose"), wrap_dim(dim1, nd, "transpose")
    axes = list(range(nd))
    axes[a], axes[b] = axes[b], axes[a]
    return Permute.apply(input, axes=tuple(axes))


swapaxes = swapdims = transpose


def t(input):
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    return transpose(input, 0, 1) if input._data.ndim == 2 else Permute.apply(input, axes=tuple(range(input.ndim)))


def movedim(input, source, destination):
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    nd = input._data.ndim
    src = [wrap_dim(s, nd, "movedim") for s in src]
    dst = [wrap_dim(s, nd, "movedim") for s in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return Permute.apply(input, axes=tuple(order))


moveaxis = movedim


class Expand(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, *, shape):
        ctx.in_shape = a._data.shape
        xp = np if type(a._data) is np.ndarray else __import__("cupy")
        return xp.broadcast_to(a._data, shape)

    @staticmethod
    def backward(ctx, grad):
        from rtx._tensor.ops._util import sum_to
        return sum_to(grad, ctx.in_shape)


def expand(input, *sizes):
    sizes = _shape_arg(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension {i}")
            target.append(s)
        else:
            cur = shape[i - lead]
            if s == -1:
                target.append(cur)
            elif cur == 1 or cur == s:
                target.append(s)
            else:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                                   f"{list(shape)}")
    target = tuple(target)
    if target == shape:
        return input
    return Expand.apply(input, shape=target)


def expand_as(input, other):
    return expand(input, tuple(other.shape))


def broadcast_to(input, shape):
    return expand(input, tuple(shape))


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


def squeeze(input, dim=None):
    shape = input._data.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        axes = dims(dim, input._data.ndim, "squeeze") if input._data.ndim else ()
        new = tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1))
    return Reshape.apply(input, shape=new)


def unsqueeze(input, dim):
    nd = input._data.ndim
    if not -nd - 1 <= dim <= nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd - 1}, {nd}], but got {dim})")
    if dim < 0:
        dim += nd + 1
    shape = input._data.shape
    return Reshape.apply(input, shape=shape[:dim] + (1,) + shape[dim:])


def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    if nd == 0:
        return Reshape.apply(input, shape=(1,))
    s, e = wrap_dim(start_dim, nd, "flatten"), wrap_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input._data.shape
    n = 1
    for x in shape[s:e + 1]:
        n *= x
    return Reshape.apply(input, shape=shape[:s] + (n,) + shape[e + 1:])


def unflatten(input, dim, sizes):
    nd = input._data.ndim
    d = wrap_dim(dim, nd, "unflatten")
    shape = input._data.shape
    sizes = _infer(tuple(sizes), shape[d], "unflatten")
    return Reshape.apply(input, shape=shape[:d] + sizes + shape[d + 1:])


def ravel(input):
    return reshape(input, -1)


# ---- indexing ------------------------------------------------------------------------------


def _index_arg(idx):
    """Turn Tensors inside an index into arrays (bool masks and integer index tensors)."""
    if type(idx) is tuple:
        return tuple(_index_arg(i) for i in idx)
    if type(idx) is Tensor:
        if idx._data.dtype.kind not in "iub":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {idx.dtype}")
        return idx._data
    if isinstance(idx, list):
        return np.asarray([_index_arg(i) if type(i) is Tensor else i for i in idx]) \
            if not any(isinstance(i, (slice, type(None), type(Ellipsis))) for i in idx) else tuple(idx)
    return idx


def _is_basic(idx):
    items = idx if type(idx) is tuple else (idx,)
    return all(isinstance(i, (int, slice, type(None), type(Ellipsis))) and not isinstance(i, bool) for i in items)


class GetItem(Primitive):
    @staticmethod
    def forward(ctx, a, *, index, basic):
        ctx.shape, ctx.index, ctx.dtype = a._data.shape, index, a._data.dtype
        try:
            return a._data[index]
        except IndexError as e:
            raise IndexError(f"{e} (indexing a tensor of shape {tuple(a._data.shape)})") from None

    @staticmethod
    def backward(ctx, grad):
        return IndexBackward.apply(grad, shape=ctx.shape, index=ctx.index)


class IndexBackward(Primitive):
    """Scatter-add the gradient of a[index] back into a zero tensor of a's shape."""

    @staticmethod
    def forward(ctx, g, *, shape, index):
        ctx.index = index
        xp = np if type(g._data) is np.ndarray else __import__("cupy")
        out = xp.zeros(shape, dtype=g._data.dtype)
        if _is_basic(index):
            out[index] = g._data
        else:
            xp.add.at(out, index, g._data)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.index]


def getitem(input, index):
    idx = _index_arg(index)
    basic = _is_basic(idx)
    out = GetItem.apply(input, index=idx, basic=basic)
    if basic:
        out._vc = input._vc
        out._base = input if input._base is None else input._base
    return out


# ---- joining and splitting ----------------------------------------------------------------


class Cat(Primitive):
    @staticmethod
    def forward(ctx, *tensors, axis):
        ctx.axis = axis
        ctx.sizes = [t._data.shape[axis] for t in tensors]
        xp = np if type(tensors[0]._data) is np.ndarray else __import__("cupy")
        return xp.concatenate([t._data for t in tensors], axis=axis)

    @staticmethod
    def backward(ctx, grad):
        out, start = [], 0
        for n in ctx.sizes:
            out.append(grad.narrow(ctx.axis, start, n))
            start += n
        return tuple(out)


def _joinable(tensors, op):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if type(t) is not Tensor:
            raise TypeError(f"{op}(): expected a sequence of Tensors, but element {i} is {type(t).__name__}")
    first = tensors[0]
    for t in tensors[1:]:
        check_same_device(first, t, op)
    if len({t._data.dtype for t in tensors}) > 1:
        from rtx.runtime.dtypes import result_type_of
        from rtx._tensor.ops._util import cast
        target = result_type_of([t.dtype for t in tensors], (), ()).np
        tensors = [cast(t, target) for t in tensors]
    return tensors


def cat(tensors, dim=0, *, out=None):
    tensors = _joinable(tensors, "cat")
    # PyTorch skips 1-D empty tensors in cat (legacy behaviour many codes rely on)
    tensors = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or tensors[:1]
    nd = tensors[0]._data.ndim
    axis = wrap_dim(dim, nd, "cat")
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        s = t._data.shape
        if len(s) != nd or any(a != b for j, (a, b) in enumerate(zip(s, ref)) if j != axis):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. Expected size "
                               f"{list(ref)} but got size {list(s)} for tensor number {i} in the list.")
    result = Cat.apply(*tensors, axis=axis)
    if out is not None:
        out.copy_(result)
        return out
    return result


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = _joinable(tensors, "stack")
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                               f"{list(t._data.shape)} at entry {i}")
    nd = len(ref) + 1
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    return cat([unsqueeze(t, dim) for t in tensors], dim, out=out)


def narrow(input, dim, start, length):
    nd = input._data.ndim
    d = wrap_dim(dim, nd, "narrow")
    size = input._data.shape[d]
    if start < 0:
        start += size
    if not (0 <= start and start + length <= size and length >= 0):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    idx = (slice(None),) * d + (slice(start, start + length),)
    return getitem(input, idx)


class Clone(Primitive):
    @staticmethod
    def forward(ctx, a):
        return a._data.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(input, *, memory_format=None):
    return Clone.apply(input)


def contiguous(input, memory_format=None):
    if input._data.flags.c_contiguous:
        return input
    return Clone.apply(input)


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['reshape', 'view', 'view_as', 'reshape_as', 'permute', 'transpose', 'swapaxes', 'swapdims', 't', 'movedim', 'moveaxis', 'expand', 'expand_as', 'broadcast_to', 'squeeze', 'unsqueeze', 'flatten', 'unflatten', 'ravel', 'narrow', 'clone', 'contiguous']
