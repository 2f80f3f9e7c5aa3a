"""Data: one graph as a bag of named tensors (PyG's torch_geometric.data.Data)."""
import copy

import numpy as np

import rtx


class Data:
    """A graph: x [N, F], edge_index [2, E] (row = source, col = target), edge_attr [E, D], y, pos, and any
    other attribute. Attributes are read and set as fields (data.x) or keys (data["x"])."""

    def __init__(self, x=None, edge_index=None, edge_attr=None, y=None, pos=None, **kwargs):
        object.__setattr__(self, "_store", {})
        for key, value in dict(x=x, edge_index=edge_index, edge_attr=edge_attr, y=y, pos=pos, **kwargs).items():
            if value is not None:
                self[key] = value

    # ---- dict-like access ------------------------------------------------------------------------------
    def __getattr__(self, key):
        store = object.__getattribute__(self, "_store")
        if key in store:
            return store[key]
        if key in ("x", "edge_index", "edge_attr", "y", "pos", "batch", "ptr", "edge_weight"):
            return None
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{key}'")

    def __setattr__(self, key, value):
        if key.startswith("_") or isinstance(getattr(type(self), key, None), property):
            object.__setattr__(self, key, value)
        else:
            self[key] = value

    def __delattr__(self, key):
        self._store.pop(key, None)

    def __getitem__(self, key):
        return self._store[key]

    def __setitem__(self, key, value):
        if key == "edge_index" and value is not None:
            if not isinstance(value, rtx.Tensor):
                value = rtx.tensor(np.asarray(value), dtype=rtx.int64)
            if value.dim() != 2 or value.shape[0] != 2:
                raise ValueError(f"Data: edge_index must have shape [2, E], got {list(value.shape)}")
        if value is None:
            self._store.pop(key, None)
        else:
            self._store[key] = value

    def __delitem__(self, key):
        self._store.pop(key, None)

    def __contains__(self, key):
        return key in self._store

    def keys(self):
        return [k for k in self._store if k != "_num_nodes"]

    def items(self):
        return [(k, self._store[k]) for k in self.keys()]

    def __iter__(self):
        return iter(self.items())

    def __len__(self):
        return len(self.keys())

    def __repr__(self):
        def fmt(v):
            return str(list(v.shape)) if isinstance(v, rtx.Tensor) else repr(v)
        return f"{type(self).__name__}({', '.join(f'{k}={fmt(v)}' for k, v in self.items())})"

    # ---- graph properties ------------------------------------------------------------------------------
    @property
    def num_nodes(self):
        if "_num_nodes" in self._store:
            return self._store["_num_nodes"]
        for key in ("x", "pos", "batch"):
            v = self._store.get(key)
            if isinstance(v, rtx.Tensor):
                return v.shape[0]
        ei = self._store.get("edge_index")
        if ei is not None:
            return int(ei.max().item()) + 1 if ei.numel() else 0
        return None

    @num_nodes.setter
    def num_nodes(self, n):
        self._store["_num_nodes"] = None if n is None else int(n)
        if n is None:
            del self._store["_num_nodes"]

    @property
    def num_edges(self):
        ei = self._store.get("edge_index")
        return 0 if ei is None else ei.shape[1]

    @property
    def num_node_features(self):
        x = self._store.get("x")
        return 0 if x is None else (1 if x.dim() == 1 else x.shape[-1])

    num_features = num_node_features

    @property
    def num_edge_features(self):
        e = self._store.get("edge_attr")
        return 0 if e is None else (1 if e.dim() == 1 else e.shape[-1])

    def is_undirected(self):
        from ..utils import is_undirected
        return is_undirected(self.edge_index, self.edge_attr, self.num_nodes)

    def is_directed(self):
        return not self.is_undirected()

    def has_self_loops(self):
        from ..utils import contains_self_loops
        return contains_self_loops(self.edge_index)

    def has_isolated_nodes(self):
        ei = self.edge_index.cpu().numpy()
        return bool(np.setdiff1d(np.arange(self.num_nodes), ei.reshape(-1)).size)

    # ---- batching hooks (PyG's __inc__ / __cat_dim__) --------------------------------------------------
    def __inc__(self, key, value):
        """How much value's entries grow per preceding graph when batching: node indices shift by num_nodes."""
        if "index" in key or key == "face":
            return self.num_nodes
        return 0

    def __cat_dim__(self, key, value):
        """The dimension along which batching concatenates value."""
        if "index" in key or key == "face":
            return -1
        return 0

    # ---- transforms ------------------------------------------------------------------------------------
    def apply(self, fn, *keys):
        out = copy.copy(self)
        object.__setattr__(out, "_store", dict(self._store))
        for k, v in self._store.items():
            if isinstance(v, rtx.Tensor) and (not keys or k in keys):
                out._store[k] = fn(v)
        return out

    def to(self, device, *keys, non_blocking=False):
        return self.apply(lambda t: t.to(device), *keys)

    def cpu(self, *keys):
        return self.apply(lambda t: t.cpu(), *keys)

    def cuda(self, device=None, *keys):
        return self.apply(lambda t: t.to(device or "cuda"), *keys)

    def clone(self):
        return self.apply(lambda t: t.clone())

    def detach(self):
        return self.apply(lambda t: t.detach())

    def subgraph(self, subset):
        """The induced subgraph on subset (indices or a bool mask): node attributes sliced, edges relabelled."""
        from ..utils import subgraph
        n = self.num_nodes
        sub = subset if isinstance(subset, rtx.Tensor) else rtx.tensor(np.asarray(subset))
        if sub.dtype == rtx.bool:
            idx = rtx.tensor(np.nonzero(sub.cpu().numpy())[0], device=sub.device)
        else:
            idx = sub.to(rtx.int64)
        ei, _, emask = subgraph(sub, self.edge_index, None, relabel_nodes=True, num_nodes=n,
                                return_edge_mask=True)
        out = self.apply(lambda t: t)
        ne = self.num_edges
        emask_idx = rtx.tensor(np.nonzero(emask.cpu().numpy())[0], device=self.edge_index.device)
        for k, v in self._store.items():
            if k == "edge_index":
                out._store[k] = ei
            elif isinstance(v, rtx.Tensor) and v.dim() and v.shape[0] == n and k != "_num_nodes":
                out._store[k] = v.index_select(0, idx.to(v.device))
            elif isinstance(v, rtx.Tensor) and v.dim() and v.shape[0] == ne and k.startswith("edge_"):
                out._store[k] = v.index_select(0, emask_idx.to(v.device))
        if "_num_nodes" in out._store:
            out._store["_num_nodes"] = idx.numel()
        return out
