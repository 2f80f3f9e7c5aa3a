"""Type promotion and broadcasting of the binary ops, against PyTorch's rules: known results
from PyTorch, hypothesis properties that rtx.result_type / rtx.promote_types agree with the
dtypes the ops produce, and random broadcast-compatible shapes (result shape, values against
NumPy, gradient shapes and values)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import rtx
from rtx.testing import assert_close

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# PyTorch's classic dtypes (it has no promotion rules for uint16/32/64 with other types).
DTYPES = [rtx.bool, rtx.uint8, rtx.int8, rtx.int16, rtx.int32, rtx.int64, rtx.float16, rtx.bfloat16, rtx.float32,
          rtx.float64, rtx.complex64, rtx.complex128]


def T(values, dtype, zero_dim=False):
    t = rtx.tensor(values).to(dtype)
    return t.reshape(()) if zero_dim else t


# ---- results PyTorch's promotion rules give (torch docs: "Type promotion"; c10 promoteTypes) ------------

KNOWN = [
    # (a, b, op, expected dtype)
    (lambda: T([1, 2], rtx.int32), 2.5, "add", rtx.float32),
    (lambda: T([1, 2], rtx.int64), lambda: T([1, 2], rtx.float16), "add", rtx.float16),
    (lambda: T([1, 2], rtx.float32), lambda: T([2], rtx.float64, zero_dim=True), "add", rtx.float32),
    (lambda: T([1, 2], rtx.uint8), lambda: T([1, 2], rtx.int8), "add", rtx.int16),
    (lambda: T([True, False], rtx.bool), lambda: T([True, True], rtx.bool), "add", rtx.bool),
    (lambda: T([1, 2], rtx.complex64), lambda: T([1, 2], rtx.float64), "add", rtx.complex128),
    (lambda: T([1, 2], rtx.float16), lambda: T([1, 2], rtx.bfloat16), "add", rtx.float32),
    (lambda: T([1, 2], rtx.int64), lambda: T([3, 4], rtx.int64), "div", rtx.float32),
    (lambda: T([1, 2], rtx.int8), lambda: T([3], rtx.int64, zero_dim=True), "add", rtx.int8),
    (lambda: T([1, 2], rtx.int8), lambda: T([3], rtx.float64, zero_dim=True), "mul", rtx.float64),
    (lambda: T([1, 2], rtx.complex64), lambda: T([3], rtx.float64, zero_dim=True), "add", rtx.complex64),
    # PyTorch gives complex32 (ComplexHalf) here; rtx has no complex32 and uses complex64
    (lambda: T([1, 2], rtx.float16), lambda: T([3], rtx.complex128, zero_dim=True), "add", rtx.complex64),
    (lambda: T([1, 2], rtx.int32), 5, "mul", rtx.int32),
    (lambda: T([1, 2], rtx.float16), 1.5, "add", rtx.float16),
    (lambda: T([True], rtx.bool), 1, "add", rtx.int64),
    (lambda: T([True], rtx.bool), 1.5, "mul", rtx.float32),
    (lambda: T([1, 2], rtx.int64), 1j, "add", rtx.complex64),
    (lambda: T([1, 2], rtx.float64), 1j, "add", rtx.complex128),
    (lambda: T([1, 2], rtx.bfloat16), lambda: T([1, 2], rtx.int64), "sub", rtx.bfloat16),
    (lambda: T([1, 2], rtx.uint8), -1, "mul", rtx.uint8),
    (lambda: T([1, 2], rtx.int32), lambda: T([1, 2], rtx.int32), "pow", rtx.int32),
    (lambda: T([1, 2], rtx.int32), 2, "floor_divide", rtx.int32),
    (lambda: T([1, 2], rtx.int32), 2, "remainder", rtx.int32),
    (lambda: T([1, 2], rtx.int32), 2, "atan2", rtx.float32),
    (lambda: T([1, 2], rtx.int16), lambda: T([1, 2], rtx.float64), "maximum", rtx.float64),
]


def _op(name):
    return {"add": rtx.add, "sub": rtx.sub, "mul": rtx.mul, "div": rtx.div, "pow": rtx.pow,
            "maximum": rtx.maximum, "floor_divide": rtx.floor_divide, "remainder": rtx.remainder,
            "atan2": rtx.atan2}[name]


@pytest.mark.parametrize("a,b,op,expected", KNOWN)
def test_known_pytorch_promotions(a, b, op, expected):
    a = a() if callable(a) else a
    b = b() if callable(b) else b
    assert _op(op)(a, b).dtype == expected
    assert _op(op)(b, a).dtype == expected if op in ("add", "mul", "maximum") else True
    if op in ("add", "mul", "sub", "maximum", "pow", "floor_divide", "remainder"):
        assert rtx.result_type(a, b) == expected


def test_true_division_of_integers_follows_the_default_dtype():
    a, b = T([1, 2], rtx.int64), T([3, 4], rtx.int32)
    assert (a / b).dtype == rtx.float32
    rtx.set_default_dtype(rtx.float64)
    try:
        assert (a / b).dtype == rtx.float64 and (a + 0.5).dtype == rtx.float64
    finally:
        rtx.set_default_dtype(rtx.float32)


# ---- properties over all dtype pairs ---------------------------------------------------------------

OPS = ["add", "mul", "sub", "maximum", "where"]


def _apply(op, a, b):
    if op == "where":
        cond = rtx.tensor([True, False, True])
        cond = cond if (isinstance(a, rtx.Tensor) and a.ndim) or (isinstance(b, rtx.Tensor) and b.ndim) \
            else cond[0]
        return rtx.where(cond, a, b)
    return _op(op)(a, b)


def _ok_for(op, da, db):
    bool_in = rtx.bool in (da, db)
    if op == "sub" and bool_in:
        return False  # PyTorch refuses bool subtraction
    if op == "maximum" and (da.is_complex or db.is_complex):
        return False  # complex numbers are not ordered
    return True


def _sample(dtype, zero_dim):
    vals = [1, 0, 1] if dtype is rtx.bool else [1, 2, 3]
    return T(vals[:1] if zero_dim else vals, dtype, zero_dim)


@settings(max_examples=150, deadline=None)
@given(da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES), za=st.booleans(), zb=st.booleans(),
       op=st.sampled_from(OPS))
def test_result_type_matches_ops(da, db, za, zb, op):
    if not _ok_for(op, da, db):
        return
    a, b = _sample(da, za), _sample(db, zb)
    expected = rtx.result_type(a, b)
    assert _apply(op, a, b).dtype == expected
    assert _apply(op, b, a).dtype == expected
    if not za and not zb or za and zb:  # equal standing: result_type is promote_types
        assert expected == rtx.promote_types(da, db)


@settings(max_examples=100, deadline=None)
@given(da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES))
def test_promote_types_is_a_symmetric_lattice(da, db):
    p = rtx.promote_types(da, db)
    assert p == rtx.promote_types(db, da)
    assert rtx.promote_types(p, da) == p and rtx.promote_types(p, db) == p
    assert rtx.promote_types(da, da) == da


@settings(max_examples=150, deadline=None)
@given(dt=st.sampled_from(DTYPES), za=st.booleans(),
       scalar=st.one_of(st.booleans(), st.integers(0, 5), st.floats(0.5, 4.0), st.complex_numbers(
           min_magnitude=0.5, max_magnitude=4.0, allow_nan=False, allow_infinity=False)),
       op=st.sampled_from(["add", "mul", "where"]), flip=st.booleans())
def test_python_scalars_follow_result_type(dt, za, scalar, op, flip):
    t = _sample(dt, za)
    a, b = (scalar, t) if flip else (t, scalar)
    out = _apply(op, a, b)
    assert out.dtype == rtx.result_type(t, scalar)
    # the scalar never raises a tensor's dtype within its own kind
    kind = lambda d: 0 if d is rtx.bool else 3 if d.is_complex else 2 if d.is_floating_point else 1  # noqa: E731
    s_kind = {bool: 0, int: 1, float: 2, complex: 3}[type(scalar)]
    if s_kind <= kind(dt):
        assert out.dtype == dt


@settings(max_examples=60, deadline=None)
@given(da=st.sampled_from(DTYPES[:6]), db=st.sampled_from(DTYPES[:6]))
def test_integer_true_division_is_float32(da, db):
    a, b = _sample(da, False), _sample(db, False)
    assert (a / b).dtype == rtx.float32


@settings(max_examples=60, deadline=None)
@given(da=st.sampled_from(DTYPES[1:]), db=st.sampled_from(DTYPES[1:]))
def test_values_are_computed_in_the_promoted_dtype(da, db):
    a, b = _sample(da, False), _sample(db, False)
    out = a * b + a
    target = rtx.promote_types(da, db).np
    an, bn = np.asarray(a.numpy(), target), np.asarray(b.numpy(), target)
    assert_close(out, an * bn + an, check_dtype=False)


# ---- broadcasting ----------------------------------------------------------------------------------


def _np_sum_to(g, shape):
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


BROADCAST_OPS = {
    # name: (rtx op, numpy op, d/da, d/db as numpy of (a, b))
    "add": (rtx.add, np.add, lambda a, b: np.ones_like(a + b), lambda a, b: np.ones_like(a + b)),
    "sub": (rtx.sub, np.subtract, lambda a, b: np.ones_like(a + b), lambda a, b: -np.ones_like(a + b)),
    "mul": (rtx.mul, np.multiply, lambda a, b: b + 0 * a, lambda a, b: a + 0 * b),
    "div": (rtx.div, np.divide, lambda a, b: 1 / b + 0 * a, lambda a, b: -a / b ** 2),
    "pow": (rtx.pow, np.power, lambda a, b: b * a ** (b - 1), lambda a, b: a ** b * np.log(a)),
    "maximum": (rtx.maximum, np.maximum, lambda a, b: (a > b) + 0.0 * b, lambda a, b: (b > a) + 0.0 * a),
    "atan2": (rtx.atan2, np.arctan2, lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b)),
    "where": (lambda a, b: rtx.where(a > 1.2, a, b), lambda a, b: np.where(a > 1.2, a, b),
              lambda a, b: (a > 1.2) + 0.0 * b, lambda a, b: (a <= 1.2) + 0.0 * a),
}


@settings(max_examples=120, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3),
       op=st.sampled_from(sorted(BROADCAST_OPS)), seed=st.integers(0, 2 ** 16))
def test_broadcasting(shapes, op, seed):
    (sa, sb), out_shape = shapes.input_shapes, shapes.result_shape
    fn, ref, da, db = BROADCAST_OPS[op]
    g = np.random.default_rng(seed)
    a = np.asarray(g.uniform(0.5, 2.0, sa) + 0.01 * g.permutation(int(np.prod(sa))).reshape(sa))
    b = np.asarray(g.uniform(0.5, 2.0, sb) + 0.013 * g.permutation(int(np.prod(sb))).reshape(sb))  # no ties
    ta = rtx.tensor(a, requires_grad=True)
    tb = rtx.tensor(b, requires_grad=True)
    out = fn(ta, tb)
    assert tuple(out.shape) == tuple(np.broadcast_shapes(sa, sb)) == tuple(out_shape)
    assert_close(out.detach(), ref(a, b))
    out.sum().backward()
    assert tuple(ta.grad.shape) == sa and tuple(tb.grad.shape) == sb
    ab, bb = np.broadcast_arrays(a, b)
    assert_close(ta.grad, _np_sum_to(np.broadcast_to(da(ab, bb), out_shape), sa), rtol=1e-10, atol=1e-12)
    assert_close(tb.grad, _np_sum_to(np.broadcast_to(db(ab, bb), out_shape), sb), rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=3), lead=st.integers(0, 2))
def test_incompatible_shapes_raise(shape, lead):
    bad = (2,) * lead + shape[:-1] + (shape[-1] + 1,)
    with pytest.raises((RuntimeError, ValueError), match="broadcast|size|shape"):
        rtx.zeros(*shape) + rtx.zeros(*bad)
    with pytest.raises((RuntimeError, ValueError), match="broadcast|size|shape"):
        rtx.maximum(rtx.zeros(*bad, dtype=rtx.int64), rtx.zeros(*shape, dtype=rtx.int64))
