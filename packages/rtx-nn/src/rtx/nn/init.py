"""rtx.nn.init: PyTorch's initializers, in place, under no_grad, drawing from rtx's RNG stream of the
tensor's device (or the given generator), so rtx.manual_seed makes them reproducible."""
from __future__ import annotations

import math
import warnings

import numpy as np

import rtx
from rtx.extend import wrap
from rtx.runtime.random import generator_for


def calculate_gain(nonlinearity, param=None):
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return num_input_fmaps * receptive, num_output_fmaps * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _gen(tensor, generator):
    return generator if generator is not None else generator_for(tensor.device)


def _fill(tensor, sample, generator=None):
    """Write sample(generator's array-module Generator, shape) into tensor, without a graph.
    Only random() and standard_normal() are drawn: both NumPy's and CuPy's Generators have them."""
    values = sample(_gen(tensor, generator).np, tuple(tensor.shape))
    with rtx.no_grad():
        tensor.copy_(wrap(values))
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    return _fill(tensor, lambda rng, s: a + (b - a) * rng.random(s), generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    return _fill(tensor, lambda rng, s: mean + std * rng.standard_normal(s), generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b], by PyTorch's inverse-CDF method."""
    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)

    def sample(rng, s):
        from rtx import kernel
        v = (2 * lo - 1) + (2 * hi - 2 * lo) * rng.random(s)
        x = kernel.erfinv(v) * (std * math.sqrt(2.0)) + mean
        return x.clip(a, b)
    return _fill(tensor, sample, generator)


def constant_(tensor, val):
    with rtx.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with rtx.no_grad():
        tensor.copy_(rtx.eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor, groups=1):
    dims = tensor.ndim
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    arr = np.zeros(tuple(sizes))
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            idx = (g * out_per_group + d, d) + tuple(s // 2 for s in sizes[2:])
            arr[idx] = 1
    with rtx.no_grad():
        tensor.copy_(rtx.as_tensor(arr))
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _gen(tensor, generator).np.standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)  # NumPy's functions dispatch to CuPy for device arrays
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with rtx.no_grad():
        tensor.copy_(wrap((gain * q).reshape(tuple(tensor.shape))))
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    rng = _gen(tensor, generator).np
    arr = rng.standard_normal((rows, cols)) * std
    zeros = int(math.ceil(sparsity * rows))
    for c in range(cols):
        arr[rng.random(rows).argsort()[:zeros], c] = 0  # a random permutation's first `zeros` rows
    with rtx.no_grad():
        tensor.copy_(wrap(arr))
    return tensor


# Old names without the trailing underscore (deprecated in PyTorch, still common).
uniform, normal, constant = uniform_, normal_, constant_
xavier_uniform, xavier_normal = xavier_uniform_, xavier_normal_
kaiming_uniform, kaiming_normal = kaiming_uniform_, kaiming_normal_
