"""Devices and the array module: numpy for 'cpu', cupy for 'cuda:N'. The only place (with
rtx-kernel) that asks whether an array is NumPy or CuPy."""
from __future__ import annotations

import sys

import numpy as np


class device:
    """rtx.device('cpu' | 'cuda' | 'cuda:N' | ('cuda', N)); also a context manager that sets
    the default device, like torch.device."""

    __slots__ = ("type", "index", "_prev")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int):
            type, index = "cuda", type
        elif isinstance(type, str) and ":" in type:
            if index is not None:
                raise ValueError(f"device string {type!r} already has an index; got index={index} too")
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}' (expected 'cpu', 'cuda' or 'cuda:N')")
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        self._prev = _default_device[0]
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        _default_device[0] = self._prev


CPU = device("cpu")
_cuda_devices: dict[int, device] = {}
_default_device = [CPU]


def as_device(d) -> device:
    """Normalise to a device with an index for CUDA (the current device when none is given)."""
    if d is None:
        return _default_device[0]
    if d is CPU:
        return d
    if not isinstance(d, device):
        d = device(d)
    if d.type == "cpu":
        return CPU
    index = d.index if d.index is not None else current_cuda_index()
    dev = _cuda_devices.get(index)
    if dev is None:
        dev = _cuda_devices[index] = device("cuda", index)
    return dev


def get_default_device() -> device:
    return _default_device[0]


def set_default_device(d) -> None:
    d = as_device(d) if d is not None else CPU
    if d.type == "cuda":
        require_cuda(d)
    _default_device[0] = d


def current_cuda_index() -> int:
    if "cupy" not in sys.modules:
        return 0
    return sys.modules["cupy"].cuda.runtime.getDevice()


def cupy():
    """Import CuPy on first use (0.2-1 s), with an error that says how to get it."""
    try:
        import cupy as cp
    except ImportError:
        raise RuntimeError("CUDA support needs CuPy: pip install 'rtx-runtime[cuda12]' (or [cuda13])") from None
    return cp


def require_cuda(d: device) -> None:
    from rtx.runtime import cuda
    if not cuda.is_available():
        raise RuntimeError(f"device {d} requested but CUDA is not available "
                           "(no CuPy, no driver or no GPU; rtx.cuda.is_available() is False)")
    if d.index is not None and d.index >= cuda.device_count():
        raise RuntimeError(f"device {d} requested but only {cuda.device_count()} CUDA device(s) are visible")


def array_module(array):
    """numpy or cupy, whichever owns `array` (Chainer's get_array_module)."""
    if type(array) is np.ndarray or isinstance(array, (np.ndarray, np.generic)):
        return np
    return sys.modules["cupy"]


def device_of(array) -> device:
    if isinstance(array, (np.ndarray, np.generic)):
        return CPU
    return as_device(device("cuda", array.device.id))


def module_for(d: device):
    return np if d.type == "cpu" else cupy()


def to_device(array, d: device):
    """Copy `array` to device `d` (no copy when it is already there)."""
    if d.type == "cpu":
        if isinstance(array, np.ndarray):
            return array
        return array.get()
    cp = cupy()
    with cp.cuda.Device(d.index):
        return cp.asarray(array)
