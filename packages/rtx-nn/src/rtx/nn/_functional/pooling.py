"""Pooling: max/avg pooling (1-D, 2-D, 3-D) with PyTorch's stride, padding, dilation, ceil_mode,
count_include_pad and divisor_override; adaptive avg/max pooling; max_unpool; lp_pool.

Windows are strided slices of the padded input, one per kernel offset: a max pool is a few
elementwise maxima over whole (N, C, *out) blocks, never a loop over pixels. The max pool keeps
the winning kernel offset of each output (first maximum on ties, as PyTorch; a NaN wins); its
gradient adds the incoming gradient back at that offset. Every backward here is itself built
from primitives with backwards (gather <-> scatter pairs), so double backward works.
"""
from __future__ import annotations

import itertools

import numpy as np

from rtx.extend import Primitive, Tensor, raw, wrap
from rtx.nn._functional.conv import batched, check_float, crop, expand_param, pad_zeros
from rtx.runtime.devices import array_module

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool1d",
           "lp_pool2d", "lp_pool3d"]


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


class _Pool:
    """The geometry of one pooling call: kernel, stride, dilation, (lo, hi) pads where hi also
    covers ceil_mode's extra window, and the output shape."""

    __slots__ = ("kernel", "stride", "dilation", "pads", "out", "in_shape")

    def __init__(self, kernel, stride, dilation, pads, out, in_shape):
        self.kernel, self.stride, self.dilation = kernel, stride, dilation
        self.pads, self.out, self.in_shape = pads, out, in_shape

    def offsets(self):
        return list(itertools.product(*(range(k) for k in self.kernel)))

    def slices(self, off):
        """The strided block of the padded input that kernel offset `off` sees across all outputs."""
        return (slice(None), slice(None)) + tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, self.dilation, self.stride, self.out))

    def padded_shape(self, lead):
        return tuple(lead) + tuple(n + lo + hi for n, (lo, hi) in zip(self.in_shape, self.pads))


def _pool_out(n, k, s, p, d, ceil_mode):
    # PyTorch's pooling_output_shape: the last window must start inside the input or left padding.
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode, max_pool):
    kernel = expand_param(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        expand_param(stride, nd, "stride", op)
    padding = expand_param(padding, nd, "padding", op)
    dilation = expand_param(dilation, nd, "dilation", op)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {list(kernel)}")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: stride must be greater than zero, but got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {list(dilation)}")
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0:
            raise RuntimeError(f"{op}: pad must be non-negative, but got pad={list(padding)}")
        if max_pool and p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
        if not max_pool and p > k // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation=1")
    in_shape = tuple(x.shape[2:])
    out = tuple(_pool_out(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(in_shape, kernel, stride, padding,
                                                                             dilation))
    if any(o <= 0 for o in out):
        C = x.shape[1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (C,) + in_shape))}). Calculated output size: "
                           f"({'x'.join(map(str, (C,) + out))}). Output size is too small")
    pads = tuple((p, max(0, (o - 1) * s + d * (k - 1) + 1 - n - p))
                 for n, k, s, p, d, o in zip(in_shape, kernel, stride, padding, dilation, out))
    return _Pool(kernel, stride, dilation, pads, out, in_shape)


# ---- max pooling -----------------------------------------------------------------------------


def _lowest(dt):
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return False if dt.kind == "b" else -np.inf  # bfloat16 (kind 'V') takes -inf too


def _arg_dtype(K):
    return np.uint8 if K <= 255 else np.int32


def _valid(geo, off, xp):
    """Where kernel offset `off` lands inside the unpadded input, as a (*out) boolean mask."""
    nd = len(geo.kernel)
    mask = None
    for i, (o, d, s, n, (lo, _)) in enumerate(zip(off, geo.dilation, geo.stride, geo.out, geo.pads)):
        pos = np.arange(n) * s + o * d - lo
        m = ((pos >= 0) & (pos < geo.in_shape[i])).reshape((n,) + (1,) * (nd - 1 - i))
        mask = m if mask is None else mask & m
    return xp.asarray(mask)


