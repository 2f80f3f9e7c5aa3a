"""Gradients (gradcheck in float64), sampling moments with fixed seeds, rsample gradients,
kl_divergence against closed forms and Monte Carlo, transforms, validate_args messages, REINFORCE."""
import math

import numpy as np
import pytest
import scipy.special as sp

import rtx
import rtx.distributions as D
from rtx.autograd import gradcheck

R = np.random.default_rng(1)


def t(a, grad=False):
    x = rtx.tensor(np.asarray(a, dtype=np.float64))
    return x.requires_grad_(True) if grad else x


# ---- gradients of log_prob / entropy w.r.t. parameters ------------------------------------------

LOGPROB_GRADS = {
    "Normal": (lambda a, b: D.Normal(a, b), R.normal(size=3), R.uniform(0.5, 2, 3), R.normal(size=3)),
    "Gamma": (lambda a, b: D.Gamma(a, b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3), R.uniform(0.2, 3, 3)),
    "Beta": (lambda a, b: D.Beta(a, b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3), R.uniform(0.1, 0.9, 3)),
    "StudentT": (lambda a, b: D.StudentT(a + 2, b), R.uniform(0.5, 3, 3), R.normal(size=3), R.normal(size=3)),
    "Laplace": (lambda a, b: D.Laplace(a, b), R.normal(size=3), R.uniform(0.5, 2, 3), R.normal(size=3) + 3),
    "Gumbel": (lambda a, b: D.Gumbel(a, b), R.normal(size=3), R.uniform(0.5, 2, 3), R.normal(size=3)),
    "LogNormal": (lambda a, b: D.LogNormal(a, b), R.normal(size=3), R.uniform(0.5, 2, 3), R.uniform(0.2, 3, 3)),
    "Weibull": (lambda a, b: D.Weibull(a, b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3), R.uniform(0.2, 3, 3)),
    "Pareto": (lambda a, b: D.Pareto(a, b), R.uniform(0.5, 1, 3), R.uniform(0.5, 2, 3), R.uniform(1.2, 3, 3)),
    "HalfNormal": (lambda a, b: D.HalfNormal(a * b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3), R.uniform(0, 3, 3)),
    "InverseGamma": (lambda a, b: D.InverseGamma(a, b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3),
                     R.uniform(0.2, 3, 3)),
    "Kumaraswamy": (lambda a, b: D.Kumaraswamy(a, b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3),
                    R.uniform(0.1, 0.9, 3)),
    "HalfCauchy": (lambda a, b: D.HalfCauchy(a * b), R.uniform(0.5, 3, 3), R.uniform(0.5, 2, 3), R.uniform(0, 3, 3)),
}


@pytest.mark.parametrize("name", sorted(LOGPROB_GRADS))
def test_log_prob_and_entropy_gradcheck(name):
    make, a, b, x = LOGPROB_GRADS[name]
    assert gradcheck(lambda a, b: make(a, b).log_prob(t(x)), (t(a, True), t(b, True)))
    assert gradcheck(lambda a, b: make(a, b).entropy(), (t(a, True), t(b, True)))


def test_log_prob_gradcheck_without_entropy():  # FisherSnedecor, LogisticNormal, NegativeBinomial
    x = t(R.uniform(0.2, 3, 3))
    assert gradcheck(lambda a, b: D.FisherSnedecor(a, b).log_prob(x), (t(R.uniform(0.5, 3, 3), True),
                                                                        t(R.uniform(0.5, 2, 3), True)))
    y = t([0.2, 0.5, 0.3])
    assert gradcheck(lambda m, s: D.LogisticNormal(m, s).log_prob(y), (t(R.normal(size=2), True),
                                                                        t(R.uniform(0.5, 2, 2), True)))
    k = t([0.0, 3.0, 1.0])
    assert gradcheck(lambda n, lg: D.NegativeBinomial(n, logits=lg).log_prob(k), (t(R.uniform(0.5, 3, 3), True),
                                                                                   t(R.normal(size=3), True)))


