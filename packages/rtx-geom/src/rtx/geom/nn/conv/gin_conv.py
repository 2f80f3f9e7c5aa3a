"""GINConv and GINEConv (Xu et al.; Hu et al.): out = nn((1 + eps) x_i + sum_j m_ji)."""
import rtx
import rtx.nn.functional as F

from ..linear import Linear
from ..message_passing import MessagePassing


def _in_features(module):
    for m in module.modules():
        for attr in ("in_features", "in_channels"):
            v = getattr(m, attr, None)
            if isinstance(v, int):
                return v
    raise ValueError("GINEConv: could not infer the node feature size from 'nn'; give a module with a Linear")


class GINConv(MessagePassing):
    _spmm_message = ("x", None)

    def __init__(self, nn, eps=0.0, train_eps=False, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        self.nn = nn
        self.initial_eps = eps
        if train_eps:
            self.eps = rtx.nn.Parameter(rtx.tensor([float(eps)]))
        else:
            self.register_buffer("eps", rtx.tensor([float(eps)]))

    def reset_parameters(self):
        if hasattr(self.nn, "reset_parameters"):
            self.nn.reset_parameters()
        with rtx.no_grad():
            self.eps.fill_(self.initial_eps)

    def forward(self, x, edge_index, size=None):
        if not isinstance(x, tuple):
            x = (x, x)
        out = self.propagate(edge_index, x=x, size=size)
        if x[1] is not None:
            out = out + (1 + self.eps) * x[1]
        return self.nn(out)

    def message(self, x_j):
        return x_j

    def __repr__(self):
        return f"{type(self).__name__}(nn={self.nn})"


class GINEConv(MessagePassing):
    """GIN with edge features: messages are ReLU(x_j + lin(edge_attr))."""

    def __init__(self, nn, eps=0.0, train_eps=False, edge_dim=None, **kwargs):
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)
        self.nn = nn
        self.initial_eps = eps
        if train_eps:
            self.eps = rtx.nn.Parameter(rtx.tensor([float(eps)]))
        else:
            self.register_buffer("eps", rtx.tensor([float(eps)]))
        self.lin = Linear(edge_dim, _in_features(nn)) if edge_dim is not None else None

    def reset_parameters(self):
        if hasattr(self.nn, "reset_parameters"):
            self.nn.reset_parameters()
        if self.lin is not None:
            self.lin.reset_parameters()
        with rtx.no_grad():
            self.eps.fill_(self.initial_eps)

    def forward(self, x, edge_index, edge_attr=None, size=None):
        if not isinstance(x, tuple):
            x = (x, x)
        out = self.propagate(edge_index, x=x, edge_attr=edge_attr, size=size)
        if x[1] is not None:
            out = out + (1 + self.eps) * x[1]
        return self.nn(out)

    def message(self, x_j, edge_attr):
        if self.lin is None and x_j.shape[-1] != edge_attr.shape[-1]:
            raise ValueError("Node and edge feature dimensionalities do not match. Consider setting the "
                             "'edge_dim' attribute of 'GINEConv'")
        if self.lin is not None:
            edge_attr = self.lin(edge_attr)
        return F.relu(x_j + edge_attr)

    def __repr__(self):
        return f"{type(self).__name__}(nn={self.nn})"



