"""scatter: reduce rows of `src` that share an index (PyG's torch_geometric.utils.scatter).

Built on rtx-tensor's index primitives (`index_add`, `scatter_reduce`), so gradients come from
their derivative rules: sum/mean route the gradient back by gathering, max/min share it among
ties (as PyTorch's scatter_reduce does), mul uses the product rule.
"""
import numpy as np

import rtx

_REDUCES = ("sum", "add", "mean", "max", "min", "mul")


def _check_index(src, index, dim, op):
    if not isinstance(src, rtx.Tensor) or not isinstance(index, rtx.Tensor):
        raise TypeError(f"{op}(): expected src and index to be rtx tensors, got {type(src).__name__} and "
                        f"{type(index).__name__}")
    if index.dim() != 1:
        raise ValueError(f"{op}(): index must be one-dimensional, got shape {list(index.shape)}")
    dim = dim + src.dim() if dim < 0 else dim
    if not 0 <= dim < src.dim():
        raise IndexError(f"{op}(): dim {dim} out of range for src of shape {list(src.shape)}")
    if index.numel() != src.shape[dim]:
        raise ValueError(f"{op}(): index has {index.numel()} entries but src has {src.shape[dim]} along dim {dim}")
    return dim


def _broadcast(index, src, dim):
    # scatter_reduce wants an index of src's shape: repeat the 1-D index along the other dims.
    shape = [1] * src.dim()
    shape[dim] = -1
    return index.view(*shape).expand_as(src)


def scatter(src, index, dim=0, dim_size=None, reduce="sum"):
    """out[..., index[k], ...] ⊕= src[..., k, ...] along dim, ⊕ one of sum (add), mean, max, min, mul.

    Groups that receive nothing are 0 (1 for mul), as in PyG. dim_size defaults to index.max() + 1."""
    if reduce not in _REDUCES:
        raise ValueError(f"scatter(): reduce must be one of {', '.join(_REDUCES)}, got {reduce!r}")
    dim = _check_index(src, index, dim, "scatter")
    if dim_size is None:
        dim_size = int(index.max().item()) + 1 if index.numel() else 0
    shape = list(src.shape)
    shape[dim] = dim_size
    if reduce in ("sum", "add", "mean"):
        out = src.new_zeros(shape).index_add(dim, index, src)
        if reduce == "mean":
            count = src.new_zeros(dim_size).index_add(0, index, src.new_ones(index.numel()))
            cshape = [1] * src.dim()
            cshape[dim] = dim_size
            out = out / count.clamp(min=1).view(*cshape)
        return out
    if reduce == "mul":
        return src.new_ones(shape).scatter_reduce(dim, _broadcast(index, src, dim), src, "prod", include_self=True)
    red = "amax" if reduce == "max" else "amin"
    return src.new_zeros(shape).scatter_reduce(dim, _broadcast(index, src, dim), src, red, include_self=False)


def segment(src, ptr, reduce="sum"):
    """Reduce consecutive row blocks src[ptr[i]:ptr[i+1]] (CSR layout; PyG's segment)."""
    counts = (ptr[1:] - ptr[:-1])
    index = _repeat(counts, src.device)
    return scatter(src, index, 0, counts.numel(), reduce)


def _repeat(counts, device):
    # The block lengths are host bookkeeping (as the ptr of a Batch is).
    c = counts.cpu().numpy()
    return rtx.tensor(np.repeat(np.arange(c.size), c), dtype=rtx.int64, device=device)
