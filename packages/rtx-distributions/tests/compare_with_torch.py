"""Every API method of each distribution, in PyTorch and in rtx, at the same point: which exist and
whether they agree. Not a test (the suite has no torch); run by hand with a torch venv:

    .venv/bin/python packages/rtx-distributions/tests/compare_with_torch.py /path/to/torch-venv/bin/python

prints the methods that differ (a missing method, an error, or a value off by more than 1e-6)."""
import json
import os
import subprocess
import sys
import tempfile

if len(sys.argv) == 2:  # the driver: run both sides, compare
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "COMPARE_POINTS": os.path.join(tmp, "points.json")}
        t, r = (json.loads(subprocess.run([py, __file__, "--side", side], env=env, capture_output=True, text=True,
                                          check=True).stdout)
                for py, side in ((sys.argv[1], "torch"), (sys.executable, "rtx")))  # torch first: it writes x

    def same(a, b):
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(x == y or ("nan" not in (x, y) and abs(x - y) <= 1e-6 * (1 + abs(x)))
                                            for x, y in zip(a, b))
        return a == b
    bad = 0
    for name in t:
        diffs = [(k, t[name].get(k), r.get(name, {}).get(k)) for k in t[name] if not same(t[name].get(k),
                                                                                          r.get(name, {}).get(k))]
        bad += bool(diffs)
        if diffs:
            print(name, diffs)
    print(f"{len(t)} distributions, {bad} with differences")
    sys.exit(bool(bad))

lib = sys.argv[2]
if lib == "torch":
    import torch as T
    import torch.distributions as D
else:
    import rtx as T
    import rtx.distributions as D
T.manual_seed(0)


def f(*a):
    return T.tensor(a if len(a) > 1 else a[0], dtype=T.float64)


m2 = T.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=T.float64)
CASES = {
    "Normal": lambda: D.Normal(f(0.5), f(1.5)),
    "LogNormal": lambda: D.LogNormal(f(0.5), f(0.7)),
    "Bernoulli": lambda: D.Bernoulli(probs=f(0.3)),
    "Categorical": lambda: D.Categorical(probs=f(0.2, 0.3, 0.5)),
    "OneHotCategorical": lambda: D.OneHotCategorical(probs=f(0.2, 0.3, 0.5)),
    "Multinomial": lambda: D.Multinomial(5, probs=f(0.2, 0.3, 0.5)),
    "Binomial": lambda: D.Binomial(5, probs=f(0.3)),
    "Poisson": lambda: D.Poisson(f(2.5)),
    "Geometric": lambda: D.Geometric(probs=f(0.3)),
    "Beta": lambda: D.Beta(f(2.0), f(3.0)),
    "Gamma": lambda: D.Gamma(f(2.0), f(3.0)),
    "Exponential": lambda: D.Exponential(f(2.0)),
    "Laplace": lambda: D.Laplace(f(0.5), f(2.0)),
    "Cauchy": lambda: D.Cauchy(f(0.5), f(2.0)),
    "Uniform": lambda: D.Uniform(f(0.5), f(2.0)),
    "Dirichlet": lambda: D.Dirichlet(f(2.0, 3.0, 1.5)),
    "MultivariateNormal": lambda: D.MultivariateNormal(f(0.1, 0.2), covariance_matrix=m2),
    "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(f(0.1, 0.2), f([1.0], [0.5]), f(1.0, 2.0)),
    "StudentT": lambda: D.StudentT(f(4.0), f(0.5), f(2.0)),
    "Chi2": lambda: D.Chi2(f(3.0)),
    "Gumbel": lambda: D.Gumbel(f(0.5), f(2.0)),
    "RelaxedBernoulli": lambda: D.RelaxedBernoulli(f(0.5), probs=f(0.3)),
    "RelaxedOneHotCategorical": lambda: D.RelaxedOneHotCategorical(f(0.5), probs=f(0.2, 0.3, 0.5)),
    "MixtureSameFamily": lambda: D.MixtureSameFamily(D.Categorical(probs=f(0.3, 0.7)),
                                                     D.Normal(f(0.0, 1.0), f(1.0, 2.0))),
    "HalfNormal": lambda: D.HalfNormal(f(1.5)),
    "HalfCauchy": lambda: D.HalfCauchy(f(1.5)),
    "Pareto": lambda: D.Pareto(f(1.5), f(2.5)),
    "Weibull": lambda: D.Weibull(f(1.5), f(0.8)),
    "NegativeBinomial": lambda: D.NegativeBinomial(f(3.0), probs=f(0.4)),
    "FisherSnedecor": lambda: D.FisherSnedecor(f(3.0), f(7.0)),
    "InverseGamma": lambda: D.InverseGamma(f(3.0), f(2.0)),
    "Kumaraswamy": lambda: D.Kumaraswamy(f(2.0), f(3.0)),
    "LogisticNormal": lambda: D.LogisticNormal(f(0.3, -0.5, 1.0), f(0.8, 1.2, 0.5)),
    "Independent": lambda: D.Independent(D.Normal(f(0.0, 1.0), f(1.0, 2.0)), 1),
    "TransformedDistribution": lambda: D.TransformedDistribution(D.Normal(f(0.0), f(1.0)),
                                                                 [D.transforms.ExpTransform()]),
}
def _ok(_):
    return "ok"


# what each method gives at the point x (a sample drawn by torch, reused by rtx); "ok" where only existence counts
METHODS = {
    "sample": lambda d, x: _ok(d.sample((2,))),
    "rsample": lambda d, x: _ok(d.rsample((2,))),
    "log_prob": lambda d, x: d.log_prob(x),
    "cdf": lambda d, x: d.cdf(x),
    "icdf": lambda d, x: d.icdf(f(0.3)),
    "entropy": lambda d, x: d.entropy(),
    "perplexity": lambda d, x: d.perplexity(),
    "mean": lambda d, x: d.mean,
    "mode": lambda d, x: d.mode,
    "variance": lambda d, x: d.variance,
    "stddev": lambda d, x: d.stddev,
    "support": lambda d, x: _ok(d.support),
    "enumerate_support": lambda d, x: d.enumerate_support(),
    "expand": lambda d, x: _ok(d.expand((3,) + tuple(d.batch_shape))),
    "has_rsample": lambda d, x: str(d.has_rsample),
    "has_enumerate_support": lambda d, x: str(d.has_enumerate_support),
}
POINTS = os.environ["COMPARE_POINTS"]
if lib == "torch":
    X = {}
else:
    with open(POINTS) as fh:
        X = json.load(fh)
out = {}
for name, make in CASES.items():
    d = make()
    x = d.sample()
    if lib == "torch":
        X[name] = x.tolist()
    else:
        x = T.tensor(X[name], dtype=x.dtype)
    r = out[name] = {}
    for k, method in METHODS.items():
        try:
            v = method(d, x)
        except NotImplementedError:
            v = "NotImplementedError"
        except Exception as e:  # noqa: BLE001  (any failure is a finding)
            v = type(e).__name__
        if not isinstance(v, str):
            v = [round(z, 9) if z == z else "nan" for z in T.as_tensor(v).double().reshape(-1).tolist()]
        r[k] = v
print(json.dumps(out))
if lib == "torch":
    with open(POINTS, "w") as fh:
        json.dump(X, fh)
