"""Resampling and rearranging: pad, interpolate (and the deprecated upsample*), unfold/fold,
pixel_shuffle/unshuffle, affine_grid and grid_sample.

Interpolation is separable: each spatial axis is resampled on its own by a sparse (out, in)
matrix given as a few taps (index, weight) per output position: one tap for nearest, two for
linear, four for bicubic, a whole bin for 'area' (adaptive average pooling). A short axis is
resampled by one BLAS matmul with the dense matrix; a long one by a weighted sum of `take`s.
The adjoint (the gradient) is the transposed matrix: a matmul, or scatter-adds in layers of
distinct indices. The two primitives are each other's derivative, so double backward works.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.extend import Primitive, Tensor, raw, wrap
from rtx.nn._functional.conv import Col2Im, Im2Col, _Geom, _out_shape, _prod, batched, check_float, expand_param
from rtx.runtime.devices import array_module

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "unfold", "fold",
           "pixel_shuffle", "pixel_unshuffle", "affine_grid", "grid_sample"]

# When one dense (out, in) matmul beats gathers and scatters (single-thread NumPy, measured on
# (N, C, n, n) -> 2n): forward, a weighted sum of 2-4 takes wins from n = 128 on (5.4 vs 7.9 ms
# at 128 -> 256; the matmul wins 5.1 vs 6.3 ms at 64 -> 128) and a plain take always does; the
# adjoint's scatter-adds lose up to n * 2n = 256 * 512 (7.2 vs 15.2 ms at 128 -> 256).
_DENSE_FORWARD_MAX = 64
_DENSE_ADJOINT_MAX = 256 * 512


# ---- resampling along one axis ---------------------------------------------------------------


def _blas_float(dtype):
    return dtype.kind == "f" and dtype.itemsize >= 4


def _matrix(taps, in_size, out_size, dtype, xp):
    A = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    for idx, w in taps:
        np.add.at(A, (rows, idx), 1.0 if w is None else w)
    return xp.asarray(A.astype(dtype))


def _apply_matrix(a, A, axis):
    """y[..., i, ...] = sum_j A[i, j] a[..., j, ...] along `axis`, as one (batched) matmul."""
    xp = array_module(a)
    nd = a.ndim
    if axis == nd - 1:
        return xp.matmul(a, A.T)
    if axis == nd - 2:
        return xp.matmul(A, a)
    y = xp.matmul(xp.moveaxis(a, axis, -1), A.T)
    return xp.ascontiguousarray(xp.moveaxis(y, -1, axis))


def _layers(idx):
    """Split positions 0..len(idx)-1 into groups whose targets idx[pos] are distinct, so that
    `out[..., tgt] += g[..., pos]` is exact (fancy-index += drops repeated targets)."""
    order = np.argsort(idx, kind="stable")
    s = idx[order]
    pos = np.arange(len(s))
    start = np.ones(len(s), dtype=bool)
    start[1:] = s[1:] != s[:-1]
    rank = pos - np.maximum.accumulate(np.where(start, pos, 0))
    return [(order[rank == r], s[rank == r]) for r in range(int(rank.max()) + 1)] if len(s) else []


def _wshape(nd, axis, n):
    shape = [1] * nd
    shape[axis] = n
    return tuple(shape)


def _resample(a, axis, taps, in_size, out_size):
    xp = array_module(a)
    if _blas_float(a.dtype) and in_size <= _DENSE_FORWARD_MAX and len(taps) > 1:
        return _apply_matrix(a, _matrix(taps, in_size, out_size, a.dtype, xp), axis)
    y = None
    for idx, w in taps:
        v = xp.take(a, xp.asarray(idx), axis=axis)
        if w is not None:
            v *= xp.asarray(w.astype(a.dtype)).reshape(_wshape(a.ndim, axis, out_size))
        y = v if y is None else y.__iadd__(v)
    return y


def _resample_T(g, axis, taps, in_size, out_size):
    xp = array_module(g)
    if _blas_float(g.dtype) and in_size * out_size <= _DENSE_ADJOINT_MAX:
        return _apply_matrix(g, _matrix(taps, in_size, out_size, g.dtype, xp).T, axis)
    # Scatter-add along the axis moved to the front, where each index picks a contiguous row.
    gm = xp.ascontiguousarray(xp.moveaxis(g, axis, 0))
    out = xp.zeros((in_size,) + gm.shape[1:], dtype=g.dtype)
    for idx, w in taps:
        gw = gm if w is None else gm * xp.asarray(w.astype(g.dtype)).reshape((out_size,) + (1,) * (g.ndim - 1))
        for pos, tgt in _layers(idx):
            out[xp.asarray(tgt)] += gw[xp.asarray(pos)]
    return xp.ascontiguousarray(xp.moveaxis(out, 0, axis))


class Resample(Primitive):
    """y = A x along one axis, A given as taps [(index (out,), weight (out,) or None)]."""

    @staticmethod
    def forward(ctx, x, *, axis, taps, in_size, out_size):
        ctx.axis, ctx.taps, ctx.in_size, ctx.out_size = axis, taps, in_size, out_size
        return _resample(raw(x), axis, taps, in_size, out_size)

    @staticmethod
    def backward(ctx, grad):
        return ResampleT.apply(grad, axis=ctx.axis, taps=ctx.taps, in_size=ctx.in_size, out_size=ctx.out_size)


class ResampleT(Primitive):
    """g A along one axis: the adjoint of Resample."""

    @staticmethod
    def forward(ctx, g, *, axis, taps, in_size, out_size):
        ctx.axis, ctx.taps, ctx.in_size, ctx.out_size = axis, taps, in_size, out_size
        return _resample_T(raw(g), axis, taps, in_size, out_size)

    @staticmethod
    def backward(ctx, grad):
        return Resample.apply(grad, axis=ctx.axis, taps=ctx.taps, in_size=ctx.in_size, out_size=ctx.out_size)


def resample_axis(x, axis, taps, in_size, out_size):
    return Resample.apply(x, axis=axis, taps=tuple(taps), in_size=in_size, out_size=out_size)


# ---- pad -------------------------------------------------------------------------------------


def _const_slices(shape, pads):
    """(source slices into x, destination slices into the padded output) for per-dim (lo, hi)
    pads that may be negative (cropping)."""
    src, dst = [], []
    for n, (lo, hi) in zip(shape, pads):
        src.append(slice(max(-lo, 0), n - max(-hi, 0)))
        dst.append(slice(max(lo, 0), max(lo, 0) + max(n - max(-lo, 0) - max(-hi, 0), 0)))
    return tuple(src), tuple(dst)


class PadConstant(Primitive):
    @staticmethod
    def forward(ctx, x, *, pads, value):
        a = raw(x)
        ctx.pads, ctx.shape = pads, a.shape
        xp = array_module(a)
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, pads))
        out = xp.full(shape, value, dtype=a.dtype) if value else xp.zeros(shape, dtype=a.dtype)
        src, dst = _const_slices(a.shape, pads)
        out[dst] = a[src]
        return out

    @staticmethod
    def backward(ctx, grad):
        return PadConstantT.apply(grad, pads=ctx.pads, shape=ctx.shape)


class PadConstantT(Primitive):
    @staticmethod
    def forward(ctx, g, *, pads, shape):
        ctx.pads = pads
        a = raw(g)
        out = array_module(a).zeros(shape, dtype=a.dtype)
        src, dst = _const_slices(shape, pads)
        out[src] = a[dst]
        return out

    @staticmethod
    def backward(ctx, grad):
        return PadConstant.apply(grad, pads=ctx.pads, value=0)


def _pad_index(n, lo, hi, mode):
    i = np.arange(-lo, n + hi)
    if mode == "reflect":
        i = np.abs(i)
        i = np.where(i > n - 1, 2 * (n - 1) - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, n - 1)
    else:  # circular
        i = np.mod(i, n)
    return i


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad)//2 dims; pad = (last_lo, last_hi, second_last_lo, ...), as PyTorch.
    mode: 'constant' (any number of dims, negative pads crop), 'reflect', 'replicate',
    'circular' (the last 1-3 dims of a 2-D..5-D input)."""
    if type(input) is not Tensor:
        raise TypeError(f"pad(): argument 'input' must be Tensor, not {type(input).__name__}")
    pad = tuple(int(p) for p in pad)
    nd = input.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {nd}")
    k = len(pad) // 2
    per_dim = [(pad[2 * (k - 1 - i)], pad[2 * (k - 1 - i) + 1]) for i in range(k)]  # first padded dim first
    if mode == "constant":
        pads = ((0, 0),) * (nd - k) + tuple(per_dim)
        for n, (lo, hi) in zip(input.shape, pads):
            if n + lo + hi < 0:
                raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted in a negative "
                                   f"output size, which is invalid. Check dimension of your input.")
        return PadConstant.apply(input, pads=pads, value=0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if not (k in (1, 2, 3) and nd in (k + 1, k + 2)):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {nd}D input tensor.")
    y = input
    for i, (lo, hi) in enumerate(per_dim):
        axis = nd - k + i
        n = input.shape[axis]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {axis} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0 and (lo or hi):
            raise RuntimeError(f"padding size is expected to be 2*{k}, and input dimension {axis} must be non-empty")
        if lo == 0 and hi == 0:
            continue
        if lo < 0 or hi < 0:
            raise NotImplementedError(f"pad: negative padding with mode '{mode}' is not supported in rtx "
                                      f"(use mode='constant' to crop)")
        idx = _pad_index(n, lo, hi, mode)
        y = Resample.apply(y, axis=axis, taps=((idx, None),), in_size=n, out_size=n + lo + hi)
    return y


# ---- interpolate -----------------------------------------------------------------------------


def _cubic1(x, A):
    return ((A + 2) * x - (A + 3)) * x * x + 1


def _cubic2(x, A):
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A


def _scale(in_n, out_n, align_corners, scale):
    """PyTorch's area_pixel_compute_scale."""
    if align_corners:
        return (in_n - 1) / (out_n - 1) if out_n > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_n / out_n


def _taps(mode, in_n, out_n, align_corners, scale):
    dst = np.arange(out_n)
    if mode in ("nearest", "nearest-exact"):
        s = np.float32(1.0 / scale if scale is not None and scale > 0 else np.float32(in_n) / np.float32(out_n))
        if mode == "nearest" and out_n == in_n:
            idx = dst
        elif mode == "nearest" and out_n == 2 * in_n:
            idx = dst >> 1
        else:
            off = np.float32(0.5) if mode == "nearest-exact" else np.float32(0)
            idx = np.minimum(np.floor((dst.astype(np.float32) + off) * s).astype(np.int64), in_n - 1)
        return ((idx, None),)
    s = _scale(in_n, out_n, align_corners, scale)
    cubic = mode == "bicubic"
    src = s * dst if align_corners else s * (dst + 0.5) - 0.5
    if cubic:
        i0 = np.floor(src).astype(np.int64)
        t = src - i0
        A = -0.75
        ws = (_cubic2(t + 1, A), _cubic1(t, A), _cubic1(1 - t, A), _cubic2(2 - t, A))
        return tuple((np.clip(i0 - 1 + j, 0, in_n - 1), ws[j]) for j in range(4))
    src = np.maximum(src, 0)
    i0 = np.minimum(src.astype(np.int64), in_n - 1)
    i1 = np.minimum(i0 + 1, in_n - 1)
    lam = np.clip(src - i0, 0, 1)
    return ((i0, 1 - lam), (i1, lam))


_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, *spatial) by size or scale_factor. mode: 'nearest', 'nearest-exact',
    'linear' (3-D), 'bilinear' and 'bicubic' (4-D), 'trilinear' (5-D), 'area'. antialias is
    not supported (raises)."""
    from rtx.nn._functional.pooling import _adaptive_avg
    if type(input) is not Tensor:
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not {type(input).__name__}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif mode in _MODE_DIMS:
        align_corners = bool(align_corners)
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 f"(o1, o2, ...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * dim
    elif scale_factor is not None:
        out = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 f"format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and out is None:
        recompute_scale_factor = True
    if out is None:
        out = [int(math.floor(float(input.shape[i + 2]) * scales[i])) for i in range(dim)]
        if recompute_scale_factor:
            scales = None
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported in rtx")
    if dim not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != dim:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ("
                           f"{', '.join(map(str, input.shape[2:]))}) and output ({', '.join(map(str, out))})")
    if mode == "area":
        return _adaptive_avg(f"adaptive_avg_pool{dim}d", dim, input, tuple(out))
    if mode != "nearest" and mode != "nearest-exact":
        check_float(input, f"upsample_{mode}{dim}d")
    y = input
    for i in range(dim):
        n, o = input.shape[2 + i], out[i]
        s = None if scales is None else scales[i]
        # PyTorch leaves an axis whose size does not change alone in the nearest and linear modes,
        # whatever the scale factor (bicubic and nearest-exact still resample it by the factor).
        if n == o and (mode in ("nearest", "linear", "bilinear", "trilinear") or align_corners or s is None):
            continue
        y = Resample.apply(y, axis=2 + i, taps=_taps(mode, n, o, align_corners, s), in_size=n, out_size=o)
    return y if y is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate (as torch.nn.functional.upsample)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- unfold / fold ---------------------------------------------------------------------------


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), L the number of sliding blocks."""
    if type(input) is not Tensor:
        raise TypeError(f"unfold(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x, unbatched = batched(input, 2, "unfold")
    kernel = expand_param(kernel_size, 2, "kernel_size", "unfold")
    geom = _fold_geom("unfold", dilation, padding, stride)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_size={list(kernel)}")
    out = _out_shape(x.shape[2:], kernel, geom)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, "
                           f"dilation={geom.dilation}, padding={tuple(p for p, _ in geom.pads)}, calculated shape of "
                           f"the array of sliding blocks as {out}, but its components must be at least one.")
    y = Im2Col.apply(x, kernel=kernel, geom=geom)
    return y.squeeze(0) if unbatched else y


