"""Fixed-grid solvers: euler, midpoint, rk4 (the 3/8 rule, as torchdiffeq), explicit_adams
(Adams-Bashforth) and implicit_adams (Adams-Bashforth-Moulton predictor-corrector).

The grid is `t` itself, or `t[0] + k * step_size` (options={"step_size": h}), or what a
`grid_constructor(func, y0, t)` returns; outputs at `t` are linear interpolations on it.
"""
from __future__ import annotations

import collections
import math
import warnings
from fractions import Fraction

import rtx
from rtx.science.ode._misc import lincomb


class FixedGrid:
    def __init__(self, func, y0, rtol, atol, shapes=None, step_size=None, grid_constructor=None, interp="linear",
                 perturb=False, **unused):
        if unused:
            raise TypeError(f"odeint: unexpected options {sorted(unused)} for a fixed-grid solver")
        if step_size is not None and grid_constructor is not None:
            raise ValueError("step_size and grid_constructor are mutually exclusive arguments.")
        self.func, self.y0, self.rtol, self.atol = func, y0, rtol, atol
        if interp not in ("linear", "cubic"):
            raise ValueError(f"Unknown interpolation method {interp!r}: expected 'linear' or 'cubic'")
        self.step_size, self.grid_constructor, self.perturb, self.interp = step_size, grid_constructor, perturb, interp
        self.n_steps = 0

    def grid(self, ts):
        if self.grid_constructor is not None:
            g = self.grid_constructor(self.func, self.y0, rtx.tensor(ts, dtype=rtx.float64))
            g = [float(v) for v in (g.tolist() if isinstance(g, rtx.Tensor) else g)]
            if g[0] != ts[0] or g[-1] != ts[-1]:
                raise ValueError("grid_constructor must return a grid starting at t[0] and ending at t[-1]")
            return g
        if self.step_size is None:
            return list(ts)
        h = float(self.step_size)
        if h <= 0:
            raise ValueError(f"step_size must be positive, got {h}")
        # The last point is clamped to t[-1]; a tiny relative slack keeps 1/0.1 from making a 1e-16 step.
        n = max(1, math.ceil((ts[-1] - ts[0]) / h - 1e-9))
        return [ts[0] + i * h for i in range(n)] + [ts[-1]]

    def integrate(self, ts):
        grid = self.grid(ts)
        out = [self.y0]
        j = 1
        y0 = self.y0
        for t0, t1 in zip(grid[:-1], grid[1:]):
            dt = t1 - t0
            y1 = y0 + self.step(t0, dt, t1, y0)
            self.n_steps += 1
            while j < len(ts) and t1 >= ts[j]:
                t = ts[j]
                if t == t0 or t == t1:
                    out.append(y0 if t == t0 else y1)
                elif self.interp == "linear":
                    out.append(y0 + ((t - t0) / (t1 - t0)) * (y1 - y0))
                else:  # cubic Hermite through both ends and their slopes
                    h = (t - t0) / dt
                    f0, f1 = self._f(t0, y0), self._f(t1, y1)
                    out.append((1 + 2 * h) * (1 - h) ** 2 * y0 + h * (1 - h) ** 2 * dt * f0
                               + h * h * (3 - 2 * h) * y1 + h * h * (h - 1) * dt * f1)
                j += 1
            y0 = y1
        return rtx.stack(out)

    def _f(self, t, y, perturb=None):
        return self.func(t, y, perturb if self.perturb else None)


class Euler(FixedGrid):
    order = 1

    def step(self, t0, dt, t1, y0):
        return dt * self._f(t0, y0, True)


class Midpoint(FixedGrid):
    order = 2

    def step(self, t0, dt, t1, y0):
        half = 0.5 * dt
        y_mid = y0 + half * self._f(t0, y0, True)
        return dt * self._f(t0 + half, y_mid)


