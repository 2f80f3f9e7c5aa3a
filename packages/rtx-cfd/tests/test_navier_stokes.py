"""MAC projection solver: closed forms, divergence, convergence order, Ghia on a coarse grid and
gradients through 20 steps against finite differences (float64)."""
import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck
from rtx.cfd import (
    Grid,
    Inflow,
    NavierStokes2D,
    Outflow,
    Periodic,
    Wall,
    cavity,
    cylinder_mask,
    ghia,
    poiseuille_profile,
)


def test_projection_is_divergence_free_and_idempotent():
    g = Grid(20, 12, 2.0, 1.0)
    s = NavierStokes2D(g, 0.01, {"left": Inflow(poiseuille_profile(g.y)), "right": Outflow()})
    rng = np.random.default_rng(0)
    u = rtx.tensor(rng.normal(size=(12, 21)))
    v = rtx.tensor(rng.normal(size=(13, 20)))
    u, v = s.apply_normal_bc(u, v)
    u1, v1, _ = s.project(u, v, 0.1)
    assert float(s.divergence(u1, v1).abs().max().item()) < 1e-11
    u2, v2, _ = s.project(u1, v1, 0.1)
    np.testing.assert_allclose(u2.numpy(), u1.numpy(), atol=1e-11)
    # inflow faces are untouched by the projection
    np.testing.assert_allclose(u1.numpy()[:, 0], poiseuille_profile(g.y), atol=1e-14)


def test_couette_is_exact():
    # Periodic in x, bottom at rest, top moving: the linear profile u = y is the exact steady state
    # of the scheme (second differences of a linear function vanish; the ghost cells are exact).
    g = Grid(4, 10)
    s = NavierStokes2D(g, 0.5, {"left": Periodic(), "right": Periodic(), "top": Wall(1.0)})
    with rtx.no_grad():
        st = s.run(tol=1e-10, check_every=20)
    np.testing.assert_allclose(st.u.numpy(), np.broadcast_to(g.y[:, None], (10, 5)), atol=1e-8)
    assert float(st.v.abs().max().item()) < 1e-12


def test_poiseuille_second_order():
    # Pressure-gradient (body-force) driven channel, periodic in x: u = G/(2 nu) y (1 - y).
    errors = []
    nu, G = 0.1, 1.0
    for ny in (5, 10, 20):
        g = Grid(2, ny, 1.0, 1.0)
        s = NavierStokes2D(g, nu, {"left": Periodic(), "right": Periodic()}, force=(G, 0.0))
        with rtx.no_grad():
            st = s.run(tol=1e-6, check_every=100)
        exact = G / (2 * nu) * g.y * (1 - g.y)
        errors.append(np.abs(st.u.numpy()[:, 0] - exact).max())
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(order > 1.9), (errors, order)


def test_channel_keeps_the_poiseuille_profile():
    from rtx.cfd import channel
    f = channel(50, nx=24, ny=8, length=3.0, tol=1e-7)
    u = f.u.numpy()
    # the profile stays what came in, up to the wall discretisation error
    # (the inflow is the continuous parabola; the outlet relaxes to the discrete one, O(h^2) away)
    assert np.abs(u[:, -1] - poiseuille_profile(f.y)).max() < 0.015
    assert float(np.abs(f.v.numpy()).max()) < 0.01


def test_taylor_green_on_mac_grid_second_order():
    nu, t_end = 0.05, 0.5
    errors = []
    for n in (16, 32, 64):
        L = 2 * np.pi
        g = Grid(n, n, L, L)
        s = NavierStokes2D(g, nu, {"left": Periodic(), "right": Periodic(), "bottom": Periodic(), "top": Periodic()})
        xf, yc = np.meshgrid(g.xf, g.y)
        xc, yf = np.meshgrid(g.x, g.yf)
        u0 = rtx.tensor(np.sin(xf) * np.cos(yc))
        v0 = rtx.tensor(-np.cos(xc) * np.sin(yf))
        with rtx.no_grad():
            st = s.run(s.initial_state(u0, v0), t_end=t_end, dt=0.2 * g.dx ** 2 / nu / 4)
        exact = np.sin(xf) * np.cos(yc) * np.exp(-2 * nu * t_end)
        errors.append(np.abs(st.u.numpy() - exact).max())
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(order > 1.8), (errors, order)


def test_coarse_cavity_against_ghia():
    f = cavity(100, n=33, tol=1e-4)
    d = ghia.compare(f, 100)
    assert f.stats["converged"]
    assert d["max_dev"] < 0.03, d
    u, v = f.u.numpy(), f.v.numpy()
    assert float(abs(NavierStokes2D(Grid(32, 32), 0.01).divergence(
        rtx.tensor(np.zeros((32, 33))), rtx.tensor(np.zeros((33, 32)))).max().item())) == 0.0
    assert u.shape == v.shape == (32, 32)


