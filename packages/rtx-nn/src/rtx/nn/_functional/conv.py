"""Convolutions: conv1d/2d/3d and conv_transpose1d/2d/3d, plus the im2col/col2im pair that
F.unfold and F.fold expose.

How a convolution runs on the CPU: the input is zero-padded once; a strided view
(`as_strided`) presents every receptive field without copying; the view is copied into a
column matrix (im2col) and one BLAS matmul per group multiplies it with the weight. The batch
is cut into chunks whose columns fit in about 2 MB, so the column buffer stays in cache and
memory stays small (measured: per-sample chunks run the 3x3 64->64 32x32 batch-32 forward in
26 ms against 38 ms for one batch-wide matmul). On a GPU the whole batch is one chunk.

Gradients. Three primitives, each the derivative of the others, are the three partial maps of
one trilinear form T(x, w, y) = <conv(x, w), y>:
    _Conv(x, w)     = dT/dy      (the convolution)
    _ConvT(y, w)    = dT/dx      (its adjoint in x: conv_transpose, col2im of W^T y)
    _ConvW(x, y)    = dT/dw      (the weight gradient: y times the columns of x, one matmul)
Each backward is written with the other two, so double (and higher) backward is exact.
"""
from __future__ import annotations

import itertools
import threading
from typing import NamedTuple

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import check_same_device
from rtx._tensor.tensor import Tensor
from rtx.runtime.devices import array_module, device_of

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

# Columns per chunk on the CPU (see the module notes); a GPU takes the whole batch at once.
_CHUNK_BYTES = {"cpu": 32 << 20}


class _Geom(NamedTuple):
    stride: tuple
    pads: tuple      # ((lo, hi), ...) per spatial dim
    dilation: tuple
    groups: int


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _ntuple(value, n, name, op):
    """PyTorch's expand_param_if_needed: an int, or a list of 1 or n ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    try:
        t = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be an int or a tuple of ints, got "
                        f"{type(value).__name__}") from None
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} values to "
                           f"match the convolution dimensions, but got {name}={list(t)}")
    return t


def _out_shape(in_shape, kernel, geom):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, (lo, hi), s, d in zip(in_shape, kernel, geom.pads, geom.stride, geom.dilation))


def _compute_dtype(dt):
    # NumPy has no BLAS for float16 and returns float32 from bfloat16 matmuls: compute in float32.
    return np.dtype(np.float32) if dt.itemsize < 4 and dt.kind != "c" else dt


def _chunk(arr, n, per_sample_bytes):
    limit = _CHUNK_BYTES.get(device_of(arr).type)
    if limit is None:
        return max(n, 1)
    return max(1, min(n, limit // max(per_sample_bytes, 1)))


def pad_zeros(x, pads, value=0):
    """x (N, C, *S) with pads[i] = (lo, hi) of constant `value` around spatial dim i."""
    if not any(lo or hi for lo, hi in pads):
        return x
    xp = array_module(x)
    shape = x.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads))
    out = xp.full(shape, value, dtype=x.dtype) if value else xp.zeros(shape, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], pads))] = x
    return out


def crop(xpad, pads, shape):
    """The inverse of pad_zeros's placement: a contiguous copy of the interior."""
    if not any(lo or hi for lo, hi in pads):
        return xpad
    sl = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(shape, pads))
    return array_module(xpad).ascontiguousarray(xpad[sl])


def windows(xpad, kernel, stride, dilation, out):
    """A (B, C, *kernel, *out) strided view of the padded input: every receptive field, no copy."""
    st = xpad.strides
    nd = len(kernel)
    shape = xpad.shape[:2] + tuple(kernel) + tuple(out)
    strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(nd)) + \
        tuple(st[2 + i] * stride[i] for i in range(nd))
    return array_module(xpad).lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)


def col2im_add(dst, cols, kernel, stride, dilation, out):
    """dst (B, C, *padded) += the adjoint of `windows` applied to cols (B, C, *kernel, *out):
    one strided add per kernel offset (a handful), each over a whole (B, C, *out) block."""
    lead = (slice(None), slice(None))
    for off in itertools.product(*(range(k) for k in kernel)):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(off, dilation, stride, out))
        dst[lead + sl] += cols[lead + off]


