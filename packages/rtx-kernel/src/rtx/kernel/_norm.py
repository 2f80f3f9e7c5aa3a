"""layer_norm and rms_norm over the trailing `normalized_ndim` axes, forward and backward.

The forward passes return their statistics (mean, rstd = 1/sqrt(var + eps)) with kept
dimensions, so they broadcast against x; the backward passes take them back instead of
recomputing them.
CPU: rows of the flattened trailing axes, a block of rows at a time; the output buffer is
updated in place and the sums of squares are np.vecdot (BLAS dot products), instead of the
reference's whole-array temporaries. grad_weight/grad_bias accumulate in float64.
CUDA: one thread block per row (two-pass variance), and ReductionKernels over the rows for
grad_weight; C-contiguous float32/float64 only, CuPy array ops (the reference) otherwise.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.kernel._blocks import row_blocks
from rtx.kernel._cuda import launch_rows, raw_module, reduction, row_kernel_ok
from rtx.kernel._registry import Kernel, Sample, register
from rtx.runtime import array_module


def _axes(x, normalized_ndim):
    if not 1 <= normalized_ndim <= x.ndim:
        raise ValueError(f"normalized_ndim must be between 1 and x.ndim={x.ndim}, got {normalized_ndim}")
    first = x.ndim - normalized_ndim
    return tuple(range(first, x.ndim)), tuple(range(first))


# ---- references ----------------------------------------------------------------------------


def layer_norm_reference(x, weight=None, bias=None, eps=1e-5, normalized_ndim=1):
    """(y, mean, rstd): y = (x - mean) * rstd * weight + bias over the trailing
    `normalized_ndim` axes, with rstd = 1 / sqrt(var + eps) (biased variance). weight and
    bias have the normalized shape, or are None."""
    xp = array_module(x)
    axes, _ = _axes(x, normalized_ndim)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1 / xp.sqrt(var + eps)
    y = (x - mean) * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, mean, rstd


def layer_norm_backward_reference(grad_y, x, weight, mean, rstd, normalized_ndim=1, *, has_bias=None):
    """(grad_x, grad_weight, grad_bias) of layer_norm. grad_weight is None when weight is;
    grad_bias is computed when has_bias (default: when weight is not None, as with PyTorch's
    elementwise_affine)."""
    axes, batch = _axes(x, normalized_ndim)
    has_bias = weight is not None if has_bias is None else has_bias
    xhat = (x - mean) * rstd
    gxhat = grad_y * weight if weight is not None else grad_y
    grad_x = rstd * (gxhat - gxhat.mean(axis=axes, keepdims=True)
                     - xhat * (gxhat * xhat).mean(axis=axes, keepdims=True))
    grad_weight = (grad_y * xhat).sum(axis=batch) if weight is not None else None
    grad_bias = grad_y.sum(axis=batch) if has_bias else None
    return grad_x, grad_weight, grad_bias


def rms_norm_reference(x, weight=None, eps=1e-6, normalized_ndim=1):
    """(y, rstd): y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps) over the trailing
    `normalized_ndim` axes."""
    xp = array_module(x)
    axes, _ = _axes(x, normalized_ndim)
    rstd = 1 / xp.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    y = x * rstd
    if weight is not None:
        y = y * weight
    return y, rstd


def rms_norm_backward_reference(grad_y, x, weight, rstd, normalized_ndim=1):
    """(grad_x, grad_weight) of rms_norm; grad_weight is None when weight is."""
    axes, batch = _axes(x, normalized_ndim)
    xhat = x * rstd
    gxhat = grad_y * weight if weight is not None else grad_y
    grad_x = rstd * (gxhat - xhat * (gxhat * xhat).mean(axis=axes, keepdims=True))
    grad_weight = (grad_y * xhat).sum(axis=batch) if weight is not None else None
    return grad_x, grad_weight


# ---- CPU: rows of the flattened normalized axes ----------------------------------------------


def _rows(x, normalized_ndim):
    _axes(x, normalized_ndim)
    n = math.prod(x.shape[x.ndim - normalized_ndim:])
    stat_shape = x.shape[:x.ndim - normalized_ndim] + (1,) * normalized_ndim
    return x.reshape(-1, n), n, stat_shape


def _layer_norm_cpu(x, weight=None, bias=None, eps=1e-5, normalized_ndim=1):
    x2, n, stat_shape = _rows(x, normalized_ndim)
    w = None if weight is None else weight.reshape(n)
    bias = None if bias is None else bias.reshape(n)
    y = np.empty_like(x2)
    mean = np.empty((x2.shape[0], 1), x.dtype)
    rstd = np.empty_like(mean)
    for b in row_blocks(*x2.shape):
        xb, yb, mb, rb = x2[b], y[b], mean[b], rstd[b]
        np.mean(xb, axis=1, keepdims=True, out=mb)
        np.subtract(xb, mb, out=yb)
        np.vecdot(yb, yb, out=rb[:, 0])
        rb /= n
        rb += eps
        np.sqrt(rb, out=rb)
        np.reciprocal(rb, out=rb)
        yb *= rb
        if w is not None:
            yb *= w
        if bias is not None:
            yb += bias
    return y.reshape(x.shape), mean.reshape(stat_shape), rstd.reshape(stat_shape)


def _column_sums(wanted, n):
    """An accumulator for sums over rows, in float64 (blocks add their own sums), or None."""
    return np.zeros(n) if wanted else None


def _finish(total, dtype, shape):
    return None if total is None else total.astype(dtype).reshape(shape)


def _layer_norm_backward_cpu(grad_y, x, weight, mean, rstd, normalized_ndim=1, *, has_bias=None):
    has_bias = weight is not None if has_bias is None else has_bias
    x2, n, _ = _rows(x, normalized_ndim)
    g2 = grad_y.reshape(x2.shape)
    mean2, rstd2 = mean.reshape(-1, 1), rstd.reshape(-1, 1)
    w = None if weight is None else weight.reshape(n)
    grad_x = np.empty_like(x2)
    grad_weight, grad_bias = _column_sums(w is not None, n), _column_sums(has_bias, n)
    for b in row_blocks(*x2.shape):
        gb, gxb, rb = g2[b], grad_x[b], rstd2[b]
        xhat = np.subtract(x2[b], mean2[b])
        xhat *= rb
        if grad_weight is not None:
            grad_weight += np.einsum("ij,ij->j", gb, xhat)
        if grad_bias is not None:
            grad_bias += gb.sum(axis=0)
        if w is not None:
            np.multiply(gb, w, out=gxb)
        else:
            gxb[...] = gb
        a = gxb.mean(axis=1, keepdims=True)
        c = np.vecdot(gxb, xhat)[:, None]
        c /= n
        gxb -= a
        xhat *= c
        gxb -= xhat
        gxb *= rb
    norm_shape = x.shape[x.ndim - normalized_ndim:]
    return grad_x.reshape(x.shape), _finish(grad_weight, x.dtype, norm_shape), _finish(grad_bias, x.dtype, norm_shape)


def _rms_norm_cpu(x, weight=None, eps=1e-6, normalized_ndim=1):
    x2, n, stat_shape = _rows(x, normalized_ndim)
    w = None if weight is None else weight.reshape(n)
    y = np.empty_like(x2)
    rstd = np.empty((x2.shape[0], 1), x.dtype)
    for b in row_blocks(*x2.shape):
        xb, yb, rb = x2[b], y[b], rstd[b]
        np.vecdot(xb, xb, out=rb[:, 0])
        rb /= n
        rb += eps
        np.sqrt(rb, out=rb)
        np.reciprocal(rb, out=rb)
        np.multiply(xb, rb, out=yb)
        if w is not None:
            yb *= w
    return y.reshape(x.shape), rstd.reshape(stat_shape)


def _rms_norm_backward_cpu(grad_y, x, weight, rstd, normalized_ndim=1):
    x2, n, _ = _rows(x, normalized_ndim)
    g2 = grad_y.reshape(x2.shape)
    rstd2 = rstd.reshape(-1, 1)
    w = None if weight is None else weight.reshape(n)
    grad_x = np.empty_like(x2)
    grad_weight = _column_sums(w is not None, n)
    for b in row_blocks(*x2.shape):
        gb, gxb, rb = g2[b], grad_x[b], rstd2[b]
        xhat = np.multiply(x2[b], rb)
        if grad_weight is not None:
            grad_weight += np.einsum("ij,ij->j", gb, xhat)
        if w is not None:
            np.multiply(gb, w, out=gxb)
        else:
            gxb[...] = gb
        c = np.vecdot(gxb, xhat)[:, None]
        c /= n
        xhat *= c
        gxb -= xhat
        gxb *= rb
    return grad_x.reshape(x.shape), _finish(grad_weight, x.dtype, x.shape[x.ndim - normalized_ndim:])


# ---- CUDA ------------------------------------------------------------------------------------

_ROWS = raw_module("rtx_norm", r"""
template <typename T>
__global__ void layer_norm_fwd(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                               T* __restrict__ y, T* __restrict__ mean_out, T* __restrict__ rstd_out,
                               T eps, int has_w, int has_b, long long n) {
    __shared__ T shm[32];
    const long long off = (long long)blockIdx.x * n;
    T s = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += x[off + i];
    const T mean = block_sum(s, shm) / T(n);
    T v = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) { const T d = x[off + i] - mean; v += d * d; }
    const T rstd = T(1) / sqrt(block_sum(v, shm) / T(n) + eps);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        T out = (x[off + i] - mean) * rstd;
        if (has_w) out *= w[i];
        if (has_b) out += b[i];
        y[off + i] = out;
    }
    if (threadIdx.x == 0) { mean_out[blockIdx.x] = mean; rstd_out[blockIdx.x] = rstd; }
}