def test_discrete_and_multivariate_gradcheck():
    k = rtx.tensor([0, 2, 1])
    assert gradcheck(lambda lg: D.Categorical(logits=lg).log_prob(k), (t(R.normal(size=(3, 4)), True),))
    assert gradcheck(lambda lg: D.Bernoulli(logits=lg).log_prob(t([0., 1., 1.])), (t(R.normal(size=3), True),))
    assert gradcheck(lambda r: D.Poisson(r).log_prob(t([0., 3., 1.])), (t(R.uniform(0.5, 3, 3), True),))
    v = t(R.dirichlet(np.ones(3)))
    assert gradcheck(lambda c: D.Dirichlet(c).log_prob(v), (t([0.7, 2., 1.3], True),))
    x = t(R.normal(size=(2, 3)))

    def mvn(mu, m):
        return D.MultivariateNormal(mu, covariance_matrix=m @ m.mT + 3 * rtx.eye(3, dtype=rtx.float64)).log_prob(x)

    assert gradcheck(mvn, (t(R.normal(size=3), True), t(R.normal(size=(3, 3)), True)))


# ---- sampling: moments within a few standard errors, reproducible under rtx.manual_seed ----------

SAMPLERS = {
    "Normal": D.Normal(t([0.5, -1.0]), t([1.0, 2.0])),
    "Gamma": D.Gamma(t([0.3, 4.0]), t([1.0, 2.0])),
    "Beta": D.Beta(t([0.5, 3.0]), t([2.0, 1.0])),
    "Chi2": D.Chi2(t([1.0, 5.0])),
    "StudentT": D.StudentT(t([5.0, 9.0]), t([0.0, 1.0])),
    "Exponential": D.Exponential(t([0.5, 3.0])),
    "Laplace": D.Laplace(t([0.0, 1.0]), t([1.0, 0.5])),
    "Gumbel": D.Gumbel(t([0.0, 1.0]), t([1.0, 0.5])),
    "Uniform": D.Uniform(t([0.0, -1.0]), t([1.0, 3.0])),
    "LogNormal": D.LogNormal(t([0.0, 0.3]), t([0.5, 0.25])),
    "Bernoulli": D.Bernoulli(t([0.2, 0.7])),
    "Poisson": D.Poisson(t([0.5, 12.0])),
    "Geometric": D.Geometric(t([0.2, 0.7])),
    "Binomial": D.Binomial(10, t([0.2, 0.7])),
    "Categorical": D.Categorical(t([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])),
    "HalfNormal": D.HalfNormal(t([0.5, 2.0])),
    "Weibull": D.Weibull(t([1.0, 2.0]), t([0.7, 3.0])),
    "Pareto": D.Pareto(t([1.0, 2.0]), t([9.0, 12.0])),  # alpha > 8: a sample variance that settles
    "NegativeBinomial": D.NegativeBinomial(t([3.0, 0.5]), t([0.4, 0.8])),
    "InverseGamma": D.InverseGamma(t([9.0, 12.0]), t([1.0, 3.0])),  # concentration > 8: a settled variance
    "Kumaraswamy": D.Kumaraswamy(t([0.5, 3.0]), t([2.0, 0.7])),
    "FisherSnedecor": D.FisherSnedecor(t([5.0, 20.0]), t([30.0, 40.0])),  # df2 > 8: a sample variance that settles
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sample_moments(name):
    d = SAMPLERS[name]
    n = 40000
    rtx.manual_seed(0)
    x = d.sample((n,))
    rtx.manual_seed(0)
    assert rtx.equal(x, d.sample((n,))), "rtx.manual_seed must make sampling reproducible"
    assert tuple(x.shape) == (n,) + tuple(d.batch_shape)
    assert bool(d.support.check(x).all())
    xs = x.numpy().astype(np.float64)
    if name == "Categorical":
        mean, var = (d.probs * rtx.arange(3.)).sum(-1).numpy(), None
    else:
        mean, var = d.mean.numpy(), d.variance.numpy()
    se = xs.std(0) / math.sqrt(n)
    assert np.all(np.abs(xs.mean(0) - mean) < 5 * se), (xs.mean(0), mean)
    if var is not None and name != "StudentT":  # StudentT(5) has a heavy-tailed sample variance
        assert np.all(np.abs(xs.var(0) / var - 1) < 0.06), (xs.var(0), var)


def test_multivariate_and_dirichlet_sampling():
    rtx.manual_seed(1)
    cov = t([[2.0, 0.6], [0.6, 1.0]])
    x = D.MultivariateNormal(t([1.0, -1.0]), covariance_matrix=cov).sample((50000,)).numpy()
    np.testing.assert_allclose(np.cov(x.T), cov.numpy(), atol=0.05)
    W, diag = t([[1.0], [0.5]]), t([0.5, 0.2])
    y = D.LowRankMultivariateNormal(t([0.0, 0.0]), W, diag).sample((50000,)).numpy()
    np.testing.assert_allclose(np.cov(y.T), (W @ W.mT + diag.diag_embed()).numpy(), atol=0.05)
    conc = t([0.5, 2.0, 3.0])
    z = D.Dirichlet(conc).sample((50000,)).numpy()
    np.testing.assert_allclose(z.mean(0), (conc / conc.sum()).numpy(), atol=0.01)
    m = D.Multinomial(8, t([0.2, 0.3, 0.5])).sample((20000,)).numpy()
    assert np.all(m.sum(-1) == 8)
    np.testing.assert_allclose(m.mean(0), [1.6, 2.4, 4.0], atol=0.05)


# ---- rsample gradients --------------------------------------------------------------------------


def test_normal_rsample_gradient_closed_form():
    # d/dmu E[x^2] = 2 mu, d/dsigma E[x^2] = 2 sigma, x ~ N(mu, sigma)
    mu, sigma = t([0.7], True), t([1.3], True)
    rtx.manual_seed(0)
    (D.Normal(mu, sigma).rsample((200000,)) ** 2).mean().backward()
    assert abs(mu.grad.item() - 1.4) < 0.02 and abs(sigma.grad.item() - 2.6) < 0.03


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Gumbel", "Cauchy", "Uniform", "Exponential", "LogNormal"])
def test_rsample_gradcheck_with_fixed_seed(name):
    make = {"Normal": D.Normal, "Laplace": D.Laplace, "Gumbel": D.Gumbel, "Cauchy": D.Cauchy,
            "LogNormal": D.LogNormal, "Uniform": lambda a, b: D.Uniform(a, a + b),
            "Exponential": lambda a, b: D.Exponential(b)}[name]

    def f(a, b):
        rtx.manual_seed(3)  # the same noise on every call, so the sample is a function of the parameters
        return make(a, b).rsample((4,))

    assert gradcheck(f, (t([0.3, -0.2], True), t([0.8, 1.5], True)))


def test_gamma_rsample_gradient_matches_scipy_quantile():
    # implicit reparameterisation: dx/dalpha at a fixed quantile u = P(alpha, x), checked against
    # scipy's inverse regularised incomplete gamma by central differences
    alpha = t([0.05, 0.4, 1.0, 3.0, 30.0, 700.0, 5000.0], True)
    rtx.manual_seed(0)
    x = D.Gamma(alpha, t(1.0)).rsample()
    x.sum().backward()
    a, xv = alpha.detach().numpy(), x.detach().numpy()
    u = sp.gammainc(a, xv)
    h = 1e-6 * a
    want = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(alpha.grad.numpy(), want, rtol=1e-5)


def test_beta_and_dirichlet_rsample_gradient_of_mean():
    # E[x] = a / (a + b): its gradient via rsample matches the closed form
    a, b = t([2.0], True), t([3.0], True)
    rtx.manual_seed(0)
    D.Beta(a, b).rsample((200000,)).mean().backward()
    assert abs(a.grad.item() - 3 / 25) < 0.004 and abs(b.grad.item() + 2 / 25) < 0.004
    assert D.StudentT(t(3.0)).has_rsample and D.Chi2(t(3.0)).has_rsample


def test_relaxed_rsample_is_differentiable_and_in_support():
    logits = t(R.normal(size=(2, 4)), True)
    rtx.manual_seed(0)
    y = D.RelaxedOneHotCategorical(t(0.5), logits=logits).rsample((3,))
    assert bool(D.constraints.simplex.check(y).all())
    (y[..., 0]).sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0
    z = D.RelaxedBernoulli(t(0.5), logits=t([0.3, -1.0])).rsample((5,))
    assert bool(((z > 0) & (z < 1)).all())


# ---- kl_divergence --------------------------------------------------------------------------------


def _mc_kl(p, q, n=200000):
    rtx.manual_seed(0)
    x = p.sample((n,))
    return (p.log_prob(x) - q.log_prob(x)).mean(0).numpy()


KL_PAIRS = {
    "Normal": (D.Normal(t([0.0, 1.0]), t([1.0, 2.0])), D.Normal(t([0.5, -1.0]), t([1.5, 1.0]))),
    "Gamma": (D.Gamma(t([2.0, 0.5]), t([1.0, 2.0])), D.Gamma(t([3.0, 1.0]), t([2.0, 1.0]))),
    "Beta": (D.Beta(t([2.0, 0.5]), t([1.0, 2.0])), D.Beta(t([3.0, 1.0]), t([2.0, 1.0]))),
    "Exponential": (D.Exponential(t([1.0, 3.0])), D.Exponential(t([2.0, 0.5]))),
    "Laplace": (D.Laplace(t([0.0, 1.0]), t([1.0, 2.0])), D.Laplace(t([0.5, -1.0]), t([1.5, 1.0]))),
    "Gumbel": (D.Gumbel(t([0.0, 1.0]), t([1.0, 2.0])), D.Gumbel(t([0.5, -1.0]), t([1.5, 1.0]))),
    "Uniform": (D.Uniform(t([0.0, 0.2]), t([1.0, 0.5])), D.Uniform(t([-1.0, 0.0]), t([2.0, 1.0]))),
    "Poisson": (D.Poisson(t([2.0, 0.5])), D.Poisson(t([3.0, 1.0]))),
    "Bernoulli": (D.Bernoulli(t([0.2, 0.7])), D.Bernoulli(t([0.5, 0.4]))),
    "Geometric": (D.Geometric(t([0.2, 0.7])), D.Geometric(t([0.5, 0.4]))),
    "Binomial": (D.Binomial(5, t([0.2, 0.7])), D.Binomial(5, t([0.5, 0.4]))),
    "Categorical": (D.Categorical(t([[0.2, 0.3, 0.5]])), D.Categorical(t([[0.4, 0.4, 0.2]]))),
    "Dirichlet": (D.Dirichlet(t([[1.0, 2.0, 3.0]])), D.Dirichlet(t([[2.0, 2.0, 1.0]]))),
    "MVN": (D.MultivariateNormal(t([0.0, 1.0]), t([[2.0, 0.5], [0.5, 1.0]])),
            D.MultivariateNormal(t([1.0, 0.0]), t([[1.0, -0.3], [-0.3, 1.5]]))),
    "LowRankMVN": (D.LowRankMultivariateNormal(t([0.0, 1.0]), t([[1.0], [0.5]]), t([0.5, 0.4])),
                   D.MultivariateNormal(t([1.0, 0.0]), t([[1.0, -0.3], [-0.3, 1.5]]))),
    "Independent": (D.Independent(D.Normal(t([0.0, 1.0]), t([1.0, 2.0])), 1),
                    D.Independent(D.Normal(t([0.5, -1.0]), t([1.5, 1.0])), 1)),
}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_divergence_matches_monte_carlo(name):
    p, q = KL_PAIRS[name]
    kl = D.kl_divergence(p, q).numpy()
    mc = _mc_kl(p, q)
    np.testing.assert_allclose(kl, mc, rtol=0.03, atol=0.01)


def test_kl_closed_forms_and_dispatch():
    p, q = KL_PAIRS["Normal"]
    want = np.log(np.array([1.5, 1.0]) / [1.0, 2.0]) + ([1.0, 4.0] + np.array([-0.5, 2.0]) ** 2) / (
        2 * np.array([1.5, 1.0]) ** 2) - 0.5
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want, rtol=1e-12)
    # the Bregman divergence of the exponential family agrees with the closed form
    from rtx.distributions.kl import _kl_expfamily_expfamily
    for name in ("Normal", "Gamma", "Poisson", "Exponential", "Bernoulli", "Beta"):
        p, q = KL_PAIRS[name]
        np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).detach().numpy(),
                                   D.kl_divergence(p, q).numpy(), rtol=1e-9)
    # Uniform with q's support too small is infinite; a subclass dispatches to its parent's pair
    assert math.isinf(D.kl_divergence(D.Uniform(t(0.), t(2.)), D.Uniform(t(0.), t(1.))).item())

    class MyNormal(D.Normal):
        pass

    assert D.kl_divergence(MyNormal(t(0.), t(1.)), D.Normal(t(0.), t(1.))).item() == 0.0

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return rtx.full_like(p.loc, 7.0)

    assert D.kl_divergence(MyNormal(t(0.), t(1.)), D.Normal(t(0.), t(1.))).item() == 7.0
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(t(0.), t(1.)), D.Cauchy(t(0.), t(1.)))


