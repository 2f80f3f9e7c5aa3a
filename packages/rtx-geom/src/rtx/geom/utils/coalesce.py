"""coalesce (sort edges, merge duplicates), to_undirected, is_undirected."""
import numpy as np

from rtx.extend import raw

from ._index import arr, check_edge_index, num_nodes_of, wrap, xp
from .scatter import scatter

_MISSING = object()  # PyG returns a pair only when edge_attr was passed, even as None


def coalesce(edge_index, edge_attr=_MISSING, num_nodes=None, reduce="sum", sort_by_row=True):
    """Edges sorted by (row, col) (or (col, row)) with duplicates merged; their attributes reduced."""
    check_edge_index(edge_index, "coalesce")
    n = num_nodes_of(edge_index, num_nodes)
    a = arr(edge_index)
    m = xp(edge_index)
    key = a[0] * n + a[1] if sort_by_row else a[1] * n + a[0]
    uniq, inverse = m.unique(key, return_inverse=True)
    first, second = uniq // max(n, 1), uniq % max(n, 1)
    out = m.stack([first, second] if sort_by_row else [second, first]).astype(a.dtype)
    if edge_attr is _MISSING:
        return wrap(out)
    if edge_attr is None:
        return wrap(out), None
    attr = scatter(edge_attr, wrap(inverse.reshape(-1).astype(np.int64)), 0, uniq.size, reduce=reduce)
    return wrap(out), attr


def to_undirected(edge_index, edge_attr=_MISSING, num_nodes=None, reduce="sum"):
    """Add the reverse of every edge, then coalesce (attributes of a pair present both ways are reduced)."""
    check_edge_index(edge_index, "to_undirected")
    a = arr(edge_index)
    both = xp(edge_index).concatenate([a, a[::-1]], axis=1)
    if edge_attr is _MISSING or edge_attr is None:
        return coalesce(wrap(both), edge_attr, num_nodes, reduce)
    import rtx
    return coalesce(wrap(both), rtx.cat([edge_attr, edge_attr], 0), num_nodes, reduce)


def is_undirected(edge_index, edge_attr=None, num_nodes=None):
    """True when every edge (i, j) has its reverse (j, i), with equal attributes when given."""
    check_edge_index(edge_index, "is_undirected")
    n = num_nodes_of(edge_index, num_nodes)
    a = arr(edge_index)
    m = xp(edge_index)
    fwd = m.argsort(a[0] * n + a[1], kind="stable")
    bwd = m.argsort(a[1] * n + a[0], kind="stable")
    if not bool((a[0][fwd] == a[1][bwd]).all() and (a[1][fwd] == a[0][bwd]).all()):
        return False
    if edge_attr is None:
        return True
    e = raw(edge_attr)
    return bool((e[fwd] == e[bwd]).all())
