"""CUDA memory statistics with PyTorch's names, over CuPy's default memory pool.

CuPy's pool knows its current use (used_bytes) and its size (total_bytes) but keeps no peaks.
install_cuda_allocator() puts a thin allocator in front of the pool (cupy.cuda.set_allocator):
each block it hands out is wrapped so that its release is seen too, which keeps a running count
of allocated bytes and blocks per device, and the peaks of allocated and reserved bytes. Cost:
a few microseconds a CuPy allocation.

Nothing here initialises CUDA. Until CuPy has been imported and a GPU is present, every query
returns 0 (memory_stats an empty dict) and every setter is a no-op, which is what PyTorch does
before CUDA is initialised. The first query after CuPy is in use installs the allocator if the
tensor core has not already done so; blocks allocated before that are counted from the pool's
own figure, refreshed at each reset_peak_memory_stats().
"""
from __future__ import annotations

import sys
import threading

from rtx.runtime import cuda
from rtx.runtime.devices import device as _device


def _cupy(initialise: bool):
    """CuPy when CUDA is usable: always with initialise=True, otherwise only once something has
    already imported CuPy (a query must not pay for, or cause, CUDA initialisation)."""
    if not initialise and "cupy" not in sys.modules:
        return None
    if not cuda.is_available():
        return None
    import cupy
    return cupy


class _DeviceStats:
    def __init__(self, untracked: int):
        self.untracked = untracked      # bytes in use that were allocated before tracking began
        self.tracked = 0                # bytes in blocks handed out by the tracking allocator
        self.blocks = 0
        self.peak_allocated = untracked
        self.peak_reserved = 0
        self.peak_blocks = 0
        self.num_allocs = self.num_frees = 0
        self.bytes_allocated = self.bytes_freed = 0


class _Release:
    """Owns one pooled block for CuPy: when the memory is dropped, the pool's pointer goes with
    it (the block returns to the pool) and the free is counted."""
    __slots__ = ("tracker", "stats", "size", "pointer")

    def __init__(self, tracker, stats, size, pointer):
        self.tracker, self.stats, self.size, self.pointer = tracker, stats, size, pointer

    def __del__(self):
        self.tracker._freed(self.stats, self.size)


class _TrackingAllocator:
    def __init__(self, cp):
        self.cp = cp
        self.pool = cp.get_default_memory_pool()
        self.lock = threading.RLock()   # re-entrant: a release can run inside malloc (GC)
        self.devices: dict[int, _DeviceStats] = {}

    def _stats(self, device_id: int) -> _DeviceStats:
        stats = self.devices.get(device_id)
        if stats is None:
            with self.cp.cuda.Device(device_id):
                stats = self.devices[device_id] = _DeviceStats(self.pool.used_bytes())
                stats.peak_reserved = self.pool.total_bytes()
        return stats

    def malloc(self, size: int):
        if size == 0:
            return self.pool.malloc(size)
        device_id = self.cp.cuda.runtime.getDevice()
        with self.lock:
            s = self._stats(device_id)   # before the allocation: its baseline must not include it
        pointer = self.pool.malloc(size)
        block = pointer.mem.size
        with self.lock:
            s.tracked += block
            s.blocks += 1
            s.num_allocs += 1
            s.bytes_allocated += block
            s.peak_allocated = max(s.peak_allocated, s.untracked + s.tracked)
            s.peak_blocks = max(s.peak_blocks, s.blocks)
            s.peak_reserved = max(s.peak_reserved, self.pool.total_bytes())
        owner = _Release(self, s, block, pointer)
        return self.cp.cuda.MemoryPointer(self.cp.cuda.UnownedMemory(pointer.ptr, block, owner, device_id), 0)

    def _freed(self, stats: _DeviceStats, size: int) -> None:
        with self.lock:
            stats.tracked -= size
            stats.blocks -= 1
            stats.num_frees += 1
            stats.bytes_freed += size

    def snapshot(self, device_id: int) -> dict:
        with self.lock, self.cp.cuda.Device(device_id):
            s = self._stats(device_id)
            allocated, reserved = self.pool.used_bytes(), self.pool.total_bytes()
            return {
                "allocated_bytes.all.current": allocated,
                "allocated_bytes.all.peak": max(s.peak_allocated, allocated),
                "allocated_bytes.all.allocated": s.bytes_allocated,
                "allocated_bytes.all.freed": s.bytes_freed,
                "reserved_bytes.all.current": reserved,
                "reserved_bytes.all.peak": max(s.peak_reserved, reserved),
                "allocation.all.current": s.blocks,
                "allocation.all.peak": s.peak_blocks,
                "allocation.all.allocated": s.num_allocs,
                "allocation.all.freed": s.num_frees,
                "inactive_split_bytes.all.current": self.pool.free_bytes(),
            }

    def reset_peaks(self, device_id: int) -> None:
        with self.lock, self.cp.cuda.Device(device_id):
            s = self._stats(device_id)
            allocated = self.pool.used_bytes()
            s.untracked = max(0, allocated - s.tracked)   # blocks from before tracking may have gone
            s.peak_allocated = allocated
            s.peak_reserved = self.pool.total_bytes()
            s.peak_blocks = s.blocks


