"""Batch: many graphs as one disjoint graph, with `batch` (graph id of each node) and `ptr` (node offsets)."""
import numpy as np

import rtx

from .data import Data


class Batch(Data):
    """A disjoint union of Data objects. Build with Batch.from_data_list; undo with to_data_list."""

    @classmethod
    def from_data_list(cls, data_list, follow_batch=None, exclude_keys=None):
        if not data_list:
            raise ValueError("Batch.from_data_list(): expected a non-empty list of Data")
        exclude = set(exclude_keys or [])
        keys = [k for k in data_list[0].keys() if k not in exclude]
        out = cls()
        slices, incs = {}, {}
        counts = [d.num_nodes for d in data_list]
        for key in keys:
            vals = [d[key] for d in data_list]
            if not isinstance(vals[0], rtx.Tensor):
                out[key] = vals
                continue
            d0 = data_list[0]
            cat_dim = d0.__cat_dim__(key, vals[0])
            if vals[0].dim() == 0:
                vals = [v.view(1) for v in vals]
                cat_dim = 0
            cat_dim = cat_dim + vals[0].dim() if cat_dim < 0 else cat_dim
            inc = [d.__inc__(key, v) for d, v in zip(data_list, vals)]
            offs = np.concatenate([[0], np.cumsum(inc[:-1])]).astype(np.int64)
            if any(inc):
                vals = [v + int(o) if o else v for v, o in zip(vals, offs)]
            out[key] = rtx.cat(vals, cat_dim)
            sizes = [v.shape[cat_dim] for v in vals]
            slices[key] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            incs[key] = offs
        dev = next((v.device for v in out._store.values() if isinstance(v, rtx.Tensor)), None)
        out.batch = rtx.tensor(np.repeat(np.arange(len(data_list)), counts).astype(np.int64), device=dev)
        out.ptr = rtx.tensor(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), device=dev)
        for key in follow_batch or []:
            sizes = [data_list[i][key].shape[0] for i in range(len(data_list))]
            out[f"{key}_batch"] = rtx.tensor(np.repeat(np.arange(len(data_list)), sizes).astype(np.int64),
                                             device=dev)
        out._slice_dict, out._inc_dict, out._num_graphs = slices, incs, len(data_list)
        out._data_cls = type(data_list[0])
        return out

    @property
    def num_graphs(self):
        return self._num_graphs

    def __len__(self):
        return self.num_graphs

    def get_example(self, i):
        """The i-th graph, as it was before batching."""
        if not -self.num_graphs <= i < self.num_graphs:
            raise IndexError(f"Batch.get_example(): index {i} out of range for a batch of {self.num_graphs} graphs")
        i = i % self.num_graphs
        d = self._data_cls()
        for key, sl in self._slice_dict.items():
            v = self[key]
            cat_dim = d.__cat_dim__(key, v)
            cat_dim = cat_dim + v.dim() if cat_dim < 0 else cat_dim
            idx = rtx.arange(int(sl[i]), int(sl[i + 1]), device=v.device)
            part = v.index_select(cat_dim, idx)
            if self._inc_dict[key][i]:
                part = part - int(self._inc_dict[key][i])
            d[key] = part
        for key, v in self._store.items():
            if key not in self._slice_dict and key not in ("batch", "ptr") and isinstance(v, list):
                d[key] = v[i]
        ptr = self.ptr.cpu().numpy()
        if "x" not in d and "pos" not in d:
            d.num_nodes = int(ptr[i + 1] - ptr[i])
        return d

    def to_data_list(self):
        return [self.get_example(i) for i in range(self.num_graphs)]

    def index_select(self, idx):
        return [self.get_example(int(i)) for i in idx]
