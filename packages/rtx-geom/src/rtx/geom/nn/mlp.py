"""MLP: a stack of Linear layers with activation, optional norm and dropout (PyG's torch_geometric.nn.MLP)."""
import rtx.nn as nn
import rtx.nn.functional as F

from .linear import Linear
from .norm import BatchNorm, LayerNorm

_ACTS = {"relu": F.relu, "elu": F.elu, "gelu": F.gelu, "tanh": lambda x: x.tanh(),
         "leaky_relu": F.leaky_relu, "sigmoid": lambda x: x.sigmoid()}


def activation(act):
    if act is None or callable(act):
        return act
    if act not in _ACTS:
        raise ValueError(f"unknown activation {act!r}; expected one of {', '.join(_ACTS)} or a callable")
    return _ACTS[act]


def normalization(norm, channels, kwargs=None):
    if norm is None:
        return nn.Identity()
    kwargs = kwargs or {}
    if norm in ("batch_norm", "batch"):
        return BatchNorm(channels, **kwargs)
    if norm in ("layer_norm", "layer"):
        return LayerNorm(channels, **kwargs)
    raise ValueError(f"unknown norm {norm!r}; expected None, 'batch_norm' or 'layer_norm'")


class MLP(nn.Module):
    def __init__(self, channel_list=None, *, in_channels=None, hidden_channels=None, out_channels=None,
                 num_layers=None, dropout=0.0, act="relu", act_first=False, norm="batch_norm", norm_kwargs=None,
                 plain_last=True, bias=True):
        super().__init__()
        if channel_list is None:
            channel_list = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.channel_list = list(channel_list)
        self.dropout, self.act, self.act_first, self.plain_last = dropout, activation(act), act_first, plain_last
        pairs = list(zip(self.channel_list[:-1], self.channel_list[1:]))
        self.lins = nn.ModuleList([Linear(a, b, bias=bias) for a, b in pairs])
        n_norm = len(pairs) - 1 if plain_last else len(pairs)
        self.norms = nn.ModuleList([normalization(norm, b, norm_kwargs) for _, b in pairs[:n_norm]])

    @property
    def in_channels(self):
        return self.channel_list[0]

    def reset_parameters(self):
        for m in list(self.lins) + list(self.norms):
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()

    def forward(self, x):
        for k, lin in enumerate(self.lins):
            x = lin(x)
            if k < len(self.norms):
                if self.act is not None and self.act_first:
                    x = self.act(x)
                x = self.norms[k](x)
                if self.act is not None and not self.act_first:
                    x = self.act(x)
                x = F.dropout(x, p=self.dropout, training=self.training)
        return x
