"""rtx flash-attn: exact memory-efficient attention (FlashAttention-2), CPU blocks and CuPy kernels.

    import rtx.flash_attn
    out = rtx.flash_attn.flash_attn_func(q, k, v, causal=True)          # (batch, seq, heads, dim)
    out = rtx.flash_attn.flash_attention(q, k, v, is_causal=True)       # (batch, heads, seq, dim)

Installed, it is also a backend of rtx.nn.functional.scaled_dot_product_attention (sdpa.py).
"""
__version__ = "0.1.0"

from rtx.flash_attn.attention import (
    FlashAttention,
    flash_attention,
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
)
from rtx.flash_attn.sdpa import register_sdpa

__all__ = ["FlashAttention", "flash_attention", "flash_attn_func", "flash_attn_kvpacked_func",
           "flash_attn_qkvpacked_func", "register_sdpa"]
