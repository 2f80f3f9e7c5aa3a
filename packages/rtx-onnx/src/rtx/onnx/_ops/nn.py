"""Neural-network ops: MatMul/Gemm/Einsum, Conv/ConvTranspose, pooling, normalization, Softmax,
Dropout, Resize/Upsample."""
from __future__ import annotations

import math

import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.kernel import windows as _win
from rtx.onnx._ops import arr, const, ints, is_grad_float, op, scalar, wrap_axis
from rtx.onnx._ops.shape import concat, reshape, slice_axis, take


# ---- linear algebra -----------------------------------------------------------------------------
@op("MatMul")
def matmul(inputs, attrs, opset):
    a, b = inputs
    if is_grad_float(a) and is_grad_float(b):
        return rtx.matmul(a, b)
    return const(np.matmul(arr(a), arr(b)))


@op("Gemm")
def gemm(inputs, attrs, opset):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if is_grad_float(a):
        if attrs.get("transA", 0):
            a = a.t()
        if attrs.get("transB", 0):
            b = b.t()
        y = rtx.matmul(a, b)
        if alpha != 1.0:
            y = y * alpha
        if c is not None:
            y = y + (c * beta if beta != 1.0 else c)
        return y
    x, w = arr(a), arr(b)
    x = x.T if attrs.get("transA", 0) else x
    w = w.T if attrs.get("transB", 0) else w
    y = alpha * (x @ w)
    if c is not None:
        y = y + beta * arr(c)
    return const(y.astype(x.dtype))


@op("Einsum")
def einsum(inputs, attrs, opset):
    eq = attrs["equation"].replace(" ", "")
    if all(is_grad_float(x) for x in inputs):
        return rtx.einsum(eq, *inputs)
    return const(np.einsum(eq, *[arr(x) for x in inputs]))


@op("Det")
def det(inputs, attrs, opset):
    x = inputs[0]
    if is_grad_float(x) and arr(x).dtype != np.float16:
        return rtx.det(x)
    return const(np.linalg.det(arr(x)).astype(arr(x).dtype))


