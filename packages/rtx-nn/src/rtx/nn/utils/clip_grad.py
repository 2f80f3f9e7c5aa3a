"""Gradient clipping: clip_grad_norm_, clip_grad_value_, get_total_norm and
clip_grads_with_norm_, as torch.nn.utils. Everything runs without recording a graph.
`foreach` is accepted for PyTorch compatibility; rtx always takes the per-tensor path."""
from __future__ import annotations

import functools
import types
import warnings

import numpy as np

import rtx
from rtx.extend import Tensor, raw, wrap
from rtx.runtime.devices import array_module

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with rtx.no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _as_list(tensors):
    return [tensors] if type(tensors) is Tensor else list(tensors)


def _vector_norm(arr, norm_type):
    """The norm of all of arr's elements, as a 0-d array of arr's dtype."""
    xp = array_module(arr)
    a = xp.abs(arr)
    if norm_type == float("inf"):
        out = a.max() if a.size else xp.zeros((), a.dtype)
    elif norm_type == float("-inf"):
        out = a.min() if a.size else xp.asarray(xp.inf, a.dtype)
    elif norm_type == 0:
        out = (a != 0).sum().astype(a.dtype)
    elif norm_type == 1:
        out = a.sum()
    elif norm_type == 2:
        flat = a.reshape(-1)
        out = xp.sqrt(xp.dot(flat, flat)) if flat.dtype.kind == "f" and flat.dtype.itemsize >= 4 \
            else xp.sqrt((flat.astype(np.float32) ** 2).sum()).astype(a.dtype)
    else:
        out = (a ** norm_type).sum() ** (1.0 / norm_type)
    return xp.asarray(out, dtype=a.dtype)


@_no_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of `tensors` (= the norm of all their elements together), as a
    0-d tensor on the first tensor's device."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return rtx.tensor(0.0)
    if all(type(raw(t)) is np.ndarray for t in tensors):
        # All on the CPU: the per-tensor norms stacked as arrays (the same values as the Tensor path
        # below, without two rtx ops per tensor: this runs after every optimizer step of PPO/A2C).
        stacked = np.stack([_vector_norm(raw(t), norm_type) for t in tensors])
        total = wrap(_vector_norm(stacked, norm_type))
    else:
        first = tensors[0].device
        norms = [wrap(_vector_norm(raw(t), norm_type)).to(first) for t in tensors]
        stacked = rtx.stack(norms) if len(norms) > 1 else norms[0].reshape(1)
        total = wrap(_vector_norm(raw(stacked), norm_type))
    if error_if_nonfinite and not bool(np.isfinite(total.item())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


@_no_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)), in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = float(max_norm) / (total_norm + 1e-6)
    coef = coef.clamp(max=1.0)
    converted = {}  # coef on each (device, dtype) once, not twice per gradient
    for g in grads:
        key = (g.device, g.dtype)
        c = converted.get(key)
        if c is None:
            c = converted[key] = coef.to(g.device).to(g.dtype)
        g.mul_(c)


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale the gradients of `parameters` in place so that their total norm is at most
    max_norm; returns the total norm before clipping (a 0-d tensor)."""
    if type(parameters) is Tensor:
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of clip_grad_norm_."""
    warnings.warn("`rtx.nn.utils.clip_grad_norm` is now deprecated in favor of `rtx.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of `parameters` to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
