"""Probability distributions with PyTorch's torch.distributions API: sampling (reparameterised where
PyTorch has it), log_prob, cdf/icdf, entropy, moments, constraints, transforms and kl_divergence."""
from rtx.distributions import constraints, transforms
from rtx.distributions.bernoulli import Bernoulli
from rtx.distributions.beta import Beta
from rtx.distributions.binomial import Binomial
from rtx.distributions.categorical import Categorical
from rtx.distributions.cauchy import Cauchy
from rtx.distributions.chi2 import Chi2
from rtx.distributions.constraint_registry import biject_to, transform_to
from rtx.distributions.dirichlet import Dirichlet
from rtx.distributions.distribution import Distribution
from rtx.distributions.exp_family import ExponentialFamily
from rtx.distributions.exponential import Exponential
from rtx.distributions.fishersnedecor import FisherSnedecor
from rtx.distributions.gamma import Gamma
from rtx.distributions.geometric import Geometric
from rtx.distributions.gumbel import Gumbel
from rtx.distributions.half_cauchy import HalfCauchy
from rtx.distributions.half_normal import HalfNormal
from rtx.distributions.independent import Independent
from rtx.distributions.inverse_gamma import InverseGamma
from rtx.distributions.kl import kl_divergence, register_kl
from rtx.distributions.kumaraswamy import Kumaraswamy
from rtx.distributions.laplace import Laplace
from rtx.distributions.log_normal import LogNormal
from rtx.distributions.logistic_normal import LogisticNormal
from rtx.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from rtx.distributions.mixture_same_family import MixtureSameFamily
from rtx.distributions.multinomial import Multinomial
from rtx.distributions.multivariate_normal import MultivariateNormal
from rtx.distributions.negative_binomial import NegativeBinomial
from rtx.distributions.normal import Normal
from rtx.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from rtx.distributions.pareto import Pareto
from rtx.distributions.poisson import Poisson
from rtx.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from rtx.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from rtx.distributions.studentT import StudentT
from rtx.distributions.transformed_distribution import TransformedDistribution
from rtx.distributions.transforms import *  # noqa: F403
from rtx.distributions.uniform import Uniform
from rtx.distributions.weibull import Weibull

__version__ = "0.1.0"

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
    "ExponentialFamily", "Exponential", "ExpRelaxedCategorical", "FisherSnedecor", "Gamma", "Geometric", "Gumbel",
    "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy", "Laplace", "LogNormal", "LogisticNormal",
    "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
    "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform", "Weibull",
    "biject_to", "constraints", "kl_divergence", "register_kl", "transform_to", "transforms",
]
__all__.extend(transforms.__all__)
