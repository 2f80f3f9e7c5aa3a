"""The thread-local autocast state that ops consult (torch's autocast dispatch key, in one dict).

An op that honours autocast asks `get_autocast_dtype(device_type)` for its inputs' device and, when
it gets a dtype, computes in it; `maybe_autocast(*tensors)` does the casting. Which ops honour it is
listed in rtx.amp's docstring. Thread-local, as in PyTorch: a serving thread's autocast does not
leak into a training thread.
"""
from __future__ import annotations

import threading

from rtx._tensor.tensor import Tensor

__all__ = ["get_autocast_dtype", "is_autocast_enabled", "maybe_autocast", "set_autocast_dtype"]

DEVICE_TYPES = ("cpu", "cuda")


class _State(threading.local):
    def __init__(self):
        self.dtypes = {}  # device type -> the active lower-precision rtx dtype (absent: autocast off)


_state = _State()


def get_autocast_dtype(device_type: str):
    """The dtype autocast asks ops on `device_type` to compute in, or None when autocast is off there."""
    return _state.dtypes.get(device_type)


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    return device_type in _state.dtypes


def set_autocast_dtype(device_type: str, dtype) -> object:
    """Switch autocast on (dtype) or off (None) for device_type; returns the previous value so the
    caller can restore it (autocast's __exit__ does)."""
    if device_type not in DEVICE_TYPES:
        raise ValueError(f"autocast: device_type must be one of {DEVICE_TYPES}, got {device_type!r}")
    previous = _state.dtypes.get(device_type)
    if dtype is None:
        _state.dtypes.pop(device_type, None)
    else:
        _state.dtypes[device_type] = dtype
    return previous


def maybe_autocast(*tensors):
    """The tensors, with every floating one cast (differentiably) to the autocast dtype active for its
    device type; others, and all of them when autocast is off, come back unchanged. Returns a tuple."""
    if not _state.dtypes:
        return tensors
    out = []
    for t in tensors:
        if type(t) is Tensor and t.is_floating_point():
            dtype = _state.dtypes.get(t.device.type)
            if dtype is not None and t.dtype != dtype:
                t = t.to(dtype)
        out.append(t)
    return tuple(out)
