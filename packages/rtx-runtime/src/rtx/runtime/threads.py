"""Threads, BLAS thread counts, the CPU kernels' worker pool and the malloc setting: the one
place that touches them (torch.set_num_threads / get_num_threads / *_interop_threads).

rtx's intra-op parallelism is NumPy's BLAS plus Python threads around it: rtx-nn's convolution
and rtx-flash-attn's CPU path run as many pieces side by side as BLAS has threads, each piece
with single-threaded BLAS (NumPy releases the GIL in its matmuls, copies and ufuncs). OpenBLAS's
thread count is one process-wide setting, so every change of it goes through here:

- `get_num_threads()` / `set_num_threads(n)`: the configured count (BLAS's, through
  threadpoolctl, loaded on first use; without threadpoolctl kernels run serially).
- `single_threaded_blas()`: a re-entrant, thread-safe scope. BLAS runs one thread while any
  thread is inside; the count saved when the first entered is restored when the last leaves,
  whatever the interleaving (two threads each saving and restoring on their own, as each kernel
  used to, leave BLAS at 1 when their scopes overlap). Inside, get_num_threads() still answers
  the configured count, and set_num_threads(n) takes effect when the last thread leaves.
- `parallel_map(fn, items, workers)`: [fn(x) for x in items] on one shared pool plus the
  calling thread, inside single_threaded_blas().
- `keep_freed_memory()`: glibc's malloc setting, applied on the first CPU kernel that asks for
  workers (`cpu_workers()`); opt-out in packages/rtx-runtime/README.md ("Threads and memory").
"""
from __future__ import annotations

import os
import threading
import warnings

__all__ = ["cpu_workers", "get_num_interop_threads", "get_num_threads", "keep_freed_memory", "limit_threads",
           "parallel_map", "set_num_interop_threads", "set_num_threads", "single_threaded_blas"]

_interop = [None]

# ---- the BLAS controller -------------------------------------------------------------------------

_ctl = {"libs": None}   # threadpoolctl's BLAS lib controllers; [] when threadpoolctl or a BLAS is missing
_ctl_lock = threading.Lock()


def _libs():
    libs = _ctl["libs"]
    if libs is None:
        with _ctl_lock:
            if _ctl["libs"] is None:
                try:  # threadpoolctl is imported here, not at import: it scans the loaded libraries
                    from threadpoolctl import ThreadpoolController
                    _ctl["libs"] = list(ThreadpoolController().select(user_api="blas").lib_controllers)
                except Exception:  # not installed, or no BLAS it can control: kernels run serially
                    _ctl["libs"] = []
            libs = _ctl["libs"]
    return libs


def _set(lib, n):
    """Set one BLAS's thread count. threadpoolctl (3.6+) ignores set_num_threads for a
    pthreads OpenBLAS unless the calling Python thread is the first one that set it (so that
    threads do not fight over the shared pool); every switch here is already serialised by
    _lock, and kernels switch from whichever thread calls them, so this calls the setter behind
    that rule (seen with threadpoolctl 3.8 and OpenBLAS 0.3.31: once the main thread had set
    the count, a set from any other thread was silently dropped, so a convolution called from a
    second thread ran its chunk workers on multi-threaded BLAS)."""
    getattr(lib, "_real_set_num_threads", lib.set_num_threads)(n)


# ---- the thread count and the single-threaded scope ----------------------------------------------

_lock = threading.Lock()
_scope = {"depth": 0, "saved": None}   # threads inside single_threaded_blas(); counts before the first


def _check_count(name, n):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{name} expects a positive integer, got {n!r}")


def get_num_threads() -> int:
    """BLAS's configured thread count (the one restored after single-threaded scopes); without
    threadpoolctl, what OMP_NUM_THREADS / OPENBLAS_NUM_THREADS say, else the CPU count."""
    libs = _libs()
    if libs:
        with _lock:
            saved = _scope["saved"]
            return max(saved if saved is not None else [lib.num_threads for lib in libs])
    env = os.environ.get("OMP_NUM_THREADS") or os.environ.get("OPENBLAS_NUM_THREADS")
    return int(env) if env and env.isdigit() else (os.cpu_count() or 1)


def set_num_threads(n: int) -> None:
    """Set BLAS's thread count (and so the CPU kernels' workers). Inside a single-threaded scope
    of another thread, it takes effect when that scope ends."""
    _check_count("set_num_threads", n)
    libs = _libs()
    if not libs:
        warnings.warn("rtx.set_num_threads needs threadpoolctl to change NumPy's BLAS threads "
                      "(pip install threadpoolctl); set OMP_NUM_THREADS before starting Python instead",
                      stacklevel=2)
        return
    with _lock:
        if _scope["depth"]:
            _scope["saved"] = [n] * len(libs)
        else:
            for lib in libs:
                _set(lib, n)


class _SingleThreadedBlas:
    """The scope behind single_threaded_blas(). It keeps no per-use state (the depth is global),
    so one instance serves every thread and every nesting."""

    def __enter__(self):
        libs = _libs()
        if libs:
            with _lock:
                if _scope["depth"] == 0:
                    saved = _scope["saved"] = [lib.num_threads for lib in libs]
                    for lib, was in zip(libs, saved):
                        if was != 1:  # a switch costs a few microseconds: skip it when already 1
                            _set(lib, 1)
                _scope["depth"] += 1
        return self

    def __exit__(self, *exc):
        libs = _libs()
        if libs:
            with _lock:
                _scope["depth"] -= 1
                if _scope["depth"] == 0:
                    for lib, was in zip(libs, _scope["saved"]):
                        if was != 1:
                            _set(lib, was)
                    _scope["saved"] = None
        return False