def test_kl_gradcheck():
    def f(mu, s):
        return D.kl_divergence(D.Normal(mu, s), D.Normal(t([0.3, 0.1]), t([1.0, 2.0])))

    assert gradcheck(f, (t([0.5, -0.2], True), t([0.7, 1.1], True)))

    def g(a, b):
        return D.kl_divergence(D.Gamma(a, b), D.Gamma(t([2.0, 1.0]), t([1.0, 3.0])))

    assert gradcheck(g, (t([0.5, 2.2], True), t([0.7, 1.1], True)))


# ---- transforms -----------------------------------------------------------------------------------

TRANSFORMS = {
    "Exp": (D.ExpTransform(), R.normal(size=4)),
    "Sigmoid": (D.SigmoidTransform(), R.normal(size=4)),
    "Tanh": (D.TanhTransform(), R.normal(size=4)),
    "Affine": (D.AffineTransform(t(1.5), t(-2.0)), R.normal(size=4)),
    "Softplus": (D.SoftplusTransform(), R.normal(size=4)),
    "Compose": (D.ComposeTransform([D.AffineTransform(0.5, 2.0), D.ExpTransform()]), R.normal(size=4)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_elementwise_transform_log_det_and_inverse(name):
    tr, x = TRANSFORMS[name]
    x = t(x, True)
    y = tr(x)
    np.testing.assert_allclose(tr.inv(y).detach().numpy(), x.detach().numpy(), rtol=1e-10, atol=1e-12)
    (dy,) = rtx.autograd.grad(y.sum(), x)  # elementwise: the Jacobian is diagonal
    np.testing.assert_allclose(tr.log_abs_det_jacobian(x, y).detach().numpy(), np.log(np.abs(dy.numpy())),
                               rtol=1e-9, atol=1e-12)


def test_stick_breaking_log_det_and_biject_to():
    tr = D.StickBreakingTransform()
    x = t(R.normal(size=3))
    y = tr(x)
    assert bool(D.constraints.simplex.check(y).all())
    np.testing.assert_allclose(tr.inv(y).numpy(), x.numpy(), rtol=1e-9)
    # log det of the map to the first K-1 coordinates (the K-th is 1 - their sum), by autograd
    jac = rtx.autograd.functional.jacobian(lambda v: tr(v)[:-1], x).numpy()
    np.testing.assert_allclose(tr.log_abs_det_jacobian(x, y).item(), np.log(abs(np.linalg.det(jac))), rtol=1e-9)
    for c in (D.constraints.positive, D.constraints.unit_interval, D.constraints.simplex,
              D.constraints.interval(-2.0, 3.0), D.constraints.greater_than(1.0), D.constraints.real):
        for reg in (D.biject_to, D.transform_to):
            z = reg(c)(t(R.normal(size=3)))
            assert bool(c.check(z).all()), (c, reg)
    assert bool(D.constraints.lower_cholesky.check(D.transform_to(D.constraints.lower_cholesky)(
        t(R.normal(size=(3, 3))))).all())


def test_transformed_distribution_log_prob_matches_lognormal():
    base = D.Normal(t([0.2, -0.3]), t([0.5, 1.5]))
    td = D.TransformedDistribution(base, [D.ExpTransform()])
    x = t([0.7, 2.5])
    np.testing.assert_allclose(td.log_prob(x).numpy(), D.LogNormal(t([0.2, -0.3]), t([0.5, 1.5])).log_prob(x).numpy())
    # a decreasing affine map flips the cdf
    neg = D.TransformedDistribution(D.Normal(t(0.0), t(1.0)), [D.AffineTransform(0.0, -1.0)])
    np.testing.assert_allclose(neg.cdf(t(0.8)).item(), D.Normal(t(0.0), t(1.0)).cdf(t(0.8)).item(), rtol=1e-12)


# ---- validation, shapes, API --------------------------------------------------------------------


def test_validate_args_messages_in_pytorch_words():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: torch.Size|Expected parameter scale \(Tensor of shape"):
        D.Normal(t([0.0, 0.0]), t([1.0, -1.0]))
    with pytest.raises(ValueError, match="to satisfy the constraint GreaterThan\\(lower_bound=0.0\\)"):
        D.Normal(t(0.0), t(-1.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Bernoulli()
    with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(2,\)\) to be within the "
                                         r"support \(Boolean\(\)\)"):
        D.Bernoulli(t([0.5, 0.5])).log_prob(t([0.0, 0.5]))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.MultivariateNormal(t([0.0, 0.0]), t([[1.0, 0.0], [0.0, 1.0]])).log_prob(t([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="Uniform is not defined when low>= high"):
        D.Uniform(t(1.0), t(0.0))
    D.Normal(t(0.0), t(-1.0), validate_args=False)  # no check when switched off
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(t(0.0), t(-1.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_shapes_expand_and_api():
    d = D.Normal(t([[0.0], [1.0]]), t([1.0, 2.0, 3.0]))
    assert tuple(d.batch_shape) == (2, 3) and tuple(d.event_shape) == ()
    assert tuple(d.sample((5, 4)).shape) == (5, 4, 2, 3)
    e = D.Normal(t([0.0]), t([1.0])).expand((4, 3))
    assert tuple(e.batch_shape) == (4, 3) and tuple(e.rsample().shape) == (4, 3)
    assert D.Normal.has_rsample and not D.Bernoulli.has_rsample and D.Bernoulli.has_enumerate_support
    np.testing.assert_allclose(d.perplexity().numpy(), np.exp(d.entropy().numpy()))
    assert repr(D.Normal(t(0.0), t(1.0))) == "Normal(loc: 0.0, scale: 1.0)"
    m = D.MultivariateNormal(t(np.zeros((2, 3))), t(np.eye(3)))
    assert tuple(m.batch_shape) == (2,) and tuple(m.event_shape) == (3,) and tuple(m.sample((4,)).shape) == (4, 2, 3)
    c = D.Categorical(logits=t(R.normal(size=(2, 5)))).expand((3, 2))
    assert tuple(c.sample().shape) == (3, 2)


def test_reinforce_snippet():
    # REINFORCE: a linear policy over 3 actions learns to pick the rewarded one
    rtx.manual_seed(0)
    W = rtx.zeros(4, 3, requires_grad=True)
    x = rtx.cat([rtx.randn(64, 3), rtx.ones(64, 1)], 1)  # the last feature is a bias
    for _ in range(100):
        dist = D.Categorical(logits=x @ W)
        action = dist.sample()
        reward = (action == 2).float()
        loss = -(dist.log_prob(action) * (reward - reward.mean())).mean()
        W.grad = None
        loss.backward()
        with rtx.no_grad():
            W -= 5.0 * W.grad
    final = D.Categorical(logits=x @ W).probs[:, 2].mean().item()
    assert final > 0.9, final
