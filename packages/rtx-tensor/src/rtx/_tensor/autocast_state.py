"""The thread-local autocast state the ops consult (torch's Autocast dispatch keys, in one dict).

`rtx.autocast` (rtx.amp, in rtx-optim) switches it on and off; it lives here, in the foundation,
so that ops in rtx-tensor, rtx-nn and rtx-losses can read it without importing upward.

An op that honours autocast starts with one cheap test of the process-wide counter `active`
(zero unless some thread is inside an autocast block), and only then applies its policy, as
PyTorch's autocast op lists do:

- lower(*tensors): the "lower precision" list (matmul, mm, bmm, addmm, baddbmm, linear, conv*,
  prelu, scaled_dot_product_attention): floating inputs on an autocast device type are cast to
  the autocast dtype (float16 / bfloat16).
- fp32(op, *tensors): the "float32" list, which differs per device type (FP32_OPS): floating
  inputs are cast to float32.
- The "promote" list (cat, stack) needs nothing: rtx's type promotion already casts mixed
  floating inputs to the widest one.

float64 inputs are never cast (PyTorch's rule), nor are integer, bool or complex ones. The casts
are ordinary differentiable ops, so gradients come back to float32 parameters in float32.
Thread-local, as in PyTorch: a serving thread's autocast does not leak into a training thread.
"""
from __future__ import annotations

import threading

from rtx._tensor.ops._util import cast
from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt

__all__ = ["DEVICE_TYPES", "FP32_OPS", "fp32", "get_autocast_dtype", "is_autocast_enabled", "lower",
           "maybe_autocast", "set_autocast_dtype"]

DEVICE_TYPES = ("cpu", "cuda")

# Ops of rtx that are on PyTorch's "autocast to float32" lists (torch docs, "Autocast Op Reference").
# The CPU list leaves normalisations, softmax and sum in the lower dtype (PyTorch's CPU kernels
# accumulate bfloat16 in float32 themselves); the CUDA list casts them.
_FP32_LOSSES = frozenset({
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "ctc_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss",
    "multi_margin_loss", "multilabel_margin_loss", "nll_loss", "poisson_nll_loss", "smooth_l1_loss",
    "soft_margin_loss", "triplet_margin_loss", "cdist", "prod"})
FP32_OPS = {
    "cpu": _FP32_LOSSES,
    "cuda": _FP32_LOSSES - {"binary_cross_entropy", "huber_loss", "ctc_loss"} | {
        "layer_norm", "group_norm", "softmax", "log_softmax", "softmin", "softplus", "sum", "norm", "normalize",
        "cosine_similarity", "pdist", "cumsum", "cumprod"},
}


class _State(threading.local):
    def __init__(self):
        self.dtypes = {}  # device type -> the active lower-precision rtx dtype (absent: autocast off)


_state = _State()
_lock = threading.Lock()
# How many (thread, device type) pairs have autocast on, process-wide. Ops test it first, so that
# with autocast off (the usual case) each costs one module-attribute test; a thread that dies inside
# an autocast block leaves it raised, which only sends ops down the (correct) thread-local path.
active = 0


def get_autocast_dtype(device_type: str):
    """The dtype autocast asks ops on `device_type` to compute in, or None when autocast is off there."""
    return _state.dtypes.get(device_type)


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for device_type in this thread."""
    return device_type in _state.dtypes


def set_autocast_dtype(device_type: str, dtype) -> object:
    """Switch autocast on (dtype) or off (None) for device_type in this thread; returns the previous
    value so the caller can restore it (autocast's __exit__ does)."""
    global active
    if device_type not in DEVICE_TYPES:
        raise ValueError(f"autocast: device_type must be one of {DEVICE_TYPES}, got {device_type!r}")
    dtypes = _state.dtypes
    previous = dtypes.get(device_type)
    with _lock:
        if dtype is None:
            if dtypes.pop(device_type, None) is not None:
                active -= 1
        else:
            if previous is None:
                active += 1
            dtypes[device_type] = dtype
    return previous


def _eligible(t) -> bool:
    # PyTorch's is_eligible: a floating tensor that is not float64.
    if type(t) is not Tensor:
        return False
    d = t.dtype
    return d.is_floating_point and d is not _dt.float64


def lower(*tensors):
    """The tensors, each eligible one (floating, not float64) cast, differentiably, to the autocast
    dtype active for its device type in this thread; the rest (None included) unchanged. A tuple."""
    dtypes = _state.dtypes
    if not dtypes:
        return tensors
    out = []
    for t in tensors:
        if _eligible(t):
            dtype = dtypes.get(t.device.type)
            if dtype is not None:
                t = cast(t, dtype.np)
        out.append(t)
    return tuple(out)


maybe_autocast = lower


def fp32(op: str, *tensors):
    """The tensors, each eligible one cast to float32 when autocast is on for its device type in this
    thread and `op` is on that device type's float32 list (FP32_OPS); the rest unchanged. A tuple."""
    dtypes = _state.dtypes
    if not dtypes:
        return tensors
    out = []
    for t in tensors:
        if _eligible(t):
            kind = t.device.type
            if kind in dtypes and op in FP32_OPS.get(kind, ()):
                t = cast(t, _dt.float32.np)
        out.append(t)
    return tuple(out)
