"""Pinned (page-locked) host memory for fast, asynchronous host<->GPU copies.

pinned_empty() returns an ordinary NumPy array whose memory CuPy allocated as pinned (from its
pinned memory pool). Without CUDA it returns a plain NumPy array: the code that stages data
through it runs unchanged, just without the faster copies (PyTorch raises instead).

PinnedBufferPool keeps released buffers by size class and lends them again, so a data loader
that stages every batch through pinned memory does not allocate pinned memory per batch. A
buffer given back after an asynchronous copy is reused only once the work queued on its stream
at release time has finished (a CUDA event), so the copy never reads overwritten data.
"""
from __future__ import annotations

import math
import threading
import weakref
from contextlib import contextmanager

import numpy as np

from rtx.runtime import cuda

_MIN_CLASS = 4096


def _cupy():
    if not cuda.is_available():
        return None
    import cupy
    return cupy


def _raw_buffer(nbytes: int):
    """nbytes of host memory: pinned with CUDA, pageable without. Anything np.frombuffer takes."""
    cp = _cupy()
    if cp is None:
        return np.empty(max(nbytes, 1), np.uint8)
    return cp.cuda.alloc_pinned_memory(max(nbytes, 1))


def _view(raw, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    count = math.prod(shape)
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)


def _shape(shape) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def pinned_empty(shape, dtype=np.float32) -> np.ndarray:
    """An uninitialised NumPy array in pinned host memory (plain host memory without CUDA)."""
    shape = _shape(shape)
    return _view(_raw_buffer(math.prod(shape) * np.dtype(dtype).itemsize), shape, dtype)


def _size_class(nbytes: int) -> int:
    return max(_MIN_CLASS, 1 << max(0, nbytes - 1).bit_length())


class _Block:
    __slots__ = ("raw", "size", "event")

    def __init__(self, raw, size):
        self.raw, self.size, self.event = raw, size, None

    def ready(self) -> bool:
        return self.event is None or self.event.done


class PinnedBufferPool:
    """Lends pinned host buffers and takes them back for reuse.

        pool = PinnedBufferPool()
        with pool.borrow((64, 3, 224, 224), np.float32) as staging:
            staging[...] = batch
            gpu_batch = cupy.asarray(staging)   # or an async copy on a stream

    Buffers come in power-of-two size classes (at least 4 KiB), so arrays of nearby sizes share
    them. Up to `max_cached_bytes` of released buffers are kept (default: no limit); clear()
    drops them all. Thread-safe.
    """

    def __init__(self, max_cached_bytes: int | None = None):
        self.max_cached_bytes = max_cached_bytes
        self.pinned = _cupy() is not None
        self.hits = 0
        self.misses = 0
        self._free: dict[int, list[_Block]] = {}
        self._lent: dict[int, tuple[weakref.ref, _Block]] = {}
        self._cached = 0
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        """Bytes held in released buffers, waiting to be lent again."""
        return self._cached

    def empty(self, shape, dtype=np.float32) -> np.ndarray:
        """An uninitialised array in a pinned buffer of the pool; give it back with release()."""
        shape = _shape(shape)
        size = _size_class(math.prod(shape) * np.dtype(dtype).itemsize)
        with self._lock:
            block = self._take(size)
        if block is None:
            block = _Block(_raw_buffer(size), size)
        array = _view(block.raw, shape, dtype)
        key = id(array)
        ref = weakref.ref(array, lambda _, key=key: self._forget(key))
        with self._lock:
            self._lent[key] = (ref, block)
        return array

    def _take(self, size):
        free = self._free.get(size, [])
        for i, block in enumerate(free):
            if block.ready():
                del free[i]
                self._cached -= size
                self.hits += 1
                return block
        self.misses += 1
        return None

    def _forget(self, key):
        # The array died without release(): its buffer goes back to CuPy, not to this pool.
        with self._lock:
            self._lent.pop(key, None)

    def release(self, array: np.ndarray, stream=None) -> None:
        """Give back an array that empty() lent (the array itself, not a view of it). With CUDA,
        its buffer is reused only after the work queued on `stream` (default: the current
        stream) has finished. The array must not be used afterwards."""
        with self._lock:
            entry = self._lent.get(id(array))
            if entry is None or entry[0]() is not array:
                raise ValueError("release() takes an array lent by this pool's empty() (not a view or copy of it)")
            del self._lent[id(array)]
        block = entry[1]
        cp = _cupy() if self.pinned else None
        if cp is not None:
            block.event = cp.cuda.Event(block=False, disable_timing=True)
            block.event.record(stream)
        with self._lock:
            self._free.setdefault(block.size, []).append(block)
            self._cached += block.size
            self._trim()

    def _trim(self):
        if self.max_cached_bytes is None:
            return
        for size in sorted(self._free, reverse=True):   # drop the biggest buffers first
            free = self._free[size]
            while free and self._cached > self.max_cached_bytes:
                free.pop(0)
                self._cached -= size

    @contextmanager
    def borrow(self, shape, dtype=np.float32, stream=None):
        """empty() for the duration of a with-block, then release(stream=stream)."""
        array = self.empty(shape, dtype)
        try:
            yield array
        finally:
            self.release(array, stream)

    def clear(self) -> None:
        """Drop every released buffer (lent ones are not affected)."""
        with self._lock:
            self._free.clear()
            self._cached = 0

    def stats(self) -> dict:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "cached_bytes": self._cached, "lent": len(self._lent),
                    "pinned": self.pinned}
