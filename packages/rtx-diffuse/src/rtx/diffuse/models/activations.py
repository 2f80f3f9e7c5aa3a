"""diffusers' activation names and the GEGLU feed-forward gate."""
from __future__ import annotations

import rtx.nn as nn
import rtx.nn.functional as F

_ACTIVATIONS = {"swish": nn.SiLU, "silu": nn.SiLU, "mish": nn.Mish, "gelu": nn.GELU, "relu": nn.ReLU}


def get_activation(name):
    try:
        return _ACTIVATIONS[name.lower()]()
    except KeyError:
        raise ValueError(f"activation function {name!r} not found; expected one of {sorted(_ACTIVATIONS)}") from None


class GEGLU(nn.Module):
    """Shazeer 2020: a linear layer to twice the width; one half gates the other through GELU."""

    def __init__(self, dim_in, dim_out, bias=True):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2, bias=bias)

    def forward(self, hidden_states):
        hidden_states, gate = self.proj(hidden_states).chunk(2, dim=-1)
        return hidden_states * F.gelu(gate)
