"""NAdam (torch.optim.NAdam): Adam with Nesterov momentum and the momentum-decay schedule of
Dozat (2016), with L2 or decoupled weight decay and maximize.

    g = -grad if maximize else grad;  decoupled: p *= 1 - lr wd   else g += wd p
    mu_t = b1 (1 - 0.5 * 0.96^(t psi));  mu_{t+1} likewise;  prod_t = prod_{t-1} mu_t
    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  denom = sqrt(v / (1 - b2^t)) + eps
    p -= lr (1 - mu_t) / (1 - prod_t) * g / denom + lr mu_{t+1} / (1 - prod_t mu_{t+1}) * m / denom
"""
from __future__ import annotations

import numpy as np

from rtx.extend import raw
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
    _scalar_state,
)

__all__ = ["NAdam", "nadam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                       "decoupled_weight_decay": False}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            params, grads, states, steps = self._init_group(group, ("exp_avg", "exp_avg_sq"),
                                                            extra={"mu_product": _mu_product_init})
            beta1, beta2 = group["betas"]
            nadam(params, grads, states["exp_avg"], states["exp_avg_sq"], states["mu_product"], steps, beta1=beta1,
                  beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                  momentum_decay=group["momentum_decay"], eps=group["eps"],
                  decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])


def _mu_product_init(p):
    return _scalar_state(1.0)


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, decoupled_weight_decay=False,
          foreach=None, capturable=False, differentiable=False, has_complex=False, maximize=False, *, beta1, beta2,
          lr, weight_decay, momentum_decay, eps):
    """Functional NAdam over lists of tensors; mu_products are float32 scalar tensors, as in PyTorch."""
    lr = _lr(lr)
    for param, grad, exp_avg, exp_avg_sq, mu_product, step_t in zip(params, grads, exp_avgs, exp_avg_sqs,
                                                                      mu_products, state_steps):
        step = _advance(step_t)
        p, m, v = _a(param), _a(exp_avg), _a(exp_avg_sq)
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0 and decoupled_weight_decay:
            p *= 1 - lr * weight_decay
            g = _grad_with_decay(p, _a(grad), 0, maximize)
        else:
            g = _grad_with_decay(p, _a(grad), weight_decay, maximize)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mp = raw(mu_product)
        mp *= mu
        _bump(mu_product)
        prod = float(raw(mu_product))
        tmp = np.empty_like(m)
        _lerp_(m, g, 1 - beta1, tmp)
        v *= beta2
        np.multiply(g, g, out=tmp)
        tmp *= 1 - beta2
        v += tmp
        denom = np.divide(v, bias_correction2)
        np.sqrt(denom, out=denom)
        denom += eps
        np.divide(g, denom, out=tmp)
        tmp *= -lr * (1.0 - mu) / (1.0 - prod)
        p += tmp
        np.divide(m, denom, out=tmp)
        tmp *= -lr * mu_next / (1.0 - prod * mu_next)
        p += tmp
        for t in (param, exp_avg, exp_avg_sq):
            _bump(t)
