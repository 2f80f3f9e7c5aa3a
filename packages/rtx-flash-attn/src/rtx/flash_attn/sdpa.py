"""rtx-flash-attn as a backend of F.scaled_dot_product_attention.

Registered through the entry point group ``rtx.sdpa_backends`` (see this package's pyproject),
so every model that calls SDPA gets it once the package is installed. It takes a call when it
can (floating inputs with a heads axis, the same batch dims, a mask that broadcasts, head dims
up to 256 on CUDA) and when it pays, chosen by size:

- CPU: when L * S >= CPU_MIN_SCORES per head. Measured on this machine (2 cores, OpenBLAS;
  tools/bench/attention.py --sweep): below about 256 x 256 the math backend's few large NumPy
  calls win on overhead; from there on the blocked kernel is as fast or faster and its memory
  stays O(L + S) where math's grows as L x S.
- CUDA: when L * S >= CUDA_MIN_SCORES (the score matrices would pass a few MiB per head);
  below that cuBLAS' batched matmuls in the math backend are hard to beat with these kernels.

Inside rtx.nn.attention.sdpa_kernel("flash_attention") the size rule is off (the caller chose);
RTX_FLASH_ATTN=always / never forces the choice process-wide.
"""
from __future__ import annotations

import os

from rtx.extend import raw
from rtx.flash_attn.attention import flash_attention

__all__ = ["register_sdpa", "supports", "CPU_MIN_SCORES", "CUDA_MIN_SCORES", "PRIORITY"]

NAME = "flash_attention"
# Above math (0); below 10, so a backend someone registers by hand at the customary 10 is tried first.
PRIORITY = 8
CPU_MIN_SCORES = 256 * 256
CUDA_MIN_SCORES = 1024 * 1024
CUDA_MAX_HEAD_DIM = 256


def can_run(query, key, value, attn_mask) -> bool:
    """Whether flash_attention takes these arguments at all (whatever their size)."""
    if query.ndim < 3 or key.ndim != query.ndim or value.ndim != query.ndim:
        return False
    if tuple(query.shape[:-3]) != tuple(key.shape[:-3]) or tuple(key.shape[:-3]) != tuple(value.shape[:-3]):
        return False
    hq, hk = query.shape[-3], key.shape[-3]
    if hk == 0 or hq % hk or value.shape[-3] != hk:
        return False
    if not query.is_floating_point() or not (query.dtype == key.dtype == value.dtype):
        return False
    if query.numel() == 0 or key.numel() == 0:
        return False
    if attn_mask is not None:
        full = (*query.shape[:-1], key.shape[-2])
        if attn_mask.ndim > len(full) or any(m not in (1, f) for m, f in
                                             zip(reversed(tuple(attn_mask.shape)), reversed(full))):
            return False
        if attn_mask.device != query.device:
            return False
    if query.is_cuda:
        from rtx.flash_attn import _cuda
        if not _cuda.supports_dtype(raw(query).dtype):
            return False
        if max(query.shape[-1], value.shape[-1]) > CUDA_MAX_HEAD_DIM:
            return False
    return True


def supports(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None) -> bool:
    """The SDPA registry's question: take this call?"""
    force = os.environ.get("RTX_FLASH_ATTN", "").lower()
    if force == "never":
        return False
    if not can_run(query, key, value, attn_mask):
        return False
    if force == "always" or _forced():
        return True
    scores = query.shape[-2] * key.shape[-2]
    return scores >= (CUDA_MIN_SCORES if query.is_cuda else CPU_MIN_SCORES)


def _forced() -> bool:
    """Inside sdpa_kernel(...) naming this backend the caller chose it: size does not matter."""
    from rtx.nn._functional import attention as _registry
    allowed = getattr(_registry, "_ALLOWED", None)
    chosen = allowed.get() if allowed is not None else None
    return chosen is not None and NAME in chosen[0]


def _sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return flash_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                           enable_gqa=enable_gqa or key.shape[-3] != query.shape[-3])


def register_sdpa() -> None:
    """The entry point's callable: register flash_attention with rtx.nn's SDPA registry."""
    from rtx.nn._functional.attention import register_sdpa_backend
    register_sdpa_backend(NAME, _sdpa, priority=PRIORITY, supports=supports, gqa=True)
