"""softmax over groups of entries sharing an index (attention over each node's incoming edges)."""
from .scatter import scatter


def softmax(src, index=None, ptr=None, num_nodes=None, dim=0):
    """exp(src) normalised within each group of `index` along dim (PyG's utils.softmax).

    The group maximum is subtracted first (detached, it cancels) so large logits do not overflow."""
    if index is None:
        if ptr is None:
            raise ValueError("softmax(): expected index or ptr")
        from .scatter import _repeat
        index = _repeat(ptr[1:] - ptr[:-1], src.device)
    dim = dim + src.dim() if dim < 0 else dim
    n = num_nodes if num_nodes is not None else (int(index.max().item()) + 1 if index.numel() else 0)
    src_max = scatter(src.detach(), index, dim, n, reduce="max")
    out = (src - src_max.index_select(dim, index)).exp()
    out_sum = scatter(out, index, dim, n, reduce="sum") + 1e-16
    return out / out_sum.index_select(dim, index)
