"""torch.backends.cudnn. rtx does not call cuDNN (its GPU convolutions are GEMMs through CuPy),
so enabled / benchmark / deterministic / allow_tf32 are stored for scripts that set them and have
no effect; is_available() and version() say whether CuPy could reach cuDNN on this machine."""
import contextlib
import functools

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


@functools.lru_cache(maxsize=None)
def _cudnn():
    from rtx.runtime import cuda
    if not cuda.is_available():
        return None
    try:
        from cupy.cuda import cudnn
        cudnn.getVersion()
        return cudnn
    except Exception:  # CuPy without its cuDNN library: not available
        return None


def is_available():
    return _cudnn() is not None


def version():
    lib = _cudnn()
    return None if lib is None else int(lib.getVersion())


def is_acceptable(tensor):
    return is_available() and tensor.is_cuda


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags for a block and restore them after it (torch.backends.cudnn.flags)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: g[n] for n in names}
    g.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        yield
    finally:
        g.update(old)
