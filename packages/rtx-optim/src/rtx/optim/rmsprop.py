"""RMSprop (torch.optim.RMSprop), with alpha, centered, momentum, weight decay, maximize.

    g = -grad if maximize else grad;  g += wd * p
    v = alpha v + (1 - alpha) g^2
    centered: g_avg = alpha g_avg + (1 - alpha) g;  avg = sqrt(v - g_avg^2) + eps   else avg = sqrt(v) + eps
    momentum > 0: b = momentum b + g / avg;  p -= lr b      else p -= lr g / avg
"""
from __future__ import annotations

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

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= _lr(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    _group_defaults = {"momentum": 0, "centered": False, "foreach": None, "maximize": False, "differentiable": False,
                       "capturable": False}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            names = ("square_avg",) + (("momentum_buffer",) if group["momentum"] > 0 else ()) + (
                ("grad_avg",) if group["centered"] else ())
            params, grads, states, steps = self._init_group(group, names)
            rmsprop(params, grads, states["square_avg"], states.get("grad_avg", []), states.get("momentum_buffer", []),
                    steps, lr=group["lr"], alpha=group["alpha"],
                    eps=group["eps"], weight_decay=group["weight_decay"], momentum=group["momentum"],
                    centered=group["centered"], maximize=group["maximize"])


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, foreach=None,
            maximize=False, differentiable=False, capturable=False, has_complex=False, *, lr, alpha, eps,
            weight_decay, momentum, centered):
    """Functional RMSprop over lists of tensors."""
    lr = _lr(lr)
    for i, param in enumerate(params):
        _advance(state_steps[i])
        p, v = _a(param), _a(square_avgs[i])
        g = _grad_with_decay(p, _a(grads[i]), weight_decay, maximize)
        v *= alpha
        tmp = np.multiply(g, g)
        tmp *= 1 - alpha
        v += tmp
        _bump(square_avgs[i])
        if centered:
            g_avg = _a(grad_avgs[i])
            _lerp_(g_avg, g, 1 - alpha, tmp)
            _bump(grad_avgs[i])
            np.multiply(g_avg, g_avg, out=tmp)
            np.subtract(v, tmp, out=tmp)
            np.sqrt(tmp, out=tmp)
        else:
            np.sqrt(v, out=tmp)
        tmp += eps
        np.divide(g, tmp, out=tmp)
        if momentum > 0:
            buf = _a(momentum_buffer_list[i])
            buf *= momentum
            buf += tmp
            _bump(momentum_buffer_list[i])
            np.multiply(buf, -lr, out=tmp)
        else:
            tmp *= -lr
        p += tmp
        _bump(param)
