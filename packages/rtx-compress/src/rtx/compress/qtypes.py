"""The quantized dtypes rtx.compress works with: rtx.qint8, rtx.quint8 and rtx.qint32 (defined in
rtx.runtime.dtypes, exported at the rtx root as torch.qint8 is). rtx has no quantized tensors, so
a quantized dtype names an integer range and the plain integer dtype the values are stored in;
the quantized values are those integer tensors, kept next to their scale and zero point.
"""
from __future__ import annotations

import numpy as np

from rtx.runtime.dtypes import dtype, qint8, qint32, quint8

__all__ = ["qint8", "quint8", "qint32", "as_qdtype", "storage", "qrange"]

# the NumPy type each one is stored in
_STORAGE = {qint8: np.dtype(np.int8), quint8: np.dtype(np.uint8), qint32: np.dtype(np.int32)}


def as_qdtype(d) -> dtype:
    """rtx.qint8 / quint8 / qint32, their names ("qint8"), or rtx.int8 / uint8 / int32 for the same ranges."""
    if isinstance(d, dtype) and d in _STORAGE:
        return d
    name = d if isinstance(d, str) else getattr(d, "name", None)
    got = {"qint8": qint8, "quint8": quint8, "qint32": qint32, "int8": qint8, "uint8": quint8,
           "int32": qint32}.get(name)
    if got is None:
        raise TypeError(f"expected a quantized dtype (rtx.qint8, rtx.quint8 or rtx.qint32), got {d!r}")
    return got


def storage(d) -> np.dtype:
    """The NumPy integer type that holds values of the quantized dtype d (int8 for qint8)."""
    return _STORAGE[as_qdtype(d)]


def qrange(d) -> tuple[int, int]:
    """The full integer range (qmin, qmax) of the quantized dtype d: (-128, 127) for qint8."""
    info = np.iinfo(storage(d))
    return int(info.min), int(info.max)
