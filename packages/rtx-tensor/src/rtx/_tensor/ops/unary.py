"""Elementwise unary math. Each op is one row: the forward on arrays and the derivative
written in Tensor ops of the input x, the output y and the incoming gradient g (so double
backward works). Integer inputs are promoted to the default float dtype first, as PyTorch.

Complex inputs: for the holomorphic ops (HOLOMORPHIC) the row's real formula g * f'(x) is
turned into PyTorch's conjugate convention g * conj(f'(x)) by conjugating around it."""
from __future__ import annotations

import math

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, xp_of
from rtx._tensor.ops.arith import scalar_name
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt


def _kernel(name):
    # Special functions come from rtx-kernel (no SciPy dependency); imported on first use.
    def call(a):
        from rtx import kernel
        return getattr(kernel, name)(a)
    return call


def _where(cond, a, b):
    from rtx._tensor.ops.arith import where
    return where(cond, a, b)


def _sigmoid(a):
    """exp(min(a, 0)) / (1 + exp(-|a|)): exp of a non-positive number only (no overflow for large |a|),
    and no masked select: the numerator is exactly 1 where a >= 0 and exactly exp(-|a|) elsewhere, so
    the values are those of where(a >= 0, 1 / (1 + ez), ez / (1 + ez)), bit for bit, in two
    temporaries instead of eight (262k float32, one thread: 0.5 vs 4.8 ms, measured). The temporaries
    are arrays even for a 0-d input (a ufunc would return a scalar there, which `out=` cannot take)."""
    d = np.abs(a, out=np.empty_like(a))
    np.negative(d, out=d)
    np.exp(d, out=d)        # ez = exp(-|a|)
    d += 1
    s = np.minimum(a, 0, out=np.empty_like(a))
    np.exp(s, out=s)
    s /= d
    return s


def _int_identity(fn):
    # floor/ceil/trunc/round of an integer tensor is the tensor itself (a copy), as PyTorch.
    return lambda a: a.copy() if a.dtype.kind in "iub" else fn(a)


def _sgn(a):
    if a.dtype.kind != "c":
        return np.sign(a)
    mag = np.abs(a)
    return np.where(mag == 0, 0, a / np.where(mag == 0, 1, mag)).astype(a.dtype, copy=False)


def _sgn_grad(g, x, y):
    if not x.is_complex():
        return g * 0
    # sgn(z) = z / |z| is not holomorphic: grad = (g - sgn^2 conj(g)) / (2|z|), 0 at z == 0.
    mag = x.abs()
    zero = mag == 0
    return _where(zero, 0, (g - y * y * g.conj()) / (2 * _where(zero, 1, mag)))


def _sinc_grad(g, x, y):
    # d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x == 0.
    zero = x == 0
    xs = _where(zero, 1, x)
    return g * _where(zero, 0, ((math.pi * xs).cos() - y) / xs)


def _nan_to_num_array(a, nan, posinf, neginf):
    if _dt.is_bfloat16(a.dtype):
        import ml_dtypes
        info = ml_dtypes.finfo(a.dtype)
        posinf = float(info.max) if posinf is None else posinf
        neginf = float(info.min) if neginf is None else neginf
        return np.nan_to_num(a.astype(np.float32), nan=nan, posinf=posinf, neginf=neginf).astype(a.dtype)
    return np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


