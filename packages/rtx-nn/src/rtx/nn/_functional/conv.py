"""Convolutions: conv1d/2d/3d and conv_transpose1d/2d/3d, plus the im2col/col2im pair that
F.unfold and F.fold expose.

How a convolution runs: the input is zero-padded once; a strided view (`as_strided`) presents
every receptive field without copying; one copy turns a chunk of the batch into a column
matrix (C*K rows, batch*pixels columns) and one matmul per group multiplies it with the
weight. On the CPU a chunk holds ~32 MB of columns, and as many chunks run side by side as
BLAS has threads, each with single-threaded BLAS (see _workers); on a GPU the batch is one
chunk. When the whole batch fits one chunk its columns are built at once, with the batch
innermost for images a few pixels wide (see _batch_columns), and when the weights outweigh the
columns (late layers) the threads split the weights' rows instead of the batch (see
_split_weights). The input gradient is one matmul, w^T times the output gradient, and col2im's
strided adds, or for stride 1 and small weights a convolution with the flipped kernel (see
_convT_fwd); the weight gradient is one matmul per chunk. The weights are never copied except
in that flipped case, and big temporaries live in reused per-thread buffers (see _workspace).
On the CPU, convolutions with a spatial kernel and 16 or more input channels build their columns
channels-last instead and multiply them ~1 MB at a time (see "channels-last columns" below; used by
the forward, by the stride-1 input gradient through the flipped kernel, and by the weight
gradient); 1x1 stride-1 forwards are one batched matmul.
Figures: packages/rtx-nn/README.md, "Performance"; ResNet-18: packages/rtx-vision/README.md; the
channels-last columns per layer: packages/rtx-diffuse/README.md.
The windows, im2col (in the two column layouts used here) and col2im are rtx.kernel.windows's,
shared with rtx.inference, rtx.compress and rtx.onnx; this file decides chunks, buffers, threads.

Gradients. Three primitives, each the derivative of the others, are the three partial maps of
one trilinear form T(x, w, y) = <conv(x, w), y>:
    Conv(x, w)     = dT/dy      (the convolution)
    ConvT(y, w)    = dT/dx      (its adjoint in x: conv_transpose)
    ConvW(x, y)    = dT/dw      (the weight gradient)
Each backward is written with the other two, so double (and higher) backward is exact.

Not supported (PyTorch has them): complex tensors; float16/bfloat16 are computed in float32
and rounded back (NumPy has no half-precision BLAS); memory formats (channels_last).
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from rtx.extend import Primitive, Tensor, check_same_device, raw
from rtx.extend import autocast as _autocast
from rtx.kernel import windows as _win
from rtx.kernel.windows import col2im_add
from rtx.runtime import dtypes as _dt
from rtx.runtime import threads as _threads
from rtx.runtime import tuning as _tuning
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


def expand_param(value, n, name, op):
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


def _tuned(arr, x_shape, w_shape, stride, chunk_bytes=None):
    """(chunk size limit in bytes or None, workers) for the convolution with input x_shape, weight
    w_shape and this stride: the CPU defaults (chunk_bytes, else _CHUNK_BYTES; _workers)
    unless `rtx automeasure tune` measured something faster for this geometry on this machine
    (rtx.runtime.tuning, op "conv<n>d", shape (N, C, *S, O, *kernel, *stride)). The forward and
    both backward kernels of one layer ask with the same key; a GPU takes the whole batch."""
    dev = device_of(arr).type
    if dev != "cpu":
        return _CHUNK_BYTES.get(dev), 1
    limit, workers = chunk_bytes or _CHUNK_BYTES["cpu"], _workers(arr)
    cfg = _tuning.lookup(f"conv{len(stride)}d", tuple(x_shape) + (w_shape[0],) + tuple(w_shape[2:]) + tuple(stride),
                         arr.dtype, "cpu")
    if cfg:  # a value of the wrong kind (a hand-edited file) keeps the default
        c, w = cfg.get("chunk_bytes"), cfg.get("workers")
        limit = c if isinstance(c, int) and c > 0 else limit
        workers = w if isinstance(w, int) and w > 0 else workers
    return limit, workers


def _chunk(limit, n, per_sample_bytes):
    if limit is None:
        return max(n, 1)
    return max(1, min(n, limit // max(per_sample_bytes, 1)))


def pad_zeros(x, pads, value=0, scratch=False):
    """x (N, C, *S) with pads[i] = (lo, hi) of constant `value` around spatial dim i. With
    scratch=True the result lives in this thread's reusable workspace (slot 1): the caller must
    be done with it before the next scratch pad."""
    if not scratch or not any(lo or hi for lo, hi in pads):
        return _win.pad(x, pads, value)
    size = x.shape[0] * x.shape[1] * _prod(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads))
    return _win.pad(x, pads, value, buf=_workspace(x, size, x.dtype, slot=1))


def crop(xpad, pads, shape):
    """The inverse of pad_zeros's placement: a contiguous copy of the interior."""
    if not any(lo or hi for lo, hi in pads):
        return xpad
    sl = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(shape, pads))
    return array_module(xpad).ascontiguousarray(xpad[sl])


