"""Elementwise ops: arithmetic, comparisons, logic, bit ops, activations, Cast."""
from __future__ import annotations

import math

import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.onnx._ops import arr, cast_array, const, is_grad_float, np_dtype, op

_NP_ERR = {"divide": "ignore", "invalid": "ignore", "over": "ignore"}


def _both_float(a, b):
    return is_grad_float(a) and is_grad_float(b) and arr(a).dtype == arr(b).dtype


def _np_binary(fn, a, b, dtype=None):
    x, y = arr(a), arr(b)
    with np.errstate(**_NP_ERR):
        out = fn(x, y)
    out = np.asarray(out)
    if dtype is not None and out.dtype != dtype:
        out = out.astype(dtype)
    return const(out)


def _int_div(x, y):
    if x.dtype.kind in "iu":
        y0 = np.where(y == 0, 1, y)
        q = np.floor_divide(x, y0)
        r = np.remainder(x, y0)
        if x.dtype.kind == "i":
            q = q + ((r != 0) & ((x < 0) ^ (y0 < 0))).astype(q.dtype)
        return q
    return np.divide(x, y)


def _arith(name, rtx_fn, np_fn):
    @op(name)
    def fn(inputs, attrs, opset):
        a, b = inputs
        if _both_float(a, b):
            return rtx_fn(a, b)
        return _np_binary(np_fn, a, b, arr(a).dtype)
    fn.__name__ = name
    return fn


_arith("Add", rtx.add, np.add)
_arith("Sub", rtx.sub, np.subtract)
_arith("Mul", rtx.mul, np.multiply)
_arith("Div", rtx.div, _int_div)


@op("Pow")
def pow_(inputs, attrs, opset):
    a, b = inputs
    if is_grad_float(a):
        if is_grad_float(b) and arr(b).dtype == arr(a).dtype:
            return rtx.pow(a, b)
        return rtx.pow(a, const(arr(b).astype(arr(a).dtype)))
    x, y = arr(a), arr(b)
    with np.errstate(**_NP_ERR):
        if y.dtype.kind in "iu" and x.dtype.kind in "iu":
            out = np.power(x.astype(np.int64), np.maximum(y.astype(np.int64), 0))
        else:
            out = np.power(x.astype(np.float64), y.astype(np.float64))
    return const(np.asarray(out).astype(x.dtype))


@op("Mod")
def mod(inputs, attrs, opset):
    a, b = inputs
    if attrs.get("fmod", 0):
        if _both_float(a, b):
            return rtx.fmod(a, b)
        return _np_binary(np.fmod, a, b, arr(a).dtype)
    if _both_float(a, b):
        return rtx.remainder(a, b)
    return _np_binary(lambda x, y: np.mod(x, np.where(y == 0, 1, y)) if x.dtype.kind in "iu" else np.mod(x, y),
                      a, b, arr(a).dtype)


def _variadic(name, rtx_fn, np_fn, mean=False):
    @op(name)
    def fn(inputs, attrs, opset):
        inputs = [x for x in inputs if x is not None]
        if all(is_grad_float(x) for x in inputs) and len({arr(x).dtype for x in inputs}) == 1:
            out = inputs[0]
            for x in inputs[1:]:
                out = rtx_fn(out, x)
            return out / len(inputs) if mean else out
        out = arr(inputs[0])
        for x in inputs[1:]:
            out = np_fn(out, arr(x))
        if mean:
            out = out / len(inputs)
        return const(np.asarray(out).astype(arr(inputs[0]).dtype))
    return fn


_variadic("Sum", rtx.add, np.add)
_variadic("Mean", rtx.add, np.add, mean=True)
_variadic("Max", rtx.maximum, np.maximum)
_variadic("Min", rtx.minimum, np.minimum)


# ---- comparisons and logic (results carry no gradient) ------------------------------------------
def _compare(name, np_fn):
    @op(name)
    def fn(inputs, attrs, opset):
        return _np_binary(np_fn, inputs[0], inputs[1])
    return fn


