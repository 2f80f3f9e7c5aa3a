"""Building blocks shared by the model families: attention with causal / padding / sliding
window / ALiBi (`attend`), SwiGLU, HF's Conv1D, RMSNorm.

`attend` goes through F.scaled_dot_product_attention, so whichever SDPA backend pays takes
the call (rtx-flash-attn's when installed and the sequence is long). Sliding windows and ALiBi
are no SDPA arguments: with rtx-flash-attn installed they go to its kernel, which skips the
tiles outside the window and adds ALiBi per tile (memory O(L + S)); without it they become an
explicit mask (O(L x S)) for SDPA.
"""
from __future__ import annotations

import importlib.util
import math

import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.extend import Tensor, raw, wrap
from rtx.nn import Linear, Module, Parameter, RMSNorm, init
from rtx.runtime import array_module
from rtx.transformers.activations import get_activation

__all__ = ["attend", "visibility_mask", "SwiGLU", "Conv1D", "RMSNorm"]


def _flash():
    if importlib.util.find_spec("rtx.flash_attn") is None:
        return None
    import rtx.flash_attn
    return rtx.flash_attn


def visibility_mask(L: int, S: int, causal: bool = True, window_size=(-1, -1), xp=np):
    """(L, S) bool, True where query i (the i-th of the last L of S positions) may see key j:
    j <= i + S - L when causal, and -left <= j - (i + S - L) <= right for window_size
    (left, right), -1 meaning unbounded. None when every key is visible."""
    left, right = window_size
    if causal:
        right = 0 if right < 0 else min(right, 0)
    if left < 0 and right < 0:
        return None
    d = xp.arange(S)[None, :] - xp.arange(L)[:, None] - (S - L)
    ok = xp.ones((L, S), dtype=bool)
    if right >= 0:
        ok &= d <= right
    if left >= 0:
        ok &= d >= -left
    return ok


def attend(q, k, v, *, causal=True, padding_mask=None, window_size=(-1, -1), alibi_slopes=None, dropout_p=0.0,
           scale=None):
    """softmax(q k^T * scale + bias) v for q (B, Hq, L, D) and k, v (B, Hk, S, D), the queries
    being the last L of the S positions (a KV cache holds the first S - L). Hq may be a multiple
    of Hk (grouped-query attention; no repeat is made).

    causal: query i sees keys up to its own position. padding_mask: (B, S), true/1 for real
    tokens. window_size (left, right): sliding window, e.g. (W - 1, 0) for the last W keys.
    alibi_slopes: (Hq,) ALiBi slopes. A query that sees no key gives zeros."""
    B, Hq, L, _ = q.shape
    S = k.shape[-2]
    gqa = Hq != k.shape[-3]
    xp = array_module(raw(q))
    pad = None
    if padding_mask is not None:
        if tuple(padding_mask.shape) != (B, S):
            raise ValueError(f"attend: padding_mask must be (batch, keys) = {(B, S)}, got {tuple(padding_mask.shape)}")
        pad = padding_mask if padding_mask.dtype == rtx.bool else padding_mask != 0
        if bool(pad.all()):
            pad = None
    special = alibi_slopes is not None or tuple(window_size) != (-1, -1)
    if special:
        fa = _flash()
        if fa is not None:
            return fa.flash_attention(q, k, v, None if pad is None else pad.reshape(B, 1, 1, S), dropout_p, causal,
                                      scale, enable_gqa=gqa, window_size=tuple(window_size),
                                      alibi_slopes=alibi_slopes, causal_alignment="bottom_right")
    if not special and pad is None and (not causal or L == 1 or L == S):
        return F.scaled_dot_product_attention(q, k, v, None, dropout_p, causal and L > 1, scale, enable_gqa=gqa)
    vis = visibility_mask(L, S, causal, window_size, xp)
    mask = None if vis is None else wrap(vis)
    if pad is not None:
        p = pad.reshape(B, 1, 1, S)
        mask = p if mask is None else p & mask
    if alibi_slopes is not None:
        slopes = xp.asarray(raw(alibi_slopes) if type(alibi_slopes) is Tensor else alibi_slopes, dtype=np.float64)
        dist = xp.abs(xp.arange(L)[:, None] + (S - L) - xp.arange(S)[None, :])
        bias = wrap((-slopes[:, None, None] * dist).astype(raw(q).dtype))
        mask = bias if mask is None else rtx.where(mask, bias, -math.inf)
    return F.scaled_dot_product_attention(q, k, v, mask, dropout_p, False, scale, enable_gqa=gqa)


class SwiGLU(Module):
    """down_proj(act(gate_proj(x)) * up_proj(x)) (Shazeer 2020), with Llama's names, so it is
    Llama's MLP: gate_proj, up_proj (hidden -> intermediate), down_proj (intermediate -> hidden)."""

    def __init__(self, hidden_size, intermediate_size, bias=False, activation="silu", device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.gate_proj = Linear(hidden_size, intermediate_size, bias=bias, **kw)
        self.up_proj = Linear(hidden_size, intermediate_size, bias=bias, **kw)
        self.down_proj = Linear(intermediate_size, hidden_size, bias=bias, **kw)
        self.act_fn = get_activation(activation)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Conv1D(Module):
    """HF's Conv1D (GPT-2): a linear layer whose weight is stored (in_features, out_features),
    the transpose of nn.Linear's, so GPT-2 checkpoints load as they are. y = x W + b."""

    def __init__(self, nf, nx, device=None, dtype=None):
        super().__init__()
        self.nf = nf
        self.weight = Parameter(rtx.empty((nx, nf), device=device, dtype=dtype))
        self.bias = Parameter(rtx.zeros(nf, device=device, dtype=dtype))
        init.normal_(self.weight, std=0.02)

    def forward(self, x):
        out = x.reshape(-1, x.shape[-1]) @ self.weight + self.bias
        return out.reshape(*x.shape[:-1], self.nf)

    def extra_repr(self):
        return f"nf={self.nf}, nx={self.weight.shape[0]}"
