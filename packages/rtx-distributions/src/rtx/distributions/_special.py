"""Special functions and samplers the distributions need beyond rtx-tensor's ops.

- `digamma` with a derivative (rtx.digamma has none) and `polygamma(n, x)` for n >= 1, x > 0:
  each order's derivative is the next order, so the entropies and KLs of Gamma, Beta and Dirichlet
  can be differentiated (twice too).
- `standard_gamma(alpha)`: Gamma(alpha, 1) samples drawn by the rtx generator of alpha's device
  (NumPy's or CuPy's Generator.standard_gamma), with an implicit reparameterisation gradient
  dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha) (Figurnov et al. 2018), P the regularised lower
  incomplete gamma function. dP/dalpha is summed term by term from the series
  P(a, x) = x^a e^-x sum_n x^n / Gamma(a + n + 1), whose derivative in a is exact; for alpha > 1000
  the Wilson-Hilferty cube-root approximation of the quantile gives the derivative in closed form.
- `poisson(rate)` and `binomial(count, probs)` draws on the device's generator.

These belong in rtx-tensor (as torch.polygamma, torch._standard_gamma, torch.poisson) once it has
them; until then they live here, built on rtx.extend.
"""
from __future__ import annotations

import math

import numpy as np

import rtx
from rtx.extend import Primitive, raw, wrap
from rtx.runtime.random import generator_for

# Bernoulli numbers B_2, B_4, ..., B_14 for the Euler-Maclaurin tail of the Hurwitz zeta function.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT = 10  # sum the first terms exactly so the asymptotic tail starts at z >= 10


def _xp(a):
    return np if isinstance(a, np.ndarray) else __import__("cupy")


