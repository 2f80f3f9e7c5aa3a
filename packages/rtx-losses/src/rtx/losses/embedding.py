"""Ranking and embedding losses: cosine_embedding, margin_ranking, triplet_margin (+ with custom
distance), hinge_embedding."""
from __future__ import annotations

import rtx
from rtx.extend import autocast as _autocast
from rtx.losses._reduction import apply_reduction, legacy_reduction

__all__ = ["cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "hinge_embedding_loss"]


_EPSILON = 1e-12


@legacy_reduction
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input1, input2, target = _autocast.fp32("cosine_embedding_loss", input1, input2, target)
    # PyTorch's formula: |x|^2 + 1e-12 under the square root, so zero vectors give finite gradients
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + _EPSILON
    mag2 = (input2 * input2).sum(-1) + _EPSILON
    cos = prod / (mag1 * mag2).sqrt()
    zeros = rtx.zeros_like(cos)
    loss = rtx.where(target == 1, 1 - cos, zeros) + rtx.where(target == -1, (cos - margin).clamp(min=0), zeros)
    return apply_reduction(loss, reduction)


@legacy_reduction
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input1, input2, target = _autocast.fp32("margin_ranking_loss", input1, input2, target)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    return apply_reduction((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@legacy_reduction
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input, target = _autocast.fp32("hinge_embedding_loss", input, target)
    loss = rtx.where(target == 1, input, (margin - input).clamp(min=0))
    return apply_reduction(loss, reduction)


@legacy_reduction
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        anchor, positive, negative = _autocast.fp32("triplet_margin_loss", anchor, positive, negative)
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    d_ap = rtx.pairwise_distance(anchor, positive, p, eps)
    d_an = rtx.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = rtx.minimum(d_an, rtx.pairwise_distance(positive, negative, p, eps))
    return apply_reduction((d_ap - d_an + margin).clamp(min=0), reduction)


@legacy_reduction
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    dist = distance_function or rtx.pairwise_distance
    d_ap, d_an = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_an = rtx.minimum(d_an, dist(positive, negative))
    return apply_reduction((d_ap - d_an + margin).clamp(min=0), reduction)
