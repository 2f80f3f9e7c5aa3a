"""Strided windows, im2col and col2im for NumPy and CuPy arrays: the one home of the receptive-field
arithmetic that convolution and pooling share (rtx.nn's conv and F.unfold/F.fold, rtx.inference's
conv kernels, rtx.compress's quantized Conv2d, rtx.onnx's pooling and Col2Im).

- `out_shape(in_shape, kernel, stride, dilation, pads)`: the window count per spatial dim (floor).
- `pad(x, pads, value, axis=2, buf=None)`: x with a constant border around its spatial dims.
- `sliding_windows(x, kernel, stride, dilation, ...)`: a strided view of every window, no copy.
- `im2col(x, kernel, stride, dilation, ..., layout=...)`: the windows copied into a column matrix
  whose axis order is a parameter (`layout`), since each user multiplies it from its own side.
- `col2im_add(dst, cols, ...)`: dst += the adjoint of `sliding_windows` (overlaps summed);
  `col2im(cols, in_shape, ...)`: F.fold / ONNX Col2Im on a fresh zero image.

Spatial dims follow `axis` leading dims ((N, C, *S): axis=2). A batch-last array (C, *S, N), which
rtx.nn and rtx.inference build for small images so that the copy into the columns moves runs of
width*N numbers instead of runs as short as an image row, takes axis=1 (`batch_last=True` in
im2col). rtx.edge's runtime keeps its own few lines of this, since it must run with NumPy alone.
"""
from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np

from rtx.runtime.devices import array_module

__all__ = ["out_shape", "pad", "sliding_windows", "im2col", "col2im_add", "col2im", "LAYOUTS"]


def _tuple(v, nd, name):
    if type(v) is tuple and len(v) == nd:   # the common case, on every call of the hot paths
        return v
    if isinstance(v, (int, np.integer)):
        return (int(v),) * nd
    t = tuple(int(i) for i in v)
    if len(t) != nd:
        raise ValueError(f"{name} must be an int or {nd} ints (one per spatial dim), got {list(t)}")
    return t


def _pairs(pads, nd):
    """((lo, hi), ...) per spatial dim; None is no padding."""
    if pads is None:
        return ((0, 0),) * nd
    pads = tuple((int(lo), int(hi)) for lo, hi in pads)
    if len(pads) != nd:
        raise ValueError(f"pads must hold one (lo, hi) pair per spatial dim ({nd}), got {len(pads)}")
    return pads


def out_shape(in_shape, kernel, stride=1, dilation=1, pads=None):
    """How many windows fit along each spatial dim: (n + lo + hi - d*(k-1) - 1) // s + 1."""
    nd = len(kernel)
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, (lo, hi), s, d in zip(in_shape, kernel, _pairs(pads, nd), stride, dilation))


def pad(x, pads, value=0, *, axis=2, buf=None):
    """x with pads[i] = (lo, hi) entries of the constant `value` around dim axis+i (x itself when
    every pad is 0). With `buf` (a flat array of at least the padded size, of x's dtype) the result
    is written there: only the border strips and the interior, so a reused scratch buffer needs no
    clearing first."""
    if not any(lo or hi for lo, hi in pads):
        return x
    xp = array_module(x)
    lead = (slice(None),) * axis
    shape = x.shape[:axis] + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[axis:], pads)) + \
        x.shape[axis + len(pads):]
    if buf is None:
        out = xp.full(shape, value, dtype=x.dtype) if value else xp.zeros(shape, dtype=x.dtype)
    else:
        out = buf[:math.prod(shape)].reshape(shape)
        for i, (lo, hi) in enumerate(pads):  # only the border is written twice
            before = lead + (slice(None),) * i
            out[before + (slice(0, lo),)] = value
            out[before + (slice(shape[axis + i] - hi, None),)] = value
    out[lead + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[axis:], pads))] = x
    return out


