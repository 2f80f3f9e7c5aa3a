"""Fused float modules (torch.ao.nn.intrinsic): sequences that quantize as one unit, so that the
ReLU's clipping happens before the output is rounded to 8 bits and a BatchNorm is folded into
the convolution's weights."""
from __future__ import annotations

import rtx.nn as nn

__all__ = ["ConvReLU2d", "LinearReLU", "ConvBn2d", "ConvBnReLU2d"]


class _FusedModule(nn.Sequential):
    """A Sequential of the fused parts: its state_dict keys are "0.weight", ... as PyTorch's."""


class ConvReLU2d(_FusedModule):
    def __init__(self, conv, relu):
        if type(conv) is not nn.Conv2d or type(relu) is not nn.ReLU:
            raise TypeError(f"ConvReLU2d fuses Conv2d and ReLU, got {type(conv).__name__} and {type(relu).__name__}")
        super().__init__(conv, relu)


class LinearReLU(_FusedModule):
    def __init__(self, linear, relu):
        if type(linear) is not nn.Linear or type(relu) is not nn.ReLU:
            raise TypeError(f"LinearReLU fuses Linear and ReLU, got {type(linear).__name__} and "
                            f"{type(relu).__name__}")
        super().__init__(linear, relu)



class ConvBn2d(_FusedModule):
    """Conv2d + BatchNorm2d kept apart for quantization-aware training (fuse_modules_qat); the BN
    folds into the weights in prepare_qat's qat.ConvBn2d and at convert."""

    def __init__(self, conv, bn):
        if type(conv) is not nn.Conv2d or type(bn) is not nn.BatchNorm2d:
            raise TypeError(f"ConvBn2d fuses Conv2d and BatchNorm2d, got {type(conv).__name__} and "
                            f"{type(bn).__name__}")
        super().__init__(conv, bn)


class ConvBnReLU2d(_FusedModule):
    def __init__(self, conv, bn, relu):
        if type(conv) is not nn.Conv2d or type(bn) is not nn.BatchNorm2d or type(relu) is not nn.ReLU:
            raise TypeError(f"ConvBnReLU2d fuses Conv2d, BatchNorm2d and ReLU, got {type(conv).__name__}, "
                            f"{type(bn).__name__} and {type(relu).__name__}")
        super().__init__(conv, bn, relu)
