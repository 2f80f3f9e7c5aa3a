"""GCNConv (Kipf & Welling): out = D^-1/2 (A + I) D^-1/2 X W + b."""
import rtx
import rtx.nn as nn

from ...utils.loop import add_remaining_self_loops
from ...utils.scatter import scatter
from ..linear import Linear, zeros
from ..message_passing import MessagePassing


def gcn_norm(edge_index, edge_weight=None, num_nodes=None, improved=False, add_self_loops=True,
             flow="source_to_target", dtype=None):
    """(edge_index, edge_weight) with self-loops (weight 2 when improved) and symmetric normalisation
    w_ij / sqrt(deg_i deg_j), the degree summed over each node's incoming weights."""
    fill = 2.0 if improved else 1.0
    n = num_nodes if num_nodes is not None else (int(edge_index.max().item()) + 1 if edge_index.numel() else 0)
    if edge_weight is None:
        edge_weight = rtx.ones(edge_index.shape[1], dtype=dtype or rtx.get_default_dtype(),
                               device=edge_index.device)
    if add_self_loops:
        edge_index, edge_weight = add_remaining_self_loops(edge_index, edge_weight, fill, n)
    row, col = edge_index[0], edge_index[1]
    idx = col if flow == "source_to_target" else row
    deg = scatter(edge_weight, idx, 0, n, reduce="sum")
    zero = deg == 0  # isolated nodes get 0, not inf (PyG's masked inf)
    dis = deg.masked_fill(zero, 1.0).pow(-0.5).masked_fill(zero, 0.0)
    return edge_index, dis.index_select(0, row) * edge_weight * dis.index_select(0, col)


class GCNConv(MessagePassing):
    _spmm_message = ("x", "edge_weight")

    def __init__(self, in_channels, out_channels, improved=False, cached=False, add_self_loops=None,
                 normalize=True, bias=True, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        if add_self_loops is None:
            add_self_loops = normalize
        if add_self_loops and not normalize:
            raise ValueError(f"'{type(self).__name__}' does not support adding self-loops to the graph when no "
                             "on-the-fly normalization is applied")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.improved, self.cached, self.add_self_loops, self.normalize = improved, cached, add_self_loops, normalize
        self._cached_edge_index = None
        self.lin = Linear(in_channels, out_channels, bias=False, weight_initializer="glorot")
        if bias:
            self.bias = nn.Parameter(rtx.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        zeros(self.bias)
        self._cached_edge_index = None

    def forward(self, x, edge_index, edge_weight=None):
        if self.normalize:
            if self._cached_edge_index is not None:
                edge_index, edge_weight = self._cached_edge_index
            else:
                edge_index, edge_weight = gcn_norm(edge_index, edge_weight, x.shape[self.node_dim], self.improved,
                                                   self.add_self_loops, self.flow, x.dtype)
                if self.cached:
                    self._cached_edge_index = (edge_index, edge_weight)
        x = self.lin(x)
        out = self.propagate(edge_index, x=x, edge_weight=edge_weight)
        return out + self.bias if self.bias is not None else out

    def message(self, x_j, edge_weight):
        return x_j if edge_weight is None else edge_weight.view(-1, 1) * x_j
