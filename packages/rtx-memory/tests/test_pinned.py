import numpy as np
import pytest

import rtx.memory
import rtx.runtime

needs_gpu = pytest.mark.skipif(not rtx.runtime.cuda.is_available(), reason="needs CUDA (CuPy and a GPU)")


def test_pinned_empty_is_a_numpy_array_of_the_asked_shape():
    a = rtx.memory.pinned_empty((3, 5), np.float64)
    assert isinstance(a, np.ndarray) and a.shape == (3, 5) and a.dtype == np.float64
    a[...] = 1.5
    assert a.sum() == 22.5
    assert rtx.memory.pinned_empty(7).shape == (7,)
    assert rtx.memory.pinned_empty((0, 4)).size == 0


def test_pool_reuses_released_buffers_by_size_class():
    pool = rtx.memory.PinnedBufferPool()
    a = pool.empty((100, 10), np.float32)          # 4000 bytes: the 4 KiB class
    pool.release(a)
    assert pool.cached_bytes == 4096
    b = pool.empty((1000,), np.int32)              # also 4000 bytes: reused
    assert pool.stats()["hits"] == 1 and pool.cached_bytes == 0
    c = pool.empty((2000,), np.float32)            # 8000 bytes: a new 8 KiB buffer
    assert pool.stats()["misses"] == 2
    pool.release(b)
    pool.release(c)
    assert pool.cached_bytes == 4096 + 8192
    pool.clear()
    assert pool.cached_bytes == 0


def test_release_takes_only_what_the_pool_lent():
    pool = rtx.memory.PinnedBufferPool()
    a = pool.empty((4, 4))
    with pytest.raises(ValueError, match="lent by this pool"):
        pool.release(a[1:])
    with pytest.raises(ValueError, match="lent by this pool"):
        pool.release(np.zeros((4, 4), np.float32))
    pool.release(a)
    with pytest.raises(ValueError, match="lent by this pool"):
        pool.release(a)                             # twice


def test_borrow_and_forgotten_buffers():
    pool = rtx.memory.PinnedBufferPool(max_cached_bytes=8192)
    with pool.borrow((10,), np.float64) as buf:
        buf[...] = np.arange(10)
    assert pool.cached_bytes == 4096 and pool.stats()["lent"] == 0
    lost = pool.empty((2, 2))
    del lost                                        # never released: forgotten, not leaked
    assert pool.stats()["lent"] == 0
    big = [pool.empty((3000,)) for _ in range(3)]   # 16 KiB class each
    for b in big:
        pool.release(b)
    assert pool.cached_bytes <= 8192                # trimmed to the cap


@needs_gpu
def test_cuda_pinned_memory_is_page_locked_and_copies_both_ways():
    import cupy as cp
    a = rtx.memory.pinned_empty((256,), np.float32)
    attrs = cp.cuda.runtime.pointerGetAttributes(a.ctypes.data)
    assert attrs.type == cp.cuda.runtime.memoryTypeHost
    a[...] = np.arange(256)
    stream = cp.cuda.Stream(non_blocking=True)
    pool = rtx.memory.PinnedBufferPool()
    with stream:
        d = cp.empty(256, cp.float32)
        d.set(a, stream=stream)
        with pool.borrow((256,), np.float32, stream=stream) as back:
            d.get(stream=stream, out=back)
            stream.synchronize()
            np.testing.assert_array_equal(back, a)