# ---- convolution --------------------------------------------------------------------------------
def _conv_pads(attrs, in_shape, kernel, strides, dilations):
    nd = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads_b, pads_e = [], []
        for i in range(nd):
            out = -(-in_shape[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_shape[i], 0)
            small, big = total // 2, total - total // 2
            pads_b.append(small if auto == "SAME_UPPER" else big)
            pads_e.append(big if auto == "SAME_UPPER" else small)
        return pads_b, pads_e
    if auto == "VALID":
        return [0] * nd, [0] * nd
    pads = attrs.get("pads") or [0] * (2 * nd)
    return list(pads[:nd]), list(pads[nd:])


def _pad_spatial(x, pads_b, pads_e, value=0.0):
    """Constant-pad the spatial dims (2...) of x, differentiably."""
    out = x
    for i, (b, e) in enumerate(zip(pads_b, pads_e)):
        axis = 2 + i
        if b == 0 and e == 0:
            continue
        parts = []
        for n in (b, e):
            shp = list(arr(out).shape)
            shp[axis] = n
            parts.append(const(np.full(shp, value, dtype=arr(out).dtype)))
        out = concat([parts[0], out, parts[1]], axis)
    return out


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


@op("Conv")
def conv(inputs, attrs, opset):
    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    xs, ws = arr(x).shape, arr(w).shape
    nd = len(ws) - 2
    kernel = attrs.get("kernel_shape") or list(ws[2:])
    strides = attrs.get("strides") or [1] * nd
    dil = attrs.get("dilations") or [1] * nd
    pb, pe = _conv_pads(attrs, xs[2:], kernel, strides, dil)
    group = attrs.get("group", 1)
    if pb == pe:
        padding = tuple(pb)
    else:
        x, padding = _pad_spatial(x, pb, pe), 0
    if nd not in _CONV:
        raise NotImplementedError(f"Conv: {nd}-d convolution is not supported (1-d, 2-d and 3-d are)")
    return _CONV[nd](x, w, b, stride=tuple(strides), padding=padding, dilation=tuple(dil), groups=group)


@op("ConvTranspose")
def conv_transpose(inputs, attrs, opset):
    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    xs, ws = arr(x).shape, arr(w).shape
    nd = len(ws) - 2
    group = attrs.get("group", 1)
    kernel = attrs.get("kernel_shape") or list(ws[2:])
    strides = attrs.get("strides") or [1] * nd
    dil = attrs.get("dilations") or [1] * nd
    out_pad = attrs.get("output_padding") or [0] * nd
    full = [(xs[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 for i in range(nd)]
    auto = attrs.get("auto_pad", "NOTSET")
    out_shape = attrs.get("output_shape")
    if out_shape and not attrs.get("pads"):
        out_shape = list(out_shape[-nd:])
        total = [full[i] + out_pad[i] - out_shape[i] for i in range(nd)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
        pe = [t - p for t, p in zip(total, pb)]
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [xs[2 + i] * strides[i] for i in range(nd)]
        total = [full[i] + out_pad[i] - out_shape[i] for i in range(nd)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
        pe = [t - p for t, p in zip(total, pb)]
    elif auto == "VALID":
        pb, pe = [0] * nd, [0] * nd
    else:
        pads = attrs.get("pads") or [0] * (2 * nd)
        pb, pe = list(pads[:nd]), list(pads[nd:])
    if nd not in _CONVT:
        raise NotImplementedError(f"ConvTranspose: {nd}-d is not supported (1-d, 2-d and 3-d are)")
    y = _CONVT[nd](x, w, None, stride=tuple(strides), padding=0, output_padding=0, groups=group,
                   dilation=tuple(dil))
    # output_padding adds zeros at the end; pads crop the full result
    if any(out_pad):
        y = _pad_spatial(y, [0] * nd, out_pad)
    for i in range(nd):
        n = arr(y).shape[2 + i]
        if pb[i] or pe[i]:
            if pb[i] < 0 or pe[i] < 0:
                y = _pad_spatial(y, [max(-pb[i], 0) if j == i else 0 for j in range(nd)],
                                 [max(-pe[i], 0) if j == i else 0 for j in range(nd)])
                n = arr(y).shape[2 + i]
            y = slice_axis(y, 2 + i, max(pb[i], 0), n - max(pe[i], 0))
    if b is not None:
        y = y + reshape(b, [1, -1] + [1] * nd)
    return y


# ---- pooling ------------------------------------------------------------------------------------
def _pool_geometry(attrs, in_shape, kernel, strides, dil):
    nd = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    ceil_mode = attrs.get("ceil_mode", 0)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-in_shape[i] // strides[i]) for i in range(nd)]
        pb, pe = [], []
        for i in range(nd):
            total = max((out[i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_shape[i], 0)
            small, big = total // 2, total - total // 2
            pb.append(small if auto == "SAME_UPPER" else big)
            pe.append(big if auto == "SAME_UPPER" else small)
        return out, pb, pe
    if auto == "VALID":
        pb, pe = [0] * nd, [0] * nd
    else:
        pads = attrs.get("pads") or [0] * (2 * nd)
        pb, pe = list(pads[:nd]), list(pads[nd:])
    out = []
    for i in range(nd):
        span = in_shape[i] + pb[i] + pe[i] - ((kernel[i] - 1) * dil[i] + 1)
        if ceil_mode:
            o = -(-span // strides[i]) + 1
            if (o - 1) * strides[i] >= in_shape[i] + pb[i]:  # the last window must start inside
                o -= 1
        else:
            o = span // strides[i] + 1
        out.append(max(o, 0))
    return out, pb, pe


def _end_pads(shp, out, kernel, strides, dil, pb, pe):
    """The end padding: pe plus whatever the last (ceil-mode) window reaches past it."""
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, strides, kernel, dil)]
    return [e + max(m - (n + b + e), 0) for m, n, b, e in zip(need, shp[2:], pb, pe)]


def _window_view(a, out, kernel, strides, dil, pb, pe, fill):
    """An array (N, C, *S) -> a read-only (N, C, *out, *kernel) view of every pooling window over a
    copy padded with `fill`."""
    pads = list(zip(pb, _end_pads(a.shape, out, kernel, strides, dil, pb, pe)))
    return _win.sliding_windows(_win.pad(a, pads, fill), kernel, strides, dil, out_shape=out, kernel_first=False,
                                writeable=False)


def _windows(x, out, kernel, strides, dil, pb, pe, fill):
    """(N, C, *S) -> (N, C, *out, *kernel): every pooling window, padded with `fill`. Float tensors
    gather the windows with `take`, which autograd runs back through (a strided view has no
    gradient here); other types get rtx.kernel.windows's strided view."""
    if not is_grad_float(x):
        return const(_window_view(arr(x), out, kernel, strides, dil, pb, pe, fill))
    nd = len(kernel)
    x = _pad_spatial(x, pb, _end_pads(arr(x).shape, out, kernel, strides, dil, pb, pe), fill)
    for i in range(nd):
        idx = (np.arange(out[i]) * strides[i])[:, None] + (np.arange(kernel[i]) * dil[i])[None, :]
        x = take(x, 2 + 2 * i, idx)
    perm = [0, 1] + [2 + 2 * i for i in range(nd)] + [3 + 2 * i for i in range(nd)]
    return rtx.permute(x, tuple(perm))


def _window_counts(in_shape, out, kernel, strides, dil, pb, pe, include_pad):
    """How many positions each window averages over (pads count when include_pad; the ceil overhang never)."""
    nd = len(kernel)
    mask = np.ones((1, 1) + tuple(in_shape), np.float64)
    fill = 1.0 if include_pad else 0.0
    w = _window_view(mask, out, kernel, strides, dil, pb, pe, fill)
    if include_pad:
        # the overhang beyond the explicit pads does not count
        for i in range(nd):
            pos = (np.arange(out[i]) * strides[i])[:, None] + (np.arange(kernel[i]) * dil[i])[None, :]
            inside = (pos < in_shape[i] + pb[i] + pe[i]).astype(np.float64)
            shape = [1] * (2 + 2 * nd)
            shape[2 + i], shape[2 + nd + i] = out[i], kernel[i]
            w = w * inside.reshape(shape)
    return w.reshape(w.shape[:2 + nd] + (int(np.prod(kernel)),)).sum(-1)


def _pool_args(x, attrs):
    shp = arr(x).shape
    nd = len(shp) - 2
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides") or [1] * nd
    dil = attrs.get("dilations") or [1] * nd
    return shp, nd, kernel, strides, dil


def _simple(attrs, pb, pe, kernel, dil):
    return (not attrs.get("ceil_mode", 0) and pb == pe
            and all(p <= ((k - 1) * d + 1) // 2 for p, k, d in zip(pb, kernel, dil)))


@op("MaxPool")
def max_pool(inputs, attrs, opset):
    x = inputs[0]
    shp, nd, kernel, strides, dil = _pool_args(x, attrs)
    out, pb, pe = _pool_geometry(attrs, shp[2:], kernel, strides, dil)
    want_idx = attrs["_n_outputs"] > 1
    if is_grad_float(x) and not want_idx and nd in (1, 2, 3) and _simple(attrs, pb, pe, kernel, dil):
        fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
        return fn(x, tuple(kernel), tuple(strides), tuple(pb), tuple(dil))
    a = arr(x)
    fill = -np.inf if a.dtype.kind in "fV" else np.iinfo(a.dtype).min
    w = _windows(x, out, kernel, strides, dil, pb, pe, fill)
    flat = reshape(w, arr(w).shape[:2 + nd] + (int(np.prod(kernel)),))  # not -1: zero-size batches
    if is_grad_float(flat):
        y = rtx.amax(flat, dim=-1)
    else:
        y = const(np.max(arr(flat), axis=-1))
    if not want_idx:
        return y
    # Indices: flat positions in the unpadded input (row-major, or column-major for storage_order=1)
    pos = np.arange(int(np.prod(shp))).reshape(shp).astype(np.float64)
    wpos = _window_view(pos, out, kernel, strides, dil, pb, pe, -1.0).reshape(arr(flat).shape)
    am = np.argmax(np.where(wpos >= 0, arr(flat).astype(np.float64), -np.inf), axis=-1)
    idx = np.take_along_axis(wpos, am[..., None], -1)[..., 0].astype(np.int64)
    if attrs.get("storage_order", 0):
        nc = idx // int(np.prod(shp[2:]))
        rem = idx % int(np.prod(shp[2:]))
        coords = np.unravel_index(rem, shp[2:])
        col = np.ravel_multi_index(coords, shp[2:], order="F")
        idx = nc * int(np.prod(shp[2:])) + col
    return y, const(idx)


@op("AveragePool")
def average_pool(inputs, attrs, opset):
    x = inputs[0]
    shp, nd, kernel, strides, dil = _pool_args(x, attrs)
    out, pb, pe = _pool_geometry(attrs, shp[2:], kernel, strides, dil)
    include = attrs.get("count_include_pad", 0)
    if is_grad_float(x) and nd in (1, 2, 3) and all(d == 1 for d in dil) and _simple(attrs, pb, pe, kernel, dil):
        fn = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
        return fn(x, tuple(kernel), tuple(strides), tuple(pb), count_include_pad=bool(include))
    w = _windows(x, out, kernel, strides, dil, pb, pe, 0.0)
    flat = reshape(w, arr(w).shape[:2 + nd] + (int(np.prod(kernel)),))  # not -1: zero-size batches
    counts = _window_counts(shp[2:], out, kernel, strides, dil, pb, pe, include)
    if is_grad_float(flat):
        return rtx.sum(flat, dim=-1) / const(counts.astype(arr(x).dtype))
    return const((np.sum(arr(flat), axis=-1) / counts).astype(arr(x).dtype))


@op("LpPool")
def lp_pool(inputs, attrs, opset):
    x = inputs[0]
    p = attrs.get("p", 2)
    shp, nd, kernel, strides, dil = _pool_args(x, attrs)
    out, pb, pe = _pool_geometry(attrs, shp[2:], kernel, strides, dil)
    w = _windows(x, out, kernel, strides, dil, pb, pe, 0.0)
    flat = reshape(w, arr(w).shape[:2 + nd] + (int(np.prod(kernel)),))  # not -1: zero-size batches
    return rtx.pow(rtx.sum(rtx.pow(rtx.abs(flat), p), dim=-1), 1.0 / p)


@op("GlobalAveragePool")
def global_average_pool(inputs, attrs, opset):
    x = inputs[0]
    dims = tuple(range(2, arr(x).ndim))
    return rtx.mean(x, dim=dims, keepdim=True) if dims else x


@op("GlobalMaxPool")
def global_max_pool(inputs, attrs, opset):
    x = inputs[0]
    dims = tuple(range(2, arr(x).ndim))
    return rtx.amax(x, dim=dims, keepdim=True) if dims else x


@op("GlobalLpPool")
def global_lp_pool(inputs, attrs, opset):
    x = inputs[0]
    p = attrs.get("p", 2)
    dims = tuple(range(2, arr(x).ndim))
    return rtx.pow(rtx.sum(rtx.pow(rtx.abs(x), p), dim=dims, keepdim=True), 1.0 / p)


@op("MaxUnpool")
def max_unpool(inputs, attrs, opset):
    x, idx = arr(inputs[0]), arr(inputs[1]).astype(np.int64)
    shp = x.shape
    nd = len(shp) - 2
    kernel = attrs["kernel_shape"]
    strides = attrs.get("strides") or [1] * nd
    pads = attrs.get("pads") or [0] * (2 * nd)
    inferred = list(shp[:2]) + [(shp[2 + i] - 1) * strides[i] - pads[i] - pads[nd + i] + kernel[i]
                                for i in range(nd)]
    y = np.zeros(int(np.prod(inferred)), x.dtype)
    y[idx.reshape(-1)] = x.reshape(-1)
    y = y.reshape(inferred)
    if len(inputs) > 2 and inputs[2] is not None:  # a larger requested shape: zeros after the inferred block
        out = np.zeros(ints(inputs[2]), x.dtype)
        out[tuple(slice(0, n) for n in inferred)] = y
        y = out
    return const(y)


# ---- normalization ------------------------------------------------------------------------------
def _bshape(v, nd):
    return reshape(v, [-1] + [1] * (nd - 2))


@op("BatchNormalization")
def batch_norm(inputs, attrs, opset):
    x, scale, bias, mean, var = inputs[:5]
    nd = arr(x).ndim
    eps = attrs.get("epsilon", 1e-5)
    # opset 14+: the training_mode attribute; before: training when the statistics outputs are asked for
    if opset >= 14:
        training = bool(attrs.get("training_mode", 0))
    else:
        training = attrs["_n_outputs"] > 1 and not attrs.get("is_test", 0)
    if not training:
        inv = rtx.rsqrt(var + eps) if is_grad_float(var) else const(1 / np.sqrt(arr(var) + eps))
        return (x - _bshape(mean, nd)) * _bshape(inv * scale, nd) + _bshape(bias, nd)
    axes = tuple(d for d in range(nd) if d != 1)
    momentum = attrs.get("momentum", 0.9)
    bm = rtx.mean(x, dim=axes)
    bv = rtx.mean((x - _bshape(bm, nd)) ** 2, dim=axes)
    y = (x - _bshape(bm, nd)) * _bshape(rtx.rsqrt(bv + eps) * scale, nd) + _bshape(bias, nd)
    run_mean = mean * momentum + bm.detach() * (1 - momentum)
    run_var = var * momentum + bv.detach() * (1 - momentum)
    if opset >= 14:
        return y, run_mean, run_var
    return y, run_mean, run_var, bm, bv


@op("InstanceNormalization")
def instance_norm(inputs, attrs, opset):
    x, scale, bias = inputs
    nd = arr(x).ndim
    eps = attrs.get("epsilon", 1e-5)
    dims = tuple(range(2, nd))
    m = rtx.mean(x, dim=dims, keepdim=True)
    v = rtx.mean((x - m) ** 2, dim=dims, keepdim=True)
    return (x - m) * rtx.rsqrt(v + eps) * _bshape(scale, nd) + _bshape(bias, nd)


def _stash(x, attrs):
    """Compute in float32 (stash_type=1) when the input is a lower precision float."""
    if attrs.get("stash_type", 1) == 1 and arr(x).dtype != np.float32 and arr(x).dtype != np.float64:
        return x.to(rtx.float32), True
    return x, False


@op("LayerNormalization")
def layer_norm(inputs, attrs, opset):
    x, scale = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    nd = arr(x).ndim
    axis = wrap_axis(attrs.get("axis", -1), nd, "LayerNormalization")
    eps = attrs.get("epsilon", 1e-5)
    dims = tuple(range(axis, nd))
    xs, low = _stash(x, attrs)
    m = rtx.mean(xs, dim=dims, keepdim=True)
    d = xs - m
    v = rtx.mean(d * d, dim=dims, keepdim=True)
    inv = rtx.rsqrt(v + eps)
    y = d * inv
    if low:
        y = y.to(x.dtype)
    y = y * scale
    if bias is not None:
        y = y + bias
    return y, m, inv


@op("RMSNormalization")
def rms_norm(inputs, attrs, opset):
    x, scale = inputs[0], inputs[1]
    nd = arr(x).ndim
    axis = wrap_axis(attrs.get("axis", -1), nd, "RMSNormalization")
    eps = attrs.get("epsilon", 1e-5)
    dims = tuple(range(axis, nd))
    xs, low = _stash(x, attrs)
    y = xs * rtx.rsqrt(rtx.mean(xs * xs, dim=dims, keepdim=True) + eps)
    if low:
        y = y.to(x.dtype)
    return y * scale


@op("GroupNormalization")
def group_norm(inputs, attrs, opset):
    x, scale, bias = inputs
    shp = arr(x).shape
    g = attrs["num_groups"]
    eps = attrs.get("epsilon", 1e-5)
    n, c = shp[0], shp[1]
    xs, low = _stash(x, attrs)
    grouped = reshape(xs, (n, g, -1))
    m = rtx.mean(grouped, dim=-1, keepdim=True)
    d = grouped - m
    v = rtx.mean(d * d, dim=-1, keepdim=True)
    y = reshape(d * rtx.rsqrt(v + eps), shp)
    if low:
        y = y.to(x.dtype)
    nd = len(shp)
    if arr(scale).shape[0] != c:  # opset 18: one scale and bias per group
        per_channel = np.repeat(np.arange(g), c // g)
        scale, bias = take(scale, 0, per_channel), take(bias, 0, per_channel)
    return y * _bshape(scale, nd) + _bshape(bias, nd)


@op("LpNormalization")
def lp_normalization(inputs, attrs, opset):
    x = inputs[0]
    axis = wrap_axis(attrs.get("axis", -1), arr(x).ndim, "LpNormalization")
    p = attrs.get("p", 2)
    if p == 1:
        norm = rtx.sum(rtx.abs(x), dim=axis, keepdim=True)
    else:
        norm = rtx.sqrt(rtx.sum(x * x, dim=axis, keepdim=True))
    zero = norm == 0
    return rtx.where(zero, rtx.zeros_like(x), x / rtx.where(zero, rtx.ones_like(norm), norm))


@op("LRN")
def lrn(inputs, attrs, opset):
    x = inputs[0]
    size = attrs["size"]
    alpha, beta, bias = attrs.get("alpha", 1e-4), attrs.get("beta", 0.75), attrs.get("bias", 1.0)
    c = arr(x).shape[1]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    sq = x * x
    padded = _pad_spatial_axis1(sq, lo, hi)
    total = None
    for j in range(size):
        part = slice_axis(padded, 1, j, j + c)
        total = part if total is None else total + part
    return x / rtx.pow(total * (alpha / size) + bias, beta)


def _pad_spatial_axis1(x, lo, hi):
    shp = list(arr(x).shape)
    parts = []
    for n in (lo, hi):
        shp[1] = n
        parts.append(const(np.zeros(shp, arr(x).dtype)))
    return concat([parts[0], x, parts[1]], 1)


# ---- softmax family -----------------------------------------------------------------------------
def _softmax_like(inputs, attrs, opset, fn):
    x = inputs[0]
    shp = arr(x).shape
    if opset < 13:
        axis = wrap_axis(attrs.get("axis", 1), len(shp), "Softmax")
        # explicit sizes, not -1: a tensor with a zero-size dimension has no inferable -1
        flat = reshape(x, (int(np.prod(shp[:axis], dtype=np.int64)), int(np.prod(shp[axis:], dtype=np.int64))))
        return reshape(fn(flat, 1), shp)
    return fn(x, wrap_axis(attrs.get("axis", -1), len(shp), "Softmax"))


def _softmax(x, d):
    if arr(x).dtype.itemsize == 2:
        # half precision: the primitive steps in the input's dtype, rounding as the ONNX reference does
        e = rtx.exp(x - rtx.amax(x, dim=d, keepdim=True).detach())
        return e / rtx.sum(e, dim=d, keepdim=True)
    return F.softmax(x, dim=d)


def _log_softmax(x, d):
    if arr(x).dtype.itemsize == 2:
        z = x - rtx.amax(x, dim=d, keepdim=True).detach()
        return z - rtx.log(rtx.sum(rtx.exp(z), dim=d, keepdim=True))
    return F.log_softmax(x, dim=d)


@op("Softmax")
def softmax(inputs, attrs, opset):
    return _softmax_like(inputs, attrs, opset, _softmax)


@op("LogSoftmax")
def log_softmax(inputs, attrs, opset):
    return _softmax_like(inputs, attrs, opset, _log_softmax)


@op("Hardmax")
def hardmax(inputs, attrs, opset):
    def fn(x, d):
        a = arr(x)
        am = np.argmax(a, axis=d)
        return const((np.arange(a.shape[d]).reshape([-1 if i == d else 1 for i in range(a.ndim)])
                      == np.expand_dims(am, d)).astype(a.dtype))
    return _softmax_like(inputs, attrs, opset, fn)


# ---- dropout ------------------------------------------------------------------------------------
@op("Dropout")
def dropout(inputs, attrs, opset):
    x = inputs[0]
    if opset >= 12:
        ratio = scalar(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else 0.5
        training = bool(scalar(inputs[2])) if len(inputs) > 2 and inputs[2] is not None else False
    else:
        ratio, training = attrs.get("ratio", 0.5), False
    if not training or ratio == 0:
        return x, const(np.ones(arr(x).shape, bool))
    seed = attrs.get("seed")
    # With a seed: NumPy's legacy Mersenne Twister, the generator the ONNX reference draws from
    rng = np.random.RandomState(seed) if seed is not None else np.random.default_rng()
    keep = rng.uniform(0.0, 1.0, arr(x).shape) >= ratio
    scale = 1.0 / (1.0 - ratio)
    return x * const((keep * scale).astype(arr(x).dtype)), const(keep)


# ---- resampling ---------------------------------------------------------------------------------
def _coords(mode, out_n, in_n, scale, roi):
    y = np.arange(out_n, dtype=np.float64)
    if mode == "align_corners":
        width = scale * in_n  # the real-valued output length, as the spec computes it
        return (np.zeros(out_n) if width == 1 else y * (in_n - 1) / (width - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        lo, hi = roi
        if out_n == 1:
            x = np.full(out_n, (hi - lo) * (in_n - 1) / 2)
        else:
            x = y * (hi - lo) * (in_n - 1) / (out_n - 1)
        x = x + lo * (in_n - 1)
        return x, (x < 0) | (x > in_n - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(out_n, -0.5) if scale * in_n == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        adjustment = out_n / (scale * in_n)
        offset = in_n / 2 * (1 - adjustment)
        return offset + (y + 0.5) / scale - 0.5, None
    raise ValueError(f"Resize: unknown coordinate_transformation_mode {mode!r}")


def _kernel(mode, ratio, scale, a, antialias, nearest_mode):
    if mode == "nearest":
        if ratio == 1:
            return np.array([0.0, 1.0])
        return {"round_prefer_floor": np.array([ratio <= 0.5, ratio > 0.5], float),
                "round_prefer_ceil": np.array([ratio < 0.5, ratio >= 0.5], float),
                "floor": np.array([1.0, 0.0]), "ceil": np.array([0.0, 1.0])}[nearest_mode]
    if mode == "linear":
        if antialias and scale < 1:
            start = int(np.floor(-1 / scale) + 1)
            t = (np.arange(start, start + 2 - 2 * start) - ratio) * scale
            c = np.clip(1 - np.abs(t), 0, 1)
            return c / c.sum()
        return np.array([1 - ratio, ratio])
    if mode == "cubic":
        if antialias and scale < 1:
            i0 = int(np.floor(-2 / scale) + 1)
            t = np.abs(scale * (np.arange(i0, 2 - i0) - ratio))
            c = np.where(t <= 1, (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1,
                         np.where(t < 2, a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a, 0.0))
            return c / c.sum()
        r = ratio
        return np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                         ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a])
    raise ValueError(f"Resize: unknown mode {mode!r}")


def resize_matrix(in_n, out_n, scale, attrs, roi=None, mode=None):
    """(out_n, in_n) interpolation weights along one axis, plus the rows to extrapolate."""
    mode = mode or attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    x, extrap = _coords(ctm, out_n, in_n, scale, roi)
    W = np.zeros((out_n, in_n))
    for o in range(out_n):
        xo = x[o]
        base = math.floor(xo)
        ratio = 1.0 if xo == base else xo - base
        c = _kernel(mode, ratio, scale, attrs.get("cubic_coeff_a", -0.75), attrs.get("antialias", 0),
                    attrs.get("nearest_mode", "round_prefer_floor"))
        n = len(c)
        start = (base - n // 2) if xo == base else base - n // 2 + 1
        idx = np.arange(start, start + n)
        if attrs.get("exclude_outside", 0):
            c = np.where((idx < 0) | (idx >= in_n), 0.0, c)
            c = c / (c.sum() or 1.0)
        np.add.at(W[o], np.clip(idx, 0, in_n - 1), c)
    return W, extrap


def _resize(x, sizes, scales, attrs, roi=None, axes=None, mode=None):
    a = arr(x)
    r = a.ndim
    axes = list(range(r)) if axes is None else [wrap_axis(ax, r, "Resize") for ax in axes]
    full_roi = None
    if roi is not None and len(roi):
        full_roi = {ax: (roi[i], roi[len(axes) + i]) for i, ax in enumerate(axes)}
    if sizes is not None:
        sc = {ax: sizes[i] / a.shape[ax] for i, ax in enumerate(axes)}
        out = {ax: sizes[i] for i, ax in enumerate(axes)}
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            s = min(sc.values()) if policy == "not_larger" else max(sc.values())
            sc = {ax: s for ax in axes}
            out = {ax: int(s * a.shape[ax] + 0.5) for ax in axes}
    else:
        sc = {ax: scales[i] for i, ax in enumerate(axes)}
        out = {ax: int(math.floor(sc[ax] * a.shape[ax] + 1e-9)) for ax in axes}
    y = x
    for ax in axes:
        in_n, out_n = a.shape[ax], out[ax]
        roi_ax = full_roi[ax] if full_roi else (0.0, 1.0)
        if out_n == in_n and sc[ax] == 1.0 and roi_ax == (0.0, 1.0):
            continue
        W, extrap = resize_matrix(in_n, out_n, sc[ax], attrs, roi_ax, mode)
        y = _apply_axis(y, W, ax, extrap, attrs.get("extrapolation_value", 0.0),
                        (mode or attrs.get("mode", "nearest")) == "nearest")
    return y


def _apply_axis(x, W, axis, extrap, extrap_value, nearest):
    a = arr(x)
    if nearest and extrap is None:
        return take(x, axis, W.argmax(1))
    if is_grad_float(x):
        moved = rtx.movedim(x, axis, -1)
        y = rtx.matmul(moved, const(W.T.astype(a.dtype)))
        if extrap is not None and extrap.any():
            y = rtx.where(const(extrap), const(np.array(extrap_value, a.dtype)), y)
        return rtx.movedim(y, -1, axis)
    moved = np.moveaxis(a.astype(np.float64), axis, -1)
    y = moved @ W.T
    if extrap is not None and extrap.any():
        y = np.where(extrap, extrap_value, y)
    y = np.moveaxis(y, -1, axis)
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        y = np.clip(np.rint(y), info.min, info.max)
    return const(y.astype(a.dtype))


@op("Resize")
def resize(inputs, attrs, opset):
    x = inputs[0]
    if opset < 11:
        scales = [float(v) for v in arr(inputs[1]).reshape(-1)]
        a = dict(attrs, coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        return _resize(x, None, scales, a)
    roi = inputs[1] if len(inputs) > 1 else None
    scales = inputs[2] if len(inputs) > 2 else None
    sizes = inputs[3] if len(inputs) > 3 else None
    roi = None if roi is None or arr(roi).size == 0 else [float(v) for v in arr(roi).reshape(-1)]
    scales = None if scales is None or arr(scales).size == 0 else [float(v) for v in arr(scales).reshape(-1)]
    sizes = None if sizes is None or arr(sizes).size == 0 else ints(sizes)
    return _resize(x, sizes, scales, attrs, roi, attrs.get("axes"))


@op("Upsample")
def upsample(inputs, attrs, opset):
    x = inputs[0]
    scales = attrs.get("scales") if opset < 9 else [float(v) for v in arr(inputs[1]).reshape(-1)]
    mode = attrs.get("mode", "nearest")
    a = dict(attrs, coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return _resize(x, None, scales, a, mode="linear" if mode in ("linear", "bilinear") else "nearest")

