"""Regression losses: mse, l1, smooth_l1, huber, poisson_nll, gaussian_nll."""
from __future__ import annotations

import math

from rtx.extend import autocast as _autocast
from rtx.losses._reduction import apply_reduction, check_same_size, legacy_reduction

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "poisson_nll_loss", "gaussian_nll_loss"]


def _warn_broadcast(input, target, name):
    if tuple(input.shape) != tuple(target.shape):
        import warnings
        warnings.warn(f"{name}: Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


@legacy_reduction
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _autocast.active:  # on autocast's float32 list
        input, target, weight = _autocast.fp32("mse_loss", input, target, weight)
    _warn_broadcast(input, target, "mse_loss")
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return apply_reduction(loss, reduction)


@legacy_reduction
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _autocast.active:  # on autocast's float32 list
        input, target, weight = _autocast.fp32("l1_loss", input, target, weight)
    _warn_broadcast(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return apply_reduction(loss, reduction)


@legacy_reduction
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if _autocast.active:  # on autocast's float32 list
        input, target = _autocast.fp32("smooth_l1_loss", input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_broadcast(input, target, "smooth_l1_loss")
    d = (input - target).abs()
    if beta == 0:
        return apply_reduction(d, reduction)
    loss = _where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return apply_reduction(loss, reduction)


@legacy_reduction
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if _autocast.active:  # on autocast's float32 list
        input, target, weight = _autocast.fp32("huber_loss", input, target, weight)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got {delta}")
    _warn_broadcast(input, target, "huber_loss")
    d = (input - target).abs()
    loss = _where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return apply_reduction(loss, reduction)


def _where(cond, a, b):
    import rtx
    return rtx.where(cond, a, b)


@legacy_reduction
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input, target = _autocast.fp32("poisson_nll_loss", input, target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        # Stirling term, added where target > 1, computed as PyTorch does (its target gradient is NaN
        # where target == 0: 0 * log 0 in the masked-out branch)
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return apply_reduction(loss, reduction)


@legacy_reduction
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if var.ndim == input.ndim - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = var.unsqueeze(-1)
    elif tuple(var.shape) != tuple(input.shape) and not (var.ndim == input.ndim and var.shape[-1] == 1):
        if var.numel() != 1:
            raise ValueError(f"var is of incorrect size: expected {tuple(input.shape)} (or one fewer trailing dim, "
                             f"or last dim 1), got {tuple(var.shape)}")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    # PyTorch clamps var in place under no_grad: the value is clamped, the gradient passes as if it were not
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return apply_reduction(loss, reduction)


check_same_size = check_same_size
