"""Shape and view ops: view/reshape, permute/transpose, expand, squeeze/unsqueeze, flatten,
indexing (__getitem__), diagonal, select, unfold, split/chunk/unbind, cat/stack and friends,
repeat/tile, flip/roll, tril/triu, meshgrid, clone/contiguous.

Views share memory, the version counter and the base with their input, as in PyTorch: a write
through a view is seen by the base and vice versa. Ops that PyTorch documents as copies
(flip, roll, repeat, tril, ...) return fresh arrays even where NumPy would return a view."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive, _active, _share
from rtx._tensor.ops._util import check_same_device, dims, sum_to, wrap_dim
from rtx._tensor.tensor import Tensor
from rtx.autograd.grad_mode import _state
from rtx.runtime.devices import array_module

_make = Tensor._make


def _plain(input):
    """True when no graph is recorded for input and no recording hook follows this thread: a view
    op may then build its result directly (Primitive.apply's no-graph path, inline)."""
    return not _active[0] and not (input.requires_grad and _state.enabled)


def _view_result(input, arr):
    out = _make(arr)
    _share(out, input)
    return out


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    for s in shape:
        if type(s) is not int:  # sizes given as NumPy ints or 0-d tensors (rare): convert them all
            return tuple(int(s) for s in shape)
    return tuple(shape)


def _infer(shape, numel, op):
    """shape with its -1 filled in, checked against numel (PyTorch's errors)."""
    # The common forms first (every size given, or one -1), in one pass and no allocation.
    known, free = 1, 0
    for s in shape:
        if s >= 0:
            known *= s
        elif s == -1:
            free += 1
        else:
            free = 2  # an invalid size: the general path below says which
            break
    if free == 0 and known == numel:
        return shape
    if free == 1 and known and numel % known == 0:
        return tuple(numel // known if s == -1 else s for s in shape)
    return _infer_checked(shape, numel, op)


def _infer_checked(shape, numel, op):
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


def _view_strides(shape, strides, new_shape):
    """Strides that let `new_shape` view memory laid out as (shape, strides), or None when the
    reshape must copy (PyTorch's computeStride: a group of old dims can be merged or split only
    where it is contiguous in itself)."""
    numel = 1
    for s in shape:
        numel *= s
    if numel <= 1 or not shape:
        return True
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    return new_strides if view_d == -1 else None


class Reshape(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, *, shape):
        ctx.in_shape = a._data.shape
        arr = a._data
        # A C-contiguous array always reshapes to a view; only other layouts need the stride walk.
        if arr.flags.c_contiguous or _view_strides(arr.shape, arr.strides, shape) is not None:
            return arr.reshape(shape)
        # A copy, made into a fresh array (NumPy's copying reshape returns an array with a .base,
        # which would wrongly make the result share the input's version counter).
        out = array_module(arr).empty(shape, dtype=arr.dtype)
        out.reshape(arr.shape)[...] = arr
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


def reshape(input, *shape):
    """A view when the memory layout allows it, else a copy (as torch.reshape)."""
    shape = _infer(_shape_arg(shape), input._data.size, "reshape")
    if input._data.flags.c_contiguous and _plain(input):
        return _view_result(input, input._data.reshape(shape))
    return Reshape.apply(input, shape=shape)


def view(input, *shape):
    if len(shape) == 1 and type(shape[0]) is not int and not isinstance(shape[0], (tuple, list, np.integer)):
        from rtx._tensor.ops.creation import _as_np_dtype
        return view_dtype(input, _as_np_dtype(shape[0]))
    shape = _infer(_shape_arg(shape), input._data.size, "view")
    arr = input._data
    if arr.flags.c_contiguous:
        if _plain(input):
            return _view_result(input, arr.reshape(shape))
    elif _view_strides(arr.shape, arr.strides, shape) is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                           f"(input shape {list(input.shape)}, stride {list(input.stride())}, requested "
                           f"{list(shape)})")
    return Reshape.apply(input, shape=shape)


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
    if _plain(input):
        return _view_result(input, input._data.transpose(axes))
    return Permute.apply(input, axes=axes)


def transpose(input, dim0, dim1):
    nd = input._data.ndim
    if nd == 0:
        return Permute.apply(input, axes=())
    a, b = wrap_dim(dim0, nd, "transpose"), wrap_dim(dim1, nd, "transpose")
    axes = list(range(nd))
    axes[a], axes[b] = axes[b], axes[a]
    if _plain(input):
        return _view_result(input, input._data.transpose(axes))
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
        return _broadcast(a._data, shape)

    @staticmethod
    def backward(ctx, grad):
        return sum_to(grad, ctx.in_shape)


def _broadcast(arr, shape):
    """arr broadcast to shape: a read-only view (PyTorch also refuses writes into expanded memory)."""
    if type(arr) is np.ndarray and arr.flags.c_contiguous and arr.size and arr.dtype.kind in "biufc":
        # The same view as np.broadcast_to, built directly: that function's checks and iterator
        # cost ~2.4 us against ~0.7 here. A C-contiguous array's buffer starts at its first
        # element, so its own strides apply, and 0 where a dim is broadcast.
        lead = len(shape) - arr.ndim
        strides = (0,) * lead + tuple(st if n == m else 0 for n, m, st in zip(arr.shape, shape[lead:], arr.strides))
        out = np.ndarray(shape, arr.dtype, arr, 0, strides)
        out.flags.writeable = False
        return out
    return array_module(arr).broadcast_to(arr, shape)


def expand(input, *sizes):
    sizes = _shape_arg(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    for i in range(lead):
        if sizes[i] < 0:
            raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension {i}")
    keep = False  # a -1 keeps the existing size
    for i, cur in enumerate(shape):
        s = sizes[lead + i]
        if s != cur:
            if s == -1:
                keep = True
            elif cur != 1:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {lead + i}.  Target sizes: {list(sizes)}.  Tensor "
                                   f"sizes: {list(shape)}")
    target = sizes
    if keep:
        target = sizes[:lead] + tuple(cur if s == -1 else s for s, cur in zip(sizes[lead:], shape))
    if target == shape:
        return input
    if _numel(target) == input._data.size:
        # Only new leading dims of size 1: a plain (writable) view.
        return Reshape.apply(input, shape=target)
    if _plain(input):
        return _view_result(input, _broadcast(input._data, target))
    return Expand.apply(input, shape=target)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


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
    if type(idx) is slice:
        if idx.step is not None and idx.step <= 0:
            raise ValueError("step must be greater than zero")
        return idx
    if type(idx) is tuple:
        return tuple(_index_arg(i) for i in idx)
    if type(idx) is Tensor:
        if idx._data.dtype.kind not in "iub":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {idx.dtype}")
        return idx._data
    if isinstance(idx, list):
        if any(isinstance(i, (slice, type(None), type(Ellipsis))) for i in idx):
            return tuple(_index_arg(i) for i in idx)  # legacy: a list holding slices is a tuple
        if any(type(i) is Tensor for i in idx):
            xp = array_module(next(i._data for i in idx if type(i) is Tensor))
            return xp.asarray([i._data if type(i) is Tensor else i for i in idx])
        return np.asarray(idx)
    return idx


def _index_on(idx, arr):
    """The index with its arrays on arr's device (PyTorch takes CPU index tensors for CUDA tensors)."""
    if type(arr) is np.ndarray:
        return idx
    xp = array_module(arr)

    def move(i):
        return xp.asarray(i) if type(i) is np.ndarray else i
    return tuple(move(i) for i in idx) if type(idx) is tuple else move(idx)


_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def _is_basic(idx):
    items = idx if type(idx) is tuple else (idx,)
    return all(isinstance(i, _BASIC) and not isinstance(i, (bool, np.bool_)) for i in items)


def _as_view_index(idx):
    # x[0] on a 1-D array gives a NumPy scalar (a copy); x[0, ...] gives the 0-d view PyTorch returns.
    items = idx if type(idx) is tuple else (idx,)
    if any(i is Ellipsis for i in items):
        return items
    return items + (Ellipsis,)


def _index_error(e, shape):
    msg = str(e).replace("axis", "dimension")
    return IndexError(f"{msg} (indexing a tensor of shape {list(shape)})")


class GetItem(Primitive):
    op = "getitem"

    @staticmethod
    def forward(ctx, a, *, index, basic):
        ctx.shape, ctx.index = a._data.shape, index
        try:
            return a._data[index]
        except IndexError as e:
            raise _index_error(e, a._data.shape) from None

    @staticmethod
    def backward(ctx, grad):
        return IndexBackward.apply(grad, shape=ctx.shape, index=ctx.index)


def add_at(out, index, values):
    """out[index] += values, accumulating over repeated indices (NumPy's add.at; CuPy's
    scatter_add where its ufuncs lack .at)."""
    if type(out) is np.ndarray:
        np.add.at(out, index, values)
    else:
        import cupyx
        cupyx.scatter_add(out, index, values)


class IndexBackward(Primitive):
    """Scatter-add the gradient of a[index] back into a zero tensor of a's shape."""

    op = "index_backward"

    @staticmethod
    def forward(ctx, g, *, shape, index):
        ctx.index = index
        out = array_module(g._data).zeros(shape, dtype=g._data.dtype)
        if _is_basic(index):
            out[index] = g._data
        else:
            add_at(out, index, g._data)
        return out

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, index=ctx.index, basic=_is_basic(ctx.index))


