"""torch.nn.utils.fusion: fold an eval-mode BatchNorm into the weights of the conv or linear layer
before it (w' = w * scale per output channel, b' = b * scale + shift, with the BatchNorm's
(scale, shift) from rtx.nn.functional's one formula). rtx.compress's fuse_modules uses these."""
from __future__ import annotations

import rtx
from rtx.nn._functional.normalization import batch_norm_scale_shift
from rtx.nn.parameter import Parameter

__all__ = ["batch_norm_scale_shift", "fuse_conv_bn_weights", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the conv that computes bn(conv(x)) with BN's running statistics.
    transpose=True for a ConvTranspose weight (in_channels, out_channels // groups, ...)."""
    with rtx.no_grad():
        scale, shift = batch_norm_scale_shift(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
        shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
        w = conv_w * scale.reshape(shape)
        b = shift if conv_b is None else conv_b * scale + shift
    return (Parameter(w.to(conv_w.dtype), conv_w.requires_grad),
            Parameter(b.to(conv_w.dtype if conv_b is None else conv_b.dtype),
                      True if conv_b is None else conv_b.requires_grad))


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the Linear that computes bn(linear(x)) (a BatchNorm1d over its outputs)."""
    return fuse_conv_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
