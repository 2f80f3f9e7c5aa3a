"""Binary arithmetic: add, sub, mul, div, pow, maximum/minimum, fmax/fmin, atan2, hypot, fmod,
remainder, floor_divide, xlogy, logaddexp(2), copysign, heaviside, lerp, addcmul/addcdiv and
where, with their reflected and in-place forms.

Gradients of complex inputs follow PyTorch's convention (the conjugate Wirtinger derivative):
for a holomorphic f, grad_in = grad_out * conj(f'(x)); `_conj` is the identity on real values.
"""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops import inplace as _inplace
from rtx._tensor.ops._util import cast, check_same_device, data, operands, sum_to, xp_of
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt
from rtx.runtime.devices import array_module


def _shape(x):
    return x._data.shape if type(x) is Tensor else ()


# PyTorch's ScalarType names, which its error messages use ("Got: Long").
scalar_name = _dt.torch_name


def _conj(x):
    if type(x) is Tensor:
        return x.conj() if x._data.dtype.kind == "c" else x
    return x.conjugate() if isinstance(x, complex) else x


def _save(ctx, a, b):
    """Save the tensor operands; Python scalars are kept as plain values."""
    ctx.save_for_backward(a if type(a) is Tensor else None, b if type(b) is Tensor else None)
    ctx.scalars = (a, b)


def _saved(ctx):
    a, b = ctx.saved_tensors
    return (a if a is not None else ctx.scalars[0]), (b if b is not None else ctx.scalars[1])


def _grads(ctx, ra, rb):
    """Reduce the broadcast gradients back to the operands' shapes (None where not needed)."""
    ga, gb = ctx.needs_input_grad
    sa, sb = ctx.shapes
    return (sum_to(ra(), sa) if ga else None), (sum_to(rb(), sb) if gb else None)


def _scalar_like(x, ref):
    """A Python number as a 0-d tensor of ref's dtype and device (for backward formulas)."""
    if type(x) is Tensor:
        return x
    xp = xp_of(ref)
    return Tensor._make(xp.asarray(x, dtype=ref._data.dtype))