_compare("Equal", np.equal)
_compare("Less", np.less)
_compare("Greater", np.greater)
_compare("LessOrEqual", np.less_equal)
_compare("GreaterOrEqual", np.greater_equal)
_compare("And", np.logical_and)
_compare("Or", np.logical_or)
_compare("Xor", np.logical_xor)
_compare("BitwiseAnd", np.bitwise_and)
_compare("BitwiseOr", np.bitwise_or)
_compare("BitwiseXor", np.bitwise_xor)


@op("Not")
def not_(inputs, attrs, opset):
    return const(np.logical_not(arr(inputs[0])))


@op("BitwiseNot")
def bitwise_not(inputs, attrs, opset):
    return const(np.invert(arr(inputs[0])))


@op("BitShift")
def bitshift(inputs, attrs, opset):
    x, s = np.broadcast_arrays(arr(inputs[0]), arr(inputs[1]))
    bits = x.dtype.itemsize * 8
    s64 = s.astype(np.int64)
    ok = (s64 >= 0) & (s64 < bits)
    u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    sh = np.where(ok, s64, 0).astype(u.dtype)
    if attrs["direction"] == "LEFT":
        out = np.where(ok, np.left_shift(u, sh), 0).astype(u.dtype).view(x.dtype)
    else:
        fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
        out = np.where(ok, np.right_shift(x, sh.astype(x.dtype)), fill).astype(x.dtype)
    return const(out)


@op("IsNaN")
def isnan(inputs, attrs, opset):
    return const(np.isnan(_float_view(arr(inputs[0]))))


@op("IsInf")
def isinf(inputs, attrs, opset):
    x = _float_view(arr(inputs[0]))
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    return const(np.isinf(x) & (((x > 0) & bool(pos)) | ((x < 0) & bool(neg))))


def _float_view(a):
    return a.astype(np.float32) if a.dtype.kind == "V" else a


@op("Where")
def where(inputs, attrs, opset):
    c, a, b = inputs
    if _both_float(a, b):
        return rtx.where(const(arr(c).astype(bool)), a, b)
    return const(np.where(arr(c), arr(a), arr(b)))


# ---- unary math -------------------------------------------------------------------------------
def _unary(name, rtx_fn, np_fn=None):
    @op(name)
    def fn(inputs, attrs, opset):
        x = inputs[0]
        if is_grad_float(x):
            return rtx_fn(x)
        if np_fn is None:
            raise TypeError(f"{name}: expected a float tensor, got {arr(x).dtype}")
        with np.errstate(**_NP_ERR):
            return const(np.asarray(np_fn(arr(x))).astype(arr(x).dtype))
    return fn


_unary("Abs", rtx.abs, np.abs)
_unary("Neg", rtx.neg, np.negative)
_unary("Sign", rtx.sign, np.sign)
_unary("Exp", rtx.exp)
_unary("Log", rtx.log)
_unary("Sqrt", rtx.sqrt)
_unary("Reciprocal", rtx.reciprocal)
_unary("Sin", rtx.sin)
_unary("Cos", rtx.cos)
_unary("Tan", rtx.tan)
_unary("Asin", rtx.asin)
_unary("Acos", rtx.acos)
_unary("Atan", rtx.atan)
_unary("Sinh", rtx.sinh)
_unary("Cosh", rtx.cosh)
_unary("Asinh", rtx.asinh)
_unary("Acosh", rtx.acosh)
_unary("Atanh", rtx.atanh)
_unary("Tanh", rtx.tanh)
_unary("Sigmoid", rtx.sigmoid)
_unary("Erf", rtx.erf)
_unary("Ceil", rtx.ceil)
_unary("Floor", rtx.floor)
_unary("Round", rtx.round)
_unary("Relu", rtx.relu, lambda a: np.maximum(a, 0))
_unary("Softsign", F.softsign)
_unary("Mish", F.mish)


@op("Identity")
def identity(inputs, attrs, opset):
    return inputs[0]


@op("Softplus")
def softplus(inputs, attrs, opset):
    x = inputs[0]
    # log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
    return rtx.clamp(x, min=0) + rtx.log1p(rtx.exp(-rtx.abs(x)))


@op("Elu")
def elu(inputs, attrs, opset):
    return F.elu(inputs[0], alpha=attrs.get("alpha", 1.0))


