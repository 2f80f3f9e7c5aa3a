"""Dropout family: dropout, dropout1d/2d/3d (whole channels), alpha_dropout and
feature_alpha_dropout, as torch.nn.functional.

Masks come from rtx's RNG stream for the input's device (rtx.manual_seed makes them
reproducible; the numbers differ from PyTorch's, whose generator differs). The output is
input * mask (mask already scaled by 1 / (1 - p)), so the gradient is grad * mask and double
backward comes free. p = 1 gives zeros; eval mode (training=False) returns the input itself.
"""
from __future__ import annotations

import warnings

from rtx.extend import Tensor, apply_inplace, raw, wrap
from rtx.runtime.devices import array_module
from rtx.runtime.random import generator_for

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

# -scale * alpha of SELU: the value that alpha dropout drops to, so SELU's statistics survive.
_ALPHA = 1.7580993408473766


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, shape):
    """1.0 where kept (probability 1 - p), 0.0 where dropped, in input's dtype, on its device."""
    u = generator_for(input.device).np.random(tuple(shape))
    return (u >= p).astype(raw(input).dtype)


def _apply(input, p, training, inplace, noise_shape, alpha, op):
    if type(input) is not Tensor:
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if not input.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype}")
    if p == 1:
        zero = wrap(array_module(raw(input)).zeros((), raw(input).dtype))
        return _finish(input, lambda t: t * zero, inplace)
    keep = _keep_mask(input, p, noise_shape)
    if not alpha:
        mask = wrap(keep / (1 - p))
        return _finish(input, lambda t: t * mask, inplace)
    # PyTorch's alpha dropout: x * a * keep + (keep - 1) * alpha * a + alpha * a * p
    a = 1.0 / ((_ALPHA * _ALPHA * p + 1) * (1 - p)) ** 0.5
    scale = wrap(keep * a)
    shift = wrap((keep - 1) * (_ALPHA * a) + _ALPHA * a * p)
    return _finish(input, lambda t: t * scale + shift, inplace)


def _finish(input, fn, inplace):
    if not inplace:
        return fn(input)
    return apply_inplace(input, fn)


def _feature_shape(input):
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p)."""
    return _apply(input, p, training, inplace, tuple(input.shape) if type(input) is Tensor else (), False,
                  "dropout")


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value and
    an affine correction keeps the mean and variance (note training defaults to False, as in
    PyTorch's functional form)."""
    return _apply(input, p, training, inplace, tuple(input.shape) if type(input) is Tensor else (), True,
                  "alpha_dropout")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels (dim 1)."""
    _check_p(p)
    if not training or p == 0:
        return input
    return _apply(input, p, training, inplace, _feature_shape(input), True, "feature_alpha_dropout")


def _channel_dropout(input, p, training, inplace, spatial, name):
    """Zero whole channels: the mask has shape (N, C, 1, ...), or (C, 1, ...) for an unbatched
    input. Inputs of other ranks behave as in PyTorch (with its deprecation warnings)."""
    if type(input) is not Tensor:
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    _check_p(p)
    nd = input.ndim
    if nd not in (spatial + 1, spatial + 2):
        if name == "dropout1d":
            raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that dropout1d "
                               "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                               "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
        warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an error in "
                      f"a future release. To retain the behavior and silence this warning, please use dropout "
                      f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {spatial} "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)
    # PyTorch's dropout2d never adds a batch dim: a 3-D input is read as (N, C, L).
    batched = nd == spatial + 2 or name == "dropout2d"
    if name == "dropout2d" and nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=3)
    if not training or p == 0 or input.numel() == 0:
        return input
    if nd + (0 if batched else 1) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape)
    noise = shape[:2] + (1,) * (nd - 2) if batched else shape[:1] + (1,) * (nd - 1)
    return _apply(input, p, training, inplace, noise, False, name)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) inputs."""
    return _channel_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) inputs (3-D inputs are read as (N, C, L),
    with PyTorch's warning)."""
    return _channel_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _channel_dropout(input, p, training, inplace, 3, "dropout3d")
