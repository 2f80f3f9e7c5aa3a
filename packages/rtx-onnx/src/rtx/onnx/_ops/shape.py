"""Shape and indexing ops: Reshape, Transpose, Slice, Gather, Concat, Split, Pad, Expand, ..."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.onnx._ops import arr, const, ints, is_grad_float, np_dtype, op, scalar, wrap_axis


# Float tensors go through rtx ops (gradients flow); everything else through NumPy.
def reshape(x, shape):
    shape = tuple(int(s) for s in shape)
    if is_grad_float(x):
        return rtx.reshape(x, shape)
    return const(arr(x).reshape(shape))


def transpose(x, perm):
    if is_grad_float(x):
        return rtx.permute(x, tuple(perm))
    return const(np.ascontiguousarray(np.transpose(arr(x), perm)))


def concat(xs, axis):
    if all(is_grad_float(x) for x in xs) and len({arr(x).dtype for x in xs}) == 1:
        return rtx.cat(list(xs), axis)
    return const(np.concatenate([arr(x) for x in xs], axis))


def take(x, axis, idx):
    """x indexed by the integer array idx along axis (NumPy's take, differentiable for floats)."""
    idx = np.asarray(idx, dtype=np.int64)
    if is_grad_float(x):
        if idx.ndim == 1:
            return rtx.index_select(x, axis, const(idx))
        return x[(slice(None),) * axis + (const(idx),)]
    return const(np.take(arr(x), idx, axis=axis))


def slice_axis(x, axis, start, end, step=1):
    if is_grad_float(x):
        return x[(slice(None),) * axis + (slice(start, end, step),)]
    return const(arr(x)[(slice(None),) * axis + (slice(start, end, step),)])


@op("Shape")
def shape_(inputs, attrs, opset):
    shp = list(arr(inputs[0]).shape)
    n = len(shp)
    start, end = attrs.get("start", 0), attrs.get("end", n)
    start = min(max(start + n if start < 0 else start, 0), n)
    end = min(max(end + n if end < 0 else end, 0), n)
    return const(np.array(shp[start:end], dtype=np.int64))


@op("Size")
def size(inputs, attrs, opset):
    return const(np.array(arr(inputs[0]).size, dtype=np.int64))


@op("Reshape")
def reshape_op(inputs, attrs, opset):
    x = inputs[0]
    shape = ints(inputs[1]) if opset >= 5 else list(attrs["shape"])
    src = arr(x).shape
    allowzero = attrs.get("allowzero", 0)
    out = [src[i] if s == 0 and not allowzero else s for i, s in enumerate(shape)]
    return reshape(x, out)


@op("Flatten")
def flatten(inputs, attrs, opset):
    x = inputs[0]
    shp = arr(x).shape
    axis = attrs.get("axis", 1)
    axis = axis + len(shp) if axis < 0 else axis
    left = int(np.prod(shp[:axis], dtype=np.int64))
    return reshape(x, (left, int(np.prod(shp[axis:], dtype=np.int64))))


@op("Transpose")
def transpose_op(inputs, attrs, opset):
    x = inputs[0]
    perm = attrs.get("perm") or list(range(arr(x).ndim))[::-1]
    return transpose(x, perm)


def _axes_arg(inputs, attrs, opset, since=13):
    if opset >= since:
        return ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None
    return attrs.get("axes")


@op("Squeeze")
def squeeze(inputs, attrs, opset):
    x = inputs[0]
    shp = arr(x).shape
    axes = _axes_arg(inputs, attrs, opset)
    if axes is None:
        axes = [i for i, s in enumerate(shp) if s == 1]
    axes = {wrap_axis(a, len(shp), "Squeeze") for a in axes}
    for a in axes:
        if shp[a] != 1:
            raise ValueError(f"Squeeze: axis {a} has size {shp[a]}, expected 1 (input shape {list(shp)})")
    return reshape(x, [s for i, s in enumerate(shp) if i not in axes])


@op("Unsqueeze")
def unsqueeze(inputs, attrs, opset):
    x = inputs[0]
    shp = list(arr(x).shape)
    axes = _axes_arg(inputs, attrs, opset)
    r = len(shp) + len(axes)
    for a in sorted(wrap_axis(a, r, "Unsqueeze") for a in axes):
        shp.insert(a, 1)
    return reshape(x, shp)


@op("Concat")
def concat_op(inputs, attrs, opset):
    xs = [x for x in inputs if x is not None]
    axis = wrap_axis(attrs["axis"], arr(xs[0]).ndim, "Concat")
    return concat(xs, axis)


@op("Split")
def split(inputs, attrs, opset):
    x = inputs[0]
    shp = arr(x).shape
    axis = wrap_axis(attrs.get("axis", 0), len(shp), "Split")
    n = attrs["_n_outputs"]
    if opset >= 13:
        sizes = ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None
    else:
        sizes = attrs.get("split")
    if not sizes:
        parts = attrs.get("num_outputs", n)
        chunk = -(-shp[axis] // parts)
        sizes = [min(chunk, shp[axis] - i * chunk) for i in range(parts)]
    if sum(sizes) != shp[axis]:
        raise ValueError(f"Split: sizes {sizes} do not add up to dimension {axis} of size {shp[axis]}")
    outs, start = [], 0
    for s in sizes:
        outs.append(slice_axis(x, axis, start, start + s))
        start += s
    return tuple(outs)


@op("Slice")
def slice_op(inputs, attrs, opset):
    x = inputs[0]
    shp = arr(x).shape
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes"), None
    else:
        starts, ends = ints(inputs[1]), ints(inputs[2])
        axes = ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
        steps = ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else None
    axes = list(range(len(starts))) if axes is None else [wrap_axis(a, len(shp), "Slice") for a in axes]
    steps = steps or [1] * len(starts)
    out = x
    for start, end, axis, step in zip(starts, ends, axes, steps):
        d = shp[axis]
        if step == 0:
            raise ValueError("Slice: step cannot be 0")
        start = start + d if start < 0 else start
        end = end + d if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), d), min(max(end, 0), d)
            out = slice_axis(out, axis, start, end, step)
        else:
            start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
            # a negative step is a positive one on the flipped axis (rtx, like PyTorch, has no negative steps)
            flipped = rtx.flip(out, (axis,)) if is_grad_float(out) else const(np.flip(arr(out), axis))
            out = slice_axis(flipped, axis, d - 1 - start, d - 1 - end, -step)
    return out


