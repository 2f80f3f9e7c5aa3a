"""Padding layers: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad (1-D, 2-D, 3-D).
`padding` is an int (all sides) or a tuple in F.pad's order: (left, right[, top, bottom[, front, back]])."""
from __future__ import annotations

from rtx.nn._functional import misc as F
from rtx.nn.modules.module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


def _padding(padding, nd):
    if isinstance(padding, (list, tuple)):
        t = tuple(int(p) for p in padding)
        if len(t) != 2 * nd:
            raise ValueError(f"expected padding to be an int or a tuple of {2 * nd} ints, got {padding}")
        return t
    return (int(padding),) * (2 * nd)


class _PadNd(Module):
    _nd = 2
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self._nd)

    def forward(self, input):
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise ValueError(f"{type(self).__name__}: expected {nd + 1}D or {nd + 2}D input (got {input.ndim}D input)")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(Module):
    _nd = 2

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _padding(padding, self._nd)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    _nd = 1


class ZeroPad2d(_ZeroPadNd):
    _nd = 2


class ZeroPad3d(_ZeroPadNd):
    _nd = 3


class ReflectionPad1d(_PadNd):
    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _nd, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    _nd, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _nd, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _nd, _mode = 3, "circular"
