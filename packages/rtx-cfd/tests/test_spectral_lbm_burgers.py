"""Pseudo-spectral, lattice Boltzmann and 1D solvers against closed forms and invariants."""
import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck
from rtx.cfd import (
    LBM2D,
    Spectral2D,
    Spectral3D,
    advection_diffusion_fv,
    advection_diffusion_spectral,
    burgers_cole_hopf,
    burgers_fv,
    burgers_spectral,
    decaying_turbulence_vorticity,
    ghia,
    lbm_cavity,
    taylor_green,
    taylor_green_3d,
)


def test_taylor_green_kinetic_energy_decay():
    nu, t = 0.1, 2.0
    f = taylor_green(nu, n=32, t_end=t)
    np.testing.assert_allclose(f.kinetic_energy().item(), 0.25 * np.exp(-4 * nu * t), rtol=1e-12)
    x = f.x
    np.testing.assert_allclose(f.u.numpy(), np.sin(x)[None, :] * np.cos(x)[:, None] * np.exp(-2 * nu * t), atol=1e-12)
    # pressure of Taylor-Green: p = (cos 2x + cos 2y) / 4 e^{-4 nu t}
    p = (np.cos(2 * x)[None, :] + np.cos(2 * x)[:, None]) / 4 * np.exp(-4 * nu * t)
    np.testing.assert_allclose(f.p.numpy(), p, atol=1e-12)


def test_inviscid_spectral_conserves_energy_and_enstrophy():
    # The 2/3-truncated Galerkin system conserves both exactly; RK4 leaves O(dt^4) drift.
    s = Spectral2D(32, 0.0)
    w0 = decaying_turbulence_vorticity(32, seed=1)
    e0 = s.to_flow(rtx.tensor(w0)).kinetic_energy().item()
    w = s.run(w0, 0.5, dt=0.005)
    e1 = s.to_flow(w).kinetic_energy().item()
    # (modes beyond the 2/3 cut-off never change in the inviscid case: they are kept in both sums)
    z0, z1 = (w0 ** 2).mean(), (w ** 2).mean().item()
    assert abs(e1 - e0) / e0 < 1e-7 and abs(z1 - z0) / z0 < 1e-6
    assert np.abs(w.numpy() - w0).max() > 0.1  # it did evolve: the nonlinear term is active


def test_viscous_energy_budget():
    # dE/dt = -2 nu Z with Z = <w^2>/2 (2D, periodic, no forcing), checked by central differences in time.
    nu, n, h = 0.01, 32, 0.01
    s = Spectral2D(n, nu)
    w0 = s.run(decaying_turbulence_vorticity(n, seed=2), 0.1, dt=0.005)
    w_m, w_p = s.run(w0, h, dt=h / 4), None
    w_p = s.run(w_m, h, dt=h / 4)
    e = [s.to_flow(a).kinetic_energy().item() for a in (w0, w_p)]
    dedt = (e[1] - e[0]) / (2 * h)
    z = 0.5 * (w_m ** 2).mean().item()
    np.testing.assert_allclose(dedt, -2 * nu * z, rtol=1e-4)


def test_spectral_3d_taylor_green():
    s = Spectral3D(16, 0.0)
    u0 = taylor_green_3d(16)
    u = s.run(u0, 0.5, 0.05)
    e0, e1 = 0.5 * (u0 ** 2).sum(0).mean(), 0.5 * (u * u).sum(0).mean().item()
    assert abs(e1 - e0) / e0 < 1e-8
    assert np.abs(u.numpy()[2]).max() > 1e-3  # vortex stretching creates w
    uh = [rtx.fft.rfftn(u[i], dim=(-3, -2, -1)) for i in range(3)]
    div = rtx.fft.irfftn(sum(s.ik[i] * uh[i] for i in range(3)), s=(16, 16, 16), dim=(-3, -2, -1))
    assert float(div.abs().max().item()) < 1e-12
    # viscous early-time decay: dE/dt = -nu <|w|^2> = -3 nu E0 ... at t = 0 for this field
    nu = 0.05
    e_small = 0.5 * (Spectral3D(16, nu).run(u0, 1e-3, 1e-3) ** 2).sum(0).mean().item()
    np.testing.assert_allclose((e_small - e0) / 1e-3, -nu * 3 * 2 * e0, rtol=1e-2)