@op("Gather")
def gather(inputs, attrs, opset):
    x, idx = inputs
    a = arr(x)
    axis = wrap_axis(attrs.get("axis", 0), a.ndim, "Gather")
    i = arr(idx).astype(np.int64)
    i = np.where(i < 0, i + a.shape[axis], i)
    if i.size and (i.min() < 0 or i.max() >= a.shape[axis]):
        raise IndexError(f"Gather: index out of range for axis {axis} of size {a.shape[axis]}")
    if i.ndim == 0:
        return take(x, axis, i.reshape(1)).squeeze(axis) if is_grad_float(x) else const(np.take(a, i, axis=axis))
    return take(x, axis, i)


@op("GatherElements")
def gather_elements(inputs, attrs, opset):
    x, idx = inputs
    a = arr(x)
    axis = wrap_axis(attrs.get("axis", 0), a.ndim, "GatherElements")
    i = arr(idx).astype(np.int64)
    i = np.where(i < 0, i + a.shape[axis], i)
    if is_grad_float(x):
        return rtx.gather(x, axis, const(i))
    return const(np.take_along_axis(a, i, axis=axis))


@op("GatherND")
def gather_nd(inputs, attrs, opset):
    a, idx = arr(inputs[0]), arr(inputs[1]).astype(np.int64)
    b = attrs.get("batch_dims", 0)
    batch = a.shape[:b]
    nb = int(np.prod(batch, dtype=np.int64))
    data = a.reshape((nb,) + a.shape[b:])
    ind = idx.reshape((nb,) + idx.shape[b:])
    k = ind.shape[-1]
    outs = []
    for j in range(nb):
        i = ind[j]
        i = np.where(i < 0, i + np.array(data.shape[1:1 + k]), i)
        outs.append(data[j][tuple(np.moveaxis(i, -1, 0))])
    out = np.stack(outs) if outs else np.zeros((0,) + idx.shape[b:-1] + a.shape[b + k:], a.dtype)
    return const(out.reshape(batch + idx.shape[b:-1] + a.shape[b + k:]))