def _is_identity_map(geom, in_shape, out):
    """Whether a 1x1 convolution's windows are exactly the input pixels (stride 1, no padding)."""
    return all(s == 1 for s in geom.stride) and not any(lo or hi for lo, hi in geom.pads) and \
        tuple(in_shape) == tuple(out)


# Pointwise convolutions skip im2col and run one matmul per sample when a sample has at least
# this many pixels; below it, one matmul over the whole batch's columns is faster (the weights
# are read once instead of once per sample).
_POINTWISE_MIN_L = 64


# ---- array kernels ---------------------------------------------------------------------------


_scratch = threading.local()
_SCRATCH_KEEP = 64 << 20  # bytes per slot and thread, at most


def _workspace(like, size, dtype, slot=0):
    """A flat scratch array of `size` elements (slot 0: columns, from im2col or for col2im;
    slot 1: the padded input; slot 2: a matmul's result before it is transposed or summed into
    place). On the CPU one buffer per slot and thread is kept and reused: a fresh 30 MB
    allocation per call costs ~5 ms of page faults (measured), a sixth of the matmul it feeds;
    on this shared machine a fault cost ~5 us (1000 faults for 4 MB of temporaries: 5 ms).
    Callers never let it escape."""
    xp = array_module(like)
    dtype = np.dtype(dtype)
    if xp is not np:
        return xp.empty(size, dtype=dtype)
    nbytes = size * dtype.itemsize
    if nbytes > _SCRATCH_KEEP:  # too big to keep around between calls
        return np.empty(size, dtype=dtype)
    bufs = getattr(_scratch, "bufs", None)
    if bufs is None:
        bufs = _scratch.bufs = [None, None, None]
    buf = bufs[slot]
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(max(nbytes, 1 << 20), dtype=np.uint8)
    return buf[:nbytes].view(dtype)


def _chunks(limit, n, per_sample_bytes, workers=1):
    """Balanced [n0, n1) batch chunks whose columns stay under `limit` bytes (None: no limit), as
    many as a multiple of `workers` where the batch allows."""
    if n == 0:
        return [], 1
    B = _chunk(limit, n, per_sample_bytes)
    count = -(-n // B)
    count = min(n, -(-count // workers) * workers)
    B = -(-n // count)
    return [(i, min(n, i + B)) for i in range(0, n, B)], B


def _workers(arr):
    """How many chunks run side by side: on the CPU, rtx.runtime.threads.cpu_workers() (as many
    as BLAS has threads), each chunk then running single-threaded BLAS. NumPy releases the GIL in
    its copies and matmuls, so the im2col copies and transposes run in parallel too instead of on
    one core between multi-threaded matmuls (measured: 26 vs 31 ms for the 3x3 64->64 32x32
    batch-32 forward on 2 cores), and no BLAS thread waits on a descheduled sibling when the
    machine is busy (many small multi-threaded GEMMs ran 5-20x slower with one competing
    process, measured)."""
    if device_of(arr).type != "cpu":
        return 1
    return _threads.cpu_workers()


def _run_chunks(arr, chunks, workers, fn):
    """[fn(n0, n1) for each chunk], on `workers` threads with single-threaded BLAS, the calling
    thread taking chunks too (rtx.runtime.threads.parallel_map: on ResNet-18 at batch 8 on 2
    shared cores, pool-only regions had their work add up to 1.0-1.2x their wall time)."""
    return _threads.parallel_map(lambda c: fn(*c), chunks, workers)


def _split_weights(limit, workers, g, columns, weight_cols, col_bytes):
    """Whether the threads split the weights' rows instead of the batch. With thin columns and
    big weights (late layers: 512x4608 weights against 32 columns, `columns` < `weight_cols`)
    each batch chunk would stream all the weights for a sliver of columns; split by rows, each
    thread reads its share once (measured on 2 threads: 2.5 vs 4.7 ms for that matmul). Needs
    one group and the batch's columns within one chunk."""
    return workers > 1 and g == 1 and 0 < columns < weight_cols and limit is not None and col_bytes <= limit


def _ranges(n, parts):
    """[i0, i1) ranges cutting range(n) into `parts` near-equal pieces (empty ones dropped)."""
    cuts = [i * n // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _im2col(xpad, n0, n1, kernel, geom, out, buf):
    """The columns of samples n0:n1 as a (C*K, B*L) matrix in `buf`: rows channel-major, columns
    batch-major, so that one matmul covers the whole chunk."""
    return _win.im2col(xpad[n0:n1], kernel, geom.stride, geom.dilation, out_shape=out, layout="CK,NL", buf=buf)


def _batch_major(y, n0, n1, xp):
    """y[n0:n1] (B, O, *out) as an (O, B*L) matrix (a copy unless B == 1)."""
    B, O = n1 - n0, y.shape[1]
    if B == 1:
        return y[n0].reshape(O, -1)
    return xp.ascontiguousarray(y[n0:n1].reshape(B, O, -1).swapaxes(0, 1)).reshape(O, -1)


# Output widths below this put the batch innermost in the whole batch's columns (see _batch_columns).
_BATCH_INNER_WIDTH = 8


def _batch_columns(x, kernel, geom, out, cdt):
    """The whole batch's columns as a (C*K, N*L) matrix in this thread's workspace, and whether
    their columns run pixel-major, (pixel, sample), instead of _im2col's (sample, pixel). For
    small images (4x4 or 2x2 pixels in late layers) _im2col's copy moves runs of 2-4 numbers and
    is slow (1.2 ms for 256 channels at 4x4, batch 8, measured: 4 ns a number); with the batch
    innermost the runs are width*N long. The caller lays the other operand out to match."""
    N, C = x.shape[:2]
    K, L = _prod(kernel), _prod(out)
    buf = _workspace(x, C * K * N * L, cdt)
    if N == 1 or out[-1] >= _BATCH_INNER_WIDTH:
        return _im2col(pad_zeros(x, geom.pads, scratch=True), 0, N, kernel, geom, out, buf), False
    xp = array_module(x)
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], geom.pads))
    xt = _workspace(x, C * _prod(padded) * N, cdt, slot=1).reshape((C,) + padded + (N,))
    if any(lo or hi for lo, hi in geom.pads):
        xt[...] = 0     # small: these images are a few pixels wide
    xt[(slice(None),) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], geom.pads))] = \
        xp.moveaxis(x, 0, -1)
    return _win.im2col(xt, kernel, geom.stride, geom.dilation, out_shape=out, layout="CK,LN", batch_last=True,
                       buf=buf), True


