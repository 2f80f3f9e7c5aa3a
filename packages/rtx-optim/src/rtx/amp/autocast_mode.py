"""autocast: a context manager and decorator that asks ops to run in float16/bfloat16 (torch.autocast)."""
from __future__ import annotations

import functools
import warnings

from rtx.amp import state


def _default_dtype(device_type):
    from rtx.runtime.dtypes import bfloat16, float16
    return float16 if device_type == "cuda" else bfloat16


def _allowed():
    from rtx.runtime.dtypes import bfloat16, float16
    return (float16, bfloat16)


class autocast:
    """autocast(device_type, dtype=None, enabled=True, cache_enabled=None).

    Inside, ops that honour autocast (see rtx.amp) compute in `dtype` (default float16 on cuda,
    bfloat16 on cpu). Nests; enabled=False switches autocast off for the block. Works as a
    decorator too. cache_enabled is accepted for PyTorch compatibility (rtx keeps no cast cache)."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in state.DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}' "
                               f"(rtx supports {', '.join(state.DEVICE_TYPES)})")
        self.device = device_type
        self.fast_dtype = _default_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _allowed():
            warnings.warn(f"In {device_type} autocast, but the target dtype {self.fast_dtype} is not supported "
                          "(use rtx.float16 or rtx.bfloat16). Disabling autocast.", stacklevel=2)
            self._enabled = False
        if self._enabled and device_type == "cuda":
            from rtx.runtime.cuda import is_available
            if not is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling",
                              stacklevel=2)
                self._enabled = False

    def __enter__(self):
        self._previous = state.set_autocast_dtype(self.device, self.fast_dtype if self._enabled else None)
        return self

    def __exit__(self, *exc):
        state.set_autocast_dtype(self.device, self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return wrapper

