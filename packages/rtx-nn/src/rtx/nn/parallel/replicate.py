"""Copies of a module on other devices that share its parameters for autograd: each replica's
parameter is `param.to(device)`, a differentiable copy, so the replicas' gradients add up in the
original parameters' .grad on backward."""
import copy
from collections import OrderedDict


def replicate(network, devices, detach=False):
    from rtx.nn.parallel.scatter_gather import _device
    return [_replicate_one(network, _device(d), detach, {}) for d in devices]


def _replicate_one(module, device, detach, memo):
    if id(module) in memo:  # a submodule used twice stays one module in the replica
        return memo[id(module)]
    r = copy.copy(module)
    memo[id(module)] = r
    params = OrderedDict()
    for k, p in module._parameters.items():
        if p is None:
            params[k] = None
        else:
            q = p.detach().to(device) if detach else p.to(device)
            params[k] = q
    bufs = OrderedDict((k, None if b is None else b.to(device)) for k, b in module._buffers.items())
    kids = OrderedDict((k, None if m is None else _replicate_one(m, device, detach, memo))
                       for k, m in module._modules.items())
    r.__dict__.update(_parameters=params, _buffers=bufs, _modules=kids)
    return r


__all__ = ["replicate"]
