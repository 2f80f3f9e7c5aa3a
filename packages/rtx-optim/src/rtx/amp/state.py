"""The thread-local autocast state that ops consult: re-exported from rtx-tensor
(rtx._tensor.autocast_state), where it lives so that the ops in the foundation and core packages
can read it without importing rtx-optim. See that module for the policies (lower precision,
float32, promote) and rtx.amp for the list of ops that honour autocast.
"""
from __future__ import annotations

from rtx._tensor.autocast_state import (
    DEVICE_TYPES,
    FP32_OPS,
    _state,
    fp32,
    get_autocast_dtype,
    is_autocast_enabled,
    lower,
    maybe_autocast,
    set_autocast_dtype,
)

__all__ = ["DEVICE_TYPES", "FP32_OPS", "fp32", "get_autocast_dtype", "is_autocast_enabled", "lower",
           "maybe_autocast", "set_autocast_dtype", "_state"]
