"""torch.backends.mkl: whether NumPy's BLAS, which rtx's CPU math runs on, is Intel MKL."""
import functools


@functools.lru_cache(maxsize=None)
def is_available():
    import numpy as np
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # an old or unusual NumPy build: say no rather than guess
        return False
    return "mkl" in str(blas).lower()
