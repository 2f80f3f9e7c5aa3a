"""softmax and log_softmax over one axis, and their backward passes.

Both subtract the maximum first, so large inputs neither overflow nor lose their differences.
CPU: one output buffer, updated in place a block of rows at a time, instead of the reference's
three whole-array temporaries. Over the last axis of float32/float64 rows (attention's scores),
the passes that cost are the ones along short rows: a row max over 64 elements costs ~20x a
whole-block max. So a block whose values all lie within SHARED_SHIFT_SPREAD of each other is
shifted by its one maximum (softmax does not change under a per-row shift, and every exp stays a
normal float with full precision: measured within the row-max path's rounding, ~1e-6 relative
at the limit), and each row's sum is a BLAS product with a vector of ones.
CUDA: one thread block per row for the last axis of a C-contiguous float32/float64 array;
CuPy array ops (the reference, which is written for either module) otherwise.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.kernel._blocks import row_blocks
from rtx.kernel._cuda import launch_rows, raw_module, row_kernel_ok
from rtx.kernel._registry import Kernel, Sample, register
from rtx.runtime import array_module

# ---- references ----------------------------------------------------------------------------


def softmax_reference(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed as exp(x - max) / sum(exp(x - max))."""
    z = x - x.max(axis=axis, keepdims=True)
    e = array_module(x).exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_reference(x, axis=-1):
    """x - logsumexp(x) along `axis`, with the maximum subtracted first."""
    xp = array_module(x)
    z = x - x.max(axis=axis, keepdims=True)
    return z - xp.log(xp.exp(z).sum(axis=axis, keepdims=True))


def softmax_backward_reference(y, grad_y, axis=-1):
    """The gradient wrt x of softmax, given y = softmax(x): y * (g - sum(g * y))."""
    return y * (grad_y - (grad_y * y).sum(axis=axis, keepdims=True))


def log_softmax_backward_reference(y, grad_y, axis=-1):
    """The gradient wrt x of log_softmax, given y = log_softmax(x): g - exp(y) * sum(g)."""
    return grad_y - array_module(y).exp(y) * grad_y.sum(axis=axis, keepdims=True)


# ---- CPU: rows of the last axis in blocks (other axes: whole arrays), in place ---------------


def _rows_of(x, axis):
    """x as (rows, n) over the last axis, or None for another axis."""
    if axis not in (-1, x.ndim - 1) or x.ndim == 0:
        return None
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # not -1: rows of length 0 exist


def _softmax_into(y, x, axis):
    np.subtract(x, x.max(axis=axis, keepdims=True), out=y)
    np.exp(y, out=y)
    y /= y.sum(axis=axis, keepdims=True)


# exp(-30) ~ 1e-13: far from float32's subnormals (exp(-87)), so no value loses precision.
SHARED_SHIFT_SPREAD = 30.0
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _shift_rows_into(y, x):
    """y = x - (a shift per row that keeps exp finite and precise); the row max unless the
    block's spread allows its one max (the "whole-block" path; NaN/inf fail the test)."""
    hi = x.max()
    if hi - x.min() <= SHARED_SHIFT_SPREAD:
        np.subtract(x, hi, out=y)
    else:
        np.subtract(x, x.max(axis=1, keepdims=True), out=y)


def _row_sums(y, ones):
    return y @ ones if ones is not None else y.sum(axis=1)


def _softmax_rows_into(y, x, ones):
    _shift_rows_into(y, x)
    np.exp(y, out=y)
    s = _row_sums(y, ones)
    y *= np.reciprocal(s, out=s)[:, None]


def exp_rows_(x):
    """softmax without its last division, in place on a C-contiguous float32/float64 NumPy array:
    x becomes exp(x - shift) per row of the last axis (shift as softmax's CPU path) and the row
    sums are returned, shaped x.shape[:-1]. For callers that divide a smaller array later
    (attention divides (L, Ev) outputs, not (L, S) weights)."""
    x2 = _rows_of(x, -1)
    if not x2.size:
        return np.zeros(x.shape[:-1], x.dtype)
    _shift_rows_into(x2, x2)
    np.exp(x2, out=x2)
    return _row_sums(x2, _ones_for(x2)).reshape(x.shape[:-1])


