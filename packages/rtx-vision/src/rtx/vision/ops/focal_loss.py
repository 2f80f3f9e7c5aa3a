"""sigmoid_focal_loss as torchvision.ops.sigmoid_focal_loss (RetinaNet, Lin et al. 2017); the
math is rtx-losses' (rtx.nn.functional.sigmoid_focal_loss), this adds torchvision's argument
check."""
from __future__ import annotations

from rtx.losses import functional as _LF

__all__ = ["sigmoid_focal_loss"]


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
    """-alpha_t (1 - p_t)^gamma log(p_t) on logits `inputs` and binary `targets` of the same shape;
    alpha < 0 turns the class weighting off. reduction: 'none' | 'mean' | 'sum'."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', "
                         f"'mean', 'sum'")
    if tuple(inputs.shape) != tuple(targets.shape):
        raise ValueError(f"sigmoid_focal_loss(): inputs and targets must have the same shape, got "
                         f"{tuple(inputs.shape)} and {tuple(targets.shape)}")
    return _LF.sigmoid_focal_loss(inputs, targets, alpha=alpha, gamma=gamma, reduction=reduction)
