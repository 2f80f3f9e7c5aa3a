"""Shared by the quantized layers: turning a float weight into int8 + per-channel (scale, zero point)."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.compress.functional import quantize_array
from rtx.compress.observer import per_channel_affine, per_channel_symmetric
from rtx.compress.qtypes import qint8


def as_numpy(t):
    """A CPU NumPy view of a tensor (a NumPy array as is)."""
    return t if isinstance(t, np.ndarray) else t.detach().cpu().numpy()


def quantize_weight(weight, observer, observe=True):
    """(int8 weight, float32 scales, int8 zero points) with one scale per output channel (axis 0);
    a per-tensor observer's one scale is repeated so that every layer runs one code path.
    observe=False uses what the observer (a QAT weight fake quantizer) has already seen."""
    if observer.dtype is not qint8:
        raise ValueError(f"quantized layers store qint8 weights; the weight observer has dtype {observer.dtype!r}")
    w = as_numpy(weight).astype(np.float32)
    if observe:
        observer(weight.detach())
    scale, zp = (as_numpy(t) for t in observer.calculate_qparams())
    per_channel = observer.qscheme in (per_channel_affine, per_channel_symmetric)
    if per_channel and getattr(observer, "ch_axis", 0) % w.ndim != 0:
        raise ValueError("quantized layers need per-channel weight scales along the output channels (ch_axis=0), "
                         f"got ch_axis={observer.ch_axis}")
    c = w.shape[0]
    scale = np.broadcast_to(scale.reshape(-1), (c,)).astype(np.float32)
    zp = np.broadcast_to(zp.reshape(-1), (c,)).astype(np.int64)
    q = quantize_array(w, scale, zp, observer.quant_min, observer.quant_max, np.int8, axis=0)
    return rtx.from_numpy(q), rtx.from_numpy(scale.copy()), rtx.from_numpy(zp.astype(np.int8))


def centred_weight(q, zero_point):
    """(q - zero_point) as int16 rows (one zero point per output channel)."""
    q = as_numpy(q).astype(np.int16)
    z = as_numpy(zero_point).astype(np.int16)
    return q - z.reshape((-1,) + (1,) * (q.ndim - 1))


def dequantized_weight(q, scale, zero_point):
    """The float32 weight the int8 one stands for."""
    s = as_numpy(scale).reshape((-1,) + (1,) * (q.ndim - 1))
    return (centred_weight(q, zero_point) * s).astype(np.float32)


class GemmWeight:
    """The centred int8 weight (w_q - w_zp) as a (K, out) float32 matrix for rtx.kernel.exact_matmul, rebuilt
    only when the weight or zero point buffers change (load_state_dict bumps their versions)."""

    def __init__(self):
        self.key = None
        self.matrix = self.max_abs = None

    def get(self, weight, zero_point, groups=1):
        # the tensors themselves are in the key (compared by identity; holding them keeps their
        # id from being reused by a new tensor), with their versions for in-place changes
        key = (weight, weight._version, zero_point, zero_point._version, groups)
        if self.key is None or any(a is not b if isinstance(a, rtx.Tensor) else a != b
                                   for a, b in zip(key, self.key)):
            w = centred_weight(weight, zero_point)
            out = w.shape[0] // groups
            # per group a (K, out / groups) matrix; stacked along a leading axis
            self.matrix = np.ascontiguousarray(
                w.reshape(groups, out, -1).transpose(0, 2, 1).astype(np.float32))
            self.max_abs = int(np.abs(w).max()) if w.size else 0
            self.key = key
        return self.matrix, self.max_abs
