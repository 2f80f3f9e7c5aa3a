"""subgraph (edges among a node subset) and k_hop_subgraph (the nodes within k hops)."""
import numpy as np

from rtx.extend import Tensor

from ._index import arr, check_edge_index, num_nodes_of, select, wrap, xp


def _mask_of(subset, n, m):
    s = arr(subset) if isinstance(subset, Tensor) else m.asarray(subset)
    if s.dtype == bool:
        return s
    mask = m.zeros(n, dtype=bool)
    mask[s] = True
    return mask


def subgraph(subset, edge_index, edge_attr=None, relabel_nodes=False, num_nodes=None, return_edge_mask=False):
    """The edges whose both ends are in subset (indices or a bool mask); relabel_nodes numbers them 0..k-1."""
    check_edge_index(edge_index, "subgraph")
    m = xp(edge_index)
    a = arr(edge_index)
    s = arr(subset) if isinstance(subset, Tensor) else m.asarray(subset)
    n = s.size if s.dtype == bool else max(num_nodes_of(edge_index, num_nodes),
                                             int(s.max()) + 1 if s.size else 0)
    mask = _mask_of(subset, n, m)
    edge_mask = mask[a[0]] & mask[a[1]]
    out = a[:, edge_mask]
    if relabel_nodes:
        new_id = m.full(n, -1, dtype=a.dtype)
        new_id[m.nonzero(mask)[0]] = m.arange(int(mask.sum()), dtype=a.dtype)
        out = new_id[out]
    res = (wrap(out), select(edge_attr, edge_mask))
    return res + (wrap(edge_mask),) if return_edge_mask else res


def k_hop_subgraph(node_idx, num_hops, edge_index, relabel_nodes=False, num_nodes=None,
                   flow="source_to_target", directed=False):
    """(subset, edge_index, mapping, edge_mask): the nodes that reach node_idx in ≤ num_hops hops and
    their edges; mapping gives node_idx's positions in subset."""
    check_edge_index(edge_index, "k_hop_subgraph")
    if flow not in ("source_to_target", "target_to_source"):
        raise ValueError(f"k_hop_subgraph(): flow must be 'source_to_target' or 'target_to_source', got {flow!r}")
    m = xp(edge_index)
    a = arr(edge_index)
    n = num_nodes_of(edge_index, num_nodes)
    row, col = (a[0], a[1]) if flow == "target_to_source" else (a[1], a[0])
    seeds = m.atleast_1d(m.asarray(arr(node_idx) if isinstance(node_idx, Tensor) else node_idx)).astype(np.int64)
    subsets = [seeds]
    mask = m.zeros(n, dtype=bool)
    for _ in range(num_hops):
        mask[:] = False
        mask[subsets[-1]] = True
        subsets.append(col[mask[row]])
    subset, inv = m.unique(m.concatenate(subsets), return_inverse=True)
    mapping = inv.reshape(-1)[: seeds.size]
    mask[:] = False
    mask[subset] = True
    if directed:
        node_mask = mask
        edge_mask = node_mask[row] & node_mask[col]
        hop_mask = m.zeros(n, dtype=bool)
        hop_mask[m.concatenate(subsets[:-1])] = True
        edge_mask &= hop_mask[row]
    else:
        edge_mask = mask[row] & mask[col]
    out = a[:, edge_mask]
    if relabel_nodes:
        new_id = m.full(n, -1, dtype=a.dtype)
        new_id[subset] = m.arange(subset.size, dtype=a.dtype)
        out = new_id[out]
    return wrap(subset.astype(np.int64)), wrap(out), wrap(mapping.astype(np.int64)), wrap(edge_mask)
