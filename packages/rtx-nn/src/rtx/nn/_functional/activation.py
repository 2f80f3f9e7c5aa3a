"""Activation functions, as torch.nn.functional: relu ... softmax.

Each pointwise activation is one Primitive: the forward on arrays (one pass, no graph nodes
for the intermediate steps) and the derivative written in Tensor ops of the input x (or the
output y) and the incoming gradient g, so double backward works. Derivatives at the kinks
follow PyTorch (relu'(0) = 0, hardtanh' is 0 at the bounds, leaky_relu'(0) = slope, ...).
softmax, log_softmax, softplus and logsigmoid are rtx-tensor's (rtx.softmax, ...; rtx.extend
publishes softplus and logsigmoid), since the losses below rtx-nn need them: re-exported here.
gelu runs rtx.kernel's fused kernels; its backward uses the fused backward kernel when no graph
of the backward is recorded, and Tensor ops otherwise. Measured forward + backward on 64x768
float32 (CPU, best of several runs), against the same math composed from Tensor ops: gelu(tanh)
700 us vs 1686 us, gelu(exact) 2.6 ms vs 3.4 ms (erf alone is 2.2 ms of it).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from rtx import log_softmax, softmax
from rtx.extend import (
    Primitive,
    Tensor,
    apply_inplace,
    cast,
    grad_mode,
    logsigmoid,
    primitive,
    raw,
    softplus,
    wrap,
    wrap_dim,
)
from rtx.extend import autocast as _autocast
from rtx.runtime import dtypes as _dt
from rtx.runtime.random import generator_for

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_", "elu", "elu_",
           "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "hardswish", "hardsigmoid", "hardtanh",
           "hardtanh_", "softplus", "softsign", "tanh", "sigmoid", "logsigmoid", "softmax", "log_softmax",
           "softmin", "glu", "threshold", "threshold_", "tanhshrink", "softshrink", "hardshrink"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check(input, op):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")


def _float_only(input, op):
    _check(input, op)
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f'"{op}" not implemented for \'{input.dtype.name.capitalize()}\' '
                                  "(it needs a floating point input; cast with .float())")


def _in_place(fn, input, *args, **kwargs):
    """input <- fn(input): written into input's memory, taking over fn's history when recorded."""
    return apply_inplace(input, fn, *args, **kwargs)


def _mask(cond, like):
    return cond.to(like.dtype)


def _sigmoid_array(a):
    # exp of a non-positive number only: no overflow for large |a|
    ez = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + ez), ez / (1 + ez)).astype(a.dtype, copy=False)


def _pointwise(name, forward, derivative, saves="x"):
    """A Primitive for y = forward(a, **attrs) whose gradient is derivative(g, x, y, **attrs)."""

    class Op(Primitive, op="".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")):
        saves_output = saves == "y"

        @staticmethod
        def forward(ctx, a, **attrs):
            if saves == "x":
                ctx.save_for_backward(a)
            ctx.attrs = attrs
            return forward(raw(a), **attrs)

        @staticmethod
        def backward(ctx, grad):
            x = ctx.saved_tensors[0] if saves == "x" else None
            y = ctx.output() if saves == "y" else None
            return derivative(grad, x, y, **ctx.attrs)

    Op.__name__ = Op.__qualname__ = name + "Backward"
    return Op


# ---- the pointwise Primitives ---------------------------------------------------------------------

_Relu = primitive("relu")  # rtx.relu's Primitive: one op "relu" whichever way it is called
_Hardtanh = _pointwise(
    "Hardtanh", lambda a, lo, hi: np.clip(a, lo, hi).astype(a.dtype, copy=False),
    lambda g, x, y, lo, hi: g * _mask((x > lo) & (x < hi), g))
_LeakyRelu = _pointwise(
    "LeakyRelu", lambda a, slope: np.where(a > 0, a, a * slope),
    lambda g, x, y, slope: g * ((1 - slope) * _mask(x > 0, g) + slope))
_Elu = _pointwise(
    "Elu", lambda a, alpha, scale, input_scale: np.where(a > 0, a * scale,
                                                         np.expm1(a * input_scale) * (alpha * scale)),
    lambda g, x, y, alpha, scale, input_scale: _where(x > 0, g * scale,
                                                      g * (x * input_scale).exp() * (alpha * scale * input_scale)))
# tanh(softplus(a)): softplus' threshold (20) needs no special case, tanh is exactly 1 beyond it.
_Mish = _pointwise(
    "Mish", lambda a: a * np.tanh(np.logaddexp(0, a)),
    lambda g, x, y: _mish_grad(g, x))
_Hardswish = _pointwise(
    "Hardswish", lambda a: a * np.clip(a + 3, 0, 6) / 6,
    lambda g, x, y: _where(x <= -3, g * 0, _where(x < 3, g * (x / 3 + 0.5), g)))
_Hardsigmoid = _pointwise(
    "Hardsigmoid", lambda a: np.clip(a + 3, 0, 6) / 6,
    lambda g, x, y: g * _mask((x > -3) & (x < 3), g) / 6)
_Threshold = _pointwise(
    "Threshold", lambda a, threshold, value: np.where(a > threshold, a, a.dtype.type(value)),
    lambda g, x, y, threshold, value: g * _mask(x > threshold, g))
_Softshrink = _pointwise(
    "Softshrink", lambda a, lambd: np.where(a > lambd, a - lambd, np.where(a < -lambd, a + lambd, 0)),
    lambda g, x, y, lambd: g * _mask((x > lambd) | (x < -lambd), g))
_Hardshrink = _pointwise(
    "Hardshrink", lambda a, lambd: np.where((a >= -lambd) & (a <= lambd), 0, a),
    lambda g, x, y, lambd: g * _mask((x > lambd) | (x < -lambd), g))


def _where(cond, a, b):
    from rtx import where
    return where(cond, a, b)


def _silu_grad(g, x):
    s = x.sigmoid()
    return g * s * (1 + x * (1 - s))


def _mish_grad(g, x):
    t = softplus(x).tanh()
    return g * (t + x * x.sigmoid() * (1 - t * t))


# ---- relu family ----------------------------------------------------------------------------------


def relu(input, inplace=False):
    """max(x, 0); its gradient at 0 is 0."""
    _check(input, "relu")
    if inplace:
        return _in_place(_Relu.apply, input)
    return _Relu.apply(input)


def relu_(input):
    return relu(input, inplace=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val); the gradient is 1 strictly between the bounds, else 0."""
    _check(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is _dt.bool_:
        raise NotImplementedError("\"hardtanh\" not implemented for 'Bool'")
    if inplace:
        return _in_place(_Hardtanh.apply, input, lo=min_val, hi=max_val)
    return _Hardtanh.apply(input, lo=min_val, hi=max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6), as hardtanh(x, 0, 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _float_only(input, "leaky_relu")
    if inplace:
        return _in_place(_LeakyRelu.apply, input, slope=negative_slope)
    return _LeakyRelu.apply(input, slope=negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), with one weight per channel (dim 1) or a single one."""
    if _autocast.active:  # on autocast's lower-precision list
        input, weight = _autocast.lower(input, weight)
    _float_only(input, "prelu")
    if type(weight) is not Tensor:
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
        weight = weight.reshape((1, n) + (1,) * (input.ndim - 2))
    elif input.ndim > 0:
        weight = weight.reshape((1,) * input.ndim)
    else:
        weight = weight.reshape(())
    return _where(input > 0, input, weight * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky relu: in training each negative element gets a slope drawn from
    U(lower, upper) (rtx's RNG); in eval the slope is (lower + upper) / 2."""
    _float_only(input, "rrelu")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    xp_gen = generator_for(input.device).np
    noise = xp_gen.random(tuple(input.shape)) * (upper - lower) + lower
    a = raw(input)
    slopes = wrap(np.where(a >= 0, 1, noise).astype(a.dtype, copy=False))
    if inplace:
        return _in_place(lambda t: t * slopes, input)
    return input * slopes


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1)."""
    _float_only(input, "elu")
    attrs = dict(alpha=alpha, scale=1.0, input_scale=1.0)
    if inplace:
        return _in_place(_Elu.apply, input, **attrs)
    return _Elu.apply(input, **attrs)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants."""
    _float_only(input, "selu")
    attrs = dict(alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)
    if inplace:
        return _in_place(_Elu.apply, input, **attrs)
    return _Elu.apply(input, **attrs)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _float_only(input, "celu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    attrs = dict(alpha=alpha, scale=1.0, input_scale=1.0 / alpha)
    if inplace:
        return _in_place(_Elu.apply, input, **attrs)
    return _Elu.apply(input, **attrs)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


# ---- gelu: rtx.kernel's fused kernel forward and backward -----------------------------------------


def _gelu_second(x, approximate):
    """d^2 gelu / dx^2 in Tensor ops (for double backward)."""
    if approximate == "tanh":
        k, c = math.sqrt(2 / math.pi), 0.044715
        u = (x + c * x * x * x) * k
        t = u.tanh()
        du = (1 + 3 * c * x * x) * k
        return (1 - t * t) * (du + 0.5 * x * (6 * k * c * x - 2 * t * du * du))
    pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
    return pdf * (2 - x * x)


# Phi(-|x|) = 0.5 erfc(|x|/sqrt 2) = t exp(P(t) - x^2/2 - ln 2), t = 2 / (2 + |x|/sqrt 2): Numerical
# Recipes' erfcc (Chebyshev fit, fractional error < 1.2e-7 for every argument), highest power first,
# with the 0.5 folded into the constant term.
_ERFC_NR = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
            1.00002368, -1.26551223 - math.log(2))
_PHI_BLOCK = 1 << 15  # elements per pass: the temporaries stay in the L2 cache


def _phi_float32(x):
    """Phi(x) = 0.5 (1 + erf(x / sqrt 2)) for a float32 NumPy array in float32 arithmetic, without
    branches: ~30 cache-resident passes instead of rtx.kernel.erf's float64 ranges, 3-5x faster. x Phi(x)
    has relative error <= 8e-7 for |x| < 3, 2.2e-6 for |x| < 6, 8e-6 further out (where 0.5 (1 + erf) in
    float32 has no digits left); PyTorch's float32 kernel is also a float32 erf."""
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    with np.errstate(over="ignore"):   # x * x of |x| > 1.8e19: inf, and exp(-inf) = 0 as it should
        _phi_blocks(flat, out)
    return out.reshape(x.shape)


def _phi_blocks(flat, out):
    f = np.float32
    for s in range(0, flat.size, _PHI_BLOCK):
        xb, o = flat[s:s + _PHI_BLOCK], out[s:s + _PHI_BLOCK]
        t = np.abs(xb)
        t *= f(_SQRT_HALF)
        t += f(2)
        np.divide(f(2), t, out=t)
        acc = t * f(_ERFC_NR[0])
        for c in _ERFC_NR[1:-1]:
            acc += f(c)
            acc *= t
        acc += f(_ERFC_NR[-1])
        q = xb * xb
        q *= f(-0.5)
        acc += q
        np.exp(acc, out=acc)
        acc *= t                                    # Phi(-|x|)
        np.subtract(f(1), acc, out=o)
        np.copyto(o, acc, where=xb <= 0)


class Gelu(Primitive):
    """The exact form keeps Phi(x) from the forward, so the backward needs no second erf (erf is
    most of the cost on the CPU); the tanh form runs rtx.kernel's fused kernels both ways."""

    @staticmethod
    def forward(ctx, a, *, approximate):
        from rtx import kernel
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        x = raw(a)
        if approximate == "tanh":
            return kernel.gelu(x, approximate)
        if type(x) is np.ndarray and x.dtype == np.float32:
            cdf = _phi_float32(x)
        else:
            cdf = 0.5 * (1 + kernel.erf(x * _SQRT_HALF))
        ctx.cdf = cdf
        return x * cdf

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if not grad_mode.enabled and ctx.approximate == "none":
            xd = raw(x)
            if type(xd) is np.ndarray and raw(grad).dtype == xd.dtype:   # in place: one temporary, same values
                d = xd * xd
                d *= -0.5
                np.exp(d, out=d)
                d *= _INV_SQRT_2PI
                d *= xd
                d += ctx.cdf
                d *= raw(grad)
                return wrap(d)
            return wrap(raw(grad) * (ctx.cdf + xd * (np.exp(-0.5 * xd * xd) * _INV_SQRT_2PI)))
        return GeluBackward.apply(x, grad, approximate=ctx.approximate)


class GeluBackward(Primitive):
    """grad * gelu'(x) through the fused kernel; its own derivative in Tensor ops."""

    op = "gelu_backward"

    @staticmethod
    def forward(ctx, x, g, *, approximate):
        from rtx import kernel
        ctx.save_for_backward(x, g)
        ctx.approximate = approximate
        return kernel.gelu_backward(raw(x), raw(g), approximate)

    @staticmethod
    def backward(ctx, gg):
        x, g = ctx.saved_tensors
        gx = gg * g * _gelu_second(x, ctx.approximate) if ctx.needs_input_grad[0] else None
        gg_ = GeluBackward.apply(x, gg, approximate=ctx.approximate) if ctx.needs_input_grad[1] else None
        return gx, gg_


def gelu(input, approximate="none"):
    """x * Phi(x) (approximate='none', through erf) or PyTorch's tanh approximation."""
    _float_only(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return Gelu.apply(input, approximate=approximate)


# ---- the rest of the pointwise family -------------------------------------------------------------


def _sigmoid_into(a):
    """_sigmoid_array(a) for a NumPy array with two temporaries instead of eight and no masked
    select (np.where/copyto with a mask cost 1 ms of the 1.3 ms for 262k float32, measured):
    the numerator exp(min(a, 0)) is exactly 1 where a >= 0 and exactly exp(-|a|) elsewhere, so
    the values are _sigmoid_array's. SiLU's sigmoid was a tenth of a UNet training step."""
    d = np.abs(a)
    np.negative(d, out=d)
    np.exp(d, out=d)        # ez = exp(-|a|)
    d += 1
    s = np.minimum(a, 0)
    np.exp(s, out=s)
    s /= d                  # 1 / (1 + ez) where a >= 0, ez / (1 + ez) elsewhere
    return s


class _Silu(Primitive, op="silu"):
    """x * sigmoid(x). The forward keeps sigmoid(x), so a first-order backward is NumPy
    arithmetic with no second sigmoid; under create_graph the backward is Tensor ops."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = raw(a)
        if type(x) is np.ndarray and x.dtype.kind == "f":
            s = _sigmoid_into(x)
            ctx.sig = s
            return x * s
        ctx.sig = None
        return x * _sigmoid_array(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s, g = ctx.sig, raw(grad)
        if not grad_mode.enabled and s is not None and type(g) is np.ndarray and g.dtype == s.dtype:
            t = 1 - s
            t *= raw(x)
            t += 1
            out = g * s
            out *= t        # g * s * (1 + x * (1 - s)), multiplied in _silu_grad's order
            return wrap(out)
        return _silu_grad(grad, x)


_Silu.__name__ = _Silu.__qualname__ = "SiluBackward"


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    _float_only(input, "silu")
    if inplace:
        return _in_place(_Silu.apply, input)
    return _Silu.apply(input)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    _float_only(input, "mish")
    if inplace:
        return _in_place(_Mish.apply, input)
    return _Mish.apply(input)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    _float_only(input, "hardswish")
    if inplace:
        return _in_place(_Hardswish.apply, input)
    return _Hardswish.apply(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    _float_only(input, "hardsigmoid")
    if inplace:
        return _in_place(_Hardsigmoid.apply, input)
    return _Hardsigmoid.apply(input)


def softsign(input):
    """x / (1 + |x|)."""
    _check(input, "softsign")
    return input / (input.abs() + 1)


def tanh(input):
    _check(input, "tanh")
    return input.tanh()


def sigmoid(input):
    _check(input, "sigmoid")
    return input.sigmoid()


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    _check(input, "threshold")
    if inplace:
        return _in_place(_Threshold.apply, input, threshold=threshold, value=value)
    return _Threshold.apply(input, threshold=threshold, value=value)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def tanhshrink(input):
    """x - tanh(x)."""
    _check(input, "tanhshrink")
    return input - input.tanh()


def _check_lambd(input, lambd, op):
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, {np.finfo(np.float32).max:g}] for input dtype "
                           f"{input.dtype.name.capitalize()}, but found {lambd} ({op})")


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    _float_only(input, "softshrink")
    _check_lambd(input, lambd, "softshrink")
    return _Softshrink.apply(input, lambd=lambd)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    _float_only(input, "hardshrink")
    return _Hardshrink.apply(input, lambd=lambd)


def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of input along dim."""
    _check(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim, "glu")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.split(n // 2, d)
    return a * b.sigmoid()


# ---- softmin (softmax and log_softmax are rtx-tensor's) ----------------------------------------------


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    _check(input, "softmin")
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = cast(input, _dt.as_dtype(dtype).np)
    return softmax(-input, dim)
