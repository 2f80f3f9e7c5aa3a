"""DataLoader over a list of graphs: each batch is a Batch (disjoint union), as PyG's loader.DataLoader."""
import rtx.data

from ..data import Batch, Data


class Collater:
    def __init__(self, follow_batch=None, exclude_keys=None):
        self.follow_batch, self.exclude_keys = follow_batch, exclude_keys

    def __call__(self, batch):
        if isinstance(batch[0], Data):
            return Batch.from_data_list(batch, self.follow_batch, self.exclude_keys)
        raise TypeError(f"DataLoader found invalid type: {type(batch[0]).__name__} (expected Data)")


class DataLoader(rtx.data.DataLoader):
    def __init__(self, dataset, batch_size=1, shuffle=False, follow_batch=None, exclude_keys=None, **kwargs):
        kwargs.pop("collate_fn", None)
        super().__init__(dataset, batch_size=batch_size, shuffle=shuffle,
                         collate_fn=Collater(follow_batch, exclude_keys), **kwargs)
