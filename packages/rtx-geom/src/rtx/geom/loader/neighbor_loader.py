"""NeighborLoader and LinkNeighborLoader: mini-batches of sampled k-hop neighbourhoods (GraphSAGE sampling).

The graph is held as CSC (in-edges grouped by target) once; each batch samples up to num_neighbors[k] in-edges
per frontier node at hop k, without replacement, and returns the induced subgraph of the sampled edges as a
Data whose first `batch_size` nodes are the seeds (PyG's layout: n_id, e_id, input_id, batch_size).
"""
import numpy as np

import rtx

from ..data import Data


def _host(t):
    return t.cpu().numpy() if isinstance(t, rtx.Tensor) else np.asarray(t)


class _Sampler:
    def __init__(self, data, num_neighbors, replace=False, seed=None):
        self.data = data
        self.num_neighbors = list(num_neighbors)
        self.replace = replace
        self.n = data.num_nodes
        ei = _host(data.edge_index)
        order = np.argsort(ei[1], kind="stable")
        self.src_sorted = ei[0][order]
        self.eid_sorted = order
        self.colptr = np.concatenate([[0], np.cumsum(np.bincount(ei[1], minlength=self.n))])
        self.rng = np.random.default_rng(seed)

    def sample(self, seeds):
        """(node ids with seeds first, sampled edges as local [2, e] (source, target), their global edge ids)."""
        seeds = np.asarray(seeds, dtype=np.int64)
        nodes, inv = np.unique(seeds, return_inverse=True)
        n_id = list(seeds[np.sort(np.unique(inv, return_index=True)[1])])
        local = {int(v): i for i, v in enumerate(n_id)}
        frontier = np.array(n_id, dtype=np.int64)
        rows, cols, eids = [], [], []
        for k in self.num_neighbors:
            nxt = []
            for v in frontier:
                lo, hi = self.colptr[v], self.colptr[v + 1]
                deg = hi - lo
                if deg == 0:
                    continue
                if k < 0 or (deg <= k and not self.replace):
                    pick = np.arange(lo, hi)
                else:
                    pick = lo + self.rng.choice(deg, size=k, replace=self.replace)
                for p in pick:
                    u = int(self.src_sorted[p])
                    if u not in local:
                        local[u] = len(n_id)
                        n_id.append(u)
                        nxt.append(u)
                    rows.append(local[u])
                    cols.append(local[int(v)])
                    eids.append(int(self.eid_sorted[p]))
            frontier = np.array(nxt, dtype=np.int64)
        return (np.array(n_id, dtype=np.int64), np.array([rows, cols], dtype=np.int64).reshape(2, -1),
                np.array(eids, dtype=np.int64))

    def subgraph_data(self, seeds):
        n_id, ei, e_id = self.sample(seeds)
        d = self.data
        out = Data(edge_index=rtx.tensor(ei))
        nid_t = rtx.tensor(n_id)
        eid_t = rtx.tensor(e_id)
        ne = d.num_edges
        for key, v in d.items():
            if key == "edge_index" or not isinstance(v, rtx.Tensor):
                continue
            if v.dim() and v.shape[0] == self.n:
                out[key] = v.index_select(0, nid_t.to(v.device))
            elif v.dim() and v.shape[0] == ne and key.startswith("edge_"):
                out[key] = v.index_select(0, eid_t.to(v.device))
            else:
                out[key] = v
        out.n_id, out.e_id = nid_t, eid_t
        out.num_nodes = len(n_id)
        return out


class NeighborLoader:
    """Iterate over input_nodes (all nodes, an index tensor or a bool mask) in batches of batch_size seeds;
    each batch is the sampled subgraph around them. `seed` makes the sampling and the shuffling repeatable."""

    def __init__(self, data, num_neighbors, input_nodes=None, batch_size=1, shuffle=False, replace=False,
                 seed=None, drop_last=False, **kwargs):
        if not isinstance(num_neighbors, (list, tuple)) or not all(isinstance(k, int) for k in num_neighbors):
            raise TypeError(f"NeighborLoader: num_neighbors must be a list of ints (one per hop), "
                            f"got {num_neighbors!r}")
        self.data, self.batch_size, self.shuffle, self.drop_last = data, batch_size, shuffle, drop_last
        self.sampler = _Sampler(data, num_neighbors, replace, seed)
        self.rng = np.random.default_rng(None if seed is None else seed + 1)
        if input_nodes is None:
            idx = np.arange(data.num_nodes)
        else:
            idx = _host(input_nodes)
            if idx.dtype == bool:
                idx = np.nonzero(idx)[0]
        self.input_nodes = idx.astype(np.int64)

    def __len__(self):
        n = len(self.input_nodes)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        order = self.rng.permutation(len(self.input_nodes)) if self.shuffle else np.arange(len(self.input_nodes))
        for b in range(len(self)):
            pos = order[b * self.batch_size:(b + 1) * self.batch_size]
            seeds = self.input_nodes[pos]
            out = self.sampler.subgraph_data(seeds)
            out.input_id = rtx.tensor(pos.astype(np.int64))
            out.batch_size = len(seeds)
            yield out


class LinkNeighborLoader:
    """Mini-batches of edges for link prediction: the sampled neighbourhood of both ends of each edge in
    edge_label_index (default: all edges), with edge_label (1, or given) and, when neg_sampling_ratio > 0,
    that many random negative pairs per positive labelled 0. edge_label_index is relabelled to local ids."""

    def __init__(self, data, num_neighbors, edge_label_index=None, edge_label=None, neg_sampling_ratio=0.0,
                 batch_size=1, shuffle=False, replace=False, seed=None, **kwargs):
        self.data, self.batch_size, self.shuffle, self.neg_ratio = data, batch_size, shuffle, float(neg_sampling_ratio)
        self.sampler = _Sampler(data, num_neighbors, replace, seed)
        self.rng = np.random.default_rng(None if seed is None else seed + 1)
        eli = data.edge_index if edge_label_index is None else edge_label_index
        self.edge_label_index = _host(eli).astype(np.int64)
        m = self.edge_label_index.shape[1]
        self.edge_label = np.ones(m, dtype=np.float32) if edge_label is None else _host(edge_label)

    def __len__(self):
        return -(-self.edge_label_index.shape[1] // self.batch_size)

    def __iter__(self):
        m = self.edge_label_index.shape[1]
        order = self.rng.permutation(m) if self.shuffle else np.arange(m)
        n = self.data.num_nodes
        for b in range(len(self)):
            pos = order[b * self.batch_size:(b + 1) * self.batch_size]
            pairs = self.edge_label_index[:, pos]
            labels = self.edge_label[pos]
            k = int(round(self.neg_ratio * len(pos)))
            if k:
                neg = self.rng.integers(0, n, size=(2, k))
                pairs = np.concatenate([pairs, neg], axis=1)
                labels = np.concatenate([labels, np.zeros(k, dtype=labels.dtype)])
            seeds, inv = np.unique(pairs.reshape(-1), return_inverse=True)
            out = self.sampler.subgraph_data(seeds)
            # subgraph_data keeps seeds first, in the order given (np.unique's sorted order here)
            out.edge_label_index = rtx.tensor(inv.reshape(2, -1).astype(np.int64))
            out.edge_label = rtx.tensor(labels)
            out.input_id = rtx.tensor(pos.astype(np.int64))
            yield out
