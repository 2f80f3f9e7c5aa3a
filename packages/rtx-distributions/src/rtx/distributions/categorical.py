"""Categorical(probs | logits) over {0, ..., K-1}, K the size of the last dim."""
from __future__ import annotations

import rtx
from rtx.distributions import constraints
from rtx.distributions.distribution import Distribution
from rtx.distributions.utils import (
    _uniform,
    expand_probs_or_logits,
    finfo,
    lazy_property,
    log_softmax,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Categorical"]


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = log_softmax(logits)  # normalised log probabilities
        self._param = self.probs if probs is not None else self.logits
        shape = self._param.shape
        self._num_events = shape[-1]
        super().__init__(shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        expand_probs_or_logits(self, new, param_shape)
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return rtx.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return rtx.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=()):
        # Inverse CDF on the device: the index is the number of cumulative probabilities below u.
        with rtx.no_grad():
            shape = self._extended_shape(sample_shape)
            probs = self.probs.detach()
            cdf = probs.cumsum(-1)
            cdf = cdf / cdf[..., -1:]
            u = _uniform(tuple(shape) + (1,), dtype=probs.dtype, device=probs.device)
            index = (u >= cdf[..., :-1]).sum(-1)
            return index.to(rtx.int64)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        log_pmf = self.logits
        if value.shape[:-1] != log_pmf.shape[:-1]:  # else broadcasting changes nothing: skip its three ops
            value, log_pmf = rtx.broadcast_tensors(value, log_pmf)
            value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = -float(finfo(self.logits.dtype).max)  # so 0 * -inf logits give 0, not NaN
        logits = self.logits.clamp(min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand=True):
        num_events = self._num_events
        values = rtx.arange(num_events, dtype=rtx.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
