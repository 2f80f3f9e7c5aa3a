"""torch.backends.cuda. `matmul.allow_tf32` takes effect: on a GPU it switches CuPy's float32
GEMMs to TF32 tensor cores (as CUPY_TF32=1 does) or back to true float32. The SDP switches
(enable_flash_sdp, ...) are stored; rtx.nn.functional.scaled_dot_product_attention picks its
backend from its own registry."""
import sys

from rtx.runtime import cuda as _cuda


def is_built():
    """True when CuPy, rtx's CUDA array library, is installed (torch: built with CUDA)."""
    import importlib.util
    return importlib.util.find_spec("cupy") is not None


def _set_cupy_tf32(on):
    if "cupy" not in sys.modules and not _cuda.is_available():
        return  # no GPU: nothing computes in TF32; the flag is still stored
    try:
        import numpy as np
        from cupy._core import _routines_linalg as lin
        lin.set_compute_type(np.dtype(np.float32), lin.COMPUTE_TYPE_TF32 if on else lin.COMPUTE_TYPE_DEFAULT)
    except (ImportError, AttributeError):  # a CuPy without the switch: CUPY_TF32 is the only control
        pass


class cuBLASModule:
    """torch.backends.cuda.matmul: allow_tf32 (default False, as PyTorch) and the reduced-precision
    reduction flags (stored)."""

    def __init__(self):
        object.__setattr__(self, "_flags", {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                                            "allow_bf16_reduced_precision_reduction": True,
                                            "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        try:
            return self._flags[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise AttributeError(f"Unknown attribute {name}")
        if name == "allow_tf32":
            _set_cupy_tf32(bool(value))
        self._flags[name] = value


matmul = cuBLASModule()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def enable_flash_sdp(enabled):
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled():
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled):
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled):
    _sdp["math"] = bool(enabled)


def math_sdp_enabled():
    return _sdp["math"]


def enable_cudnn_sdp(enabled):
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled():
    return _sdp["cudnn"]


_linalg_library = "default"


def preferred_linalg_library(backend=None):
    """Stored (CuPy chooses cuSOLVER itself); returns the current choice."""
    global _linalg_library
    if backend is not None:
        if backend not in ("default", "cusolver", "magma"):
            raise RuntimeError(f"Unknown input value. Choose from: default, cusolver, magma; got {backend!r}")
        _linalg_library = backend
    return _linalg_library