def _max_fwd(x, geo, need_arg):
    """The window maxima (elementwise maxima of one strided block per kernel offset) and, when
    asked, the kernel offset of each maximum: PyTorch's first maximum, last NaN, and never a
    padding position."""
    xp = array_module(x)
    low = _lowest(x.dtype)
    xpad = pad_zeros(x, geo.pads, value=low)
    offs = geo.offsets()
    blocks = [xpad[geo.slices(off)] for off in offs]
    cur = blocks[0].copy()
    for v in blocks[1:]:
        xp.maximum(cur, v, out=cur)  # propagates NaN, as PyTorch
    if not need_arg:
        return cur, None
    adt = np.dtype(_arg_dtype(len(offs)))
    arg = xp.zeros(cur.shape, dtype=adt)
    hit, step = xp.empty(cur.shape, dtype=bool), xp.empty(cur.shape, dtype=adt)
    open_ = xp.ones(cur.shape, dtype=bool)  # windows whose maximum is not found yet
    # The first match wins, found with arithmetic on bool/uint8 arrays: masked writes
    # (copyto(where=), putmask) run ~10x slower in NumPy than these elementwise ops (measured).
    for k in range(len(offs)):
        xp.equal(blocks[k], cur, out=hit)
        xp.logical_and(hit, open_, out=hit)
        if k:
            arg += xp.multiply(hit, adt.type(k), out=step)
        if k + 1 < len(offs):
            xp.logical_xor(open_, hit, out=open_)
    if x.dtype.kind not in "iub" and bool(xp.isnan(cur).any()):
        for k, v in enumerate(blocks):  # PyTorch: `val > maxval || isnan(val)`, so the last NaN
            xp.copyto(arg, k, where=xp.isnan(v))
    if any(lo or hi for lo, hi in geo.pads):
        at_low = cur == low
        if bool(at_low.any()):  # maximum equal to the padding value: the first real position
            for k in range(len(offs) - 1, -1, -1):
                xp.copyto(arg, k, where=at_low & (blocks[k] == low) & _valid(geo, offs[k], xp))
    return cur, arg


def _non_overlapping(geo):
    return all(s >= d * (k - 1) + 1 for s, d, k in zip(geo.stride, geo.dilation, geo.kernel))


def _flat_indices(arg, geo):
    """Each output's argmax as a flat index into its (unpadded) input plane, int64."""
    xp = array_module(arg)
    a = arg.astype(np.int64)
    nd = len(geo.kernel)
    flat = xp.zeros(arg.shape, dtype=np.int64)
    rest = a
    coords = [None] * nd
    for i in range(nd - 1, -1, -1):
        coords[i] = rest % geo.kernel[i]
        rest = rest // geo.kernel[i]
    for i in range(nd):
        base = xp.arange(geo.out[i], dtype=np.int64) * geo.stride[i] - geo.pads[i][0]
        base = base.reshape((geo.out[i],) + (1,) * (nd - 1 - i))
        c = base + coords[i] * geo.dilation[i]
        flat = flat * geo.in_shape[i] + c
    return flat


class MaxPool(Primitive):
    non_differentiable_outputs = (1,)

    @staticmethod
    def forward(ctx, x, *, geo, return_indices):
        need_arg = return_indices or bool(ctx.needs_input_grad)
        out, arg = _max_fwd(raw(x), geo, need_arg)
        ctx.geo, ctx.arg, ctx.lead = geo, arg, raw(x).shape[:2]
        if return_indices:
            return out, _flat_indices(arg, geo)
        return out

    @staticmethod
    def backward(ctx, grad, *_):
        return MaxScatter.apply(grad, geo=ctx.geo, arg=ctx.arg, lead=ctx.lead)


class MaxScatter(Primitive):
    """The gradient of a max pool: each output's gradient goes to its argmax."""

    @staticmethod
    def forward(ctx, g, *, geo, arg, lead):
        ctx.geo, ctx.arg = geo, arg
        a = raw(g)
        xp = array_module(a)
        gpad = xp.zeros(geo.padded_shape(lead), dtype=a.dtype)
        zero = a.dtype.type(0)
        disjoint = _non_overlapping(geo)
        finite = bool(xp.isfinite(a).all())  # g * False is 0 only for finite g
        hit = xp.empty(arg.shape, dtype=bool)
        for k, off in enumerate(geo.offsets()):
            xp.equal(arg, k, out=hit)
            if disjoint and finite:  # each input position belongs to one window: write, don't add
                xp.multiply(a, hit, out=gpad[geo.slices(off)])
            elif finite:
                gpad[geo.slices(off)] += a * hit
            else:
                gpad[geo.slices(off)] += xp.where(hit, a, zero)
        return crop(gpad, geo.pads, geo.in_shape)

    @staticmethod
    def backward(ctx, grad):
        return MaxGather.apply(grad, geo=ctx.geo, arg=ctx.arg)


