"""Fast paths for the Python operators on the commonest case: two tensors of one dtype on
one device, or a float tensor and a Python number. They skip argument parsing and promotion
(which cannot change anything there) and go straight to the array op or the Primitive.
Everything else falls through to the general functions in ops/arith.py, and so does every
call while a recording hook (rtx.extend.recording) follows this thread: it sees Primitives."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import _active, _local
from rtx._tensor.ops import arith
from rtx._tensor.tensor import Tensor
from rtx.autograd.grad_mode import _state

_EMPTY = {}


def check_broadcast(sa, sb):
    """PyTorch's error for shapes that do not broadcast (NumPy's would be a ValueError)."""
    for i in range(1, min(len(sa), len(sb)) + 1):
        a, b = sa[-i], sb[-i]
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                               f"dimension {max(len(sa), len(sb)) - i}")


def _make_fast(prim, general, ufunc, float_only=False):
    apply_graph = prim._apply_with_graph
    make = Tensor._make

    def op(self, other):
        if _active[0] and _local.hook is not None:
            return general(self, other)
        d = self._data
        if type(other) is Tensor:
            o = other._data
            if d.dtype is o.dtype and type(d) is type(o) and (not float_only or d.dtype.kind == "f"):
                if d.shape != o.shape:
                    check_broadcast(d.shape, o.shape)
                if _state.enabled and (self.requires_grad or other.requires_grad):
                    return apply_graph((self, other), _EMPTY)
                return make(ufunc(d, o))
        elif (type(other) is float or type(other) is int) and d.dtype.kind == "f":
            if _state.enabled and self.requires_grad:
                return apply_graph((self, other), _EMPTY)
            return make(ufunc(d, other))
        return general(self, other)

    def rop(self, other):
        if _active[0] and _local.hook is not None:
            return general(other, self)
        d = self._data
        if (type(other) is float or type(other) is int) and d.dtype.kind == "f":
            if _state.enabled and self.requires_grad:
                return apply_graph((other, self), _EMPTY)
            return make(ufunc(other, d))
        return general(other, self)

    return op, rop


def _pow(self, other):
    """x ** number for a float tensor: what pow() does there (no promotion can apply), minus the
    argument checks; the number is a 0-d array of x's dtype, as Pow's forward makes it."""
    d = self._data
    if (type(other) is float or type(other) is int) and d.dtype.kind == "f" and not (_active[0] and
                                                                                      _local.hook is not None):
        if _state.enabled and self.requires_grad:
            return arith.Pow._apply_with_graph((self, other), _EMPTY)
        return Tensor._make(arith.Pow.fn(d, arith._number_as(other, d)))
    return arith.pow(self, other)


def install():
    for name, prim, general, ufunc, float_only in (
            ("add", arith.Add, arith.add, np.add, False),
            ("sub", arith.Sub, arith.sub, np.subtract, True),
            ("mul", arith.Mul, arith.mul, np.multiply, False),
            ("truediv", arith.Div, arith.div, np.true_divide, True)):
        op, rop = _make_fast(prim, general, ufunc, float_only)
        setattr(Tensor, f"__{name}__", op)
        setattr(Tensor, f"__r{name}__", rop)
    Tensor.__pow__ = _pow