def _ones_for(x2):
    """A vector of ones to sum rows by BLAS, or None where BLAS does not take the dtype."""
    return np.ones(x2.shape[1], x2.dtype) if x2.dtype in _BLAS_FLOATS and x2.size else None


def _softmax_cpu(x, axis=-1):
    if not x.size:  # nothing to normalise (a max over an empty axis would raise)
        return np.empty_like(x)
    x2 = _rows_of(x, axis)
    if x2 is None:
        y = np.empty_like(x)
        _softmax_into(y, x, axis)
        return y
    y = np.empty_like(x2)
    ones = _ones_for(x2)
    for b in row_blocks(*x2.shape):
        if ones is None:
            _softmax_into(y[b], x2[b], 1)
        else:
            _softmax_rows_into(y[b], x2[b], ones)
    return y.reshape(x.shape)


def _log_softmax_into(y, x, axis):
    np.subtract(x, x.max(axis=axis, keepdims=True), out=y)
    s = np.exp(y).sum(axis=axis, keepdims=True)
    y -= np.log(s, out=s)


def _log_softmax_cpu(x, axis=-1):
    if not x.size:  # nothing to normalise (a max over an empty axis would raise)
        return np.empty_like(x)
    x2 = _rows_of(x, axis)
    if x2 is None:
        y = np.empty_like(x)
        _log_softmax_into(y, x, axis)
        return y
    y = np.empty_like(x2)
    for b in row_blocks(*x2.shape):
        _log_softmax_into(y[b], x2[b], 1)
    return y.reshape(x.shape)


def _softmax_backward_into(dx, y, g, axis, ones=None):
    np.multiply(g, y, out=dx)
    dot = dx.sum(axis=axis, keepdims=True) if ones is None else (dx @ ones)[:, None]
    np.subtract(g, dot, out=dx)
    dx *= y


def _log_softmax_backward_into(dx, y, g, axis, ones=None):
    # NumPy's pairwise sum even on rows: g - exp(y) * sum(g) cancels, so the sum's rounding shows.
    np.exp(y, out=dx)
    dx *= g.sum(axis=axis, keepdims=True)
    np.subtract(g, dx, out=dx)


def _backward_cpu(into):
    def run(y, grad_y, axis=-1):
        if not y.size or not grad_y.size:
            return np.empty(np.broadcast_shapes(y.shape, grad_y.shape), np.result_type(y, grad_y))
        y2 = _rows_of(y, axis)
        if y2 is None or grad_y.shape != y.shape:
            dx = np.empty(np.broadcast_shapes(y.shape, grad_y.shape), np.result_type(y, grad_y))
            into(dx, y, grad_y, axis)
            return dx
        g2 = grad_y.reshape(y2.shape)
        dx = np.empty_like(y2)
        ones = _ones_for(y2) if g2.dtype == y2.dtype else None  # row sums by BLAS, as the forward's
        for b in row_blocks(*y2.shape):
            into(dx[b], y2[b], g2[b], 1, ones)
        return dx.reshape(y.shape)
    return run


_softmax_backward_cpu = _backward_cpu(_softmax_backward_into)
_log_softmax_backward_cpu = _backward_cpu(_log_softmax_backward_into)


# ---- CUDA: one block per row -----------------------------------------------------------------