class MaxGather(Primitive):
    """The adjoint of MaxScatter: each output reads its argmax (double backward of max pools)."""

    @staticmethod
    def forward(ctx, x, *, geo, arg):
        ctx.geo, ctx.arg, ctx.lead = geo, arg, raw(x).shape[:2]
        a = raw(x)
        xp = array_module(a)
        xpad = pad_zeros(a, geo.pads)
        out = xp.zeros(arg.shape, dtype=a.dtype)
        zero = a.dtype.type(0)
        for k, off in enumerate(geo.offsets()):
            out += xp.where(arg == k, xpad[geo.slices(off)], zero)
        return out

    @staticmethod
    def backward(ctx, grad):
        return MaxScatter.apply(grad, geo=ctx.geo, arg=ctx.arg, lead=ctx.lead)


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.is_complex():
        raise RuntimeError(f"{op}: complex tensors are not supported")
    x, unbatched = batched(input, nd, op)
    geo = _geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode, True)
    res = MaxPool.apply(x, geo=geo, return_indices=bool(return_indices))
    if unbatched:
        return tuple(r.squeeze(0) for r in res) if return_indices else res.squeeze(0)
    return res


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, L) or (C, L); stride defaults to kernel_size."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, H, W) or (C, H, W); with return_indices also the flat
    index (h * W + w) of each maximum in its input plane (int64), as max_unpool2d takes them."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- average pooling -------------------------------------------------------------------------


