"""Semi-implicit AB2/CN time stepping and QUICK / second-order upwind advection: temporal order on
Taylor-Green, spatial order, the Re = 100 cavity answer unchanged, gradients through the implicit
solves against finite differences (float64)."""
import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck
from rtx.cfd import Grid, Inflow, NavierStokes2D, Outflow, Periodic, Wall, cavity, ghia

PERIODIC = {k: Periodic() for k in ("left", "right", "bottom", "top")}


def _taylor_green(n, dt, scheme, advection="central", nu=0.05, t_end=0.5):
    g = Grid(n, n, 2 * np.pi, 2 * np.pi)
    s = NavierStokes2D(g, nu, PERIODIC, time_scheme=scheme, advection=advection)
    xf, yc = np.meshgrid(g.xf, g.y)
    xc, yf = np.meshgrid(g.x, g.yf)
    with rtx.no_grad():
        st = s.run(s.initial_state(rtx.tensor(np.sin(xf) * np.cos(yc)), rtx.tensor(-np.cos(xc) * np.sin(yf))),
                   t_end=t_end, dt=dt)
    return st.u.numpy(), np.sin(xf) * np.cos(yc) * np.exp(-2 * nu * t_end)


@pytest.mark.parametrize("scheme, order", [("euler", 1.0), ("ab2cn", 2.0)])
def test_temporal_order_on_taylor_green(scheme, order):
    # Same grid, shrinking dt, against a 16x finer-in-time run of the same discretisation: isolates
    # the time error (periodic: projection and Laplacian commute, so AB2/CN stays second order).
    ref, _ = _taylor_green(16, 0.5 / 256, scheme)
    errors = [np.abs(_taylor_green(16, 0.5 / m, scheme)[0] - ref).max() for m in (8, 16, 32)]
    measured = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(measured - order) < 0.15), (errors, measured)


@pytest.mark.parametrize("advection", ["quick", "sou"])
def test_upwind_biased_advection_is_second_order_in_space(advection):
    errors = [np.abs(np.subtract(*_taylor_green(n, 0.005, "ab2cn", advection))).max() for n in (16, 32, 64)]
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(order > 1.9), (errors, order)


def test_ab2cn_cavity_gives_the_euler_answer_with_fewer_steps():
    e = cavity(100, n=33, tol=1e-5, time_scheme="euler")
    s = cavity(100, n=33, tol=1e-5, time_scheme="ab2cn")
    assert e.stats["converged"] and s.stats["converged"]
    # the same steady discrete solution (up to the residual tolerance), within Ghia's bar
    np.testing.assert_allclose(s.u.numpy(), e.u.numpy(), atol=2e-4)
    np.testing.assert_allclose(s.v.numpy(), e.v.numpy(), atol=2e-4)
    assert ghia.compare(s, 100)["max_dev"] < 0.03
    q = cavity(100, n=33, tol=1e-4, advection="quick")
    assert ghia.compare(q, 100)["max_dev"] < 0.03


def _loss(nu, lid, scheme="ab2cn", checkpoint_every=0, advection="quick"):
    s = NavierStokes2D(Grid(6, 6), nu, {"top": Wall(lid)}, time_scheme=scheme, advection=advection)
    st = s.run(steps=20, dt=0.05, checkpoint_every=checkpoint_every)
    w = rtx.tensor(np.random.default_rng(5).normal(size=(6, 7)))
    return (st.u * w).sum() + (st.v * st.v).sum()


def test_gradients_through_20_ab2cn_steps_match_finite_differences():
    nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
    lid = rtx.tensor(1.0, dtype=rtx.float64, requires_grad=True)
    assert gradcheck(lambda a, b: _loss(a, b), (nu, lid), eps=1e-6, atol=1e-6, rtol=1e-5)
    grads = []
    for k in (0, 5):
        nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
        _loss(nu, 1.0, checkpoint_every=k).backward()
        grads.append(nu.grad.item())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_ab2cn_steady_state_around_an_obstacle_does_not_depend_on_dt():
    # The Crank-Nicolson solve runs on the whole box with a zero right-hand side on the solid faces,
    # so a steady state is exactly the masked one whatever dt. Solving with the solid faces' own
    # right-hand side and zeroing them afterwards (the previous way) moved the steady state by
    # O(dt nu / h^2) next to the obstacle: 0.02 between these two step sizes.
    g = Grid(24, 12, 4.0, 2.0)
    mask = np.zeros((12, 24), bool)
    mask[5:8, 6:9] = True
    bcs = {"left": Inflow(1.0), "right": Outflow()}
    runs = []
    for cfl in (0.5, 1.0):
        s = NavierStokes2D(g, 0.1, bcs, obstacle=mask, time_scheme="ab2cn")
        with rtx.no_grad():
            runs.append(s.run(tol=1e-9, cfl=cfl))
        assert s.stats["residual"] < 1e-9
    np.testing.assert_allclose(runs[0].u.numpy(), runs[1].u.numpy(), atol=1e-8)
    np.testing.assert_allclose(runs[0].v.numpy(), runs[1].v.numpy(), atol=1e-8)


def test_bad_time_scheme():
    with pytest.raises(ValueError, match="time_scheme must be one of"):
        NavierStokes2D(Grid(4, 4), 0.1, time_scheme="rk4")
