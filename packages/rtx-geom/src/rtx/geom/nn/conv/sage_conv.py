"""SAGEConv (GraphSAGE, Hamilton et al.): out = W_l · aggr_{j in N(i)} x_j + W_r · x_i."""
import rtx.nn.functional as F

from ..linear import Linear
from ..message_passing import MessagePassing


class SAGEConv(MessagePassing):
    _spmm_message = ("x", None)

    def __init__(self, in_channels, out_channels, aggr="mean", normalize=False, root_weight=True, project=False,
                 bias=True, **kwargs):
        super().__init__(aggr=aggr, **kwargs)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.normalize, self.root_weight, self.project = normalize, root_weight, project
        in_l, in_r = (in_channels, in_channels) if isinstance(in_channels, int) else in_channels
        if project:
            if in_l != in_r:
                raise ValueError(f"'{type(self).__name__}' does not support 'project' for bipartite inputs of "
                                 f"different sizes (got {in_channels})")
            self.lin = Linear(in_l, in_l, bias=True)
        self.lin_l = Linear(in_l, out_channels, bias=bias)
        if root_weight:
            self.lin_r = Linear(in_r, out_channels, bias=False)

    def reset_parameters(self):
        for name in ("lin", "lin_l", "lin_r"):
            if hasattr(self, name):
                getattr(self, name).reset_parameters()

    def forward(self, x, edge_index, size=None):
        if not isinstance(x, tuple):
            x = (x, x)
        if self.project:
            x = (F.relu(self.lin(x[0])), x[1])
        out = self.propagate(edge_index, x=x, size=size)
        out = self.lin_l(out)
        if self.root_weight and x[1] is not None:
            out = out + self.lin_r(x[1])
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        return out

    def message(self, x_j):
        return x_j

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, aggr={self.aggr})"