_tracker: list[_TrackingAllocator | None] = [None]
_install_lock = threading.Lock()


def install_cuda_allocator() -> bool:
    """Put the statistics-keeping allocator in front of CuPy's default memory pool (once;
    imports CuPy). Call it when CUDA is first used; the queries below also call it. Returns
    False, and does nothing, without CUDA.

    It replaces CuPy's current allocator (cupy.cuda.set_allocator); code that installs another
    allocator afterwards stops the tracking."""
    cp = _cupy(initialise=True)
    if cp is None:
        return False
    with _install_lock:
        if _tracker[0] is None:
            tracker = _TrackingAllocator(cp)
            tracker._stats(cp.cuda.runtime.getDevice())   # what is in use now is the baseline
            cp.cuda.set_allocator(tracker.malloc)
            _tracker[0] = tracker
    return True


def _active_tracker():
    if _cupy(initialise=False) is None:
        return None
    if _tracker[0] is None:
        install_cuda_allocator()
    return _tracker[0]


def _device_index(tracker, device) -> int:
    if device is None:
        return tracker.cp.cuda.runtime.getDevice()
    if isinstance(device, int):
        return device
    d = device if isinstance(device, _device) else _device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index if d.index is not None else tracker.cp.cuda.runtime.getDevice()


def memory_stats(device=None) -> dict:
    """torch.cuda.memory_stats: allocated/reserved bytes (current, peak, cumulative) and block
    counts of CuPy's pool on `device` (default: the current one). {} before CUDA is used."""
    tracker = _active_tracker()
    if tracker is None:
        return {}
    return tracker.snapshot(_device_index(tracker, device))


def memory_allocated(device=None) -> int:
    """Bytes held by live CuPy arrays on `device` (in the pool's 512-byte blocks)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    """The peak of memory_allocated since tracking began or the last reset_peak_memory_stats."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    """Bytes the pool holds on `device`: in use plus cached for reuse."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    """The peak of memory_reserved since tracking began or the last reset_peak_memory_stats."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks again from the current figures."""
    tracker = _active_tracker()
    if tracker is not None:
        tracker.reset_peaks(_device_index(tracker, device))


def empty_cache() -> None:
    """Return the pool's cached, unused blocks to the driver, on every device used so far (the
    blocks of live arrays stay)."""
    tracker = _active_tracker()
    if tracker is None:
        return
    cp = tracker.cp
    for device_id in sorted(set(tracker.devices) | {cp.cuda.runtime.getDevice()}):
        with cp.cuda.Device(device_id):
            tracker.pool.free_all_blocks()


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap the pool on `device` at `fraction` of the GPU's memory; allocations beyond it raise
    cupy.cuda.memory.OutOfMemoryError. No-op without CUDA (the fraction is still checked)."""
    if not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    tracker = _active_tracker()
    if tracker is None:
        return
    cp = tracker.cp
    with cp.cuda.Device(_device_index(tracker, device)):
        _, total = cp.cuda.runtime.memGetInfo()
        # In bytes: CuPy's own fraction=0 would mean "no limit", PyTorch's means none may be used.
        tracker.pool.set_limit(size=max(1, int(fraction * total)))