@op("Expand")
def expand(inputs, attrs, opset):
    x = inputs[0]
    shape = tuple(np.broadcast_shapes(arr(x).shape, tuple(ints(inputs[1]))))
    if is_grad_float(x):
        return rtx.broadcast_to(x, shape) + 0 if shape != arr(x).shape else x
    return const(np.array(np.broadcast_to(arr(x), shape)))


@op("Tile")
def tile(inputs, attrs, opset):
    x = inputs[0]
    reps = ints(inputs[1])
    if is_grad_float(x):
        return rtx.tile(x, tuple(reps))
    return const(np.tile(arr(x), reps))


@op("Pad")
def pad(inputs, attrs, opset):
    x = inputs[0]
    nd = arr(x).ndim
    mode = attrs.get("mode", "constant")
    if opset < 11:
        pads, value, axes = attrs.get("pads") or attrs.get("paddings"), attrs.get("value", 0.0), None
    else:
        pads = ints(inputs[1])
        value = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
        value = 0 if value is None or arr(value).size == 0 else scalar(value)
        axes = ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    axes = list(range(nd)) if axes is None else [wrap_axis(a, nd, "Pad") for a in axes]
    k = len(axes)
    lo = dict(zip(axes, pads[:k]))
    hi = dict(zip(axes, pads[k:]))
    out = x
    for axis in axes:
        b, e = lo[axis], hi[axis]
        d = arr(out).shape[axis]
        if b < 0 or e < 0:  # negative pads crop
            out = slice_axis(out, axis, max(-b, 0), d - max(-e, 0))
            b, e, d = max(b, 0), max(e, 0), arr(out).shape[axis]
        if b == 0 and e == 0:
            continue
        if mode == "constant":
            parts = []
            for n in (b, e):
                shp = list(arr(out).shape)
                shp[axis] = n
                parts.append(np.full(shp, value, dtype=arr(out).dtype))
            out = concat([const(parts[0]), out, const(parts[1])], axis)
        else:
            np_mode = {"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode]
            idx = np.pad(np.arange(d), (b, e), mode=np_mode)
            out = take(out, axis, idx)
    return out


@op("ConstantOfShape")
def constant_of_shape(inputs, attrs, opset):
    value = attrs.get("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value)
    shape = ints(inputs[0])
    return const(np.full(shape, value.reshape(-1)[0], dtype=value.dtype))


@op("Constant")
def constant(inputs, attrs, opset):
    for key in ("value", "sparse_value"):
        if key in attrs:
            return const(np.asarray(attrs[key]))
    if "value_float" in attrs:
        return const(np.array(attrs["value_float"], np.float32))
    if "value_floats" in attrs:
        return const(np.array(attrs["value_floats"], np.float32))
    if "value_int" in attrs:
        return const(np.array(attrs["value_int"], np.int64))
    if "value_ints" in attrs:
        return const(np.array(attrs["value_ints"], np.int64))
    if "value_string" in attrs:
        return const(np.array(attrs["value_string"], dtype=object))
    if "value_strings" in attrs:
        return const(np.array(attrs["value_strings"], dtype=object))
    raise ValueError("Constant: no value attribute")


@op("Range")
def range_(inputs, attrs, opset):
    start, limit, delta = (arr(v).reshape(()) for v in inputs)
    n = int(max(np.ceil((float(limit) - float(start)) / float(delta)), 0))
    return const((start + np.arange(n, dtype=np.float64 if start.dtype.kind == "f" else np.int64) * delta)
                 .astype(start.dtype))


@op("Trilu")
def trilu(inputs, attrs, opset):
    x = inputs[0]
    a = arr(x)
    k = scalar(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else 0
    n, m = a.shape[-2:]
    mask = np.triu(np.ones((n, m), bool), k) if attrs.get("upper", 1) else np.tril(np.ones((n, m), bool), k)
    if is_grad_float(x):
        return rtx.where(const(mask), x, rtx.zeros_like(x))
    return const(np.where(mask, a, np.zeros((), a.dtype)))


@op("Compress")
def compress(inputs, attrs, opset):
    a, c = arr(inputs[0]), arr(inputs[1]).astype(bool)
    axis = attrs.get("axis")
    if axis is None:
        return const(np.compress(c, a.reshape(-1)))
    axis = wrap_axis(axis, a.ndim, "Compress")
    return take(inputs[0], axis, np.nonzero(c)[0])


@op("OneHot")
def one_hot(inputs, attrs, opset):
    idx, depth, values = arr(inputs[0]), int(scalar(inputs[1])), arr(inputs[2])
    axis = attrs.get("axis", -1)
    nd = idx.ndim + 1
    axis = axis + nd if axis < 0 else axis
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + depth, i)
    hot = np.expand_dims(i, axis) == np.arange(depth).reshape([-1 if d == axis else 1 for d in range(nd)])
    return const(np.where(hot, values[1], values[0]).astype(values.dtype))


@op("NonZero")
def nonzero(inputs, attrs, opset):
    a = arr(inputs[0])
    return const(np.array(np.nonzero(a), dtype=np.int64).reshape(a.ndim, -1))


@op("Unique")
def unique(inputs, attrs, opset):
    a = arr(inputs[0])
    axis = attrs.get("axis")
    srt = attrs.get("sorted", 1)
    src = a.astype(np.float32) if a.dtype.kind == "V" else a
    if axis is None:
        y, idx, inv, cnt = np.unique(src.reshape(-1), return_index=True, return_inverse=True, return_counts=True)
    else:
        axis = wrap_axis(axis, a.ndim, "Unique")
        y, idx, inv, cnt = np.unique(src, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    if not srt:
        order = np.argsort(idx, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if axis is None else axis)
        idx, cnt, inv = idx[order], cnt[order], rank[inv.reshape(-1)]
    y = y.astype(a.dtype)
    return (const(y), const(idx.astype(np.int64)), const(inv.reshape(-1).astype(np.int64)),
            const(cnt.astype(np.int64)))


@op("TopK")
def topk(inputs, attrs, opset):
    x = inputs[0]
    a = arr(x)
    k = int(scalar(inputs[1])) if opset >= 10 else attrs["k"]
    axis = wrap_axis(attrs.get("axis", -1), a.ndim, "TopK")
    largest = attrs.get("largest", 1)
    src = a.astype(np.float64) if a.dtype.kind == "V" else a
    if largest:
        key = -src if src.dtype.kind == "f" else ~src
    else:
        key = src
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    if is_grad_float(x):
        values = rtx.gather(x, axis, const(idx))
    else:
        values = const(np.take_along_axis(a, idx, axis=axis))
    return values, const(idx.astype(np.int64))


@op("DepthToSpace")
def depth_to_space(inputs, attrs, opset):
    x = inputs[0]
    b = attrs["blocksize"]
    n, c, h, w = arr(x).shape
    if attrs.get("mode", "DCR") == "DCR":
        y = transpose(reshape(x, (n, b, b, c // (b * b), h, w)), (0, 3, 4, 1, 5, 2))
    else:
        y = transpose(reshape(x, (n, c // (b * b), b, b, h, w)), (0, 1, 4, 2, 5, 3))
    return reshape(y, (n, c // (b * b), h * b, w * b))


@op("SpaceToDepth")
def space_to_depth(inputs, attrs, opset):
    x = inputs[0]
    b = attrs["blocksize"]
    n, c, h, w = arr(x).shape
    if attrs.get("mode", "DCR") == "CRD":
        y = transpose(reshape(x, (n, c, h // b, b, w // b, b)), (0, 1, 3, 5, 2, 4))
    else:
        y = transpose(reshape(x, (n, c, h // b, b, w // b, b)), (0, 3, 5, 1, 2, 4))
    return reshape(y, (n, c * b * b, h // b, w // b))


@op("EyeLike")
def eye_like(inputs, attrs, opset):
    a = arr(inputs[0])
    dtype = np_dtype(attrs["dtype"]) if "dtype" in attrs else a.dtype
    return const(np.eye(a.shape[0], a.shape[1], k=attrs.get("k", 0), dtype=dtype))


def _scatter_reduce(out, idx, upd, reduction):
    if reduction in (None, "none"):
        out[idx] = upd
    elif reduction == "add":
        np.add.at(out, idx, upd)
    elif reduction == "mul":
        np.multiply.at(out, idx, upd)
    elif reduction == "max":
        np.maximum.at(out, idx, upd)
    elif reduction == "min":
        np.minimum.at(out, idx, upd)
    else:
        raise ValueError(f"unknown scatter reduction {reduction!r}")


@op("ScatterElements", "Scatter")
def scatter_elements(inputs, attrs, opset):
    a, i, u = arr(inputs[0]), arr(inputs[1]).astype(np.int64), arr(inputs[2])
    axis = wrap_axis(attrs.get("axis", 0), a.ndim, "ScatterElements")
    i = np.where(i < 0, i + a.shape[axis], i)
    out = a.copy()
    grid = list(np.indices(i.shape, sparse=True))
    grid[axis] = i
    reduction = attrs.get("reduction", "none")
    if reduction == "none":
        # duplicates: the last update wins, as in the reference
        for pos in np.ndindex(i.shape):
            tgt = list(pos)
            tgt[axis] = i[pos]
            out[tuple(tgt)] = u[pos]
    else:
        _scatter_reduce(out, tuple(grid), u, reduction)
    return const(out)


@op("ScatterND")
def scatter_nd(inputs, attrs, opset):
    a, i, u = arr(inputs[0]), arr(inputs[1]).astype(np.int64), arr(inputs[2])
    out = a.copy()
    k = i.shape[-1]
    flat_i = i.reshape(-1, k)
    flat_u = u.reshape((flat_i.shape[0],) + a.shape[k:])
    reduction = attrs.get("reduction", "none")
    for j in range(flat_i.shape[0]):
        tgt = tuple(flat_i[j])
        if reduction == "none":
            out[tgt] = flat_u[j]
        elif reduction == "add":
            out[tgt] = out[tgt] + flat_u[j]
        elif reduction == "mul":
            out[tgt] = out[tgt] * flat_u[j]
        elif reduction == "max":
            out[tgt] = np.maximum(out[tgt], flat_u[j])
        elif reduction == "min":
            out[tgt] = np.minimum(out[tgt], flat_u[j])
    return const(out)


@op("ReverseSequence")
def reverse_sequence(inputs, attrs, opset):
    a, lens = arr(inputs[0]), ints(inputs[1])
    bax, tax = attrs.get("batch_axis", 1), attrs.get("time_axis", 0)
    out = a.copy()
    for b, n in enumerate(lens):
        src = [slice(None)] * a.ndim
        src[bax], src[tax] = b, slice(0, n)
        dst = list(src)
        dst[tax] = slice(n - 1, None, -1) if n > 0 else slice(0, 0)
        out[tuple(src)] = a[tuple(dst)]
    return const(out)

