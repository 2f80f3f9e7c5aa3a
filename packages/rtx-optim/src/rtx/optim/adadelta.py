"""Adadelta (torch.optim.Adadelta), with rho, weight decay, maximize.

    g = -grad if maximize else grad;  g += wd * p
    v = rho v + (1 - rho) g^2;  delta = sqrt(u + eps) / sqrt(v + eps) * g;  u = rho u + (1 - rho) delta^2
    p -= lr delta
"""
from __future__ import annotations

import numpy as np

from rtx.optim.optimizer import (
    Optimizer,
    _a,
    _advance,
    _bump,
    _grad_with_decay,
    _lr,
    _no_differentiable,
    _no_grad_step,
)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= _lr(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            params, grads, states, steps = self._init_group(group, ("square_avg", "acc_delta"))
            adadelta(params, grads, states["square_avg"], states["acc_delta"], steps, lr=group["lr"], rho=group["rho"],
                     eps=group["eps"], weight_decay=group["weight_decay"], maximize=group["maximize"])


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay, maximize):
    """Functional Adadelta over lists of tensors."""
    lr = _lr(lr)
    for param, grad, square_avg, acc_delta, step_t in zip(params, grads, square_avgs, acc_deltas, state_steps):
        _advance(step_t)
        p, v, u = _a(param), _a(square_avg), _a(acc_delta)
        g = _grad_with_decay(p, _a(grad), weight_decay, maximize)
        v *= rho
        tmp = np.multiply(g, g)
        tmp *= 1 - rho
        v += tmp
        np.add(v, eps, out=tmp)
        np.sqrt(tmp, out=tmp)                 # std
        delta = np.add(u, eps)
        np.sqrt(delta, out=delta)
        delta /= tmp
        delta *= g
        u *= rho
        np.multiply(delta, delta, out=tmp)
        tmp *= 1 - rho
        u += tmp
        delta *= -lr
        p += delta
        for t in (param, square_avg, acc_delta):
            _bump(t)
