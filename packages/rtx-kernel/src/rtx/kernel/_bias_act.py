"""bias + activation in one pass (the epilogue of a linear or convolution layer), and its
backward. The bias runs along the last axis, or along `channel_axis` (1 for NCHW images).

Activations: none, relu, gelu, gelu_tanh, silu, tanh, sigmoid.
CPU: x + bias, then the activation in place, a block of leading-axis slices at a time.
CUDA: one ElementwiseKernel per activation (bias broadcast by CuPy); grad_bias is a CuPy sum.
"""
from __future__ import annotations

import numpy as np

from rtx.kernel import _gelu
from rtx.kernel._blocks import row_blocks
from rtx.kernel._cuda import elementwise
from rtx.kernel._registry import Kernel, Sample, register
from rtx.runtime import array_module

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid")


def _check(act):
    if act not in ACTIVATIONS:
        raise ValueError(f"act must be one of {', '.join(ACTIVATIONS)}; got {act!r}")


def _bias_view(bias, x, channel_axis):
    """bias (C,) shaped to broadcast along x's channel axis."""
    axis = channel_axis % x.ndim
    if bias.shape != (x.shape[axis],):
        raise ValueError(f"bias must have shape ({x.shape[axis]},) to match axis {channel_axis} of x "
                         f"with shape {x.shape}; got {bias.shape}")
    return bias.reshape((-1,) + (1,) * (x.ndim - 1 - axis))


def _sum_but(a, channel_axis):
    axis = channel_axis % a.ndim
    return a.sum(axis=tuple(i for i in range(a.ndim) if i != axis))


# ---- references ----------------------------------------------------------------------------


def _sigmoid(z):
    return 0.5 * (1 + array_module(z).tanh(0.5 * z))   # = 1 / (1 + exp(-z)), without overflow


def _activate(z, act):
    xp = array_module(z)
    if act == "none":
        return z
    if act == "relu":
        return xp.maximum(z, 0)
    if act in ("gelu", "gelu_tanh"):
        return _gelu.gelu_reference(z, "tanh" if act == "gelu_tanh" else "none")
    if act == "silu":
        return z * _sigmoid(z)
    if act == "tanh":
        return xp.tanh(z)
    return _sigmoid(z)


def _derivative(z, act):
    if act == "none":
        return array_module(z).ones_like(z)
    if act == "relu":
        return (z > 0).astype(z.dtype)
    if act in ("gelu", "gelu_tanh"):
        return _gelu.gelu_backward_reference(z, array_module(z).ones_like(z), "tanh" if act == "gelu_tanh" else "none")
    if act == "silu":
        s = _sigmoid(z)
        return s * (1 + z * (1 - s))
    if act == "tanh":
        return 1 - array_module(z).tanh(z) ** 2
    s = _sigmoid(z)
    return s * (1 - s)


def bias_act_reference(x, bias, act="none", *, channel_axis=-1):
    """act(x + bias), bias of shape (C,) along `channel_axis` (or None for act(x))."""
    _check(act)
    z = x if bias is None else x + _bias_view(bias, x, channel_axis)
    return _activate(z, act)


def bias_act_backward_reference(x, bias, grad_y, act="none", *, channel_axis=-1):
    """(grad_x, grad_bias) of bias_act; grad_bias is None when bias is."""
    _check(act)
    z = x if bias is None else x + _bias_view(bias, x, channel_axis)
    grad_x = grad_y * _derivative(z, act)
    return grad_x, None if bias is None else _sum_but(grad_x, channel_axis)


# ---- CPU -------------------------------------------------------------------------------------


def _sigmoid_(z):
    z *= 0.5
    np.tanh(z, out=z)
    z *= 0.5
    z += 0.5
    return z


def _activate_(z, act):
    """act(z), computed in z's own buffer (gelu: into a new one, returned)."""
    if act == "relu":
        return np.maximum(z, 0, out=z)
    if act == "tanh":
        return np.tanh(z, out=z)
    if act == "sigmoid":
        return _sigmoid_(z)
    if act == "silu":
        z *= _sigmoid_(z.copy())
        return z
    if act in ("gelu", "gelu_tanh"):
        return _gelu.gelu.cpu(z, "tanh" if act == "gelu_tanh" else "none")
    return z


def _derivative_times_(z, g, act):
    """g * act'(z), computed in z's own buffer (gelu: into a new one, returned)."""
    if act == "none":
        z[...] = g
        return z
    if act == "relu":
        return np.multiply(g, np.greater(z, 0), out=z)
    if act in ("gelu", "gelu_tanh"):
        return _gelu.gelu_backward.cpu(z, g, "tanh" if act == "gelu_tanh" else "none")
    if act == "tanh":
        np.tanh(z, out=z)
        np.multiply(z, z, out=z)
        np.subtract(1, z, out=z)
        return np.multiply(z, g, out=z)
    if act == "sigmoid":
        s = _sigmoid_(z)
        one_minus = np.subtract(1, s)
        s *= one_minus
        s *= g
        return s
    s = _sigmoid_(z.copy())   # silu: s (1 + z (1 - s))
    one_minus = np.subtract(1, s)
    z *= one_minus
    z += 1
    z *= s
    z *= g
    return z


def _blocks_of(x, channel_axis):
    """Slices along axis 0 for x (and its bias broadcast), or one whole block when axis 0 is the
    channel axis."""
    if x.ndim < 2 or channel_axis % x.ndim == 0:
        return [slice(None)]
    return row_blocks(x.shape[0], x[0].size)


