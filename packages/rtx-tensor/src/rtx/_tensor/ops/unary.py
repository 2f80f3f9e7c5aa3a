"""Elementwise unary math. Each op is one row: the forward on arrays and the derivative
written in Tensor ops of the input x, the output y and the incoming gradient g (so double
backward works). Integer inputs are promoted to the default float dtype first, as PyTorch."""
from __future__ import annotations

import math

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt


def _kernel(name):
    # Special functions come from rtx-kernel (no SciPy dependency); imported on first use.
    def call(a):
        from rtx import kernel
        return getattr(kernel, name)(a)
    return call


def _sigmoid(a):
    # exp of a non-positive number only: no overflow for large |a|
    ez = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + ez), ez / (1 + ez)).astype(a.dtype, copy=False)


# name: (forward on arrays, d/dx as g, x, y -> Tensor, promotes ints to float)
UNARY = {
    "neg": (np.negative, lambda g, x, y: -g, False),
    "exp": (np.exp, lambda g, x, y: g * y, True),
    "exp2": (np.exp2, lambda g, x, y: g * y * math.log(2.0), True),
    "expm1": (np.expm1, lambda g, x, y: g * (y + 1), True),
    "log": (np.log, lambda g, x, y: g / x, True),
    "log2": (np.log2, lambda g, x, y: g / (x * math.log(2.0)), True),
    "log10": (np.log10, lambda g, x, y: g / (x * math.log(10.0)), True),
    "log1p": (np.log1p, lambda g, x, y: g / (x + 1), True),
    "sqrt": (np.sqrt, lambda g, x, y: g / (2 * y), True),
    "rsqrt": (lambda a: 1 / np.sqrt(a), lambda g, x, y: -0.5 * g * y * y * y, True),
    "sin": (np.sin, lambda g, x, y: g * x.cos(), True),
    "cos": (np.cos, lambda g, x, y: -g * x.sin(), True),
    "tan": (np.tan, lambda g, x, y: g * (1 + y * y), True),
    "asin": (np.arcsin, lambda g, x, y: g * (1 - x * x).rsqrt(), True),
    "acos": (np.arccos, lambda g, x, y: -g * (1 - x * x).rsqrt(), True),
    "atan": (np.arctan, lambda g, x, y: g / (1 + x * x), True),
    "sinh": (np.sinh, lambda g, x, y: g * x.cosh(), True),
    "cosh": (np.cosh, lambda g, x, y: g * x.sinh(), True),
    "tanh": (np.tanh, lambda g, x, y: g * (1 - y * y), True),
    "asinh": (np.arcsinh, lambda g, x, y: g * (x * x + 1).rsqrt(), True),
    "acosh": (np.arccosh, lambda g, x, y: g * (x * x - 1).rsqrt(), True),
    "atanh": (np.arctanh, lambda g, x, y: g / (1 - x * x), True),
    "sigmoid": (_sigmoid, lambda g, x, y: g * y * (1 - y), True),
    "reciprocal": (lambda a: 1 / a, lambda g, x, y: -g * y * y, True),
    "square": (np.square, lambda g, x, y: 2 * g * x, False),
    "abs": (np.abs, lambda g, x, y: g * x.sgn(), False),
    "sign": (np.sign, lambda g, x, y: g * 0, False),
    "sgn": (lambda a: np.sign(a) if a.dtype.kind != "c" else a / np.where(a == 0, 1, np.abs(a)),
            lambda g, x, y: g * 0, False),
    "floor": (np.floor, lambda g, x, y: g * 0, False),
    "ceil": (np.ceil, lambda g, x, y: g * 0, False),
    "trunc": (np.trunc, lambda g, x, y: g * 0, False),
    "frac": (lambda a: a - np.trunc(a), lambda g, x, y: g, False),
    "erf": (_kernel("erf"), lambda g, x, y: g * (2 / math.sqrt(math.pi)) * (-x * x).exp(), True),
    "erfc": (_kernel("erfc"), lambda g, x, y: -g * (2 / math.sqrt(math.pi)) * (-x * x).exp(), True),
    "lgamma": (_kernel("lgamma"), lambda g, x, y: g * x.digamma(), True),
    "digamma": (_kernel("digamma"), None, True),
    "relu": (lambda a: np.maximum(a, 0), lambda g, x, y: g * (y > 0).to(g.dtype), False),
}

OPS = {}


def _make(name, fwd, deriv, promote):
    saves_y = deriv is not None and _uses(deriv, "y")
    saves_x = deriv is not None and _uses(deriv, "x")

    class Op(Primitive):
        saves_output = saves_y

        @staticmethod
        def forward(ctx, a):
            if saves_x:
                ctx.save_for_backward(a)
            return fwd(a._data)

        @staticmethod
        def backward(ctx, grad):
            if deriv is None:
                raise RuntimeError(f"the derivative of {name} is not implemented")
            x = ctx.saved_tensors[0] if saves_x else None
            y = ctx.output() if saves_y else None
            return deriv(grad, x, y)

    Op.__name__ = Op.__qualname__ = name.capitalize() + "Backward"

    def op(input, *, out=None):
        if type(input) is not Tensor:
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        if promote and input._data.dtype.kind in "iub":
            input = cast(input, _dt.get_default_dtype().np)
        result = Op.apply(input)
        if out is not None:
            out.copy_(result)
            return out
        return result

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}, as torch.{name}."
    return op


def _uses(fn, var):
    # Which of x / y the derivative reads, so forward saves only what backward needs.
    import dis
    return any(ins.opname in ("LOAD_FAST", "LOAD_DEREF") and ins.argval == var
               for ins in dis.get_instructions(fn))


for _name, (_fwd, _deriv, _promote) in UNARY.items():
    OPS[_name] = _make(_name, _fwd, _deriv, _promote)

globals().update(OPS)
negative = OPS["neg"]
absolute = OPS["abs"]
arcsin, arccos, arctan = OPS["asin"], OPS["acos"], OPS["atan"]
arcsinh, arccosh, arctanh = OPS["asinh"], OPS["acosh"], OPS["atanh"]
fix = OPS["trunc"]


def round(input, *, decimals=0):
    if decimals == 0:
        return _round0(input)
    scale = 10.0 ** decimals
    return _round0(input * scale) / scale


_round0 = _make("round", np.round, lambda g, x, y: g * 0, False)


def clamp(input, min=None, max=None, *, out=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    from rtx._tensor.ops.arith import maximum, minimum
    result = input
    if min is not None:
        result = maximum(result, min) if type(min) is Tensor else _clamp_scalar(result, min, None)
    if max is not None:
        result = minimum(result, max) if type(max) is Tensor else _clamp_scalar(result, None, max)
    if out is not None:
        out.copy_(result)
        return out
    return result


class Clamp(Primitive):
    @staticmethod
    def forward(ctx, a, *, lo, hi):
        ctx.save_for_backward(a)
        ctx.lo, ctx.hi = lo, hi
        return np.clip(a._data, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        mask = None
        if ctx.lo is not None:
            mask = a >= ctx.lo
        if ctx.hi is not None:
            m = a <= ctx.hi
            mask = m if mask is None else mask & m
        return grad * mask.to(grad.dtype)


def _clamp_scalar(t, lo, hi):
    if t._data.dtype.kind in "iub" and (isinstance(lo, float) or isinstance(hi, float)):
        t = cast(t, _dt.get_default_dtype().np)
    return Clamp.apply(t, lo=lo, hi=hi)


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


METHODS = list(OPS) + ["negative", "absolute", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "fix",
                       "round", "clamp", "clip", "clamp_min", "clamp_max"]