_ROWS = raw_module("rtx_softmax", r"""
template <typename T>
__global__ void softmax_fwd(const T* __restrict__ x, T* __restrict__ y, long long n) {
    __shared__ T shm[32];
    const T* xr = x + (long long)blockIdx.x * n;
    T* yr = y + (long long)blockIdx.x * n;
    T m = neg_inf<T>();
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmax(m, xr[i]);
    m = block_max(m, shm);
    T s = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += exp(xr[i] - m);
    const T inv = T(1) / block_sum(s, shm);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) yr[i] = exp(xr[i] - m) * inv;
}

template <typename T>
__global__ void log_softmax_fwd(const T* __restrict__ x, T* __restrict__ y, long long n) {
    __shared__ T shm[32];
    const T* xr = x + (long long)blockIdx.x * n;
    T* yr = y + (long long)blockIdx.x * n;
    T m = neg_inf<T>();
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmax(m, xr[i]);
    m = block_max(m, shm);
    T s = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += exp(xr[i] - m);
    const T log_s = log(block_sum(s, shm));
    for (long long i = threadIdx.x; i < n; i += blockDim.x) yr[i] = (xr[i] - m) - log_s;
}

template <typename T>
__global__ void softmax_bwd(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx, long long n) {
    __shared__ T shm[32];
    const long long off = (long long)blockIdx.x * n;
    T dot = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) dot += g[off + i] * y[off + i];
    dot = block_sum(dot, shm);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) dx[off + i] = y[off + i] * (g[off + i] - dot);
}

template <typename T>
__global__ void log_softmax_bwd(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx, long long n) {
    __shared__ T shm[32];
    const long long off = (long long)blockIdx.x * n;
    T s = T(0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += g[off + i];
    s = block_sum(s, shm);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) dx[off + i] = g[off + i] - exp(y[off + i]) * s;
}
""", ("softmax_fwd", "log_softmax_fwd", "softmax_bwd", "log_softmax_bwd"))


def _last_axis(x, axis):
    return axis in (-1, x.ndim - 1) and row_kernel_ok(x, x.ndim - 1)


def _rows_forward(name, fallback):
    def run(x, axis=-1):
        if not _last_axis(x, axis):
            return fallback(x, axis)
        y = array_module(x).empty_like(x)
        n = x.shape[-1]
        launch_rows(_ROWS(name, x.dtype), x.size // n, n, x, y)
        return y
    return run


def _rows_backward(name, fallback):
    def run(y, grad_y, axis=-1):
        if not (_last_axis(y, axis) and grad_y.dtype == y.dtype and grad_y.flags.c_contiguous
                and grad_y.shape == y.shape):
            return fallback(y, grad_y, axis)
        dx = array_module(y).empty_like(y)
        n = y.shape[-1]
        launch_rows(_ROWS(name, y.dtype), y.size // n, n, y, grad_y, dx)
        return dx
    return run


# ---- samples and registration ----------------------------------------------------------------


def _inputs(rng, dtype, size):
    if size == "bench":
        yield (rng.standard_normal((256, 1024)), -1, "256x1024")
        yield (rng.standard_normal((8192, 2048)), -1, "8192x2048")
        return
    for shape, axis in (((7,), -1), ((4, 33), -1), ((2, 3, 130), -1), ((5, 1), -1), ((4, 6, 5), 1),
                        ((8, 3), 0), ((3, 2000), -1), ((150, 1000), -1)):
        yield (rng.standard_normal(shape) * 3, axis, f"{shape} axis={axis}")
    # Large magnitudes: exp overflows without the max subtraction.
    yield (rng.standard_normal((6, 50)) * 1e4 + 1e3, -1, "large (6, 50)")
    yield (rng.standard_normal((6, 50)) * 100 - 5e3, -1, "large negative (6, 50)")


def _forward_samples(rng, dtype, size):
    for x, axis, label in _inputs(rng, dtype, size):
        yield Sample((x.astype(dtype),), {"axis": axis}, label)


def _backward_samples(forward):
    def make(rng, dtype, size):
        for x, axis, label in _inputs(rng, dtype, size):
            y = forward(x, axis)
            g = rng.standard_normal(x.shape)
            yield Sample((y.astype(dtype), g.astype(dtype)), {"axis": axis}, label)
    return make


softmax = register(Kernel("softmax", softmax_reference, _softmax_cpu,
                          _rows_forward("softmax_fwd", softmax_reference), _forward_samples))
log_softmax = register(Kernel("log_softmax", log_softmax_reference, _log_softmax_cpu,
                              _rows_forward("log_softmax_fwd", log_softmax_reference), _forward_samples,
                              tolerances={np.float32: (2e-5, 2e-5)}))
softmax_backward = register(Kernel(
    "softmax_backward", softmax_backward_reference, _softmax_backward_cpu,
    _rows_backward("softmax_bwd", softmax_backward_reference), _backward_samples(softmax_reference)))
log_softmax_backward = register(Kernel(
    "log_softmax_backward", log_softmax_backward_reference, _log_softmax_backward_cpu,
    _rows_backward("log_softmax_bwd", log_softmax_backward_reference), _backward_samples(log_softmax_reference)))
