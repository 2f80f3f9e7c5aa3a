"""GCN, GraphSAGE, GIN, GAT: stacks of one convolution with activation, norm and dropout between
(PyG's torch_geometric.nn.models.basic_gnn; same arguments and state_dict keys)."""
import rtx.nn as nn
import rtx.nn.functional as F

from ..conv import GATConv, GATv2Conv, GCNConv, GINConv, SAGEConv
from ..mlp import MLP, activation, normalization
from .jumping_knowledge import JumpingKnowledge


class BasicGNN(nn.Module):
    supports_edge_weight = False
    supports_edge_attr = False

    def __init__(self, in_channels, hidden_channels, num_layers, out_channels=None, dropout=0.0, act="relu",
                 act_first=False, act_kwargs=None, norm=None, norm_kwargs=None, jk=None, **kwargs):
        super().__init__()
        if jk not in (None, "last", "cat", "max", "lstm"):
            raise ValueError(f"jk must be None, 'last', 'cat', 'max' or 'lstm', got {jk!r}")
        self.in_channels, self.hidden_channels, self.num_layers = in_channels, hidden_channels, num_layers
        self.dropout_p, self.act, self.act_first, self.norm, self.norm_kwargs = dropout, activation(act), act_first, \
            norm, norm_kwargs
        self.jk_mode = jk
        self.out_channels = out_channels if out_channels is not None else hidden_channels
        self.convs = nn.ModuleList()
        # With jumping knowledge every conv outputs hidden_channels and a final Linear maps to out_channels (PyG).
        to_out = out_channels is not None and jk is None
        dims = [in_channels] + [hidden_channels] * (num_layers - 1) + [self.out_channels if to_out else hidden_channels]
        for k in range(num_layers):
            self._is_conv_to_out = k == num_layers - 1 and to_out
            self.convs.append(self.init_conv(dims[k], dims[k + 1], **kwargs))
        # one norm after every conv but the last; after the last too when jk is set (PyG's layout and keys)
        self.norms = nn.ModuleList([normalization(norm, hidden_channels, norm_kwargs)
                                    for _ in range(num_layers - 1 + (jk is not None))])
        if jk is not None and jk != "last":
            self.jk = JumpingKnowledge(jk, hidden_channels, num_layers)
        if jk is not None:
            self.lin = nn.Linear(num_layers * hidden_channels if jk == "cat" else hidden_channels, self.out_channels)

    def init_conv(self, in_channels, out_channels, **kwargs):
        raise NotImplementedError

    def reset_parameters(self):
        extra = [getattr(self, "jk", None), getattr(self, "lin", None)]
        for m in list(self.convs) + list(self.norms) + [m for m in extra if m is not None]:
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()

    def forward(self, x, edge_index, edge_weight=None, edge_attr=None, batch=None, batch_size=None):
        xs = []
        for k, conv in enumerate(self.convs):
            kw = {}
            if self.supports_edge_weight and edge_weight is not None:
                kw["edge_weight"] = edge_weight
            if self.supports_edge_attr and edge_attr is not None:
                kw["edge_attr"] = edge_attr
            x = conv(x, edge_index, **kw)
            if k < self.num_layers - 1 or self.jk_mode is not None:
                if self.act is not None and self.act_first:
                    x = self.act(x)
                x = self.norms[k](x)
                if self.act is not None and not self.act_first:
                    x = self.act(x)
                x = F.dropout(x, p=self.dropout_p, training=self.training)
                xs.append(x)
        if self.jk_mode not in (None, "last"):
            x = self.jk(xs)
        return self.lin(x) if self.jk_mode is not None else x

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, num_layers={self.num_layers})"


class GCN(BasicGNN):
    supports_edge_weight = True

    def init_conv(self, in_channels, out_channels, **kwargs):
        return GCNConv(in_channels, out_channels, **kwargs)


class GraphSAGE(BasicGNN):
    def init_conv(self, in_channels, out_channels, **kwargs):
        return SAGEConv(in_channels, out_channels, **kwargs)


class GIN(BasicGNN):
    def init_conv(self, in_channels, out_channels, **kwargs):
        mlp = MLP([in_channels, out_channels, out_channels], act=self.act, act_first=self.act_first,
                  norm=self.norm, norm_kwargs=self.norm_kwargs)
        return GINConv(mlp, **kwargs)


class GAT(BasicGNN):
    supports_edge_attr = True

    def init_conv(self, in_channels, out_channels, **kwargs):
        v2 = kwargs.pop("v2", False)
        heads = kwargs.pop("heads", 1)
        concat = kwargs.pop("concat", True)
        if getattr(self, "_is_conv_to_out", False):
            concat = False
        if concat and out_channels % heads != 0:
            raise ValueError(f"Ensure that the number of output channels of 'GATConv' (got '{out_channels}') is "
                             f"divisible by the number of heads (got '{heads}')")
        if concat:
            out_channels = out_channels // heads
        conv = GATv2Conv if v2 else GATConv
        return conv(in_channels, out_channels, heads=heads, concat=concat, dropout=self.dropout_p, **kwargs)