def _polygamma_array(n, x):
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1 and x > 0, computed in float64."""
    xp = _xp(x)
    x = x.astype(np.float64)
    s = n + 1
    head = xp.zeros_like(x)
    for k in range(_SHIFT):
        head += (x + k) ** -s
    z = x + _SHIFT
    tail = z ** (1 - s) / (s - 1) + 0.5 * z ** -s
    rising, fact, zpow = float(s), 2.0, z ** (-s - 1)
    for j, b in enumerate(_BERNOULLI, start=1):
        tail += b / fact * rising * zpow
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        fact *= (2 * j + 1) * (2 * j + 2)
        zpow = zpow / (z * z)
    out = (-1) ** (n + 1) * math.factorial(n) * (head + tail)
    return xp.where(x > 0, out, xp.nan)


class Polygamma(Primitive):
    op = "distributions.polygamma"
    @staticmethod
    def forward(ctx, x, *, n):
        ctx.save_for_backward(x)
        ctx.n = n
        return _polygamma_array(n, raw(x)).astype(raw(x).dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g * Polygamma.apply(x, n=ctx.n + 1),)


class Digamma(Primitive):
    op = "distributions.digamma_differentiable"  # rtx-tensor's own digamma/lgamma own the plain names
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with rtx.no_grad():
            return raw(rtx.digamma(x.detach()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g * Polygamma.apply(x, n=1),)


def digamma(x):
    return Digamma.apply(x)


def polygamma(n, x):
    if n == 0:
        return digamma(x)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n={n}")
    return Polygamma.apply(x, n=n)


def lgamma(x):
    """log|Gamma(x)| whose second derivative works (rtx.lgamma's derivative is rtx.digamma)."""
    return _Lgamma.apply(x)


class _Lgamma(Primitive):
    op = "distributions.lgamma_twice_differentiable"  # rtx-tensor's own digamma/lgamma own the plain names
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        with rtx.no_grad():
            return raw(rtx.lgamma(x.detach()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g * digamma(x),)


def mvlgamma(x, p):
    """Multivariate log-gamma: p(p-1)/4 log(pi) + sum_{i<p} lgamma(x - i/2)."""
    terms = sum(lgamma(x - i / 2) for i in range(p))
    return terms + p * (p - 1) / 4 * math.log(math.pi)


# ---- regularised incomplete gamma functions (torch.special.gammainc / gammaincc) ------------


def _igamma_array(a, x):
    """(P(a, x), Q(a, x)) in float64: the series of P where x < a + 1, the continued fraction of Q
    (modified Lentz) elsewhere, each summed to full precision (Numerical Recipes' gser/gcf), the
    other one as 1 minus it, so the smaller of the two is never the difference of near-equal numbers.
    Both need O(sqrt(a)) terms near x = a. Edges as SciPy and PyTorch: a < 0, x < 0 or a = x = 0 give
    nan; P(0, x > 0) = 1, P(a, 0) = 0, P(a, inf) = 1, P(inf, x) = 0."""
    xp = _xp(a)
    a, x = xp.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
    shape = a.shape
    a, x = a.reshape(-1), x.reshape(-1)
    p = xp.full(a.shape, np.nan)
    ok = (a >= 0) & (x >= 0) & ~((a == 0) & (x == 0))
    p[ok & (x == 0)] = 0.0
    p[ok & (a == 0) & (x > 0)] = 1.0
    p[ok & xp.isinf(x) & xp.isfinite(a)] = 1.0
    p[ok & xp.isinf(a) & xp.isfinite(x)] = 0.0
    inner = ok & (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    q = 1.0 - p
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        for use_series in (True, False):
            idx = xp.flatnonzero(inner & ((x < a + 1) == use_series))
            aa, xx = a[idx], x[idx]
            if aa.size == 0:
                continue
            lead = xp.exp(_log_igamma_prefactor(xp, aa, xx))
            out = _igamma_series(xp, aa, xx) if use_series else _igamma_fraction(xp, aa, xx)
            out = xp.minimum(lead * out, 1.0)
            (p if use_series else q)[idx] = out
            (q if use_series else p)[idx] = 1.0 - out
    return p.reshape(shape), q.reshape(shape)


def _igamma_series(xp, a, x):
    """sum_n x^n / (a (a+1) ... (a+n)): P(a, x) divided by x^a e^-x / Gamma(a). Each element stops
    when its term no longer changes its sum."""
    term = 1.0 / a
    total, ap = term.copy(), a.copy()
    live = xp.arange(a.size)  # elements still summing
    for _ in range(_IGAMMA_MAX_TERMS):
        ap[live] += 1.0
        term[live] *= x[live] / ap[live]
        total[live] += term[live]
        live = live[xp.abs(term[live]) >= xp.abs(total[live]) * _EPS]
        if live.size == 0:
            return total
    total[live] = np.nan  # not reached for a < 1e10 (about 9 sqrt(a) terms are needed)
    return total


def _igamma_fraction(xp, a, x):
    """Q(a, x) divided by x^a e^-x / Gamma(a), as the continued fraction
    1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...))), evaluated by the
    modified Lentz method; each element stops when its factor is 1 to machine precision."""
    tiny = np.finfo(np.float64).tiny
    b = x + 1.0 - a
    c = xp.full(a.shape, 1.0 / tiny)
    d = 1.0 / b
    h = d.copy()
    live = xp.arange(a.size)
    for i in range(1, _IGAMMA_MAX_TERMS):
        an = -i * (i - a[live])
        b[live] += 2.0
        dl = an * d[live] + b[live]
        dl = 1.0 / xp.where(xp.abs(dl) < tiny, tiny, dl)
        cl = b[live] + an / c[live]
        cl = xp.where(xp.abs(cl) < tiny, tiny, cl)
        delta = dl * cl
        d[live], c[live] = dl, cl
        h[live] *= delta
        live = live[xp.abs(delta - 1.0) >= _EPS]
        if live.size == 0:
            return h
    h[live] = np.nan
    return h


_EPS = np.finfo(np.float64).eps
_IGAMMA_MAX_TERMS = 1_000_000


def _log_igamma_prefactor(xp, a, x):
    """log(x^a e^-x / Gamma(a)). For a >= 10 written as a (log1p(t) - t) + log(a / 2 pi) / 2 - S(a),
    t = (x - a) / a and S Stirling's correction to lgamma: the large terms a log x, x and lgamma(a)
    cancel there, and computed apart they would cost P and Q about a * 1e-16 of relative accuracy."""
    small = a < 10
    with rtx.no_grad():
        direct = a * xp.log(x) - x - raw(rtx.lgamma(wrap(xp.where(small, a, 1.0))))
    ab = xp.where(small, 10.0, a)
    t = (x - ab) / ab
    # log1p(t) - t, by its series where the subtraction would cancel
    tt = xp.where(xp.abs(t) < 0.5, t, 0.0)
    series, power = xp.zeros_like(t), tt * tt
    for k in range(2, 56):  # |t| < 0.5: 0.5^56 / 56 is below float64's resolution
        series += power / k if k % 2 == 0 else -power / k
        power = power * tt
    log1pmx = xp.where(xp.abs(t) < 0.5, -series, xp.log(x / ab) - t)  # log(x / a), not log1p(t): x << a too
    inv, inv2 = 1.0 / ab, 1.0 / (ab * ab)
    stirling = inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 * (
        1 / 1188 - inv2 * (691 / 360360 - inv2 / 156))))))
    return xp.where(small, direct, ab * log1pmx + 0.5 * xp.log(ab / (2 * np.pi)) - stirling)


