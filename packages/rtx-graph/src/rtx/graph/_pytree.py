"""Walking nested tuples, lists and dicts of tensors (the shapes of model inputs and outputs)."""
from __future__ import annotations

from rtx.extend import Tensor


def map_structure(obj, fn, leaf=lambda x: type(x) is Tensor):
    """obj with every leaf (a Tensor by default) replaced by fn(leaf); other values are kept."""
    if leaf(obj):
        return fn(obj)
    if isinstance(obj, tuple):
        items = [map_structure(o, fn, leaf) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    if isinstance(obj, list):
        return [map_structure(o, fn, leaf) for o in obj]
    if isinstance(obj, dict):
        return {k: map_structure(v, fn, leaf) for k, v in obj.items()}
    return obj


def leaves(obj, leaf=lambda x: type(x) is Tensor):
    out = []
    map_structure(obj, out.append, leaf)
    return out