# ---- channels-last columns (CPU) -------------------------------------------------------------
#
# For convolutions with a spatial kernel and a few channels or more, the CPU builds the columns
# from a channels-last copy of the padded input, (N, *S, C): one row per output pixel, (kernel
# offset, channel) along the row, so the copy moves runs of kw*C numbers (C with dilation)
# instead of runs as short as an image row (8-16 numbers in rtx-diffuse's UNet). The columns are
# built and multiplied ~1 MB at a time, while they are still in L2 (1 MB a core here), and each
# product (pixels, O) is transposed into its slice of the output. Measured per 3x3 layer at
# batch 32, one thread, CPU ms old -> new: forward 32->32 at 16x16 4.9 -> 2.7, 64->64 at 8x8
# 3.6 -> 2.3, 96->32 at 16x16 13.1 -> 7.6; weight gradient 4.1 -> 2.6, 4.2 -> 2.0, 11.4 -> 7.6
# (table and command: packages/rtx-diffuse/README.md, "Figures"). Below _CL_MIN_CHANNELS input
# channels the runs are short and the other layout wins; 1x1 kernels keep their pointwise
# matmuls; grouped convolutions and GPUs (one whole-batch matmul) keep the other path.

_CL_CHUNK_BYTES = 1 << 20
_CL_MIN_CHANNELS = 16
_CL_MAX_WEIGHT_BYTES = 4 << 20


def _cl_chunk_bytes(weight_size, dtype):
    """The default chunk: _CL_CHUNK_BYTES, or twice the weights when they are bigger (late layers: each
    piece streams all the weights through the matmul; measured forwards at batch 8: 256x256x3x3 at 14x14
    27 ms with 1 MB pieces, 23 with 4 MB; 512x512x3x3 at 7x7 37 vs 24 with 8 MB, as the other path)."""
    return max(_CL_CHUNK_BYTES, 2 * weight_size * np.dtype(dtype).itemsize)


def _channels_last_pays(x, C, K, g, weight_size):
    """Whether this convolution takes the channels-last columns (see above). Above _CL_MAX_WEIGHT_BYTES
    of weights (512x512x3x3) the other path, whose threads can split the weights, was as fast or faster."""
    return g == 1 and K > 1 and C >= _CL_MIN_CHANNELS and array_module(x) is np and \
        weight_size * x.itemsize <= _CL_MAX_WEIGHT_BYTES