def _bias_act_cpu(x, bias, act="none", *, channel_axis=-1):
    _check(act)
    b = None if bias is None else _bias_view(bias, x, channel_axis)
    y = np.empty(x.shape, np.result_type(x, b) if b is not None else x.dtype)
    for s in _blocks_of(x, channel_axis):
        z = y[s]
        if b is None:
            z[...] = x[s]
        else:
            np.add(x[s], b, out=z)
        out = _activate_(z, act)
        if out is not z:
            z[...] = out
    return y


def _bias_act_backward_cpu(x, bias, grad_y, act="none", *, channel_axis=-1):
    _check(act)
    b = None if bias is None else _bias_view(bias, x, channel_axis)
    grad_x = np.empty(np.broadcast_shapes(x.shape, grad_y.shape), np.result_type(x, grad_y))
    grad_bias = None if bias is None else np.zeros(bias.shape)   # accumulated in float64
    for s in _blocks_of(grad_x, channel_axis):
        z = grad_x[s]
        if b is None:
            z[...] = x[s]
        else:
            np.add(x[s], b, out=z)
        gz = _derivative_times_(z, grad_y[s], act)
        if gz is not z:
            z[...] = gz
        if grad_bias is not None:
            grad_bias += _sum_but(gz, channel_axis)
    return grad_x, None if grad_bias is None else grad_bias.astype(grad_x.dtype)


# ---- CUDA ------------------------------------------------------------------------------------

_SIGMOID = "(T(1) / (T(1) + exp(-z)))"
_CUDA_FORWARD = {
    "none": "z",
    "relu": "(z < T(0) ? T(0) : z)",
    "gelu": _gelu.CUDA_FORWARD["none"],
    "gelu_tanh": _gelu.CUDA_FORWARD["tanh"],
    "silu": f"z * {_SIGMOID}",
    "tanh": "tanh(z)",
    "sigmoid": _SIGMOID,
}
_CUDA_DERIVATIVE = {
    "none": "T(1)",
    "relu": "(z > T(0) ? T(1) : T(0))",
    "gelu": _gelu.CUDA_DERIVATIVE["none"],
    "gelu_tanh": _gelu.CUDA_DERIVATIVE["tanh"],
    "silu": f"({_SIGMOID} * (T(1) + z * (T(1) - {_SIGMOID})))",
    "tanh": "(T(1) - tanh(z) * tanh(z))",
    "sigmoid": f"({_SIGMOID} * (T(1) - {_SIGMOID}))",
}
_FORWARD = {a: elementwise(f"rtx_bias_{a}", "T x, T b", "T y", f"const T z = x + b; y = {e}")
            for a, e in _CUDA_FORWARD.items()}
_BACKWARD = {a: elementwise(f"rtx_bias_{a}_backward", "T x, T b, T g", "T dz", f"const T z = x + b; dz = g * {e}",
                            _gelu.CUDA_PREAMBLE)
             for a, e in _CUDA_DERIVATIVE.items()}


def _bias_or_zero(bias, x, channel_axis):
    return x.dtype.type(0) if bias is None else _bias_view(bias, x, channel_axis).astype(x.dtype, copy=False)


def _bias_act_cuda(x, bias, act="none", *, channel_axis=-1):
    _check(act)
    return _FORWARD[act]()(x, _bias_or_zero(bias, x, channel_axis))


def _bias_act_backward_cuda(x, bias, grad_y, act="none", *, channel_axis=-1):
    _check(act)
    grad_x = _BACKWARD[act]()(x, _bias_or_zero(bias, x, channel_axis), grad_y)
    return grad_x, None if bias is None else _sum_but(grad_x, channel_axis)


# ---- samples and registration ----------------------------------------------------------------


def _cases(rng, size):
    """(x, bias, channel_axis, label)"""
    if size == "bench":
        yield rng.standard_normal((4096, 1024)), rng.standard_normal(1024), -1, "4096x1024"
        return
    yield rng.standard_normal((6, 17)) * 3, rng.standard_normal(17), -1, "(6, 17)"
    yield rng.standard_normal((2, 4, 5, 3)) * 3, rng.standard_normal(4), 1, "(2, 4, 5, 3) channel_axis=1"
    yield rng.standard_normal((3, 9)), None, -1, "(3, 9) no bias"
    yield rng.standard_normal((200, 700)), rng.standard_normal(700), -1, "(200, 700): several blocks"


def _acts(size):
    return ("relu", "gelu_tanh", "gelu") if size == "bench" else ACTIVATIONS


def _forward_samples(rng, dtype, size):
    for act in _acts(size):
        for x, b, axis, label in _cases(rng, size):
            yield Sample((x.astype(dtype), None if b is None else b.astype(dtype), act), {"channel_axis": axis},
                         f"{act} {label}")


def _backward_samples(rng, dtype, size):
    for act in _acts(size):
        for x, b, axis, label in _cases(rng, size):
            g = rng.standard_normal(x.shape).astype(dtype)
            yield Sample((x.astype(dtype), None if b is None else b.astype(dtype), g, act), {"channel_axis": axis},
                         f"{act} {label}")


bias_act = register(Kernel("bias_act", bias_act_reference, _bias_act_cpu, _bias_act_cuda, _forward_samples))
bias_act_backward = register(Kernel("bias_act_backward", bias_act_backward_reference, _bias_act_backward_cpu,
                                    _bias_act_backward_cuda, _backward_samples,
                                    tolerances={np.float32: (2e-5, 2e-5)}))
