"""Reductions shared by every loss: 'none' | 'mean' | 'sum', and the legacy size_average/reduce."""
from __future__ import annotations

import functools
import warnings


def apply_reduction(loss, reduction: str):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction (expected 'none', 'mean' or 'sum')")


def legacy_get_string(size_average, reduce_, emit_warning=True) -> str:
    if size_average is None:
        size_average = True
    if reduce_ is None:
        reduce_ = True
    if size_average and reduce_:
        return "mean"
    if reduce_:
        return "sum"
    return "none"


def check_same_size(input, target, name):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{name}: Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is not supported; please ensure they have the same size.")


def legacy_reduction(fn):
    """Accept PyTorch's deprecated size_average=/reduce= arguments by turning them into reduction=."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        size_average = kwargs.pop("size_average", None)
        reduce_ = kwargs.pop("reduce", None)
        if size_average is not None or reduce_ is not None:
            warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                          f"{legacy_get_string(size_average, reduce_)}' instead.", stacklevel=2)
            kwargs["reduction"] = legacy_get_string(size_average, reduce_)
        return fn(*args, **kwargs)
    return wrapper
