"""rtx.cfd against plain NumPy implementations of the same schemes (issue 19).

    python tools/bench/cfd.py                 # cavity Re=100 on 129x129 to 1e-6, LBM MLUPS
    python tools/bench/cfd.py --quick         # 65x65 cavity to 1e-4, shorter LBM run
    python tools/bench/cfd.py --quick --repeat 5

Each case runs --repeat times, rtx and NumPy alternating, and the best time of each is reported
(the box is shared: alternating keeps a load change from landing on one side only); the cavity
also reports the best process CPU time of each side, which the load moves much less.

The NumPy cavity below is the same scheme as rtx.cfd.NavierStokes2D (MAC grid, central advection in
conservative form, explicit Euler, fast-diagonalisation Poisson solve, the same time step and
residual), written on raw arrays. Both run in this one process, under the same allocator state:
once rtx.cfd's raw path has run, glibc keeps freed blocks in its heap (rtx's malloc policy,
rtx.runtime.threads.keep_freed_memory) instead of returning and re-faulting them every step, which
speeds up the NumPy loop a little too (~80 page faults per step at 129x129 without it, rtx ~400).
The NumPy D2Q9 loop is the same BGK / moving-wall bounce-back update as rtx.cfd.LBM2D.
Ratio = rtx time / NumPy time (goal <= 1.2). BLAS runs on one thread."""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def numpy_cavity(n_cells, re, tol, cfl=0.9, check_every=50):
    n, h, nu = n_cells, 1.0 / n_cells, 1.0 / re
    lap = np.diag(np.full(n, -2.0)) + np.diag(np.ones(n - 1), 1) + np.diag(np.ones(n - 1), -1)
    lap[0, 0] = lap[-1, -1] = -1.0
    lam, q = np.linalg.eigh(lap / h ** 2)
    ev = lam[:, None] + lam[None, :]
    inv = np.where(np.abs(ev) > 1e-10 * np.abs(ev).max(), 1.0 / np.where(ev == 0, 1, ev), 0.0)
    qt = q.T.copy()
    u, v = np.zeros((n, n + 1)), np.zeros((n + 1, n))
    t, steps, res = 0.0, 0, np.inf
    while True:
        if steps % check_every == 0:
            umax, vmax = max(np.abs(u).max(), 1.0), max(np.abs(v).max(), 1e-12)
            dt = cfl * min(h / umax, h / vmax, 0.5 / (nu * 2 / h ** 2), 2 * nu / (umax ** 2 + vmax ** 2))
        U = np.empty((n + 2, n + 3))
        U[1:-1, 1:-1] = u
        U[1:-1, 0], U[1:-1, -1] = u[:, 0], u[:, -1]
        U[0], U[-1] = -U[1], 2.0 - U[-2]
        V = np.empty((n + 3, n + 2))
        V[1:-1, 1:-1] = v
        V[0, 1:-1], V[-1, 1:-1] = v[0], v[-1]
        V[:, 0], V[:, -1] = -V[:, 1], -V[:, -2]
        uc = 0.5 * (U[1:-1, :-1] + U[1:-1, 1:])
        uv = 0.25 * (U[:-1, 1:-1] + U[1:, 1:-1]) * (V[1:-1, :-1] + V[1:-1, 1:])
        vc = 0.5 * (V[:-1, 1:-1] + V[1:, 1:-1])
        Uc, Vc = U[1:-1, 1:-1], V[1:-1, 1:-1]
        lu = (U[1:-1, 2:] + U[1:-1, :-2] + U[2:, 1:-1] + U[:-2, 1:-1] - 4 * Uc) / h ** 2
        lv = (V[1:-1, 2:] + V[1:-1, :-2] + V[2:, 1:-1] + V[:-2, 1:-1] - 4 * Vc) / h ** 2
        us = u + dt * (nu * lu - np.diff(uc * uc, axis=1) / h - np.diff(uv, axis=0) / h)
        vs = v + dt * (nu * lv - np.diff(uv, axis=1) / h - np.diff(vc * vc, axis=0) / h)
        us[:, 0] = us[:, -1] = 0.0
        vs[0] = vs[-1] = 0.0
        rhs = (np.diff(us, axis=1) + np.diff(vs, axis=0)) / h / dt
        p = q @ ((qt @ rhs @ q) * inv) @ qt
        un, vn = us.copy(), vs.copy()
        un[:, 1:-1] -= dt * np.diff(p, axis=1) / h
        vn[1:-1] -= dt * np.diff(p, axis=0) / h
        steps += 1
        if steps % check_every == 0:
            res = max(np.abs(un - u).max(), np.abs(vn - v).max()) / dt
        u, v, t = un, vn, t + dt
        if res < tol:
            return u, v, steps


C = np.array([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [1, 1], [-1, 1], [-1, -1], [1, -1]])
W = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)
OPP = np.array([0, 3, 4, 1, 2, 7, 8, 5, 6])


