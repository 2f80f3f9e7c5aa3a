"""One SGD step on one parameter, in place: torch.optim.SGD's single-tensor algorithm, with
momentum, dampening, Nesterov, weight decay and maximize.

The momentum buffer is allocated by the caller (zeros like param) and filled on the first step
(first_step=True copies the gradient into it, as PyTorch's "buffer is None" branch does).
CPU: in place, a block at a time, with at most one scratch buffer. CUDA: one ElementwiseKernel.
"""
from __future__ import annotations

import numpy as np

from rtx.kernel._blocks import flat_blocks
from rtx.kernel._cuda import elementwise
from rtx.kernel._registry import Kernel, Sample, register


def _check(momentum_buffer, momentum, dampening, nesterov):
    if momentum != 0 and momentum_buffer is None:
        raise ValueError("momentum != 0 needs a momentum_buffer (zeros like param, with first_step=True "
                         "on the first step)")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError(f"Nesterov momentum requires a momentum and zero dampening; "
                         f"got momentum={momentum}, dampening={dampening}")


def sgd_step_reference(param, grad, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0, nesterov=False,
                       weight_decay=0.0, maximize=False, first_step=False):
    """Update param (and momentum_buffer) in place; returns None.

        d = -grad if maximize else grad;  d += wd param
        with momentum: buf = d on the first step, else buf = momentum buf + (1 - dampening) d;
                       d = d + momentum buf (Nesterov) or buf
        param -= lr d
    """
    _check(momentum_buffer, momentum, dampening, nesterov)
    d = -grad if maximize else grad
    if weight_decay != 0:
        d = d + weight_decay * param
    if momentum != 0:
        if first_step:
            momentum_buffer[...] = d
        else:
            momentum_buffer[...] = momentum * momentum_buffer + (1 - dampening) * d
        d = d + momentum * momentum_buffer if nesterov else momentum_buffer
    param[...] = param - lr * d


def _sgd_step_cpu(param, grad, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0, nesterov=False,
                  weight_decay=0.0, maximize=False, first_step=False):
    _check(momentum_buffer, momentum, dampening, nesterov)
    for p, g, buf in flat_blocks(param, grad, momentum_buffer if momentum != 0 else None):
        if weight_decay != 0:
            d = np.multiply(p, weight_decay)
            (np.subtract if maximize else np.add)(d, g, out=d)
        else:
            d = np.negative(g) if maximize else g  # the caller's grad is only read
        step, owned = d, d is not g
        if momentum != 0:
            if first_step:
                buf[...] = d
            else:
                buf *= momentum
                buf += d if dampening == 0 else (1 - dampening) * d
            if nesterov:
                step, owned = np.multiply(buf, momentum), True
                step += d
            else:
                step, owned = buf, False
        if owned:
            step *= lr
            p -= step
        else:
            p -= lr * step


_SGD = elementwise("rtx_sgd_step", "T grad, T sign, T wd, T lr", "T param",
                   "const T d = sign * grad + wd * param;\n    param = param - lr * d;")
_SGD_MOMENTUM = elementwise(
    "rtx_sgd_step_momentum", "T grad, T sign, T wd, T lr, T momentum, T one_minus_dampening, int32 first, "
    "int32 nesterov", "T param, T momentum_buffer",
    "const T d = sign * grad + wd * param;\n"
    "    const T b = first ? d : momentum * momentum_buffer + one_minus_dampening * d;\n"
    "    momentum_buffer = b;\n"
    "    param = param - lr * (nesterov ? d + momentum * b : b);")


def _sgd_step_cuda(param, grad, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0, nesterov=False,
                   weight_decay=0.0, maximize=False, first_step=False):
    _check(momentum_buffer, momentum, dampening, nesterov)
    t = param.dtype.type
    common = (grad, t(-1 if maximize else 1), t(weight_decay), t(lr))
    if momentum == 0:
        _SGD()(*common, param)
    else:
        _SGD_MOMENTUM()(*common, t(momentum), t(1 - dampening), np.int32(first_step), np.int32(nesterov),
                        param, momentum_buffer)


_VARIANTS = (
    ("plain", {}),
    ("weight decay", {"weight_decay": 0.01}),
    ("momentum", {"momentum": 0.9}),
    ("momentum dampening", {"momentum": 0.9, "dampening": 0.1}),
    ("nesterov", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("maximize momentum", {"momentum": 0.5, "maximize": True}),
    ("maximize", {"maximize": True, "weight_decay": 0.01}),
)


def _samples(rng, dtype, size):
    shapes = [(1 << 22,)] if size == "bench" else [(10,), (3, 40), (70_000,)]
    variants = (_VARIANTS[0], _VARIANTS[2]) if size == "bench" else _VARIANTS
    for label, options in variants:
        for shape in shapes:
            for first in (False,) if size == "bench" else (True, False):
                param, grad = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
                buf = rng.standard_normal(shape).astype(dtype) if options.get("momentum") else None
                kwargs = dict(lr=0.1, first_step=first, **options)
                yield Sample((param, grad, buf), kwargs, f"{label} {shape} first_step={first}")


sgd_step = register(Kernel("sgd_step", sgd_step_reference, _sgd_step_cpu, _sgd_step_cuda, _samples,
                           mutates=("param", "momentum_buffer")))
