"""Every solver reports its steps and time per step; checkpointing over time steps keeps the memory a
backward pass needs bounded (independent of the number of steps)."""
import gc
import time
import tracemalloc

import numpy as np
import pytest

import rtx
from rtx.cfd import (
    LBM2D,
    Grid,
    NavierStokes2D,
    Spectral2D,
    Spectral3D,
    Wall,
    advection_diffusion_fv,
    advection_diffusion_spectral,
    burgers_fv,
    burgers_spectral,
    cavity,
    taylor_green,
)
from rtx.cfd.spectral import taylor_green_3d, taylor_green_vorticity


def check(stats, steps, outside):
    """The report counts the steps taken and times them inside the caller's own clock."""
    assert stats["steps"] == steps
    assert 0 < stats["wall_time"] <= outside
    np.testing.assert_allclose(stats["time_per_step"], stats["wall_time"] / steps, rtol=1e-12)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def test_every_solver_reports_time_per_step():
    x = (np.arange(32) + 0.5) / 32
    u0 = np.sin(2 * np.pi * x)
    for solve, steps in ((lambda s: burgers_fv(u0, 0.01, 0.1, dt=0.01, stats=s), 10),
                         (lambda s: advection_diffusion_fv(u0, 1.0, 0.01, 0.1, dt=0.02, stats=s), 5),
                         (lambda s: burgers_spectral(u0, 0.01, 0.1, dt=0.025, stats=s), 4),
                         (lambda s: advection_diffusion_spectral(u0, 1.0, 0.01, 0.1, stats=s), 1)):
        stats, t0 = {}, time.perf_counter()
        solve(stats)
        check(stats, steps, time.perf_counter() - t0)
    burgers_fv(u0, 0.01, 0.1, dt=0.01)  # stats is optional

    ns = NavierStokes2D(Grid(8, 8), 0.1, {"top": Wall(1.0)})
    _, outside = timed(lambda: ns.run(steps=7, dt=0.01))
    check(ns.stats, 7, outside)
    flow, outside = timed(lambda: cavity(100, n=9, tol=1e-2))
    check(flow.stats, flow.stats["steps"], outside)

    s2 = Spectral2D(16, 0.1)
    _, outside = timed(lambda: s2.run(taylor_green_vorticity(16), 0.1, dt=0.02))
    check(s2.stats, 5, outside)
    flow, outside = timed(lambda: taylor_green(0.1, n=16, t_end=0.1, dt=0.05))
    check(flow.stats, 2, outside)
    s3 = Spectral3D(8, 0.1)
    _, outside = timed(lambda: s3.run(taylor_green_3d(8), 0.1, 0.05))
    check(s3.stats, 2, outside)

    lbm = LBM2D((6, 6), 0.8, force=(1e-5, 0.0))
    with rtx.no_grad():
        _, outside = timed(lambda: lbm.run(steps=9))
    check(lbm.stats, 9, outside)
    assert lbm.stats["mlups"] == pytest.approx(36 * 9 / lbm.stats["wall_time"] / 1e6)


def _held_for_backward(checkpoint_every, steps, n=16):
    """Bytes the autograd graph keeps alive between the forward run and backward (NumPy's buffers are
    traced by tracemalloc), the peak through backward, and d(loss)/d(nu)."""
    nu = rtx.tensor(0.05, dtype=rtx.float64, requires_grad=True)
    solver = NavierStokes2D(Grid(n, n), nu, {"top": Wall(1.0)})
    state = solver.initial_state()
    gc.collect()
    tracemalloc.start()
    try:
        out = solver.run(state, steps=steps, dt=0.005, checkpoint_every=checkpoint_every)
        loss = (out.u * out.u).sum()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        loss.backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return held, peak, nu.grad.item()


def test_checkpointing_over_time_steps_bounds_memory():
    held_40, _, g_40 = _held_for_backward(0, 40)
    held_80, _, g_80 = _held_for_backward(0, 80)
    assert held_80 > 1.7 * held_40  # the plain graph grows with the steps ...
    ck_held_40, ck_peak_40, ck_g_40 = _held_for_backward(10, 40)
    ck_held_80, ck_peak_80, ck_g_80 = _held_for_backward(10, 80)
    assert ck_peak_80 < 1.3 * ck_peak_40  # ... the checkpointed one does not, even at its backward peak
    assert ck_peak_80 < 0.3 * held_80 and ck_held_80 < 0.05 * held_80
    np.testing.assert_allclose([ck_g_40, ck_g_80], [g_40, g_80], rtol=1e-10)
