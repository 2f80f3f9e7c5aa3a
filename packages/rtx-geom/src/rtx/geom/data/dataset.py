"""Dataset and InMemoryDataset: indexable collections of graphs (PyG's shapes, no downloading)."""
import numpy as np

import rtx


class Dataset:
    """A sequence of Data with optional per-access `transform`. Indexing with a slice, list, bool mask or
    tensor returns a subset of the same class."""

    def __init__(self, root=None, transform=None, pre_transform=None, pre_filter=None):
        self.root = root
        self.transform = transform
        self.pre_transform = pre_transform
        self.pre_filter = pre_filter
        self._indices = None

    def len(self):
        raise NotImplementedError

    def get(self, idx):
        raise NotImplementedError

    def indices(self):
        return range(self.len()) if self._indices is None else self._indices

    def __len__(self):
        return len(self.indices())

    def __getitem__(self, idx):
        if isinstance(idx, (int, np.integer)) or (isinstance(idx, rtx.Tensor) and idx.dim() == 0):
            data = self.get(self.indices()[int(idx)])
            return data if self.transform is None else self.transform(data)
        return self.index_select(idx)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def index_select(self, idx):
        indices = self.indices()
        if isinstance(idx, slice):
            sel = list(indices)[idx]
        else:
            a = idx.cpu().numpy() if isinstance(idx, rtx.Tensor) else np.asarray(idx)
            if a.dtype == bool:
                a = np.nonzero(a)[0]
            sel = [indices[int(i)] for i in a]
        out = object.__new__(type(self))
        out.__dict__ = dict(self.__dict__)
        out._indices = sel
        return out

    def shuffle(self, return_perm=False, generator=None):
        perm = rtx.randperm(len(self), generator=generator)
        out = self.index_select(perm)
        return (out, perm) if return_perm else out

    @property
    def num_node_features(self):
        return self[0].num_node_features

    num_features = num_node_features

    @property
    def num_edge_features(self):
        return self[0].num_edge_features

    @property
    def num_classes(self):
        ys = [self.get(i).y for i in self.indices()]
        ys = [y for y in ys if y is not None]
        if not ys:
            return 0
        y = np.concatenate([y.cpu().numpy().reshape(len(y) if y.dim() else 1, -1) for y in ys])
        if y.shape[1] > 1 and y.dtype.kind == "f":
            return y.shape[1]
        return int(y.max()) + 1

    def __repr__(self):
        return f"{type(self).__name__}({len(self)})"


class InMemoryDataset(Dataset):
    """All graphs held in memory. Subclasses call `self.data_list = [...]` in __init__ (or implement
    process() returning the list); pre_filter/pre_transform apply once, transform on each access."""

    def __init__(self, root=None, transform=None, pre_transform=None, pre_filter=None, data_list=None):
        super().__init__(root, transform, pre_transform, pre_filter)
        if data_list is None and hasattr(self, "process"):
            data_list = self.process()
        self.data_list = self._prepare(list(data_list or []))

    def _prepare(self, data_list):
        if self.pre_filter is not None:
            data_list = [d for d in data_list if self.pre_filter(d)]
        if self.pre_transform is not None:
            data_list = [self.pre_transform(d) for d in data_list]
        return data_list

    def len(self):
        return len(self.data_list)

    def get(self, idx):
        return self.data_list[idx]

    @property
    def _data(self):
        """All graphs collated into one Batch (PyG's dataset._data)."""
        from .batch import Batch
        return Batch.from_data_list([self.get(i) for i in self.indices()])

    @staticmethod
    def collate(data_list):
        """(Batch of data_list, its slices per key), PyG's InMemoryDataset.collate."""
        from .batch import Batch
        b = Batch.from_data_list(data_list)
        return b, b._slice_dict