def _fold_geom(op, dilation, padding, stride):
    d = expand_param(dilation, 2, "dilation", op)
    p = expand_param(padding, 2, "padding", op)
    s = expand_param(stride, 2, "stride", op)
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation={list(d)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got stride={list(s)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"padding should be non-negative, but got padding={list(p)}")
    return _Geom(s, tuple((v, v) for v in p), d, 1)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: (N, C * kh * kw, L) -> (N, C, *output_size), summing overlapping values."""
    if type(input) is not Tensor:
        raise TypeError(f"fold(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.ndim}D)")
    cols = input.unsqueeze(0) if input.ndim == 2 else input
    out_size = expand_param(output_size, 2, "output_size", "fold")
    kernel = expand_param(kernel_size, 2, "kernel_size", "fold")
    geom = _fold_geom("fold", dilation, padding, stride)
    K = _prod(kernel)
    if cols.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={cols.shape[1]} and kernel_size={tuple(kernel)}")
    blocks = _out_shape(out_size, kernel, geom)
    if any(b <= 0 for b in blocks) or _prod(blocks) != cols.shape[2]:
        raise RuntimeError(f"Given output_size={tuple(out_size)}, kernel_size={tuple(kernel)}, "
                           f"dilation={tuple(geom.dilation)}, padding={tuple(p for p, _ in geom.pads)}, "
                           f"stride={tuple(geom.stride)}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {' * '.join(map(str, blocks))} = {_prod(blocks)}, "
                           f"but got input.size(2)={cols.shape[2]}.")
    y = Col2Im.apply(cols, kernel=kernel, geom=geom, in_shape=out_size)
    return y.squeeze(0) if input.ndim == 2 else y


# ---- pixel shuffle ---------------------------------------------------------------------------


def pixel_shuffle(input, upscale_factor):
    """(*, C * r * r, H, W) -> (*, C, H * r, W * r)."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects its input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    y = input.reshape(*lead, c // (r * r), r, r, h, w)
    y = y.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r * r, H, W): the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects its input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    n = len(lead)
    y = input.reshape(*lead, c, h // r, r, w // r, r)
    y = y.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return y.reshape(*lead, c * r * r, h // r, w // r)


# ---- spatial transformers --------------------------------------------------------------------


def _base_coords(n, align_corners):
    if align_corners:
        return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    return (np.arange(n) * 2 + 1) / n - 1


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3)
    (or (N, 3, 4)) over the normalised [-1, 1] output coordinates."""
    import rtx
    align_corners = bool(align_corners)
    check_float(theta, "affine_grid", "theta")
    size = [int(s) for s in size]
    if len(size) == 4:
        N, _, H, W = size
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{list(theta.shape)}.")
        xs, ys = _base_coords(W, align_corners), _base_coords(H, align_corners)
        base = np.stack([np.broadcast_to(xs[None, :], (H, W)), np.broadcast_to(ys[:, None], (H, W)),
                         np.ones((H, W))], axis=-1).reshape(H * W, 3)
        out_shape = (N, H, W, 2)
    elif len(size) == 5:
        N, _, D, H, W = size
        if theta.ndim != 3 or tuple(theta.shape[1:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{list(theta.shape)}.")
        xs, ys, zs = (_base_coords(n, align_corners) for n in (W, H, D))
        grid = np.meshgrid(zs, ys, xs, indexing="ij")
        base = np.stack([grid[2], grid[1], grid[0], np.ones((D, H, W))], axis=-1).reshape(D * H * W, 4)
        out_shape = (N, D, H, W, 3)
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != N:
        raise ValueError(f"Expected theta batch size {theta.shape[0]} to match size[0] = {N}")
    b = rtx.tensor(base.astype(raw(theta).dtype), device=theta.device)
    return (b @ theta.transpose(1, 2)).reshape(out_shape)


def _unnormalize(coord, n, align_corners):
    if align_corners:
        return (coord + 1) * ((n - 1) / 2)
    return ((coord + 1) * n - 1) / 2


def _reflect(coord, lo2, hi2):
    """PyTorch's reflect_coordinates over [lo2/2, hi2/2], written in differentiable ops."""
    import rtx
    if lo2 == hi2:
        return coord * 0
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    c = (coord - mn).abs()
    extra = rtx.fmod(c, span)
    flips = (c / span).floor()
    even = rtx.remainder(flips, 2) == 0
    return rtx.where(even, extra + mn, span - extra + mn)


def _source_coords(coord, n, padding_mode, align_corners):
    c = _unnormalize(coord, n, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, n - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align_corners else _reflect(c, -1, 2 * n - 1)
        c = c.clamp(0, n - 1)
    return c


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample (N, C, H, W) at grid (N, Ho, Wo, 2) holding normalised (x, y) in [-1, 1].
    mode 'bilinear' | 'nearest'; padding_mode 'zeros' | 'border' | 'reflection'. 4-D input only
    ('bicubic' and 5-D volumes are not supported). Differentiable in input and grid, composed of
    differentiable ops (so double backward works)."""
    from rtx.nn._functional.pooling import PlaneGather
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported in rtx")
    check_float(input, "grid_sample")
    check_float(grid, "grid_sample", "grid")
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: rtx supports 4-D input only, got {input.ndim}-D input")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension and the same batch size as "
                           f"input, but got input of shape {list(input.shape)} and grid of shape {list(grid.shape)}")
    align_corners = bool(align_corners)
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1], grid.shape[2]
    ix = _source_coords(grid[..., 0], W, padding_mode, align_corners)   # (N, Ho, Wo)
    iy = _source_coords(grid[..., 1], H, padding_mode, align_corners)
    xp = array_module(raw(input))

    def corner(xi, yi):
        """input at integer (yi, xi) arrays (N, Ho, Wo), zero outside: (N, C, Ho, Wo)."""
        valid = (xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)
        flat = np.clip(yi, 0, H - 1) * W + np.clip(xi, 0, W - 1)
        idx = xp.ascontiguousarray(xp.broadcast_to(flat[:, None], (N, C, Ho, Wo)))
        v = PlaneGather.apply(input, idx=idx, plane=(H, W))
        return v * wrap(xp.asarray(valid[:, None]).astype(raw(input).dtype))

    if mode == "nearest":
        xi = xp.rint(raw(ix)).astype(np.int64)   # round half to even, as nearbyint
        yi = xp.rint(raw(iy)).astype(np.int64)
        return corner(xi, yi)
    x0 = xp.floor(raw(ix)).astype(np.int64)
    y0 = xp.floor(raw(iy)).astype(np.int64)
    wx1 = (ix - wrap(x0.astype(raw(ix).dtype))).unsqueeze(1)
    wy1 = (iy - wrap(y0.astype(raw(iy).dtype))).unsqueeze(1)
    wx0, wy0 = 1 - wx1, 1 - wy1
    return (corner(x0, y0) * (wx0 * wy0) + corner(x0 + 1, y0) * (wx1 * wy0) +
            corner(x0, y0 + 1) * (wx0 * wy1) + corner(x0 + 1, y0 + 1) * (wx1 * wy1))
