"""Modules for quantization-aware training (torch.ao.nn.qat): float layers whose weight passes
through a FakeQuantize on every forward, so training sees (and adapts to) int8 rounding; the
gradient reaches the float weight straight through."""
from __future__ import annotations

import rtx.nn as nn
import rtx.nn.functional as F
from rtx.compress import intrinsic as nni
from rtx.nn.utils.fusion import batch_norm_scale_shift, fuse_conv_bn_weights

__all__ = ["Linear", "LinearReLU", "Conv2d", "ConvReLU2d", "ConvBn2d", "ConvBnReLU2d"]


def _need_qconfig(qconfig, name):
    if qconfig is None:
        raise ValueError(f"qat.{name} needs a qconfig (e.g. get_default_qat_qconfig('x86'))")


class Linear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        _need_qconfig(qconfig, "Linear")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod):
        """Shares the float module's parameters (training continues on them)."""
        float_mod = mod[0] if isinstance(mod, nni._FusedModule) else mod
        q = cls(float_mod.in_features, float_mod.out_features, float_mod.bias is not None, qconfig=mod.qconfig)
        q.weight, q.bias = float_mod.weight, float_mod.bias
        return q

    def to_float(self):
        f = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        f.weight, f.bias = self.weight, self.bias
        return f


class LinearReLU(Linear):
    def forward(self, input):
        return F.relu(super().forward(input))


class Conv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", qconfig=None, device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)
        _need_qconfig(qconfig, "Conv2d")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod):
        f = mod[0] if isinstance(mod, nni._FusedModule) else mod
        q = cls(f.in_channels, f.out_channels, f.kernel_size, f.stride, f.padding, f.dilation, f.groups,
                f.bias is not None, f.padding_mode, qconfig=mod.qconfig)
        q.weight, q.bias = f.weight, f.bias
        return q


class ConvReLU2d(Conv2d):
    def forward(self, input):
        return F.relu(super().forward(input))



class ConvBn2d(Conv2d):
    """Conv2d + BatchNorm2d for QAT, as PyTorch's qat.ConvBn2d: the BN's scale gamma / sqrt(var + eps)
    (running statistics) is folded into the weight before fake quantization, so training sees the
    int8 rounding of the weight that will be deployed; the conv output is unscaled again and the
    BatchNorm itself (batch statistics in training) normalises it. At convert the BN folds in."""

    _relu = False

    def __init__(self, conv, bn, qconfig):
        super().__init__(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                         conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode, qconfig=qconfig)
        self.weight, self.bias = conv.weight, conv.bias
        self.bn = bn

    def _scale_factor(self):
        bn = self.bn
        return batch_norm_scale_shift(bn.running_mean, bn.running_var, bn.eps, bn.weight)[0]

    def forward(self, input):
        factor = self._scale_factor()
        shape = [-1, 1, 1, 1]
        w = self.weight_fake_quant(self.weight * factor.reshape(shape))
        y = self._conv_forward(input, w, None) / factor.reshape([1, -1, 1, 1])
        if self.bias is not None:
            y = y + self.bias.reshape([1, -1, 1, 1])
        y = self.bn(y)
        return F.relu(y) if self._relu else y

    def folded(self):
        """An eval-mode nn.Conv2d equal to conv + BN with the running statistics."""
        conv = nn.Conv2d(self.in_channels, self.out_channels, self.kernel_size, self.stride, self.padding,
                         self.dilation, self.groups, True, self.padding_mode)
        bn = self.bn
        conv.weight, conv.bias = fuse_conv_bn_weights(self.weight, self.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
        return conv

    @classmethod
    def from_float(cls, mod):
        if not isinstance(mod, (nni.ConvBn2d, nni.ConvBnReLU2d)):
            raise TypeError(f"qat.{cls.__name__}.from_float takes a fused ConvBn2d / ConvBnReLU2d, got "
                            f"{type(mod).__name__}")
        return cls(mod[0], mod[1], mod.qconfig)


class ConvBnReLU2d(ConvBn2d):
    _relu = True
