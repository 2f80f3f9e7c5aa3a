"""repr like PyTorch's: tensor([...], dtype=..., device=..., grad_fn=<...>)."""
from __future__ import annotations

import numpy as np

from rtx.runtime import dtypes as _dt

_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    if profile == "full":
        _options.update(threshold=np.inf)
    elif profile == "short":
        _options.update(precision=2, threshold=1000, edgeitems=2)
    elif profile == "default":
        _options.update(precision=4, threshold=1000, edgeitems=3, linewidth=80)
    for k, v in dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth).items():
        if v is not None:
            _options[k] = v
    _options["sci_mode"] = sci_mode


def tensor_repr(t) -> str:
    if t.__dict__.get("_is_param"):
        return "Parameter containing:\n" + _repr(t)
    return _repr(t)


def _repr(t) -> str:
    a = t.__array__()
    default_float = _dt.get_default_dtype()
    dtype = t.dtype
    if dtype is _dt.bfloat16:
        a = a.astype(np.float32)
    prefix = "tensor("
    if a.size == 0 and a.ndim == 1:
        body = "[]"
    else:
        kind = a.dtype.kind
        fmt = {}
        if kind == "f" and a.size and np.isfinite(a).all() and np.all(a == np.round(a)) and \
                np.abs(a).max(initial=0) < 1e8:
            fmt = {"float_kind": lambda x: f"{x:.0f}."}
        elif kind == "f" and _options["sci_mode"] is False:
            fmt = {"float_kind": lambda x: f"{x:.{_options['precision']}f}"}
        body = np.array2string(a, separator=", ", prefix=prefix, precision=_options["precision"],
                               threshold=_options["threshold"], edgeitems=_options["edgeitems"],
                               max_line_width=_options["linewidth"], formatter=fmt or None,
                               floatmode="fixed")
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    implied = dtype in (default_float, _dt.int64, _dt.bool_) or (dtype is _dt.default_complex())
    if not implied or a.size == 0:
        extras.append(f"dtype={dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    if extras:
        return prefix + body + ", " + ", ".join(extras) + ")"
    return prefix + body + ")"
