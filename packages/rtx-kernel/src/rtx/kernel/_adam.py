"""One Adam / AdamW step on one parameter, in place: torch.optim.Adam's single-tensor algorithm
(AdamW is decoupled_weight_decay=True), with amsgrad and maximize.

CPU: the update in place, a block at a time, with one scratch buffer (the reference makes about
eight whole-array temporaries).
CUDA: one ElementwiseKernel reads param, grad and the state once and writes them once.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.kernel._blocks import flat_blocks
from rtx.kernel._cuda import elementwise
from rtx.kernel._registry import Kernel, Sample, register
from rtx.runtime import array_module


def _check(step, amsgrad, max_exp_avg_sq):
    if step < 1:
        raise ValueError(f"step counts from 1 (the bias corrections divide by 1 - beta**step); got {step}")
    if amsgrad and max_exp_avg_sq is None:
        raise ValueError("amsgrad=True needs max_exp_avg_sq (zeros like param before the first step)")


def adam_step_reference(param, grad, exp_avg, exp_avg_sq, *, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                        weight_decay=0.0, decoupled_weight_decay=False, amsgrad=False, max_exp_avg_sq=None,
                        maximize=False):
    """Update param, exp_avg, exp_avg_sq (and max_exp_avg_sq) in place; returns None.

        g = -grad if maximize else grad
        weight decay: param *= 1 - lr wd (decoupled, AdamW) or g += wd param (L2, Adam)
        m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
        amsgrad: v_max = max(v_max, v), used for v below
        param -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
    """
    _check(step, amsgrad, max_exp_avg_sq)
    xp = array_module(param)
    g = -grad if maximize else grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            param[...] = param * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * param
    exp_avg[...] = beta1 * exp_avg + (1 - beta1) * g
    exp_avg_sq[...] = beta2 * exp_avg_sq + (1 - beta2) * g * g
    v = exp_avg_sq
    if amsgrad:
        max_exp_avg_sq[...] = xp.maximum(max_exp_avg_sq, exp_avg_sq)
        v = max_exp_avg_sq
    step_size = lr / (1 - beta1 ** step)
    denom = xp.sqrt(v) / math.sqrt(1 - beta2 ** step) + eps
    param[...] = param - step_size * exp_avg / denom


def _adam_step_cpu(param, grad, exp_avg, exp_avg_sq, *, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                   weight_decay=0.0, decoupled_weight_decay=False, amsgrad=False, max_exp_avg_sq=None,
                   maximize=False):
    _check(step, amsgrad, max_exp_avg_sq)
    step_size = lr / (1 - beta1 ** step)
    bc2_sqrt = math.sqrt(1 - beta2 ** step)
    for p, g_in, m, v, v_max in flat_blocks(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq if amsgrad else None):
        g = np.negative(g_in) if maximize else g_in
        if weight_decay != 0:
            if decoupled_weight_decay:
                p *= 1 - lr * weight_decay
            else:
                g = np.multiply(p, weight_decay)
                if maximize:
                    g -= g_in
                else:
                    g += g_in
        scratch = np.multiply(g, 1 - beta1)
        m *= beta1
        m += scratch
        np.multiply(g, g, out=scratch)
        scratch *= 1 - beta2
        v *= beta2
        v += scratch
        if amsgrad:
            np.maximum(v_max, v, out=v_max)
            v = v_max
        np.sqrt(v, out=scratch)
        scratch /= bc2_sqrt
        scratch += eps
        np.divide(m, scratch, out=scratch)
        scratch *= -step_size
        p += scratch


_BODY = """
    T p = param;
    const T g = sign * grad + l2 * p;
    p *= decay;
    const T m = beta1 * exp_avg + one_minus_beta1 * g;
    const T v = beta2 * exp_avg_sq + one_minus_beta2 * g * g;
    exp_avg = m;
    exp_avg_sq = v;
"""
_IN = "T grad, T sign, T l2, T decay, T beta1, T one_minus_beta1, T beta2, T one_minus_beta2, T step_size, " \
      "T bc2_sqrt, T eps"
_ADAM = elementwise("rtx_adam_step", _IN, "T param, T exp_avg, T exp_avg_sq",
                    _BODY + "    param = p - step_size * m / (sqrt(v) / bc2_sqrt + eps);")
_ADAM_AMSGRAD = elementwise("rtx_adam_step_amsgrad", _IN, "T param, T exp_avg, T exp_avg_sq, T max_exp_avg_sq",
                            _BODY + "    const T vmax = max(max_exp_avg_sq, v);\n    max_exp_avg_sq = vmax;\n"
                            "    param = p - step_size * m / (sqrt(vmax) / bc2_sqrt + eps);")


def _adam_step_cuda(param, grad, exp_avg, exp_avg_sq, *, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                    weight_decay=0.0, decoupled_weight_decay=False, amsgrad=False, max_exp_avg_sq=None,
                    maximize=False):
    _check(step, amsgrad, max_exp_avg_sq)
    t = param.dtype.type
    decoupled = weight_decay != 0 and decoupled_weight_decay
    scalars = (t(-1 if maximize else 1), t(0 if decoupled else weight_decay),
               t(1 - lr * weight_decay if decoupled else 1), t(beta1), t(1 - beta1), t(beta2), t(1 - beta2),
               t(lr / (1 - beta1 ** step)), t(math.sqrt(1 - beta2 ** step)), t(eps))
    if amsgrad:
        _ADAM_AMSGRAD()(grad, *scalars, param, exp_avg, exp_avg_sq, max_exp_avg_sq)
    else:
        _ADAM()(grad, *scalars, param, exp_avg, exp_avg_sq)


_VARIANTS = (
    ("adam", {}),
    ("adam l2", {"weight_decay": 0.1}),
    ("adamw", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("amsgrad", {"amsgrad": True}),
    ("maximize l2", {"maximize": True, "weight_decay": 0.05}),
)


def _samples(rng, dtype, size):
    shapes = [(1 << 22,)] if size == "bench" else [(10,), (3, 40), (70_000,)]
    variants = _VARIANTS[:1] if size == "bench" else _VARIANTS
    for label, options in variants:
        for shape in shapes:
            for step in ((10,) if size == "bench" else (1, 7)):
                param, grad, exp_avg = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
                exp_avg_sq = (rng.standard_normal(shape) ** 2 * 1e-2).astype(dtype)
                kwargs = dict(step=step, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, **options)
                if options.get("amsgrad"):
                    kwargs["max_exp_avg_sq"] = (exp_avg_sq * rng.uniform(0.5, 1.5, shape)).astype(dtype)
                yield Sample((param, grad, exp_avg, exp_avg_sq), kwargs, f"{label} {shape} step={step}")


adam_step = register(Kernel("adam_step", adam_step_reference, _adam_step_cpu, _adam_step_cuda, _samples,
                            mutates=("param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")))