class _Binary(Primitive):
    """Binary ops whose backward needs both operands (tensors or Python scalars)."""

    @classmethod
    def forward(cls, ctx, a, b):
        _save(ctx, a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return cls.fn(*_arrays(a, b))


def _arrays(a, b):
    """Both operands as arrays; a Python number takes the tensor's dtype (operands() has
    already promoted the tensor to the result dtype)."""
    if type(a) is Tensor and type(b) is Tensor:
        return a._data, b._data
    t = a if type(a) is Tensor else b
    s = _number_as(b if t is a else a, t._data)
    return (t._data, s) if t is a else (s, t._data)


def _number_as(x, like):
    """A Python number as a 0-d array of like's dtype. An integer out of the dtype's range
    wraps around as in PyTorch (uint8 tensor * -1), where NumPy would raise."""
    s = array_module(like).asarray(x)
    return s if s.dtype == like.dtype else s.astype(like.dtype)


class Add(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        x, y = _arrays(a, b)
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return _grads(ctx, lambda: grad, lambda: grad)


class Sub(Primitive):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (_shape(a), _shape(b))
        x, y = _arrays(a, b)
        return x - y

    @staticmethod
    def backward(ctx, grad):
        return _grads(ctx, lambda: grad, lambda: -grad)


class Mul(_Binary):
    fn = staticmethod(np.multiply)

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        return _grads(ctx, lambda: grad * _conj(b), lambda: grad * _conj(a))


class Div(_Binary):
    fn = staticmethod(np.true_divide)

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        return _grads(ctx, lambda: grad / _conj(b), lambda: -grad * _conj(a / (b * b)))


class Pow(_Binary):
    fn = staticmethod(np.power)
    saves_output = True

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)

        def wrt_base():
            if type(b) is not Tensor:
                return grad * 0 if b == 0 else grad * _conj(b * a ** (b - 1))
            # b * a**(b-1) is exact everywhere but at a == b == 0, where it is 0 * inf: there
            # the derivative (of a**0 == 1) is 0. Replacing a by 1 there keeps double backward finite.
            base = _scalar_like(a, grad)
            safe = where((b == 0) & (base == 0), 1, base)
            return grad * _conj(b * safe ** (b - 1))

        def wrt_exponent():
            # d/db a**b = a**b * log(a); 0 where a == 0 and b >= 0, as PyTorch (log(1) == 0 there).
            base = _scalar_like(a, grad)
            safe = where((base == 0) & ((b.real if b.is_complex() else b) >= 0), 1, base)
            return grad * _conj(ctx.output() * safe.log())

        return _grads(ctx, wrt_base, wrt_exponent)


class _MinMax(_Binary):
    """maximum/minimum propagate NaN and split the gradient evenly at ties (as PyTorch);
    fmax/fmin ignore NaN and give a tie to the first operand."""

    @classmethod
    def backward(cls, ctx, grad):
        a, b = _saved(ctx)
        ad, bd = data(a), data(b)
        xp = xp_of(grad)
        wa = xp.asarray(cls.first_wins(ad, bd), dtype=grad._data.dtype)
        if cls.split_ties:
            wa = wa + xp.asarray(ad == bd, dtype=wa.dtype) * 0.5
        wa = Tensor._make(wa)
        return _grads(ctx, lambda: grad * wa, lambda: grad * (1 - wa))


class Maximum(_MinMax):
    fn = staticmethod(np.maximum)
    split_ties = True
    first_wins = staticmethod(lambda a, b: (a > b) | np.isnan(a))


class Minimum(_MinMax):
    fn = staticmethod(np.minimum)
    split_ties = True
    first_wins = staticmethod(lambda a, b: (a < b) | np.isnan(a))


class Fmax(_MinMax):
    fn = staticmethod(np.fmax)
    split_ties = False
    first_wins = staticmethod(lambda a, b: (a >= b) | np.isnan(b))


class Fmin(_MinMax):
    fn = staticmethod(np.fmin)
    split_ties = False
    first_wins = staticmethod(lambda a, b: (a <= b) | np.isnan(b))


class Atan2(_Binary):
    fn = staticmethod(np.arctan2)

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        denom = a * a + b * b
        return _grads(ctx, lambda: grad * b / denom, lambda: -grad * a / denom)


class Hypot(_Binary):
    fn = staticmethod(np.hypot)
    saves_output = True

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        out = ctx.output()
        return _grads(ctx, lambda: grad * a / out, lambda: grad * b / out)


class Fmod(_Binary):
    fn = staticmethod(np.fmod)

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        return _grads(ctx, lambda: grad, lambda: -grad * (a / b).trunc())


class Remainder(_Binary):
    fn = staticmethod(np.remainder)

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        return _grads(ctx, lambda: grad, lambda: -grad * (a / b).floor())


class DivRounded(Primitive):
    """div with rounding_mode 'floor' or 'trunc': piecewise constant, so the gradient is 0."""

    @staticmethod
    def forward(ctx, a, b, *, mode):
        ctx.shapes = (_shape(a), _shape(b))
        x, y = _arrays(a, b)
        if mode == "floor":
            # np.floor_divide rounds like Python's // (and PyTorch) for floats too, where
            # floor(x / y) can be off by one: 1 // 0.1 == 9.
            return np.floor_divide(x, y)
        if _dt.is_float(x.dtype):
            return np.trunc(np.true_divide(x, y))
        q = np.floor_divide(x, y)
        # floor and trunc differ by one where the signs differ and the division is inexact
        return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0))).astype(q.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _grads(ctx, lambda: grad * 0, lambda: grad * 0)


class Xlogy(_Binary):
    @staticmethod
    def fn(x, y):
        # 0 where x == 0 (even for y == 0), NaN where y is NaN, as PyTorch.
        out = x * np.log(y)
        return np.where((x == 0) & ~np.isnan(y), out.dtype.type(0), out)

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        x = _scalar_like(a, grad)
        return _grads(ctx, lambda: grad * xlogy((x != 0).to(grad.dtype), b), lambda: grad * x / b)


class LogAddExp(_Binary):
    op = "logaddexp"
    fn = staticmethod(np.logaddexp)
    saves_output = True

    @staticmethod
    def backward(ctx, grad):
        # d/da log(e^a + e^b) = e^(a - out): a softmax weight, never overflows.
        a, b = _saved(ctx)
        out = ctx.output()
        return _grads(ctx, lambda: grad * (a - out).exp(), lambda: grad * (b - out).exp())


class LogAddExp2(_Binary):
    op = "logaddexp2"
    fn = staticmethod(np.logaddexp2)
    saves_output = True

    @staticmethod
    def backward(ctx, grad):
        a, b = _saved(ctx)
        out = ctx.output()
        return _grads(ctx, lambda: grad * (a - out).exp2(), lambda: grad * (b - out).exp2())


class Copysign(_Binary):
    fn = staticmethod(np.copysign)
    saves_output = True

    @staticmethod
    def backward(ctx, grad):
        # d/da copysign(a, b) = sign(out) * sign(a) (0 at a == 0, as PyTorch); b gets 0.
        a, b = _saved(ctx)
        out = ctx.output()
        return _grads(ctx, lambda: grad * (out.sign() * a.sign()), lambda: grad * 0)


class Heaviside(_Binary):
    @staticmethod
    def fn(x, v):
        return np.where(x == 0, v, (x > 0).astype(x.dtype))

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the derivative for 'heaviside' is not implemented.")


class Where(Primitive):
    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.cond = cond
        ctx.shapes = (_shape(a), _shape(b))
        x, y = _arrays(a, b)
        return xp_of(cond).where(cond._data, x, y)

    @staticmethod
    def backward(ctx, grad):
        ga, gb = ctx.needs_input_grad[1:]
        sa, sb = ctx.shapes
        c = ctx.cond
        return (None, sum_to(where(c, grad, 0), sa) if ga else None,
                sum_to(where(c, 0, grad), sb) if gb else None)


# ---- public functions -------------------------------------------------------------------------


def add(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = other * alpha
    a, b = operands(input, other, "add")
    return _out(Add.apply(a, b), out)


def sub(input, other, *, alpha=1, out=None):
    bools = [type(x) is Tensor and x._data.dtype == np.bool_ for x in (input, other)]
    if all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    if alpha != 1:
        other = other * alpha
    a, b = operands(input, other, "sub")
    return _out(Sub.apply(a, b), out)


subtract = sub


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


def mul(input, other, *, out=None):
    a, b = operands(input, other, "mul")
    return _out(Mul.apply(a, b), out)


multiply = mul


def _float_operands(a, b, op):
    """Promoted operands of an op whose result is floating: integers and bools become the
    default float dtype (as PyTorch's true division, atan2, hypot, xlogy, ...)."""
    a, b = operands(a, b, op)
    t = a if type(a) is Tensor else b
    if t._data.dtype.kind in "iub":
        target = _dt.get_default_dtype().np
        a = cast(a, target) if type(a) is Tensor else a
        b = cast(b, target) if type(b) is Tensor else b
    return a, b


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        a, b = _float_operands(input, other, "div")
        return _out(Div.apply(a, b), out)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    a, b = operands(input, other, "div")
    if _is_int(a) and _is_int(b) and bool((data(b) == 0).any() if type(b) is Tensor else b == 0):
        raise RuntimeError("ZeroDivisionError")
    return _out(DivRounded.apply(a, b, mode=rounding_mode), out)


def _is_int(x):
    return (x._data.dtype.kind in "iub") if type(x) is Tensor else isinstance(x, int)


divide = div
true_divide = div


def floor_divide(input, other, *, out=None):
    return div(input, other, rounding_mode="floor", out=out)


def pow(input, exponent, *, out=None):
    if type(input) is not Tensor and type(exponent) is not Tensor:
        raise TypeError("pow: expected at least one Tensor")
    a, b = operands(input, exponent, "pow")
    if _is_int(a) and _is_int(b):
        bd = data(b)
        if (bd < 0).any() if type(b) is Tensor else bd < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _out(Pow.apply(a, b), out)


def float_power(input, exponent, *, out=None):
    """pow in double precision: float64, or complex128 if either operand is complex."""
    cplx = any((type(x) is Tensor and x.is_complex()) or isinstance(x, complex) for x in (input, exponent))
    target = np.complex128 if cplx else np.float64
    a = cast(input, target) if type(input) is Tensor else input
    b = cast(exponent, target) if type(exponent) is Tensor else exponent
    return pow(a, b, out=out)


def _binary_op(cls, name, floating=False):
    def op(input, other, *, out=None):
        a, b = (_float_operands if floating else operands)(input, other, name)
        return _out(cls.apply(a, b), out)
    op.__name__ = name
    return op


# Also accept a Python number for `other` (PyTorch wants a Tensor there).
maximum = _binary_op(Maximum, "maximum")
minimum = _binary_op(Minimum, "minimum")
fmax = _binary_op(Fmax, "fmax")
fmin = _binary_op(Fmin, "fmin")
atan2 = _binary_op(Atan2, "atan2", floating=True)
arctan2 = atan2
hypot = _binary_op(Hypot, "hypot", floating=True)
fmod = _binary_op(Fmod, "fmod")
logaddexp = _binary_op(LogAddExp, "logaddexp", floating=True)
logaddexp2 = _binary_op(LogAddExp2, "logaddexp2", floating=True)
copysign = _binary_op(Copysign, "copysign", floating=True)
maximum.__doc__ = "Elementwise maximum; NaN propagates; ties split the gradient evenly."
minimum.__doc__ = "Elementwise minimum; NaN propagates; ties split the gradient evenly."
fmax.__doc__ = "Elementwise maximum that ignores NaN (NaN only where both are NaN)."
fmin.__doc__ = "Elementwise minimum that ignores NaN (NaN only where both are NaN)."


def remainder(input, other, *, out=None):
    """Python's modulus: the result has the sign of the divisor."""
    a, b = operands(input, other, "remainder")
    if _is_int(a) and _is_int(b) and bool((data(b) == 0).any() if type(b) is Tensor else b == 0):
        raise RuntimeError("ZeroDivisionError")
    return _out(Remainder.apply(a, b), out)


def xlogy(input, other, *, out=None):
    """input * log(other), 0 where input == 0 (unless other is NaN)."""
    a, b = _float_operands(input, other, "xlogy")
    return _out(Xlogy.apply(a, b), out)


def heaviside(input, values, *, out=None):
    """0 where input < 0, 1 where input > 0, `values` where input == 0 (not differentiable)."""
    if type(input) is not Tensor or type(values) is not Tensor:
        raise TypeError("heaviside(): expected input and values to be Tensors")
    if input._data.dtype != values._data.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes "
                           f"(input {input.dtype}, values {values.dtype})")
    if input.is_complex():
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    check_same_device(input, values, "heaviside")
    return _out(Heaviside.apply(input, values), out)


def where(condition, input=None, other=None):
    """input where condition else other (broadcast); either may be a Python number.
    where(condition) alone is nonzero(condition, as_tuple=True)."""
    if type(condition) is not Tensor:
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if input is None and other is None:
        xp = xp_of(condition)
        return tuple(Tensor._make(i.astype(np.int64, copy=False)) for i in xp.nonzero(condition._data))
    if input is None or other is None:
        raise TypeError("where() takes a condition and two values (or only a condition)")
    if condition._data.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{scalar_name(condition.dtype)}")
    if type(input) is not Tensor and type(other) is not Tensor:
        # Two numbers: PyTorch's result type for two wrapped scalars, on the condition's device.
        dt = _dt.result_type_of((), (), (input, other))
        input = _scalar_like(input, Tensor._make(xp_of(condition).zeros((), dt.np)))
    a, b = operands(input, other, "where")
    for t in (a, b):
        if type(t) is Tensor:
            check_same_device(condition, t, "where")
    return Where.apply(condition, a, b)


def lerp(input, end, weight, *, out=None):
    return _out(input + weight * (end - input), out)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2."""
    return _out(input + value * (tensor1 * tensor2) if value != 1 else input + tensor1 * tensor2, out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2 (integer tensor1 and tensor2 are refused, as PyTorch)."""
    if _is_int(tensor1) and _is_int(tensor2):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                           "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                           "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                           "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    return _out(input + value * (tensor1 / tensor2) if value != 1 else input + tensor1 / tensor2, out)


def _out(result, out):
    if out is None:
        return result
    if type(out) is not Tensor:
        raise TypeError(f"out= must be a Tensor, got {type(out).__name__}")
    out.copy_(result) if tuple(out.shape) == tuple(result.shape) else out.set_(result)
    return out


def _where_method(self, condition, other):
    return where(condition, self, other)


def _inplace3(fn):
    def method(self, tensor1, tensor2, *, value=1):
        src = _inplace._old_self(self) if _inplace._recording(self) or any(
            type(t) is Tensor and t.requires_grad for t in (tensor1, tensor2)) else self
        return _inplace.write_result(self, fn(src, tensor1, tensor2, value=value))
    method.__name__ = fn.__name__ + "_"
    return method


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['add', 'sub', 'subtract', 'mul', 'multiply', 'div', 'divide', 'true_divide', 'floor_divide', 'pow',
           'float_power', 'maximum', 'minimum', 'fmax', 'fmin', 'atan2', 'arctan2', 'hypot', 'fmod', 'remainder',
           'lerp', 'xlogy', 'logaddexp', 'logaddexp2', 'copysign', 'heaviside', 'addcmul', 'addcdiv']
# Attributes set on Tensor as they are (methods whose signature differs from the function's).
TENSOR_ATTRS = {
    "where": _where_method,
    "xlogy_": _inplace.inplace_binary(xlogy),
    "hypot_": _inplace.inplace_binary(hypot),
    "copysign_": _inplace.inplace_binary(copysign),
    "heaviside_": _inplace.inplace_binary(heaviside),
    "addcmul_": _inplace3(addcmul),
    "addcdiv_": _inplace3(addcdiv),
}