def _avg_divisor(geo, xp, dtype, count_include_pad, divisor_override):
    if divisor_override:
        return dtype.type(divisor_override)
    div = None
    for n, k, s, (p, _), o in zip(geo.in_shape, geo.kernel, geo.stride, geo.pads, geo.out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        size = end - start if count_include_pad else np.minimum(end, n) - np.maximum(start, 0)
        div = size if div is None else np.multiply.outer(div, size)
    return xp.asarray(div.astype(dtype))


class AvgPool(Primitive):
    @staticmethod
    def forward(ctx, x, *, geo, div):
        ctx.geo, ctx.div, ctx.lead = geo, div, raw(x).shape[:2]
        a = raw(x)
        xpad = pad_zeros(a, geo.pads)
        offs = geo.offsets()
        integer = a.dtype.kind in "iu"
        acc = xpad[geo.slices(offs[0])].astype(np.int64) if integer else xpad[geo.slices(offs[0])].copy()
        for off in offs[1:]:
            acc += xpad[geo.slices(off)]
        if integer:  # PyTorch divides integer sums in C++: truncation toward zero
            xp = array_module(a)
            return (xp.sign(acc) * (xp.abs(acc) // div.astype(np.int64))).astype(a.dtype)
        acc /= div
        return acc if acc.dtype == a.dtype else acc.astype(a.dtype)

    @staticmethod
    def backward(ctx, grad):
        return AvgScatter.apply(grad, geo=ctx.geo, div=ctx.div, lead=ctx.lead)


class AvgScatter(Primitive):
    """The adjoint of AvgPool: each output's gradient / divisor, added over its window."""

    @staticmethod
    def forward(ctx, g, *, geo, div, lead):
        ctx.geo, ctx.div = geo, div
        a = raw(g)
        xp = array_module(a)
        gd = a / div
        gpad = xp.zeros(geo.padded_shape(lead), dtype=a.dtype)
        for off in geo.offsets():
            gpad[geo.slices(off)] += gd
        return crop(gpad, geo.pads, geo.in_shape)

    @staticmethod
    def backward(ctx, grad):
        return AvgPool.apply(grad, geo=ctx.geo, div=ctx.div)


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if type(input) is not Tensor or raw(input).dtype.kind not in "iu":
        check_float(input, op)  # integers pool too (truncating, as PyTorch); bool and complex do not
    x, unbatched = batched(input, nd, op)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    geo = _geometry(op, x, nd, kernel_size, stride, padding, 1, ceil_mode, False)
    div = _avg_divisor(geo, array_module(raw(x)), raw(x).dtype, count_include_pad, divisor_override)
    y = AvgPool.apply(x, geo=geo, div=div)
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows. count_include_pad counts zero padding in the divisor (not the
    area ceil_mode adds past the padding); divisor_override replaces the divisor."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# ---- adaptive pooling ------------------------------------------------------------------------


def _adaptive_out(op, x, nd, output_size):
    if isinstance(output_size, (int, np.integer)) or output_size is None:
        sizes = (output_size,) * nd
    else:
        sizes = tuple(output_size)
        if len(sizes) != nd:
            raise ValueError(f"{op}: output_size must be an int or a tuple of {nd} ints, got {output_size}")
    out = tuple(n if s is None else int(s) for s, n in zip(sizes, x.shape[2:]))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{list(out)}")
    if any(n == 0 for n in x.shape[2:]):
        raise RuntimeError(f"{op}: expected input to have non-zero size for non-batch dimensions, but input has "
                           f"sizes {list(x.shape)} with dimension {2 + list(x.shape[2:]).index(0)} being empty")
    return out


def _bins(n, o):
    """PyTorch's adaptive bins: [floor(i*n/o), ceil((i+1)*n/o))."""
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)


def _adaptive_avg(op, nd, input, output_size):
    from rtx.nn._functional.misc import resample_axis
    check_float(input, op)
    x, unbatched = batched(input, nd, op)
    out = _adaptive_out(op, x, nd, output_size)
    in_shape = tuple(x.shape[2:])
    if all(o > 0 and n % o == 0 for n, o in zip(in_shape, out)):
        k = tuple(n // o for n, o in zip(in_shape, out))
        geo = _Pool(k, k, (1,) * nd, ((0, 0),) * nd, out, in_shape)
        y = AvgPool.apply(x, geo=geo, div=raw(x).dtype.type(_prod(k)))
    else:
        y = x
        for i, (n, o) in enumerate(zip(in_shape, out)):
            if n == o:
                continue
            start, end = _bins(n, o)
            kmax = int((end - start).max()) if o else 0
            taps = []
            for t in range(kmax):
                idx = np.minimum(start + t, n - 1)
                taps.append((idx, np.where(start + t < end, 1.0 / (end - start), 0.0)))
            y = resample_axis(y, 2 + i, taps, n, o)
    return y.squeeze(0) if unbatched else y


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Mean over PyTorch's adaptive bins [floor(i*n/o), ceil((i+1)*n/o)); output_size may hold None
    (keep that size). Evenly divisible sizes run as a plain average pool."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


class PlaneGather(Primitive):
    """out[n, c, j] = x[n, c, idx[n, c, j]] over flattened spatial planes."""

    @staticmethod
    def forward(ctx, x, *, idx, plane):
        ctx.idx, ctx.plane, ctx.lead = idx, plane, raw(x).shape[:2]
        a = raw(x)
        xp = array_module(a)
        flat = a.reshape(a.shape[:2] + (_prod(a.shape[2:]),))
        return xp.take_along_axis(flat, idx.reshape(idx.shape[:2] + (_prod(idx.shape[2:]),)), axis=2).reshape(idx.shape)

    @staticmethod
    def backward(ctx, grad):
        return PlaneScatter.apply(grad, idx=ctx.idx, plane=ctx.plane, lead=ctx.lead)


class PlaneScatter(Primitive):
    """The adjoint of PlaneGather: out (N, C, *plane) zero except out[n, c, idx] += g (bincount)."""

    @staticmethod
    def forward(ctx, g, *, idx, plane, lead):
        ctx.idx, ctx.plane = idx, plane
        a = raw(g)
        xp = array_module(a)
        N, C = lead
        P = _prod(plane)
        rows = xp.arange(N * C, dtype=np.int64).reshape(N, C, *([1] * (idx.ndim - 2))) * P
        flat = (rows + idx).ravel()
        out = xp.bincount(flat, weights=a.ravel().astype(np.float64) if a.dtype != np.float64 else a.ravel(),
                          minlength=N * C * P)
        return out.astype(a.dtype, copy=False).reshape((N, C) + tuple(plane))

    @staticmethod
    def backward(ctx, grad):
        return PlaneGather.apply(grad, idx=ctx.idx, plane=ctx.plane)


def _adaptive_max(op, nd, input, output_size, return_indices):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    x, unbatched = batched(input, nd, op)
    out = _adaptive_out(op, x, nd, output_size)
    in_shape = tuple(x.shape[2:])
    if all(o > 0 and n % o == 0 for n, o in zip(in_shape, out)):
        k = tuple(n // o for n, o in zip(in_shape, out))
        geo = _Pool(k, k, (1,) * nd, ((0, 0),) * nd, out, in_shape)
        res = MaxPool.apply(x, geo=geo, return_indices=bool(return_indices))
    else:
        idx = _adaptive_argmax(raw(x), in_shape, out)
        vals = PlaneGather.apply(x, idx=idx, plane=in_shape)
        res = (vals, wrap(idx)) if return_indices else vals
    if unbatched:
        return tuple(r.squeeze(0) for r in res) if return_indices else res.squeeze(0)
    return res


def _adaptive_argmax(a, in_shape, out):
    """Flat argmax indices over PyTorch's adaptive bins: gather each bin (short bins repeat their
    last element, which cannot change a first-occurrence argmax), then argmax."""
    xp = array_module(a)
    nd = len(in_shape)
    index = [slice(None), slice(None)]
    coord = []
    for i, (n, o) in enumerate(zip(in_shape, out)):
        start, end = _bins(n, o)
        kmax = int((end - start).max())
        ids = np.minimum(start[:, None] + np.arange(kmax)[None, :], (end - 1)[:, None])
        coord.append(ids)
        shape = [1] * (2 * nd)
        shape[2 * i], shape[2 * i + 1] = o, kmax
        index.append(xp.asarray(ids.reshape(shape)))
    g = a[tuple(index)]                                   # (N, C, o0, k0, o1, k1, ...)
    perm = (0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2))
    kmax = _prod(g.shape[3::2])
    g = g.transpose(perm).reshape(a.shape[:2] + tuple(out) + (kmax,))
    arg = xp.argmax(g, axis=-1)  # the first maximum
    if a.dtype.kind not in "iub":
        nan = xp.isnan(g)
        if bool(nan.any()):  # PyTorch: `val > maxval || isnan(val)`, so the last NaN
            last = kmax - 1 - xp.argmax(nan[..., ::-1], axis=-1)
            arg = xp.where(nan.any(axis=-1), last, arg)
    kshape = tuple(c.shape[1] for c in coord)
    flat = xp.zeros(arg.shape, dtype=np.int64)
    rest = arg
    ks = [None] * nd
    for i in range(nd - 1, -1, -1):
        ks[i] = rest % kshape[i]
        rest = rest // kshape[i]
    for i in range(nd):
        c = xp.asarray(coord[i])                          # (o_i, k_i)
        oi = xp.arange(out[i]).reshape((out[i],) + (1,) * (nd - 1 - i))
        flat = flat * in_shape[i] + c[oi, ks[i]]
    return flat


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive bins; with return_indices also the flat (h * W + w) indices."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool3d(input, output_size, True)


# ---- max_unpool ------------------------------------------------------------------------------


def _max_unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    check_float(input, op)
    if type(indices) is not Tensor or indices.is_floating_point():
        raise RuntimeError(f"{op}: expected 'indices' to be an int64 Tensor, got "
                           f"{getattr(indices, 'dtype', type(indices).__name__)}")
    x, unbatched = batched(input, nd, op)
    idx = indices.unsqueeze(0) if unbatched else indices
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(x.shape)}) but got indices tensor with shape: {list(idx.shape)}")
    kernel = expand_param(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None else expand_param(stride, nd, "stride", op)
    padding = expand_param(padding, nd, "padding", op)
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], stride, padding, kernel))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)
        if len(out) == nd + 2:
            out = out[2:]
        elif len(out) == nd + 1:
            out = out[1:]
        if len(out) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(out)}'")
        for o, d, s in zip(out, default, stride):
            if not d - s < o < d + s:
                raise ValueError(f"invalid output_size \"{list(out)}\" (dim {out.index(o)} must be between "
                                 f"{d - s} and {d + s})")
    P = _prod(out)
    ia = raw(idx)
    if ia.size and (int(ia.min()) < 0 or int(ia.max()) >= P):
        bad = int(ia.max()) if int(ia.max()) >= P else int(ia.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out))})")
    y = PlaneScatter.apply(x, idx=ia.astype(np.int64, copy=False), plane=out, lead=tuple(x.shape[:2]))
    return y.squeeze(0) if unbatched else y


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: values placed at their indices, zeros elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# ---- power-average pooling -------------------------------------------------------------------


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    kernel = expand_param(kernel_size, nd, "kernel_size", f"lp_pool{nd}d")
    out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(_prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over the window of x**p) ** (1/p), as PyTorch computes it (through avg_pool)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)

