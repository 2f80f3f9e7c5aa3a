"""linear and bilinear."""
from __future__ import annotations

import rtx
from rtx.extend import Primitive, Tensor
from rtx.extend import autocast as _autocast
from rtx.nn._functional.conv import one_blas_thread

__all__ = ["linear", "bilinear"]


class Linear(Primitive):
    """y = x W^T (+ b) as one node. Composed from matmul, transpose and add, the weight's gradient
    would arrive as a transposed view and be copied on accumulation; here it is computed as
    g^T x, a fresh C-ordered array, and the three nodes become one."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        with one_blas_thread(x._data, x._data.size * w.shape[0]):  # small GEMMs: see there
            out = x._data @ w._data.T
        if b is not None:
            out += b._data
        # ml_dtypes computes bfloat16 @ bfloat16 in float32 and returns that; PyTorch keeps bfloat16
        return out if out.dtype == x._data.dtype else out.astype(x._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        out_f = w.shape[0]
        g2 = grad.reshape(-1, out_f) if grad.ndim != 2 else grad
        with one_blas_thread(x._data, x._data.size * out_f):
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
    if input.shape[-1] != weight.shape[-1]:
        rows = 1
        for s in input.shape[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    if weight.ndim == 2 and input.ndim >= 1 and input.dtype == weight.dtype and \
            (bias is None or (type(bias) is Tensor and bias.dtype == weight.dtype and bias.ndim == 1)) and \
            input.device == weight.device:
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
