"""Synthetic graphs: FakeDataset (random graphs, features shifted by the label, as PyG's) and
StochasticBlockModelDataset (an SBM with block-dependent features)."""
import numpy as np

import rtx

from ..data import Data, InMemoryDataset


def _random_edges(rng, n, avg_degree, undirected=True):
    m = int(n * avg_degree / (2 if undirected else 1))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    key = np.unique(src * n + dst)
    return np.stack([key // n, key % n]).astype(np.int64)


class FakeDataset(InMemoryDataset):
    """num_graphs random graphs (node count around avg_num_nodes, degree around avg_degree); features are
    N(0, 1) plus the label, so a model can learn them. task 'node' labels nodes, 'graph' graphs."""

    def __init__(self, num_graphs=1, avg_num_nodes=1000, avg_degree=10.0, num_channels=64, edge_dim=0,
                 num_classes=10, task="auto", is_undirected=True, transform=None, pre_transform=None, seed=None):
        if task == "auto":
            task = "graph" if num_graphs > 1 else "node"
        if task not in ("node", "graph"):
            raise ValueError(f"FakeDataset: task must be 'node', 'graph' or 'auto', got {task!r}")
        rng = np.random.default_rng(seed)
        avg_num_nodes = max(avg_num_nodes, int(avg_degree))
        graphs = []
        for _ in range(max(num_graphs, 1)):
            n = max(int(rng.normal(avg_num_nodes, avg_num_nodes / 10)), 1)
            d = Data(edge_index=rtx.tensor(_random_edges(rng, n, max(avg_degree, 1), is_undirected)))
            if num_classes > 0:
                y = rng.integers(0, num_classes, n if task == "node" else 1)
                d.y = rtx.tensor(y.astype(np.int64))
            if num_channels > 0:
                x = rng.standard_normal((n, num_channels))
                if num_classes > 0:
                    x = x + (y[:, None] if task == "node" else y[0])
                d.x = rtx.tensor(x.astype(np.float32))
            else:
                d.num_nodes = n
            if edge_dim > 1:
                d.edge_attr = rtx.tensor(rng.random((d.num_edges, edge_dim)).astype(np.float32))
            elif edge_dim == 1:
                d.edge_weight = rtx.tensor(rng.random(d.num_edges).astype(np.float32))
            graphs.append(d)
        super().__init__(None, transform, pre_transform, data_list=graphs)


def stochastic_blockmodel_graph(block_sizes, edge_probs, directed=False, seed=None):
    """edge_index [2, E] of an SBM: nodes in blocks, an edge i–j with probability edge_probs[b_i][b_j]
    (sampled block pair by block pair, so memory is O(E), not O(N^2))."""
    rng = np.random.default_rng(seed)
    sizes = np.asarray(block_sizes, dtype=np.int64)
    probs = np.asarray(edge_probs, dtype=np.float64)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    rows, cols = [], []
    for a in range(len(sizes)):
        for b in range(len(sizes)):
            if not directed and b < a:
                continue
            pairs = sizes[a] * sizes[b]
            k = rng.binomial(pairs, probs[a, b])
            flat = rng.choice(pairs, size=k, replace=False) if k else np.empty(0, np.int64)
            i, j = offs[a] + flat // sizes[b], offs[b] + flat % sizes[b]
            keep = i != j if directed or a != b else i < j
            rows.append(i[keep])
            cols.append(j[keep])
    r, c = np.concatenate(rows), np.concatenate(cols)
    if not directed:
        r, c = np.concatenate([r, c]), np.concatenate([c, r])
    n = int(offs[-1])
    key = np.unique(r * n + c)
    return rtx.tensor(np.stack([key // n, key % n]).astype(np.int64))


class StochasticBlockModelDataset(InMemoryDataset):
    """Graphs from a stochastic block model; y is the block; x (num_channels) is drawn around a random centre
    per block (make_classification-like, std 1), so features and structure both carry the block."""

    def __init__(self, root=None, block_sizes=(50, 50), edge_probs=((0.2, 0.02), (0.02, 0.2)), num_graphs=1,
                 num_channels=None, is_undirected=True, transform=None, pre_transform=None, seed=None,
                 feature_separation=1.0):
        rng = np.random.default_rng(seed)
        sizes = np.asarray(block_sizes)
        graphs = []
        for g in range(num_graphs):
            ei = stochastic_blockmodel_graph(sizes, edge_probs, not is_undirected, None if seed is None else seed + g)
            y = np.repeat(np.arange(len(sizes)), sizes)
            d = Data(edge_index=ei, y=rtx.tensor(y.astype(np.int64)))
            if num_channels:
                centres = rng.standard_normal((len(sizes), num_channels)) * feature_separation
                d.x = rtx.tensor((centres[y] + rng.standard_normal((len(y), num_channels))).astype(np.float32))
            else:
                d.num_nodes = len(y)
            graphs.append(d)
        super().__init__(root, transform, pre_transform, data_list=graphs)