def rk4_38(f, t0, dt, t1, y0, k1=None):
    """Kutta's 3/8 rule: smaller error than the classic RK4 for the same four evaluations."""
    if k1 is None:
        k1 = f(t0, y0, True)
    k2 = f(t0 + dt / 3, y0 + (dt / 3) * k1)
    k3 = f(t0 + dt * 2 / 3, y0 + dt * (k2 - k1 / 3))
    k4 = f(t1, y0 + dt * (k1 - k2 + k3), False)
    return (k1 + 3 * (k2 + k3) + k4) * (dt * 0.125)


class RK4(FixedGrid):
    order = 4

    def step(self, t0, dt, t1, y0):
        return rk4_38(self._f, t0, dt, t1, y0)


def _adams_coefficients(max_order=12):
    """Adams-Bashforth and Adams-Moulton weights from their defining integrals (exact rationals):
    b_j = (-1)^j int_0^1 C(-s, j) ds in backward-difference form, converted to ordinate form."""
    def gamma(star):
        # gamma_j = (-1)^j int_0^1 binom(-s [+1], j) ds, computed by the recurrences of Hairer I.III.1.
        g = []
        for j in range(max_order + 1):
            if not star:
                g.append(1 - sum(g[m] / (j + 1 - m) for m in range(j)) if j else Fraction(1))
            else:
                g.append(-sum(g[m] / (j + 1 - m) for m in range(j)) if j else Fraction(1))
        return g

    def to_ordinates(gam, k):
        # sum_{j<k} gam_j nabla^j f_n  ->  sum_i w_i f_{n-i}
        w = [Fraction(0)] * k
        for j in range(k):
            for i in range(j + 1):
                w[i] += gam[j] * (-1) ** i * math.comb(j, i)
        return w

    g, gs = gamma(False), gamma(True)
    bash = [[]] + [[float(x) for x in to_ordinates(g, k)] for k in range(1, max_order + 1)]
    moul = [[]] + [[float(x) for x in to_ordinates(gs, k)] for k in range(1, max_order + 1)]
    return bash, moul


_BASHFORTH, _MOULTON = _adams_coefficients()


class AdamsBashforthMoulton(FixedGrid):
    """Fixed-step Adams: rk4 until enough history, then Adams-Bashforth of rising order (up to
    max_order - 1 steps); implicit=True corrects with Adams-Moulton by functional iteration."""
    order = 4

    def __init__(self, func, y0, rtol, atol, implicit=True, max_iters=4, max_order=12, **kw):
        super().__init__(func, y0, rtol, atol, **kw)
        if max_order > 12:
            raise ValueError(f"max_order must be at most 12, got {max_order}")
        self.implicit, self.max_iters, self.max_order = implicit, int(max_iters), int(max_order)
        self.prev_f = collections.deque(maxlen=self.max_order - 1)
        self.prev_t = None

    def _converged(self, a, b):
        with rtx.no_grad():
            tol = self.atol + self.rtol * rtx.maximum(a.abs(), b.abs())
            return float(((a - b).abs() / tol).max().item()) < 1

    def step(self, t0, dt, t1, y0):
        if self.prev_t != t0:
            self.prev_f.appendleft(self._f(t0, y0))
            self.prev_t = t0
        order = min(len(self.prev_f), self.max_order - 1)
        if order < 3:
            return rk4_38(self._f, t0, dt, t1, y0, k1=self.prev_f[0])
        dy = lincomb(_BASHFORTH[order], self.prev_f, dt)
        if self.implicit:
            m = _MOULTON[order + 1]
            delta = lincomb(m[1:], self.prev_f, dt)
            converged = False
            for _ in range(self.max_iters):
                dy_old = dy
                dy = (dt * m[0]) * self._f(t1, y0 + dy) + delta
                converged = self._converged(dy_old, dy)
                if converged:
                    break
            if not converged:
                warnings.warn("Functional iteration did not converge. Solution may be incorrect.", stacklevel=2)
                self.prev_f.pop()
        return dy


class AdamsBashforth(AdamsBashforthMoulton):
    def __init__(self, func, y0, rtol, atol, **kw):
        super().__init__(func, y0, rtol, atol, implicit=False, **kw)
