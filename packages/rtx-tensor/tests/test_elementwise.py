"""Elementwise ops (unary.py, arith.py, compare.py): values against NumPy, gradients against
finite differences in float64 and double backward (rtx.testing.OpCase tables), complex
gradients, integer semantics, NaN handling, in-place forms and PyTorch's errors."""
import math

import numpy as np
import pytest

import rtx
from rtx.testing import OpCase, assert_close, check_case, devices

# NumPy's divide-by-zero / invalid-value warnings from the edge cases tested on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

rng = np.random.default_rng(1234)


def r(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


def pos(*shape):
    return r(*shape, lo=0.5, hi=2.0)


def away(*shape, gap=0.3):
    """Values in [-2, -gap] U [gap, 2]: away from the kinks at 0 (abs, relu, sign, ...)."""
    x = r(*shape, lo=gap, hi=2.0)
    return x * rng.choice([-1.0, 1.0], shape)


def frac_safe(*shape):
    """Away from integers and from half-integers (floor, round, frac have jumps there)."""
    return np.floor(r(*shape, lo=-3, hi=3)) + rng.uniform(0.1, 0.4, shape)


_v = np.vectorize


def _erfinv(y):
    def solve(v):
        x = 0.0
        for _ in range(100):
            x -= (math.erf(x) - v) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        return x
    return _v(solve)(y)


def _digamma(x):
    h = 1e-5
    return (_v(math.lgamma)(x + h) - _v(math.lgamma)(x - h)) / (2 * h)


def _kernel_has(name):
    try:
        from rtx import kernel
    except ImportError:
        return False
    return hasattr(kernel, name)


def _special(case, name):
    return pytest.param(case, marks=pytest.mark.xfail(not _kernel_has(name),
                                                      reason="rtx.kernel special functions pending"))


UNARY = [
    OpCase("neg", rtx.neg, np.negative, [r(2, 3)]),
    OpCase("exp", rtx.exp, np.exp, [r(2, 3)]),
    OpCase("exp2", rtx.exp2, np.exp2, [r(2, 3)]),
    OpCase("expm1", rtx.expm1, np.expm1, [r(2, 3)]),
    OpCase("log", rtx.log, np.log, [pos(2, 3)]),
    OpCase("log2", rtx.log2, np.log2, [pos(2, 3)]),
    OpCase("log10", rtx.log10, np.log10, [pos(2, 3)]),
    OpCase("log1p", rtx.log1p, np.log1p, [r(2, 3, lo=-0.5, hi=2)]),
    OpCase("sqrt", rtx.sqrt, np.sqrt, [pos(2, 3)]),
    OpCase("rsqrt", rtx.rsqrt, lambda a: 1 / np.sqrt(a), [pos(2, 3)]),
    OpCase("sin", rtx.sin, np.sin, [r(2, 3)]),
    OpCase("cos", rtx.cos, np.cos, [r(2, 3)]),
    OpCase("tan", rtx.tan, np.tan, [r(2, 3, lo=-1, hi=1)]),
    OpCase("asin", rtx.asin, np.arcsin, [r(2, 3, lo=-0.9, hi=0.9)]),
    OpCase("acos", rtx.acos, np.arccos, [r(2, 3, lo=-0.9, hi=0.9)]),
    OpCase("atan", rtx.atan, np.arctan, [r(2, 3)]),
    OpCase("sinh", rtx.sinh, np.sinh, [r(2, 3)]),
    OpCase("cosh", rtx.cosh, np.cosh, [r(2, 3)]),
    OpCase("tanh", rtx.tanh, np.tanh, [r(2, 3)]),
    OpCase("asinh", rtx.asinh, np.arcsinh, [r(2, 3)]),
    OpCase("acosh", rtx.acosh, np.arccosh, [r(2, 3, lo=1.2, hi=3)]),
    OpCase("atanh", rtx.atanh, np.arctanh, [r(2, 3, lo=-0.9, hi=0.9)]),
    OpCase("sigmoid", rtx.sigmoid, lambda a: 1 / (1 + np.exp(-a)), [r(2, 3, lo=-5, hi=5)]),
    OpCase("reciprocal", rtx.reciprocal, np.reciprocal, [away(2, 3)]),
    OpCase("square", rtx.square, np.square, [r(2, 3)]),
    OpCase("abs", rtx.abs, np.abs, [away(2, 3)]),
    OpCase("sign", rtx.sign, np.sign, [away(2, 3)]),
    OpCase("sgn", rtx.sgn, np.sign, [away(2, 3)]),
    OpCase("floor", rtx.floor, np.floor, [frac_safe(2, 3)]),
    OpCase("ceil", rtx.ceil, np.ceil, [frac_safe(2, 3)]),
    OpCase("trunc", rtx.trunc, np.trunc, [frac_safe(2, 3)]),
    OpCase("round", rtx.round, np.round, [frac_safe(2, 3)]),
    OpCase("round_decimals", lambda t: rtx.round(t, decimals=2), lambda a: np.round(a, 2), [r(2, 3)], grad=False),
    OpCase("frac", rtx.frac, lambda a: a - np.trunc(a), [frac_safe(2, 3)]),
    OpCase("relu", rtx.relu, lambda a: np.maximum(a, 0), [away(2, 3)]),
    OpCase("sinc", rtx.sinc, np.sinc, [away(2, 3, gap=0.1)]),
    OpCase("deg2rad", rtx.deg2rad, np.deg2rad, [r(2, 3, lo=-360, hi=360)]),
    OpCase("rad2deg", rtx.rad2deg, np.rad2deg, [r(2, 3)]),
    OpCase("logit", rtx.logit, lambda a: np.log(a / (1 - a)), [r(2, 3, lo=0.05, hi=0.95)]),
    OpCase("logit_eps", lambda t: rtx.logit(t, eps=0.2), lambda a: np.log(np.clip(a, 0.2, 0.8) / (1 - np.clip(
        a, 0.2, 0.8))), [np.array([0.05, 0.1, 0.3, 0.5, 0.7, 0.9])]),
    OpCase("nan_to_num", rtx.nan_to_num, np.nan_to_num, [np.array([0.5, np.nan, np.inf, -np.inf, -1.5])]),
    OpCase("nan_to_num_args", lambda t: rtx.nan_to_num(t, nan=1.0, posinf=9.0, neginf=-9.0),
           lambda a: np.nan_to_num(a, nan=1.0, posinf=9.0, neginf=-9.0), [np.array([0.5, np.nan, np.inf, -np.inf])]),
    OpCase("angle_real", rtx.angle, lambda a: np.where(a < 0, np.pi, 0.0), [away(2, 3)]),
    OpCase("real_of_real", rtx.real, lambda a: a, [r(2, 3)]),
    OpCase("conj_of_real", rtx.conj, lambda a: a, [r(2, 3)]),
    OpCase("clamp", lambda t: rtx.clamp(t, -0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), [away(2, 3, gap=0.05)]),
    OpCase("clamp_min", lambda t: t.clamp_min(0.3), lambda a: np.maximum(a, 0.3), [r(2, 3)]),
    OpCase("clamp_max", lambda t: t.clamp(max=0.3), lambda a: np.minimum(a, 0.3), [r(2, 3)]),
    OpCase("clamp_tensor_bounds", lambda t, lo, hi: rtx.clamp(t, lo, hi), lambda a, lo, hi: np.minimum(
        np.maximum(a, lo), hi), [r(2, 3), r(3, lo=-1.5, hi=-0.2), r(2, 1, lo=0.2, hi=1.5)]),
    OpCase("erf", rtx.erf, _v(math.erf), [r(2, 3)]),
    OpCase("erfc", rtx.erfc, _v(math.erfc), [r(2, 3)]),
    OpCase("erfinv", rtx.erfinv, _erfinv, [r(2, 3, lo=-0.9, hi=0.9)]),
    OpCase("lgamma", rtx.lgamma, _v(math.lgamma), [pos(2, 3)], gradgrad=False),  # digamma' is not in rtx.kernel
    OpCase("digamma", rtx.digamma, _digamma, [pos(2, 3)], grad=False, rtol=1e-6, atol=1e-8),
]
_SPECIAL = {"erf", "erfc", "erfinv", "lgamma", "digamma"}
UNARY_PARAMS = [_special(c, c.name) if c.name in _SPECIAL else c for c in UNARY]


def _where_ref(c, a, b):
    return np.where(c, a, b)


BINARY = [
    OpCase("add", rtx.add, np.add, [r(2, 3), r(3)]),
    OpCase("add_broadcast_left", rtx.add, np.add, [r(3), r(2, 3)]),
    OpCase("add_outer", rtx.add, np.add, [r(2, 1), r(1, 3)]),
    OpCase("add_0d", rtx.add, np.add, [r(2, 3), r()]),
    OpCase("add_0d_0d", rtx.add, np.add, [r(), r()]),
    OpCase("add_alpha", lambda a, b: rtx.add(a, b, alpha=2.5), lambda a, b: a + 2.5 * b, [r(2, 3), r(3)]),
    OpCase("sub", rtx.sub, np.subtract, [r(2, 3), r(2, 1)]),
    OpCase("sub_broadcast_left", rtx.sub, np.subtract, [r(1, 3), r(2, 3)]),
    OpCase("sub_alpha", lambda a, b: rtx.sub(a, b, alpha=3), lambda a, b: a - 3 * b, [r(2, 3), r(3)]),
    OpCase("mul", rtx.mul, np.multiply, [r(2, 3), r(3)]),
    OpCase("mul_broadcast_left", rtx.mul, np.multiply, [r(3, 1), r(3, 4)]),
    OpCase("mul_0d", rtx.mul, np.multiply, [r(), r(2, 2)]),
    OpCase("div", rtx.div, np.divide, [r(2, 3), away(3)]),
    OpCase("div_broadcast_left", rtx.div, np.divide, [r(3), away(2, 3)]),
    OpCase("pow", rtx.pow, np.power, [pos(2, 3), r(3)]),
    OpCase("pow_broadcast_left", rtx.pow, np.power, [pos(3), r(2, 3)]),
    OpCase("pow_negative_base", rtx.pow, np.power, [away(2, 3), np.array([2.0, 3.0, -1.0])], grad_inputs=(0,)),
    OpCase("maximum", rtx.maximum, np.maximum, [r(2, 3), r(3)]),
    OpCase("minimum", rtx.minimum, np.minimum, [r(2, 3), r(2, 1)]),
    OpCase("fmax", rtx.fmax, np.fmax, [r(2, 3), r(3)]),
    OpCase("fmin", rtx.fmin, np.fmin, [r(3), r(2, 3)]),
    OpCase("atan2", rtx.atan2, np.arctan2, [r(2, 3), away(3)]),
    OpCase("hypot", rtx.hypot, np.hypot, [away(2, 3), r(3)]),
    OpCase("fmod", rtx.fmod, np.fmod, [np.array([[-3.7, 2.2, 5.3], [4.1, -0.6, 1.3]]),
                                       np.array([1.5, -1.3, 2.1])]),
    OpCase("remainder", rtx.remainder, np.remainder, [np.array([[-3.7, 2.2, 5.3], [4.1, -0.6, 1.3]]),
                                                      np.array([1.5, -1.3, 2.1])]),
    OpCase("xlogy", rtx.xlogy, lambda a, b: a * np.log(b), [away(2, 3), pos(3)]),
    OpCase("logaddexp", rtx.logaddexp, np.logaddexp, [r(2, 3), r(3)]),
    OpCase("logaddexp2", rtx.logaddexp2, np.logaddexp2, [r(3), r(2, 3)]),
    OpCase("copysign", rtx.copysign, np.copysign, [away(2, 3), away(3)]),
    OpCase("lerp", rtx.lerp, lambda a, b, w: a + w * (b - a), [r(2, 3), r(3), r(2, 3, lo=0, hi=1)]),
    OpCase("addcmul", lambda a, b, c: rtx.addcmul(a, b, c, value=0.5), lambda a, b, c: a + 0.5 * b * c,
           [r(2, 3), r(3), r(2, 1)]),
    OpCase("addcdiv", lambda a, b, c: rtx.addcdiv(a, b, c, value=2), lambda a, b, c: a + 2 * b / c,
           [r(2, 3), r(3), away(2, 1)]),
    OpCase("where", lambda c, a, b: rtx.where(c > 0, a, b), lambda c, a, b: np.where(c > 0, a, b),
           [r(2, 3), r(3), r(2, 1)], grad_inputs=(1, 2)),
    OpCase("where_scalar_other", lambda c, a: rtx.where(c > 0, a, 0.5), lambda c, a: np.where(c > 0, a, 0.5),
           [r(2, 3), r(2, 3)], grad_inputs=(1,)),
    OpCase("where_scalar_input", lambda c, b: rtx.where(c > 0, -1.0, b), lambda c, b: np.where(c > 0, -1.0, b),
           [r(2, 3), r(3)], grad_inputs=(1,)),
]

# Python numbers on either side of an operator.
SCALAR = [
    OpCase("rsub_scalar", lambda t: 2 - t, lambda a: 2 - a, [r(2, 3)]),
    OpCase("sub_scalar", lambda t: t - 2.5, lambda a: a - 2.5, [r(2, 3)]),
    OpCase("radd_scalar", lambda t: 1.5 + t, lambda a: 1.5 + a, [r(2, 3)]),
    OpCase("rmul_scalar", lambda t: 3 * t, lambda a: 3 * a, [r(2, 3)]),
    OpCase("rdiv_scalar", lambda t: 2 / t, lambda a: 2 / a, [away(2, 3)]),
    OpCase("div_scalar", lambda t: t / 4, lambda a: a / 4, [r(2, 3)]),
    OpCase("rpow_scalar", lambda t: 2 ** t, lambda a: 2.0 ** a, [r(2, 3)]),
    OpCase("rpow_scalar_float", lambda t: 0.5 ** t, lambda a: 0.5 ** a, [r(2, 3)]),
    OpCase("pow_scalar", lambda t: t ** 2, lambda a: a ** 2, [r(2, 3)]),
    OpCase("pow_scalar_3", lambda t: t ** 3, lambda a: a ** 3, [r(2, 3)]),
    OpCase("pow_scalar_half", lambda t: t ** 0.5, np.sqrt, [pos(2, 3)]),
    OpCase("pow_scalar_neg", lambda t: t ** -1.5, lambda a: a ** -1.5, [pos(2, 3)]),
    OpCase("pow_scalar_zero", lambda t: t ** 0, lambda a: a ** 0, [r(2, 3)]),
    OpCase("rmod_scalar", lambda t: 5.5 % t, lambda a: np.remainder(5.5, a), [np.array([1.3, -2.1, 2.4])]),
    OpCase("maximum_scalar", lambda t: rtx.maximum(t, 0.25), lambda a: np.maximum(a, 0.25), [r(2, 3)]),
    OpCase("atan2_scalar", lambda t: rtx.atan2(1.0, t), lambda a: np.arctan2(1.0, a), [away(2, 3)]),
    OpCase("xlogy_scalar", lambda t: rtx.xlogy(2.0, t), lambda a: 2.0 * np.log(a), [pos(2, 3)]),
    OpCase("float_power", lambda t: rtx.float_power(t, 2), lambda a: a ** 2.0, [r(2, 3)]),
]

ALL_CASES = UNARY_PARAMS + BINARY + SCALAR


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_op(case, device):
    check_case(case, device)


# ---- complex gradients --------------------------------------------------------------------------


def _complex_check(fn, *zs, seed=0):
    """z.grad from out.backward(w) against finite differences of L = Re(sum(conj(w) * fn(z))):
    PyTorch's convention is grad = dL/dRe(z) + 1j * dL/dIm(z)."""
    g = np.random.default_rng(seed)
    with rtx.no_grad():
        out0 = fn(*[rtx.tensor(z) for z in zs])
    shape = tuple(out0.shape)
    w = g.standard_normal(shape) + (1j * g.standard_normal(shape) if out0.is_complex() else 0)

    def loss(*arrays):
        with rtx.no_grad():
            o = fn(*[rtx.tensor(a) for a in arrays]).numpy()
        return float(np.real(np.sum(np.conj(w) * o)))

    ts = [rtx.tensor(z, requires_grad=True) for z in zs]
    fn(*ts).backward(rtx.tensor(w.astype(out0.numpy().dtype)))
    for k, z in enumerate(zs):
        num = np.zeros(z.shape, np.complex128)
        eps = 1e-6
        for idx in np.ndindex(z.shape):
            for unit in (1, 1j):
                zp, zm = [a.copy() for a in zs], [a.copy() for a in zs]
                zp[k][idx] += eps * unit
                zm[k][idx] -= eps * unit
                num[idx] += unit * (loss(*zp) - loss(*zm)) / (2 * eps)
        assert_close(ts[k].grad, num, rtol=1e-5, atol=1e-6)


def _cz(*shape):
    return r(*shape) + 1j * r(*shape)


@pytest.mark.parametrize("name,fn,n_in", [
    ("mul", lambda a, b: a * b, 2),
    ("div", lambda a, b: a / b, 2),
    ("add_sub", lambda a, b: a - 2 * b + a, 2),
    ("pow_tensor", lambda a, b: a ** b, 2),
    ("pow_scalar", lambda a: a ** 3, 1),
    ("exp", rtx.exp, 1),
    ("log", rtx.log, 1),
    ("sin", rtx.sin, 1),
    ("tanh", rtx.tanh, 1),
    ("sqrt", rtx.sqrt, 1),
    ("reciprocal", rtx.reciprocal, 1),
    ("abs", rtx.abs, 1),
    ("sgn", rtx.sgn, 1),
    ("angle", rtx.angle, 1),
    ("real", rtx.real, 1),
    ("imag", rtx.imag, 1),
    ("conj", rtx.conj, 1),
    ("where", lambda a, b: rtx.where(a.real > 0, a, b), 2),
    # reductions over complex inputs, with the same checker
    ("sum", lambda a: a.sum(1), 1),
    ("mean", lambda a: a.mean(), 1),
    ("prod", lambda a: a.prod(1), 1),
    ("cumsum", lambda a: a.cumsum(1), 1),
    ("cumprod", lambda a: a.cumprod(1), 1),
    ("norm", lambda a: a.norm(), 1),
    ("norm_1", lambda a: a.norm(1, dim=0), 1),
    ("var", lambda a: a.var(1), 1),
])
def test_complex_gradients(name, fn, n_in):
    _complex_check(fn, *[_cz(2, 3) for _ in range(n_in)])


def test_complex_parts_values_and_views():
    z = rtx.tensor([1 + 2j, -3 - 0.5j, 0j], dtype=rtx.complex128)
    assert_close(z.real, np.array([1.0, -3.0, 0.0]))
    assert_close(z.imag, np.array([2.0, -0.5, 0.0]))
    assert_close(z.conj(), np.array([1 - 2j, -3 + 0.5j, 0j]))
    assert_close(rtx.angle(z), np.angle(z.numpy()))
    assert_close(rtx.sgn(z), np.array([(1 + 2j) / abs(1 + 2j), (-3 - 0.5j) / abs(-3 - 0.5j), 0]))
    assert z.real.dtype == rtx.float64 and rtx.tensor([1j]).real.dtype == rtx.float32
    z.real.mul_(2)  # real is a view, as in PyTorch
    assert_close(z.real, np.array([2.0, -6.0, 0.0]))
    x = rtx.tensor([1.0, -2.0])
    assert rtx.real(x) is x and x.conj() is x and not x.is_conj()
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        _ = x.imag
    assert_close(rtx.angle(rtx.tensor([-1, 0, 2])), np.array([math.pi, 0, 0], np.float32))
    with pytest.raises(RuntimeError, match="torch.sgn"):
        rtx.sign(z)


# ---- integer semantics --------------------------------------------------------------------------


def test_integer_division_and_remainder():
    a = rtx.tensor([7, -7, 7, -7, 0])
    b = rtx.tensor([2, 2, -2, -2, 3])
    assert (a // b).tolist() == [3, -4, -4, 3, 0] and (a // b).dtype == rtx.int64
    assert (a % b).tolist() == [1, 1, -1, -1, 0]  # the sign of the divisor
    assert rtx.fmod(a, b).tolist() == [1, -1, 1, -1, 0]  # the sign of the dividend
    assert rtx.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3, 0]
    assert rtx.div(a, b, rounding_mode="floor").tolist() == [3, -4, -4, 3, 0]
    q = a / b
    assert q.dtype == rtx.float32
    assert_close(q, np.array([3.5, -3.5, -3.5, 3.5, 0.0], np.float32))
    assert (a / 2).dtype == rtx.float32 and (7 / b).dtype == rtx.float32
    assert (-7 // rtx.tensor([2])).tolist() == [-4] and (-7 % rtx.tensor([3])).tolist() == [2]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a // rtx.tensor([1, 1, 0, 1, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a % 0


def test_float_floor_division_rounds_like_python():
    x = rtx.tensor([1.0, -1.0, 7.5], dtype=rtx.float64)
    assert (x // 0.1).tolist() == [1.0 // 0.1, -1.0 // 0.1, 7.5 // 0.1]
    assert rtx.div(x, 2, rounding_mode="trunc").tolist() == [0.0, -0.0, 3.0]
    x.requires_grad_()
    (x // 2).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_integer_pow_stays_integer():
    t = rtx.tensor([1, 2, 3])
    assert (t ** 2).dtype == rtx.int64 and (t ** 2).tolist() == [1, 4, 9]
    assert (2 ** t).dtype == rtx.int64 and (2 ** t).tolist() == [2, 4, 8]
    assert (t ** t).tolist() == [1, 4, 27]
    assert (t ** 0.5).dtype == rtx.float32
    assert (rtx.tensor([2], dtype=rtx.int8) ** 3).dtype == rtx.int8
    with pytest.raises(RuntimeError, match="negative integer powers"):
        t ** -1
    with pytest.raises(RuntimeError, match="negative integer powers"):
        t ** rtx.tensor([1, -1, 2])


def test_integer_unary_dtypes():
    t = rtx.tensor([-2, 0, 3])
    assert rtx.floor(t).dtype == rtx.int64 and rtx.round(t).tolist() == [-2, 0, 3]
    assert rtx.abs(t).tolist() == [2, 0, 3] and rtx.square(t).dtype == rtx.int64
    assert rtx.exp(t).dtype == rtx.float32 and rtx.sqrt(rtx.tensor([4])).tolist() == [2.0]
    assert rtx.sinc(t).dtype == rtx.float32 and rtx.deg2rad(rtx.tensor([180])).tolist() == pytest.approx([math.pi])
    assert rtx.clamp(t, 0, 1).dtype == rtx.int64 and rtx.clamp(t, 0.5).dtype == rtx.float32
    with pytest.raises(RuntimeError, match="frac"):
        rtx.frac(t)


def test_bool_arithmetic():
    a, b = rtx.tensor([True, False, True]), rtx.tensor([True, True, False])
    assert (a + b).dtype == rtx.bool and (a + b).tolist() == [True, True, True]
    assert (a * b).tolist() == [True, False, False]
    assert (a + 1).dtype == rtx.int64 and (a + 1.5).dtype == rtx.float32
    with pytest.raises(RuntimeError, match="two bool tensors"):
        a - b
    with pytest.raises(RuntimeError, match="logical_not"):
        a - 1
    with pytest.raises(RuntimeError, match="Negation"):
        _ = -a


# ---- gradients at the edges ---------------------------------------------------------------------


def _grads(fn, *arrays):
    ts = [rtx.tensor(np.asarray(a, np.float64), requires_grad=True) for a in arrays]
    fn(*ts).sum().backward()
    return [t.grad.tolist() for t in ts]


def test_pow_gradient_edges():
    # d/da a**b where b == 0 is 0, also at a == 0 (where b * a**(b-1) would be 0 * inf)
    ga, gb = _grads(lambda a, b: a ** b, [0.0, 2.0, 0.0, -2.0, 0.0], [0.0, 0.0, 2.0, 2.0, 0.5])
    assert ga[:4] == [0.0, 0.0, 0.0, -4.0] and ga[4] == math.inf
    # d/db a**b = a**b log a: 0 where a == 0 and b >= 0, NaN for a negative base, as PyTorch
    assert gb[0] == 0.0 and gb[1] == pytest.approx(math.log(2.0)) and gb[2] == 0.0 and gb[4] == 0.0
    assert math.isnan(gb[3])
    (g,) = _grads(lambda a: a ** 0, [0.0, 3.0])
    assert g == [0.0, 0.0]
    (g,) = _grads(lambda b: 0.0 ** b, [1.0, 2.0])
    assert g == [0.0, 0.0]
    (g,) = _grads(lambda b: 2 ** b, [1.0, 3.0])
    assert g == pytest.approx([2 * math.log(2), 8 * math.log(2)])


def test_pow_double_backward_with_zero_exponent():
    a = rtx.tensor([0.5, 2.0], dtype=rtx.float64, requires_grad=True)
    b = rtx.tensor([0.0, 0.0], dtype=rtx.float64, requires_grad=True)
    (ga,) = rtx.autograd.grad((a ** b).sum(), [a], create_graph=True)
    (gb,) = rtx.autograd.grad(ga.sum(), [b])
    # d/db [b * a**(b-1)] at b == 0 is a**-1
    assert_close(gb, np.array([2.0, 0.5]))


def test_minmax_ties_and_nan():
    ga, gb = _grads(rtx.maximum, [1.0, 2.0, 3.0], [1.0, 1.0, 5.0])
    assert ga == [0.5, 1.0, 0.0] and gb == [0.5, 0.0, 1.0]
    ga, gb = _grads(rtx.fmax, [1.0, 2.0], [1.0, 5.0])
    assert ga == [1.0, 0.0] and gb == [0.0, 1.0]
    nan = float("nan")
    x, y = rtx.tensor([nan, 1.0, nan]), rtx.tensor([2.0, nan, nan])
    assert np.isnan(rtx.maximum(x, y).numpy()).all() and np.isnan(rtx.minimum(x, y).numpy()).all()
    assert_close(rtx.fmax(x, y), np.array([2.0, 1.0, nan], np.float32), equal_nan=True)
    assert_close(rtx.fmin(x, y), np.array([2.0, 1.0, nan], np.float32), equal_nan=True)
    assert math.isnan(rtx.clamp(rtx.tensor([nan]), 0, 1).item())


def test_special_values():
    assert_close(rtx.sinc(rtx.tensor([0.0, 1.0])), np.array([1.0, 0.0], np.float32), atol=1e-7)
    (g,) = _grads(rtx.sinc, [0.0])
    assert g == [0.0]
    x = rtx.tensor([0.0, 0.0, 1.0, 2.0], dtype=rtx.float64)
    y = rtx.tensor([0.0, float("nan"), 0.0, math.e], dtype=rtx.float64)
    out = rtx.xlogy(x, y).tolist()
    assert out[0] == 0.0 and math.isnan(out[1]) and out[2] == -math.inf and out[3] == pytest.approx(2.0)
    big = rtx.tensor([1000.0, -1000.0], dtype=rtx.float64, requires_grad=True)
    out = rtx.logaddexp(big, big)
    assert_close(out.detach(), np.array([1000 + math.log(2), -1000 + math.log(2)]))
    out.sum().backward()
    assert_close(big.grad, np.array([1.0, 1.0]))  # 0.5 from each operand
    assert rtx.copysign(rtx.tensor([2.0]), -0.0).item() == -2.0
    h = rtx.heaviside(rtx.tensor([-1.5, 0.0, 2.0]), rtx.tensor([0.5]))
    assert h.tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="different dtypes"):
        rtx.heaviside(rtx.tensor([1.0]), rtx.tensor([1], dtype=rtx.int64))
    f16 = rtx.nan_to_num(rtx.tensor([math.inf, -math.inf, math.nan], dtype=rtx.float16))
    assert f16.tolist() == [65504.0, -65504.0, 0.0]
    bf = rtx.nan_to_num(rtx.tensor([math.inf, math.nan], dtype=rtx.bfloat16))
    assert bf.tolist()[0] > 3e38 and bf.tolist()[1] == 0.0
    assert rtx.nan_to_num(rtx.tensor([1, 2])).tolist() == [1, 2]
    (g,) = _grads(rtx.nan_to_num, [1.0, math.inf, math.nan])
    assert g == [1.0, 0.0, 0.0]


def test_clamp_nan():
    nan = float("nan")
    x = rtx.tensor([nan, 0.5, 2.0])
    out = rtx.clamp(x, rtx.tensor([0.0, nan, 0.0]), rtx.tensor([1.0, 1.0, 1.0]))
    assert np.isnan(out.numpy()[:2]).all() and out[2].item() == 1.0
    assert np.isnan(rtx.clamp(x, 0.0, 1.0).numpy()[0])


def test_clamp_tensor_bound_gradients():
    x, lo = _grads(lambda a, b: rtx.clamp(a, min=b), [0.0, 1.0, 2.0], [1.0, 1.0, 1.0])
    assert x == [0.0, 1.0, 1.0] and lo == [1.0, 0.0, 0.0]  # a tie goes to the input, as PyTorch
    (x,) = _grads(lambda a: rtx.clamp(a, 0.0, 1.0), [-1.0, 0.0, 0.5, 1.0, 2.0])
    assert x == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_where_forms():
    c = rtx.tensor([True, False, True])
    assert rtx.where(c, 1, 0).dtype == rtx.int64 and rtx.where(c, 1, 0).tolist() == [1, 0, 1]
    assert rtx.where(c, 1.0, 0).dtype == rtx.float32
    x = rtx.tensor([1.0, 2.0, 3.0])
    assert x.where(c, 0.0).tolist() == [1.0, 0.0, 3.0]
    assert rtx.where(c, x, rtx.tensor([9], dtype=rtx.int64)).dtype == rtx.float32
    assert rtx.where(c, rtx.tensor([1], dtype=rtx.int32), rtx.tensor([2.0], dtype=rtx.float64)).dtype == rtx.float64
    (idx,) = rtx.where(c)
    assert idx.tolist() == [0, 2] and idx.dtype == rtx.int64
    with pytest.raises(RuntimeError, match="boolean"):
        rtx.where(rtx.tensor([1, 0]), x[:2], x[:2])


def test_addcdiv_refuses_integers():
    t = rtx.tensor([1, 2])
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        rtx.addcdiv(t, t, t)


def test_comparisons_and_logical():
    a = rtx.tensor([1.0, float("nan"), 3.0])
    b = rtx.tensor([1.0, float("nan"), 2.0])
    assert (a == b).tolist() == [True, False, False] and (a != b).tolist() == [False, True, True]
    assert (a > b).tolist() == [False, False, True] and (a >= 2).tolist() == [False, False, True]
    assert (2 < a).tolist() == [False, False, True]
    assert rtx.isclose(a, b, equal_nan=True).tolist() == [True, True, False]
    assert rtx.logical_xor(rtx.tensor([1, 0]), rtx.tensor([1, 1])).tolist() == [False, True]
    assert (rtx.tensor([6]) & 3).tolist() == [2] and (~rtx.tensor([True, False])).tolist() == [False, True]
    with pytest.raises(RuntimeError):
        rtx.bitwise_and(a, a)


# ---- in-place forms -------------------------------------------------------------------------------


@pytest.mark.parametrize("name,call,ref", [
    ("add_", lambda t: t.add_(rtx.tensor([1.0, 2.0, 3.0])), lambda a: a + [1, 2, 3]),
    ("add_alpha", lambda t: t.add_(rtx.tensor([1.0, 2.0, 3.0]), alpha=2), lambda a: a + 2 * np.array([1, 2, 3])),
    ("sub_", lambda t: t.sub_(1), lambda a: a - 1),
    ("mul_", lambda t: t.mul_(2), lambda a: a * 2),
    ("div_", lambda t: t.div_(4), lambda a: a / 4),
    ("pow_", lambda t: t.pow_(2), lambda a: a ** 2),
    ("clamp_", lambda t: t.clamp_(0, 1), lambda a: np.clip(a, 0, 1)),
    ("clamp_min_", lambda t: t.clamp_min_(0.2), lambda a: np.maximum(a, 0.2)),
    ("exp_", lambda t: t.exp_(), np.exp),
    ("sigmoid_", lambda t: t.sigmoid_(), lambda a: 1 / (1 + np.exp(-a))),
    ("neg_", lambda t: t.neg_(), np.negative),
    ("abs_", lambda t: t.abs_(), np.abs),
    ("nan_to_num_", lambda t: t.nan_to_num_(), np.nan_to_num),
    ("logit_", lambda t: t.clamp_(0.1, 0.9).logit_(), lambda a: np.log(np.clip(a, .1, .9) / (1 - np.clip(a, .1, .9)))),
    ("hypot_", lambda t: t.hypot_(rtx.tensor(3.0)), lambda a: np.hypot(a, 3)),
    ("xlogy_", lambda t: t.xlogy_(2.0), lambda a: a * np.log(2.0)),
    ("copysign_", lambda t: t.copysign_(-1.0), lambda a: -np.abs(a)),
    ("addcmul_", lambda t: t.addcmul_(rtx.tensor([1.0, 2.0, 3.0]), rtx.tensor(2.0), value=0.5),
     lambda a: a + 0.5 * np.array([1, 2, 3]) * 2),
    ("addcdiv_", lambda t: t.addcdiv_(rtx.tensor([1.0, 2.0, 3.0]), rtx.tensor(2.0)),
     lambda a: a + np.array([1, 2, 3]) / 2),
    ("remainder_", lambda t: t.remainder_(0.5), lambda a: np.remainder(a, 0.5)),
    ("floor_divide_", lambda t: t.floor_divide_(0.5), lambda a: np.floor_divide(a, 0.5)),
    ("maximum_", lambda t: t.maximum_(rtx.tensor(0.0)), lambda a: np.maximum(a, 0)),
])
def test_inplace(name, call, ref):
    a = np.array([-0.5, 0.25, 1.5], np.float32)
    t = rtx.tensor(a)
    alias = t[:]  # a view sees the write
    v = t._version
    out = call(t)
    assert out is t and t._version > v
    assert_close(t, ref(a.astype(np.float64)).astype(np.float32), rtol=1e-6, atol=1e-6)
    assert_close(alias, t)


def test_inplace_dtype_rules_and_autograd():
    t = rtx.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.add_(1.5)
    t.mul_(2)
    assert t.tolist() == [2, 4, 6] and t.dtype == rtx.int64
    leaf = rtx.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.mul_(2)
    y = leaf * 1
    y.mul_(3).clamp_(0, 4.5)
    y.sum().backward()
    assert leaf.grad.tolist() == [3.0, 0.0]


def test_out_argument():
    out = rtx.empty(3)
    res = rtx.add(rtx.tensor([1.0, 2.0, 3.0]), 1, out=out)
    assert res is out and out.tolist() == [2.0, 3.0, 4.0]
    rtx.exp(rtx.zeros(3), out=out)
    assert out.tolist() == [1.0, 1.0, 1.0]


def test_errors_name_the_op():
    with pytest.raises(TypeError, match="exp"):
        rtx.exp(1.0)
    with pytest.raises((RuntimeError, ValueError), match="broadcast|size"):
        rtx.tensor([1.0, 2.0]) + rtx.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="rounding_mode"):
        rtx.div(rtx.tensor([1.0]), 2, rounding_mode="ceil")
