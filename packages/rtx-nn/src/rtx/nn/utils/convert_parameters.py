"""parameters_to_vector and vector_to_parameters."""
from __future__ import annotations

from rtx.extend import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param, old_device):
    if old_device is not None and param.device != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    from rtx import cat
    device = None
    vec = []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.reshape(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of vec (in order), as PyTorch's `param.data = ...`:
    the parameters then share vec's memory."""
    if type(vec) is not Tensor:
        raise TypeError(f"expected rtx.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
