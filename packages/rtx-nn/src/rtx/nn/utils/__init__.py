"""rtx.nn.utils, as torch.nn.utils: gradient clipping, parameters <-> vector, and (in
rtx.nn.utils.rnn, imported on first use) packed sequences."""
from __future__ import annotations

import importlib

from rtx.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from rtx.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "rnn"]

_LAZY = ("rnn",)


def __getattr__(name):
    # Submodules that import more of rtx load on first use, as torch.nn.utils.rnn does for users.
    if name in _LAZY:
        module = importlib.import_module(f"rtx.nn.utils.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'rtx.nn.utils' has no attribute '{name}'")