def _simple_index(index):
    """The commonest indexes (an int, a slice, or a tuple of them) as a view index, else None."""
    t = type(index)
    if t is int or (t is slice and (index.step is None or index.step > 0)):
        return (index, Ellipsis)
    if t is not tuple:
        return None
    for i in index:
        if type(i) is slice:
            if i.step is not None and i.step <= 0:
                return None  # the general path raises PyTorch's error
        elif type(i) is not int:
            return None
    return index + (Ellipsis,)


def getitem(input, index):
    idx = _simple_index(index)
    if idx is not None:
        if _plain(input):
            try:
                arr = input._data[idx]
            except IndexError as e:
                raise _index_error(e, input._data.shape) from None
            return _view_result(input, arr)
        out = GetItem.apply(input, index=idx, basic=True)
        _share(out, input)
        return out
    idx = _index_arg(index)
    if _is_basic(idx):
        out = GetItem.apply(input, index=_as_view_index(idx), basic=True)
        _share(out, input)
        return out
    return GetItem.apply(input, index=_index_on(idx, input._data), basic=False)


def select(input, dim, index):
    """input[..., index, ...] at `dim`: a view with that dim removed."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd, "select")
    size = input._data.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return getitem(input, (slice(None),) * d + (index,))


def narrow(input, dim, start, length):
    nd = input._data.ndim
    d = wrap_dim(dim, nd, "narrow")
    size = input._data.shape[d]
    start, length = int(start), int(length)
    if start < 0:
        start += size
    if not (0 <= start <= size and length >= 0 and start + length <= size):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


# ---- strided views: diagonal, unfold ----------------------------------------------------------


def as_strided_array(arr, shape, strides):
    """A view of `arr` with the given shape and byte strides (writable where `arr` is)."""
    return array_module(arr).lib.stride_tricks.as_strided(arr, shape=tuple(shape), strides=tuple(strides))


def _diagonal_array(arr, offset, d1, d2):
    n1, n2 = arr.shape[d1], arr.shape[d2]
    start = (slice(None),) * arr.ndim
    if offset >= 0:
        n = max(min(n1, n2 - offset), 0)
        start = tuple(slice(min(offset, n2), None) if i == d2 else s for i, s in enumerate(start))
    else:
        n = max(min(n1 + offset, n2), 0)
        start = tuple(slice(min(-offset, n1), None) if i == d1 else s for i, s in enumerate(start))
    base = arr[start]
    keep = [i for i in range(arr.ndim) if i not in (d1, d2)]
    shape = [arr.shape[i] for i in keep] + [n]
    strides = [arr.strides[i] for i in keep] + [arr.strides[d1] + arr.strides[d2]]
    return as_strided_array(base, shape, strides)


class Diagonal(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, *, offset, d1, d2):
        ctx.shape, ctx.offset, ctx.d1, ctx.d2 = a._data.shape, offset, d1, d2
        return _diagonal_array(a._data, offset, d1, d2)

    @staticmethod
    def backward(ctx, grad):
        return DiagScatter.apply(grad, shape=ctx.shape, offset=ctx.offset, d1=ctx.d1, d2=ctx.d2)


class DiagScatter(Primitive):
    """Zeros of `shape` with the input written on the (offset, d1, d2) diagonal: the adjoint of
    diagonal, and diag_embed."""

    @staticmethod
    def forward(ctx, g, *, shape, offset, d1, d2):
        ctx.offset, ctx.d1, ctx.d2 = offset, d1, d2
        out = array_module(g._data).zeros(shape, dtype=g._data.dtype)
        _diagonal_array(out, offset, d1, d2)[...] = g._data
        return out

    @staticmethod
    def backward(ctx, grad):
        return Diagonal.apply(grad, offset=ctx.offset, d1=ctx.d1, d2=ctx.d2)


def _diag_dims(nd, dim1, dim2, op):
    d1, d2 = wrap_dim(dim1, nd, op), wrap_dim(dim2, nd, op)
    if d1 == d2:
        raise RuntimeError(f"{op}: diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal over (dim1, dim2), appended as the last dim (as torch.diagonal)."""
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"diagonal(): input must have at least 2 dimensions, but got {nd}")
    d1, d2 = _diag_dims(nd, dim1, dim2, "diagonal()")
    return Diagonal.apply(input, offset=int(offset), d1=d1, d2=d2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose (dim1, dim2) diagonals hold the last dim of input; other entries are zero."""
    nd = input._data.ndim + 1
    d1, d2 = _diag_dims(nd, dim1, dim2, "diag_embed()")
    n = input._data.shape[-1] + abs(int(offset)) if input._data.ndim else 1 + abs(int(offset))
    if input._data.ndim == 0:
        input = Reshape.apply(input, shape=(1,))
    rest = iter(input._data.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(rest) for i in range(nd))
    return DiagScatter.apply(input, shape=shape, offset=int(offset), d1=d1, d2=d2)


def diag(input, diagonal=0):
    """1-D input: a square matrix with input on the given diagonal; 2-D input: that diagonal (a copy)."""
    if input._data.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input._data.ndim == 2:
        return Clone.apply(Diagonal.apply(input, offset=int(diagonal), d1=0, d2=1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input._data.ndim}D")


class Unfold(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a, *, dim, size, step):
        ctx.shape, ctx.dim, ctx.size, ctx.step = a._data.shape, dim, size, step
        arr = a._data
        n = (arr.shape[dim] - size) // step + 1
        shape = arr.shape[:dim] + (n,) + arr.shape[dim + 1:] + (size,)
        strides = arr.strides[:dim] + (arr.strides[dim] * step,) + arr.strides[dim + 1:] + (arr.strides[dim],)
        out = as_strided_array(arr, shape, strides)
        if step < size and type(out) is np.ndarray:
            out.flags.writeable = False  # overlapping windows: PyTorch refuses writes there too
        return out

    @staticmethod
    def backward(ctx, grad):
        return UnfoldBackward.apply(grad, shape=ctx.shape, dim=ctx.dim, size=ctx.size, step=ctx.step)


class UnfoldBackward(Primitive):
    op = "unfold_backward"

    @staticmethod
    def forward(ctx, g, *, shape, dim, size, step):
        ctx.dim, ctx.size, ctx.step = dim, size, step
        garr = g._data
        out = array_module(garr).zeros(shape, dtype=garr.dtype)
        n = garr.shape[dim]
        lead = (slice(None),) * dim
        for j in range(size):  # window element j of every window: distinct positions, so no collisions
            out[lead + (slice(j, j + (n - 1) * step + 1, step),)] += garr[..., j]
        return out

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, dim=ctx.dim, size=ctx.size, step=ctx.step)


def unfold(input, dimension, size, step):
    """Tensor.unfold: every slice of length `size` along `dimension`, `step` apart, as a new last
    dim. A view of input."""
    if input._data.ndim == 0:
        # PyTorch treats a 0-d tensor as one element: the result has shape (size,)
        return Reshape.apply(unfold(Reshape.apply(input, shape=(1,)), 0, size, step), shape=(size,))
    d = wrap_dim(dimension, input._data.ndim, "unfold")
    n = input._data.shape[d]
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return Unfold.apply(input, dim=d, size=int(size), step=int(step))


# ---- splitting ---------------------------------------------------------------------------------


class Split(Primitive):
    """Views of consecutive pieces along `axis`; backward concatenates the pieces' gradients
    (absent ones come as zeros)."""

    @staticmethod
    def forward(ctx, a, *, axis, bounds):
        ctx.axis, ctx.bounds, ctx.shape = axis, bounds, a._data.shape
        lead = (slice(None),) * axis
        return tuple(a._data[lead + (slice(s, e),)] for s, e in bounds)

    @staticmethod
    def backward(ctx, *grads):
        ends = [e for _, e in ctx.bounds]
        if [s for s, _ in ctx.bounds] == [0] + ends[:-1] and ends[-1] == ctx.shape[ctx.axis]:
            return cat(list(grads), ctx.axis)
        # Pieces that overlap or leave gaps (tensor_split with unsorted indices): add each back in place.
        lead = (slice(None),) * ctx.axis
        total = None
        for g, (s, e) in zip(grads, ctx.bounds):
            part = IndexBackward.apply(g, shape=ctx.shape, index=lead + (slice(s, e), Ellipsis))
            total = part if total is None else total + part
        return total


class Unbind(Primitive):
    @staticmethod
    def forward(ctx, a, *, axis):
        ctx.axis = axis
        lead = (slice(None),) * axis
        return tuple(a._data[lead + (i, Ellipsis)] for i in range(a._data.shape[axis]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(list(grads), ctx.axis)


def _views(outs, input):
    for o in outs:
        _share(o, input)
    return outs


def _split_at(input, d, bounds):
    return _views(Split.apply(input, axis=d, bounds=tuple(bounds)), input)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of `split_size_or_sections` along dim (the last may be smaller), or of the listed
    sizes. Each piece is a view."""
    if tensor._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, tensor._data.ndim, "split")
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n != 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
                               if size == 0 else f"split expects split_size be non-negative, but got "
                                                 f"split_size={size}")
        bounds = [(s, min(s + size, n)) for s in range(0, n, size)] or [(0, 0)]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                               f"size at dimension {d}), but got split_sizes={sizes}")
        starts = np.cumsum([0] + sizes).tolist()
        bounds = list(zip(starts[:-1], starts[1:]))
    return _split_at(tensor, d, bounds)


