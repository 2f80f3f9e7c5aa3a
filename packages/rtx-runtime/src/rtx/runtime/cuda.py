"""rtx.cuda: is CUDA usable, how many devices, synchronize. CuPy is imported only when a GPU
is actually present, so importing rtx never pays for it."""
from __future__ import annotations

import functools
import importlib.util


@functools.lru_cache(maxsize=None)
def is_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return bool(cupy.cuda.is_available())
    except Exception:  # a broken driver or library is "not available", not a crash
        return False


def device_count() -> int:
    if not is_available():
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


def current_device() -> int:
    if not is_available():
        raise RuntimeError("CUDA is not available (rtx.cuda.is_available() is False)")
    import cupy
    return cupy.cuda.runtime.getDevice()


def set_device(index) -> None:
    from rtx.runtime.devices import as_device
    d = as_device(index)
    import cupy
    cupy.cuda.runtime.setDevice(d.index)


def synchronize(device=None) -> None:
    if not is_available():
        return
    import cupy
    if device is None:
        cupy.cuda.Device().synchronize()
    else:
        from rtx.runtime.devices import as_device
        cupy.cuda.Device(as_device(device).index).synchronize()


def get_device_name(index: int = 0) -> str:
    if not is_available():
        raise RuntimeError("CUDA is not available (rtx.cuda.is_available() is False)")
    import cupy
    return cupy.cuda.runtime.getDeviceProperties(index)["name"].decode()