class _IncompleteGamma(Primitive):
    op = "distributions.incomplete_gamma"
    """P(a, x) (upper=False) or Q(a, x) = 1 - P (upper=True) on broadcast inputs of one shape."""

    @staticmethod
    def forward(ctx, a, x, *, upper):
        ctx.save_for_backward(a, x)
        ctx.upper = upper
        p, q = _igamma_array(raw(a), raw(x))
        return (q if upper else p).astype(raw(x).dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative of gammainc/gammaincc with respect to a is not implemented "
                                      "(as in PyTorch); detach a")
        # dP/dx is the Gamma(a, 1) density; its own derivative follows through these ops
        density = rtx.exp(rtx.xlogy(a - 1, x) - x - lgamma(a))
        return None, g * (-density if ctx.upper else density)


def gammainc(a, x):
    """torch.special.gammainc: the regularised lower incomplete gamma function P(a, x)."""
    a, x = rtx.broadcast_tensors(*_as_float_pair(a, x))
    return _IncompleteGamma.apply(a, x, upper=False)


def gammaincc(a, x):
    """torch.special.gammaincc: the regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = rtx.broadcast_tensors(*_as_float_pair(a, x))
    return _IncompleteGamma.apply(a, x, upper=True)


def _as_float_pair(a, x):
    a, x = (v if isinstance(v, rtx.Tensor) else rtx.tensor(v) for v in (a, x))
    dt = rtx.promote_types(a.dtype, x.dtype)
    if not dt.is_floating_point:
        dt = rtx.get_default_dtype()
    return a.to(dt), x.to(dt)


# ---- Gamma sampling with an implicit reparameterisation gradient ----------------------------


def _gamma_grad(alpha, x):
    """dx/dalpha at fixed quantile for x ~ Gamma(alpha, 1), on float64 tensors (no graph)."""
    with rtx.no_grad():
        big = alpha > 1000
        a = rtx.where(big, rtx.ones_like(alpha), alpha)  # the series runs on a harmless stand-in there
        x_big = x
        x = rtx.where(big, rtx.ones_like(x), x)
        lx = x.log()
        # r_n = t_n / p(x): r_0 = x / a, r_n = r_{n-1} x / (a + n); psi_n = digamma(a + n + 1)
        r = x / a
        psi = rtx.digamma(a + 1)
        total = r * (lx - psi)
        for n in range(1, 20000):
            psi = psi + 1 / (a + n)
            r = r * x / (a + n)
            term = r * (lx - psi)
            total = total + term
            done = ((a + n) > x) & (term.abs() <= 1e-16 * total.abs())
            if bool(done.all()):
                break
        series = -total
        # Wilson-Hilferty: x = alpha h^3, h = 1 - 1/(9 alpha) + z / (3 sqrt(alpha)), z held fixed
        ab = rtx.where(big, alpha, rtx.full_like(alpha, 1001.0))
        z = ((x_big / ab) ** (1 / 3) - 1 + 1 / (9 * ab)) * 3 * ab.sqrt()
        h = 1 - 1 / (9 * ab) + z / (3 * ab.sqrt())
        wh = h ** 3 + 3 * ab * h * h * (1 / (9 * ab * ab) - z / (6 * ab ** 1.5))
        return rtx.where(big, wh, series)


class StandardGamma(Primitive):
    op = "distributions.standard_gamma"
    """x ~ Gamma(alpha, 1), clamped to the dtype's smallest normal number (as PyTorch)."""

    @staticmethod
    def forward(ctx, alpha):
        a = raw(alpha)
        gen = generator_for(alpha.device).np
        xp = _xp(a)
        # asarray: NumPy's generators return a Python float, not a 0-d array, for a 0-d alpha
        x = xp.maximum(xp.asarray(gen.standard_gamma(a.astype(np.float64))), np.finfo(a.dtype).tiny)
        x = x.astype(a.dtype, copy=False)
        ctx.save_for_backward(alpha)
        ctx.sample = x
        return x

    @staticmethod
    def backward(ctx, g):
        (alpha,) = ctx.saved_tensors
        a64 = alpha.detach().to(rtx.float64)
        x64 = wrap(ctx.sample).to(rtx.float64)
        return (g * _gamma_grad(a64, x64).to(g.dtype),)


def standard_gamma(alpha):
    return StandardGamma.apply(alpha)


def poisson(rate):
    """Poisson(rate) counts in rate's dtype, from the rate's device generator."""
    r = raw(rate.detach())
    gen = generator_for(rate.device).np
    return wrap(_xp(r).asarray(gen.poisson(r.astype(np.float64))).astype(r.dtype))  # a 0-d rate gives an int


def binomial(count, probs):
    c, p = raw(count.detach()), raw(probs.detach())
    gen = generator_for(probs.device).np
    out = gen.binomial(c.astype(np.int64), p.astype(np.float64).clip(0.0, 1.0))
    return wrap(_xp(p).asarray(out).astype(p.dtype))  # 0-d parameters give a Python int
