"""log_prob, cdf, icdf, entropy, mean and variance against scipy.stats in float64, with batch shapes
that broadcast (parameters (3, 1) and (4,), values (2, 3, 4))."""
import numpy as np
import pytest
import scipy.stats as st
from scipy.special import expit

import rtx
import rtx.distributions as D

R = np.random.default_rng(0)


def t(a):
    return rtx.tensor(np.asarray(a, dtype=np.float64))


A = R.uniform(0.5, 3.0, (3, 1))   # a positive parameter, batch (3, 1)
B = R.uniform(0.5, 3.0, (4,))     # another, batch (4,): together (3, 4)
L = R.normal(size=(3, 1))         # a real parameter
P = R.uniform(0.1, 0.9, (3, 1))   # a probability

# name: (rtx distribution, scipy frozen distribution, values of shape (2, 3, 4), checks)
CASES = {
    "Normal": (lambda: D.Normal(t(L), t(B)), st.norm(L, B), R.normal(size=(2, 3, 4)), "lcieMV"),
    "LogNormal": (lambda: D.LogNormal(t(L), t(B)), st.lognorm(B, scale=np.exp(L)), R.uniform(0.1, 5, (2, 3, 4)),
                  "lcieMV"),
    "Laplace": (lambda: D.Laplace(t(L), t(B)), st.laplace(L, B), R.normal(size=(2, 3, 4)), "lcieMV"),
    "Cauchy": (lambda: D.Cauchy(t(L), t(B)), st.cauchy(L, B), R.normal(size=(2, 3, 4)), "lcie"),
    "Gumbel": (lambda: D.Gumbel(t(L), t(B)), st.gumbel_r(L, B), R.normal(size=(2, 3, 4)), "lcieMV"),
    "Uniform": (lambda: D.Uniform(t(L), t(L + B)), st.uniform(L, B), L + B * R.uniform(0, 1, (2, 3, 4)),
                "lcieMV"),
    "Exponential": (lambda: D.Exponential(t(A * B)), st.expon(scale=1 / (A * B)), R.uniform(0, 4, (2, 3, 4)), "lcieMV"),
    "Gamma": (lambda: D.Gamma(t(A), t(B)), st.gamma(A, scale=1 / B), R.uniform(0.05, 5, (2, 3, 4)), "lceMV"),
    "Chi2": (lambda: D.Chi2(t(A * B)), st.chi2(A * B), R.uniform(0.05, 5, (2, 3, 4)), "lceMV"),
    "Beta": (lambda: D.Beta(t(A), t(B)), st.beta(A, B), R.uniform(0.01, 0.99, (2, 3, 4)), "leMV"),
    "StudentT": (lambda: D.StudentT(t(A + 4), t(L), t(B)), st.t(A + 4, L, B), R.normal(size=(2, 3, 4)), "leMV"),
    "Bernoulli": (lambda: D.Bernoulli(t(P * np.ones(4))), st.bernoulli(P * np.ones(4)),
                  R.integers(0, 2, (2, 3, 4)), "leMV"),
    "BernoulliLogits": (lambda: D.Bernoulli(logits=t(L * np.ones(4))), st.bernoulli(expit(L * np.ones(4))),
                        R.integers(0, 2, (2, 3, 4)), "leMV"),
    "Poisson": (lambda: D.Poisson(t(A * B)), st.poisson(A * B), R.integers(0, 8, (2, 3, 4)), "lMV"),
    "Geometric": (lambda: D.Geometric(t(P * np.ones(4))), st.geom(P * np.ones(4), loc=-1),
                  R.integers(0, 8, (2, 3, 4)), "leMV"),
    "Binomial": (lambda: D.Binomial(7, t(P * np.ones(4))), st.binom(7, P * np.ones(4)),
                 R.integers(0, 8, (2, 3, 4)), "leMV"),
    "HalfNormal": (lambda: D.HalfNormal(t(A * B)), st.halfnorm(scale=A * B), R.uniform(0, 4, (2, 3, 4)), "lcieMV"),
    "HalfCauchy": (lambda: D.HalfCauchy(t(A * B)), st.halfcauchy(scale=A * B), R.uniform(0, 4, (2, 3, 4)), "lcieMV"),
    # alpha from 0.5 to 6: the mean is infinite below 1 and the variance below 2, as SciPy says too
    "Pareto": (lambda: D.Pareto(t(A), t(A * B)), st.pareto(A * B, scale=A), A + R.uniform(0, 4, (2, 3, 4)), "lcieMV"),
    "Weibull": (lambda: D.Weibull(t(A), t(B)), st.weibull_min(B, scale=A), R.uniform(0.05, 4, (2, 3, 4)), "lcieMV"),
    # PyTorch's probs is the success probability, SciPy's p the failure's
    "NegativeBinomial": (lambda: D.NegativeBinomial(t(A * B), t(P * np.ones(4))), st.nbinom(A * B, 1 - P),
                         R.integers(0, 12, (2, 3, 4)), "lMV"),
    "NegativeBinomialLogits": (lambda: D.NegativeBinomial(t(A * B), logits=t(L * np.ones(4))),
                               st.nbinom(A * B, expit(-L)), R.integers(0, 12, (2, 3, 4)), "lMV"),
    "InverseGamma": (lambda: D.InverseGamma(t(A + 2), t(B)), st.invgamma(A + 2, scale=B), R.uniform(0.05, 4, (2, 3, 4)),
                     "lceMV"),
    # df2 > 4 so that the mean and the variance exist
    "FisherSnedecor": (lambda: D.FisherSnedecor(t(A * B), t(B + 4)), st.f(A * B, B + 4), R.uniform(0.05, 5, (2, 3, 4)),
                       "lMV"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy(name):
    make, ref, values, checks = CASES[name]
    d = make()
    assert tuple(d.batch_shape) == (3, 4)
    discrete = hasattr(ref, "pmf")
    if "l" in checks:
        want = ref.logpmf(values) if discrete else ref.logpdf(values)
        np.testing.assert_allclose(d.log_prob(t(values)).numpy(), want, rtol=1e-10, atol=1e-10)
    if "c" in checks:
        np.testing.assert_allclose(d.cdf(t(values)).numpy(), ref.cdf(values), rtol=1e-10, atol=1e-12)
    if "i" in checks:
        q = R.uniform(0.01, 0.99, (2, 3, 4))
        np.testing.assert_allclose(d.icdf(t(q)).numpy(), ref.ppf(q), rtol=1e-9, atol=1e-10)
    if "e" in checks:
        np.testing.assert_allclose(d.entropy().numpy(), np.broadcast_to(ref.entropy(), (3, 4)), rtol=1e-9,
                                   atol=1e-10)
    if "M" in checks:
        np.testing.assert_allclose(d.mean.numpy(), np.broadcast_to(ref.mean(), (3, 4)), rtol=1e-10)
    if "V" in checks:
        np.testing.assert_allclose(d.variance.numpy(), np.broadcast_to(ref.var(), (3, 4)), rtol=1e-10)
        np.testing.assert_allclose(d.stddev.numpy(), np.broadcast_to(ref.std(), (3, 4)), rtol=1e-10)


def test_categorical_and_one_hot():
    p = R.dirichlet(np.ones(5), size=(3, 2))
    for d in (D.Categorical(t(p)), D.Categorical(logits=t(np.log(p) + 3.0))):
        k = R.integers(0, 5, (4, 3, 2))
        want = np.log(np.take_along_axis(np.broadcast_to(p, (4, 3, 2, 5)), k[..., None], -1)[..., 0])
        np.testing.assert_allclose(d.log_prob(rtx.tensor(k)).numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(d.entropy().numpy(), st.entropy(p, axis=-1), rtol=1e-12)
        assert tuple(d.enumerate_support().shape) == (5, 3, 2)
    oh = D.OneHotCategorical(t(p))
    x = np.eye(5)[R.integers(0, 5, (3, 2))]
    np.testing.assert_allclose(oh.log_prob(t(x)).numpy(), np.log((p * x).sum(-1)), rtol=1e-12)


def test_multinomial_and_dirichlet():
    p = R.dirichlet(np.ones(4), size=3)
    x = np.stack([R.multinomial(6, pi) for pi in p])
    d = D.Multinomial(6, t(p))
    np.testing.assert_allclose(d.log_prob(t(x)).numpy(), [st.multinomial(6, pi).logpmf(xi) for pi, xi in zip(p, x)],
                               rtol=1e-10)
    np.testing.assert_allclose(d.entropy().numpy(), [st.multinomial(6, pi).entropy() for pi in p], rtol=1e-9)
    np.testing.assert_allclose(d.mean.numpy(), 6 * p, rtol=1e-12)
    a = R.uniform(0.5, 3, (3, 4))
    v = R.dirichlet(np.ones(4), size=3)
    dd = D.Dirichlet(t(a))
    np.testing.assert_allclose(dd.log_prob(t(v)).numpy(), [st.dirichlet(ai).logpdf(vi) for ai, vi in zip(a, v)],
                               rtol=1e-10)
    np.testing.assert_allclose(dd.entropy().numpy(), [st.dirichlet(ai).entropy() for ai in a], rtol=1e-10)
    np.testing.assert_allclose(dd.variance.numpy(), [st.dirichlet(ai).var() for ai in a], rtol=1e-10)


def _spd(n, batch=()):
    m = R.normal(size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("param", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_multivariate_normal(param):
    mu = R.normal(size=(2, 3))
    cov = _spd(3, (2,))
    arg = {"covariance_matrix": cov, "scale_tril": np.linalg.cholesky(cov),
           "precision_matrix": np.linalg.inv(cov)}[param]
    d = D.MultivariateNormal(t(mu), **{param: t(arg)})
    x = R.normal(size=(5, 2, 3))
    want = np.stack([st.multivariate_normal(mu[i], cov[i]).logpdf(x[:, i]) for i in range(2)], -1)
    np.testing.assert_allclose(d.log_prob(t(x)).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(d.entropy().numpy(), [st.multivariate_normal(mu[i], cov[i]).entropy()
                                                     for i in range(2)], rtol=1e-10)
    np.testing.assert_allclose(d.covariance_matrix.numpy(), cov, rtol=1e-10)
    np.testing.assert_allclose(d.precision_matrix.numpy(), np.linalg.inv(cov), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), np.diagonal(cov, axis1=-2, axis2=-1), rtol=1e-10)


def test_lowrank_multivariate_normal():
    mu, W, diag = R.normal(size=(2, 4)), R.normal(size=(2, 4, 2)), R.uniform(0.5, 2, (2, 4))
    cov = W @ np.swapaxes(W, -1, -2) + np.stack([np.diag(v) for v in diag])
    d = D.LowRankMultivariateNormal(t(mu), t(W), t(diag))
    x = R.normal(size=(3, 2, 4))
    want = np.stack([st.multivariate_normal(mu[i], cov[i]).logpdf(x[:, i]) for i in range(2)], -1)
    np.testing.assert_allclose(d.log_prob(t(x)).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(d.entropy().numpy(), [st.multivariate_normal(mu[i], cov[i]).entropy()
                                                     for i in range(2)], rtol=1e-10)
    np.testing.assert_allclose(d.precision_matrix.numpy(), np.linalg.inv(cov), rtol=1e-9, atol=1e-12)


def test_mixture_same_family_and_independent():
    w = R.dirichlet(np.ones(3), size=2)
    mu, sd = R.normal(size=(2, 3)), R.uniform(0.5, 2, (2, 3))
    mix = D.MixtureSameFamily(D.Categorical(t(w)), D.Normal(t(mu), t(sd)))
    x = R.normal(size=(5, 2))
    want = np.log((w * st.norm(mu, sd).pdf(x[..., None])).sum(-1))
    np.testing.assert_allclose(mix.log_prob(t(x)).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(mix.cdf(t(x)).numpy(), (w * st.norm(mu, sd).cdf(x[..., None])).sum(-1), rtol=1e-10)
    m = (w * mu).sum(-1)
    np.testing.assert_allclose(mix.mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(mix.variance.numpy(), (w * (sd ** 2 + mu ** 2)).sum(-1) - m ** 2, rtol=1e-10)
    ind = D.Independent(D.Normal(t(mu), t(sd)), 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    xs = R.normal(size=(4, 2, 3))
    np.testing.assert_allclose(ind.log_prob(t(xs)).numpy(), st.norm(mu, sd).logpdf(xs).sum(-1), rtol=1e-12)


def test_relaxed_distributions_match_their_formulas():
    # Concrete density (Maddison et al. 2017, eq. 2 / appendix) written out in NumPy
    tau, logits = 0.7, R.normal(size=(3, 4))
    y = R.dirichlet(np.ones(4), size=3)
    k = 4
    from math import lgamma
    log_want = (lgamma(k) + (k - 1) * np.log(tau) + (logits - (tau + 1) * np.log(y)).sum(-1)
                - k * np.log(np.exp(logits - tau * np.log(y)).sum(-1)))
    d = D.RelaxedOneHotCategorical(t(tau), logits=t(logits))
    np.testing.assert_allclose(d.log_prob(t(y)).numpy(), log_want, rtol=1e-8, atol=1e-8)
    # binary Concrete: p(y) = tau a y^(-tau-1) (1-y)^(-tau-1) / (a y^-tau + (1-y)^-tau)^2, a = exp(logit)
    lg, yb = R.normal(size=5), R.uniform(0.05, 0.95, 5)
    a = np.exp(lg)
    pdf = tau * a * yb ** (-tau - 1) * (1 - yb) ** (-tau - 1) / (a * yb ** -tau + (1 - yb) ** -tau) ** 2
    rb = D.RelaxedBernoulli(t(tau), logits=t(lg))
    np.testing.assert_allclose(rb.log_prob(t(yb)).numpy(), np.log(pdf), rtol=1e-9)


def test_kumaraswamy_against_its_density_by_quadrature():
    # SciPy has no Kumaraswamy: its density a b x^(a-1) (1 - x^a)^(b-1) integrated by scipy.integrate.quad
    from scipy.integrate import quad
    from scipy.optimize import minimize_scalar

    a, b = np.array([0.6, 2.0, 5.0]), np.array([3.0, 1.5, 0.8])
    d = D.Kumaraswamy(t(a), t(b))
    x = R.uniform(0.01, 0.99, (4, 3))
    np.testing.assert_allclose(d.log_prob(t(x)).numpy(),
                               np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(t(x)).numpy(), 1 - (1 - x ** a) ** b, rtol=1e-12)
    def pdf(y, i):
        return a[i] * b[i] * y ** (a[i] - 1) * (1 - y ** a[i]) ** (b[i] - 1)

    for i in range(3):
        m1 = quad(lambda y, i: y * pdf(y, i), 0, 1, args=(i,), epsabs=1e-13)[0]
        m2 = quad(lambda y, i: y * y * pdf(y, i), 0, 1, args=(i,), epsabs=1e-13)[0]
        h = quad(lambda y, i: -pdf(y, i) * np.log(pdf(y, i)), 0, 1, args=(i,), epsabs=1e-13, limit=200)[0]
        np.testing.assert_allclose(d.mean.numpy()[i], m1, rtol=1e-9)
        np.testing.assert_allclose(d.variance.numpy()[i], m2 - m1 ** 2, rtol=1e-8)
        np.testing.assert_allclose(d.entropy().numpy()[i], h, rtol=1e-7, atol=1e-9)
    # the mode where it exists (a, b >= 1): where the density peaks
    peak = minimize_scalar(lambda y: -(2.0 * 1.5 * y * (1 - y ** 2) ** 0.5), bounds=(0, 1), method="bounded",
                           options={"xatol": 1e-10}).x
    np.testing.assert_allclose(d.mode.numpy()[1], peak, rtol=1e-6)
    assert np.isnan(d.mode.numpy()[[0, 2]]).all()


def test_logistic_normal_by_change_of_variables():
    # y = stick_breaking(x), x ~ Normal(loc, scale) in R^K: log p(y) = log N(x) - log |det dy[:K]/dx|, the
    # Jacobian by central differences of the map written here from its definition (PyTorch's offset
    # z_i = sigmoid(x_i - log(K - i)), y_i = z_i prod_{j<i} (1 - z_j), y_K = prod_j (1 - z_j))
    def stick(x):
        k = x.shape[-1]
        z = expit(x - np.log(k - np.arange(k)))
        rest = np.cumprod(np.concatenate([[1.0], 1 - z]))
        return np.concatenate([z * rest[:-1], rest[-1:]])

    loc, scale = np.array([0.3, -0.5, 1.0]), np.array([0.8, 1.2, 0.5])
    d = D.LogisticNormal(t(loc), t(scale))
    assert tuple(d.batch_shape) == () and tuple(d.event_shape) == (4,)
    for x in R.normal(size=(5, 3)):
        y, h = stick(x), 1e-6
        jac = np.stack([(stick(x + h * e) - stick(x - h * e))[:3] / (2 * h) for e in np.eye(3)], axis=1)
        want = st.norm(loc, scale).logpdf(x).sum() - np.log(abs(np.linalg.det(jac)))
        np.testing.assert_allclose(d.log_prob(t(y)).item(), want, rtol=1e-8)
    rtx.manual_seed(0)
    s = d.sample((1000,)).numpy()
    assert s.shape == (1000, 4) and np.allclose(s.sum(-1), 1.0) and (s > 0).all()
