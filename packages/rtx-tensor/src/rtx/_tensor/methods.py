"""Attach the ops to Tensor as methods and Python operators, PyTorch's way: x.sum(),
x.exp_(), x @ y, x[idx] = v. Every method is the module-level function with self first."""
from __future__ import annotations

from rtx._tensor import fastpath
from rtx._tensor.ops import (
    activation,
    arith,
    compare,
    convert,
    creation,
    index,
    inplace,
    linalg_ops,
    matmul,
    random,
    reduce,
    shape,
    sort,
    unary,
)
from rtx._tensor.tensor import Tensor

# Each op module lists the functions that are also Tensor methods in METHODS.
_MODULES = [arith, compare, unary, reduce, shape, index, sort, matmul, linalg_ops, convert]
# Out-of-place op -> its in-place method, with a NumPy ufunc for the no-graph fast path.
import numpy as _np  # noqa: E402

_INPLACE_BINARY = {"add": _np.add, "sub": _np.subtract, "mul": _np.multiply, "div": None, "pow": None,
                   "fmod": None, "remainder": None, "maximum": None, "minimum": None, "atan2": None,
                   "lerp": None, "floor_divide": None, "subtract": _np.subtract, "multiply": _np.multiply,
                   "divide": None, "true_divide": None, "bitwise_and": _np.bitwise_and,
                   "bitwise_or": _np.bitwise_or, "bitwise_xor": _np.bitwise_xor, "logical_and": None,
                   "logical_or": None, "eq": None, "ne": None, "lt": None, "le": None, "gt": None, "ge": None}


def attach():
    for module in _MODULES:
        for name in module.METHODS:
            setattr(Tensor, name, getattr(module, name))
    # Attributes whose Tensor form differs from the function (properties such as .real, methods
    # with another signature such as x.where(cond, y)); set last, so they win over METHODS.
    for module in _MODULES:
        for name, attr in getattr(module, "TENSOR_ATTRS", {}).items():
            setattr(Tensor, name, attr)


def _lerp_(self, end, weight):
    return inplace.write_result(self, arith.lerp(inplace._old_self(self) if inplace._recording(self, end)
                                                 else self, end, weight))


def _install():
    attach()
    for name, ufunc in _INPLACE_BINARY.items():
        setattr(Tensor, name + "_", inplace.inplace_binary(getattr(arith, name, None) or getattr(compare, name),
                                                           ufunc))
    Tensor.lerp_ = _lerp_
    for name in list(unary.OPS) + ["clamp", "clip", "clamp_min", "clamp_max", "round"]:
        setattr(Tensor, name + "_", inplace.inplace_unary(getattr(unary, name)))
    for name, fn in random.INPLACE_RANDOM.items():
        setattr(Tensor, name, fn)
    Tensor.softmax = lambda self, dim, dtype=None: activation.softmax(self, dim, dtype=dtype)
    Tensor.log_softmax = lambda self, dim, dtype=None: activation.log_softmax(self, dim, dtype=dtype)
    Tensor.copy_ = inplace.copy_
    Tensor.fill_ = inplace.fill_
    Tensor.zero_ = inplace.zero_
    Tensor.set_ = inplace.set_
    Tensor.__setitem__ = inplace.setitem
    Tensor.__getitem__ = shape.getitem
    Tensor.type = convert.type_
    for name, fn in convert.CASTS.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))))
    Tensor.mT = property(lambda self: self.transpose(-2, -1))
    Tensor.H = property(lambda self: self.T.conj() if self.is_complex() else self.T)
    Tensor.mH = property(lambda self: self.mT.conj() if self.is_complex() else self.mT)
    Tensor._stack = staticmethod(shape.stack)
    Tensor._zeros = staticmethod(lambda shape_, dtype, device: creation.zeros(tuple(shape_), dtype=dtype,
                                                                              device=device))

    # ---- operators ---- (+, -, *, /, their reflections and **: fastpath.install() below)
    Tensor.__iadd__ = Tensor.add_
    Tensor.__isub__ = Tensor.sub_
    Tensor.__imul__ = Tensor.mul_
    Tensor.__itruediv__ = Tensor.div_
    Tensor.__floordiv__ = lambda self, other: arith.floor_divide(self, other)
    Tensor.__rfloordiv__ = lambda self, other: arith.floor_divide(other, self)
    Tensor.__ifloordiv__ = Tensor.floor_divide_
    Tensor.__mod__ = lambda self, other: arith.remainder(self, other)
    Tensor.__rmod__ = lambda self, other: arith.remainder(other, self)
    Tensor.__imod__ = Tensor.remainder_
    Tensor.__rpow__ = lambda self, other: arith.pow(other, self)
    Tensor.__ipow__ = Tensor.pow_
    Tensor.__matmul__ = lambda self, other: matmul.matmul(self, other)
    Tensor.__rmatmul__ = lambda self, other: matmul.matmul(other, self)
    Tensor.__neg__ = lambda self: unary.neg(self)
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = lambda self: unary.abs(self)
    Tensor.__invert__ = lambda self: (compare.logical_not(self) if self._data.dtype == _np.bool_
                                      else compare.bitwise_not(self))
    Tensor.__eq__ = lambda self, other: compare.eq(self, other)
    Tensor.__ne__ = lambda self, other: compare.ne(self, other)
    Tensor.__lt__ = lambda self, other: compare.lt(self, other)
    Tensor.__le__ = lambda self, other: compare.le(self, other)
    Tensor.__gt__ = lambda self, other: compare.gt(self, other)
    Tensor.__ge__ = lambda self, other: compare.ge(self, other)
    Tensor.__and__ = lambda self, other: _logical_or_bitwise(self, other, "and")
    Tensor.__rand__ = lambda self, other: _logical_or_bitwise(other, self, "and")
    Tensor.__or__ = lambda self, other: _logical_or_bitwise(self, other, "or")
    Tensor.__ror__ = lambda self, other: _logical_or_bitwise(other, self, "or")
    Tensor.__xor__ = lambda self, other: _logical_or_bitwise(self, other, "xor")
    Tensor.__rxor__ = lambda self, other: _logical_or_bitwise(other, self, "xor")
    Tensor.__iand__ = Tensor.bitwise_and_
    Tensor.__ior__ = Tensor.bitwise_or_
    Tensor.__ixor__ = Tensor.bitwise_xor_
    Tensor.__lshift__ = lambda self, other: compare.bitwise_left_shift(self, other)
    Tensor.__rshift__ = lambda self, other: compare.bitwise_right_shift(self, other)
    Tensor.__hash__ = lambda self: id(self)

    # ---- new_* ----
    Tensor.new_tensor = lambda self, data, dtype=None, device=None, requires_grad=False: creation.tensor(
        data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    Tensor.new_zeros = lambda self, *size, dtype=None, device=None, requires_grad=False: creation.zeros(
        *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    Tensor.new_ones = lambda self, *size, dtype=None, device=None, requires_grad=False: creation.ones(
        *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    Tensor.new_empty = lambda self, *size, dtype=None, device=None, requires_grad=False: creation.empty(
        *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
    Tensor.new_full = lambda self, size, fill_value, dtype=None, device=None, requires_grad=False: creation.full(
        size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _logical_or_bitwise(a, b, op):
    t = a if type(a) is Tensor else b
    if t._data.dtype == _np.bool_ and (type(b) is not Tensor or b._data.dtype == _np.bool_) and \
            (type(a) is not Tensor or a._data.dtype == _np.bool_):
        return getattr(compare, "logical_" + op)(a, b)
    return getattr(compare, "bitwise_" + op)(a, b)


_install()
fastpath.install()
