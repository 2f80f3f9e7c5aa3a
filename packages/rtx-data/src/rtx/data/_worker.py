"""The worker process loop. A worker takes (task id, indices) from its index queue, fetches and
collates, and puts (task id, batch) — or the formatted traceback of what it raised — on the
shared result queue. None on the index queue ends it."""
from __future__ import annotations

import os
import queue
import random
import traceback
from dataclasses import dataclass


@dataclass
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info = None


def get_worker_info():
    """In a worker process: its WorkerInfo (id, num_workers, seed, dataset); in the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback text."""

    def __init__(self, exc: BaseException, where: str):
        self.exc_type = type(exc)
        self.message = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.message}"
        try:
            err = self.exc_type(msg)
        except Exception:
            err = RuntimeError(msg)
        raise err


class _IterableEnd:
    """Sent by a worker whose IterableDataset copy is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


def worker_loop(dataset, kind, index_queue, result_queue, collate_fn, auto_collation, drop_last, batch_size,
                seed, worker_id, num_workers, worker_init_fn, done_event):
    global _worker_info
    import rtx
    try:
        rtx.manual_seed(seed)
        random.seed(seed)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception as e:  # noqa: BLE001 - reported to the main process
        result_queue.put((None, ExceptionWrapper(e, f"in worker_init_fn of DataLoader worker {worker_id}")))
        return
    iterator = iter(dataset) if kind == "iterable" else None
    while not done_event.is_set():
        try:
            task = index_queue.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() == 1:  # the main process died: do not linger as an orphan
                return
            continue
        if task is None:
            return
        task_id, indices = task
        try:
            if kind == "iterable":
                items = []
                try:
                    for _ in range(batch_size if auto_collation else 1):
                        items.append(next(iterator))
                except StopIteration:
                    if not items or (auto_collation and drop_last and len(items) < batch_size):
                        result_queue.put((task_id, _IterableEnd(worker_id)))
                        continue
                data = collate_fn(items) if auto_collation else collate_fn(items[0])
            elif auto_collation:
                getitems = getattr(dataset, "__getitems__", None)
                samples = getitems(indices) if getitems else [dataset[i] for i in indices]
                data = collate_fn(samples)
            else:
                data = collate_fn(dataset[indices])
        except Exception as e:  # noqa: BLE001 - reported to the main process with its traceback
            data = ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        result_queue.put((task_id, data))
