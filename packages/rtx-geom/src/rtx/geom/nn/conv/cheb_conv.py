"""ChebConv (Defferrard et al.): out = sum_k T_k(L_hat) X W_k, Chebyshev polynomials of the scaled Laplacian."""
import rtx
import rtx.nn as nn

from ...utils.loop import add_self_loops, remove_self_loops
from ...utils.scatter import scatter
from ..linear import Linear, zeros
from ..message_passing import MessagePassing


class ChebConv(MessagePassing):
    _spmm_message = ("x", "norm")

    def __init__(self, in_channels, out_channels, K, normalization="sym", bias=True, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        if K <= 0:
            raise ValueError(f"'K' needs to take a positive value (got {K})")
        if normalization not in (None, "sym", "rw"):
            raise ValueError(f"Unknown normalization {normalization!r}: expected None, 'sym' or 'rw'")
        self.in_channels, self.out_channels, self.normalization = in_channels, out_channels, normalization
        self.lins = nn.ModuleList([Linear(in_channels, out_channels, bias=False, weight_initializer="glorot")
                                   for _ in range(K)])
        if bias:
            self.bias = nn.Parameter(rtx.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        for lin in self.lins:
            lin.reset_parameters()
        zeros(self.bias)

    def __norm__(self, edge_index, num_nodes, edge_weight, lambda_max, dtype):
        # L_hat = 2 L / lambda_max - I with L = I - D^-1/2 A D^-1/2 (sym), I - D^-1 A (rw) or D - A (None).
        edge_index, edge_weight = remove_self_loops(edge_index, edge_weight)
        if edge_weight is None:
            edge_weight = rtx.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device)
        row, col = edge_index[0], edge_index[1]
        deg = scatter(edge_weight, row, 0, num_nodes, reduce="sum")
        if self.normalization == "sym":
            zero = deg == 0
            dis = deg.masked_fill(zero, 1.0).pow(-0.5).masked_fill(zero, 0.0)
            w = -(dis.index_select(0, row) * edge_weight * dis.index_select(0, col))
            diag = rtx.ones(num_nodes, dtype=dtype, device=edge_index.device)
        elif self.normalization == "rw":
            zero = deg == 0
            di = deg.masked_fill(zero, 1.0).pow(-1.0).masked_fill(zero, 0.0)
            w = -(di.index_select(0, row) * edge_weight)
            diag = rtx.ones(num_nodes, dtype=dtype, device=edge_index.device)
        else:
            w = -edge_weight
            diag = deg
        w = 2.0 * w / lambda_max
        edge_index, _ = add_self_loops(edge_index, None, num_nodes=num_nodes)
        w = rtx.cat([w, 2.0 * diag / lambda_max - 1.0], 0)
        return edge_index, w

    def forward(self, x, edge_index, edge_weight=None, batch=None, lambda_max=None):
        if self.normalization != "sym" and lambda_max is None:
            raise ValueError("You need to pass `lambda_max` to `forward() in case the normalization is non-symmetric.")
        if lambda_max is None:
            lambda_max = 2.0
        elif isinstance(lambda_max, rtx.Tensor):
            if lambda_max.numel() != 1:
                raise ValueError("ChebConv: a per-graph lambda_max is not supported; pass one number")
            lambda_max = float(lambda_max.item())
        edge_index, norm = self.__norm__(edge_index, x.shape[self.node_dim], edge_weight, lambda_max, x.dtype)
        tx0 = x
        out = self.lins[0](tx0)
        if len(self.lins) > 1:
            tx1 = self.propagate(edge_index, x=x, norm=norm)
            out = out + self.lins[1](tx1)
            for lin in self.lins[2:]:
                tx2 = 2.0 * self.propagate(edge_index, x=tx1, norm=norm) - tx0
                out = out + lin(tx2)
                tx0, tx1 = tx1, tx2
        return out + self.bias if self.bias is not None else out

    def message(self, x_j, norm):
        return norm.view(-1, 1) * x_j

    def __repr__(self):
        return (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, K={len(self.lins)}, "
                f"normalization={self.normalization})")
