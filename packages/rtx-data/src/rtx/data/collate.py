"""default_collate and default_convert: stack samples into batches, recursively through
tuples, lists, dicts and namedtuples, as PyTorch does."""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

import rtx
from rtx.extend import Tensor


def default_convert(data):
    """Arrays become tensors, recursively; nothing is stacked."""
    if type(data) is Tensor:
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.kind in "OSU":
            return data
        return rtx.as_tensor(data)
    if isinstance(data, np.generic):
        return rtx.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()}) if not isinstance(data, dict) \
            else {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)) and not isinstance(data, str):
        return type(data)(default_convert(d) for d in data) if isinstance(data, list) else \
            tuple(default_convert(d) for d in data)
    return data


def default_collate(batch):
    """A list of samples → one batch: tensors/arrays/numbers stacked along a new first dim,
    strings kept as lists, containers collated element-wise."""
    if not isinstance(batch, (list, tuple)) or len(batch) == 0:
        raise TypeError(f"default_collate: expected a non-empty list of samples, got {type(batch).__name__}")
    elem = batch[0]
    if type(elem) is Tensor:
        shapes = {tuple(b.shape) for b in batch}
        if len(shapes) > 1:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {sorted(shapes)} in one batch; "
                               "pad the samples or pass a collate_fn")
        return rtx.stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSU":
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                            f"found numpy array of dtype {elem.dtype}")
        return rtx.as_tensor(np.stack(batch))
    if isinstance(elem, np.generic):
        return rtx.as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return rtx.tensor(batch, dtype=rtx.bool)
    if isinstance(elem, float):
        return rtx.tensor(batch, dtype=rtx.float64)
    if isinstance(elem, numbers.Integral):
        return rtx.tensor(batch, dtype=rtx.int64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        n = len(elem)
        if any(len(e) != n for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(s)) for s in zip(*batch)]
        return tuple(transposed) if isinstance(elem, tuple) else transposed
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem).__name__}")
