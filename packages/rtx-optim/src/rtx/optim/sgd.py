"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (torch.optim.SGD).

    g = -grad if maximize else grad;  g += weight_decay * p
    momentum: b = g (first step) else momentum * b + (1 - dampening) * g;  g = g + momentum * b (nesterov) or b
    p -= lr * g

The update is written with in-place ufuncs on the arrays (NumPy or CuPy). rtx.kernel.sgd_step
(same signature as _sgd_update) fuses it into one CUDA kernel, but on the CPU it is slower than
these ufuncs (see the package README's benchmark): swap it in once a GPU profile says it pays.
"""
from __future__ import annotations

import numpy as np

from rtx.optim.optimizer import (
    Optimizer,
    _a,
    _bump,
    _grad_with_decay,
    _lr,
    _no_differentiable,
    _no_grad_step,
    _zeros_like,
)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        lr_value = _lr(lr)
        if lr_value < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _no_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    _group_defaults = {"nesterov": False, "maximize": False, "foreach": None, "differentiable": False, "fused": False}

    @_no_grad_step
    def step(self, closure=None):
        for group in self.param_groups:
            momentum = group["momentum"]
            # the buffer starts as None: sgd() creates it from the first gradient, as PyTorch does
            params, grads, states, _ = self._init_group(
                group, extra={"momentum_buffer": None} if momentum != 0 else None, step=False)
            bufs = states.get("momentum_buffer", [])
            sgd(params, grads, bufs, weight_decay=group["weight_decay"], momentum=momentum, lr=group["lr"],
                dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"])
            if momentum != 0:
                for p, buf in zip(params, bufs):
                    self.state[p]["momentum_buffer"] = buf


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """Functional SGD over lists of tensors. A None momentum buffer is created (and stored back into
    momentum_buffer_list) on the parameter's first step. foreach/fused are accepted for PyTorch
    compatibility: rtx has one implementation per device."""
    if grad_scale is not None or found_inf is not None:
        raise NotImplementedError("sgd(): grad_scale/found_inf (fused AMP stepping) is not supported; "
                                  "use rtx.amp.GradScaler.step(optimizer)")
    lr = _lr(lr)
    for i, (param, grad) in enumerate(zip(params, d_p_list)):
        buf, first = None, False
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = momentum_buffer_list[i] = _zeros_like(param)
                first = True
            _bump(buf)
            buf = _a(buf)
        _sgd_update(_a(param), _a(grad), buf, lr=lr, momentum=momentum, dampening=dampening, nesterov=nesterov,
                    weight_decay=weight_decay, maximize=maximize, first_step=first)
        _bump(param)


def _sgd_update(param, grad, momentum_buffer=None, *, lr, momentum=0.0, dampening=0.0, nesterov=False,
                weight_decay=0.0, maximize=False, first_step=False):
    """One parameter's update on arrays, in place (rtx.kernel.sgd_step's contract): first_step fills
    the (preallocated) momentum buffer with the gradient, as PyTorch's "buffer is None" branch."""
    d = _grad_with_decay(param, grad, weight_decay, maximize)
    owned = d is not grad  # a fresh array this function may overwrite
    if momentum != 0:
        buf = momentum_buffer
        if first_step:
            buf[...] = d
        else:
            buf *= momentum
            buf += d if dampening == 0 else np.multiply(d, 1 - dampening)
        if nesterov:
            step = np.multiply(buf, momentum)
            step += d
            d, owned = step, True
        else:
            d, owned = buf, False
    if owned:
        d *= -lr
        param += d
    else:
        param += np.multiply(d, -lr)
