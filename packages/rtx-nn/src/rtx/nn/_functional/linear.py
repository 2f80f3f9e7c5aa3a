"""linear and bilinear."""
from __future__ import annotations

import contextlib

import numpy as np

import rtx
from rtx.autograd import is_grad_enabled
from rtx.extend import Primitive, Tensor, raw, wrap
from rtx.extend import autocast as _autocast
from rtx.runtime import threads as _threads
from rtx.runtime import tuning as _tuning
from rtx.runtime.devices import device_of

__all__ = ["linear", "bilinear"]

# GEMMs with fewer multiply-adds than this run on one BLAS thread (see one_blas_thread): ~0.3 ms
# on one core, so a second thread could save at most ~0.15 ms.
_SMALL_GEMM = 1 << 24
_BLAS_SINGLE_THREADED_BELOW = 2 ** 18
_NO_SWITCH = contextlib.nullcontext()
_PLAIN_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # half types sum in float32: the Tensor path


def one_blas_thread(arr, macs):
    """A context for one GEMM of `macs` multiply-adds: on the CPU, single-threaded BLAS when the
    GEMM is small (rtx.runtime.threads.single_threaded_blas), else (and on a GPU) a null context.
    After a multi-threaded call OpenBLAS's worker threads spin for ~0.1 s (its THREAD_TIMEOUT)
    waiting for the next one, and meanwhile compete for the cores with the convolutions' chunk
    threads, which run single-threaded BLAS and never wake them. ResNet-18's classifier (8x512
    times 512x1000, 4M multiply-adds, three GEMMs per training step) cost ~90 ms of CPU time per
    step that way (measured at batch 8 on 2 cores: 240 against 331 ms of CPU per step, same wall
    time or better)."""
    # Below OpenBLAS's own threshold (its interface/gemm.c runs GEMMs of fewer than 65536 * 4
    # multiply-adds on one thread) there is no thread to keep asleep, and switching the thread
    # count costs ~15 us: more than a batch-1 Linear itself (measured 9 -> 24 us for 1x64x64).
    if macs < _BLAS_SINGLE_THREADED_BELOW or macs >= _SMALL_GEMM or device_of(arr).type != "cpu" or \
            _threads.cpu_workers() <= 1:
        return _NO_SWITCH
    # `rtx automeasure tune` may have measured BLAS's configured threads faster for GEMMs of this
    # size on this machine (rtx.runtime.tuning, op "gemm_small", shape (macs,)).
    cfg = _tuning.lookup("gemm_small", (macs,), arr.dtype, "cpu")
    if cfg and cfg.get("single_threaded") is False:
        return _NO_SWITCH
    return _threads.single_threaded_blas()


class Linear(Primitive):
    """y = x W^T (+ b) as one node. Composed from matmul, transpose and add, the weight's gradient
    would arrive as a transposed view and be copied on accumulation; here it is computed as
    g^T x, a fresh C-ordered array, and the three nodes become one."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        xd = raw(x)
        with one_blas_thread(xd, xd.size * raw(w).shape[0]):  # small GEMMs: see there
            out = xd @ raw(w).T
        if b is not None:
            out += raw(b)
        # ml_dtypes computes bfloat16 @ bfloat16 in float32 and returns that; PyTorch keeps bfloat16
        return out if out.dtype == xd.dtype else out.astype(xd.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        gd, xd = raw(grad), raw(x)
        if gd.dtype == xd.dtype and gd.dtype in _PLAIN_FLOATS and not is_grad_enabled():
            # No double backward asked for (create_graph=False): the three products on the arrays
            # themselves. Same GEMMs as the Tensor spelling below, without a dozen op dispatches
            # (about half of a small MLP's backward time).
            wd = raw(w)
            g2 = gd.reshape(-1, wd.shape[0]) if gd.ndim != 2 else gd
            with one_blas_thread(xd, xd.size * wd.shape[0]):
                gx = wrap(gd @ wd) if need_x else None
                gw = wrap(g2.T @ xd.reshape(-1, xd.shape[-1])) if need_w else None
            return gx, gw, (wrap(g2.sum(0)) if need_b else None)
        out_f = w.shape[0]
        g2 = grad.reshape(-1, out_f) if grad.ndim != 2 else grad
        with one_blas_thread(xd, xd.size * out_f):
            gx = grad @ w if need_x else None
            gw = g2.mT @ x.reshape(-1, x.shape[-1]) if need_w else None
        gb = g2.sum(0) if need_b else None
        return gx, gw, gb


def linear(input, weight, bias=None):
    """y = x W^T + b, one BLAS call."""
    if type(input) is not Tensor or type(weight) is not Tensor:
        raise TypeError(f"linear(): expected Tensors, got {type(input).__name__} and {type(weight).__name__}")
    if _autocast.active:  # on autocast's lower-precision list
        input, weight, bias = _autocast.lower(input, weight, bias)
    # The checks read the arrays' own shape/dtype: the Tensor properties build Size and dtype
    # objects, a measurable share of a small layer's call.
    xd, wd = raw(input), raw(weight)
    if xd.shape[-1] != wd.shape[-1]:
        rows = 1
        for s in input.shape[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    if wd.ndim == 2 and xd.ndim >= 1 and xd.dtype == wd.dtype and \
            (bias is None or (type(bias) is Tensor and raw(bias).dtype == wd.dtype and raw(bias).ndim == 1)) and \
            type(xd) is type(wd) and (type(xd) is np.ndarray or input.device == weight.device):
        return Linear.apply(input, weight, bias)
    out = input @ weight.mT if weight.ndim == 2 else input @ weight
    if bias is not None:
        out = out + bias
    return out


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T A_k x2 + b_k for weight A of shape (out, in1, in2)."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {tuple(input1.shape)} and "
                           f"{tuple(input2.shape)}")
    out = rtx.einsum("...i,kij,...j->...k", input1, weight, input2)
    if bias is not None:
        out = out + bias
    return out
