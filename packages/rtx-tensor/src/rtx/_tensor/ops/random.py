"""In-place random fills (x.uniform_(), x.normal_(), x.bernoulli_(p), ...), PyTorch's Tensor
methods that initialisers and dropout-style code call. Each draws from the generator of the
tensor's device (rtx.manual_seed makes it reproducible) and writes through copy_, so the usual
in-place rules hold: a leaf that requires grad refuses outside no_grad, views see the values."""
from __future__ import annotations

import numpy as np

from rtx._tensor.ops.creation import _gen
from rtx._tensor.ops.inplace import copy_
from rtx._tensor.tensor import Tensor
from rtx.runtime.devices import to_device


def _fill(self, draw, generator):
    g = _gen(generator, self.device)
    values = np.asarray(draw(g.np, tuple(self.shape)))
    return copy_(self, Tensor._make(to_device(values.astype(self._data.dtype), self.device)))


def _float_only(self, op):
    if self._data.dtype.kind not in "fc":
        raise RuntimeError(f"{op} is not implemented for '{self.dtype}': it needs a floating point tensor")


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    from_ = kwargs.pop("from", from_)
    _float_only(self, "uniform_")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill(self, lambda rng, s: rng.uniform(from_, to, size=s), generator)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _float_only(self, "normal_")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill(self, lambda rng, s: rng.normal(mean, std, size=s), generator)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _float_only(self, "log_normal_")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill(self, lambda rng, s: rng.lognormal(mean, std, size=s), generator)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    _float_only(self, "cauchy_")
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _fill(self, lambda rng, s: median + sigma * rng.standard_cauchy(size=s), generator)


def exponential_(self, lambd=1.0, *, generator=None):
    _float_only(self, "exponential_")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, lambda rng, s: rng.exponential(1.0 / lambd, size=s), generator)


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, lambda rng, s: rng.geometric(p, size=s), generator)


def bernoulli_(self, p=0.5, *, generator=None):
    if type(p) is Tensor:
        probs = np.broadcast_to(np.asarray(p.detach().cpu().numpy(), dtype=np.float64), tuple(self.shape))
    else:
        probs = float(p)
    if np.any((np.asarray(probs) < 0) | (np.asarray(probs) > 1)):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, lambda rng, s: rng.random(size=s) < probs, generator)


def random_(self, from_=0, to=None, *, generator=None, **kwargs):
    """Integers uniform in [from, to); x.random_(n) is [0, n); without either, up to the largest
    integer the dtype holds exactly (2**mantissa for floats), as PyTorch."""
    from_ = kwargs.pop("from", from_)
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        if self._data.dtype.kind == "f":
            to = 2 ** (np.finfo(self._data.dtype).nmant + 1) + 1
        elif self._data.dtype.kind == "b":
            to = 2
        else:
            to = int(np.iinfo(self._data.dtype).max) + 1
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return _fill(self, lambda rng, s: rng.integers(from_, to, size=s, dtype=np.int64), generator)



INPLACE_RANDOM = {f.__name__: f for f in (uniform_, normal_, log_normal_, cauchy_, exponential_, geometric_,
                                          bernoulli_, random_)}

