"""rtx data: Dataset, DataLoader, samplers and collation, as torch.utils.data (also importable as
rtx.utils.data)."""
__version__ = "0.1.0"

from rtx.data._worker import WorkerInfo, get_worker_info
from rtx.data.collate import default_collate, default_convert
from rtx.data.dataloader import DataLoader
from rtx.data.dataset import (
                              ChainDataset,
                              ConcatDataset,
                              Dataset,
                              IterableDataset,
                              StackDataset,
                              Subset,
                              TensorDataset,
                              random_split,
)
from rtx.data.sampler import (
                              BatchSampler,
                              RandomSampler,
                              Sampler,
                              SequentialSampler,
                              SubsetRandomSampler,
                              WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert",
           "get_worker_info", "random_split"]