def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


def chunk(input, chunks, dim=0):
    """`chunks` pieces of equal size (ceil), possibly fewer (as torch.chunk)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = input._data.shape[wrap_dim(dim, input._data.ndim, "chunk")]
    if n == 0:
        return split(input, [0] * chunks, dim)
    return split(input, -(-n // chunks), dim)


def tensor_split(input, indices_or_sections, dim=0):
    """np.array_split: n nearly equal pieces (the first n % k one longer), or pieces between the
    given indices."""
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(dim, input._data.ndim, "tensor_split")
    n = input._data.shape[d]
    ios = indices_or_sections
    if type(ios) is Tensor:
        if ios._data.dtype.kind not in "iu" or ios._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have int64 dtype and be a "
                               f"0-D or 1-D tensor, but got {ios.dtype} with {ios._data.ndim} dims")
        ios = int(ios.item()) if ios._data.ndim == 0 else ios.tolist()
    if isinstance(ios, (int, np.integer)):
        k = int(ios)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        starts = np.cumsum([0] + sizes).tolist()
        bounds = list(zip(starts[:-1], starts[1:]))
    else:
        cuts = [min(max(int(i) + (n if i < 0 else 0), 0), n) for i in ios]
        edges = [0] + cuts + [n]
        bounds = [(s, max(s, e)) for s, e in zip(edges[:-1], edges[1:])]
    return _views(Split.apply(input, axis=d, bounds=tuple(bounds)), input)


def hsplit(input, indices_or_sections):
    dim = 0 if input._data.ndim == 1 else 1
    return _np_split(input, indices_or_sections, dim, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _np_split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _np_split(input, indices_or_sections, 2, "dsplit", 3)


def _np_split(input, ios, dim, op, min_nd):
    if input._data.ndim < min_nd:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_nd} dimension, but got a tensor "
                           f"with {input._data.ndim} dimensions!")
    if isinstance(ios, (int, np.integer)) and input._data.shape[dim] % ios:
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input._data.shape[dim]} is not divisible by the split_size {ios}!")
    return tensor_split(input, ios, dim)


def unbind(input, dim=0):
    """Every slice along dim, that dim removed; views of input."""
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, input._data.ndim, "unbind")
    return _views(Unbind.apply(input, axis=d), input)


# ---- joining -------------------------------------------------------------------------------


class Cat(Primitive):
    @staticmethod
    def forward(ctx, *tensors, axis):
        ctx.axis = axis
        ctx.sizes = [t._data.shape[axis] for t in tensors]
        return array_module(tensors[0]._data).concatenate([t._data for t in tensors], axis=axis)

    @staticmethod
    def backward(ctx, grad):
        out, start = [], 0
        for n in ctx.sizes:
            out.append(grad.narrow(ctx.axis, start, n))
            start += n
        return tuple(out)


def _tensor_list(tensors, op):
    if type(tensors) is Tensor:
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    return list(tensors)


def _joinable(tensors, op):
    tensors = _tensor_list(tensors, op)
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    first = tensors[0]
    if type(first) is not Tensor:
        raise TypeError(f"{op}(): expected a sequence of Tensors, but element 0 is {type(first).__name__}")
    kind, dtype, mixed = type(first._data), first._data.dtype, False
    for i, t in enumerate(tensors):
        if type(t) is not Tensor:
            raise TypeError(f"{op}(): expected a sequence of Tensors, but element {i} is {type(t).__name__}")
        d = t._data
        if type(d) is not kind or kind is not np.ndarray:  # NumPy arrays all live on the one CPU
            check_same_device(first, t, op)
        if d.dtype != dtype:
            mixed = True
    if mixed:
        from rtx._tensor.ops._util import cast
        from rtx.runtime.dtypes import result_type_of
        target = result_type_of([t.dtype for t in tensors], (), ()).np
        tensors = [cast(t, target) for t in tensors]
    return tensors


def cat(tensors, dim=0, *, out=None):
    tensors = _joinable(tensors, "cat")
    # PyTorch skips 1-D empty tensors in cat (legacy behaviour many codes rely on)
    if any(t._data.shape == (0,) for t in tensors):
        tensors = [t for t in tensors if t._data.shape != (0,)] or tensors[:1]
    nd = tensors[0]._data.ndim
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    axis = wrap_dim(dim, nd, "cat")
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        s = t._data.shape
        if s == ref:
            continue
        if len(s) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {len(s)}")
        if any(a != b for j, (a, b) in enumerate(zip(s, ref)) if j != axis):
            raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. Expected size "
                               f"{list(ref)} but got size {list(s)} for tensor number {i} in the list.")
    if out is None and not _active[0] and not (_state.enabled and any(t.requires_grad for t in tensors)):
        return _make(array_module(tensors[0]._data).concatenate([t._data for t in tensors], axis=axis))
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
    if out is None and not _active[0] and not (_state.enabled and any(t.requires_grad for t in tensors)):
        # No graph and no recording hook: one concatenate of reshaped arrays, no per-tensor ops.
        d = dim + nd if dim < 0 else dim
        new = ref[:d] + (1,) + ref[d:]
        return _make(array_module(tensors[0]._data).concatenate([t._data.reshape(new) for t in tensors], axis=d))
    return cat([unsqueeze(t, dim) for t in tensors], dim, out=out)


def _atleast(tensors, nd):
    single = len(tensors) == 1 and type(tensors[0]) is Tensor
    if len(tensors) == 1 and not single:
        tensors = tuple(tensors[0])
    outs = []
    for t in tensors:
        s = t._data.shape
        if len(s) < nd:
            if nd == 3 and len(s) == 2:
                s = s + (1,)
            elif nd == 3 and len(s) == 1:
                s = (1,) + s + (1,)
            else:
                s = (1,) * (nd - len(s)) + s
            t = Reshape.apply(t, shape=s)
        outs.append(t)
    return outs[0] if single else tuple(outs)


def atleast_1d(*tensors):
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    return _atleast(tensors, 3)


def hstack(tensors, *, out=None):
    ts = list(atleast_1d(tuple(_tensor_list(tensors, "hstack"))))
    return cat(ts, 0 if ts and ts[0]._data.ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    return cat(list(atleast_2d(tuple(_tensor_list(tensors, "vstack")))), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    return cat(list(atleast_3d(tuple(_tensor_list(tensors, "dstack")))), 2, out=out)


def column_stack(tensors, *, out=None):
    ts = [Reshape.apply(t, shape=(t._data.size, 1)) if t._data.ndim <= 1 else t
          for t in _tensor_list(tensors, "column_stack")]
    return cat(ts, 1, out=out)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: output i varies along dim i ('ij') or with the first two dims swapped
    ('xy', NumPy's default). Each output is an expanded view of its input."""
    if len(tensors) == 1 and type(tensors[0]) is not Tensor:
        tensors = tuple(tensors[0])
    if indexing is None:
        import warnings
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for i, t in enumerate(tensors):
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D "
                               f"tensor at position {i}")
    n = len(tensors)
    order = list(range(n))
    if indexing == "xy" and n >= 2:
        order[0], order[1] = 1, 0
    sizes = [t._data.size if t._data.ndim else 1 for t in tensors]
    full = [0] * n
    for i in range(n):
        full[order[i]] = sizes[i]
    outs = []
    for i, t in enumerate(tensors):
        shape = [1] * n
        shape[order[i]] = sizes[i]
        outs.append(expand(Reshape.apply(t, shape=tuple(shape)), tuple(full)))
    return tuple(outs)


