"""Binary arithmetic: add, sub, mul, div, pow, maximum/minimum, atan2, fmod, remainder,
floor_divide, lerp, and their reflected and in-place forms."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, data, operands, sum_to
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt


def _shape(x):
    return x._data.shape if type(x) is Tensor else ()


class Add(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return data(a) + data(b)

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        ga, gb = ctx.needs_input_grad
        return (sum_to(grad, sa) if ga else None), (sum_to(grad, sb) if gb else None)


class Sub(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        return data(a) - data(b)

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        ga, gb = ctx.needs_input_grad
        return (sum_to(grad, sa) if ga else None), (sum_to(-grad, sb) if gb else None)


class Mul(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if type(a) is Tensor else None, b if type(b) is Tensor else None)
        ctx.scalars = (a, b)
        return data(a) * data(b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = ctx.needs_input_grad
        ra = sum_to(grad * (b if b is not None else ctx.scalars[1]), a.shape) if ga else None
        rb = sum_to(grad * (a if a is not None else ctx.scalars[0]), b.shape) if gb else None
        return ra, rb


class Div(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if type(a) is Tensor else None, b if type(b) is Tensor else None)
        ctx.scalars = (a, b)
        return data(a) / data(b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = ctx.needs_input_grad
        bv = b if b is not None else ctx.scalars[1]
        ra = sum_to(grad / bv, a.shape) if ga else None
        rb = None
        if gb:
            av = a if a is not None else ctx.scalars[0]
            rb = sum_to(-grad * av / (b * b), b.shape)
        return ra, rb


class Pow(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if type(a) is Tensor else None, b if type(b) is Tensor else None)
        ctx.scalars = (a, b)
        out = data(a) ** data(b)
        if type(b) is Tensor and ctx is not None:
            pass
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = ctx.needs_input_grad
        av = a if a is not None else ctx.scalars[0]
        bv = b if b is not None else ctx.scalars[1]
        ra = rb = None
        if ga:
            if type(bv) is not Tensor:
                ra = grad * bv * av ** (bv - 1) if bv != 0 else grad * 0
            else:
                ra = grad * bv * av ** (bv - 1)
                ra = ra.masked_fill((bv == 0), 0) if bool((bv == 0).any()) else ra
            ra = sum_to(ra, a.shape)
        if gb:
            out = av ** bv
            # d/db a^b = a^b log a; defined as 0 where a == 0 and b >= 0 (as PyTorch).
            loga = av.log() if type(av) is Tensor else float(np.log(av)) if av > 0 else float("nan")
            rb = grad * out * loga
            if type(av) is Tensor:
                rb = rb.masked_fill((av == 0) & (bv >= 0), 0)
            rb = sum_to(rb, b.shape)
        return ra, rb


class Maximum(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.maximum(a._data, b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _minmax_grads(ctx, grad, a, b, a > b)


class Minimum(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.minimum(a._data, b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _minmax_grads(ctx, grad, a, b, a < b)


def _minmax_grads(ctx, grad, a, b, a_wins):
    # Ties split the gradient evenly, as PyTorch does.
    tie = (a == b)
    wa = a_wins.to(grad.dtype) + tie.to(grad.dtype) * 0.5
    ga, gb = ctx.needs_input_grad
    return (sum_to(grad * wa, a.shape) if ga else None), (sum_to(grad * (1 - wa), b.shape) if gb else None)


class Atan2(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.arctan2(a._data, b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        denom = a * a + b * b
        ga, gb = ctx.needs_input_grad
        return (sum_to(grad * b / denom, a.shape) if ga else None), (sum_to(-grad * a / denom, b.shape) if gb else None)


class Fmod(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if type(a) is Tensor else None, b if type(b) is Tensor else None)
        ctx.scalars = (a, b)
        return np.fmod(data(a), data(b))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = ctx.needs_input_grad
        ra = sum_to(grad, a.shape) if ga else None
        rb = None
        if gb:
            av = a if a is not None else ctx.scalars[0]
            rb = sum_to(-grad * (av / b).trunc(), b.shape)
        return ra, rb


class Remainder(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if type(a) is Tensor else None, b if type(b) is Tensor else None)
        ctx.scalars = (a, b)
        return np.remainder(data(a), data(b))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga, gb = ctx.needs_input_grad
        ra = sum_to(grad, a.shape) if ga else None
        rb = None
        if gb:
            av = a if a is not None else ctx.scalars[0]
            rb = sum_to(-grad * (av / b).floor(), b.shape)
        return ra, rb


class FloorDivide(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        return np.floor_divide(data(a), data(b))

    @staticmethod
    def backward(ctx, grad):
        return None, None


# ---- public functions -------------------------------------------------------------------------


def add(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = other * alpha
    a, b = operands(input, other, "add")
    return _out(Add.apply(a, b), out)


def sub(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = other * alpha
    a, b = operands(input, other, "sub")
    if (type(a) is Tensor and a._data.dtype == np.bool_) and (type(b) is not Tensor or b._data.dtype == np.bool_):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    return _out(Sub.apply(a, b), out)


subtract = sub


def mul(input, other, *, out=None):
    a, b = operands(input, other, "mul")
    return _out(Mul.apply(a, b), out)


multiply = mul


def _float_operands(a, b, op):
    a, b = operands(a, b, op)
    # True division of integers gives the default float dtype, as PyTorch.
    for t in (a, b):
        if type(t) is Tensor:
            kind = t._data.dtype.kind
            if kind in "iub":
                target = _dt.get_default_dtype().np
                a = cast(a, target) if type(a) is Tensor else (float(a) if not isinstance(a, complex) else a)
                b = cast(b, target) if type(b) is Tensor else (float(b) if not isinstance(b, complex) else b)
            break
    return a, b


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        a, b = _float_operands(input, other, "div")
        return _out(Div.apply(a, b), out)
    if rounding_mode == "trunc":
        a, b = operands(input, other, "div")
        if _is_int(a) and _is_int(b):
            q = FloorDivide.apply(a, b)
            r = Fmod.apply(a, b)
            # floor division rounds toward -inf; trunc toward 0: fix where signs differ and r != 0
            return _out(q + ((r != 0) & ((r < 0) != (_as_t(b, a) < 0))).to(q.dtype), out)
        return _out(Div.apply(a, b).trunc(), out)
    if rounding_mode == "floor":
        a, b = operands(input, other, "div")
        if _is_int(a) and _is_int(b):
            return _out(FloorDivide.apply(a, b), out)
        return _out(Div.apply(a, b).floor(), out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def _is_int(x):
    return (x._data.dtype.kind in "iub") if type(x) is Tensor else isinstance(x, int)


def _as_t(x, like):
    return x if type(x) is Tensor else like.new_tensor(x)


divide = div
true_divide = div


def floor_divide(input, other, *, out=None):
    return div(input, other, rounding_mode="floor", out=out)


def pow(input, exponent, *, out=None):
    if type(input) is not Tensor and type(exponent) is not Tensor:
        raise TypeError("pow: expected at least one Tensor")
    a, b = operands(input, exponent, "pow")
    if type(a) is Tensor and a._data.dtype.kind in "iu" and type(b) is Tensor and b._data.dtype.kind in "iu":
        if bool((b < 0).any()):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    if type(a) is Tensor and a._data.dtype.kind in "iu" and isinstance(b, int) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _out(Pow.apply(a, b), out)


def float_power(input, exponent):
    a = input.double() if type(input) is Tensor else input
    b = exponent.double() if type(exponent) is Tensor else exponent
    return pow(a, b)


def maximum(input, other, *, out=None):
    a, b = operands(input, other, "maximum")
    return _out(Maximum.apply(a, b), out)


def minimum(input, other, *, out=None):
    a, b = operands(input, other, "minimum")
    return _out(Minimum.apply(a, b), out)


fmax = maximum
fmin = minimum


def atan2(input, other, *, out=None):
    a, b = _float_operands(input, other, "atan2")
    return _out(Atan2.apply(a, b), out)


arctan2 = atan2


def fmod(input, other, *, out=None):
    a, b = operands(input, other, "fmod")
    return _out(Fmod.apply(a, b), out)


def remainder(input, other, *, out=None):
    a, b = operands(input, other, "remainder")
    return _out(Remainder.apply(a, b), out)


def lerp(input, end, weight, *, out=None):
    return _out(input + weight * (end - input), out)


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


def _out(result, out):
    if out is None:
        return result
    if type(out) is not Tensor:
        raise TypeError(f"out= must be a Tensor, got {type(out).__name__}")
    out.copy_(result) if tuple(out.shape) == tuple(result.shape) else out.set_(result)
    return out


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['add', 'sub', 'subtract', 'mul', 'multiply', 'div', 'divide', 'true_divide', 'floor_divide', 'pow', 'float_power', 'maximum', 'minimum', 'fmax', 'fmin', 'atan2', 'arctan2', 'fmod', 'remainder', 'lerp']
