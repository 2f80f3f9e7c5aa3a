"""TransformerConv (Shi et al.): scaled dot-product attention of each node over its in-neighbours."""
import math

import rtx
import rtx.nn.functional as F

from ...utils.softmax import softmax
from ..linear import Linear
from ..message_passing import MessagePassing


class TransformerConv(MessagePassing):
    def __init__(self, in_channels, out_channels, heads=1, concat=True, beta=False, dropout=0.0, edge_dim=None,
                 bias=True, root_weight=True, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(node_dim=0, **kwargs)
        self.in_channels, self.out_channels, self.heads, self.concat = in_channels, out_channels, heads, concat
        self.beta, self.root_weight, self.dropout, self.edge_dim = beta and root_weight, root_weight, dropout, edge_dim
        in_l, in_r = (in_channels, in_channels) if isinstance(in_channels, int) else in_channels
        hc = heads * out_channels
        self.lin_key = Linear(in_l, hc, bias=bias)
        self.lin_query = Linear(in_r, hc, bias=bias)
        self.lin_value = Linear(in_l, hc, bias=bias)
        self.lin_edge = Linear(edge_dim, hc, bias=False) if edge_dim is not None else None
        out = hc if concat else out_channels
        if root_weight:
            self.lin_skip = Linear(in_r, out, bias=bias)
            self.lin_beta = Linear(3 * out, 1, bias=False) if self.beta else None
        else:
            self.lin_skip = self.lin_beta = None

    def reset_parameters(self):
        for m in (self.lin_key, self.lin_query, self.lin_value, self.lin_edge, self.lin_skip, self.lin_beta):
            if m is not None:
                m.reset_parameters()

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        H, C = self.heads, self.out_channels
        x_src, x_dst = x if isinstance(x, tuple) else (x, x)
        query = self.lin_query(x_dst).view(-1, H, C)
        key = self.lin_key(x_src).view(-1, H, C)
        value = self.lin_value(x_src).view(-1, H, C)
        src, dst = edge_index[0], edge_index[1]
        key_j, value_j = key.index_select(0, src), value.index_select(0, src)
        if self.lin_edge is not None and edge_attr is not None:
            e = self.lin_edge(edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr).view(-1, H, C)
            key_j = key_j + e
            value_j = value_j + e
        alpha = (query.index_select(0, dst) * key_j).sum(-1) / math.sqrt(C)
        alpha = softmax(alpha, dst, num_nodes=x_dst.shape[0])
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = self.aggregate(value_j * alpha.view(-1, H, 1), dst, dim_size=x_dst.shape[0])
        out = out.reshape(-1, H * C) if self.concat else out.mean(1)
        if self.root_weight:
            x_r = self.lin_skip(x_dst)
            if self.lin_beta is not None:
                b = rtx.sigmoid(self.lin_beta(rtx.cat([out, x_r, out - x_r], -1)))
                out = b * x_r + (1 - b) * out
            else:
                out = out + x_r
        if isinstance(return_attention_weights, bool) and return_attention_weights:
            return out, (edge_index, alpha)
        return out

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"
