"""ExponentialFamily: p(x) = exp(<t(x), theta> - F(theta) + k(x)); entropy from the log normalizer by
autograd (a Bregman divergence, Nielsen & Nock), as torch.distributions.ExponentialFamily."""
from __future__ import annotations

import rtx
from rtx.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with rtx.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = rtx.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
