"""How many bytes a model's weights take."""
from __future__ import annotations

__all__ = ["state_dict_bytes"]


def state_dict_bytes(module_or_state_dict):
    """Sum of numel * element size over every tensor of the state dict (what rtx.save writes,
    without the container's few hundred bytes of header)."""
    sd = module_or_state_dict.state_dict() if hasattr(module_or_state_dict, "state_dict") else module_or_state_dict
    return sum(t.numel() * t.element_size() for t in sd.values() if t is not None)
