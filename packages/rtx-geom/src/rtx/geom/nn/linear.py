"""Linear with PyG's initialisers (torch_geometric.nn.dense.Linear): weight [out, in], optional bias."""
import math

import rtx
import rtx.nn as nn
from rtx.nn import init


class Linear(nn.Module):
    """y = x W^T + b. weight_initializer 'glorot' (GCN, GAT), 'kaiming_uniform' (default, as torch.nn.Linear),
    'uniform'; bias_initializer 'zeros' or None (torch.nn.Linear's rule)."""

    def __init__(self, in_channels, out_channels, bias=True, weight_initializer=None, bias_initializer=None):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight_initializer, self.bias_initializer = weight_initializer, bias_initializer
        self.weight = nn.Parameter(rtx.empty(out_channels, in_channels))
        if bias:
            self.bias = nn.Parameter(rtx.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        fan_in = self.in_channels
        if self.weight_initializer == "glorot":
            init.xavier_uniform_(self.weight)
        elif self.weight_initializer == "uniform":
            b = 1.0 / math.sqrt(fan_in)
            init.uniform_(self.weight, -b, b)
        else:
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            if self.bias_initializer == "zeros":
                init.zeros_(self.bias)
            else:
                b = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0
                init.uniform_(self.bias, -b, b)

    def forward(self, x):
        return nn.functional.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, bias={self.bias is not None}"


def glorot(t):
    if t is not None:
        a = math.sqrt(6.0 / (t.shape[-2] + t.shape[-1]))
        init.uniform_(t, -a, a)


def zeros(t):
    if t is not None:
        init.zeros_(t)
