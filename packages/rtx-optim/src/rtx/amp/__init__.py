"""rtx.amp: automatic mixed precision (torch.amp), shipped by rtx-optim.

- GradScaler: loss scaling; skips optimizer steps whose gradients overflowed.
- autocast(device_type, dtype=None, enabled=True): a thread-local request that ops compute in
  float16 / bfloat16. rtx.amp.state holds it: get_autocast_dtype(device_type) gives the active
  dtype or None, maybe_autocast(*tensors) casts floating tensors to it.

Which ops honour autocast: none yet. rtx.nn.functional.linear / conv are to consult
rtx.amp.state.get_autocast_dtype (a lazy import: rtx-nn does not depend on rtx-optim); until they
do, autocast only records the request.
"""
from rtx.amp.autocast_mode import autocast
from rtx.amp.grad_scaler import GradScaler, OptState
from rtx.amp.state import get_autocast_dtype, is_autocast_enabled, maybe_autocast


def autocast_dtype(device_type: str | None = None):
    """The dtype autocast asks ops to use on device_type (any device type, when None), or None."""
    from rtx.amp.state import _state
    if device_type is None:
        return next(iter(_state.dtypes.values()), None)
    return _state.dtypes.get(device_type)


__all__ = ["GradScaler", "OptState", "autocast", "autocast_dtype", "get_autocast_dtype", "is_autocast_enabled",
           "maybe_autocast"]
