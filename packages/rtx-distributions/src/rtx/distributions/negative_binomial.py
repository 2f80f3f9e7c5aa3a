"""NegativeBinomial(total_count, probs | logits): the number of successes before total_count failures,
each trial succeeding with probability probs (PyTorch's convention; SciPy's nbinom has p = 1 - probs)."""
from __future__ import annotations

import rtx
from rtx.distributions import constraints
from rtx.distributions._special import lgamma, poisson
from rtx.distributions.distribution import Distribution
from rtx.distributions.gamma import Gamma
from rtx.distributions.utils import (
    expand_probs_or_logits,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    set_count_and_probs_or_logits,
)
from rtx.extend import logsigmoid

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        set_count_and_probs_or_logits(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        expand_probs_or_logits(self, new, batch_shape)
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * rtx.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / rtx.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        # not validated: total_count may be 0
        return Gamma(concentration=self.total_count, rate=rtx.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()):
        # a Poisson whose rate is Gamma distributed (the gamma-Poisson mixture), as PyTorch samples it
        with rtx.no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -lgamma(self.total_count + value) + lgamma(1.0 + value) + lgamma(self.total_count)
        # total_count == 0 and value == 0 has probability 1, though lgamma(0) is infinite
        log_normalization = rtx.where(self.total_count + value == 0.0, 0.0, log_normalization)
        return log_unnormalized_prob - log_normalization
