"""Quantized element types: rtx.compress.qint8, quint8 and qint32.

rtx-tensor has no quantized dtypes (PyTorch's torch.qint8 is a tensor dtype that carries a scale
and zero point); rtx keeps quantized values in plain int8/uint8/int32 arrays next to their scale
and zero point, so these objects only name the integer range and the storage type.
"""
from __future__ import annotations

import numpy as np


class qdtype:
    """A quantized integer type: its storage (a NumPy dtype) and its full range [qmin, qmax]."""

    __slots__ = ("name", "np", "qmin", "qmax")

    def __init__(self, name, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)
        info = np.iinfo(self.np)
        self.qmin, self.qmax = int(info.min), int(info.max)

    def __repr__(self):
        return f"rtx.compress.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    @property
    def is_signed(self):
        return self.qmin < 0


qint8 = qdtype("qint8", np.int8)
quint8 = qdtype("quint8", np.uint8)
qint32 = qdtype("qint32", np.int32)
_ALL = {d.name: d for d in (qint8, quint8, qint32)}


def _by_name(name):
    return _ALL[name]


def as_qdtype(d) -> qdtype:
    """qint8/quint8/qint32, or their names ("qint8"), or rtx.int8/rtx.uint8 for the same ranges."""
    if isinstance(d, qdtype):
        return d
    name = d if isinstance(d, str) else getattr(d, "name", None)
    got = _ALL.get(name) or {"int8": qint8, "uint8": quint8, "int32": qint32}.get(name)
    if got is None:
        raise TypeError(f"expected a quantized dtype (rtx.compress.qint8, quint8 or qint32), got {d!r}")
    return got
