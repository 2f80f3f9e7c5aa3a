"""Adaptive embedded Runge-Kutta solvers (dopri5, dopri8, bosh3, fehlberg2, adaptive_heun) with
torchdiffeq's step-size control, quartic dense output and event location.

Tableaux are the published ones (Dormand & Prince 1980; Prince & Dormand 1981 as tabulated by
torchdiffeq; Bogacki & Shampine 1989; Fehlberg's RK1(2); Heun-Euler), each with the `mid`
weights that give y(t0 + dt/2) for the interpolant.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import rtx
from rtx.science.ode._misc import (
    error_ratio,
    interp_evaluate,
    interp_fit,
    lincomb,
    mixed_norm,
    optimal_step_size,
    rms_norm,
    select_initial_step,
)


@dataclass(frozen=True)
class Tableau:
    alpha: tuple  # stage times c_2..c_s
    beta: tuple  # rows of the Butcher matrix, row i has i+1 entries
    c_sol: tuple
    c_error: tuple  # c_sol minus the embedded lower-order weights
    mid: tuple  # weights for y(t0 + dt/2)
    order: int

    @property
    def fsal(self):
        # First-same-as-last: the last stage is already the solution (saves one combination).
        return self.c_sol[-1] == 0 and tuple(self.c_sol[:-1]) == tuple(self.beta[-1])


DOPRI5 = Tableau(
    alpha=(1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    beta=((1 / 5,), (3 / 40, 9 / 40), (44 / 45, -56 / 15, 32 / 9),
          (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
          (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
          (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84)),
    c_sol=(35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0),
    c_error=(35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
             -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1 / 60),
    mid=(6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2,
         187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2),
    order=5,
)

BOSH3 = Tableau(
    alpha=(1 / 2, 3 / 4, 1.0),
    beta=((1 / 2,), (0.0, 3 / 4), (2 / 9, 1 / 3, 4 / 9)),
    c_sol=(2 / 9, 1 / 3, 4 / 9, 0.0),
    c_error=(2 / 9 - 7 / 24, 1 / 3 - 1 / 4, 4 / 9 - 1 / 3, -1 / 8),
    mid=(0.0, 0.5, 0.0, 0.0),
    order=3,
)

FEHLBERG2 = Tableau(
    alpha=(1 / 2, 1.0),
    beta=((1 / 2,), (1 / 256, 255 / 256)),
    c_sol=(1 / 512, 255 / 256, 1 / 512),
    c_error=(-1 / 512, 0.0, 1 / 512),
    mid=(0.0, 0.5, 0.0),
    order=2,
)

ADAPTIVE_HEUN = Tableau(
    alpha=(1.0,),
    beta=((1.0,),),
    c_sol=(0.5, 0.5),
    c_error=(0.5, -0.5),
    mid=(0.5, 0.0),
    order=2,
)


def _dopri8():
    # Prince & Dormand RK8(7)13M with its 7th-order embedded weights and a dense-output midpoint.
    alpha = (1 / 18, 1 / 12, 1 / 8, 5 / 16, 3 / 8, 59 / 400, 93 / 200, 5490023248 / 9719169821, 13 / 20,
             1201146811 / 1299019798, 1.0, 1.0, 1.0)
    beta = (
        (1 / 18,),
        (1 / 48, 1 / 16),
        (1 / 32, 0, 3 / 32),
        (5 / 16, 0, -75 / 64, 75 / 64),
        (3 / 80, 0, 0, 3 / 16, 3 / 20),
        (29443841 / 614563906, 0, 0, 77736538 / 692538347, -28693883 / 1125000000, 23124283 / 1800000000),
        (16016141 / 946692911, 0, 0, 61564180 / 158732637, 22789713 / 633445777, 545815736 / 2771057229,
         -180193667 / 1043307555),
        (39632708 / 573591083, 0, 0, -433636366 / 683701615, -421739975 / 2616292301, 100302831 / 723423059,
         790204164 / 839813087, 800635310 / 3783071287),
        (246121993 / 1340847787, 0, 0, -37695042795 / 15268766246, -309121744 / 1061227803,
         -12992083 / 490766935, 6005943493 / 2108947869, 393006217 / 1396673457, 123872331 / 1001029789),
        (-1028468189 / 846180014, 0, 0, 8478235783 / 508512852, 1311729495 / 1432422823,
         -10304129995 / 1701304382, -48777925059 / 3047939560, 15336726248 / 1032824649,
         -45442868181 / 3398467696, 3065993473 / 597172653),
        (185892177 / 718116043, 0, 0, -3185094517 / 667107341, -477755414 / 1098053517,
         -703635378 / 230739211, 5731566787 / 1027545527, 5232866602 / 850066563, -4093664535 / 808688257,
         3962137247 / 1805957418, 65686358 / 487910083),
        (403863854 / 491063109, 0, 0, -5068492393 / 434740067, -411421997 / 543043805, 652783627 / 914296604,
         11173962825 / 925320556, -13158990841 / 6184727034, 3936647629 / 1978049680, -160528059 / 685178525,
         248638103 / 1413531060, 0),
    )
    sol = (14005451 / 335480064, 0, 0, 0, 0, -59238493 / 1068277825, 181606767 / 758867731,
           561292985 / 797845732, -1041891430 / 1371343529, 760417239 / 1151165299, 118820643 / 751138087,
           -528747749 / 2220607170, 1 / 4)
    low = (13451932 / 455176623, 0, 0, 0, 0, -808719846 / 976000145, 1757004468 / 5645159321,
           656045339 / 265891186, -3867574721 / 1518517206, 465885868 / 322736535, 53011238 / 667516719,
           2 / 45, 0)
    h = 0.5
    # Dense-output polynomials of DOP853 evaluated at theta = 1/2 (stages 1, 6..14).
    polys = {0: (-6.3448349392860401388, 22.1396504998094068976, -30.0610568289666450593,
                 19.9990069333683970610, -6.6910181737837595697, 1.0),
             5: (-39.6107919852202505218, 116.4422149550342161651, -121.4999627731334642623,
                 52.2273532792945524050, -7.6142658045872677172, 0.0),
             6: (20.3761213808791436958, -67.1451318825957197185, 83.1721004639847717481,
                 -46.8919164181093621583, 10.7281392630428866124, 0.0),
             7: (7.3347098826795362023, -16.5672243527496524646, 9.5724507555993664382,
                 -0.1890893225010595467, 0.5526637063753648783, 0.0),
             8: (32.8801774352459155182, -89.9916014847245016028, 87.8406057677205645007,
                 -35.7075975946222072821, 4.2186562625665153803, 0.0),
             9: (-10.1588990526426760954, 22.6237489648532849093, -17.4152107770762969005,
                 6.2736448083240352160, -0.6627209125361597559, 0.0),
             10: (-12.5401268098782561200, 32.2362340167355370113, -28.5903289514790976966,
                  10.3160881272450748458, -1.2636789001135462218, 0.0),
             11: (29.5553001484516038033, -82.1020315488359848644, 81.6630950584341412934,
                  -34.7650769866611817349, 5.4106037898590422230, 0.0),
             12: (-41.7923486424390588923, 116.2662185791119533462, -114.9375291377009418170,
                  47.7457971078225540396, -7.0321379067945741781, 0.0),
             13: (20.3006925822100825485, -53.9020777466385396792, 50.2558364226176017553,
                  -19.0082099341608028453, 2.3537586759714983486, 0.0)}
    mid = [0.0] * 14
    for i, (p5, p4, p3, p2, p1, p0) in polys.items():
        mid[i] = (p5 * h ** 5 + p4 * h ** 4 + p3 * h ** 3 + p2 * h ** 2 + p1 * h + p0) * h
    return Tableau(alpha=alpha, beta=beta + (sol,), c_sol=sol + (0,),
                   c_error=tuple(s - lo for s, lo in zip(sol, low)) + (0,), mid=tuple(mid), order=8)


DOPRI8 = _dopri8()


def _floats(v):
    if v is None:
        return []
    return v.detach().reshape(-1).tolist() if isinstance(v, rtx.Tensor) else list(v)


def rk_step(func, y0, f0, t0, dt, t1, tab):
    """One embedded RK step: returns (y1, f1, error estimate, stages)."""
    k = [f0]
    yi = y0
    for alpha_i, beta_i in zip(tab.alpha, tab.beta):
        # A stage at c = 1 is evaluated just before t1, in case f jumps there.
        ti, perturb = (t1, False) if alpha_i == 1.0 else (t0 + alpha_i * dt, None)
        yi = y0 + lincomb(beta_i, k, dt)
        k.append(func(ti, yi, perturb))
    y1 = yi if tab.fsal else y0 + lincomb(tab.c_sol, k, dt)
    return y1, k[-1], lincomb(tab.c_error, k, dt), k


class RKAdaptive:
    """torchdiffeq 0.2.5's RKAdaptiveStepsizeODESolver. Options: first_step, min_step, max_step,
    safety, ifactor, dfactor, max_num_steps, norm, step_t (times the solver must step on; older
    torchdiffeq called them grid_points / step_locations) and jump_t (discontinuities of f:
    stepped on and f re-evaluated just past them)."""

    def __init__(self, tableau, func, y0, rtol, atol, shapes=None, first_step=None, min_step=0.0,
                 max_step=math.inf, safety=0.9, ifactor=10.0, dfactor=0.2, max_num_steps=2 ** 31 - 1, step_t=None,
                 jump_t=None, grid_points=None, step_locations=None, jump_locations=None, norm=None, **unused):
        if unused:
            raise TypeError(f"odeint: unexpected options {sorted(unused)} for an adaptive solver")
        aliases = [v for v in (step_t, grid_points, step_locations) if v is not None]
        if len(aliases) > 1:
            raise ValueError("step_t, grid_points and step_locations name the same option: pass only one")
        step_locations = aliases[0] if aliases else None
        if jump_t is not None and jump_locations is not None:
            raise ValueError("jump_t and jump_locations name the same option: pass only one")
        jump_locations = jump_t if jump_t is not None else jump_locations
        self.min_step, self.max_step = float(min_step), float(max_step)
        self.tab, self.func, self.y0 = tableau, func, y0
        self.rtol, self.atol = rtol, atol
        if norm is None:
            norm = rms_norm if shapes is None else mixed_norm([math.prod(s) for s in shapes])
        self.norm = norm
        self.first_step = first_step
        self.safety, self.ifactor, self.dfactor = float(safety), float(ifactor), float(dfactor)
        self.max_num_steps = int(max_num_steps)
        self.steps = sorted(float(v) for v in _floats(step_locations))
        self.jumps = sorted(float(v) for v in _floats(jump_locations))
        if set(self.steps) & set(self.jumps):
            raise ValueError("step_locations and jump_locations must not share elements")
        self.n_steps = 0  # accepted + rejected, for the benchmarks

    def _before(self, t0):
        f0 = self.func(t0, self.y0)
        if self.first_step is None:
            dt = select_initial_step(self.func, t0, self.y0, f0, self.tab.order - 1, self.rtol, self.atol,
                                     self.norm)
        else:
            dt = float(self.first_step)
        # state: y1, f1, t0, t1, next dt, interpolant on [t0, t1]
        self.state = (self.y0, f0, t0, t0, dt, [self.y0] * 5)
        # Locations before the start are dropped, as torchdiffeq's _sort_tvals does.
        self.steps = [v for v in self.steps if v >= t0]
        self.jumps = [v for v in self.jumps if v >= t0]
        self.si = min(bisect.bisect(self.steps, t0), len(self.steps) - 1)
        self.ji = min(bisect.bisect(self.jumps, t0), len(self.jumps) - 1)

    def integrate(self, ts):
        self._before(ts[0])
        out = [self.y0]
        for t in ts[1:]:
            n = 0
            while t > self.state[3]:
                if n >= self.max_num_steps:
                    raise RuntimeError(f"max_num_steps exceeded ({n}>={self.max_num_steps})")
                self._step()
                n += 1
            out.append(interp_evaluate(self.state[5], self.state[2], self.state[3], t))
        return rtx.stack(out)

    def integrate_until_event(self, t0, event_fn):
        """Step until event_fn(t, y) changes sign, then bisect on the dense output."""
        self._before(t0)
        y1, t1 = self.state[0], self.state[3]

        def ev(t, y):
            with rtx.no_grad():
                return float(event_fn(rtx.full((), t, dtype=y.dtype, device=y.device), y).item())

        sign0 = math.copysign(1.0, ev(t1, y1)) if ev(t1, y1) != 0 else 0.0
        if sign0 == 0.0:
            return t1, rtx.stack([self.y0, y1])
        n = 0
        while math.copysign(1.0, ev(self.state[3], self.state[0])) == sign0:
            if n >= self.max_num_steps:
                raise RuntimeError(f"max_num_steps exceeded ({n}>={self.max_num_steps}) before the event")
            self._step()
            n += 1
        coeffs, a, b = self.state[5], self.state[2], self.state[3]
        tol = float(self.atol) if not isinstance(self.atol, rtx.Tensor) else float(self.atol.min().item())
        with rtx.no_grad():
            for _ in range(max(1, math.ceil(math.log2(max((b - a) / max(tol, 1e-300), 2.0))))):
                m = 0.5 * (a + b)
                if math.copysign(1.0, ev(m, interp_evaluate(coeffs, self.state[2], self.state[3], m))) == sign0:
                    a = m
                else:
                    b = m
        t_event = 0.5 * (a + b)
        return t_event, rtx.stack([self.y0, interp_evaluate(coeffs, self.state[2], self.state[3], t_event)])

    def _step(self):
        y0, f0, _, t0, dt, coeffs = self.state
        dt = min(max(dt if math.isfinite(dt) else self.min_step, self.min_step), self.max_step)
        if not t0 + dt > t0:
            raise RuntimeError(f"underflow in dt {dt}")
        t1 = t0 + dt
        on_step = on_jump = False
        if self.steps:
            loc = self.steps[self.si]
            if t0 < loc < t1:
                on_step, t1, dt = True, loc, loc - t0
        if self.jumps:
            loc = self.jumps[self.ji]
            if t0 < loc < t0 + dt:
                on_step, on_jump, t1, dt = False, True, loc, loc - t0
        y1, f1, err, k = rk_step(self.func, y0, f0, t0, dt, t1, self.tab)
        ratio = error_ratio(err, self.rtol, self.atol, y0, y1, self.norm)
        if not math.isfinite(ratio):
            raise RuntimeError(f"non-finite values in the state at t={t0}")
        self.n_steps += 1
        accept = (ratio <= 1 and dt <= self.max_step) or dt <= self.min_step
        if accept:
            y_mid = y0 + lincomb(self.tab.mid, k, dt)
            coeffs = interp_fit(y0, y1, y_mid, k[0], k[-1], dt)
            if on_step and self.si != len(self.steps) - 1:
                self.si += 1
            if on_jump:
                if self.ji != len(self.jumps) - 1:
                    self.ji += 1
                f1 = self.func(t1, y1, True)  # f is discontinuous here: restart from its right-hand value
            new_t0, new_t1, y_next, f_next = t0, t1, y1, f1
        else:
            new_t0, new_t1, y_next, f_next = t0, t0, y0, f0
            coeffs = self.state[5]
        dt_next = optimal_step_size(dt, ratio, self.safety, self.ifactor, self.dfactor, self.tab.order)
        dt_next = min(max(dt_next, self.min_step), self.max_step)
        self.state = (y_next, f_next, new_t0, new_t1, dt_next, coeffs)
