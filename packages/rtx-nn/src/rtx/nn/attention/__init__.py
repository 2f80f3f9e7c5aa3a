"""rtx.nn.attention, as torch.nn.attention: choose the backend of scaled_dot_product_attention.

    with rtx.nn.attention.sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v)

Higher layers add backends with register_sdpa_backend (or the ``rtx.sdpa_backends`` entry
point group); see rtx.nn._functional.attention for the dispatch rules.
"""
from rtx.nn._functional.attention import (
    SDPBackend,
    register_sdpa_backend,
    sdpa_backends,
    sdpa_kernel,
    unregister_sdpa_backend,
)

__all__ = ["SDPBackend", "sdpa_kernel", "register_sdpa_backend", "unregister_sdpa_backend", "sdpa_backends"]
