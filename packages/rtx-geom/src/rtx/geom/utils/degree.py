"""degree: how many times each node index occurs (PyG's torch_geometric.utils.degree)."""
import rtx

from ._index import arr, wrap, xp


def degree(index, num_nodes=None, dtype=None):
    """Counts of each value of the 1-D index (out- or in-degree when given edge_index[0] / [1])."""
    if index.dim() != 1:
        raise ValueError(f"degree(): expected a one-dimensional index, got shape {list(index.shape)}")
    a = arr(index)
    n = int(num_nodes) if num_nodes is not None else (int(a.max()) + 1 if a.size else 0)
    counts = xp(index).bincount(a, minlength=n)
    out = wrap(counts)
    return out.to(dtype or rtx.get_default_dtype())
