"""Vector functions of rtx.nn.functional: one_hot, normalize, and cosine_similarity,
pairwise_distance, pdist (rtx-tensor's rtx.cosine_similarity, ... re-exported: the losses below
rtx-nn need them). normalize divides by the same p-norm Primitive (op "linalg_vector_norm"),
whose gradient is 0 (not NaN) at a zero vector, as PyTorch's linalg.vector_norm."""
from __future__ import annotations

import math

import numpy as np

from rtx import cosine_similarity, pairwise_distance, pdist
from rtx.extend import Tensor, cast, dims, primitive, raw, wrap
from rtx.extend import autocast as _autocast
from rtx.runtime import array_module
from rtx.runtime import dtypes as _dt

__all__ = ["one_hot", "normalize", "cosine_similarity", "pairwise_distance", "pdist"]

_LinalgVectorNorm = primitive("linalg_vector_norm")


def _float(t, op):
    if type(t) is not Tensor:
        raise TypeError(f"{op}(): expected a Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        if t.is_complex():
            raise RuntimeError(f"{op}(): complex inputs are not supported")
        t = cast(t, _dt.get_default_dtype().np)
    return t


def one_hot(tensor, num_classes=-1):
    """Index tensor of shape (*) -> int64 tensor of shape (*, num_classes) with a 1 at each index.
    num_classes=-1 takes max(tensor) + 1."""
    if type(tensor) is not Tensor:
        raise TypeError(f"one_hot(): argument 'input' must be Tensor, not {type(tensor).__name__}")
    if raw(tensor).dtype != np.int64:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor (int64), got "
                           f"{tensor.dtype}")
    a = raw(tensor)
    xp = array_module(a)
    num_classes = int(num_classes)
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    elif num_classes < -1:
        raise RuntimeError(f"one_hot: num_classes should be -1 or non-negative, got {num_classes}")
    if a.size:
        if int(a.min()) < 0:
            raise RuntimeError(f"Class values must be non-negative (one_hot got {int(a.min())}).")
        if int(a.max()) >= num_classes:
            raise RuntimeError(f"Class values must be smaller than num_classes (one_hot got class {int(a.max())} "
                               f"with num_classes={num_classes}).")
    return wrap((a[..., None] == xp.arange(num_classes)).astype(np.int64))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p, eps) along dim."""
    input = _float(input, "normalize")
    if _autocast.active:  # on CUDA autocast's float32 list
        (input,) = _autocast.fp32("normalize", input)
    p = float(p)
    if math.isnan(p):
        raise RuntimeError("normalize(): p must not be NaN")
    denom = _LinalgVectorNorm.apply(input, p=p, axes=dims(dim, input.ndim, "normalize"), keepdim=True).clamp_min(eps)
    result = input / denom
    if out is not None:
        out.copy_(result)
        return out
    return result
