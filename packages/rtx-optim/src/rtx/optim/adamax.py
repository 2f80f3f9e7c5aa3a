"""Adamax (torch.optim.Adamax): Adam with the infinity norm, with weight decay and maximize.

    g = -grad if maximize else grad;  g += wd * p
    m = b1 m + (1 - b1) g;  u = max(b2 u, |g| + eps);  p -= lr / (1 - b1^t) * m / u
"""
from __future__ import annotations

import numpy as np

from rtx.optim.adam import _check_adam_args
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

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            params, grads, states, steps = self._init_group(group, ("exp_avg", "exp_inf"))
            beta1, beta2 = group["betas"]
            adamax(params, grads, states["exp_avg"], states["exp_inf"], steps, eps=group["eps"], beta1=beta1,
                   beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"], maximize=group["maximize"])


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False, differentiable=False,
           capturable=False, has_complex=False, *, eps, beta1, beta2, lr, weight_decay):
    """Functional Adamax over lists of tensors."""
    lr = _lr(lr)
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs, state_steps):
        step = _advance(step_t)
        p, m, u = _a(param), _a(exp_avg), _a(exp_inf)
        g = _grad_with_decay(p, _a(grad), weight_decay, maximize)
        tmp = np.empty_like(m)
        _lerp_(m, g, 1 - beta1, tmp)
        u *= beta2
        np.abs(g, out=tmp)
        tmp += eps
        np.maximum(u, tmp, out=u)
        np.divide(m, u, out=tmp)
        tmp *= -lr / (1 - beta1 ** step)
        p += tmp
        for t in (param, exp_avg, exp_inf):
            _bump(t)
