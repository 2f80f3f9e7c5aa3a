"""odeint / odeint_adjoint / odeint_event against closed forms, scipy.integrate.solve_ivp, and
torchdiffeq 0.2.5's own outputs (fixtures/make_torchdiffeq_fixtures.py)."""
import gc
import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate

import rtx
import rtx.nn as nn
from rtx.science import odeint, odeint_adjoint, odeint_event
from rtx.science.ode.fixed_grid import _BASHFORTH, _MOULTON

F64 = rtx.float64
FX = np.load(Path(__file__).parent / "fixtures" / "torchdiffeq_0.2.5.npz")
ADAPTIVE = ("dopri5", "dopri8", "bosh3", "fehlberg2", "adaptive_heun")
FIXED = ("euler", "midpoint", "rk4", "explicit_adams", "implicit_adams")


def T(x):
    return rtx.tensor(x, dtype=F64)


def vdp(t, y):
    return rtx.stack([y[1], (1 - y[0] ** 2) * y[1] - y[0] + 0.1 * rtx.sin(t)])


# global error of each method on the harmonic oscillator at its default tolerances / h = 1e-3
# (adams: the same figures as torchdiffeq gives; dopri8 is limited by its quartic dense output
# between long steps, as in torchdiffeq)
CLOSED_FORM_TOL = {"dopri5": 3e-7, "dopri8": 1e-4, "bosh3": 5e-5, "fehlberg2": 1e-4, "adaptive_heun": 1e-6,
                   "euler": 5e-3, "midpoint": 1e-5, "rk4": 1e-10, "explicit_adams": 2e-7, "implicit_adams": 1e-7}


@pytest.mark.parametrize("method", ADAPTIVE + FIXED)
def test_harmonic_oscillator_closed_form(method):
    t = rtx.linspace(0, 2 * math.pi, 9, dtype=F64)
    opts = {"step_size": 1e-3, "interp": "cubic"} if method in FIXED else None
    if method == "explicit_adams":
        opts["max_order"] = 5
    y = odeint(lambda t, y: rtx.stack([y[1], -y[0]]), T([1.0, 0.0]), t, method=method, options=opts)
    exact = np.stack([np.cos(t.numpy()), -np.sin(t.numpy())], 1)
    err = np.abs(y.numpy() - exact).max()
    assert err < CLOSED_FORM_TOL[method], err


def test_dopri5_matches_solve_ivp_at_tight_tolerance():
    ts = np.linspace(0, 5, 11)
    ref = scipy.integrate.solve_ivp(lambda t, y: [y[1], (1 - y[0] ** 2) * y[1] - y[0] + 0.1 * np.sin(t)],
                                    (0, 5), [2.0, 0.0], method="DOP853", t_eval=ts, rtol=1e-13, atol=1e-13).y.T
    for method in ("dopri5", "dopri8"):
        y = odeint(vdp, T([2.0, 0.0]), T(ts), rtol=1e-11, atol=1e-12, method=method)
        # dopri8 is limited by its quartic dense output between long steps (torchdiffeq's interpolant)
        assert np.abs(y.numpy() - ref).max() < (1e-8 if method == "dopri5" else 1e-6), method


@pytest.mark.parametrize("method", ADAPTIVE + FIXED)
def test_matches_torchdiffeq(method):
    t = rtx.linspace(0.0, 3.0, 7, dtype=F64)
    opts = {"step_size": 0.05} if method in FIXED else None
    if method == "explicit_adams":
        opts["max_order"] = 5
    y = odeint(vdp, T([2.0, 0.0]), t, rtol=1e-6, atol=1e-8, method=method, options=opts).numpy()
    ref = FX[f"vdp_{method}"]
    if method in FIXED:  # same grid, same arithmetic: equal to rounding
        np.testing.assert_allclose(y, ref, rtol=0, atol=1e-8)
    elif method == "dopri8":
        # The 8th-order error estimate is at rounding level, so step sequences drift apart in the 7th
        # digit and the quartic interpolant between the (long) steps moves with them.
        np.testing.assert_allclose(y, ref, rtol=0, atol=2e-4)
    else:  # step sizes agree to rounding, outputs to within the tolerance asked for
        np.testing.assert_allclose(y, ref, rtol=0, atol=1e-6)


def test_reversed_time_and_step_t_match_torchdiffeq():
    t = rtx.linspace(0.0, 3.0, 7, dtype=F64)
    np.testing.assert_allclose(odeint(vdp, T([2.0, 0.0]), t.flip(0)).numpy(), FX["vdp_reversed"], atol=1e-6)
    y = odeint(vdp, T([2.0, 0.0]), t, options={"step_t": T([0.3, 1.7])}).numpy()
    np.testing.assert_allclose(y, FX["vdp_step_t"], atol=1e-6)
    # the old option name still works
    y2 = odeint(vdp, T([2.0, 0.0]), t, options={"grid_points": [0.3, 1.7]}).numpy()
    np.testing.assert_array_equal(y, y2)


