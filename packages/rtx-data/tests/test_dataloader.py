"""DataLoader, datasets, samplers and collation, written the way PyTorch users use them."""
import os
import signal
from collections import namedtuple

import numpy as np
import pytest

import rtx
from rtx.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.array([i, i * i], dtype=np.float32), "y": i}


def test_batches_in_order_with_drop_last():
    dl = DataLoader(Squares(10), batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert batches[0]["x"].shape == (4, 2) and batches[0]["y"].tolist() == [0, 1, 2, 3]
    assert batches[-1]["y"].tolist() == [8, 9]
    assert len(list(DataLoader(Squares(10), batch_size=4, drop_last=True))) == 2


def test_shuffle_is_seeded_by_generator():
    def order(seed):
        g = rtx.Generator().manual_seed(seed)
        return [b["y"].tolist() for b in DataLoader(Squares(20), batch_size=5, shuffle=True, generator=g)]
    assert order(3) == order(3)
    assert order(3) != order(4)
    assert sorted(sum(order(3), [])) == list(range(20))


def test_default_collate_nested_structures():
    Point = namedtuple("Point", "a b")
    batch = default_collate([(Point(1, 2.0), "s", [np.zeros(2), 1]), (Point(3, 4.0), "t", [np.ones(2), 2])])
    point, strings, lst = batch
    assert point.a.dtype == rtx.int64 and point.b.dtype == rtx.float64
    assert strings == ["s", "t"]
    assert lst[0].shape == (2, 2) and lst[1].tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([rtx.zeros(2), rtx.zeros(3)])


def test_tensor_dataset_and_random_split():
    x, y = rtx.arange(10).float(), rtx.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    a, b = random_split(ds, [0.7, 0.3], generator=rtx.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(rtx.zeros(3), rtx.zeros(4))


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    r = list(RandomSampler(range(50), generator=rtx.Generator().manual_seed(1)))
    assert sorted(r) == list(range(50)) and r != list(range(50))
    rr = list(RandomSampler(range(5), replacement=True, num_samples=20, generator=rtx.Generator().manual_seed(1)))
    assert len(rr) == 20 and set(rr) <= set(range(5))
    assert sorted(SubsetRandomSampler([5, 7, 9])) == [5, 7, 9]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0], 10))
    assert w == [1] * 10
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(5), 0, False)


def test_concat_and_subset():
    c = ConcatDataset([Squares(3), Squares(2)])
    assert len(c) == 5 and c[3]["y"] == 0 and c[-1]["y"] == 1
    s = Subset(Squares(10), [9, 2])
    assert s[0]["y"] == 9


def test_workers_give_the_same_batches_as_the_main_process():
    single = [b["y"].tolist() for b in DataLoader(Squares(23), batch_size=4)]
    multi = [b["y"].tolist() for b in DataLoader(Squares(23), batch_size=4, num_workers=2)]
    assert single == multi


def test_worker_init_fn_and_worker_info():
    class WhoAmI(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            info = get_worker_info()
            return info.id, info.num_workers, int(rtx.randint(0, 1000, (1,)).item())

    def init(worker_id):
        assert get_worker_info().id == worker_id

    out = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=init,
                          generator=rtx.Generator().manual_seed(0)))
    ids = sorted({int(i) for b in out for i in b[0]})
    assert ids == [0, 1] and all(int(n) == 2 for b in out for n in b[1])
    again = list(DataLoader(WhoAmI(), batch_size=2, num_workers=2, generator=rtx.Generator().manual_seed(0)))
    assert [b[2].tolist() for b in out] == [b[2].tolist() for b in again]  # seeded workers: same randoms


class Faulty(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            raise KeyError(f"sample {i} is broken")
        return i


def test_worker_exception_surfaces_with_its_traceback():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Faulty(), batch_size=2, num_workers=2))
    text = str(info.value)
    assert "DataLoader worker process" in text and "sample 3 is broken" in text and "__getitem__" in text


class Killer(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_dead_worker_raises_instead_of_hanging():
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(DataLoader(Killer(), batch_size=1, num_workers=2))


def test_batch_lost_with_its_dead_sender_reports_the_worker():
    """A tensor batch is fetched from its sender's resource-sharer socket while unpickling: when
    the worker died after queueing it, the fetch is refused. That must surface as the dead worker
    (seen once on a loaded machine as a bare ConnectionRefusedError), not as a socket error."""
    it = iter(DataLoader(list(range(8)), batch_size=1, num_workers=1))
    worker = it.workers[0]
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(10)

    def refused(*args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    it.result_queue.get = refused
    with pytest.raises(RuntimeError, match="exited unexpectedly") as info:
        next(it)
    assert isinstance(info.value.__cause__, ConnectionRefusedError)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_iterable_dataset_single_and_multi_process():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    got = sorted(v for b in DataLoader(Stream(20), batch_size=3, num_workers=2) for v in b.tolist())
    assert got == list(range(20))


def test_persistent_workers_reuse_processes_across_epochs():
    dl = DataLoader(Squares(8), batch_size=4, num_workers=2, persistent_workers=True)
    first = [b["y"].tolist() for b in dl]
    pids = [w.pid for w in dl._persistent_iter.workers]
    second = [b["y"].tolist() for b in dl]
    assert first == second and pids == [w.pid for w in dl._persistent_iter.workers]
    dl._persistent_iter._stop_workers()


def test_argument_errors():
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(Squares(), sampler=SequentialSampler(range(3)), shuffle=True)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Squares(), num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(Squares(), prefetch_factor=2)
