"""linear and bilinear."""
from __future__ import annotations

import rtx
from rtx._tensor.tensor import Tensor

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """y = x W^T + b, one BLAS call."""
    if type(input) is not Tensor or type(weight) is not Tensor:
        raise TypeError(f"linear(): expected Tensors, got {type(input).__name__} and {type(weight).__name__}")
    if input.shape[-1] != weight.shape[-1]:
        rows = 1
        for s in input.shape[:-1]:
            rows *= s
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
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