def test_tuple_state_matches_torchdiffeq():
    t = rtx.linspace(0.0, 3.0, 7, dtype=F64)
    x, v = odeint(lambda t, s: (s[1], -s[0] - 0.1 * s[1]), (T([1.0, 0.5]), T([0.0, 0.2])), t, rtol=1e-5, atol=1e-7)
    assert x.shape == (7, 2) and v.shape == (7, 2)
    np.testing.assert_allclose(x.numpy(), FX["tuple_x"], atol=1e-12)
    np.testing.assert_allclose(v.numpy(), FX["tuple_v"], atol=1e-12)


def test_jump_t_handles_a_discontinuous_rhs():
    # dy/dt = 1 before t=1, -1 after: y(2) = 0 exactly; stepping on the jump makes it exact
    f = lambda t, y: rtx.where(t < 1.0, rtx.ones_like(y), -rtx.ones_like(y))  # noqa: E731
    y = odeint(f, T([0.0]), T([0.0, 2.0]), options={"jump_t": [1.0]})
    assert abs(float(y[-1])) < 1e-9


def test_adams_coefficients_match_the_classical_tables():
    assert np.allclose(np.array(_BASHFORTH[4]) * 24, [55, -59, 37, -9])
    assert np.allclose(np.array(_BASHFORTH[6]) * 1440, [4277, -7923, 9982, -7298, 2877, -475])
    assert np.allclose(np.array(_MOULTON[5]) * 720, [251, 646, -264, 106, -19])


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match="Invalid method"):
        odeint(vdp, T([1.0, 0.0]), T([0.0, 1.0]), method="rk45")
    with pytest.raises(ValueError, match="strictly increasing or decreasing"):
        odeint(vdp, T([1.0, 0.0]), T([0.0, 1.0, 0.5]))
    with pytest.raises(TypeError, match="unexpected options"):
        odeint(vdp, T([1.0, 0.0]), T([0.0, 1.0]), options={"step_size": 0.1})


def _mlp_params():
    return [rtx.tensor(FX[k], requires_grad=True) for k in ("W1", "b1", "W2")]


def test_backprop_through_solver_matches_torchdiffeq_gradients():
    P = _mlp_params()
    z0 = T([0.3, -0.2, 0.5]).requires_grad_(True)
    zs = odeint(lambda t, z: P[2] @ rtx.tanh(P[0] @ z + P[1]), z0, T([0.0, 0.5, 1.0]), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(zs.detach().numpy(), FX["node_z"], atol=1e-12)
    grads = rtx.autograd.grad((zs ** 2).sum(), [z0] + P)
    for g, name in zip(grads, ("z0", "W1", "b1", "W2")):
        np.testing.assert_allclose(g.numpy(), FX[f"node_grad_{name}"], atol=1e-7)


class ODEFunc(nn.Module):
    def __init__(self, dim=3, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, t, y):
        return self.net(y) * rtx.cos(t)


@pytest.mark.parametrize("method", ["dopri5", "rk4"])
def test_adjoint_gradients_equal_backprop(method):
    rtx.manual_seed(0)
    func = ODEFunc().to(F64)
    y0 = rtx.randn(4, 3, dtype=F64, requires_grad=True)
    t = T([0.0, 0.4, 1.0, 1.5])
    opts = {"step_size": 0.01} if method == "rk4" else None
    tol = dict(rtol=1e-10, atol=1e-12)
    params = list(func.parameters())
    y_bp = odeint(func, y0, t, method=method, options=opts, **tol)
    g_bp = rtx.autograd.grad((y_bp ** 3).sum(), [y0] + params)
    y_adj = odeint_adjoint(func, y0, t, method=method, options=opts, **tol)
    np.testing.assert_allclose(y_adj.detach().numpy(), y_bp.detach().numpy(), atol=1e-14)
    g_adj = rtx.autograd.grad((y_adj ** 3).sum(), [y0] + params)
    for a, b in zip(g_adj, g_bp):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("method,step,tol", [("euler", 1e-3, 2e-3), ("midpoint", 2e-2, 2e-4), ("rk4", 0.1, 1e-5)])
def test_fixed_grid_adjoint_converges_to_the_exact_gradient(method, step, tol):
    # y' = -k y + sin(t): the adjoint solve runs the same fixed-grid method backwards, so its
    # gradients differ from the exact ones by the method's own order in the step
    k = T([0.8]).requires_grad_(True)
    y0 = T([1.3]).requires_grad_(True)
    t = T([0.0, 0.5, 1.0])
    y = odeint_adjoint(lambda s, v: -k * v + rtx.sin(s), y0, t, method=method, options={"step_size": step},
                       adjoint_params=(k,))
    gk, gy0 = rtx.autograd.grad(y.sum(), [k, y0])
    # closed form: y(t) = e^{-kt} y0 + int_0^t e^{-k(t-s)} sin s ds; differentiate numerically in k
    def exact(kk, t):
        return (math.exp(-kk * t) * 1.3 + (kk * math.sin(t) - math.cos(t) + math.exp(-kk * t)) / (1 + kk ** 2))

    h = 1e-6
    dk = sum((exact(0.8 + h, s) - exact(0.8 - h, s)) / (2 * h) for s in (0.0, 0.5, 1.0))
    dy0 = sum(math.exp(-0.8 * s) for s in (0.0, 0.5, 1.0))
    np.testing.assert_allclose(y.detach().numpy().ravel(), [exact(0.8, s) for s in (0.0, 0.5, 1.0)],
                               atol=2 * tol)
    assert abs(float(gk) - dk) < tol * abs(dk), (float(gk), dk)
    assert abs(float(gy0) - dy0) < tol * dy0, (float(gy0), dy0)


def test_adjoint_with_tuple_state_and_explicit_params():
    w = T([0.7, -0.3]).requires_grad_(True)
    x0, v0 = T([1.0, 0.5]).requires_grad_(True), T([0.0, 0.2])

    def f(t, s):
        return s[1], -w * s[0]

    t = T([0.0, 1.0, 2.0])
    xs, vs = odeint(f, (x0, v0), t, rtol=1e-10, atol=1e-12)
    g1 = rtx.autograd.grad(xs.sum() + (vs ** 2).sum(), [x0, w])
    xs, vs = odeint_adjoint(f, (x0, v0), t, rtol=1e-10, atol=1e-12, adjoint_params=(w,))
    g2 = rtx.autograd.grad(xs.sum() + (vs ** 2).sum(), [x0, w])
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="adjoint_params"):
        odeint_adjoint(f, (x0, v0), t)


