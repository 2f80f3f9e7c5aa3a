"""DistributedSampler: each rank iterates over its own 1/num_replicas of the data set
(torch.utils.data.distributed.DistributedSampler, same arithmetic: padding by repeating the
first indices, or drop_last; rank r takes indices r, r + N, r + 2N, ... of the epoch's order).

The shuffled order is a permutation drawn from an rtx Generator seeded with seed + epoch: the
same on every rank, different each epoch after set_epoch(epoch), reproducible run to run; not
the same order as PyTorch's (its randperm uses another algorithm).

Lives at rtx.distributed.DistributedSampler: rtx.utils.data is rtx-data's package, and rtx-data
sits below this one.
"""
from __future__ import annotations

import math

from rtx.data.sampler import Sampler
from rtx.distributed.process_group import get_rank, get_world_size, is_initialized
from rtx.runtime.random import Generator

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            if not is_initialized():
                raise RuntimeError("DistributedSampler: give num_replicas and rank, or call "
                                   "rtx.distributed.init_process_group first")
            num_replicas = get_world_size() if num_replicas is None else num_replicas
            rank = get_rank() if rank is None else rank
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"num_replicas should be a positive integer, got {num_replicas!r}")
        if not isinstance(rank, int) or rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = g.np.permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set before each epoch (before the DataLoader iterator is made) to reshuffle."""
        self.epoch = epoch