# ---- copies: repeat, tile, flip, roll, tril/triu --------------------------------------------


def repeat(input, *sizes):
    """Tile input `sizes` times along each dim (as Tensor.repeat / np.tile)."""
    reps = _shape_arg(sizes)
    shape = input._data.shape
    if len(reps) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats {list(reps)}")
    shape = (1,) * (len(reps) - len(shape)) + shape
    # (1, s0, 1, s1, ...) -> expand to (r0, s0, r1, s1, ...) -> merge pairs: the copy happens in reshape.
    inter = tuple(x for s in shape for x in (1, s))
    wide = tuple(x for r, s in zip(reps, shape) for x in (r, s))
    x = Reshape.apply(input, shape=inter)
    return reshape(expand(x, wide), tuple(r * s for r, s in zip(reps, shape)))


def tile(input, dims_):
    reps = tuple(dims_) if not isinstance(dims_, (int, np.integer)) else (dims_,)
    reps = (1,) * (input._data.ndim - len(reps)) + tuple(int(r) for r in reps)
    return repeat(input, reps)


class Flip(Primitive):
    @staticmethod
    def forward(ctx, a, *, axes):
        ctx.axes = axes
        return array_module(a._data).flip(a._data, axes).copy()  # torch.flip copies

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, axes=ctx.axes)


