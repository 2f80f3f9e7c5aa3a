"""Helpers shared by the distributions, as torch.distributions.utils."""
from __future__ import annotations

import numbers
from functools import update_wrapper

import numpy as np

import rtx
from rtx.extend import Tensor

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def finfo(dtype):
    """NumPy's finfo of an rtx floating dtype (eps, tiny, max)."""
    return np.finfo(dtype.np)


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers take the first tensor's dtype and device
    (the default dtype when all are numbers)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        ref = next((v for v in values if isinstance(v, Tensor)), None)
        opts = dict(dtype=rtx.get_default_dtype()) if ref is None else dict(dtype=ref.dtype, device=ref.device)
        # rtx.full, not rtx.tensor: rtx.tensor(0.7, dtype=float64) rounds through float32 today
        values = [v if isinstance(v, Tensor) else rtx.full((), float(v), **opts) for v in values]
    return rtx.broadcast_tensors(*values)


def _as(value, like):
    """`value` (a number or tensor) as a tensor of like's dtype and device."""
    if isinstance(value, Tensor):
        return value.to(like.dtype)
    return rtx.full((), float(value), dtype=like.dtype, device=like.device)


def _standard_normal(shape, dtype, device):
    return rtx.randn(tuple(shape), dtype=dtype, device=device)


def _uniform(shape, dtype, device):
    return rtx.rand(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def log_softmax(logits):
    return logits - logits.logsumexp(-1, keepdim=True)


def set_count_and_probs_or_logits(dist, total_count, probs, logits):
    """Binomial-style construction: exactly one of probs/logits, broadcast against total_count (made
    the parameter's dtype); `_param` is the one given (the other is derived lazily)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    total_count, param = broadcast_all(total_count, value)
    dist.total_count = total_count.to(param.dtype)
    setattr(dist, name, param)
    dist._param = param


def expand_probs_or_logits(dist, new, param_shape):
    """expand(): copy whichever of probs/logits `dist` holds (not the lazily derived one) onto `new`,
    expanded to `param_shape`, with `_param` following it."""
    if "probs" in dist.__dict__:
        new.probs = dist.probs.expand(param_shape)
        new._param = new.probs
    if "logits" in dist.__dict__:
        new.logits = dist.logits.expand(param_shape)
        new._param = new.logits


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return rtx.sigmoid(logits)
    return log_softmax(logits).exp()


def clamp_probs(probs):
    """Clamp to [eps, 1 - eps] so that log and log1p(-p) stay finite."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return rtx.log(ps) - rtx.log1p(-ps)
    return rtx.log(ps)


def softplus(x):
    return rtx.logaddexp(x, rtx.zeros_like(x))


class lazy_property:
    """A property computed on first access and then stored on the instance (so `probs` derived
    from `logits` is computed once, with autograd on as PyTorch does)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with rtx.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.tril_indices(n, diag)
    return mat[..., rtx.tensor(rows), rtx.tensor(cols)]


def vec_to_tril_matrix(vec, diag=0):
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the lower triangular "
                         "part of a square D x D matrix.")
    n = round(n) if isinstance(n, float) else n
    rows, cols = np.tril_indices(n, diag)
    flat = rtx.zeros(tuple(vec.shape[:-1]) + (n * n,), dtype=vec.dtype, device=vec.device)
    index = rtx.tensor(rows * n + cols, device=vec.device).expand(tuple(vec.shape[:-1]) + (m,))
    return flat.scatter(-1, index, vec).reshape(tuple(vec.shape[:-1]) + (n, n))


def bce_with_logits(logits, target):
    """Elementwise binary cross-entropy on logits, stable for large |logits|:
    max(x, 0) - x z + log1p(exp(-|x|))."""
    return logits.clamp(min=0) - logits * target + rtx.log1p(rtx.exp(-logits.abs()))


def nan_where(cond, t):
    return rtx.where(cond, rtx.full_like(t, float("nan")), t)
