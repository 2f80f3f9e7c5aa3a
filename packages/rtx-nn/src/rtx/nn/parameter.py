"""Parameter: a Tensor that a Module registers as a learnable weight.

A Parameter *is* an rtx Tensor (the same class, flagged), not a subclass: the tensor core's
fast paths test `type(t) is Tensor`, and ops on parameters must return plain Tensors anyway.
`isinstance(p, nn.Parameter)` checks the flag through the metaclass, as users expect.
"""
from __future__ import annotations

import rtx
from rtx.extend import Tensor


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return type(obj) is Tensor and obj.__dict__.get("_is_param", False) and \
            (cls is Parameter or obj.__dict__.get("_param_kind") is cls)


class Parameter(metaclass=_ParameterMeta):
    """Parameter(data=None, requires_grad=True): shares memory with `data`."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = rtx.empty(0)
        if type(data) is not Tensor:
            raise TypeError(f"Parameter expects a Tensor, got {type(data).__name__}")
        # rtx's `.data` shares storage and version counter with `data` (as PyTorch's Parameter
        # does), detached, without being recorded as a view of it.
        p = data.data
        p.__dict__["_is_param"] = True
        if cls is not Parameter:
            p.__dict__["_param_kind"] = cls
        if requires_grad:
            p.requires_grad_(True)
        return p


class Buffer:
    """nn.Buffer(data, persistent=True): marks a tensor to be registered as a buffer."""

    def __new__(cls, data, *, persistent=True):
        t = data.detach()
        t.__dict__["_buffer_persistent"] = persistent
        return t


def is_parameter(obj) -> bool:
    return type(obj) is Tensor and obj.__dict__.get("_is_param", False)