def numpy_lbm(n, tau, lid, steps):
    shape = (n + 2, n + 2)
    solid = np.zeros(shape, bool)
    solid[0], solid[-1], solid[:, 0], solid[:, -1] = True, True, True, True
    fluid = ~solid
    src = np.stack([np.roll(solid, (C[i, 1], C[i, 0]), axis=(0, 1)) for i in range(9)]) & fluid[None]
    uw = np.zeros(shape)
    uw[-1] = lid
    uw = uw * solid
    wall = 6 * W[:, None, None] * C[:, 0, None, None] * np.stack(
        [np.roll(uw, (C[i, 1], C[i, 0]), axis=(0, 1)) for i in range(9)]) * src
    cx, cy, w = C[:, 0, None, None], C[:, 1, None, None], W[:, None, None]
    f = w * np.ones(shape)
    for _ in range(steps):
        rho = f.sum(0)
        ux, uy = (f * cx).sum(0) / rho, (f * cy).sum(0) / rho
        cu = cx * ux + cy * uy
        feq = w * rho * (1 + 3 * cu + 4.5 * cu ** 2 - 1.5 * (ux ** 2 + uy ** 2))
        post = f - (f - feq) / tau
        streamed = np.stack([np.roll(post[i], (C[i, 1], C[i, 0]), axis=(0, 1)) for i in range(9)])
        f = np.where(src, post[OPP] + wall * rho, streamed)
        f = f * fluid + w * solid
    return f


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=None, help="runs per side (default 3 with --quick, else 1)")
    args = p.parse_args()
    import rtx
    import rtx.cfd as cfd

    rtx.set_num_threads(1)
    repeat = args.repeat or (3 if args.quick else 1)
    n, tol = (65, 1e-4) if args.quick else (129, 1e-6)
    # Wall time and this process's CPU time, best of each: on a shared box the wall time of a run
    # swings with the load by 2x; the CPU time (one thread) much less.
    t_rtx = t_np = c_rtx = c_np = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        flow = cfd.cavity(100, n=n, tol=tol, time_scheme="euler")  # the scheme numpy_cavity implements
        t_rtx, c_rtx = min(t_rtx, time.perf_counter() - t0), min(c_rtx, time.process_time() - c0)
        t0, c0 = time.perf_counter(), time.process_time()
        u, v, steps = numpy_cavity(n - 1, 100, tol)
        t_np, c_np = min(t_np, time.perf_counter() - t0), min(c_np, time.process_time() - c0)
    un = (flow.u.numpy(), flow.v.numpy())
    same = max(np.abs(un[0] - 0.5 * (u[:, :-1] + u[:, 1:])).max(), np.abs(un[1] - 0.5 * (v[:-1] + v[1:])).max())
    dev = cfd.ghia.compare(flow, 100)["max_dev"]
    print(f"cavity Re=100 {n}x{n} to {tol:g}: rtx {flow.stats['steps']} steps {t_rtx:.1f} s "
          f"({t_rtx / flow.stats['steps'] * 1e3:.2f} ms/step); NumPy {steps} steps {t_np:.1f} s "
          f"({t_np / steps * 1e3:.2f} ms/step); ratio {t_rtx / t_np:.2f}; Ghia deviation {dev:.4f}; "
          f"max |rtx - NumPy| {same:.1e}")
    print(f"  CPU time: rtx {c_rtx:.1f} s ({c_rtx / flow.stats['steps'] * 1e3:.2f} ms/step); NumPy {c_np:.1f} s "
          f"({c_np / steps * 1e3:.2f} ms/step); ratio {c_rtx / c_np:.2f}")
    n_lbm, steps = (64, 500) if args.quick else (128, 2000)
    sim = cfd.LBM2D((n_lbm + 2, n_lbm + 2), 0.6, solid=np.pad(np.zeros((n_lbm, n_lbm), bool), 1, constant_values=True),
                    wall_velocity=(np.pad(np.zeros((n_lbm + 1, n_lbm + 2)), ((0, 1), (0, 0)), constant_values=0.1),
                                   np.zeros((n_lbm + 2, n_lbm + 2))))
    mlups_rtx = mlups_np = 0.0
    for _ in range(repeat):
        with rtx.no_grad():
            sim.run(steps=steps)
        mlups_rtx = max(mlups_rtx, sim.stats["mlups"])
        t0 = time.perf_counter()
        numpy_lbm(n_lbm, 0.6, 0.1, steps)
        mlups_np = max(mlups_np, n_lbm * n_lbm * steps / (time.perf_counter() - t0) / 1e6)
    print(f"LBM D2Q9 cavity {n_lbm}x{n_lbm}, {steps} steps: rtx {mlups_rtx:.2f} MLUPS, NumPy {mlups_np:.2f} MLUPS, "
          f"ratio (time) {mlups_np / mlups_rtx:.2f}")


if __name__ == "__main__":
    main()
