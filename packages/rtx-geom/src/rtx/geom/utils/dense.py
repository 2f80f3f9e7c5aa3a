"""to_dense_adj and dense_to_sparse: between edge lists and (batched) adjacency matrices.

These build dense [B, N, N] arrays by design; message passing never calls them."""
import numpy as np

import rtx
from rtx.extend import raw

from ._index import arr, check_edge_index, wrap, xp


def to_dense_adj(edge_index, batch=None, edge_attr=None, max_num_nodes=None, batch_size=None):
    """[B, N_max, N_max(, F)] adjacency with edge_attr (or 1) summed at each edge's position."""
    check_edge_index(edge_index, "to_dense_adj")
    m = xp(edge_index)
    a = arr(edge_index)
    if batch is None:
        n = int(a.max()) + 1 if a.size else 0
        b = m.zeros(max(n, 1), dtype=np.int64)
    else:
        b = arr(batch)
    if batch_size is None:
        batch_size = int(b.max()) + 1 if b.size else 1
    counts = m.bincount(b, minlength=batch_size)
    ptr = m.concatenate([m.zeros(1, dtype=np.int64), m.cumsum(counts)])
    if max_num_nodes is None:
        max_num_nodes = int(counts.max()) if counts.size else 0
    g = b[a[0]]
    i = a[0] - ptr[g]
    j = a[1] - ptr[g]
    ok = (i < max_num_nodes) & (j < max_num_nodes)
    flat = (g * max_num_nodes + i) * max_num_nodes + j
    flat = flat[ok]
    size = batch_size * max_num_nodes * max_num_nodes
    if edge_attr is None:
        attr = rtx.ones(int(ok.sum()), device=edge_index.device)
    else:
        attr = edge_attr.index_select(0, wrap(m.nonzero(ok)[0]))
    out = attr.new_zeros((size,) + tuple(attr.shape[1:])).index_add(0, wrap(flat.astype(np.int64)), attr)
    return out.view(batch_size, max_num_nodes, max_num_nodes, *attr.shape[1:])


def dense_to_sparse(adj, mask=None):
    """(edge_index, edge_attr) of the non-zero entries of an [N, N] or [B, N, N] adjacency; batched graphs
    are numbered consecutively, as a Batch numbers them."""
    if adj.dim() not in (2, 3):
        raise ValueError(f"dense_to_sparse(): expected a two- or three-dimensional adjacency, got {adj.dim()} dims")
    a = raw(adj)
    m = xp(adj)
    a3 = a[None] if a.ndim == 2 else a
    bsz, n = a3.shape[0], a3.shape[1]
    keep = a3 != 0
    if mask is not None:
        mk = arr(mask).reshape(bsz, n)
        keep = keep & mk[:, :, None] & mk[:, None, :]
        offs = m.concatenate([m.zeros(1, dtype=np.int64), m.cumsum(mk.sum(1))[:-1]])
        local = m.cumsum(mk, axis=1) - 1
    else:
        offs = m.arange(bsz, dtype=np.int64) * n
        local = m.broadcast_to(m.arange(n), (bsz, n))
    bi, ri, ci = m.nonzero(keep)
    edge_index = m.stack([offs[bi] + local[bi, ri], offs[bi] + local[bi, ci]]).astype(np.int64)
    flat = (bi * n + ri) * n + ci
    attr = adj.reshape(-1).index_select(0, wrap(flat.astype(np.int64)))
    return wrap(edge_index), attr
