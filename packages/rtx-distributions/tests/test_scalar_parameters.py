"""Every distribution with 0-d (scalar) parameters: batch_shape (), samples of shape () and (n,), a
log_prob that scores them. NumPy's generators return Python numbers, not 0-d arrays, for 0-d
inputs; Binomial, Poisson and Gamma's samplers once failed on that."""
import numpy as np
import pytest

import rtx
import rtx.distributions as D


def s(v):
    return rtx.tensor(v, dtype=rtx.float64)


SCALAR = {
    "Normal": lambda: D.Normal(s(0.5), s(1.5)),
    "LogNormal": lambda: D.LogNormal(s(0.5), s(0.7)),
    "Bernoulli": lambda: D.Bernoulli(probs=s(0.3)),
    "Binomial": lambda: D.Binomial(5, probs=s(0.3)),
    "Poisson": lambda: D.Poisson(s(2.5)),
    "Geometric": lambda: D.Geometric(probs=s(0.3)),
    "Beta": lambda: D.Beta(s(2.0), s(3.0)),
    "Gamma": lambda: D.Gamma(s(2.0), s(3.0)),
    "Chi2": lambda: D.Chi2(s(3.0)),
    "StudentT": lambda: D.StudentT(s(4.0), s(0.5), s(2.0)),
    "Exponential": lambda: D.Exponential(s(2.0)),
    "Laplace": lambda: D.Laplace(s(0.5), s(2.0)),
    "Cauchy": lambda: D.Cauchy(s(0.5), s(2.0)),
    "Gumbel": lambda: D.Gumbel(s(0.5), s(2.0)),
    "Uniform": lambda: D.Uniform(s(0.5), s(2.0)),
    "RelaxedBernoulli": lambda: D.RelaxedBernoulli(s(0.5), probs=s(0.3)),
    "HalfNormal": lambda: D.HalfNormal(s(1.5)),
    "HalfCauchy": lambda: D.HalfCauchy(s(1.5)),
    "Pareto": lambda: D.Pareto(s(1.5), s(2.5)),
    "Weibull": lambda: D.Weibull(s(1.5), s(0.8)),
    "NegativeBinomial": lambda: D.NegativeBinomial(s(3.0), probs=s(0.4)),
    "FisherSnedecor": lambda: D.FisherSnedecor(s(3.0), s(7.0)),
    "InverseGamma": lambda: D.InverseGamma(s(3.0), s(2.0)),
    "Kumaraswamy": lambda: D.Kumaraswamy(s(2.0), s(3.0)),
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_parameters(name):
    rtx.manual_seed(0)
    d = SCALAR[name]()
    assert tuple(d.batch_shape) == () and tuple(d.event_shape) == ()
    x, xs = d.sample(), d.sample((7,))
    assert x.shape == () and xs.shape == (7,)
    assert x.dtype == rtx.float64 and xs.dtype == rtx.float64
    assert np.isfinite(d.log_prob(x).item()) and np.isfinite(d.log_prob(xs).numpy()).all()
