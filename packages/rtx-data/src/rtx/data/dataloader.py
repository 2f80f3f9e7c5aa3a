"""DataLoader: batches from a Dataset, in the main process or in worker processes.

Workers are processes (fork on Linux, as PyTorch). The main process hands out index batches
`prefetch_factor` per worker ahead, reorders results by task id, re-raises a worker's exception
with the worker's traceback, and never hangs: it polls the result queue and checks that every
worker is alive, so a crashed worker becomes a RuntimeError naming its pid and exit code.
"""
from __future__ import annotations

import itertools
import multiprocessing
import queue
import time
import warnings

import rtx
from rtx.data._worker import ExceptionWrapper, _IterableEnd, worker_loop
from rtx.data.collate import default_collate, default_convert
from rtx.data.dataset import IterableDataset
from rtx.data.sampler import BatchSampler, RandomSampler, SequentialSampler
from rtx.extend import Tensor, raw

_POLL_SECONDS = 1.0


class _InfiniteIterableSampler:
    def __iter__(self):
        return itertools.repeat(None)


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers > 0 else prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.drop_last = drop_last
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler/batch_sampler")
            sampler = _InfiniteIterableSampler()
        elif sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._auto_collation = batch_sampler is not None or (self._iterable and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._persistent_iter = None
        if pin_memory and not rtx.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
            self.pin_memory = False

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)  # raises TypeError when the stream has no length, as PyTorch
            if self.batch_size is not None:
                return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    def _index_iter(self):
        if self._iterable:
            return itertools.repeat(None)
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._persistent_iter is None:
                self._persistent_iter = _MultiProcessIter(self)
            else:
                self._persistent_iter._reset()
            return self._persistent_iter
        return _MultiProcessIter(self)


def _pin(data):
    """Copy CPU tensors of a batch into page-locked host memory (faster, async host-to-GPU copies)."""
    from rtx.memory import pinned_empty

    def pin(x):
        if type(x) is Tensor and x.is_cpu:
            buf = pinned_empty(tuple(x.shape), raw(x).dtype)
            buf[...] = raw(x)
            return rtx.from_numpy(buf)
        if isinstance(x, dict):
            return {k: pin(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(pin(v) for v in x) if not hasattr(x, "_fields") else type(x)(*(pin(v) for v in x))
        return x

    return pin(data)


class _SingleProcessIter:
    def __init__(self, loader):
        self.loader = loader
        self.indices = loader._index_iter()
        self.dataset_iter = iter(loader.dataset) if loader._iterable else None

    def __iter__(self):
        return self

    def __next__(self):
        loader = self.loader
        if loader._iterable:
            if loader._auto_collation:
                items = list(itertools.islice(self.dataset_iter, loader.batch_size))
                if not items or (loader.drop_last and len(items) < loader.batch_size):
                    raise StopIteration
                data = loader.collate_fn(items)
            else:
                data = loader.collate_fn(next(self.dataset_iter))
        else:
            idx = next(self.indices)
            if loader._auto_collation:
                getitems = getattr(loader.dataset, "__getitems__", None)
                samples = getitems(idx) if getitems else [loader.dataset[i] for i in idx]
                data = loader.collate_fn(samples)
            else:
                data = loader.collate_fn(loader.dataset[idx])
        return _pin(data) if loader.pin_memory else data

    def __len__(self):
        return len(self.loader)


class _MultiProcessIter:
    def __init__(self, loader):
        self.loader = loader
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self.ctx = ctx
        self.result_queue = ctx.Queue()
        self.done_event = ctx.Event()
        self.index_queues = []
        self.workers = []
        base_seed = int(rtx.randint(0, 2 ** 62, (1,), generator=loader.generator).item())
        kind = "iterable" if loader._iterable else "map"
        for wid in range(loader.num_workers):
            iq = ctx.Queue()
            w = ctx.Process(target=worker_loop, daemon=True,
                            args=(loader.dataset, kind, iq, self.result_queue, loader.collate_fn,
                                  loader._auto_collation, loader.drop_last, loader.batch_size, base_seed + wid,
                                  wid, loader.num_workers, loader.worker_init_fn, self.done_event))
            w.start()
            self.index_queues.append(iq)
            self.workers.append(w)
        self._shutdown = False
        self._reset(first=True)

    def _reset(self, first=False):
        self.indices = self.loader._index_iter()
        self.send_idx = 0
        self.rcvd_idx = 0
        self.task_worker = {}
        self.reorder = {}
        self.active_workers = set(range(len(self.workers)))
        self.worker_cycle = itertools.cycle(range(len(self.workers)))
        if not first and self.loader._iterable:
            # an IterableDataset restarts in fresh workers: the old ones consumed their streams
            self._stop_workers()
            self.__init__(self.loader)
            return
        for _ in range(self.loader.prefetch_factor * len(self.workers)):
            self._put_task()

    def _put_task(self):
        if not self.active_workers:
            return
        try:
            indices = next(self.indices)
        except StopIteration:
            return
        for _ in range(len(self.workers)):
            wid = next(self.worker_cycle)
            if wid in self.active_workers:
                break
        self.index_queues[wid].put((self.send_idx, indices))
        self.task_worker[self.send_idx] = wid
        self.send_idx += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def _get_result(self):
        waited = 0.0
        timeout = self.loader.timeout
        while True:
            try:
                return self.result_queue.get(timeout=_POLL_SECONDS if not timeout else min(timeout, _POLL_SECONDS))
            except queue.Empty:
                waited += _POLL_SECONDS if not timeout else min(timeout, _POLL_SECONDS)
                self._raise_if_a_worker_died(None)
                if timeout and waited >= timeout:
                    self._stop_workers()
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
            except (OSError, EOFError) as e:
                # A batch whose tensors travel by file descriptor is fetched from its sender's
                # resource-sharer thread while unpickling: if that worker died after queueing it,
                # the fetch fails (connection refused). Report the dead worker, not the socket error.
                for _ in range(50):  # give the dying worker up to 5 s to be reaped, so is_alive() tells
                    if any(not w.is_alive() for w in self.workers):
                        break
                    time.sleep(0.1)
                self._raise_if_a_worker_died(e)
                raise

    def _raise_if_a_worker_died(self, cause):
        dead = [w for w in self.workers if not w.is_alive()]
        if dead:
            w = dead[0]
            self._stop_workers()
            raise RuntimeError(f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code "
                               f"{w.exitcode}. If it was killed by a signal (negative code), the process may "
                               "have run out of memory.") from cause

    def __next__(self):
        while True:
            if self.rcvd_idx >= self.send_idx:
                if not self.loader.persistent_workers:
                    self._stop_workers()
                raise StopIteration
            if self.rcvd_idx in self.reorder:
                data = self.reorder.pop(self.rcvd_idx)
            elif self.rcvd_idx not in self.task_worker:
                self.rcvd_idx += 1
                continue
            else:
                task_id, data = self._get_result()
                if task_id is None:  # worker_init_fn failed
                    self._stop_workers()
                    data.reraise()
                if task_id != self.rcvd_idx:
                    self.reorder[task_id] = data
                    continue
            self.task_worker.pop(self.rcvd_idx, None)
            self.rcvd_idx += 1
            if isinstance(data, _IterableEnd):
                self.active_workers.discard(data.worker_id)
                self._put_task()
                continue
            self._put_task()
            if isinstance(data, ExceptionWrapper):
                self._stop_workers()
                data.reraise()
            return _pin(data) if self.loader.pin_memory else data

    def _stop_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        self.done_event.set()
        for q in self.index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self.workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
        for q in self.index_queues + [self.result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self._stop_workers()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
