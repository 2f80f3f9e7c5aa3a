"""Helpers that turn index tensors into arrays of their device and back (indices are bookkeeping,
not differentiable)."""
import numpy as np

import rtx
from rtx.extend import raw, xp_of
from rtx.extend import wrap as _wrap


def arr(t):
    return raw(t)


def wrap(a):
    return _wrap(a)


def xp(t):
    return xp_of(t)


def check_edge_index(edge_index, op):
    if not isinstance(edge_index, rtx.Tensor):
        raise TypeError(f"{op}(): expected edge_index to be an rtx int64 tensor of shape [2, E], "
                        f"got {type(edge_index).__name__}")
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"{op}(): expected edge_index of shape [2, E], got {list(edge_index.shape)}")
    if edge_index.dtype not in (rtx.int64, rtx.int32):
        raise TypeError(f"{op}(): expected edge_index of dtype int64, got {edge_index.dtype}")


def num_nodes_of(edge_index, num_nodes):
    if num_nodes is not None:
        return int(num_nodes)
    a = arr(edge_index)
    return int(a.max()) + 1 if a.size else 0


def select(attr, mask_or_idx):
    """attr rows at a host/device index array, differentiably (None stays None)."""
    if attr is None:
        return None
    a = mask_or_idx
    if a.dtype == bool:
        a = xp_of(attr).nonzero(a)[0]
    return attr.index_select(0, wrap(a.astype(np.int64, copy=False)))
