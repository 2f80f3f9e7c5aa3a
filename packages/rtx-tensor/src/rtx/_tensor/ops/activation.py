"""softmax, log_softmax (torch.softmax / torch.log_softmax) and the softplus / logsigmoid
pointwise ops.

They live in rtx-tensor, not rtx-nn, because the loss functions (rtx-losses, below rtx-nn) are
built on them; rtx.nn.functional re-exports these same functions, and rtx.extend publishes
softplus and logsigmoid (PyTorch has them only in torch.nn.functional).
softmax and log_softmax run rtx.kernel's fused kernels; their backward passes use the fused
backward kernels when no graph of the backward is recorded, and Tensor ops otherwise.
Measured forward + backward on 64x768 float32 (CPU, best of several runs), against the same
math composed from Tensor ops: softmax 181 us vs 886 us.
"""
from __future__ import annotations

import warnings

import numpy as np

from rtx._tensor import autocast_state as _autocast
from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, wrap_dim
from rtx._tensor.ops.arith import where
from rtx._tensor.tensor import Tensor
from rtx.autograd.grad_mode import _state
from rtx.runtime import dtypes as _dt

__all__ = ["softmax", "log_softmax", "softplus", "logsigmoid"]


def _check(input, op):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _float_only(input, op):
    _check(input, op)
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f'"{op}" not implemented for \'{input.dtype.name.capitalize()}\' '
                                  "(it needs a floating point input; cast with .float())")


# ---- softplus and logsigmoid: one Primitive each, derivative in Tensor ops (double backward) ------


def _softplus_array(a, beta, threshold):
    """log(1 + exp(beta a)) / beta on an array, a itself where beta a > threshold."""
    z = a * beta if beta != 1 else a
    out = np.logaddexp(0, z)
    if beta != 1:
        out = out / beta
    return np.where(z > threshold, a, out).astype(a.dtype, copy=False)


class Softplus(Primitive):
    @staticmethod
    def forward(ctx, a, *, beta, threshold):
        ctx.save_for_backward(a)
        ctx.beta, ctx.threshold = beta, threshold
        return _softplus_array(a._data, beta, threshold)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x * ctx.beta > ctx.threshold, grad, grad * (x * ctx.beta).sigmoid())


class LogSigmoid(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        a = a._data
        return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))  # exp of a non-positive number only

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-x).sigmoid()


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    _float_only(input, "softplus")
    if _autocast.active:  # on CUDA autocast's float32 list
        (input,) = _autocast.fp32("softplus", input)
    return Softplus.apply(input, beta=beta, threshold=threshold)


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow."""
    _float_only(input, "log_sigmoid")
    return LogSigmoid.apply(input)


# ---- softmax family: rtx.kernel forward, Tensor-op backward ----------------------------------------


def _use_fused_backward():
    # With no graph of the backward being recorded, the fused backward kernel gives the same
    # numbers in one pass; with create_graph the Tensor-op formula keeps double backward.
    return not _state.enabled


class Softmax(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, axis):
        from rtx import kernel
        ctx.axis = axis
        return kernel.softmax(a._data, axis)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output()
        if _use_fused_backward():
            from rtx import kernel
            return Tensor._make(kernel.softmax_backward(y._data, grad._data, ctx.axis))
        return y * (grad - (grad * y).sum(ctx.axis, keepdim=True))


class LogSoftmax(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, a, *, axis):
        from rtx import kernel
        ctx.axis = axis
        return kernel.log_softmax(a._data, axis)

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output()
        if _use_fused_backward():
            from rtx import kernel
            return Tensor._make(kernel.log_softmax_backward(y._data, grad._data, ctx.axis))
        return grad - y.exp() * grad.sum(ctx.axis, keepdim=True)


def _softmax_dim(name, ndim, stacklevel):
    """PyTorch's implicit dim (deprecated, with its warning): 0 for 0-, 1- and 3-d inputs, else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_like(op, input, dim, dtype, name, stacklevel):
    _check(input, name)
    if dim is None:
        dim = _softmax_dim(name, input.ndim, stacklevel + 1)
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    elif _autocast.active:  # softmax, log_softmax: on CUDA autocast's float32 list (unless dtype= is given)
        (input,) = _autocast.fp32(name, input)
    if not input.is_floating_point():
        raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for '
                                  f"'{input.dtype.name.capitalize()}' (pass dtype= or cast to a float dtype)")
    if input.ndim == 0:
        wrap_dim(dim, 0, name)
        return op.apply(input.reshape(1), axis=0).reshape(())
    axis = wrap_dim(dim, input.ndim, name)
    if input.numel() == 0:
        return input.clone()
    return op.apply(input, axis=axis)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim, with the maximum subtracted first (no overflow)."""
    return _softmax_like(Softmax, input, dim, dtype, "softmax", _stacklevel)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along dim."""
    return _softmax_like(LogSoftmax, input, dim, dtype, "log_softmax", _stacklevel)