def _cl_windows(x, kernel, geom, out, cdt):
    """Every window of x, zero-padded and channels last, as a read-only view (N, *out, *kernel, C).
    The padded copy lives in this thread's workspace slot 1."""
    N, C = x.shape[:2]
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], geom.pads))
    xt = _workspace(x, N * C * _prod(padded), cdt, slot=1).reshape((N,) + padded + (C,))
    last = x.transpose((0,) + tuple(range(2, x.ndim)) + (1,))   # (N, *S, C), a view
    if any(lo or hi for lo, hi in geom.pads):
        _win.pad(last, geom.pads, axis=1, buf=xt.reshape(-1))
    else:
        xt[...] = last
    return _win.sliding_windows(xt, kernel, geom.stride, geom.dilation, out_shape=out, axis=1, kernel_first=False,
                                writeable=False)


def _cl_units(limit, N, out, row_bytes, workers):
    """(n0, n1, r0, r1) pieces of the work: samples n0:n1, output rows r0:r1 (of the first spatial
    dim), each with at most about `limit` bytes of columns; a sample bigger than that is cut by
    rows."""
    per_sample = out[0] * row_bytes
    if limit is None or per_sample <= limit:
        chunks, _ = _chunks(limit, N, per_sample, workers)
        return [(n0, n1, 0, out[0]) for n0, n1 in chunks]
    cuts = _ranges(out[0], -(-per_sample // limit))
    return [(n, n + 1, r0, r1) for n in range(N) for r0, r1 in cuts]


def _cl_shares(x, units, workers, fn):
    """[fn(share) for each worker's share of the pieces]: one contiguous share per worker, so that a
    thread takes its workspace buffers once and not once per ~1 MB piece (the Python around a piece
    was ~10% of a UNet layer's time)."""
    return _run_chunks(x, _ranges(len(units), workers), workers, lambda i0, i1: fn(units[i0:i1]))


def _cl_pixels(share, per_row):
    """The most output pixels of any piece in a share (to size a thread's buffers once)."""
    return max((n1 - n0) * (r1 - r0) for n0, n1, r0, r1 in share) * per_row


def _cl_conv(x, w, b, geom, out, cdt, limit, workers):
    """_conv_fwd on the channels-last columns: per piece, columns (pixels, K*C) @ w^T (K*C, O),
    the weights' rows reordered once to (offset, channel)."""
    N, C = x.shape[:2]
    O, kernel = w.shape[0], tuple(w.shape[2:])
    KC, L, per_row = _prod(kernel) * C, _prod(out), _prod(out[1:])
    # (K*C, O) contiguous: OpenBLAS ran this thin product 5-10% faster than on a transposed view (measured)
    wT = np.ascontiguousarray(w.transpose(tuple(range(2, w.ndim)) + (1, 0))).reshape(KC, O)
    win = _cl_windows(x, kernel, geom, out, cdt)
    result = np.empty((N, O) + out, dtype=cdt)
    y = result.reshape(N, O, L)
    bias = None if b is None else b.reshape(O, 1)

    def run(share):
        most = _cl_pixels(share, per_row)
        cbuf, ybuf = _workspace(x, most * KC, cdt), _workspace(x, most * O, cdt, slot=2)
        for n0, n1, r0, r1 in share:
            src = win[n0:n1, r0:r1]
            rows = src.size // KC
            cols = cbuf[:src.size].reshape(src.shape)
            cols[...] = src
            Y = np.matmul(cols.reshape(rows, KC), wT, out=ybuf[:rows * O].reshape(rows, O))
            Yt = Y.reshape(n1 - n0, -1, O).transpose(0, 2, 1)
            dst = y[n0:n1, :, r0 * per_row:r1 * per_row]
            if bias is None:
                dst[...] = Yt
            else:  # the bias rides along with the transposing copy
                np.add(Yt, bias, out=dst)

    _cl_shares(x, _cl_units(limit, N, out, per_row * KC * x.itemsize, workers), workers, run)
    return result


def _cl_weight_grad(x, y, geom, kernel, cdt, limit, workers):
    """_convW_fwd on the channels-last columns: dw (O, K*C) = sum over pieces of y's piece
    (O, pixels) @ its columns (pixels, K*C); each worker sums its own pieces, then the workers'
    sums are added and the (offset, channel) rows put back in (channel, offset) order."""
    N, C = x.shape[:2]
    O, out = y.shape[1], tuple(y.shape[2:])
    KC, L, per_row = _prod(kernel) * C, _prod(out), _prod(out[1:])
    win = _cl_windows(x, kernel, geom, out, cdt)
    y3 = y.reshape(N, O, L)

    def run(share):
        cbuf, pbuf = _workspace(x, _cl_pixels(share, per_row) * KC, cdt), _workspace(x, O * KC, cdt, slot=2)
        acc = None
        for n0, n1, r0, r1 in share:
            src = win[n0:n1, r0:r1]
            cols = cbuf[:src.size].reshape(src.shape)
            cols[...] = src
            cols = cols.reshape(-1, KC)
            yb = y3[n0:n1, :, r0 * per_row:r1 * per_row].swapaxes(0, 1).reshape(O, -1)  # a copy unless one sample
            if acc is None:   # the first product is this worker's own array, the sum
                acc = np.matmul(yb, cols)
            else:
                acc += np.matmul(yb, cols, out=pbuf[:O * KC].reshape(O, KC))
        return acc

    parts = _cl_shares(x, _cl_units(limit, N, out, per_row * KC * x.itemsize, workers), workers, run)
    gw = np.empty((O, C) + tuple(kernel), dtype=cdt)
    if not parts:  # an empty batch
        gw[...] = 0
        return gw
    acc = parts[0]
    for part in parts[1:]:
        acc += part
    gw[...] = np.moveaxis(acc.reshape((O,) + tuple(kernel) + (C,)), -1, 1)
    return gw


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
    if K == 1 and g == 1 and xp is np and L >= _POINTWISE_MIN_L and _is_identity_map(geom, x.shape[2:], out):
        # A pointwise convolution: y[n] = w @ x[n], one batched matmul, no columns and no transposes
        # (96->32 at 16x16, batch 8: 0.53 vs 1.18 ms with the columns, measured).
        y = xp.matmul(w.reshape(O, C), x.reshape(N, C, L)).reshape((N, O) + out)
        if b is not None:
            y += b.reshape((O,) + (1,) * len(out))
        return y if cdt == dt else y.astype(dt)
    if _channels_last_pays(x, C, K, g, w.size):
        y = _cl_conv(x, w, b, geom, out, cdt, *_tuned(x, x.shape, w.shape, geom.stride, _cl_chunk_bytes(w.size, cdt)))
        return y if cdt == dt else y.astype(dt)
    w2 = w.reshape(g, O // g, Cg * K)
    result = xp.empty((N, O) + out, dtype=cdt)   # owns its memory (see _convW_fwd), written through y
    y = result.reshape(N, O, L)
    limit, workers = _tuned(x, x.shape, w.shape, geom.stride)
    chunks, B = _chunks(limit, N, C * K * L * x.itemsize, workers)
    bias = None if b is None else b.reshape(O, 1)

    def store(n0, n1, Y):
        if bias is None:
            y[n0:n1] = Y
        else:  # the bias rides along with the transposing copy
            xp.add(Y, bias, out=y[n0:n1])

    split = _split_weights(limit, workers, g, N * L, Cg * K, C * K * N * L * x.itemsize)
    if N > 1 and (split or len(chunks) == 1):   # the whole batch in one set of columns
        cols, inner = _batch_columns(x, kernel, geom, out, cdt)
        cols = cols.reshape(g, Cg * K, N * L)
        Y = _workspace(x, O * N * L, cdt, slot=2).reshape(g, O // g, N * L)
        if split:
            _run_chunks(x, _ranges(O, workers), workers,
                        lambda o0, o1: xp.matmul(w2[0, o0:o1], cols[0], out=Y[0, o0:o1]))
        else:
            xp.matmul(w2, cols, out=Y)
        store(0, N, Y.reshape(O, L, N).transpose(2, 0, 1) if inner else Y.reshape(O, N, L).swapaxes(0, 1))
        return result if cdt == dt else result.astype(dt)

    xpad = pad_zeros(x, geom.pads, scratch=True)

    def run(n0, n1):
        buf = _workspace(x, C * K * (n1 - n0) * L, cdt)
        cols = _im2col(xpad, n0, n1, kernel, geom, out, buf).reshape(g, Cg * K, (n1 - n0) * L)
        if n1 - n0 == 1:
            xp.matmul(w2, cols, out=y[n0].reshape(g, O // g, L))
            if bias is not None:
                y[n0] += bias
        else:
            Y = _workspace(x, O * (n1 - n0) * L, cdt, slot=2).reshape(g, O // g, (n1 - n0) * L)
            store(n0, n1, xp.matmul(w2, cols, out=Y).reshape(O, n1 - n0, L).swapaxes(0, 1))

    _run_chunks(x, chunks, workers, run)
    return result if cdt == dt else result.astype(dt)


def _convT_fwd(y, w, geom, in_shape):
    """The adjoint of _conv_fwd in x, in one of two ways (same values):
    - columns: per chunk of the batch one matmul per group, w^T (Cg*K, Og) @ y (Og, B*L), gives
      the columns of the input gradient, and col2im_add sums them into place, one strided add
      per kernel offset. The weights are only viewed transposed, never copied. Any stride.
    - flipped: with stride 1 the adjoint is itself a stride-1 convolution of y with the flipped,
      channel-swapped kernel. That costs a copy of the weights and an im2col of y, cheaper than
      col2im's adds when the weights are small next to the columns (early, wide layers: 64x64x3x3
      over 16x16 pixels, 3.7 vs 4.4 ms, measured), dearer when they are big (512x512x3x3 over
      2x2 pixels: a 9 MB copy per call).
    """
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
    wT = w.reshape(g, O // g, Cg * K).swapaxes(1, 2)          # (g, Cg*K, Og), a view
    if K == 1 and g == 1 and L >= _POINTWISE_MIN_L and _is_identity_map(geom, in_shape, out):
        # A pointwise convolution: x[n] = w^T @ y[n], no columns and no transposes.
        x = xp.empty((N, C) + in_shape, dtype=cdt)
        xp.matmul(wT[0], y.reshape(N, O, L), out=x.reshape(N, C, L))
    elif K > 1 and all(s == 1 for s in geom.stride) and _flip_pays(w.size, C * K * N * L):
        x = _convT_flipped(y, w, geom, in_shape)
    else:
        x = _convT_columns(y, wT, kernel, geom, in_shape, cdt, w.shape)
    return x if cdt == dt else x.astype(dt)


def _convT_columns(y, wT, kernel, geom, in_shape, cdt, w_shape):
    """_convT_fwd's columns way. The whole batch at once where it fits one chunk (or the threads
    split the weights, see _split_weights), with the batch innermost for narrow outputs as in
    _batch_columns (col2im's adds then run width*N numbers at a time, not 2-4); else chunk by
    chunk of the batch."""
    xp = array_module(y)
    N, O = y.shape[:2]
    g, CgK, Og = wT.shape
    out, nd = tuple(y.shape[2:]), len(kernel)
    K, L = _prod(kernel), _prod(out)
    C = g * CgK // K
    limit, workers = _tuned(y, (N, C) + tuple(in_shape), w_shape, geom.stride)
    chunks, _ = _chunks(limit, N, C * K * L * y.itemsize, workers)
    split = _split_weights(limit, workers, g, N * L, C * K, C * K * N * L * y.itemsize)
    # cols (C, *kernel, B, *out) seen as (C, B, *kernel, *out), to match x[n0:n1] seen as (C, B, ...)
    perm = (0, 1 + nd) + tuple(range(1, 1 + nd)) + tuple(range(2 + nd, 2 + 2 * nd))
    args = (kernel, geom.stride, geom.dilation, out, geom.pads)

    if N > 1 and (split or len(chunks) == 1):
        inner = out[-1] < _BATCH_INNER_WIDTH
        y3 = y.reshape(N, O, L)
        yb = xp.ascontiguousarray(y3.transpose(1, 2, 0) if inner else y3.swapaxes(0, 1)).reshape(g, Og, N * L)
        cols = _workspace(y, C * K * N * L, cdt).reshape(g, CgK, N * L)
        if inner:   # x built as (C, *S, N), seen as (C, N, *S); cols (C, *kernel, *out, N) likewise
            xt = _workspace(y, C * _prod(in_shape) * N, cdt, slot=1).reshape((C,) + in_shape + (N,))
            xt[...] = 0
            dst = xp.moveaxis(xt, -1, 1)
            colv = xp.moveaxis(cols.reshape((C,) + kernel + out + (N,)), -1, 1)
        else:
            x = xp.zeros((N, C) + in_shape, dtype=cdt)
            dst = x.swapaxes(0, 1)
            colv = cols.reshape((C,) + kernel + (N,) + out).transpose(perm)

        def rows(c0, c1):  # channels c0:c1, i.e. rows c0*K:c1*K of the columns
            xp.matmul(wT[0, c0 * K:c1 * K], yb[0], out=cols[0, c0 * K:c1 * K])
            col2im_add(dst[c0:c1], colv[c0:c1], *args)

        if split:
            _run_chunks(y, _ranges(C, workers), workers, rows)
        else:
            xp.matmul(wT, yb, out=cols)
            col2im_add(dst, colv, *args)
        if inner:
            x = xp.empty((N, C) + in_shape, dtype=cdt)
            x[...] = xp.moveaxis(xt, -1, 0)
        return x

    x = xp.zeros((N, C) + in_shape, dtype=cdt)

    def run(n0, n1):
        B = n1 - n0
        yb = _batch_major(y, n0, n1, xp).reshape(g, Og, B * L)
        cols = xp.matmul(wT, yb, out=_workspace(y, C * K * B * L, cdt).reshape(g, CgK, B * L))
        col2im_add(x[n0:n1].swapaxes(0, 1), cols.reshape((C,) + kernel + (B,) + out).transpose(perm), *args)

    _run_chunks(y, chunks, workers, run)
    return x


def _flip_pays(weight_size, cols_size):
    """Whether _convT_fwd takes the flipped-kernel convolution (see there): when the weights
    it copies are fewer than the columns col2im would add up."""
    return weight_size < cols_size


def _convT_flipped(y, w, geom, in_shape):
    """_convT_fwd for stride 1 as a convolution: x[c, u] = sum_{o, j} w[o, c, j] y[o, u + lo - j*d],
    i.e. y padded by d*(k-1) - lo below and d*(k-1) - hi above (a negative pad crops y), convolved
    with w flipped in space and with its in/out channels swapped within each group."""
    xp = array_module(y)
    O, Cg = w.shape[:2]
    kernel, g, nd = tuple(w.shape[2:]), geom.groups, w.ndim - 2
    flip = (slice(None),) * 3 + (slice(None, None, -1),) * nd
    wc = xp.ascontiguousarray(w.reshape((g, O // g, Cg) + kernel).swapaxes(1, 2)[flip])
    wc = wc.reshape((g * Cg, O // g) + kernel)
    pads, crop_y = [], [slice(None), slice(None)]
    for n, m, k, d, (lo, _) in zip(in_shape, y.shape[2:], kernel, geom.dilation, geom.pads):
        plo, phi = d * (k - 1) - lo, n - m + lo     # phi: the padding that makes the output n long
        crop_y.append(slice(max(-plo, 0), m - max(-phi, 0)))
        pads.append((max(plo, 0), max(phi, 0)))
    return _conv_fwd(y[tuple(crop_y)], wc, None, _Geom((1,) * nd, tuple(pads), geom.dilation, g), in_shape)


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
    if _channels_last_pays(x, C, K, g, O * Cg * K):
        gw = _cl_weight_grad(x, y, geom, kernel, cdt, *_tuned(x, x.shape, (O, Cg) + kernel, geom.stride,
                                                               _cl_chunk_bytes(O * Cg * K, cdt)))
        return gw if cdt == dt else gw.astype(dt)
    # dw^T = cols (Cg*K, B*L) @ y^T (B*L, Og): the long axis is the contraction and the thin Og
    # the output width, which BLAS runs faster than y @ cols^T (measured 26 vs 35 ms).
    limit, workers = _tuned(x, x.shape, (O, Cg) + kernel, geom.stride)
    chunks, B = _chunks(limit, N, C * K * L * x.itemsize, workers)

    # When the contraction (B*L) is shorter than the weight's rows (Cg*K), as in late ResNet stages,
    # transposing a (Cg*K, Og) result costs more than the matmul (measured: 4608x512 from 32 columns,
    # 16 ms copy vs 1.2 ms matmul); then y @ cols^T writes dw in its own layout.
    direct = B * L < Cg * K
    # gw owns its memory: autograd copies a view before making it a leaf's .grad (a 9 MB copy
    # per 512x512x3x3 layer), so the matmuls write into it through gv.
    gw = xp.empty((O, Cg) + kernel, dtype=cdt)
    gv = gw.reshape(g, O // g, Cg * K)

    split = direct and _split_weights(limit, workers, g, N * L, Cg * K, C * K * N * L * x.itemsize)
    if N > 1 and (split or len(chunks) == 1):   # the whole batch in one set of columns
        cols, inner = _batch_columns(x, kernel, geom, out, cdt)
        cols = cols.reshape(g, Cg * K, N * L)
        y3 = y.reshape(N, O, L)
        yb = xp.ascontiguousarray(y3.transpose(1, 2, 0) if inner else y3.swapaxes(0, 1)).reshape(g, O // g, N * L)
        if split:
            _run_chunks(x, _ranges(O, workers), workers,
                        lambda o0, o1: xp.matmul(yb[0, o0:o1], cols[0].T, out=gv[0, o0:o1]))
        elif direct:
            xp.matmul(yb, cols.swapaxes(1, 2), out=gv)
        else:
            part = _workspace(x, O * Cg * K, cdt, slot=2).reshape(g, Cg * K, O // g)
            gv[...] = xp.matmul(cols, yb.swapaxes(1, 2), out=part).swapaxes(1, 2)
        return gw if cdt == dt else gw.astype(dt)

    xpad = pad_zeros(x, geom.pads, scratch=True)

    def run(n0, n1):
        buf = _workspace(x, C * K * (n1 - n0) * L, cdt)
        cols = _im2col(xpad, n0, n1, kernel, geom, out, buf).reshape(g, Cg * K, -1)
        yb = _batch_major(y, n0, n1, xp).reshape(g, O // g, -1)
        if direct:  # the first chunk writes gw itself, the others are added to it
            return xp.matmul(yb, cols.swapaxes(1, 2), out=gv if n0 == 0 else None)
        return xp.matmul(cols, yb.swapaxes(1, 2))

    parts = _run_chunks(x, chunks, workers, run)
    if not parts:  # an empty batch
        gw[...] = 0
    elif direct:
        for part in parts[1:]:
            gv += part
    else:  # summed into the first part, then transposed into gw
        acc = parts[0]
        for part in parts[1:]:
            acc += part
        gv[...] = acc.swapaxes(1, 2)
    return gw if cdt == dt else gw.astype(dt)


# ---- primitives ------------------------------------------------------------------------------


class Conv(Primitive):
    """y = conv(x, w) + b. backward: dx = ConvT(dy, w), dw = ConvW(x, dy), db = sum(dy)."""

    op = "convolution"

    @staticmethod
    def forward(ctx, x, w, b, *, geom, out_shape=None):
        ctx.geom = geom
        ctx.save_for_backward(x, w)
        return _conv_fwd(raw(x), raw(w), None if b is None else raw(b), geom, out_shape)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = ConvT.apply(grad, w, geom=ctx.geom, in_shape=raw(x).shape[2:]) if need[0] else None
        gw = ConvW.apply(x, grad, geom=ctx.geom, kernel=raw(w).shape[2:]) if need[1] else None
        gb = grad.sum((0,) + tuple(range(2, grad.ndim))) if len(need) > 2 and need[2] else None
        return gx, gw, gb


class ConvT(Primitive):
    """x = conv_transpose(y, w): the adjoint of Conv in its input."""

    op = "convolution_transpose"

    @staticmethod
    def forward(ctx, y, w, *, geom, in_shape):
        ctx.geom = geom
        ctx.save_for_backward(y, w)
        return _convT_fwd(raw(y), raw(w), geom, in_shape)

    @staticmethod
    def backward(ctx, grad):
        y, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        gy = Conv.apply(grad, w, None, geom=ctx.geom, out_shape=raw(y).shape[2:]) if need[0] else None
        gw = ConvW.apply(grad, y, geom=ctx.geom, kernel=raw(w).shape[2:]) if need[1] else None
        return gy, gw


class ConvW(Primitive):
    """dw = conv_weight_grad(x, dy): bilinear in (x, dy)."""

    op = "convolution_weight"

    @staticmethod
    def forward(ctx, x, y, *, geom, kernel):
        ctx.geom = geom
        ctx.save_for_backward(x, y)
        return _convW_fwd(raw(x), raw(y), geom, kernel)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx = ConvT.apply(y, grad, geom=ctx.geom, in_shape=raw(x).shape[2:]) if need[0] else None
        gy = Conv.apply(x, grad, None, geom=ctx.geom, out_shape=raw(y).shape[2:]) if need[1] else None
        return gx, gy


class Im2Col(Primitive):
    """F.unfold: (N, C, *S) -> (N, C*prod(kernel), L), the columns of the padded input."""

    @staticmethod
    def forward(ctx, x, *, kernel, geom):
        ctx.kernel, ctx.geom, ctx.in_shape = kernel, geom, raw(x).shape[2:]
        return _win.im2col(raw(x), kernel, geom.stride, geom.dilation, pads=geom.pads, layout="N,CK,L")

    @staticmethod
    def backward(ctx, grad):
        return Col2Im.apply(grad, kernel=ctx.kernel, geom=ctx.geom, in_shape=ctx.in_shape)


class Col2Im(Primitive):
    """F.fold: the adjoint of Im2Col, summing overlapping blocks."""

    @staticmethod
    def forward(ctx, cols, *, kernel, geom, in_shape):
        ctx.kernel, ctx.geom = kernel, geom
        return _win.col2im(raw(cols), in_shape, kernel, geom.stride, geom.dilation, geom.pads)

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
    return _dt.torch_name(t.dtype)


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
    if _autocast.active:  # conv*/conv_transpose* are on autocast's lower-precision list
        input, weight, bias = _autocast.lower(input, weight, bias)
    _check_common(op, input, weight, bias, nd, groups)
    x, unbatched = batched(input, nd, op)
    stride = expand_param(stride, nd, "stride", op)
    dilation = expand_param(dilation, nd, "dilation", op)
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
        p = expand_param(padding, nd, "padding", op)
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
    if _autocast.active:  # conv*/conv_transpose* are on autocast's lower-precision list
        input, weight, bias = _autocast.lower(input, weight, bias)
    _check_common(op, input, weight, bias, nd, groups)
    x, unbatched = batched(input, nd, op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be an int or a tuple of ints, not str "
                        f"('{padding}'); transposed convolutions take no padding string")
    stride = expand_param(stride, nd, "stride", op)
    dilation = expand_param(dilation, nd, "dilation", op)
    padding = expand_param(padding, nd, "padding", op)
    output_padding = expand_param(output_padding, nd, "output_padding", op)
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
