"""GraphConv (Morris et al.): out = W_1 x_i + W_2 · aggr_j e_ji x_j."""
from ..linear import Linear
from ..message_passing import MessagePassing


class GraphConv(MessagePassing):
    _spmm_message = ("x", "edge_weight")

    def __init__(self, in_channels, out_channels, aggr="add", bias=True, **kwargs):
        super().__init__(aggr=aggr, **kwargs)
        self.in_channels, self.out_channels = in_channels, out_channels
        in_l, in_r = (in_channels, in_channels) if isinstance(in_channels, int) else in_channels
        self.lin_rel = Linear(in_l, out_channels, bias=bias)
        self.lin_root = Linear(in_r, out_channels, bias=False)

    def reset_parameters(self):
        self.lin_rel.reset_parameters()
        self.lin_root.reset_parameters()

    def forward(self, x, edge_index, edge_weight=None, size=None):
        if not isinstance(x, tuple):
            x = (x, x)
        out = self.lin_rel(self.propagate(edge_index, x=x, edge_weight=edge_weight, size=size))
        if x[1] is not None:
            out = out + self.lin_root(x[1])
        return out

    def message(self, x_j, edge_weight):
        return x_j if edge_weight is None else edge_weight.view(-1, 1) * x_j
