"""Adagrad (torch.optim.Adagrad), with lr_decay, initial_accumulator_value, weight decay, maximize.

    g = -grad if maximize else grad;  g += wd * p
    clr = lr / (1 + (t - 1) lr_decay);  s += g^2;  p -= clr * g / (sqrt(s) + eps)
"""
from __future__ import annotations

import numpy as np

from rtx.optim.optimizer import (
    Optimizer,
    _a,
    _advance,
    _bump,
    _full_like,
    _grad_with_decay,
    _lr,
    _new_state,
    _no_differentiable,
    _no_grad_step,
)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= _lr(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state eagerly, for every parameter.
        for group in self.param_groups:
            for p in group["params"]:
                _new_state(self.state[p], p, extra=_sum_init(group))

    _group_defaults = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            # init: for a group added through add_param_group after construction
            params, grads, states, steps = self._init_group(group, extra=_sum_init(group))
            adagrad(params, grads, states["sum"], steps, lr=group["lr"], weight_decay=group["weight_decay"],
                    lr_decay=group["lr_decay"], eps=group["eps"], maximize=group["maximize"])


def _sum_init(group):
    value = group["initial_accumulator_value"]
    return {"sum": lambda p: _full_like(p, value)}


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr, weight_decay,
            lr_decay, eps, maximize):
    """Functional Adagrad over lists of tensors."""
    lr = _lr(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step = _advance(step_t)
        p, s = _a(param), _a(state_sum)
        g = _grad_with_decay(p, _a(grad), weight_decay, maximize)
        clr = lr / (1 + (step - 1) * lr_decay)
        tmp = np.multiply(g, g)
        s += tmp
        np.sqrt(s, out=tmp)
        tmp += eps
        np.divide(g, tmp, out=tmp)
        tmp *= -clr
        p += tmp
        _bump(param)
        _bump(state_sum)
