"""rtx.cuda: CUDA availability and devices (rtx-runtime) with memory statistics (rtx-memory,
looked up on first use so importing rtx stays fast)."""
from rtx.runtime.cuda import current_device, device_count, get_device_name, is_available, set_device, synchronize  # noqa: F401

_MEMORY = ("empty_cache", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_peak_memory_stats")


def __getattr__(name):
    if name in _MEMORY:
        import rtx.memory
        return getattr(rtx.memory, name)
    raise AttributeError(f"module 'rtx.cuda' has no attribute '{name}'")


def manual_seed(seed: int) -> None:
    from rtx.runtime.random import _cuda_generators
    for g in _cuda_generators.values():
        g.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)
