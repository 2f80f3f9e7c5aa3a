"""MessagePassing: the base of graph convolutions (PyG's torch_geometric.nn.MessagePassing).

propagate(edge_index, size=None, **kwargs) gathers the arguments message() asks for (`x_j` = source rows,
`x_i` = target rows, `edge_weight`, `index`, `size_i`, ...), aggregates the messages at their targets
with `aggr`, and hands the result to update(). Layers whose message is the weighted source row
(`_spmm_message`) skip the [E, F] message tensor: gather+aggregate becomes one sparse product.
"""
import inspect

import rtx.nn as nn

from ..utils.scatter import scatter
from ..utils.spmm import spmm

_SPECIAL = {"index", "ptr", "size", "size_i", "size_j", "dim_size", "edge_index", "edge_index_i", "edge_index_j"}


class MessagePassing(nn.Module):
    # Names of the (node input, edge weight) arguments when message() is exactly `edge_weight * x_j`
    # (or `x_j` without weight); None when message() is anything else.
    _spmm_message = None

    def __init__(self, aggr="add", *, aggr_kwargs=None, flow="source_to_target", node_dim=-2,
                 decomposed_layers=1):
        super().__init__()
        if aggr not in ("add", "sum", "mean", "max", "min", "mul"):
            raise ValueError(f"MessagePassing: aggr must be 'add', 'sum', 'mean', 'max', 'min' or 'mul', "
                             f"got {aggr!r}")
        if flow not in ("source_to_target", "target_to_source"):
            raise ValueError(f"MessagePassing: flow must be 'source_to_target' or 'target_to_source', got {flow!r}")
        self.aggr = aggr
        self.flow = flow
        self.node_dim = node_dim
        self.decomposed_layers = decomposed_layers
        self._msg_args = [p for p in inspect.signature(self.message).parameters if p != "kwargs"]
        self._upd_args = [p for p in inspect.signature(self.update).parameters][1:]

    def _ij(self):
        return (1, 0) if self.flow == "source_to_target" else (0, 1)

    def _size(self, edge_index, size, kwargs):
        # size = (num source nodes, num target nodes); read from tensors passed as x or (x_src, x_dst).
        s = list(size) if size is not None else [None, None]
        for v in kwargs.values():
            if isinstance(v, tuple) and len(v) == 2:
                for k in (0, 1):
                    if s[k] is None and v[k] is not None and hasattr(v[k], "shape"):
                        s[k] = v[k].shape[self.node_dim]
            elif hasattr(v, "shape") and v is not edge_index and v.dim() >= 2:
                s[0] = s[0] if s[0] is not None else v.shape[self.node_dim]
                s[1] = s[1] if s[1] is not None else v.shape[self.node_dim]
        if s[0] is None or s[1] is None:
            n = int(edge_index.max().item()) + 1 if edge_index.numel() else 0
            s = [n if v is None else v for v in s]
        return s if self.flow == "source_to_target" else s[::-1]

    def propagate(self, edge_index, size=None, **kwargs):
        if edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"{type(self).__name__}.propagate(): expected edge_index of shape [2, E], "
                             f"got {list(edge_index.shape)}")
        i, j = self._ij()
        sizes = self._size(edge_index, size, kwargs)  # (num_j, num_i) in source_to_target terms
        size_j, size_i = sizes
        fused = self._fused(edge_index, size_i, kwargs, j, i)
        if fused is not None:
            return self.update(fused, **{k: kwargs[k] for k in self._upd_args if k in kwargs})
        index_i, index_j = edge_index[i], edge_index[j]
        args = {}
        for name in self._msg_args:
            if name.endswith("_i") or name.endswith("_j"):
                base, side = name[:-2], name[-1]
                if base in kwargs:
                    v = kwargs[base]
                    if isinstance(v, tuple):
                        v = v[1] if side == "i" else v[0]
                    args[name] = None if v is None else v.index_select(self.node_dim % v.dim(),
                                                                       index_i if side == "i" else index_j)
                    continue
            if name in kwargs:
                args[name] = kwargs[name]
            elif name == "index":
                args[name] = index_i
            elif name == "ptr":
                args[name] = None
            elif name in ("size_i", "dim_size"):
                args[name] = size_i
            elif name == "size_j":
                args[name] = size_j
            elif name == "edge_index_i":
                args[name] = index_i
            elif name == "edge_index_j":
                args[name] = index_j
            elif name == "edge_index":
                args[name] = edge_index
            elif name == "size":
                args[name] = (size_j, size_i)
            else:
                args[name] = None
        out = self.message(**args)
        out = self.aggregate(out, index_i, ptr=None, dim_size=size_i)
        return self.update(out, **{k: kwargs[k] for k in self._upd_args if k in kwargs})

    def _fused(self, edge_index, size_i, kwargs, j, i):
        if self._spmm_message is None or self.aggr not in ("add", "sum", "mean"):
            return None
        xname, wname = self._spmm_message
        x = kwargs.get(xname)
        if isinstance(x, tuple):
            x = x[0]
        if x is None or x.dim() != 2 or self.node_dim % x.dim() != 0:
            return None
        w = kwargs.get(wname) if wname else None
        if w is not None and w.dim() != 1:
            return None
        ei = edge_index if j == 0 else edge_index.flip(0)
        return spmm(ei, x, w, size_i, reduce="mean" if self.aggr == "mean" else "sum")

    def message(self, x_j):
        return x_j

    def aggregate(self, inputs, index, ptr=None, dim_size=None):
        return scatter(inputs, index, self.node_dim % inputs.dim(), dim_size, reduce=self.aggr)

    def update(self, inputs):
        return inputs

    def __repr__(self):
        inc = getattr(self, "in_channels", None)
        out = getattr(self, "out_channels", None)
        if inc is not None and out is not None:
            return f"{type(self).__name__}({inc}, {out})"
        return super().__repr__()