def sliding_windows(x, kernel, stride=1, dilation=1, *, out_shape=None, axis=2, kernel_first=True,
                    writeable=True):
    """A strided view of every window of x over the spatial dims x.shape[axis:axis+nd], no copy:
    x.shape[:axis] + (*kernel, *out) + the dims after the spatial ones (kernel_first; else
    (*out, *kernel)). `out_shape` defaults to every window that fits; a given one must fit too (a
    strided view past the end would read foreign memory). writeable=False makes a NumPy view
    read-only (windows overlap: a write through one lands in several); CuPy has no such flag."""
    nd = len(kernel)
    kernel = tuple(kernel)
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    spatial = x.shape[axis:axis + nd]
    if len(spatial) != nd:
        raise ValueError(f"an array of shape {tuple(x.shape)} has no {nd} spatial dims from axis {axis}")
    if out_shape is None:
        span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        if any(n < e for n, e in zip(spatial, span)):
            raise ValueError(f"input of spatial size {tuple(spatial)} (padding included) is smaller than the kernel's "
                             f"span {span}")
        out = tuple((n - e) // s + 1 for n, e, s in zip(spatial, span, stride))
    else:
        out = tuple(out_shape)
        for o, s, d, k, n in zip(out, stride, dilation, kernel, spatial):
            if o > 0 and (o - 1) * s + d * (k - 1) >= n:
                    raise ValueError(f"{out} windows of kernel {kernel} (stride {stride}, dilation {dilation}) do not "
                                 f"fit in spatial size {tuple(spatial)}")
    st = x.strides
    ks = tuple(st[axis + i] * dilation[i] for i in range(nd))
    os_ = tuple(st[axis + i] * stride[i] for i in range(nd))
    shape = x.shape[:axis] + ((kernel + out) if kernel_first else (out + kernel)) + x.shape[axis + nd:]
    strides = st[:axis] + ((ks + os_) if kernel_first else (os_ + ks)) + st[axis + nd:]
    xp = array_module(x)
    if xp is np and x.flags.c_contiguous:
        # an ndarray over x's own buffer: ~5 us against as_strided's 16-30 (measured), paid on every
        # convolution call
        view = np.ndarray(shape, x.dtype, buffer=x, strides=strides)
        if not writeable:
            view.flags.writeable = False
        return view
    if writeable or xp is not np:
        return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)
    return np.lib.stride_tricks.as_strided(x, shape=shape, strides=strides, writeable=False)


# The column layouts the users multiply: letters N (batch), C (channels), K (kernel offsets), L
# (output positions); commas split the result's axes, letters within a part are merged into one.
LAYOUTS = {
    "CK,NL": "rtx.nn conv: (C*K, N*L), one matmul w @ cols for a chunk of the batch",
    "CK,LN": "batch innermost (C*K, L*N), from a batch-last array: rtx.nn conv on small images, rtx.inference",
    "N,CK,L": "F.unfold / ONNX Col2Im's input: (N, C*K, L)",
    "NL,CK": "one row per window (N*L, C*K), cols @ w.T: rtx.compress's quantized Conv2d",
}


@lru_cache(maxsize=None)
def _layout(layout, nd, batch_last):
    """(the permutation of the window view's axes, each result axis as a [start, stop) range of the
    permuted view's axes) for a layout string."""
    parts = layout.split(",")
    letters = "".join(parts)
    if sorted(letters) != sorted("CKLN"):
        raise ValueError(f"layout must use each of N, C, K, L once (commas between the result's axes), "
                         f"got {layout!r}; the common ones: {sorted(LAYOUTS)}")
    if batch_last:   # view (C, *k, *out, N)
        axes = {"C": (0,), "K": tuple(range(1, 1 + nd)), "L": tuple(range(1 + nd, 1 + 2 * nd)), "N": (1 + 2 * nd,)}
    else:            # view (N, C, *k, *out)
        axes = {"N": (0,), "C": (1,), "K": tuple(range(2, 2 + nd)), "L": tuple(range(2 + nd, 2 + 2 * nd))}
    perm = tuple(a for ch in letters for a in axes[ch])
    bounds, start = [], 0
    for part in parts:
        stop = start + sum(len(axes[ch]) for ch in part)
        bounds.append((start, stop))
        start = stop
    return perm, tuple(bounds)


