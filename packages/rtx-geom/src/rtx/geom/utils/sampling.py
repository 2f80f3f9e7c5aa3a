"""negative_sampling (random non-edges) and dropout_edge."""
import numpy as np

import rtx
from rtx.extend import raw

from ._index import arr, check_edge_index, num_nodes_of, wrap, xp


def _rng(generator):
    # Host RNG seeded from rtx's generator, so rtx.manual_seed makes sampling reproducible.
    seed = int(rtx.randint(0, 2**62, (1,), generator=generator).item())
    return np.random.default_rng(seed)


def negative_sampling(edge_index, num_nodes=None, num_neg_samples=None, method="sparse",
                      force_undirected=False, generator=None):
    """Up to num_neg_samples (default E) node pairs (i, j), i != j, that are not edges of edge_index."""
    check_edge_index(edge_index, "negative_sampling")
    if method not in ("sparse", "dense"):
        raise ValueError(f"negative_sampling(): method must be 'sparse' or 'dense', got {method!r}")
    a = np.asarray(arr(edge_index).get() if hasattr(arr(edge_index), "get") else arr(edge_index))
    if isinstance(num_nodes, tuple):
        n_src, n_dst = num_nodes
        bipartite = True
    else:
        n_src = n_dst = num_nodes_of(edge_index, num_nodes)
        bipartite = False
    want = a.shape[1] if num_neg_samples is None else int(num_neg_samples)
    if isinstance(num_neg_samples, float) and num_neg_samples < 1:
        want = int(num_neg_samples * a.shape[1])
    if force_undirected:
        want //= 2
    size = n_src * n_dst
    existing = np.unique(a[0] * n_dst + a[1])
    rng = _rng(generator)
    found = np.empty(0, np.int64)
    # Draw in rounds, keeping candidates that are neither edges, loops nor already found.
    for _ in range(20):
        if found.size >= want:
            break
        cand = rng.integers(0, size, size=max(2 * (want - found.size), 16))
        cand = cand[~np.isin(cand, existing)]
        if not bipartite:
            cand = cand[cand // n_dst != cand % n_dst]
        if force_undirected:
            r, c = cand // n_dst, cand % n_dst
            cand = cand[r < c]
            cand = cand[~np.isin(c * n_dst + r, existing)]
        _, first = np.unique(np.concatenate([found, cand]), return_index=True)
        found = np.concatenate([found, cand])[np.sort(first)]
    found = found[:want]
    out = np.stack([found // n_dst, found % n_dst])
    if force_undirected:
        out = np.concatenate([out, out[::-1]], axis=1)
    return wrap(out.astype(np.int64)).to(edge_index.device)


def dropout_edge(edge_index, p=0.5, force_undirected=False, training=True, generator=None):
    """(kept edge_index, edge_mask): each edge dropped with probability p; with force_undirected an
    edge and its reverse are dropped together (the mask then indexes the kept upper-triangle edges)."""
    check_edge_index(edge_index, "dropout_edge")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout_edge(): dropout probability has to be between 0 and 1 (got {p})")
    a = arr(edge_index)
    if not training or p == 0.0:
        return edge_index, wrap(np.ones(a.shape[1], dtype=bool)).to(edge_index.device)
    m = xp(edge_index)
    keep = raw(rtx.rand(a.shape[1], generator=generator, device=edge_index.device) >= p)
    if not force_undirected:
        return wrap(a[:, keep]), wrap(keep)
    # Decide once per unordered pair (on its i < j copy) and keep both directions.
    keep = keep & (a[0] < a[1])
    idx = m.nonzero(keep)[0]
    out = a[:, idx]
    return wrap(m.concatenate([out, out[::-1]], axis=1)), wrap(m.concatenate([idx, idx]))