@pytest.mark.parametrize("solver", ["capacitance", "pcg"])
def test_obstacle_pcg_divergence_free_and_zero_inside(solver):
    g = Grid(32, 16, 4.0, 2.0)
    mask = cylinder_mask(g, (1.0, 1.0), 0.5)
    s = NavierStokes2D(g, 0.02, {"left": Inflow(1.0), "right": Outflow(), "bottom": Wall(slip=True),
                                 "top": Wall(slip=True)}, obstacle=mask, obstacle_solver=solver)
    with rtx.no_grad():
        st = s.run(steps=20, dt=0.01)
    assert float(s.divergence(st.u, st.v).abs().max().item()) < (1e-11 if solver == "capacitance" else 1e-7)
    assert float((st.u * (1 - s.fluid_u)).abs().max().item()) == 0.0
    assert float((st.v * (1 - s.fluid_v)).abs().max().item()) == 0.0
    if solver == "pcg":
        assert 0 < s.stats["pcg_iterations"] < 200


def test_capacitance_solve_is_the_masked_inverse():
    # The direct obstacle solve against a dense solve of the same masked operator (built column by
    # column from _masked_laplacian), and against tight PCG.
    g = Grid(12, 8, 3.0, 2.0)
    mask = cylinder_mask(g, (1.0, 1.0), 0.7)
    bcs = {"left": Inflow(1.0), "right": Outflow(), "bottom": Wall(slip=True), "top": Wall(slip=True)}
    s = NavierStokes2D(g, 0.02, bcs, obstacle=mask)
    eye = np.eye(g.nx * g.ny)
    a = np.stack([s._masked_laplacian(rtx.tensor(e.reshape(g.ny, g.nx))).numpy().ravel() for e in eye], axis=1)
    rhs = np.random.default_rng(1).normal(size=(g.ny, g.nx))
    dense = np.linalg.solve(a, (rhs * ~mask).ravel()).reshape(g.ny, g.nx)
    x = rtx.tensor(rhs, requires_grad=True)
    p = s._masked_solve(x, None)
    np.testing.assert_allclose(p.detach().numpy(), dense, atol=1e-11)
    pcg = NavierStokes2D(g, 0.02, bcs, obstacle=mask, obstacle_solver="pcg", pcg_tol=1e-14)
    np.testing.assert_allclose(pcg._masked_solve(rtx.tensor(rhs), None).numpy(), dense, atol=1e-9)
    # differentiable: d(sum p w)/d rhs = A^-T (w * fluid)
    w = np.random.default_rng(2).normal(size=(g.ny, g.nx))
    (p * rtx.tensor(w)).sum().backward()
    want = (np.linalg.solve(a.T, w.ravel()).reshape(g.ny, g.nx)) * ~mask
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-10)


def _cavity_loss(nu, lid, du0=None, steps=20, checkpoint_every=0):
    g = Grid(6, 6)
    s = NavierStokes2D(g, nu, {"top": Wall(lid)})
    st = s.initial_state()
    if du0 is not None:
        st = s.initial_state(st.u + du0, st.v)
    st = s.run(st, steps=steps, dt=0.02, checkpoint_every=checkpoint_every)
    w = rtx.tensor(np.random.default_rng(3).normal(size=(6, 7)))
    return (st.u * w).sum() + (st.v * st.v).sum()


def test_gradients_through_20_steps_match_finite_differences():
    nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
    lid = rtx.tensor(1.0, dtype=rtx.float64, requires_grad=True)
    assert gradcheck(lambda a, b: _cavity_loss(a, b), (nu, lid), eps=1e-6, atol=1e-6, rtol=1e-5)
    du = rtx.tensor(0.1 * np.random.default_rng(4).normal(size=(6, 7)), requires_grad=True)
    assert gradcheck(lambda d: _cavity_loss(0.05, 1.0, d), (du,), eps=1e-6, atol=1e-6, rtol=1e-5)


def test_checkpointed_run_gives_the_same_gradients():
    grads = []
    for k in (0, 5):
        nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
        lid = rtx.tensor(1.0, dtype=rtx.float64, requires_grad=True)
        _cavity_loss(nu, lid, checkpoint_every=k).backward()
        grads.append((nu.grad.item(), lid.grad.item()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="Periodic must be set on both"):
        NavierStokes2D(Grid(4, 4), 0.1, {"left": Periodic()})
    with pytest.raises(ValueError, match="advection"):
        NavierStokes2D(Grid(4, 4), 0.1, advection="cubic")
    s = NavierStokes2D(Grid(4, 4), 0.1)
    with pytest.raises(ValueError, match=r"initial u must be \(ny, nx \+ 1\)"):
        s.initial_state(rtx.zeros(4, 4, dtype=rtx.float64))
