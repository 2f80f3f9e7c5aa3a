"""Activation functions by their Hugging Face config names (ACT2FN)."""
from __future__ import annotations

import rtx.nn.functional as F

__all__ = ["ACT2FN", "get_activation"]


def _quick_gelu(x):
    return x * (x * 1.702).sigmoid()


ACT2FN = {
    "gelu": F.gelu,                                         # exact (erf)
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),    # GPT-2's tanh approximation
    "gelu_fast": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "quick_gelu": _quick_gelu,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
}


def get_activation(name: str):
    try:
        return ACT2FN[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; expected one of {sorted(ACT2FN)}") from None
