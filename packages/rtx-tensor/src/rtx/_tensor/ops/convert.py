"""Moving between devices and dtypes: Tensor.to, cpu/cuda, float/double/half/long/..., type."""
from __future__ import annotations

import numpy as np

from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt
from rtx.runtime.devices import as_device, device, require_cuda, to_device


class ToDevice(Primitive):
    @staticmethod
    def forward(ctx, a, *, target):
        ctx.source = a.device
        return to_device(a._data, target)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.source)


def _parse_to(args, kwargs):
    dev = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if type(a) is Tensor:
            dev, dtype = a.device, a.dtype
        elif isinstance(a, (_dt.dtype, type)) or (isinstance(a, str) and (a in _dt._BY_NAME or a in _dt.ALIASES)):
            dtype = a
        elif isinstance(a, (str, device, int)):
            dev = a
        elif isinstance(a, bool):
            pass
        elif a is not None:
            dtype = a
    return dev, dtype, copy


def to(self, *args, **kwargs):
    dev, dtype, copy = _parse_to(args, dict(kwargs))
    out = self
    if dtype is not None:
        out = cast(out, _dt.as_dtype(dtype).np)
    if dev is not None:
        target = as_device(dev)
        if target != out.device:
            if target.type == "cuda":
                require_cuda(target)
                from rtx._tensor.ops.creation import cuda_first_use
                cuda_first_use()
            out = ToDevice.apply(out, target=target)
    if copy and out is self:
        out = out.clone()
    return out


def cpu(self):
    return to(self, "cpu")


def cuda(self, device=None, non_blocking=False):
    return to(self, "cuda" if device is None else as_device(device if not isinstance(device, int)
                                                             else f"cuda:{device}"))


def _caster(dtype):
    def method(self, memory_format=None):
        return cast(self, dtype.np)
    method.__name__ = dtype.name
    return method


CASTS = {
    "float": _caster(_dt.float32), "double": _caster(_dt.float64), "half": _caster(_dt.float16),
    "bfloat16": _caster(_dt.bfloat16), "long": _caster(_dt.int64), "int": _caster(_dt.int32),
    "short": _caster(_dt.int16), "char": _caster(_dt.int8), "byte": _caster(_dt.uint8),
    "bool": _caster(_dt.bool_), "cfloat": _caster(_dt.complex64), "cdouble": _caster(_dt.complex128),
}

_LEGACY = {"torch.FloatTensor": _dt.float32, "torch.DoubleTensor": _dt.float64, "torch.LongTensor": _dt.int64,
           "torch.IntTensor": _dt.int32, "torch.BoolTensor": _dt.bool_, "torch.HalfTensor": _dt.float16}


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return f"rtx.{'cuda.' if self.is_cuda else ''}{self.dtype.name.capitalize()}Tensor"
    if isinstance(dtype, str) and dtype in _LEGACY:
        dtype = _LEGACY[dtype]
    return cast(self, _dt.as_dtype(dtype).np)


def type_as(self, other):
    return cast(self, other._data.dtype)


def numpy_dtype(self):
    return np.dtype(self._data.dtype)


# Functions that are also Tensor methods (methods.py attaches them).
METHODS = ['to', 'cpu', 'cuda', 'type_as']
