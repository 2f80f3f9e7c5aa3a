"""Graph utilities with PyG's names (torch_geometric.utils)."""
from .coalesce import coalesce, is_undirected, to_undirected
from .convert import from_networkx, to_networkx
from .degree import degree
from .dense import dense_to_sparse, to_dense_adj
from .loop import add_remaining_self_loops, add_self_loops, contains_self_loops, remove_self_loops
from .sampling import dropout_edge, negative_sampling
from .scatter import scatter, segment
from .softmax import softmax
from .spmm import spmm
from .subgraph import k_hop_subgraph, subgraph

__all__ = [
    "add_remaining_self_loops", "add_self_loops", "coalesce", "contains_self_loops", "degree", "dense_to_sparse",
    "dropout_edge", "from_networkx", "is_undirected", "k_hop_subgraph", "negative_sampling", "remove_self_loops",
    "scatter", "segment", "softmax", "spmm", "subgraph", "to_dense_adj", "to_networkx", "to_undirected",
]