def flip(input, *dims_):
    """Reverse the order of elements along dims (a copy, as torch.flip); x.flip(0, 1) or flip(x, (0, 1))."""
    d = dims_[0] if len(dims_) == 1 else dims_
    axes = dims(d, input._data.ndim, "flip") if input._data.ndim else ()
    return Flip.apply(input, axes=axes)


def fliplr(input):
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return Flip.apply(input, axes=(1,))


def flipud(input):
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return Flip.apply(input, axes=(0,))


class Roll(Primitive):
    @staticmethod
    def forward(ctx, a, *, shifts, axes):
        ctx.shifts, ctx.axes = shifts, axes
        return array_module(a._data).roll(a._data, shifts, axes)

    @staticmethod
    def backward(ctx, grad):
        return Roll.apply(grad, shifts=tuple(-s for s in ctx.shifts), axes=ctx.axes)


def roll(input, shifts, dims=None):
    """Shift elements cyclically along dims; with dims=None, over the flattened tensor."""
    shifts = (int(shifts),) if isinstance(shifts, (int, np.integer)) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        flat = Reshape.apply(input, shape=(input._data.size,))
        return reshape(Roll.apply(flat, shifts=shifts, axes=(0,)), input._data.shape)
    dims_ = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(dims_) != len(shifts):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims_)}")
    axes = tuple(wrap_dim(d, input._data.ndim, "roll") for d in dims_)
    return Roll.apply(input, shifts=shifts, axes=axes)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of dims, from the first towards the second."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    a, b = wrap_dim(dims[0], nd, "rot90"), wrap_dim(dims[1], nd, "rot90")
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    k %= 4
    if k == 1:
        return transpose(flip(input, (b,)), a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return flip(transpose(input, a, b), (b,))
    return clone(input)


class Tri(Primitive):
    @staticmethod
    def forward(ctx, a, *, k, upper):
        ctx.k, ctx.upper = k, upper
        xp = array_module(a._data)
        return (xp.triu if upper else xp.tril)(a._data, k)

    @staticmethod
    def backward(ctx, grad):
        return Tri.apply(grad, k=ctx.k, upper=ctx.upper)


def tril(input, diagonal=0):
    """Lower triangle of the last two dims (entries on and below `diagonal`); the rest zero."""
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return Tri.apply(input, k=int(diagonal), upper=False)


def triu(input, diagonal=0):
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return Tri.apply(input, k=int(diagonal), upper=True)


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
METHODS = ['reshape', 'view', 'view_as', 'reshape_as', 'permute', 'transpose', 'swapaxes', 'swapdims', 't',
           'movedim', 'moveaxis', 'expand', 'expand_as', 'broadcast_to', 'squeeze', 'unsqueeze', 'flatten',
           'unflatten', 'ravel', 'narrow', 'select', 'diagonal', 'diag_embed', 'diag', 'unfold', 'split',
           'split_with_sizes', 'chunk', 'tensor_split', 'hsplit', 'vsplit', 'dsplit', 'unbind', 'repeat', 'tile',
           'flip', 'fliplr', 'flipud', 'roll', 'rot90', 'tril', 'triu', 'clone', 'contiguous']