template <typename T>
__global__ void layer_norm_bwd(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w,
                               const T* __restrict__ mean_in, const T* __restrict__ rstd_in,
                               T* __restrict__ dx, int has_w, long long n) {
    __shared__ T shm[32];
    const long long off = (long long)blockIdx.x * n;
    const T mean = mean_in[blockIdx.x], rstd = rstd_in[blockIdx.x];
    T a = T(0), b = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const T gx = has_w ? g[off + i] * w[i] : g[off + i];
        a += gx;
        b += gx * (x[off + i] - mean) * rstd;
    }
    a = block_sum(a, shm) / T(n);
    b = block_sum(b, shm) / T(n);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const T gx = has_w ? g[off + i] * w[i] : g[off + i];
        dx[off + i] = rstd * (gx - a - (x[off + i] - mean) * rstd * b);
    }
}

template <typename T>
__global__ void rms_norm_fwd(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                             T* __restrict__ rstd_out, T eps, int has_w, long long n) {
    __shared__ T shm[32];
    const long long off = (long long)blockIdx.x * n;
    T s = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += x[off + i] * x[off + i];
    const T rstd = T(1) / sqrt(block_sum(s, shm) / T(n) + eps);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const T out = x[off + i] * rstd;
        y[off + i] = has_w ? out * w[i] : out;
    }
    if (threadIdx.x == 0) rstd_out[blockIdx.x] = rstd;
}