# name: (forward on arrays, d/dx as g, x, y -> Tensor, promotes ints to float)
UNARY = {
    "neg": (np.negative, lambda g, x, y: -g, "", False),
    "exp": (np.exp, lambda g, x, y: g * y, "y", True),
    "exp2": (np.exp2, lambda g, x, y: g * y * math.log(2.0), "y", True),
    "expm1": (np.expm1, lambda g, x, y: g * (y + 1), "y", True),
    "log": (np.log, lambda g, x, y: g / x, "x", True),
    "log2": (np.log2, lambda g, x, y: g / (x * math.log(2.0)), "x", True),
    "log10": (np.log10, lambda g, x, y: g / (x * math.log(10.0)), "x", True),
    "log1p": (np.log1p, lambda g, x, y: g / (x + 1), "x", True),
    "sqrt": (np.sqrt, lambda g, x, y: g / (2 * y), "y", True),
    "rsqrt": (lambda a: 1 / np.sqrt(a), lambda g, x, y: -0.5 * g * y * y * y, "y", True),
    "sin": (np.sin, lambda g, x, y: g * x.cos(), "x", True),
    "cos": (np.cos, lambda g, x, y: -g * x.sin(), "x", True),
    "tan": (np.tan, lambda g, x, y: g * (1 + y * y), "y", True),
    "asin": (np.arcsin, lambda g, x, y: g * (1 - x * x).rsqrt(), "x", True),
    "acos": (np.arccos, lambda g, x, y: -g * (1 - x * x).rsqrt(), "x", True),
    "atan": (np.arctan, lambda g, x, y: g / (1 + x * x), "x", True),
    "sinh": (np.sinh, lambda g, x, y: g * x.cosh(), "x", True),
    "cosh": (np.cosh, lambda g, x, y: g * x.sinh(), "x", True),
    "tanh": (np.tanh, lambda g, x, y: g * (1 - y * y), "y", True),
    "asinh": (np.arcsinh, lambda g, x, y: g * (x * x + 1).rsqrt(), "x", True),
    "acosh": (np.arccosh, lambda g, x, y: g * (x * x - 1).rsqrt(), "x", True),
    "atanh": (np.arctanh, lambda g, x, y: g / (1 - x * x), "x", True),
    "sigmoid": (_sigmoid, lambda g, x, y: g * y * (1 - y), "y", True),
    "reciprocal": (lambda a: 1 / a, lambda g, x, y: -g * y * y, "y", True),
    "square": (np.square, lambda g, x, y: 2 * g * x, "x", False),
    "abs": (np.abs, lambda g, x, y: g * x.sgn(), "x", False),
    "sign": (np.sign, lambda g, x, y: g * 0, "", False),
    "sgn": (_sgn, _sgn_grad, "xy", False),
    "floor": (_int_identity(np.floor), lambda g, x, y: g * 0, "", False),
    "ceil": (_int_identity(np.ceil), lambda g, x, y: g * 0, "", False),
    "trunc": (_int_identity(np.trunc), lambda g, x, y: g * 0, "", False),
    "frac": (lambda a: a - np.trunc(a), lambda g, x, y: g, "", False),
    "erf": (_kernel("erf"), lambda g, x, y: g * (2 / math.sqrt(math.pi)) * (-x * x).exp(), "x", True),
    "erfc": (_kernel("erfc"), lambda g, x, y: -g * (2 / math.sqrt(math.pi)) * (-x * x).exp(), "x", True),
    "erfinv": (_kernel("erfinv"), lambda g, x, y: g * (math.sqrt(math.pi) / 2) * (y * y).exp(), "y", True),
    "lgamma": (_kernel("lgamma"), lambda g, x, y: g * x.digamma(), "x", True),
    "digamma": (_kernel("digamma"), None, "", True),
    "relu": (lambda a: np.maximum(a, 0), lambda g, x, y: g * (y > 0).to(g.dtype), "y", False),
    "sinc": (np.sinc, _sinc_grad, "xy", True),
    "deg2rad": (lambda a: a * (math.pi / 180), lambda g, x, y: g * (math.pi / 180), "", True),
    "rad2deg": (lambda a: a * (180 / math.pi), lambda g, x, y: g * (180 / math.pi), "", True),
}

# Complex-differentiable ops: their derivative row is conjugated for complex inputs.
HOLOMORPHIC = {"neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
               "reciprocal", "square"}
# Ops PyTorch refuses for some dtypes: name -> (kinds refused, message).
_REFUSE = {
    "neg": ("b", "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                 "mask, use the `~` or `logical_not()` operator instead."),
    "sign": ("c", "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn "
                  "instead."),
    "frac": ("iub", "\"frac_cpu\" not implemented for '{dtype}'"),
}

OPS = {}


def _make(name, fwd, deriv, needs, promote):
    if not set(needs) <= {"x", "y"}:
        raise ValueError(f"{name}: the derivative's needs are a subset of 'xy', got {needs!r}")
    saves_x = "x" in needs
    saves_y = "y" in needs
    holomorphic = name in HOLOMORPHIC
    refuse = _REFUSE.get(name)

    class Op(Primitive, op=name):
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
            if holomorphic and grad._data.dtype.kind == "c":
                return deriv(grad.conj(), x, y).conj()
            return deriv(grad, x, y)

    Op.__name__ = Op.__qualname__ = name.capitalize() + "Backward"

    def op(input, *, out=None):
        if type(input) is not Tensor:
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        kind = input._data.dtype.kind
        if refuse is not None and kind in refuse[0]:
            raise RuntimeError(refuse[1].format(dtype=scalar_name(input.dtype)))
        if promote and kind in "iub":
            input = cast(input, _dt.get_default_dtype().np)
        result = Op.apply(input)
        if out is not None:
            out.copy_(result)
            return out
        return result

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}, as torch.{name}."
    return op


for _name, (_fwd, _deriv, _needs, _promote) in UNARY.items():
    OPS[_name] = _make(_name, _fwd, _deriv, _needs, _promote)

globals().update(OPS)
negative = OPS["neg"]
absolute = OPS["abs"]
arcsin, arccos, arctan = OPS["asin"], OPS["acos"], OPS["atan"]
arcsinh, arccosh, arctanh = OPS["asinh"], OPS["acosh"], OPS["atanh"]
fix = OPS["trunc"]


def round(input, *, decimals=0):
    """Round half to even (as PyTorch); `decimals` scales by 10**decimals first."""
    if decimals == 0 or input._data.dtype.kind in "iub":
        return _round0(input)
    scale = 10.0 ** decimals
    return _round0(input * scale) / scale


