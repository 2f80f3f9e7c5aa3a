"""Gumbel(loc, scale): the distribution of the maximum, x = loc - scale log(-log u)."""
from __future__ import annotations

import math
import numbers

import rtx
from rtx.distributions import constraints
from rtx.distributions.distribution import Distribution
from rtx.distributions.utils import _uniform, broadcast_all, euler_constant, finfo

__all__ = ["Gumbel"]


class Gumbel(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            batch_shape = ()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Gumbel, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = float(finfo(self.loc.dtype).tiny)
        eps = float(finfo(self.loc.dtype).eps)
        u = _uniform(shape, dtype=self.loc.dtype, device=self.loc.device).clamp(min=tiny, max=1 - eps)
        return self.loc - self.scale * rtx.log(-rtx.log(u))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -(z + rtx.exp(-z)) - self.scale.log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return rtx.exp(-rtx.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * rtx.log(-rtx.log(value))

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
