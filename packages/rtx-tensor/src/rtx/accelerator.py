"""rtx.accelerator: torch.accelerator, the device-neutral queries. rtx's one accelerator kind is
CUDA (through CuPy); on a machine without a usable GPU there is none."""
import contextlib

from rtx.runtime import cuda as _cuda
from rtx.runtime.devices import device as _device


def is_available():
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """rtx.device("cuda") when CuPy is installed (torch: the build's accelerator); None otherwise,
    or when check_available=True and no GPU is usable."""
    from rtx.backends.cuda import is_built
    if not is_built() or (check_available and not is_available()):
        return None
    return _device("cuda")


def device_count():
    return _cuda.device_count()


def current_device_index():
    return _cuda.current_device()


current_device_idx = current_device_index  # PyTorch's older name


def set_device_index(device):
    _cuda.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None):
    _cuda.synchronize(device)


@contextlib.contextmanager
def device_index(device):
    """Make `device` current inside the block (None: leave it as it is)."""
    if device is None:
        yield
        return
    old = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(old)


def empty_cache():
    import rtx.memory
    rtx.memory.empty_cache()


def memory_allocated(device=None):
    import rtx.memory
    return rtx.memory.memory_allocated(device)


def max_memory_allocated(device=None):
    import rtx.memory
    return rtx.memory.max_memory_allocated(device)
