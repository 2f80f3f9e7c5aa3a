"""rtx memory: CuPy memory-pool statistics with PyTorch's names, pinned host memory, and the
peak host memory of a block of code."""
__version__ = "0.1.0"

from rtx.memory._cuda_stats import (
    empty_cache,
    install_cuda_allocator,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from rtx.memory._host import HostPeak, host_peak
from rtx.memory._pinned import PinnedBufferPool, pinned_empty

__all__ = ["HostPeak", "PinnedBufferPool", "empty_cache", "host_peak", "install_cuda_allocator",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "pinned_empty", "reset_peak_memory_stats", "set_per_process_memory_fraction"]
