"""Comparisons, logical and bitwise ops. None is differentiable; all return new tensors."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import data, operands
from rtx._tensor.tensor import Tensor


def _binary(name, ufunc, doc):
    class Op(Primitive, op=name):
        @staticmethod
        def forward(ctx, a, b):
            return ufunc(data(a), data(b))

    Op.__name__ = name

    def op(input, other, *, out=None):
        a, b = operands(input, other, name)
        result = Op.apply(a, b)
        if out is not None:
            out.copy_(result)
            return out
        return result

    op.__name__ = name
    op.__doc__ = doc
    return op


eq = _binary("eq", np.equal, "Elementwise ==.")
ne = _binary("ne", np.not_equal, "Elementwise !=.")
lt = _binary("lt", np.less, "Elementwise <.")
le = _binary("le", np.less_equal, "Elementwise <=.")
gt = _binary("gt", np.greater, "Elementwise >.")
ge = _binary("ge", np.greater_equal, "Elementwise >=.")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
logical_and = _binary("logical_and", np.logical_and, "Elementwise logical and.")
logical_or = _binary("logical_or", np.logical_or, "Elementwise logical or.")
logical_xor = _binary("logical_xor", np.logical_xor, "Elementwise logical xor.")


def _int_binary(name, ufunc):
    base = _binary(name, ufunc, f"Elementwise {name} (integer and bool tensors).")

    def op(input, other, *, out=None):
        for t in (input, other):
            if type(t) is Tensor and t._data.dtype.kind not in "iub":
                raise RuntimeError(f"\"{name}_cpu\" not implemented for '{t.dtype.name.capitalize()}': "
                                   f"{name} needs integer or bool tensors")
        return base(input, other, out=out)

    op.__name__ = name
    return op


bitwise_and = _int_binary("bitwise_and", np.bitwise_and)
bitwise_or = _int_binary("bitwise_or", np.bitwise_or)
bitwise_xor = _int_binary("bitwise_xor", np.bitwise_xor)
bitwise_left_shift = _int_binary("bitwise_left_shift", np.left_shift)
bitwise_right_shift = _int_binary("bitwise_right_shift", np.right_shift)


class _Unary(Primitive):
    fn = None

    @classmethod
    def forward(cls, ctx, a):
        return cls.fn(a._data)


def _unary(name, fn, int_only=False):
    op_cls = type(name, (_Unary,), {"fn": staticmethod(fn)})

    def op(input):
        if int_only and input._data.dtype.kind not in "iub":
            raise RuntimeError(f"{name} is only supported for integer and bool tensors, got {input.dtype}")
        return op_cls.apply(input)

    op.__name__ = name
    return op


logical_not = _unary("logical_not", np.logical_not)
bitwise_not = _unary("bitwise_not", np.invert, int_only=True)
isnan = _unary("isnan", np.isnan)
isinf = _unary("isinf", np.isinf)
isfinite = _unary("isfinite", np.isfinite)
isposinf = _unary("isposinf", np.isposinf)
isneginf = _unary("isneginf", np.isneginf)
signbit = _unary("signbit", np.signbit)
isreal = _unary("isreal", lambda a: np.imag(a) == 0 if a.dtype.kind == "c" else np.ones(a.shape, bool))


def equal(input, other) -> bool:
    """True if both tensors have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = operands(input, other, "isclose")
    return Tensor._make(np.isclose(data(a), data(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'greater', 'greater_equal', 'less', 'less_equal', 'not_equal',
           'logical_and', 'logical_or', 'logical_xor', 'logical_not', 'bitwise_and', 'bitwise_or', 'bitwise_xor',
           'bitwise_not', 'bitwise_left_shift', 'bitwise_right_shift', 'isnan', 'isinf', 'isfinite', 'isposinf',
           'isneginf', 'signbit', 'isreal', 'equal', 'allclose', 'isclose']