_SINGLE = _SingleThreadedBlas()


def single_threaded_blas():
    """A context: BLAS runs one thread while any thread is inside; the count from before the
    first entrant comes back when the last one leaves. Re-entrant and thread-safe."""
    return _SINGLE


class limit_threads:
    """`with limit_threads(n):` runs the block with n BLAS threads and restores the previous
    count afterwards (threadpoolctl.threadpool_limits for rtx: it goes through set_num_threads,
    so it respects single-threaded scopes of other threads). n=None changes nothing. The count
    is process-wide: meant for a program's main thread (a CLI's --threads), not for several
    threads each choosing their own."""

    def __init__(self, n):
        if n is not None:
            _check_count("limit_threads", n)
        self.n, self.before = n, None

    def __enter__(self):
        if self.n is not None and _libs():
            self.before = get_num_threads()
            set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        if self.before is not None:
            set_num_threads(self.before)
        return False


# ---- workers for CPU kernels -----------------------------------------------------------------------

def cpu_workers() -> int:
    """How many pieces a CPU kernel runs side by side: as many as BLAS has threads, each then
    running single-threaded BLAS; 1 without threadpoolctl (BLAS could not be kept to one thread
    per worker). The first call applies the malloc setting (keep_freed_memory)."""
    if not _malloc["applied"]:
        keep_freed_memory()
    return get_num_threads() if _libs() else 1


_pool = {"executor": None, "size": 0}
_pool_lock = threading.Lock()


def _executor(n):
    """The shared pool, grown to at least n threads. A replaced pool is not shut down (another
    thread may be about to submit to it); its idle threads end when it is garbage-collected."""
    with _pool_lock:
        if _pool["executor"] is None or _pool["size"] < n:
            from concurrent.futures import ThreadPoolExecutor
            _pool["executor"], _pool["size"] = ThreadPoolExecutor(n, thread_name_prefix="rtx-worker"), n
        return _pool["executor"]


def parallel_map(fn, items, workers=None):
    """[fn(x) for x in items], on up to `workers` threads (default cpu_workers()), the calling
    thread included, all inside single_threaded_blas(); serially, BLAS untouched, for one worker
    or one item. Threads take the next item from one shared list, so the caller never waits idle
    while a pool thread waits for a core (on a busy machine a woken thread may wait milliseconds
    for one, longer than an item takes). Helpers that have not started when the caller runs out
    of items are cancelled, so callers sharing the pool, or a call from inside an item, never
    wait on a queued helper."""
    items = list(items)
    workers = cpu_workers() if workers is None else workers
    n = min(workers, len(items))
    if n <= 1:
        return [fn(x) for x in items]
    pool = _executor(n - 1)
    results = [None] * len(items)
    todo = iter(range(len(items)))
    lock = threading.Lock()

    def drain():
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            results[i] = fn(items[i])

    with single_threaded_blas():
        helpers = [pool.submit(drain) for _ in range(n - 1)]
        try:
            drain()
        finally:  # even when an item failed here: none may still run once this returns
            for h in helpers:
                if not h.cancel():
                    h.result()
    return results


def _after_fork_in_child():
    """A forked child (a DataLoader worker) has only the forking thread: no pool threads, and no
    thread left to end a single-threaded scope that was open at the fork."""
    global _lock, _pool_lock
    _lock, _pool_lock = threading.Lock(), threading.Lock()
    _pool.update(executor=None, size=0)
    if _scope["depth"]:
        for lib, was in zip(_ctl["libs"] or [], _scope["saved"]):
            if was != 1:
                _set(lib, was)
        _scope.update(depth=0, saved=None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---- glibc's malloc ------------------------------------------------------------------------------

_MMAP_THRESHOLD = 64 << 20
_TRIM_THRESHOLD = 256 << 20
_malloc = {"applied": False, "result": None}


def _apply_malloc_settings() -> bool:
    """Have glibc's malloc serve arrays below 64 MB from its heap and keep up to 256 MB of freed
    memory instead of returning it to the kernel. By default an array over 128 KB-32 MB is a
    fresh mmap whose every page faults when first written and is unmapped when freed: a
    ResNet-18 training step at batch 8 on 64x64 (2 threads) took ~5,000 page faults and ~20-35 ms
    of system time per step that way, against ~0 and ~3 ms with these settings (measured, 10
    steps, interleaved runs: median 187-193 vs 211-227 ms per step). The cost: a process keeps
    up to 256 MB per malloc arena that it no longer uses. Skipped where the user chose malloc
    settings (GLIBC_TUNABLES, MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_), with
    RTX_KEEP_FREED_MEMORY=0, and off glibc. Returns whether the settings were applied."""
    env = os.environ
    if env.get("RTX_KEEP_FREED_MEMORY", "1") == "0" or "malloc" in env.get("GLIBC_TUNABLES", ""):
        return False
    if "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env:
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        mallopt, _ = libc.mallopt, libc.gnu_get_libc_version  # glibc only
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(mallopt(M_MMAP_THRESHOLD, _MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


def keep_freed_memory() -> bool:
    """Apply the malloc setting once per process (see _apply_malloc_settings); whether it is on."""
    with _pool_lock:
        if not _malloc["applied"]:
            _malloc["result"] = _apply_malloc_settings()
            _malloc["applied"] = True
        return _malloc["result"]


# ---- inter-op threads ------------------------------------------------------------------------------

def set_num_interop_threads(n):
    """Stored: rtx runs independent ops one after another (no inter-op pool)."""
    _check_count("set_num_interop_threads", n)
    _interop[0] = n


def get_num_interop_threads():
    return _interop[0] or os.cpu_count() or 1