def im2col(x, kernel, stride=1, dilation=1, *, pads=None, pad_value=0, out_shape=None, layout="CK,NL",
           batch_last=False, buf=None):
    """The windows of x (N, C, *S), or of x (C, *S, N) with batch_last, copied into a column matrix
    laid out as `layout` says (see LAYOUTS; e.g. "CK,NL" is (C*K, N*L), rows channel-major then
    kernel offset, columns sample-major then output position). pads ((lo, hi) per spatial dim) are
    filled with `pad_value` first; pass an already padded x and pads=None to reuse a buffer. `buf`:
    a flat array of at least the result's size (x's dtype) to write the columns into."""
    nd = len(kernel)
    axis = 1 if batch_last else 2
    if pads is not None:
        x = pad(x, _pairs(pads, nd), pad_value, axis=axis)
    win = sliding_windows(x, kernel, stride, dilation, out_shape=out_shape, axis=axis)
    perm, bounds = _layout(layout, nd, batch_last)
    src = win.transpose(perm)
    shape = src.shape
    if buf is None:
        dst = array_module(x).empty(shape, dtype=x.dtype)
    else:
        dst = buf[:math.prod(shape)].reshape(shape)
    dst[...] = src
    return dst.reshape(tuple(math.prod(shape[a:b]) for a, b in bounds))


def col2im_add(dst, cols, kernel, stride, dilation, out_shape, pads=None):
    """dst (*lead, *S) += the adjoint of `sliding_windows` applied to cols (*lead, *kernel, *out):
    one strided add per kernel offset, each over a whole (*lead, *out) block. With pads, dst is the
    unpadded image and contributions that fall on the padding are dropped (no padded buffer to fill
    and crop); without, dst is the padded image itself. Each element receives its contributions in
    kernel-offset order, the same sums as padding, adding and cropping."""
    nd = len(kernel)
    lead = (slice(None),) * (dst.ndim - nd)
    shape = dst.shape[dst.ndim - nd:]
    pads = _pairs(pads, nd)
    for off in itertools.product(*(range(k) for k in kernel)):
        src, dsl = [], []
        for o, d, s, m, n, (lo, _) in zip(off, dilation, stride, out_shape, shape, pads):
            # window q reads padded position q*s + o*d, i.e. image position q*s + o*d - lo
            q0 = max(0, -((o * d - lo) // s))
            q1 = min(m, (n - 1 + lo - o * d) // s + 1)
            if q1 <= q0:
                break
            p0 = q0 * s + o * d - lo
            src.append(slice(q0, q1))
            dsl.append(slice(p0, p0 + (q1 - q0 - 1) * s + 1, s))
        else:
            dst[lead + tuple(dsl)] += cols[lead + off + tuple(src)]
    return dst


def col2im(cols, in_shape, kernel, stride=1, dilation=1, pads=None):
    """F.fold / ONNX Col2Im: cols (N, C*K, L) summed back into a zero image (N, C, *in_shape),
    overlapping windows added, contributions on the padding dropped."""
    nd = len(kernel)
    kernel, in_shape = tuple(int(k) for k in kernel), tuple(int(n) for n in in_shape)
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    pads = _pairs(pads, nd)
    out = out_shape(in_shape, kernel, stride, dilation, pads)
    N, CK = cols.shape[:2]
    K = math.prod(kernel)
    if CK % K or cols.shape[2:] != (math.prod(out),):
        raise ValueError(f"col2im: expected columns (N, C*{K}, {math.prod(out)}) for kernel {kernel} over {in_shape} "
                         f"(stride {stride}, dilation {dilation}, pads {pads}), got {tuple(cols.shape)}")
    x = array_module(cols).zeros((N, CK // K) + in_shape, dtype=cols.dtype)
    return col2im_add(x, cols.reshape((N, CK // K) + kernel + out), kernel, stride, dilation, out, pads)
