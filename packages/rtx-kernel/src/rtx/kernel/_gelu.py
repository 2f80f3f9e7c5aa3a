"""GELU, exact (x * Phi(x), through erf) or with PyTorch's tanh approximation, and its backward.

CPU: the tanh form is computed in the output buffer in place, a block at a time; the exact form
is the reference (erf, itself computed in blocks, dominates its cost: a fused rewrite measured
no faster; see the README's bench).
CUDA: one ElementwiseKernel per form (libdevice erf/tanh).
"""
from __future__ import annotations

import math

import numpy as np

from rtx.kernel._blocks import row_blocks
from rtx.kernel._cuda import elementwise
from rtx.kernel._registry import Kernel, Sample, register
from rtx.kernel._special import erf
from rtx.runtime import array_module

_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_C = 0.044715


def _check(approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


# ---- references ----------------------------------------------------------------------------


def gelu_reference(x, approximate="none"):
    """x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)); with approximate='tanh',
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    _check(approximate)
    if approximate == "tanh":
        return 0.5 * x * (1 + array_module(x).tanh(_SQRT_2_OVER_PI * (x + _C * x * x * x)))
    return 0.5 * x * (1 + erf(x * _SQRT_HALF))


def gelu_backward_reference(x, grad_y, approximate="none"):
    """grad_y * d gelu / dx: Phi(x) + x phi(x), or the derivative of the tanh form."""
    _check(approximate)
    xp = array_module(x)
    if approximate == "tanh":
        t = xp.tanh(_SQRT_2_OVER_PI * (x + _C * x * x * x))
        return grad_y * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * _C * x * x))
    cdf = 0.5 * (1 + erf(x * _SQRT_HALF))
    pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return grad_y * (cdf + x * pdf)


# ---- CPU -------------------------------------------------------------------------------------


def _gelu_tanh_into(y, x):
    np.multiply(x, x, out=y)
    y *= _C
    y += 1
    y *= x
    y *= _SQRT_2_OVER_PI
    np.tanh(y, out=y)
    y += 1
    y *= x
    y *= 0.5


def _gelu_tanh_backward_into(dx, x, g):
    t = np.multiply(x, x)
    np.multiply(t, 3 * _C, out=dx)      # dx becomes 0.5 x sqrt(2/pi) (1 + 3c x^2) (1 - t^2) ...
    dx += 1
    dx *= x
    dx *= 0.5 * _SQRT_2_OVER_PI
    t *= _C                             # ... with t = tanh(sqrt(2/pi) (x + c x^3))
    t += 1
    t *= x
    t *= _SQRT_2_OVER_PI
    np.tanh(t, out=t)
    one_minus_t2 = np.multiply(t, t)
    np.subtract(1, one_minus_t2, out=one_minus_t2)
    dx *= one_minus_t2
    t += 1
    t *= 0.5
    dx += t                             # ... plus 0.5 (1 + t), times g
    dx *= g


def _elementwise_cpu(into, *arrays):
    """Apply into(out_block, *array_blocks) over matching flat blocks of same-shaped arrays."""
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    out = np.empty_like(flat[0])
    for b in row_blocks(out.size, 1):
        into(out[b], *(f[b] for f in flat))
    return out.reshape(arrays[0].shape)


def _gelu_cpu(x, approximate="none"):
    if approximate != "tanh":
        return gelu_reference(x, approximate)
    return _elementwise_cpu(_gelu_tanh_into, x)


def _gelu_backward_cpu(x, grad_y, approximate="none"):
    if approximate != "tanh" or grad_y.shape != x.shape:
        return gelu_backward_reference(x, grad_y, approximate)
    return _elementwise_cpu(_gelu_tanh_backward_into, x, grad_y)


# ---- CUDA ------------------------------------------------------------------------------------

# Device expressions in z, shared with bias_act.
CUDA_FORWARD = {
    "none": f"T(0.5) * z * (T(1) + erf(z * T({_SQRT_HALF!r})))",
    "tanh": f"T(0.5) * z * (T(1) + tanh(T({_SQRT_2_OVER_PI!r}) * (z + T({_C!r}) * z * z * z)))",
}
CUDA_DERIVATIVE = {
    "none": (f"(T(0.5) * (T(1) + erf(z * T({_SQRT_HALF!r}))) "
             f"+ z * exp(T(-0.5) * z * z) * T({_INV_SQRT_2PI!r}))"),
    "tanh": ("rtx_gelu_tanh_derivative(z)"),
}
CUDA_PREAMBLE = f"""
template <typename T> __device__ T rtx_gelu_tanh_derivative(T z) {{
    const T t = tanh(T({_SQRT_2_OVER_PI!r}) * (z + T({_C!r}) * z * z * z));
    return T(0.5) * (T(1) + t)
        + T(0.5) * z * (T(1) - t * t) * T({_SQRT_2_OVER_PI!r}) * (T(1) + T({3 * _C!r}) * z * z);
}}
"""

_FORWARD = {a: elementwise(f"rtx_gelu_{a}", "T z", "T y", f"y = {e}") for a, e in CUDA_FORWARD.items()}
_BACKWARD = {a: elementwise(f"rtx_gelu_{a}_backward", "T z, T g", "T dz", f"dz = g * {e}", CUDA_PREAMBLE)
             for a, e in CUDA_DERIVATIVE.items()}


def _gelu_cuda(x, approximate="none"):
    _check(approximate)
    return _FORWARD[approximate]()(x)


def _gelu_backward_cuda(x, grad_y, approximate="none"):
    _check(approximate)
    return _BACKWARD[approximate]()(x, grad_y)


# ---- samples and registration ----------------------------------------------------------------


def _inputs(rng, size):
    if size == "bench":
        yield rng.standard_normal((4096, 1024)) * 2, "4096x1024"
        return
    yield rng.standard_normal(1000) * 3, "(1000,)"
    yield rng.standard_normal((7, 13)), "(7, 13)"
    yield np.array([0.0, -0.0, 1e-8, -1e-8, 5.0, -5.0, 10.0, -10.0, 50.0, -50.0, np.nan]), "edges"


def _forward_samples(rng, dtype, size):
    for approximate in ("none", "tanh"):
        for x, label in _inputs(rng, size):
            yield Sample((x.astype(dtype),), {"approximate": approximate}, f"{approximate} {label}")


def _backward_samples(rng, dtype, size):
    for approximate in ("none", "tanh"):
        for x, label in _inputs(rng, size):
            g = rng.standard_normal(x.shape)
            yield Sample((x.astype(dtype), g.astype(dtype)), {"approximate": approximate}, f"{approximate} {label}")


gelu = register(Kernel("gelu", gelu_reference, _gelu_cpu, _gelu_cuda, _forward_samples))
gelu_backward = register(Kernel("gelu_backward", gelu_backward_reference, _gelu_backward_cpu, _gelu_backward_cuda,
                                _backward_samples))
