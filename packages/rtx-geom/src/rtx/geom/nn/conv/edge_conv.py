"""EdgeConv (DGCNN, Wang et al.): out_i = max_j nn([x_i, x_j - x_i])."""
import rtx

from ..message_passing import MessagePassing


class EdgeConv(MessagePassing):
    def __init__(self, nn, aggr="max", **kwargs):
        super().__init__(aggr=aggr, **kwargs)
        self.nn = nn

    def reset_parameters(self):
        if hasattr(self.nn, "reset_parameters"):
            self.nn.reset_parameters()

    def forward(self, x, edge_index):
        if not isinstance(x, tuple):
            x = (x, x)
        return self.propagate(edge_index, x=x)

    def message(self, x_i, x_j):
        return self.nn(rtx.cat([x_i, x_j - x_i], -1))

    def __repr__(self):
        return f"{type(self).__name__}(nn={self.nn})"