def test_lbm_poiseuille():
    ny, nx, tau, F = 18, 4, 0.8, 1e-6
    solid = np.zeros((ny, nx), bool)
    solid[0] = solid[-1] = True
    sim = LBM2D((ny, nx), tau, solid=solid, force=(F, 0.0))
    with rtx.no_grad():
        f = sim.run(tol=1e-14, check_every=250, max_steps=20000)
    _, ux, uy = sim.macroscopic(f)
    H = ny - 2
    y = np.arange(1, ny - 1) - 0.5  # halfway bounce-back: walls at y = 0 and H in these coordinates
    exact = F / (2 * sim.nu) * y * (H - y)
    assert np.abs(ux.numpy()[1:-1, 0] - exact).max() / exact.max() < 0.01
    assert float(uy.abs().max().item()) < 1e-12


@pytest.mark.parametrize("lid", ["bounce-back", "zou-he"])
def test_lbm_coarse_cavity_against_ghia(lid):
    flow = lbm_cavity(100, n=24, lid_velocity=0.1, tol=1e-6, max_steps=3500, lid=lid)
    d = ghia.compare(flow, 100)
    assert d["max_dev"] < 0.05, d


def test_burgers_spectral_against_cole_hopf():
    nu, t, n = 0.02, 0.3, 128
    x = np.arange(n) / n
    ref = burgers_cole_hopf(x, t, nu, lambda s: -np.cos(2 * np.pi * s) / (2 * np.pi))
    u = burgers_spectral(np.sin(2 * np.pi * x), nu, t, dt=1e-3).numpy()
    assert np.abs(u - ref).max() < 1e-7


def test_burgers_fv_second_order():
    nu, t = 0.02, 0.3
    pot = lambda s: -np.cos(2 * np.pi * s) / (2 * np.pi)  # noqa: E731
    errors = []
    for n in (64, 128, 256):
        xc = (np.arange(n) + 0.5) / n
        avg = (np.cos(2 * np.pi * (xc - 0.5 / n)) - np.cos(2 * np.pi * (xc + 0.5 / n))) / (2 * np.pi / n)
        errors.append(np.abs(burgers_fv(avg, nu, t, limiter=None).numpy() - burgers_cole_hopf(xc, t, nu, pot)).max())
    order = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(order > 1.7), (errors, order)
    # the limited scheme stays close and free of new extrema
    n = 128
    xc = (np.arange(n) + 0.5) / n
    u = burgers_fv(np.sin(2 * np.pi * xc), 0.002, 0.4).numpy()
    assert u.max() <= 1.0 + 1e-12 and u.min() >= -1.0 - 1e-12


def test_advection_diffusion_exact_and_fv():
    n, c, nu, t = 64, 1.0, 0.01, 0.25
    x = np.arange(n) / n
    u0 = np.sin(2 * np.pi * x) + 0.5 * np.cos(4 * np.pi * x)
    exact = (np.exp(-nu * (2 * np.pi) ** 2 * t) * np.sin(2 * np.pi * (x - c * t))
             + 0.5 * np.exp(-nu * (4 * np.pi) ** 2 * t) * np.cos(4 * np.pi * (x - c * t)))
    np.testing.assert_allclose(advection_diffusion_spectral(u0, c, nu, t).numpy(), exact, atol=1e-12)
    xc = (np.arange(n) + 0.5) / n
    ex_c = np.exp(-nu * (2 * np.pi) ** 2 * t) * np.sin(2 * np.pi * (xc - c * t))
    u = advection_diffusion_fv(np.sin(2 * np.pi * xc), c, nu, t, limiter=None).numpy()
    assert np.abs(u - ex_c).max() < 5e-3


def test_gradients_through_fv_and_spectral_steps():
    rng = np.random.default_rng(0)
    u0 = rtx.tensor(np.sin(2 * np.pi * np.arange(16) / 16) + 0.1 * rng.normal(size=16), requires_grad=True)
    nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (burgers_fv(a, b, 0.02, dt=1e-3) ** 2).sum(), (u0, nu), atol=1e-6, rtol=1e-5)
    assert gradcheck(lambda a, b: (burgers_spectral(a, b, 0.02, dt=1e-3) ** 3).sum(), (u0, nu), atol=1e-6, rtol=1e-5)
