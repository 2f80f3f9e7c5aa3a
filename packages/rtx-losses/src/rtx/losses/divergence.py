"""kl_div."""
from __future__ import annotations

import warnings

import rtx
from rtx.extend import autocast as _autocast
from rtx.losses._reduction import apply_reduction, legacy_reduction

__all__ = ["kl_div"]


@legacy_reduction
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """input: log-probabilities; target: probabilities (or log-probabilities with log_target).
    Pointwise xlogy(target, target) - target * input: 0 where target is 0 (and input finite)."""
    if _autocast.active:  # on autocast's float32 list
        input, target = _autocast.fp32("kl_div", input, target)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # PyTorch's formula, so its gradients at target == 0 are PyTorch's too (xlogy's)
        loss = rtx.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return apply_reduction(loss, reduction)