_round0 = _make("round", _int_identity(np.round), lambda g, x, y: g * 0, "", False)


def _floating(input):
    return cast(input, _dt.get_default_dtype().np) if input._data.dtype.kind in "iub" else input


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)); with eps, p is first clamped to [eps, 1 - eps] (gradient 0 outside)."""
    x = _floating(input)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    result = x.log() - (-x).log1p()
    return result if out is None else out.copy_(result)


class NanToNum(Primitive):
    @staticmethod
    def forward(ctx, a, *, nan, posinf, neginf):
        ctx.finite = np.isfinite(a._data)
        return _nan_to_num_array(a._data, nan, posinf, neginf)

    @staticmethod
    def backward(ctx, grad):
        # The replaced entries are constants: no gradient flows to them.
        return grad * Tensor._make(ctx.finite)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN -> nan, +inf -> posinf, -inf -> neginf (default: the dtype's largest / lowest value)."""
    if input._data.dtype.kind in "iub":
        result = input.clone()
    else:
        result = NanToNum.apply(input, nan=nan, posinf=posinf, neginf=neginf)
    return result if out is None else out.copy_(result)


OPS["logit"] = logit
OPS["nan_to_num"] = nan_to_num


# ---- complex parts -------------------------------------------------------------------------


class Real(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a):
        ctx.dtype = a._data.dtype
        return a._data.real

    @staticmethod
    def backward(ctx, grad):
        return cast(grad, ctx.dtype)


class Imag(Primitive):
    is_view = True

    @staticmethod
    def forward(ctx, a):
        ctx.dtype = a._data.dtype
        return a._data.imag

    @staticmethod
    def backward(ctx, grad):
        return cast(grad, ctx.dtype) * 1j


class Conj(Primitive):
    @staticmethod
    def forward(ctx, a):
        return a._data.conj()

    @staticmethod
    def backward(ctx, grad):
        return grad.conj()


class Angle(Primitive):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        d = a._data
        if d.dtype.kind == "c":
            return np.angle(d)
        # pi for negative numbers, 0 otherwise (-0.0 included), NaN stays NaN
        return np.where(np.isnan(d), d, np.where(d < 0, d.dtype.type(math.pi), d.dtype.type(0)))

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        if not z.is_complex():
            return grad * 0
        # d angle = (x dy - y dx) / |z|^2: grad = g * i z / |z|^2, 0 at z == 0
        r2 = z.real * z.real + z.imag * z.imag
        zero = r2 == 0
        return _where(zero, 0, cast(grad / _where(zero, 1, r2), z._data.dtype) * 1j * z)


def real(input):
    """The real part (a view); a real tensor is returned as it is."""
    return Real.apply(input) if input.is_complex() else input


def imag(input):
    """The imaginary part (a view) of a complex tensor."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


def conj(input):
    """The complex conjugate (a copy in rtx; PyTorch returns a lazy view); a real tensor is returned as it is."""
    return Conj.apply(input) if input.is_complex() else input


conj_physical = conj


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def _is_conj(self):
    return False


def angle(input, *, out=None):
    """The argument of each element; for real tensors 0 or pi (ints become the default float)."""
    result = Angle.apply(_floating(input))
    return result if out is None else out.copy_(result)


# ---- clamp ----------------------------------------------------------------------------------


def clamp(input, min=None, max=None, *, out=None):
    """min(max(input, min), max) elementwise; min and max may be numbers or tensors. The
    gradient goes to input where it lies within [min, max], otherwise to the bound."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if type(min) is not Tensor and type(max) is not Tensor:
        result = _clamp_scalar(input, min, max)
    else:
        # min(max(input, min), max) with NaN from any operand winning, as PyTorch
        result = input
        if min is not None:
            result = _where(_or_nan(result < min, min), min, result)
        if max is not None:
            result = _where(_or_nan(result > max, max), max, result)
    if out is not None:
        out.copy_(result)
        return out
    return result


def _or_nan(cmp, bound):
    if type(bound) is Tensor:
        return cmp | bound.isnan() if bound.is_floating_point() else cmp
    return cmp | True if isinstance(bound, float) and math.isnan(bound) else cmp


class Clamp(Primitive):
    @staticmethod
    def forward(ctx, a, *, lo, hi):
        ctx.save_for_backward(a)
        ctx.lo, ctx.hi = lo, hi
        return np.clip(a._data, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        d = a._data
        mask = xp_of(a).ones(d.shape, bool)
        if ctx.lo is not None:
            mask &= d >= ctx.lo
        if ctx.hi is not None:
            mask &= d <= ctx.hi
        return grad * Tensor._make(mask)


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
                       "round", "clamp", "clip", "clamp_min", "clamp_max", "conj", "conj_physical", "resolve_conj",
                       "resolve_neg", "angle"]
# Attributes set on Tensor as they are (properties, and methods with no rtx.* function).
TENSOR_ATTRS = {"real": property(real), "imag": property(imag), "is_conj": _is_conj}
