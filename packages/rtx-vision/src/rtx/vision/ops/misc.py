"""Building blocks the model families share, where torchvision keeps them (torchvision.ops.misc
and torchvision.ops.stochastic_depth): Conv2dNormActivation, SqueezeExcitation, MLP,
StochasticDepth. Their child names are torchvision's, so the state_dict keys of the models built
from them are too (e.g. MobileNetV2's `features.0.0.weight` is Conv2dNormActivation's conv)."""
from __future__ import annotations

import rtx
import rtx.nn as nn

__all__ = ["Conv2dNormActivation", "SqueezeExcitation", "MLP", "StochasticDepth", "stochastic_depth"]


class Conv2dNormActivation(nn.Sequential):
    """Conv2d -> norm_layer -> activation_layer, as a Sequential (children "0", "1", "2").
    padding defaults to "same" for odd kernels: (kernel_size - 1) // 2 * dilation; the conv has a
    bias only when there is no norm layer (unless bias says otherwise)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True, bias=None):
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                ks = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * 2
                dl = dilation if isinstance(dilation, (tuple, list)) else (dilation,) * len(ks)
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                            groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None else activation_layer(inplace=inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation (Hu et al.): x * sigmoid(fc2(act(fc1(avgpool(x))))), fc1/fc2 being
    1x1 convolutions, as torchvision.ops.SqueezeExcitation."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input):
        return self._scale(input) * input


class MLP(nn.Sequential):
    """Linear -> (norm) -> activation -> Dropout for each hidden size, then Linear -> Dropout for the
    last, as torchvision.ops.MLP (so ViT's MLP block has children 0..4, weights at 0 and 3)."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU, inplace=None,
                 bias=True, dropout=0.0):
        if not hidden_channels:
            raise ValueError("MLP: hidden_channels must list at least one layer size, got an empty list")
        params = {} if inplace is None else {"inplace": inplace}
        layers = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


def stochastic_depth(input, p, mode, training=True):
    """Drop whole residual branches (Huang et al.): in training, each sample ("row") or the whole
    batch ("batch") is zeroed with probability p and the survivors scaled by 1 / (1 - p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = (rtx.rand(*size, dtype=input.dtype, device=input.device) < survival_rate).to(input.dtype)
    if survival_rate > 0.0:
        noise = noise / survival_rate
    return input * noise


class StochasticDepth(nn.Module):
    def __init__(self, p, mode):
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