@op("Celu")
def celu(inputs, attrs, opset):
    return F.celu(inputs[0], alpha=attrs.get("alpha", 1.0))


@op("Selu")
def selu(inputs, attrs, opset):
    x = inputs[0]
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    neg = alpha * (rtx.exp(rtx.clamp(x, max=0)) - 1)
    return gamma * rtx.where(x > 0, x, neg)


@op("LeakyRelu")
def leaky_relu(inputs, attrs, opset):
    return F.leaky_relu(inputs[0], attrs.get("alpha", 0.01))


@op("ThresholdedRelu")
def thresholded_relu(inputs, attrs, opset):
    x = inputs[0]
    return rtx.where(x > attrs.get("alpha", 1.0), x, rtx.zeros_like(x))


@op("HardSigmoid")
def hard_sigmoid(inputs, attrs, opset):
    x = inputs[0]
    return rtx.clamp(x * attrs.get("alpha", 0.2) + attrs.get("beta", 0.5), 0, 1)


@op("HardSwish")
def hard_swish(inputs, attrs, opset):
    x = inputs[0]
    return x * rtx.clamp(x * (1 / 6) + 0.5, 0, 1)


@op("Swish")
def swish(inputs, attrs, opset):
    x = inputs[0]
    return x * rtx.sigmoid(x * attrs.get("alpha", 1.0))


@op("Gelu")
def gelu(inputs, attrs, opset):
    return F.gelu(inputs[0], approximate=attrs.get("approximate", "none"))


@op("Shrink")
def shrink(inputs, attrs, opset):
    x = inputs[0]
    lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
    if not is_grad_float(x):
        a = arr(x).astype(np.float64)
        out = np.where(a < -lambd, a + bias, np.where(a > lambd, a - bias, 0))
        return const(out.astype(arr(x).dtype))
    zero = rtx.zeros_like(x)
    return rtx.where(x < -lambd, x + bias, rtx.where(x > lambd, x - bias, zero))


@op("PRelu")
def prelu(inputs, attrs, opset):
    x, slope = inputs
    if is_grad_float(x):
        return rtx.where(x >= 0, x, x * slope)
    a, s = arr(x), arr(slope)
    return const(np.where(a >= 0, a, a * s).astype(a.dtype))


@op("Clip")
def clip(inputs, attrs, opset):
    x = inputs[0]
    if opset < 11:
        lo, hi = attrs.get("min", -math.inf), attrs.get("max", math.inf)
        lo, hi = (None if v is None or math.isinf(v) else v for v in (lo, hi))
    else:
        lo = inputs[1] if len(inputs) > 1 else None
        hi = inputs[2] if len(inputs) > 2 else None
        lo = None if lo is None else arr(lo).reshape(()).item()
        hi = None if hi is None else arr(hi).reshape(()).item()
    if lo is None and hi is None:
        return x
    if is_grad_float(x):
        if lo is not None and hi is not None and lo > hi:
            return rtx.full_like(x, hi)
        return rtx.clamp(x, min=lo, max=hi)
    a = arr(x)
    out = np.clip(a, a.dtype.type(lo) if lo is not None else None, a.dtype.type(hi) if hi is not None else None) \
        if lo is not None or hi is not None else a
    return const(np.asarray(out).astype(a.dtype))


# ---- casts --------------------------------------------------------------------------------------
def _cast(x, dtype, saturate=True, round_mode="up"):
    a = arr(x)
    if is_grad_float(x) and (dtype in _RTX_FLOATS or dtype.name == "bfloat16"):
        from rtx.runtime import dtypes as rdt
        if a.dtype == dtype:
            return x
        return x.to(rdt.from_numpy(dtype))
    return const(cast_array(a, dtype, saturate, round_mode))


_RTX_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


@op("Cast")
def cast(inputs, attrs, opset):
    to = np_dtype(attrs["to"])
    return _cast(inputs[0], to, bool(attrs.get("saturate", 1)), attrs.get("round_mode", "up"))


@op("CastLike")
def cast_like(inputs, attrs, opset):
    return _cast(inputs[0], arr(inputs[1]).dtype, bool(attrs.get("saturate", 1)), attrs.get("round_mode", "up"))
