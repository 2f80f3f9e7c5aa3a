"""rtx.special: torch.special's functions, composed from rtx's differentiable ops (so gradients
and double backward come from the ops they are built of). Names and semantics as PyTorch's;
the values are checked against scipy.special in the tests."""
import math

import rtx

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln", "log1p",
           "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "psi", "round", "sinc",
           "softmax", "xlog1py", "xlogy"]

erf, erfc, erfinv = rtx.erf, rtx.erfc, rtx.erfinv
digamma = psi = rtx.digamma
gammaln = rtx.lgamma
exp2, expm1, log1p, sinc, round = rtx.exp2, rtx.expm1, rtx.log1p, rtx.sinc, rtx.round
expit = rtx.sigmoid
logit = rtx.logit
logsumexp = rtx.logsumexp
xlogy = rtx.xlogy

_SQRT2 = math.sqrt(2.0)


def _as_tensor(x):
    return x if isinstance(x, rtx.Tensor) else rtx.tensor(x)


def xlog1py(input, other):
    """input * log1p(other), and 0 where input == 0 (even where log1p(other) is inf or nan)."""
    input, other = _as_tensor(input), _as_tensor(other)
    zero = input == 0
    safe = rtx.where(zero, rtx.zeros_like(other), other)  # log1p is not evaluated where input is 0
    out = rtx.where(zero, rtx.zeros_like(input * safe), input * rtx.log1p(safe))
    return rtx.where(rtx.isnan(other), other, out)


def entr(input):
    """-x log x for x > 0, 0 at 0, -inf for x < 0 (nan stays nan)."""
    safe = rtx.where(input > 0, input, rtx.ones_like(input))
    out = rtx.where(input > 0, -input * rtx.log(safe), rtx.zeros_like(input))
    return rtx.where(input < 0, rtx.full_like(input, -math.inf), out)


def ndtr(input):
    """The standard normal CDF: 0.5 erfc(-x / sqrt(2))."""
    return 0.5 * rtx.erfc(-input / _SQRT2)


def ndtri(input):
    """The standard normal quantile: sqrt(2) erfinv(2p - 1), then one Newton step on ndtr, which
    restores the digits 2p - 1 loses in the lower tail (p = 1e-10 -> 1e-16 relative)."""
    x = _SQRT2 * rtx.erfinv(2 * input - 1)
    finite = rtx.isfinite(x)
    xf = rtx.where(finite, x, rtx.zeros_like(x))
    pdf = rtx.exp(-0.5 * xf * xf) / math.sqrt(2 * math.pi)
    return rtx.where(finite, xf - (ndtr(xf) - input) / pdf, x)


def log_ndtr(input):
    """log of the standard normal CDF, accurate far into the lower tail: there log(erfcx(z)/2) - z^2
    with z = -x / sqrt(2), since erfc(z) itself underflows for x < -38."""
    z = -input / _SQRT2
    lower = z > 1  # x < -sqrt(2)
    zl = rtx.where(lower, z, rtx.full_like(z, 2.0))
    tail = rtx.log(erfcx(zl) / 2) - zl * zl
    zu = rtx.where(lower, rtx.zeros_like(z), z)
    middle = rtx.log(0.5 * rtx.erfc(zu))
    # Upper tail: ndtr(x) = 1 - ndtr(-x) is within rounding of 1, so log1p keeps the digits.
    upper = rtx.log1p(-0.5 * rtx.erfc(rtx.where(input > 0, input, rtx.zeros_like(input)) / _SQRT2))
    return rtx.where(lower, tail, rtx.where(input > 0, upper, middle))


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x); for large x its continued fraction
    (erfc(x) underflows there while the product stays near 1 / (x sqrt(pi)))."""
    big = input > 5
    xs = rtx.where(big, rtx.full_like(input, 1.0), input)
    direct = rtx.exp(xs * xs) * rtx.erfc(xs)
    xb = rtx.where(big, input, rtx.full_like(input, 6.0))
    # Lentz-free continued fraction, 12 terms: exact to double precision for x > 5.
    frac = xb
    for k in range(12, 0, -1):
        frac = xb + (k / 2) / frac
    cf = 1 / (math.sqrt(math.pi) * frac)
    return rtx.where(big, cf, direct)


def multigammaln(input, p):
    """log of the multivariate gamma function of dimension p."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p}")
    out = (p * (p - 1) / 4) * math.log(math.pi)
    for j in range(p):
        out = out + rtx.lgamma(input - j / 2)
    return out


def softmax(input, dim, *, dtype=None):
    return rtx.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return rtx.log_softmax(input, dim, dtype=dtype)
