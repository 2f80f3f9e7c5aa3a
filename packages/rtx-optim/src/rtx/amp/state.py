"""The thread-local autocast state that ops consult: re-exported from rtx-tensor
(published as rtx.extend.autocast), where it lives so that the ops in the foundation and core packages
can read it without importing rtx-optim. See that module for the policies (lower precision,
float32, promote) and rtx.amp for the list of ops that honour autocast.
"""
from __future__ import annotations

from rtx.extend import autocast as _autocast

DEVICE_TYPES = _autocast.DEVICE_TYPES
FP32_OPS = _autocast.FP32_OPS
_state = _autocast._state
fp32 = _autocast.fp32
get_autocast_dtype = _autocast.get_autocast_dtype
is_autocast_enabled = _autocast.is_autocast_enabled
lower = _autocast.lower
maybe_autocast = _autocast.maybe_autocast
set_autocast_dtype = _autocast.set_autocast_dtype

__all__ = ["DEVICE_TYPES", "FP32_OPS", "fp32", "get_autocast_dtype", "is_autocast_enabled", "lower",
           "maybe_autocast", "set_autocast_dtype", "_state"]
