"""Convenience cases, each returning a Flow2D (solver statistics in flow.stats)."""
from __future__ import annotations

import numpy as np

import rtx

from .grid import Grid, Inflow, Outflow, Wall
from .navier_stokes import NavierStokes2D
from .spectral import Spectral2D, taylor_green_vorticity


def cavity(re, n=129, tol=1e-6, lid_velocity=1.0, *, advection="central", time_scheme="ab2cn", max_steps=10 ** 7,
           check_every=50, cfl=None, device=None):
    """Lid-driven cavity on the unit square: n grid lines per side (n - 1 cells, as Ghia et al.'s
    129-point grid), lid (top) moving with lid_velocity, nu = lid_velocity / re; run to a steady
    residual max |du/dt| < tol * lid_velocity. time_scheme 'ab2cn' (default, cfl 1.0 of the advective
    limit) or 'euler' (cfl 0.9 of the explicit limits)."""
    if n < 3:
        raise ValueError(f"cavity needs n >= 3 grid lines, got {n}")
    cfl = cfl if cfl is not None else (1.0 if time_scheme == "ab2cn" else 0.9)
    solver = NavierStokes2D(Grid(n - 1, n - 1), lid_velocity / re, {"top": Wall(lid_velocity)},
                            advection=advection, time_scheme=time_scheme, device=device)
    with rtx.no_grad():
        state = solver.run(tol=tol * lid_velocity, check_every=check_every, max_steps=max_steps, cfl=cfl)
    flow = solver.to_flow(state)
    flow.stats.update(re=re, n=n, converged=solver.stats["residual"] < tol * lid_velocity)
    return flow


def poiseuille_profile(y, height=1.0, mean=1.0):
    """Fully developed channel profile with the given mean velocity: 6 mean y (h - y) / h^2."""
    y = np.asarray(y, dtype=np.float64)
    return 6.0 * mean * y * (height - y) / height ** 2


def channel(re, nx=64, ny=16, length=4.0, tol=1e-6, *, inflow=None, max_steps=10 ** 6, device=None):
    """Channel of height 1 and the given length: inflow on the left (default: the Poiseuille profile
    with mean 1), outflow on the right, no-slip walls; nu = 1 / re; run to steady state."""
    grid = Grid(nx, ny, length, 1.0)
    prof = poiseuille_profile(grid.y) if inflow is None else inflow
    solver = NavierStokes2D(grid, 1.0 / re, {"left": Inflow(prof), "right": Outflow()}, device=device)
    with rtx.no_grad():
        state = solver.run(tol=tol, max_steps=max_steps)
    flow = solver.to_flow(state)
    flow.stats.update(re=re)
    return flow


def cylinder_mask(grid, center, diameter):
    """Boolean (ny, nx) mask of the cells whose centre lies inside the circle."""
    x, y = np.meshgrid(grid.x, grid.y)
    return (x - center[0]) ** 2 + (y - center[1]) ** 2 <= (diameter / 2) ** 2


def cylinder(re, *, diameter=1.0, length=24.0, height=16.0, cells_per_d=12, t_end=150.0, center=None,
             probe=None, cfl=0.5, advection="central", time_scheme="ab2cn", device=None, callback=None):
    """Uniform flow (speed 1) past a circular cylinder of the given diameter in a channel with
    free-slip sides, outflow on the right; nu = diameter / re. The cylinder sits slightly off the
    centre line so that shedding starts without a perturbation; by default a third of the way down
    the channel (8 D behind the inflow, blockage D / height = 1/16: with 4 D and 1/8 the Strouhal
    number came out 0.184-0.189 instead of 0.17). Returns the final Flow2D with
    stats['strouhal'] (f D / U from the cross-stream velocity at a probe in the wake, over the last
    half of the run) and the probe signal."""
    nx, ny = int(round(length / diameter * cells_per_d)), int(round(height / diameter * cells_per_d))
    grid = Grid(nx, ny, length, height)
    center = center if center is not None else (length / 3, height / 2 + 0.05 * diameter)
    probe = probe if probe is not None else (center[0] + 3 * diameter, height / 2)
    solver = NavierStokes2D(grid, diameter / re,
                            {"left": Inflow(1.0), "right": Outflow(), "bottom": Wall(slip=True),
                             "top": Wall(slip=True)},
                            advection=advection, time_scheme=time_scheme,
                            obstacle=cylinder_mask(grid, center, diameter),
                            device=device)
    j = int(np.clip(np.searchsorted(grid.yf, probe[1]), 0, ny))
    i = int(np.clip(np.searchsorted(grid.x, probe[0]), 0, nx - 1))
    times, signal = [], []

    def record(n, state):
        times.append(state.t)
        signal.append(float(state.v[j, i].item()))
        if callback is not None:
            callback(n, state)

    with rtx.no_grad():
        state = solver.run(t_end=t_end, cfl=cfl, callback=record)
    flow = solver.to_flow(state)
    t, s = np.asarray(times), np.asarray(signal)
    flow.stats.update(re=re, strouhal=strouhal(t, s, diameter, 1.0), probe_t=t, probe_v=s)
    return flow


def strouhal(t, signal, diameter=1.0, velocity=1.0, start_fraction=0.5):
    """f D / U from the mean period between upward zero crossings of the de-meaned signal over the
    last (1 - start_fraction) of the record (NaN if fewer than three crossings)."""
    t, s = np.asarray(t), np.asarray(signal)
    keep = t >= t[0] + start_fraction * (t[-1] - t[0])
    t, s = t[keep], s[keep] - s[keep].mean()
    up = np.nonzero((s[:-1] < 0) & (s[1:] >= 0))[0]
    if len(up) < 3:
        return float("nan")
    tc = t[up] - s[up] * (t[up + 1] - t[up]) / (s[up + 1] - s[up])
    return float(diameter / velocity / np.mean(np.diff(tc)))


def taylor_green(nu, n=64, t_end=1.0, dt=None, device=None):
    """The 2D Taylor-Green vortex u = sin x cos y e^{-2 nu t}, v = -cos x sin y e^{-2 nu t} on
    [0, 2 pi)^2, solved pseudo-spectrally from t = 0 to t_end."""
    solver = Spectral2D(n, nu, device=device)
    w = solver.run(taylor_green_vorticity(n), t_end, dt=dt)
    return solver.to_flow(w, t_end)
