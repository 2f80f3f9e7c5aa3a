"""RAdam (torch.optim.RAdam): Adam with the variance rectification of Liu et al. (2019), with L2 or
decoupled weight decay and maximize.

    g = -grad if maximize else grad;  decoupled: p *= 1 - lr wd   else g += wd p
    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  m_hat = m / (1 - b1^t)
    rho_inf = 2 / (1 - b2) - 1;  rho_t = rho_inf - 2 t b2^t / (1 - b2^t)
    rho_t > 5: r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
               p -= lr m_hat r sqrt(1 - b2^t) / (sqrt(v) + eps)
    else:      p -= lr m_hat
"""
from __future__ import annotations

import math

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

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "decoupled_weight_decay": False,
                       "capturable": False}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            params, grads, states, steps = self._init_group(group, ("exp_avg", "exp_avg_sq"))
            beta1, beta2 = group["betas"]
            radam(params, grads, states["exp_avg"], states["exp_avg_sq"], steps, beta1=beta1, beta2=beta2,
                  lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                  decoupled_weight_decay=group["decoupled_weight_decay"])


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False, foreach=None,
          differentiable=False, capturable=False, has_complex=False, maximize=False, *, beta1, beta2, lr,
          weight_decay, eps):
    """Functional RAdam over lists of tensors."""
    lr = _lr(lr)
    rho_inf = 2 / (1 - beta2) - 1
    for param, grad, exp_avg, exp_avg_sq, step_t in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps):
        step = _advance(step_t)
        p, m, v = _a(param), _a(exp_avg), _a(exp_avg_sq)
        if weight_decay != 0 and decoupled_weight_decay:
            p *= 1 - lr * weight_decay
            g = _grad_with_decay(p, _a(grad), 0, maximize)
        else:
            g = _grad_with_decay(p, _a(grad), weight_decay, maximize)
        tmp = np.empty_like(m)
        _lerp_(m, g, 1 - beta1, tmp)
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v += tmp
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            np.sqrt(v, out=tmp)
            tmp += eps
            np.divide(m, tmp, out=tmp)
            tmp *= -lr * rect * math.sqrt(bias_correction2) / bias_correction1
        else:
            np.multiply(m, -lr / bias_correction1, out=tmp)
        p += tmp
        for t in (param, exp_avg, exp_avg_sq):
            _bump(t)
