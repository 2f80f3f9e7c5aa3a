"""Thread counts (torch.set_num_threads / get_num_threads / *_interop_threads). rtx's intra-op
parallelism is NumPy's BLAS (and rtx-nn's convolution pool, which runs as many chunks as BLAS
has threads), so set_num_threads sets the BLAS thread count through threadpoolctl."""
import os
import warnings

_interop = [None]


def _blas():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController().select(user_api="blas")


def set_num_threads(n):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    ctl = _blas()
    if ctl is None:
        warnings.warn("rtx.set_num_threads needs threadpoolctl to change NumPy's BLAS threads "
                      "(pip install threadpoolctl); set OMP_NUM_THREADS before starting Python instead",
                      stacklevel=2)
        return
    ctl.limit(limits=n)


def get_num_threads():
    ctl = _blas()
    if ctl is not None and ctl.lib_controllers:
        return max(lib.num_threads for lib in ctl.lib_controllers)
    env = os.environ.get("OMP_NUM_THREADS") or os.environ.get("OPENBLAS_NUM_THREADS")
    return int(env) if env and env.isdigit() else (os.cpu_count() or 1)


def set_num_interop_threads(n):
    """Stored: rtx runs independent ops one after another (no inter-op pool)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_interop_threads expects a positive integer, got {n!r}")
    _interop[0] = n


def get_num_interop_threads():
    return _interop[0] or os.cpu_count() or 1
