"""The no-grad fast path (the step on raw arrays) against the differentiable path (rtx ops), float64."""
import numpy as np
import pytest

import rtx
from rtx.cfd import Grid, Inflow, NavierStokes2D, Outflow, Periodic, Wall, cylinder_mask


def _cases():
    g = Grid(24, 12, 4.0, 2.0)
    yield "cavity", Grid(10, 8), {"top": Wall(rtx.tensor(1.0, dtype=rtx.float64))}, {}
    yield "channel", g, {"left": Inflow(rtx.tensor(1 + 0.1 * np.sin(g.y), dtype=rtx.float64)),
                         "right": Outflow()}, {"force": (0.3, rtx.tensor(-0.1, dtype=rtx.float64))}
    yield "cylinder", g, {"left": Inflow(1.0), "right": Outflow(), "bottom": Wall(slip=True),
                          "top": Wall(slip=True)}, {"obstacle": cylinder_mask(g, (1.0, 1.05), 0.6)}
    yield "periodic", Grid(8, 8), {"left": Periodic(), "right": Periodic(), "bottom": Periodic(),
                                   "top": Periodic()}, {"closure": lambda u, v: (-0.1 * u, -0.1 * v)}


@pytest.mark.parametrize("time_scheme", ["euler", "ab2cn"])
@pytest.mark.parametrize("advection", ["central", "quick", 0.5])
@pytest.mark.parametrize("case", [c[0] for c in _cases()])
def test_raw_path_equals_autograd_path(case, advection, time_scheme):
    _, grid, bcs, kw = next(c for c in _cases() if c[0] == case)
    nu = rtx.tensor(0.02, dtype=rtx.float64, requires_grad=True)
    s = NavierStokes2D(grid, nu, bcs, advection=advection, time_scheme=time_scheme, **kw)
    rng = np.random.default_rng(0)
    u0 = rtx.tensor(0.3 * rng.normal(size=(grid.ny, grid.nx + 1)))
    v0 = rtx.tensor(0.3 * rng.normal(size=(grid.ny + 1, grid.nx)))
    start = s.initial_state(u0, v0)
    ref = s.run(start, steps=12, dt=0.01)           # nu requires grad: rtx ops, a graph is recorded
    assert ref.u.requires_grad and s.needs_grad(start)
    with rtx.no_grad():
        assert not s.needs_grad(start)
        fast = s.run(start, steps=12, dt=0.01)       # the same formulas on raw arrays
        one = s.step(s.step(start, 0.01), 0.01)
    assert isinstance(fast.u, rtx.Tensor) and not fast.u.requires_grad
    for a, b in ((fast.u, ref.u), (fast.v, ref.v), (fast.p, ref.p)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=0, atol=1e-12)
    two = s.run(start, steps=2, dt=0.01)
    np.testing.assert_allclose(one.u.numpy(), two.u.detach().numpy(), rtol=0, atol=1e-12)


def test_needs_grad():
    g = Grid(6, 6)
    st = NavierStokes2D(g, 0.1).initial_state()
    assert not NavierStokes2D(g, 0.1).needs_grad(st)   # nothing requires grad
    lid = rtx.tensor(1.0, dtype=rtx.float64, requires_grad=True)
    assert NavierStokes2D(g, 0.1, {"top": Wall(lid)}).needs_grad(st)
    u = st.u.detach().requires_grad_(True)
    assert NavierStokes2D(g, 0.1).needs_grad(type(st)(u, st.v, st.p))
    # a plain function may close over tensors that require grad: the graph path, unless no_grad
    s = NavierStokes2D(g, 0.1, closure=lambda u, v: (0.0 * u, 0.0 * v))
    assert s.needs_grad(st)
    with rtx.no_grad():
        assert not s.needs_grad(st)


@pytest.mark.parametrize("time_scheme", ["euler", "ab2cn"])
def test_gradients_through_obstacle_steps_match_finite_differences(time_scheme):
    # The capacitance-matrix pressure solve and the masked Crank-Nicolson right-hand side on the
    # differentiable path: d(loss)/d(nu, inflow speed) through 8 steps past a block, float64.
    from rtx.autograd import gradcheck
    g = Grid(10, 6, 2.5, 1.5)
    mask = np.zeros((6, 10), bool)
    mask[2:4, 3:5] = True
    w = rtx.tensor(np.random.default_rng(7).normal(size=(7, 10)))

    def loss(nu, speed):
        s = NavierStokes2D(g, nu, {"left": Inflow(speed), "right": Outflow()}, obstacle=mask,
                           time_scheme=time_scheme)
        st = s.run(steps=8, dt=0.02)
        return (st.u * st.u).sum() + (st.v * w).sum()

    nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
    speed = rtx.tensor(1.0, dtype=rtx.float64, requires_grad=True)
    assert gradcheck(loss, (nu, speed), eps=1e-6, atol=1e-6, rtol=1e-5)