template <typename T>
__global__ void rms_norm_bwd(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w,
                             const T* __restrict__ rstd_in, T* __restrict__ dx, int has_w, long long n) {
    __shared__ T shm[32];
    const long long off = (long long)blockIdx.x * n;
    const T rstd = rstd_in[blockIdx.x];
    T b = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const T gx = has_w ? g[off + i] * w[i] : g[off + i];
        b += gx * x[off + i] * rstd;
    }
    b = block_sum(b, shm) / T(n);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const T gx = has_w ? g[off + i] * w[i] : g[off + i];
        dx[off + i] = rstd * (gx - x[off + i] * rstd * b);
    }
}
""", ("layer_norm_fwd", "layer_norm_bwd", "rms_norm_fwd", "rms_norm_bwd"))

# Column sums over the rows: grad_weight = sum over rows of g * xhat, without materialising xhat.
_LN_GRAD_WEIGHT = reduction("rtx_layer_norm_grad_weight", "T g, T x, T mean, T rstd", "T y",
                            "g * ((x - mean) * rstd)", "a + b", "y = a", "0")
_RMS_GRAD_WEIGHT = reduction("rtx_rms_norm_grad_weight", "T g, T x, T rstd", "T y",
                             "g * (x * rstd)", "a + b", "y = a", "0")


def _row_ready(*arrays):
    x = arrays[0]
    return row_kernel_ok(x, 0) and all(a.dtype == x.dtype and a.flags.c_contiguous for a in arrays[1:])


def _vector(a, x, n):
    # weight/bias as contiguous vectors of x's dtype; x itself stands in for a missing one
    # (the kernel's has_w/has_b flag keeps it unread).
    return x if a is None else array_module(x).ascontiguousarray(a.reshape(n), dtype=x.dtype)


def _layer_norm_cuda(x, weight=None, bias=None, eps=1e-5, normalized_ndim=1):
    if not _row_ready(x):
        return layer_norm_reference(x, weight, bias, eps, normalized_ndim)
    x2, n, stat_shape = _rows(x, normalized_ndim)
    xp = array_module(x)
    rows = x2.shape[0]
    y, mean, rstd = xp.empty_like(x), xp.empty(rows, x.dtype), xp.empty(rows, x.dtype)
    launch_rows(_ROWS("layer_norm_fwd", x.dtype), rows, n, x, _vector(weight, x, n), _vector(bias, x, n),
                y, mean, rstd, x.dtype.type(eps), np.int32(weight is not None), np.int32(bias is not None))
    return y, mean.reshape(stat_shape), rstd.reshape(stat_shape)


def _layer_norm_backward_cuda(grad_y, x, weight, mean, rstd, normalized_ndim=1, *, has_bias=None):
    if not _row_ready(x, grad_y, mean, rstd):
        return layer_norm_backward_reference(grad_y, x, weight, mean, rstd, normalized_ndim, has_bias=has_bias)
    has_bias = weight is not None if has_bias is None else has_bias
    x2, n, _ = _rows(x, normalized_ndim)
    xp = array_module(x)
    rows = x2.shape[0]
    dx = xp.empty_like(x)
    launch_rows(_ROWS("layer_norm_bwd", x.dtype), rows, n, grad_y, x, _vector(weight, x, n), mean, rstd, dx,
                np.int32(weight is not None))
    g2 = grad_y.reshape(rows, n)
    grad_weight = grad_bias = None
    if weight is not None:
        grad_weight = _LN_GRAD_WEIGHT()(g2, x2, mean.reshape(rows, 1), rstd.reshape(rows, 1), axis=0)
        grad_weight = grad_weight.reshape(weight.shape)
    if has_bias:
        grad_bias = g2.sum(axis=0).reshape(x.shape[x.ndim - normalized_ndim:])
    return dx, grad_weight, grad_bias


def _rms_norm_cuda(x, weight=None, eps=1e-6, normalized_ndim=1):
    if not _row_ready(x):
        return rms_norm_reference(x, weight, eps, normalized_ndim)
    x2, n, stat_shape = _rows(x, normalized_ndim)
    xp = array_module(x)
    rows = x2.shape[0]
    y, rstd = xp.empty_like(x), xp.empty(rows, x.dtype)
    launch_rows(_ROWS("rms_norm_fwd", x.dtype), rows, n, x, _vector(weight, x, n), y, rstd,
                x.dtype.type(eps), np.int32(weight is not None))
    return y, rstd.reshape(stat_shape)


def _rms_norm_backward_cuda(grad_y, x, weight, rstd, normalized_ndim=1):
    if not _row_ready(x, grad_y, rstd):
        return rms_norm_backward_reference(grad_y, x, weight, rstd, normalized_ndim)
    x2, n, _ = _rows(x, normalized_ndim)
    xp = array_module(x)
    rows = x2.shape[0]
    dx = xp.empty_like(x)
    launch_rows(_ROWS("rms_norm_bwd", x.dtype), rows, n, grad_y, x, _vector(weight, x, n), rstd, dx,
                np.int32(weight is not None))
    grad_weight = None
    if weight is not None:
        grad_weight = _RMS_GRAD_WEIGHT()(grad_y.reshape(rows, n), x2, rstd.reshape(rows, 1), axis=0)
        grad_weight = grad_weight.reshape(weight.shape)
    return dx, grad_weight


# ---- samples and registration ----------------------------------------------------------------


def _cases(rng, size):
    """(x, normalized_ndim, with_weight, with_bias, label)."""
    if size == "bench":
        yield rng.standard_normal((8192, 768)), 1, True, True, "8192x768"
        return
    yield rng.standard_normal((4, 16)), 1, True, True, "(4, 16)"
    yield rng.standard_normal((2, 3, 10)) * 5 + 100, 1, True, True, "(2, 3, 10) offset 100"
    yield rng.standard_normal((2, 3, 4, 5)), 2, True, True, "(2, 3, 4, 5) ndim=2"
    yield rng.standard_normal((5, 7)), 1, False, False, "(5, 7) no affine"
    yield rng.standard_normal((5, 7)), 1, True, False, "(5, 7) weight only"
    yield rng.standard_normal((3, 1000)), 1, True, True, "(3, 1000)"
    yield rng.standard_normal((6,)), 1, True, True, "(6,)"
    yield rng.standard_normal((300, 512)), 1, True, True, "(300, 512): several blocks"


def _weights(rng, x, k, with_weight, with_bias):
    shape = x.shape[x.ndim - k:]
    w = rng.standard_normal(shape) if with_weight else None
    b = rng.standard_normal(shape) if with_bias else None
    return w, b


def _cast(a, dtype):
    return None if a is None else a.astype(dtype)


def _layer_norm_samples(rng, dtype, size):
    for x, k, ww, wb, label in _cases(rng, size):
        w, b = _weights(rng, x, k, ww, wb)
        yield Sample((x.astype(dtype), _cast(w, dtype), _cast(b, dtype), 1e-5, k), {}, label)


def _layer_norm_backward_samples(rng, dtype, size):
    for x, k, ww, wb, label in _cases(rng, size):
        w, b = _weights(rng, x, k, ww, wb)
        x = x.astype(dtype)
        _, mean, rstd = layer_norm_reference(x, _cast(w, dtype), _cast(b, dtype), 1e-5, k)
        g = rng.standard_normal(x.shape).astype(dtype)
        yield Sample((g, x, _cast(w, dtype), mean, rstd, k), {"has_bias": wb}, label)


def _rms_norm_samples(rng, dtype, size):
    for x, k, ww, _, label in _cases(rng, size):
        w, _ = _weights(rng, x, k, ww, False)
        yield Sample((x.astype(dtype), _cast(w, dtype), 1e-6, k), {}, label)


def _rms_norm_backward_samples(rng, dtype, size):
    for x, k, ww, _, label in _cases(rng, size):
        w, _ = _weights(rng, x, k, ww, False)
        x = x.astype(dtype)
        _, rstd = rms_norm_reference(x, _cast(w, dtype), 1e-6, k)
        g = rng.standard_normal(x.shape).astype(dtype)
        yield Sample((g, x, _cast(w, dtype), rstd, k), {}, label)


# Sums over 1000-element rows in float32: a few units of 1e-6 relative in grad_weight.
_F32 = {np.float32: (1e-4, 1e-5)}

layer_norm = register(Kernel("layer_norm", layer_norm_reference, _layer_norm_cpu, _layer_norm_cuda,
                             _layer_norm_samples, tolerances=_F32))
layer_norm_backward = register(Kernel("layer_norm_backward", layer_norm_backward_reference,
                                      _layer_norm_backward_cpu, _layer_norm_backward_cuda,
                                      _layer_norm_backward_samples, tolerances=_F32))
rms_norm = register(Kernel("rms_norm", rms_norm_reference, _rms_norm_cpu, _rms_norm_cuda, _rms_norm_samples,
                           tolerances=_F32))
rms_norm_backward = register(Kernel("rms_norm_backward", rms_norm_backward_reference, _rms_norm_backward_cpu,
                                    _rms_norm_backward_cuda, _rms_norm_backward_samples, tolerances=_F32))
