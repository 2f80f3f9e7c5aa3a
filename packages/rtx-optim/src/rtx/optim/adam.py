"""Adam (torch.optim.Adam), with amsgrad, maximize, L2 or decoupled (AdamW) weight decay.

    g = -grad if maximize else grad
    decoupled: p *= 1 - lr * wd      else: g += wd * p
    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  amsgrad: v_max = max(v_max, v), used as v
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

The update is written with in-place ufuncs and one scratch array (NumPy or CuPy).
rtx.kernel.adam_step (same signature as _adam_update) fuses it into one CUDA kernel, but on the
CPU it is slower than these ufuncs (see the package README's benchmark): swap it in once a GPU
profile says it pays.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.optim.optimizer import (
    Optimizer,
    _a,
    _advance,
    _bump,
    _grad_with_decay,
    _lerp_,
    _lr,
    _no_differentiable,
    _no_grad_step,
)

__all__ = ["Adam", "adam"]


def _check_adam_args(lr, betas, eps, weight_decay):
    if not 0.0 <= _lr(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=tuple(float(b) for b in betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    _group_defaults = {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                       "differentiable": False, "decoupled_weight_decay": False, "fused": None}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if group["amsgrad"] else ("exp_avg", "exp_avg_sq")
            params, grads, states, steps = self._init_group(group, names)
            beta1, beta2 = group["betas"]
            adam(params, grads, states["exp_avg"], states["exp_avg_sq"], states.get("max_exp_avg_sq", []), steps,
                 amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                 eps=group["eps"], maximize=group["maximize"], decoupled_weight_decay=group["decoupled_weight_decay"])


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """Functional Adam over lists of tensors; each state_steps entry (a scalar tensor) is advanced."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("adam(): grad_scale/found_inf (fused AMP stepping) is not supported; "
                                  "use rtx.amp.GradScaler.step(optimizer)")
    lr = _lr(lr)
    for i, (param, grad) in enumerate(zip(params, grads)):
        step = _advance(state_steps[i])
        vmax = None
        if amsgrad:
            vmax = max_exp_avg_sqs[i]
            _bump(vmax)
            vmax = _a(vmax)
        _adam_update(_a(param), _a(grad), _a(exp_avgs[i]), _a(exp_avg_sqs[i]), step=step, lr=lr, beta1=beta1,
                     beta2=beta2, eps=eps, weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay,
                     amsgrad=amsgrad, max_exp_avg_sq=vmax, maximize=maximize)
        _bump(param)
        _bump(exp_avgs[i])
        _bump(exp_avg_sqs[i])


def _adam_update(param, grad, exp_avg, exp_avg_sq, *, step, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 weight_decay=0.0, decoupled_weight_decay=False, amsgrad=False, max_exp_avg_sq=None,
                 maximize=False):
    """One parameter's update on arrays, in place (rtx.kernel.adam_step's contract), in PyTorch's
    order of operations: lerp for the first moment, denom = sqrt(v) / sqrt(1 - b2^t) + eps."""
    if weight_decay != 0 and decoupled_weight_decay:
        param *= 1 - lr * weight_decay
        g = _grad_with_decay(param, grad, 0, maximize)
    else:
        g = _grad_with_decay(param, grad, weight_decay, maximize)
    tmp = np.empty_like(param)
    _lerp_(exp_avg, g, 1 - beta1, tmp)
    exp_avg_sq *= beta2
    np.multiply(g, g, out=tmp)
    tmp *= 1 - beta2
    exp_avg_sq += tmp
    v = exp_avg_sq
    if amsgrad:
        np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        v = max_exp_avg_sq
    np.sqrt(v, out=tmp)
    tmp /= math.sqrt(1 - beta2 ** step)
    tmp += eps
    np.divide(exp_avg, tmp, out=tmp)
    tmp *= -lr / (1 - beta1 ** step)
    param += tmp
