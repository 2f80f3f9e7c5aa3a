"""Self-loops: add_self_loops, add_remaining_self_loops, remove_self_loops, contains_self_loops."""
import numpy as np

import rtx

from ._index import arr, check_edge_index, num_nodes_of, select, wrap, xp
from .scatter import scatter


def contains_self_loops(edge_index):
    a = arr(edge_index)
    return bool((a[0] == a[1]).any())


def remove_self_loops(edge_index, edge_attr=None):
    """edge_index without (i, i) edges, and the matching rows of edge_attr."""
    check_edge_index(edge_index, "remove_self_loops")
    a = arr(edge_index)
    keep = a[0] != a[1]
    return wrap(a[:, keep]), select(edge_attr, keep)


def _loop_attr(edge_index, edge_attr, fill_value, n, op):
    if edge_attr is None:
        return None
    shape = (n,) + tuple(edge_attr.shape[1:])
    if fill_value is None:
        return edge_attr.new_ones(shape)
    if isinstance(fill_value, (int, float)):
        return edge_attr.new_full(shape, float(fill_value))
    if isinstance(fill_value, rtx.Tensor):
        return fill_value.to(edge_attr.dtype).expand(*shape) if fill_value.dim() else \
            edge_attr.new_full(shape, float(fill_value.item()))
    if isinstance(fill_value, str):
        # Each loop gets the reduction of the node's incoming edge attributes (PyG's fill_value='mean' etc.).
        return scatter(edge_attr, edge_index[1], 0, n, reduce=fill_value)
    raise TypeError(f"{op}(): fill_value must be None, a number, a tensor or a reduce name, got {fill_value!r}")


def add_self_loops(edge_index, edge_attr=None, fill_value=None, num_nodes=None):
    """Append an (i, i) edge for every node; edge_attr of the loops is fill_value (default 1)."""
    check_edge_index(edge_index, "add_self_loops")
    n = num_nodes_of(edge_index, num_nodes)
    a = arr(edge_index)
    loop = xp(edge_index).arange(n, dtype=a.dtype)
    out = xp(edge_index).concatenate([a, xp(edge_index).stack([loop, loop])], axis=1)
    attr = _loop_attr(edge_index, edge_attr, fill_value, n, "add_self_loops")
    return wrap(out), (rtx.cat([edge_attr, attr], 0) if attr is not None else None)


def add_remaining_self_loops(edge_index, edge_attr=None, fill_value=None, num_nodes=None):
    """Give every node exactly one self-loop: existing loops keep their attribute, the rest get fill_value."""
    check_edge_index(edge_index, "add_remaining_self_loops")
    n = num_nodes_of(edge_index, num_nodes)
    a = arr(edge_index)
    m = xp(edge_index)
    keep = a[0] != a[1]
    loop = m.arange(n, dtype=a.dtype)
    out = m.concatenate([a[:, keep], m.stack([loop, loop])], axis=1)
    if edge_attr is None:
        return wrap(out), None
    attr = _loop_attr(edge_index, edge_attr, fill_value, n, "add_remaining_self_loops")
    inv = m.nonzero(~keep)[0]
    if inv.size:
        # Existing loop weights replace the fill value at their node (the last one wins on repeats, as in PyG).
        nodes = a[0, inv]
        attr = attr.index_copy(0, wrap(nodes.astype(np.int64)), select(edge_attr, inv))
    return wrap(out), rtx.cat([select(edge_attr, keep), attr], 0)
