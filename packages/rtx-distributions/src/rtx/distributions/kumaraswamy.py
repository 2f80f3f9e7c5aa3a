"""Kumaraswamy(concentration1 = a, concentration0 = b) on (0, 1): density a b x^(a-1) (1 - x^a)^(b-1),
sampled as (1 - U^(1/b))^(1/a) for U ~ Uniform(0, 1)."""
from __future__ import annotations

import math

import rtx
from rtx.distributions import constraints
from rtx.distributions._special import digamma, lgamma
from rtx.distributions.transformed_distribution import TransformedDistribution
from rtx.distributions.transforms import AffineTransform, PowerTransform
from rtx.distributions.uniform import Uniform
from rtx.distributions.utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n/a, b)."""
    arg1 = 1 + n / a
    return b * rtx.exp(lgamma(arg1) + lgamma(b) - lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(rtx.full_like(self.concentration0, 0), rtx.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1))^(1/a) where a, b >= 1 (not both 1), else undefined. PyTorch 2.13 computes
        # log(1 - b) / b - log(1 - a b), nan for every b > 1: a bug there, not copied here.
        a, b = self.concentration1, self.concentration0
        ok = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        a, b = rtx.where(ok, a, 2.0), rtx.where(ok, b, 2.0)  # harmless stand-ins where it is undefined
        return rtx.where(ok, (((a - 1).log() - (a * b - 1).log()) / a).exp(), math.nan)

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - rtx.log(self.concentration1) - rtx.log(self.concentration0)