def _is_pointwise(kernel, geom):
    return all(k == 1 for k in kernel) and all(s == 1 for s in geom.stride) and \
        not any(lo or hi for lo, hi in geom.pads)


# ---- array kernels ---------------------------------------------------------------------------


_scratch = threading.local()


def _workspace(like, size, dtype):
    """A flat scratch array of `size` elements for the im2col columns. On the CPU one buffer per
    thread is kept and reused: a fresh 30 MB allocation per call costs ~5 ms of page faults
    (measured), a sixth of the matmul it feeds. Callers never let it escape."""
    xp = array_module(like)
    dtype = np.dtype(dtype)
    if xp is not np:
        return xp.empty(size, dtype=dtype)
    nbytes = size * dtype.itemsize
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.nbytes < nbytes:
        buf = _scratch.buf = np.empty(max(nbytes, 1 << 20), dtype=np.uint8)
    return buf[:nbytes].view(dtype)


def _chunks(arr, n, per_sample_bytes):
    """Balanced [n0, n1) batch chunks whose columns stay under the device's chunk size."""
    B = _chunk(arr, n, per_sample_bytes)
    count = -(-n // B)
    B = -(-n // count)
    return [(i, min(n, i + B)) for i in range(0, n, B)], B


def _im2col(xpad, n0, n1, kernel, geom, out, buf):
    """The columns of samples n0:n1 as a (C*K, B*L) matrix in `buf`: rows channel-major, columns
    batch-major, so that one matmul covers the whole chunk."""
    nd = len(kernel)
    B, C = n1 - n0, xpad.shape[1]
    win = windows(xpad[n0:n1], kernel, geom.stride, geom.dilation, out)   # (B, C, *k, *out), a view
    perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
    K, L = _prod(kernel), _prod(out)
    dst = buf[:C * K * B * L].reshape((C,) + tuple(kernel) + (B,) + tuple(out))
    dst[...] = win.transpose(perm)
    return dst.reshape(C * K, B * L)


def _batch_major(y, n0, n1, xp):
    """y[n0:n1] (B, O, *out) as an (O, B*L) matrix (a copy unless B == 1)."""
    B, O = n1 - n0, y.shape[1]
    if B == 1:
        return y[n0].reshape(O, -1)
    return xp.ascontiguousarray(y[n0:n1].reshape(B, O, -1).swapaxes(0, 1)).reshape(O, -1)


def _conv_fwd(x, w, b, geom, out=None):
    xp = array_module(x)
    dt = x.dtype
    cdt = _compute_dtype(dt)
    if cdt != dt:
        x, w = x.astype(cdt), w.astype(cdt)
        b = None if b is None else b.astype(cdt)
    N, C = x.shape[:2]
    O, kernel, g = w.shape[0], tuple(w.shape[2:]), geom.groups
    out = _out_shape(x.shape[2:], kernel, geom) if out is None else tuple(out)
    K, L, Cg = _prod(kernel), _prod(out), C // g
    w2 = w.reshape(g, O // g, Cg * K)
    xpad = pad_zeros(x, geom.pads)
    y = xp.empty((N, O, L), dtype=cdt)
    chunks, B = _chunks(x, N, C * K * L * x.itemsize)
    buf = _workspace(x, C * K * B * L, cdt)
    ybuf = xp.empty((g, O // g, B * L), dtype=cdt) if B > 1 else None
    for n0, n1 in chunks:
        cols = _im2col(xpad, n0, n1, kernel, geom, out, buf).reshape(g, Cg * K, (n1 - n0) * L)
        if n1 - n0 == 1:
            xp.matmul(w2, cols, out=y[n0].reshape(g, O // g, L))
        else:
            Y = xp.matmul(w2, cols, out=ybuf[:, :, :(n1 - n0) * L])
            y[n0:n1] = Y.reshape(O, n1 - n0, L).swapaxes(0, 1)
    if b is not None:
        y += b.reshape(O, 1)
    y = y.reshape((N, O) + out)
    return y if cdt == dt else y.astype(dt)


def _convT_fwd(y, w, geom, in_shape):
    """The adjoint of _conv_fwd in x: columns W^T y, summed back into the image (col2im)."""
    xp = array_module(y)
    dt = y.dtype
    cdt = _compute_dtype(dt)
    if cdt != dt:
        y, w = y.astype(cdt), w.astype(cdt)
    N, O = y.shape[:2]
    kernel, g, out = tuple(w.shape[2:]), geom.groups, tuple(y.shape[2:])
    Cg = w.shape[1]
    C, K, L = Cg * g, _prod(kernel), _prod(out)
    in_shape = tuple(in_shape)
    nd = len(kernel)
    if all(s == 1 for s in geom.stride) and not _is_pointwise(kernel, geom):
        # Stride 1: the adjoint is itself a convolution of y with the flipped, channel-swapped
        # kernel. Its matmul contracts over O*K instead of O, which BLAS runs 2-3x faster than
        # the col2im route's thin (K = O) product.
        lo = tuple(d * (k - 1) - p for d, k, (p, _) in zip(geom.dilation, kernel, geom.pads))
        hi = tuple(n - o - a + d * (k - 1) for n, o, a, d, k in zip(in_shape, out, lo, geom.dilation, kernel))
        if min(lo + hi) >= 0:
            wf = w.reshape((g, O // g, Cg) + kernel).swapaxes(1, 2).reshape((C, O // g) + kernel)
            wf = wf[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
            x = _conv_fwd(y, wf, None, _Geom(geom.stride, tuple(zip(lo, hi)), geom.dilation, g), in_shape)
            return x if cdt == dt else x.astype(dt)
    wT = w.reshape(g, O // g, Cg * K).transpose(0, 2, 1)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(in_shape, geom.pads))
    xpad = xp.zeros((N, C) + padded, dtype=cdt)
    chunks, B = _chunks(y, N, C * K * L * y.itemsize)
    buf = _workspace(y, C * K * B * L, cdt).reshape(g, Cg * K, B * L)
    for n0, n1 in chunks:
        cols = xp.matmul(wT, _batch_major(y, n0, n1, xp).reshape(g, O // g, -1), out=buf[:, :, :(n1 - n0) * L])
        cols = cols.reshape((C,) + kernel + (n1 - n0,) + out)
        dst = xpad[n0:n1]
        for off in itertools.product(*(range(k) for k in kernel)):
            sl = tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                       for o, d, s, m in zip(off, geom.dilation, geom.stride, out))
            dst[(slice(None), slice(None)) + sl] += cols[(slice(None),) + off].swapaxes(0, 1)
    x = crop(xpad, geom.pads, in_shape)
    return x if cdt == dt else x.astype(dt)


def _convW_fwd(x, y, geom, kernel):
    """dT/dw: the columns of x times y^T, summed over the batch by the matmul itself."""
    xp = array_module(x)
    dt = x.dtype
    cdt = _compute_dtype(dt)
    if cdt != dt:
        x, y = x.astype(cdt), y.astype(cdt)
    N, C = x.shape[:2]
    O, g, out = y.shape[1], geom.groups, tuple(y.shape[2:])
    kernel = tuple(kernel)
    Cg, K, L = C // g, _prod(kernel), _prod(out)
    xpad = pad_zeros(x, geom.pads)
    # dw^T = cols (Cg*K, B*L) @ y^T (B*L, Og): the long axis is the contraction and the thin Og
    # the output width, which BLAS runs faster than y @ cols^T (measured 26 vs 35 ms).
    accT = xp.zeros((g, Cg * K, O // g), dtype=cdt)
    chunks, B = _chunks(x, N, C * K * L * x.itemsize)
    buf = _workspace(x, C * K * B * L, cdt)
    for n0, n1 in chunks:
        cols = _im2col(xpad, n0, n1, kernel, geom, out, buf).reshape(g, Cg * K, -1)
        accT += xp.matmul(cols, _batch_major(y, n0, n1, xp).reshape(g, O // g, -1).swapaxes(1, 2))
    gw = xp.ascontiguousarray(accT.swapaxes(1, 2)).reshape((O, Cg) + kernel)
    return gw if cdt == dt else gw.astype(dt)


# ---- primitives ------------------------------------------------------------------------------


class Conv(Primitive):
    """y = conv(x, w) + b. backward: dx = ConvT(dy, w), dw = ConvW(x, dy), db = sum(dy)."""

    @staticmethod
    def forward(ctx, x, w, b, *, geom, out_shape=None):
        ctx.geom = geom
        ctx.save_for_backward(x, w)
        return _conv_fwd(x._data, w._data, None if b is None else b._data, geom, out_shape)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = ConvT.apply(grad, w, geom=ctx.geom, in_shape=x._data.shape[2:]) if need[0] else None
        gw = ConvW.apply(x, grad, geom=ctx.geom, kernel=w._data.shape[2:]) if need[1] else None
        gb = grad.sum((0,) + tuple(range(2, grad.ndim))) if len(need) > 2 and need[2] else None
        return gx, gw, gb


class ConvT(Primitive):
    """x = conv_transpose(y, w): the adjoint of Conv in its input."""

    @staticmethod
    def forward(ctx, y, w, *, geom, in_shape):
        ctx.geom = geom
        ctx.save_for_backward(y, w)
        return _convT_fwd(y._data, w._data, geom, in_shape)

    @staticmethod
    def backward(ctx, grad):
        y, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        gy = Conv.apply(grad, w, None, geom=ctx.geom, out_shape=y._data.shape[2:]) if need[0] else None
        gw = ConvW.apply(grad, y, geom=ctx.geom, kernel=w._data.shape[2:]) if need[1] else None
        return gy, gw


class ConvW(Primitive):
    """dw = conv_weight_grad(x, dy): bilinear in (x, dy)."""

    @staticmethod
    def forward(ctx, x, y, *, geom, kernel):
        ctx.geom = geom
        ctx.save_for_backward(x, y)
        return _convW_fwd(x._data, y._data, geom, kernel)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = ConvT.apply(y, grad, geom=ctx.geom, in_shape=x._data.shape[2:]) if need[0] else None
        gy = Conv.apply(x, grad, None, geom=ctx.geom, out_shape=y._data.shape[2:]) if need[1] else None
        return gx, gy


class Im2Col(Primitive):
    """F.unfold: (N, C, *S) -> (N, C*prod(kernel), L), the columns of the padded input."""

    @staticmethod
    def forward(ctx, x, *, kernel, geom):
        ctx.kernel, ctx.geom, ctx.in_shape = kernel, geom, x._data.shape[2:]
        a = x._data
        out = _out_shape(a.shape[2:], kernel, geom)
        cols = array_module(a).ascontiguousarray(
            windows(pad_zeros(a, geom.pads), kernel, geom.stride, geom.dilation, out))
        return cols.reshape(a.shape[0], a.shape[1] * _prod(kernel), _prod(out))

    @staticmethod
    def backward(ctx, grad):
        return Col2Im.apply(grad, kernel=ctx.kernel, geom=ctx.geom, in_shape=ctx.in_shape)


class Col2Im(Primitive):
    """F.fold: the adjoint of Im2Col, summing overlapping blocks."""

    @staticmethod
    def forward(ctx, cols, *, kernel, geom, in_shape):
        ctx.kernel, ctx.geom = kernel, geom
        a = cols._data
        N = a.shape[0]
        C = a.shape[1] // _prod(kernel)
        out = _out_shape(in_shape, kernel, geom)
        padded = tuple(n + lo + hi for n, (lo, hi) in zip(in_shape, geom.pads))
        xpad = array_module(a).zeros((N, C) + padded, dtype=a.dtype)
        col2im_add(xpad, a.reshape((N, C) + tuple(kernel) + out), kernel, geom.stride, geom.dilation, out)
        return crop(xpad, geom.pads, tuple(in_shape))

    @staticmethod
    def backward(ctx, grad):
        return Im2Col.apply(grad, kernel=ctx.kernel, geom=ctx.geom)


# ---- argument checks shared by the public functions ------------------------------------------


def check_float(t, op, what="input"):
    if type(t) is not Tensor:
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(t).__name__}")
    if not t.is_floating_point():
        raise RuntimeError(f"{op}: \"{op}\" not implemented for '{t.dtype}' {what}; it needs a floating-point "
                           f"tensor (cast with .float())")


def batched(input, nd, op, allow_unbatched=True):
    """(input with a batch dim, whether one was added): PyTorch accepts (C, *S) unbatched."""
    if input.ndim == nd + 2:
        return input, False
    if allow_unbatched and input.ndim == nd + 1:
        return input.unsqueeze(0), True
    expect = f"{nd + 1}D (unbatched) or {nd + 2}D (batched)" if allow_unbatched else f"{nd + 2}D"
    raise RuntimeError(f"Expected {expect} input to {op}, but got input of size: {list(input.shape)}")


def _positive(vals, what):
    if any(v <= 0 for v in vals):
        raise RuntimeError(f"non-positive {what} is not supported" if what != "dilation"
                           else "dilation should be greater than zero")


def _scalar_name(t):
    names = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16"}
    n = str(t._data.dtype)
    return names.get(n, n)


def _check_common(op, x, w, b, nd, groups):
    check_float(x, op)
    check_float(w, op, "weight")
    check_same_device(x, w, op)
    if x.dtype != w.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(x)} but found {_scalar_name(w)} ({op}: input is "
                           f"{x.dtype}, weight is {w.dtype}; cast one of them)")
    if b is not None:
        check_float(b, op, "bias")
        check_same_device(x, b, op)
        if b.dtype != x.dtype:
            raise RuntimeError(f"{op}: Input type ({x.dtype}) and bias type ({b.dtype}) should be the same")
    if w.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}-dimensional, but got weight of size "
                           f"{list(w.shape)} ({w.ndim}-dimensional)")
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    _check_common(op, input, weight, bias, nd, groups)
    x, unbatched = batched(input, nd, op)
    stride = _ntuple(stride, nd, "stride", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    _positive(stride, "stride")
    _positive(dilation, "dilation")
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dilation, kernel))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        p = _ntuple(padding, nd, "padding", op)
        if any(v < 0 for v in p):
            raise RuntimeError("negative padding is not supported")
        pads = tuple((v, v) for v in p)
    O, C = weight.shape[0], x.shape[1]
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    if C != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {C} "
                           f"channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != O):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{O} elements, but got bias of size {list(bias.shape)} instead")
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads)]
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           f"actual input size")
    y = Conv.apply(x, weight, bias, geom=_Geom(stride, pads, dilation, int(groups)))
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) or (C, L): weight (out, in/groups, k).
    padding: int, tuple, 'valid' or 'same'. Double backward is exact (see the module notes)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) or (C, H, W): weight (out, in/groups, kh, kw).
    padding: int, tuple, 'valid' or 'same'. Double backward is exact (see the module notes)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W): weight (out, in/groups, kd, kh, kw)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def transpose_out_shape(in_shape, kernel, stride, padding, output_padding, dilation):
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for n, k, s, p, op, d in zip(in_shape, kernel, stride, padding, output_padding, dilation))


def _conv_transpose(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    _check_common(op, input, weight, bias, nd, groups)
    x, unbatched = batched(input, nd, op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be an int or a tuple of ints, not str "
                        f"('{padding}'); transposed convolutions take no padding string")
    stride = _ntuple(stride, nd, "stride", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    padding = _ntuple(padding, nd, "padding", op)
    output_padding = _ntuple(output_padding, nd, "output_padding", op)
    _positive(stride, "stride")
    _positive(dilation, "dilation")
    if any(v < 0 for v in padding):
        raise RuntimeError("negative padding is not supported")
    if any(v < 0 for v in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")[3 - nd:]
        got = " ".join(f"{what}_{n}: {v}" for what, vals in (("output_padding", output_padding), ("stride", stride),
                                                              ("dilation", dilation)) for n, v in zip(names, vals))
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got {got}")
    Cin = x.shape[1]
    if weight.shape[0] != Cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {Cin} channels instead")
    if Cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    Cout = weight.shape[1] * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != Cout):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {Cout} elements, but got bias of size {list(bias.shape)} instead")
    kernel = tuple(weight.shape[2:])
    out = transpose_out_shape(x.shape[2:], kernel, stride, padding, output_padding, dilation)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
                           f"output size per channel: ({' x '.join(map(str, out))}). Output size is too small")
    geom = _Geom(stride, tuple((p, p) for p in padding), dilation, int(groups))
    y = ConvT.apply(x, weight, geom=geom, in_shape=out)
    if bias is not None:
        y = y + bias.reshape((Cout,) + (1,) * nd)
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution (the gradient of conv1d in its input): weight (in, out/groups, k)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution (the gradient of conv2d in its input): weight (in, out/groups, kh, kw)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution: weight (in, out/groups, kd, kh, kw)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
