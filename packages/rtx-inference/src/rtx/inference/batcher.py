"""DynamicBatcher: groups concurrent requests into one session run.

A worker thread takes the oldest request, then gathers more until the batch holds
`max_batch_size` rows or the oldest request has waited `max_wait_ms`; requests are
concatenated along dim 0, run once, and the outputs split back by rows. Requests whose
non-batch shapes or dtypes differ from the batch's first are kept for a later batch.

Hand-off: submitters append to a deque under one lock and wake the worker only when it asked
for it (idle, or the rows it still needs have arrived); the worker takes everything pending at
once. In CPython every thread switch costs GIL hand-offs, so waking the worker once per batch
rather than once per request (as a queue.Queue does) is what keeps batching worth it.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
import time

import numpy as np

from rtx.inference.stats import LatencyStats


class _Request:
    __slots__ = ("feed", "future", "t", "rows", "sig")

    def __init__(self, feed, future, rows, sig):
        self.feed, self.future, self.t, self.rows, self.sig = feed, future, time.perf_counter(), rows, sig


class DynamicBatcher:
    """Batch concurrent `submit(feed)` calls into `session.run` calls.

    feed: {input name: array with a leading batch dim} (every input of the session, same number
    of rows). submit returns a concurrent.futures.Future resolving to the list of outputs
    (onnxruntime's order) for this request's rows; `await infer(feed)` is the asyncio form.
    A request with more rows than max_batch_size runs alone. close() stops accepting requests,
    runs everything already submitted, and joins the worker.
    """

    def __init__(self, session, max_batch_size=32, max_wait_ms=2.0):
        if int(max_batch_size) < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        self.session = session
        self.max_batch_size, self.max_wait_ms = int(max_batch_size), float(max_wait_ms)
        self._names = [p.name for p in session.get_inputs()]
        self._name_set = dict.fromkeys(self._names).keys()   # compared with feed.keys() in C
        self._cv = threading.Condition(threading.Lock())
        self._pending = collections.deque()   # submitted, not yet seen by the worker (guarded by _cv)
        self._pending_rows = 0
        self._want = None      # the worker sleeps until _pending_rows >= _want (None: it is not waiting)
        self._held = collections.deque()      # seen by the worker, kept for a later batch (worker only)
        self._closed = False
        self._lock = threading.Lock()         # the counters
        self._batches = self._requests = self._rows = 0
        self._sizes = collections.Counter()
        self._latency = LatencyStats()
        self._worker = threading.Thread(target=self._loop, name="rtx-dynamic-batcher", daemon=True)
        self._worker.start()

    # ---- client side ------------------------------------------------------------------------------
    def submit(self, feed):
        """Queue one request; returns a Future of its outputs. Bad feeds raise ValueError here."""
        rows, sig = self._check(feed)
        fut = concurrent.futures.Future()
        req = _Request(feed, fut, rows, sig)
        with self._cv:
            if self._closed:
                raise RuntimeError("the DynamicBatcher is closed")
            self._pending.append(req)
            self._pending_rows += rows
            if self._want is not None and self._pending_rows >= self._want:
                self._want = None
                self._cv.notify()
        return fut

    async def infer(self, feed):
        """The asyncio form of submit: `outputs = await batcher.infer(feed)`."""
        return await asyncio.wrap_future(self.submit(feed))

    def stats(self):
        """dict(batches, requests, rows, mean_batch_size, queue_depth, batch_sizes {size: count},
        max_batch_size, max_wait_ms, and request latency (submit to result) count/mean/p50/p90/p99 ms)."""
        with self._lock:
            out = {"batches": self._batches, "requests": self._requests, "rows": self._rows,
                   "mean_batch_size": self._rows / self._batches if self._batches else 0.0,
                   "queue_depth": len(self._pending) + len(self._held),
                   "batch_sizes": dict(sorted(self._sizes.items())),
                   "max_batch_size": self.max_batch_size, "max_wait_ms": self.max_wait_ms}
        out["latency"] = self._latency.summary()
        return out

    def close(self, timeout=None):
        """Stop accepting requests, finish every queued one, join the worker thread."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._worker.join(timeout)

    @property
    def closed(self):
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, feed):
        """(rows, signature) of a request; the signature (non-batch shapes and dtypes) decides which
        requests may share a batch. On every submit, so kept cheap (no str(dtype): 5 us of 10)."""
        if not isinstance(feed, dict):
            raise TypeError(f"feed must be a dict {{input name: array}}, got {type(feed).__name__}")
        if feed.keys() != self._name_set:
            unknown = [k for k in feed if k not in self._name_set]
            missing = [k for k in self._names if k not in feed]
            raise ValueError(f"feed has inputs {sorted(feed)}; the model's inputs are {self._names}"
                             + (f" (unknown: {unknown})" if unknown else "")
                             + (f" (missing: {missing})" if missing else ""))
        rows, sig = None, []
        for name in self._names:
            a = feed[name]
            try:
                shape, dtype = a.shape, a.dtype
            except AttributeError:
                raise ValueError(f"input {name!r} must be an array with a leading batch dim, got "
                                 f"{type(a).__name__}") from None
            if not shape:
                raise ValueError(f"input {name!r} is a scalar; the batcher needs a leading batch dim")
            if rows is None:
                rows = shape[0]
            elif shape[0] != rows:
                raise ValueError(f"input {name!r} has {shape[0]} rows, but {self._names[0]!r} has {rows}: every "
                                 "input of a request needs the same batch size")
            sig.append((tuple(shape[1:]), dtype))
        if rows == 0:
            raise ValueError("the request has 0 rows")
        return rows, tuple(sig)

    # ---- worker -------------------------------------------------------------------------------------
    def _take_pending(self, want, timeout):
        """Move the submitted requests into _held, first sleeping (at most `timeout` s; None: no
        limit) until `want` rows are pending or the batcher closes. Returns False once closed and
        nothing is left."""
        with self._cv:
            if self._pending_rows < want and not self._closed and (timeout is None or timeout > 0):
                self._want = want
                self._cv.wait(timeout)
                self._want = None
            self._held.extend(self._pending)
            self._pending.clear()
            self._pending_rows = 0
            return not (self._closed and not self._held)

    def _loop(self):
        held = self._held
        while True:
            if not held and not self._take_pending(1, None):
                return
            if not held:
                continue
            first = held.popleft()
            batch, rows = [first], first.rows
            deadline = first.t + self.max_wait_ms / 1e3
            scanned = 0            # held[:scanned] were looked at and do not fit this batch
            while rows < self.max_batch_size:
                if scanned == len(held):
                    if self._closed:
                        self._take_pending(0, 0)
                    else:
                        self._take_pending(self.max_batch_size - rows, deadline - time.perf_counter())
                    if scanned == len(held):   # nothing new: the wait ran out (or closing: run now)
                        break
                item = held[scanned]
                if item.sig != first.sig:
                    scanned += 1
                    continue
                if rows + item.rows > self.max_batch_size:
                    break          # the batch is as full as it gets; this one starts the next
                del held[scanned]
                batch.append(item)
                rows += item.rows
            self._run(batch, rows)

    def _run(self, batch, rows):
        batch = [r for r in batch if r.future.set_running_or_notify_cancel()]
        if not batch:
            return
        try:
            if len(batch) == 1:
                feed = batch[0].feed
            else:
                feed = {n: np.concatenate([np.asarray(r.feed[n]) for r in batch]) for n in self._names}
            outs = self.session.run(None, feed)
            total = sum(r.rows for r in batch)
            for i, o in enumerate(outs):
                if len(batch) > 1 and (o.ndim == 0 or o.shape[0] != total):
                    raise RuntimeError(f"output {i} has shape {list(o.shape)}, whose dim 0 is not the batch "
                                       f"({total} rows): it cannot be split back into requests")
        except BaseException as e:  # every waiting request learns why
            for r in batch:
                r.future.set_exception(e)
            self._count(batch)
            return
        off = 0
        for r in batch:
            r.future.set_result([o[off:off + r.rows] for o in outs] if len(batch) > 1 else outs)
            off += r.rows
        self._count(batch)

    def _count(self, batch):
        now = time.perf_counter()
        n = sum(r.rows for r in batch)
        with self._lock:
            self._batches += 1
            self._requests += len(batch)
            self._rows += n
            self._sizes[n] += 1
        for r in batch:
            self._latency.record(now - r.t)
