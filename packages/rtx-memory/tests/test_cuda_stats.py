"""CUDA memory statistics: zeros and no-ops without CUDA; the tracking allocator's bookkeeping
against a small model of CuPy's pool; the real thing on a GPU."""
import gc
import types

import pytest

import rtx.memory
import rtx.runtime
from rtx.memory import _cuda_stats

no_gpu = pytest.mark.skipif(rtx.runtime.cuda.is_available(), reason="checks the behaviour without CUDA")
needs_gpu = pytest.mark.skipif(not rtx.runtime.cuda.is_available(), reason="needs CUDA (CuPy and a GPU)")


@no_gpu
def test_without_cuda_everything_is_zero_and_a_no_op():
    assert rtx.memory.install_cuda_allocator() is False
    for query in (rtx.memory.memory_allocated, rtx.memory.max_memory_allocated, rtx.memory.memory_reserved,
                  rtx.memory.max_memory_reserved):
        assert query() == 0 and query(0) == 0 and query("cuda:1") == 0
    assert rtx.memory.memory_stats() == {}
    rtx.memory.reset_peak_memory_stats()
    rtx.memory.empty_cache()
    rtx.memory.set_per_process_memory_fraction(0.5)


def test_fraction_is_checked_even_without_cuda():
    for bad in (-0.1, 1.5, "half"):
        with pytest.raises(ValueError, match="Allowed range: 0~1"):
            rtx.memory.set_per_process_memory_fraction(bad)


# ---- a model of CuPy's default pool, to check the bookkeeping without a GPU ------------------


class FakeMemory:
    def __init__(self, pool, size, ptr):
        self.pool, self.size, self.ptr, self.device_id = pool, size, ptr, 0
        pool.in_use[ptr] = size

    def __del__(self):
        self.pool.in_use.pop(self.ptr, None)


class FakePointer:
    def __init__(self, mem, offset=0):
        self.mem, self.ptr, self.device_id = mem, mem.ptr, mem.device_id


class FakePool:
    def __init__(self):
        self.in_use, self.reserved, self.limit, self.next_ptr, self.freed_all = {}, 0, None, 4096, 0

    def malloc(self, size):
        block = -(-size // 512) * 512
        self.next_ptr += block
        self.reserved = max(self.reserved, self.used_bytes() + block)
        return FakePointer(FakeMemory(self, block, self.next_ptr))

    def used_bytes(self):
        return sum(self.in_use.values())

    def total_bytes(self):
        return self.reserved

    def free_bytes(self):
        return self.reserved - self.used_bytes()

    def free_all_blocks(self):
        self.freed_all += 1
        self.reserved = self.used_bytes()

    def set_limit(self, size=None, fraction=None):
        self.limit = size


class FakeDevice:
    def __init__(self, index=0):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class FakeUnownedMemory:
    def __init__(self, ptr, size, owner, device_id):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


@pytest.fixture
def fake_cupy(monkeypatch):
    pool = FakePool()
    cp = types.SimpleNamespace(get_default_memory_pool=lambda: pool, allocator=None)
    cp.cuda = types.SimpleNamespace(
        Device=FakeDevice, MemoryPointer=FakePointer, UnownedMemory=FakeUnownedMemory,
        set_allocator=lambda fn: setattr(cp, "allocator", fn),
        runtime=types.SimpleNamespace(getDevice=lambda: 0, memGetInfo=lambda: (500_000, 1_000_000)))
    monkeypatch.setattr(_cuda_stats, "_cupy", lambda initialise: cp)
    monkeypatch.setattr(_cuda_stats, "_tracker", [None])
    return cp


def test_tracking_allocator_counts_allocations_frees_and_peaks(fake_cupy):
    pool = fake_cupy.get_default_memory_pool()
    before = pool.malloc(100)                 # allocated before tracking began: 512 bytes
    assert rtx.memory.install_cuda_allocator() is True
    malloc = fake_cupy.allocator
    a = malloc(1000)                          # 1024
    b = malloc(3000)                          # 3072
    assert rtx.memory.memory_allocated() == 512 + 1024 + 3072
    assert rtx.memory.max_memory_allocated() == 512 + 1024 + 3072
    del a
    gc.collect()
    assert rtx.memory.memory_allocated() == 512 + 3072
    assert rtx.memory.max_memory_allocated() == 512 + 1024 + 3072
    stats = rtx.memory.memory_stats("cuda:0")
    assert stats["allocation.all.current"] == 1 and stats["allocation.all.peak"] == 2
    assert stats["allocated_bytes.all.allocated"] == 4096 and stats["allocated_bytes.all.freed"] == 1024
    assert rtx.memory.memory_reserved() == pool.total_bytes()
    del before
    rtx.memory.reset_peak_memory_stats()
    assert rtx.memory.max_memory_allocated() == 3072
    c = malloc(10)
    assert rtx.memory.max_memory_allocated() == 3072 + 512
    del b, c


def test_install_is_idempotent_and_queries_install_it(fake_cupy):
    assert rtx.memory.memory_allocated() == 0
    first = fake_cupy.allocator
    assert first is not None
    rtx.memory.install_cuda_allocator()
    assert fake_cupy.allocator is first


def test_empty_cache_and_memory_fraction_reach_the_pool(fake_cupy):
    pool = fake_cupy.get_default_memory_pool()
    rtx.memory.empty_cache()
    assert pool.freed_all == 1
    rtx.memory.set_per_process_memory_fraction(0.25, device=0)
    assert pool.limit == 250_000
    rtx.memory.set_per_process_memory_fraction(0.0)
    assert pool.limit == 1                     # nothing may be allocated (CuPy's 0 means no limit)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        rtx.memory.memory_allocated("cpu")


@needs_gpu
def test_peaks_on_a_gpu():
    import cupy as cp
    rtx.memory.install_cuda_allocator()
    rtx.memory.empty_cache()
    rtx.memory.reset_peak_memory_stats()
    base = rtx.memory.memory_allocated()
    a = cp.ones(10 * 2 ** 20 // 4, dtype=cp.float32)
    assert rtx.memory.memory_allocated() >= base + 10 * 2 ** 20
    del a
    assert rtx.memory.memory_allocated() < base + 2 ** 20
    assert rtx.memory.max_memory_allocated() >= base + 10 * 2 ** 20
    reserved = rtx.memory.memory_reserved()       # the freed block stays cached in the pool
    assert reserved >= 10 * 2 ** 20
    rtx.memory.empty_cache()                      # it was emptied first: this block stands alone
    assert rtx.memory.memory_reserved() <= reserved - 10 * 2 ** 20
    rtx.memory.reset_peak_memory_stats()
    assert rtx.memory.max_memory_allocated() < base + 2 ** 20
