"""Global pooling: one vector per graph from its nodes (sum, mean or max over each `batch` group)."""
from ..utils.scatter import scatter


def _pool(x, batch, size, reduce, dim=-2):
    dim = dim + x.dim() if dim < 0 else dim
    if batch is None:
        if reduce == "sum":
            return x.sum(dim, keepdim=True)
        if reduce == "mean":
            return x.mean(dim, keepdim=True)
        return x.amax(dim, keepdim=True)
    size = int(batch.max().item()) + 1 if size is None else size
    return scatter(x, batch, dim, size, reduce=reduce)


def global_add_pool(x, batch=None, size=None):
    return _pool(x, batch, size, "sum")


def global_mean_pool(x, batch=None, size=None):
    return _pool(x, batch, size, "mean")


def global_max_pool(x, batch=None, size=None):
    return _pool(x, batch, size, "max")
