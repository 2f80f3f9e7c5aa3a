"""The flash attention op (an rtx Primitive) and its two front doors:

- `flash_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, ...)`
  in SDPA's layout (..., H, L, E), which F.scaled_dot_product_attention dispatches to;
- `flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, alibi_slopes, ...)`
  in the flash-attn library's layout (batch, seqlen, nheads, headdim).

Forward saves q, k, v, the mask, the output and the log-sum-exp (batch, heads, L) and the
dropout seed; backward recomputes the tiles (FlashAttention-2). Arrays on the CPU run the NumPy
blocks (_cpu.py); CuPy arrays run the CUDA kernels (_cuda.py).

Double backward: when the backward itself is recorded (create_graph=True, e.g. a gradient
penalty or a Hessian-vector product), the gradients are rebuilt from rtx Tensor ops (the plain
attention formula), so higher derivatives are exact but that one backward takes O(L x S)
memory like the math backend. Plain backward never does.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.extend import Primitive, Tensor, grad_mode, raw, wrap
from rtx.flash_attn import _cpu, _dropout
from rtx.runtime.random import generator_for

__all__ = ["flash_attention", "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func"]


def _impl(arr):
    if type(arr) is np.ndarray:
        return _cpu
    from rtx.flash_attn import _cuda
    return _cuda


class FlashAttention(Primitive):
    saves_output = True

    @staticmethod
    def forward(ctx, q, k, v, mask, *, scale, window, offset, dropout_p, seed, alibi, block_q, block_k):
        marr = None if mask is None else raw(mask)
        out, lse = _impl(raw(q)).forward(raw(q), raw(k), raw(v), marr, scale=scale, window=window,
                                          offset=offset, dropout_p=dropout_p, seed=seed, alibi=alibi,
                                          block_q=block_q, block_k=block_k)
        ctx.save_for_backward(q, k, v, mask)
        ctx.lse = lse
        ctx.attrs = dict(scale=scale, window=window, offset=offset, dropout_p=dropout_p, seed=seed, alibi=alibi,
                         block_q=block_q, block_k=block_k)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, mask = ctx.saved_tensors
        out = ctx.output()
        needs = ctx.needs_input_grad
        if grad_mode.enabled:  # create_graph: gradients as differentiable Tensor ops
            return _recorded_backward(g, q, k, v, mask, needs, **ctx.attrs)
        marr = None if mask is None else raw(mask)
        dq, dk, dv, dm = _impl(raw(q)).backward(raw(g), raw(q), raw(k), raw(v), raw(out), ctx.lse, marr,
                                                 mask_grad=len(needs) > 3 and needs[3], **ctx.attrs)
        grads = [wrap(dq) if needs[0] else None, wrap(dk) if needs[1] else None,
                 wrap(dv) if needs[2] else None]
        if len(needs) > 3:
            grads.append(wrap(dm.astype(raw(mask).dtype, copy=False)) if needs[3] and dm is not None
                         else None)
        return tuple(grads)


# ---- the recorded (double-backward) gradient ------------------------------------------------------


def _visible(L, S, window, offset, xp):
    """(L, S) bool: key j visible to query i under the window (None when every key is)."""
    left, right = window
    if left < 0 and right < 0:
        return None
    d = xp.arange(S)[None, :] - xp.arange(L)[:, None] - offset
    ok = xp.ones((L, S), dtype=bool)
    if right >= 0:
        ok &= d <= right
    if left >= 0:
        ok &= d >= -left
    return ok


def _alibi_bias(alibi, batch, Hq, L, S, offset, xp, dtype):
    slopes = xp.broadcast_to(xp.asarray(alibi, dtype=dtype), (*batch, Hq))[..., None, None]
    dist = xp.abs(xp.arange(L)[:, None] + offset - xp.arange(S)[None, :]).astype(dtype)
    return -slopes * dist


def _recorded_backward(g, q, k, v, mask, needs, *, scale, window, offset, dropout_p, seed, alibi, block_q,
                       block_k):
    import rtx
    from rtx.runtime import array_module
    xp = array_module(raw(q))
    *batch, Hq, L, _ = q.shape
    Hk, S = k.shape[-3], k.shape[-2]
    G = Hq // Hk

    def rep(t):  # each key/value head serves G query heads
        if G == 1:
            return t
        shape = tuple(t.shape)
        return t.unsqueeze(-3).expand(*shape[:-2], G, *shape[-2:]).reshape(*shape[:-3], Hq, *shape[-2:])

    kr, vr = rep(k), rep(v)
    s = (q * scale) @ kr.mT
    if alibi is not None:
        s = s + wrap(_alibi_bias(alibi, batch, Hq, L, S, offset, xp, raw(q).dtype))
    if mask is not None:
        s = rtx.where(mask, s, -math.inf) if mask.dtype == rtx.bool else s + mask
    vis = _visible(L, S, window, offset, xp)
    if vis is not None:
        s = rtx.where(wrap(vis), s, -math.inf)
    m = s.detach().amax(-1, keepdim=True)  # softmax is shift-invariant: a constant shift is exact
    m = rtx.where(m == -math.inf, m.new_zeros(()), m)
    p = (s - m).exp()
    denom = p.sum(-1, keepdim=True)
    p = p / rtx.where(denom == 0, denom.new_ones(()), denom)
    pd = p
    if dropout_p > 0:
        rows = xp.arange(math.prod(batch) * Hq, dtype=np.uint64).reshape(*batch, Hq, 1, 1) * np.uint64(L)
        z = _dropout.keep_scale(seed, dropout_p, rows, xp.arange(L), xp.arange(S), S, raw(q).dtype)
        zt = wrap(xp.asarray(z, dtype=raw(q).dtype))
        pd = p * zt
    dpd = g @ vr.mT
    dp = dpd * zt if dropout_p > 0 else dpd
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    out = []
    if needs[0]:
        out.append((ds @ kr) * scale)
    else:
        out.append(None)

    def unrep(t):
        if G == 1:
            return t
        shape = tuple(t.shape)
        return t.reshape(*shape[:-3], Hk, G, *shape[-2:]).sum(-3)

    out.append(unrep((ds.mT @ q) * scale) if needs[1] else None)
    out.append(unrep(pd.mT @ g) if needs[2] else None)
    if len(needs) > 3:
        if needs[3]:
            dm = ds
            shape = (1,) * (ds.ndim - mask.ndim) + tuple(mask.shape)
            axes = tuple(a for a in range(ds.ndim) if shape[a] == 1 and ds.shape[a] != 1)
            if axes:
                dm = dm.sum(axes, keepdim=True)
            out.append(dm.reshape(tuple(mask.shape)))
        else:
            out.append(None)
    return tuple(out)


# ---- front doors -----------------------------------------------------------------------------------


def _check(query, key, value, attn_mask, dropout_p, enable_gqa, op):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if type(t) is not Tensor:
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 3:
            raise ValueError(f"{op}: {name} must be (..., heads, seq, head_dim), got shape {list(t.shape)}")
    if not (query.dtype == key.dtype == value.dtype):
        raise TypeError(f"{op}: query, key and value must have the same dtype, got {query.dtype}, {key.dtype}, "
                        f"{value.dtype}")
    if not query.is_floating_point():
        raise TypeError(f"{op}: expected floating point inputs, got {query.dtype}")
    if not (query.device == key.device == value.device):
        raise ValueError(f"{op}: query, key and value must be on one device, got {query.device}, {key.device}, "
                         f"{value.device}")
    if tuple(query.shape[:-3]) != tuple(key.shape[:-3]) or tuple(key.shape[:-3]) != tuple(value.shape[:-3]):
        raise ValueError(f"{op}: query, key and value must have the same batch dims, got {list(query.shape)}, "
                         f"{list(key.shape)}, {list(value.shape)}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"{op}: query and key must have the same head_dim, got {list(query.shape)} and "
                         f"{list(key.shape)}")
    if key.shape[-2] != value.shape[-2] or key.shape[-3] != value.shape[-3]:
        raise ValueError(f"{op}: key and value must have the same heads and seq length, got {list(key.shape)} and "
                         f"{list(value.shape)}")
    hq, hk = query.shape[-3], key.shape[-3]
    if hq != hk:
        if not enable_gqa:
            raise ValueError(f"{op}: query has {hq} heads and key/value {hk}; pass enable_gqa=True for grouped-query "
                             f"attention")
        if hq % hk:
            raise ValueError(f"{op}: the query heads ({hq}) must be a multiple of the key/value heads ({hk})")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1), got {dropout_p}")
    if attn_mask is not None:
        if type(attn_mask) is not Tensor:
            raise TypeError(f"{op}: attn_mask must be a Tensor or None, got {type(attn_mask).__name__}")
        full = (*query.shape[:-1], key.shape[-2])
        if attn_mask.ndim > len(full) or any(m not in (1, f) for m, f in
                                             zip(reversed(tuple(attn_mask.shape)), reversed(full))):
            raise ValueError(f"{op}: attn_mask of shape {list(attn_mask.shape)} does not broadcast to "
                             f"(..., heads, L, S) = {list(full)}")
        if attn_mask.device != query.device:
            raise ValueError(f"{op}: attn_mask is on {attn_mask.device}, query on {query.device}")


def _seed(device, dropout_p):
    if dropout_p <= 0:
        return 0
    return int(float(generator_for(device).np.random()) * (1 << 53))


def flash_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                    enable_gqa=False, *, window_size=(-1, -1), alibi_slopes=None, causal_alignment="top_left",
                    block_q=None, block_k=None, return_lse=False):
    """softmax(Q K^T * scale + mask) V, exact, in O(L + S) memory beyond the inputs.

    query (..., Hq, L, E), key (..., Hk, S, E), value (..., Hk, S, Ev) -> (..., Hq, L, Ev); with
    enable_gqa Hq may be a multiple of Hk (grouped/multi-query attention, no repeat made).
    attn_mask broadcasts to (..., Hq, L, S): bool (True = takes part) or additive float (whose
    gradient is computed when it requires one). is_causal: key j visible to query i when
    j <= i (top-left, as SDPA) or j <= i + S - L (causal_alignment="bottom_right", as the
    flash-attn library and as a decoder with a KV cache needs). window_size (left, right):
    only keys with -left <= j - i(-aligned) <= right are visible (-1: unbounded), i.e.
    sliding-window attention; is_causal sets right = 0. alibi_slopes (Hq,) or (..., Hq): adds
    -slope * |i(-aligned) - j| to the scores (no gradient). A query that sees no key gives zeros.
    return_lse=True returns (out, lse) with lse (..., Hq, L) in float32 (float64 for float64).
    """
    _check(query, key, value, attn_mask, dropout_p, enable_gqa, "flash_attention")
    L, S = query.shape[-2], key.shape[-2]
    if causal_alignment not in ("top_left", "bottom_right"):
        raise ValueError(f"flash_attention: causal_alignment must be 'top_left' or 'bottom_right', got "
                         f"{causal_alignment!r}")
    offset = 0 if causal_alignment == "top_left" else S - L
    left, right = (int(w) for w in window_size)
    if is_causal:
        right = 0 if right < 0 else min(right, 0)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    alibi = None
    if alibi_slopes is not None:
        arr = raw(alibi_slopes) if type(alibi_slopes) is Tensor else np.asarray(alibi_slopes, dtype=np.float64)
        from rtx.runtime import array_module
        alibi = array_module(raw(query)).asarray(arr, dtype=np.float64)  # the paths cast to their work dtype
        if alibi.shape[-1] != query.shape[-3]:
            raise ValueError(f"flash_attention: alibi_slopes must have one slope per query head ({query.shape[-3]}), "
                             f"got shape {tuple(alibi.shape)}")
    attrs = dict(scale=scale, window=(left, right), offset=offset, dropout_p=float(dropout_p),
                 seed=_seed(query.device, dropout_p), alibi=alibi, block_q=block_q, block_k=block_k)
    recorded = grad_mode.enabled and any(t is not None and t.requires_grad for t in (query, key, value, attn_mask))
    if return_lse and not recorded:  # nothing to differentiate: the arrays straight from the kernel
        out, lse = _impl(raw(query)).forward(raw(query), raw(key), raw(value),
                                              None if attn_mask is None else raw(attn_mask), **attrs)
        return wrap(out), wrap(lse)
    out = FlashAttention.apply(query, key, value, attn_mask, **attrs)
    if return_lse:
        return out, wrap(out.grad_fn.lse)
    return out


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    alibi_slopes=None, deterministic=False, return_attn_probs=False, *, key_padding_mask=None):
    """The flash-attn library's entry point: q (batch, seqlen_q, nheads, headdim), k and v
    (batch, seqlen_k, nheads_k, headdim) with nheads a multiple of nheads_k (MQA/GQA).
    causal aligns to the bottom right (as flash-attn >= 2.1). Returns (batch, seqlen_q, nheads,
    headdim), or (out, softmax_lse (batch, nheads, seqlen_q), None) with return_attn_probs (the
    probabilities themselves are never formed). key_padding_mask (batch, seqlen_k) bool, True
    for real keys, is an rtx extension in place of the library's varlen functions.
    `deterministic` is accepted: every path here is deterministic."""
    del deterministic
    for name, t in (("q", q), ("k", k), ("v", v)):
        if type(t) is not Tensor or t.ndim != 4:
            raise ValueError(f"flash_attn_func: {name} must be a 4-D Tensor (batch, seqlen, nheads, headdim), got "
                             f"{list(t.shape) if type(t) is Tensor else type(t).__name__}")
    mask = None
    if key_padding_mask is not None:
        if type(key_padding_mask) is not Tensor or tuple(key_padding_mask.shape) != (k.shape[0], k.shape[1]):
            got = list(key_padding_mask.shape) if type(key_padding_mask) is Tensor else key_padding_mask
            raise ValueError(f"flash_attn_func: key_padding_mask must be a bool Tensor (batch, seqlen_k) = "
                             f"{(k.shape[0], k.shape[1])}, got {got}")
        mask = key_padding_mask.reshape(k.shape[0], 1, 1, k.shape[1])
    res = flash_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, dropout_p, causal,
                          softmax_scale, enable_gqa=True, window_size=window_size, alibi_slopes=alibi_slopes,
                          causal_alignment="bottom_right", return_lse=return_attn_probs)
    if return_attn_probs:
        out, lse = res
        return out.transpose(1, 2), lse, None
    return res.transpose(1, 2)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, **kw):
    """qkv (batch, seqlen, 3, nheads, headdim)."""
    if type(qkv) is not Tensor or qkv.ndim != 5 or qkv.shape[2] != 3:
        raise ValueError(f"flash_attn_qkvpacked_func: qkv must be (batch, seqlen, 3, nheads, headdim), got "
                         f"{list(qkv.shape) if type(qkv) is Tensor else type(qkv).__name__}")
    return flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale, causal, **kw)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, **kw):
    """q (batch, seqlen_q, nheads, headdim), kv (batch, seqlen_k, 2, nheads_k, headdim)."""
    if type(kv) is not Tensor or kv.ndim != 5 or kv.shape[2] != 2:
        raise ValueError(f"flash_attn_kvpacked_func: kv must be (batch, seqlen_k, 2, nheads_k, headdim), got "
                         f"{list(kv.shape) if type(kv) is Tensor else type(kv).__name__}")
    return flash_attn_func(q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal, **kw)
