"""Datasets: Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, ChainDataset,
StackDataset, random_split."""
from __future__ import annotations

import bisect
import math
import warnings

import rtx
from rtx.extend import Tensor


class Dataset:
    """Map-style: __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Stream-style: __iter__. With workers, each worker iterates its own copy; split the stream
    with rtx.utils.data.get_worker_info()."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        for i, t in enumerate(tensors):
            if t.shape[0] != n:
                raise ValueError(f"Size mismatch between tensors: tensor 0 has {n} rows, tensor {i} has "
                                 f"{t.shape[0]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Samples are tuples (or dicts) of the same index from several datasets."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset takes datasets as positional or keyword arguments, not both")
        self.datasets = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if len(set(lengths)) > 1:
            raise ValueError(f"Size mismatch between datasets: {lengths}")
        self._length = lengths[0] if lengths else 0

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which >= len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {len(self)}")
        start = 0 if which == 0 else self.cumulative_sizes[which - 1]
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = getattr(self.dataset, "__getitems__", None)
        if inner is not None:
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping Subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = rtx.randperm(n, generator=generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out


def _is_tensor(x):
    return type(x) is Tensor
