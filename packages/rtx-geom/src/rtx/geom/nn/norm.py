"""BatchNorm and LayerNorm over the nodes of (batched) graphs, as PyG's torch_geometric.nn.norm."""
import rtx
import rtx.nn as nn
import rtx.nn.functional as F

from ..utils.degree import degree
from ..utils.scatter import scatter


class BatchNorm(nn.Module):
    """BatchNorm1d over all nodes (state_dict keys under `module.`, as PyG)."""

    def __init__(self, in_channels, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 allow_single_element=False):
        super().__init__()
        self.in_channels = in_channels
        self.allow_single_element = allow_single_element
        self.module = nn.BatchNorm1d(in_channels, eps, momentum, affine, track_running_stats)

    def reset_parameters(self):
        self.module.reset_parameters()

    def forward(self, x):
        if self.allow_single_element and x.shape[0] <= 1:
            m = self.module
            return F.batch_norm(x, m.running_mean, m.running_var, m.weight, m.bias, False, 0.0, m.eps)
        return self.module(x)

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels})"


class LayerNorm(nn.Module):
    """mode='graph' normalises each graph over all its nodes and channels; mode='node' each node (F.layer_norm)."""

    def __init__(self, in_channels, eps=1e-5, affine=True, mode="graph"):
        super().__init__()
        if mode not in ("graph", "node"):
            raise ValueError(f"LayerNorm: mode must be 'graph' or 'node', got {mode!r}")
        self.in_channels, self.eps, self.affine, self.mode = in_channels, eps, affine, mode
        if affine:
            self.weight = nn.Parameter(rtx.ones(in_channels))
            self.bias = nn.Parameter(rtx.zeros(in_channels))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.affine:
            nn.init.ones_(self.weight)
            nn.init.zeros_(self.bias)

    def forward(self, x, batch=None, batch_size=None):
        if self.mode == "node":
            return F.layer_norm(x, (self.in_channels,), self.weight, self.bias, self.eps)
        if batch is None:
            x = x - x.mean()
            out = x / (x.std(unbiased=False) + self.eps)
        else:
            if batch_size is None:
                batch_size = int(batch.max().item()) + 1
            norm = degree(batch, batch_size, dtype=x.dtype).clamp(min=1) * x.shape[-1]
            norm = norm.view(-1, 1)
            mean = scatter(x, batch, 0, batch_size, reduce="sum").sum(-1, keepdim=True) / norm
            x = x - mean.index_select(0, batch)
            var = scatter(x * x, batch, 0, batch_size, reduce="sum").sum(-1, keepdim=True) / norm
            out = x / (var + self.eps).sqrt().index_select(0, batch)
        if self.weight is not None:
            out = out * self.weight + self.bias
        return out

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, affine={self.affine}, mode={self.mode})"
