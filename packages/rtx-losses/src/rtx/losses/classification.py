"""Classification losses: cross_entropy (class indices or probabilities, weight, ignore_index,
label_smoothing), nll_loss, binary_cross_entropy, binary_cross_entropy_with_logits (pos_weight),
sigmoid focal loss and multi-class focal loss. Log-probabilities come from log_softmax
(max-subtracted), so large logits are safe."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.extend import Primitive, logsigmoid, raw, softplus, xp_of
from rtx.extend import autocast as _autocast
from rtx.losses._reduction import apply_reduction, check_same_size, legacy_reduction

__all__ = ["cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "focal_loss",
           "sigmoid_focal_loss", "multi_margin_loss", "soft_margin_loss", "multilabel_soft_margin_loss"]


def _class_dim_last(t):
    # (N, C, d1, ...) -> (N, d1, ..., C) so the class dim is last
    return t.movedim(1, -1) if t.ndim > 2 else t


@legacy_reduction
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """input: log-probabilities (N, C, ...) or (C,); target: class indices (N, ...) or ()."""
    if _autocast.active:  # on autocast's float32 list
        input, target, weight = _autocast.fp32("nll_loss", input, target, weight)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if target.dtype not in (rtx.int64, rtx.int32, rtx.int16, rtx.int8, rtx.uint8):
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name.capitalize()} for the target of "
                           "nll_loss (class indices)")
    unbatched = input.ndim == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if input.shape[0] != target.shape[0] or tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}) and spatial sizes {tuple(input.shape[2:])} == "
                         f"{tuple(target.shape[1:])}.")
    n_classes = input.shape[1]
    target = target.long()
    valid = target != ignore_index
    safe = rtx.where(valid, target, 0)
    if bool(((safe < 0) | (safe >= n_classes)).any()):
        bad = safe[(safe < 0) | (safe >= n_classes)][0].item()
        raise IndexError(f"Target {bad} is out of bounds for {n_classes} classes.")
    logp = _class_dim_last(input)
    picked = logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    w = valid.to(input.dtype)
    if weight is not None:
        w = w * weight[safe]
    loss = -picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    if unbatched and reduction == "none":
        loss = loss.squeeze(0)
    return apply_reduction(loss, reduction)





@legacy_reduction
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over dim 1 (dim 0 for unbatched input) then NLL; a floating target is read as
    class probabilities."""
    if _autocast.active:  # on autocast's float32 list
        input, target, weight = _autocast.fp32("cross_entropy", input, target, weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    logp = rtx.log_softmax(input, dim=class_dim)
    n_classes = input.shape[class_dim]
    if target.is_floating_point():
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"cross_entropy: a probability target must have the input's shape "
                               f"{tuple(input.shape)}, got {tuple(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        lp = logp if weight is None else logp * _bcast_weight(weight, input.ndim, class_dim)
        return _reduce(-(lp * target).sum(class_dim), reduction)
    nll = nll_loss(logp, target, weight=weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    # smoothing term: -sum_c w_c logp_c / C, over the non-ignored samples
    lp = logp if weight is None else logp * _bcast_weight(weight, input.ndim, class_dim)
    smooth = -lp.sum(class_dim)
    valid = (target != ignore_index).to(input.dtype)
    smooth = smooth * valid
    if reduction == "mean":
        if weight is not None:
            denom = (weight[rtx.where(target != ignore_index, target, 0).long()] * valid).sum()
        else:
            denom = valid.sum()
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - label_smoothing) * nll + label_smoothing / n_classes * smooth


def _bcast_weight(weight, ndim, class_dim):
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def _reduce(loss, reduction):
    return apply_reduction(loss, reduction)


class BinaryCrossEntropy(Primitive):
    """-(t log p + (1 - t) log(1 - p)) with both logs clamped at -100 (a 0 or 1 input gives a finite
    loss), and PyTorch's backward: grad (p - t) / max((1 - p) p, 1e-12), finite at 0 and 1 too
    (differentiating the clamped logs would give 0/0 there). The target's gradient is PyTorch's
    -logit(p), unclamped."""
    op = "binary_cross_entropy"

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        x, t = raw(input), raw(target)
        xp = xp_of(input)
        with np.errstate(divide="ignore"):
            log_p = xp.maximum(xp.log(x), -100)
            log_1mp = xp.maximum(xp.log1p(-x), -100)
        return (-(t * log_p + (1 - t) * log_1mp)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        gx = gt = None
        if ctx.needs_input_grad[0]:
            gx = grad * (x - t) / ((1 - x) * x).clamp(min=_BCE_EPSILON)
        if ctx.needs_input_grad[1]:
            gt = grad * ((-x).log1p() - x.log())
        return gx, gt


_BCE_EPSILON = 1e-12


@legacy_reduction
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input, target, weight = _autocast.fp32("binary_cross_entropy", input, target, weight)
    check_same_size(input, target, "binary_cross_entropy")
    if bool(((input < 0) | (input > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    loss = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@legacy_reduction
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Stable form: (1 - y) x + (1 + (p_w - 1) y) * log(1 + exp(-x)), log1p(exp(-|x|)) + max(-x, 0)."""
    if _autocast.active:  # on autocast's float32 list
        input, target, weight, pos_weight = _autocast.fp32("binary_cross_entropy_with_logits", input, target,
                                                           weight, pos_weight)
    check_same_size(input, target, "binary_cross_entropy_with_logits")
    log_sig_neg = softplus(-input)  # -log(sigmoid(x)), stable
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@legacy_reduction
def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    """Focal loss of Lin et al. (RetinaNet) on logits, as torchvision.ops.sigmoid_focal_loss."""
    p = inputs.sigmoid()
    ce = binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return _reduce(loss, reduction)


@legacy_reduction
def focal_loss(input, target, alpha=None, gamma=2.0, ignore_index=-100, reduction="mean"):
    """Multi-class focal loss on logits (N, C, ...) with class-index targets: -alpha_t (1-p_t)^gamma log p_t."""
    logp = rtx.log_softmax(input, dim=1 if input.ndim > 1 else 0)
    modulated = (1 - logp.exp()) ** gamma * logp
    return nll_loss(modulated, target, weight=alpha, ignore_index=ignore_index, reduction=reduction)


@legacy_reduction
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input, weight = _autocast.fp32("multi_margin_loss", input, weight)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    unbatched = input.ndim == 1
    x = input.unsqueeze(0) if unbatched else input
    y = target.reshape(-1).long()
    x_y = x.gather(1, y.unsqueeze(1))
    z = margin - x_y + x
    # PyTorch's kernel counts a class only where z > 0: no gradient at the kink z == 0 (clamp's would pass)
    margins = rtx.where(z > 0, z, rtx.zeros_like(z)) ** p
    if weight is not None:
        margins = margins * weight[y].unsqueeze(1)
    mask = rtx.ones_like(x)
    mask = mask.scatter(1, y.unsqueeze(1), 0.0)
    loss = (margins * mask).sum(1) / x.shape[1]
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


@legacy_reduction
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active:  # on autocast's float32 list
        input, target = _autocast.fp32("soft_margin_loss", input, target)
    return _reduce(softplus(-target * input), reduction)


@legacy_reduction
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(dim=-1)
    return _reduce(loss, reduction)
