"""GATConv (Veličković et al.): attention a^T [W x_i || W x_j] over each node's in-edges, per head."""
import rtx
import rtx.nn as nn
import rtx.nn.functional as F

from ...utils.loop import add_self_loops as _add_loops
from ...utils.loop import remove_self_loops
from ...utils.softmax import softmax
from ..linear import Linear, glorot, zeros
from ..message_passing import MessagePassing


class GATConv(MessagePassing):
    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, edge_dim=None, fill_value="mean", bias=True, residual=False, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(node_dim=0, **kwargs)
        self.in_channels, self.out_channels, self.heads, self.concat = in_channels, out_channels, heads, concat
        self.negative_slope, self.dropout, self.add_self_loops = negative_slope, dropout, add_self_loops
        self.edge_dim, self.fill_value, self.residual = edge_dim, fill_value, residual
        hc = heads * out_channels
        if isinstance(in_channels, int):
            self.lin = Linear(in_channels, hc, bias=False, weight_initializer="glorot")
        else:
            self.lin_src = Linear(in_channels[0], hc, bias=False, weight_initializer="glorot")
            self.lin_dst = Linear(in_channels[1], hc, bias=False, weight_initializer="glorot")
        self.att_src = nn.Parameter(rtx.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(rtx.empty(1, heads, out_channels))
        if edge_dim is not None:
            self.lin_edge = Linear(edge_dim, hc, bias=False, weight_initializer="glorot")
            self.att_edge = nn.Parameter(rtx.empty(1, heads, out_channels))
        else:
            self.lin_edge = None
            self.register_parameter("att_edge", None)
        total = hc if concat else out_channels
        if residual:
            self.res = Linear(in_channels if isinstance(in_channels, int) else in_channels[1], total, bias=False,
                              weight_initializer="glorot")
        else:
            self.res = None
        if bias:
            self.bias = nn.Parameter(rtx.empty(total))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        for m in (getattr(self, "lin", None), getattr(self, "lin_src", None), getattr(self, "lin_dst", None),
                  self.lin_edge, self.res):
            if m is not None:
                m.reset_parameters()
        glorot(self.att_src)
        glorot(self.att_dst)
        glorot(self.att_edge)
        zeros(self.bias)

    def forward(self, x, edge_index, edge_attr=None, size=None, return_attention_weights=None):
        H, C = self.heads, self.out_channels
        if isinstance(x, tuple):
            x_src, x_dst = x
            res_in = x_dst
            x_src = self.lin_src(x_src).view(-1, H, C)
            x_dst = self.lin_dst(x_dst).view(-1, H, C) if x_dst is not None else None
        else:
            res_in = x
            x_src = x_dst = self.lin(x).view(-1, H, C)
        alpha_src = (x_src * self.att_src).sum(-1)
        alpha_dst = (x_dst * self.att_dst).sum(-1) if x_dst is not None else None
        if self.add_self_loops:
            n = min(x_src.shape[0], x_dst.shape[0]) if x_dst is not None else x_src.shape[0]
            if size is not None:
                n = min(size)
            edge_index, edge_attr = remove_self_loops(edge_index, edge_attr)
            edge_index, edge_attr = _add_loops(edge_index, edge_attr, self.fill_value, n)
        n_dst = x_dst.shape[0] if x_dst is not None else x_src.shape[0]
        src, dst = edge_index[0], edge_index[1]
        alpha = alpha_src.index_select(0, src)
        if alpha_dst is not None:
            alpha = alpha + alpha_dst.index_select(0, dst)
        if edge_attr is not None and self.lin_edge is not None:
            e = self.lin_edge(edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr).view(-1, H, C)
            alpha = alpha + (e * self.att_edge).sum(-1)
        alpha = F.leaky_relu(alpha, self.negative_slope)
        alpha = softmax(alpha, dst, num_nodes=n_dst)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = self.propagate(edge_index, x=(x_src, x_dst), alpha=alpha, size=size)
        out = out.reshape(-1, H * C) if self.concat else out.mean(1)
        if self.res is not None:
            out = out + self.res(res_in)
        if self.bias is not None:
            out = out + self.bias
        if isinstance(return_attention_weights, bool) and return_attention_weights:
            return out, (edge_index, alpha)
        return out

    def message(self, x_j, alpha):
        return alpha.unsqueeze(-1) * x_j

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"


class GATv2Conv(MessagePassing):
    """GATv2 (Brody et al.): the attention score a^T LeakyReLU(W_l x_j + W_r x_i) is computed after the
    nonlinearity, so it can rank neighbours differently per query node."""

    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True, edge_dim=None, fill_value="mean", bias=True, share_weights=False,
                 residual=False, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(node_dim=0, **kwargs)
        self.in_channels, self.out_channels, self.heads, self.concat = in_channels, out_channels, heads, concat
        self.negative_slope, self.dropout, self.add_self_loops = negative_slope, dropout, add_self_loops
        self.edge_dim, self.fill_value, self.share_weights, self.residual = edge_dim, fill_value, share_weights, \
            residual
        hc = heads * out_channels
        in_l, in_r = (in_channels, in_channels) if isinstance(in_channels, int) else in_channels
        self.lin_l = Linear(in_l, hc, bias=bias, weight_initializer="glorot")
        self.lin_r = self.lin_l if share_weights else Linear(in_r, hc, bias=bias, weight_initializer="glorot")
        self.att = nn.Parameter(rtx.empty(1, heads, out_channels))
        self.lin_edge = Linear(edge_dim, hc, bias=False, weight_initializer="glorot") if edge_dim is not None \
            else None
        total = hc if concat else out_channels
        self.res = Linear(in_r, total, bias=False, weight_initializer="glorot") if residual else None
        if bias:
            self.bias = nn.Parameter(rtx.empty(total))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        for m in (self.lin_l, self.lin_r, self.lin_edge, self.res):
            if m is not None:
                m.reset_parameters()
        glorot(self.att)
        zeros(self.bias)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        H, C = self.heads, self.out_channels
        x_l_in, x_r_in = x if isinstance(x, tuple) else (x, x)
        x_l = self.lin_l(x_l_in).view(-1, H, C)
        x_r = self.lin_r(x_r_in).view(-1, H, C) if not self.share_weights or x_r_in is not x_l_in else x_l
        if self.add_self_loops:
            n = min(x_l.shape[0], x_r.shape[0])
            edge_index, edge_attr = remove_self_loops(edge_index, edge_attr)
            edge_index, edge_attr = _add_loops(edge_index, edge_attr, self.fill_value, n)
        src, dst = edge_index[0], edge_index[1]
        e = x_l.index_select(0, src) + x_r.index_select(0, dst)
        if edge_attr is not None and self.lin_edge is not None:
            e = e + self.lin_edge(edge_attr.view(-1, 1) if edge_attr.dim() == 1 else edge_attr).view(-1, H, C)
        e = F.leaky_relu(e, self.negative_slope)
        alpha = softmax((e * self.att).sum(-1), dst, num_nodes=x_r.shape[0])
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = self.propagate(edge_index, x=(x_l, x_r), alpha=alpha)
        out = out.reshape(-1, H * C) if self.concat else out.mean(1)
        if self.res is not None:
            out = out + self.res(x_r_in)
        if self.bias is not None:
            out = out + self.bias
        if isinstance(return_attention_weights, bool) and return_attention_weights:
            return out, (edge_index, alpha)
        return out

    def message(self, x_j, alpha):
        return alpha.unsqueeze(-1) * x_j

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"