def _peak_bytes(fn, n_steps):
    rtx.manual_seed(0)
    func = ODEFunc(dim=32, hidden=64).to(F64)
    y0 = rtx.randn(16, 32, dtype=F64, requires_grad=True)
    gc.collect()
    tracemalloc.start()
    y = fn(func, y0, T([0.0, 1.0]), method="rk4", options={"step_size": 1.0 / n_steps})
    y[-1].sum().backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_adjoint_memory_is_flat_in_the_number_of_steps():
    # The adjoint's peak is measured from 100 steps up: below that it still grows by fixed-size pools and caches
    # filling (20 -> 100 steps: +160 kB; 100 -> 500: +16 kB), which made a 20-vs-200 comparison sit at the
    # threshold and fail when unrelated changes shrank the 20-step peak.
    adj_small, adj_big = _peak_bytes(odeint_adjoint, 100), _peak_bytes(odeint_adjoint, 500)
    bp_small, bp_big = _peak_bytes(odeint, 20), _peak_bytes(odeint, 200)
    assert bp_big > 5 * bp_small, (bp_small, bp_big)  # backprop keeps every stage: the check can fail
    assert adj_big < 1.2 * adj_small, (adj_small, adj_big)  # 5x the steps, not 5x the memory
    assert adj_big < bp_big / 5


def test_odeint_event_bouncing_ball_time_and_gradient():
    g = 9.81
    h0 = T(2.0).requires_grad_(True)
    y0 = (h0.reshape(1), T([0.0]))

    def dynamics(t, s):
        return s[1], -g * rtx.ones_like(s[1])

    event_t, (pos, vel) = odeint_event(dynamics, y0, T(0.0), event_fn=lambda t, s: s[0].sum(), rtol=1e-10,
                                       atol=1e-12)
    assert abs(float(event_t) - math.sqrt(2 * 2.0 / g)) < 1e-9
    assert abs(float(pos.sum())) < 1e-9
    assert abs(float(vel.sum()) + math.sqrt(2 * g * 2.0)) < 1e-7
    (dt_dh,) = rtx.autograd.grad(event_t, [h0])
    assert abs(float(dt_dh) - 1 / math.sqrt(2 * g * 2.0)) < 1e-6
    # the adjoint interface gives the same event and gradient
    y0 = (h0.reshape(1), T([0.0]))
    event_t2, _ = odeint_event(dynamics, y0, T(0.0), event_fn=lambda t, s: s[0].sum(), rtol=1e-10, atol=1e-12,
                               odeint_interface=odeint_adjoint, adjoint_params=())
    (dt_dh2,) = rtx.autograd.grad(event_t2, [h0])
    assert abs(float(dt_dh2) - float(dt_dh)) < 1e-8
