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
    """GraphSAGE sampling on a CSC copy of the graph, vectorised per hop: one random draw covers every
    frontier node's picks, and a node -> local id table (reset after each batch) relabels them."""

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
        self._local = np.full(self.n, -1, dtype=np.int64)  # global -> local id of the batch being built

    def _pick(self, frontier, k):
        """CSC positions of the in-edges sampled for each frontier node, grouped by node, and how many each got."""
        lo = self.colptr[frontier]
        deg = self.colptr[frontier + 1] - lo
        if k < 0:
            count = deg
        elif self.replace:
            count = np.where(deg > 0, k, 0)
        else:
            count = np.minimum(deg, k)
        owner = np.repeat(np.arange(len(frontier)), count)
        starts = np.cumsum(count) - count
        if k >= 0 and self.replace:
            # k draws with replacement from each node's in-edges: one uniform per pick
            return lo[owner] + (self.rng.random(len(owner)) * deg[owner]).astype(np.int64), count
        full = (deg <= k) | (k < 0)
        # nodes with at most k in-edges keep them all
        pos = lo[owner] + np.arange(len(owner)) - starts[owner]
        big = np.nonzero(~full)[0]
        if len(big):
            # k of deg without replacement: a random key per candidate edge, the k smallest keys per node win
            # (a uniform k-subset); argsort of node-index + key sorts by node, then by key
            cand_owner = np.repeat(big, deg[big])
            cand_start = np.cumsum(deg[big]) - deg[big]
            offset = np.arange(len(cand_owner)) - np.repeat(cand_start, deg[big])
            order = np.argsort(np.repeat(np.arange(len(big)), deg[big]) + self.rng.random(len(cand_owner)),
                               kind="stable")
            rank = np.arange(len(order)) - np.repeat(cand_start, deg[big])
            keep = order[rank < k]
            pos[~full[owner]] = lo[cand_owner[keep]] + offset[keep]
        return pos, count

    def sample(self, seeds):
        """(node ids with seeds first, sampled edges as local [2, e] (source, target), their global edge ids)."""
        seeds = np.asarray(seeds, dtype=np.int64)
        # The seeds fill the first len(seeds) slots as given, so row k is input k even when a node repeats
        # (as torch-sparse's sampler does); a repeated node's edges attach to its first slot.
        first = np.sort(np.unique(seeds, return_index=True)[1])
        n_id = [seeds]
        local = self._local
        local[seeds[first]] = first
        size = len(seeds)
        frontier = seeds[first]
        rows, cols, eids = [], [], []
        try:
            for k in self.num_neighbors:
                pos, count = self._pick(frontier, k)
                src = self.src_sorted[pos]
                # new nodes get the next local ids in order of first appearance
                fresh = src[local[src] < 0]
                fresh = fresh[np.sort(np.unique(fresh, return_index=True)[1])]
                local[fresh] = size + np.arange(len(fresh))
                size += len(fresh)
                n_id.append(fresh)
                rows.append(local[src])
                cols.append(np.repeat(local[frontier], count))
                eids.append(self.eid_sorted[pos])
                frontier = fresh
            n_id = np.concatenate(n_id)
        finally:
            local[np.concatenate(n_id) if isinstance(n_id, list) else n_id] = -1
        e = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        return (n_id, np.stack([e, np.concatenate(cols) if cols else e]),
                np.concatenate(eids) if eids else e)

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
