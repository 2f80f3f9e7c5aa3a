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
        x = gen.standard_gamma(a.astype(np.float64))
        x = np.maximum(x, np.finfo(a.dtype).tiny) if isinstance(x, np.ndarray) else \
            _xp(x).maximum(x, np.finfo(a.dtype).tiny)
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
    return wrap(gen.poisson(r.astype(np.float64)).astype(r.dtype))


def binomial(count, probs):
    c, p = raw(count.detach()), raw(probs.detach())
    gen = generator_for(probs.device).np
    out = gen.binomial(c.astype(np.int64), p.astype(np.float64).clip(0.0, 1.0))
    return wrap(out.astype(p.dtype))
