"""Lattice Boltzmann D2Q9 with BGK collisions (Qian, d'Humieres & Lallemand 1992).

Lattice units (dx = dt = 1, c_s^2 = 1/3, nu = (tau - 1/2) / 3). Walls are solid nodes with halfway
bounce-back (Ladd's moving-wall correction for a lid), so a wall lies midway between a solid and a
fluid node; a body force enters by Guo, Zheng & Shi's scheme (2002); the top side may instead be a
Zou & He (1997) velocity boundary. Streaming is periodic (rtx.roll); solid nodes stop it where
needed. Every step is rtx ops on a (9, ny, nx) tensor."""
from __future__ import annotations

import time

import numpy as np

import rtx

from .flow import Flow2D

C = np.array([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [1, 1], [-1, 1], [-1, -1], [1, -1]])
W = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)
OPP = np.array([0, 3, 4, 1, 2, 7, 8, 5, 6])


class LBM2D:
    """D2Q9 BGK on an (ny, nx) lattice.

    solid: (ny, nx) boolean mask of wall nodes (None: fully periodic). wall_velocity: (ux, uy) arrays
    of shape (ny, nx) giving the velocity of each solid node (moving walls), or None. force: (fx, fy)
    body force per unit volume. zou_he_top: (ux, uy) imposes that velocity on the top row of nodes by
    Zou & He's non-equilibrium bounce-back instead of a solid lid."""

    def __init__(self, shape, tau, *, solid=None, wall_velocity=None, force=None, zou_he_top=None,
                 dtype=rtx.float64, device=None):
        self.ny, self.nx = shape
        if tau <= 0.5:
            raise ValueError(f"tau must exceed 1/2 (nu = (tau - 1/2) / 3 > 0), got {tau}")
        self.tau, self.dtype, self.device = float(tau), dtype, device
        t = lambda a: rtx.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, device=device)  # noqa: E731
        self.cx, self.cy = t(C[:, 0].reshape(9, 1, 1)), t(C[:, 1].reshape(9, 1, 1))
        self.w = t(W.reshape(9, 1, 1))
        self.solid_np = np.zeros(shape, bool) if solid is None else np.asarray(solid, bool)
        fluid = ~self.solid_np
        self.fluid = t(fluid * 1.0)
        # came_from_solid[i]: the node that streams into x along c_i (x - c_i) is solid.
        src = np.stack([np.roll(self.solid_np, (C[i, 1], C[i, 0]), axis=(0, 1)) for i in range(9)])
        self.bounce = t(src & fluid[None])
        self.keep = t(~(src & fluid[None]) * 1.0)
        self.wall_term = None
        if wall_velocity is not None:
            ux = np.asarray(wall_velocity[0], np.float64) * self.solid_np
            uy = np.asarray(wall_velocity[1], np.float64) * self.solid_np
            rx = np.stack([np.roll(ux, (C[i, 1], C[i, 0]), axis=(0, 1)) for i in range(9)])
            ry = np.stack([np.roll(uy, (C[i, 1], C[i, 0]), axis=(0, 1)) for i in range(9)])
            # Ladd: incoming f_i = f*_opp(i) + 6 w_i rho (c_i . u_wall)
            self.wall_term = t(6 * W[:, None, None] * (C[:, 0, None, None] * rx + C[:, 1, None, None] * ry)
                               * (src & fluid[None]))
        self.force = force
        self.zou_he_top = zou_he_top
        self.stats = {}

    @property
    def nu(self):
        return (self.tau - 0.5) / 3.0

    def equilibrium(self, rho, ux, uy):
        cu = self.cx * ux + self.cy * uy
        return self.w * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * (ux * ux + uy * uy))

    def macroscopic(self, f):
        rho = f.sum(dim=0)
        jx, jy = (f * self.cx).sum(dim=0), (f * self.cy).sum(dim=0)
        if self.force is not None:
            jx, jy = jx + 0.5 * self.force[0], jy + 0.5 * self.force[1]
        return rho, jx / rho, jy / rho

    def initial(self, rho=1.0, ux=0.0, uy=0.0):
        z = rtx.zeros((self.ny, self.nx), dtype=self.dtype, device=self.device)
        return self.equilibrium(z + rho, z + ux, z + uy) * self.fluid + self.w * (1 - self.fluid)

    def step(self, f):
        rho, ux, uy = self.macroscopic(f)
        post = f - (f - self.equilibrium(rho, ux, uy)) / self.tau
        if self.force is not None:
            fx, fy = self.force
            cu = self.cx * ux + self.cy * uy
            post = post + (1 - 0.5 / self.tau) * self.w * (
                3 * ((self.cx - ux) * fx + (self.cy - uy) * fy) + 9 * cu * (self.cx * fx + self.cy * fy))
        streamed = rtx.stack([rtx.roll(post[i], (int(C[i, 1]), int(C[i, 0])), dims=(0, 1)) for i in range(9)])
        bounced = post[OPP]
        if self.wall_term is not None:
            bounced = bounced + self.wall_term * rho
        f = streamed * self.keep + bounced * self.bounce
        if self.zou_he_top is not None:
            f = self._zou_he_top(f)
        return f * self.fluid + self.w * (1 - self.fluid)

    def _zou_he_top(self, f):
        ux, uy = self.zou_he_top
        top = f[:, -1:]
        f0, f1, f2, f3, f5, f6 = top[0], top[1], top[2], top[3], top[5], top[6]
        rho = (f0 + f1 + f3 + 2 * (f2 + f5 + f6)) / (1 + uy)
        f4 = f2 - 2.0 / 3.0 * rho * uy
        f7 = f5 + 0.5 * (f1 - f3) - 0.5 * rho * ux - rho * uy / 6
        f8 = f6 - 0.5 * (f1 - f3) + 0.5 * rho * ux - rho * uy / 6
        top = rtx.stack([f0, f1, f2, f3, f4, f5, f6, f7, f8])
        return rtx.cat([f[:, :-1], top], dim=1)

    def run(self, f=None, *, steps=None, tol=None, check_every=500, max_steps=10 ** 7):
        """Advance `steps` steps, or until max |u^{n+k} - u^n| / k < tol (checked every
        check_every steps). Returns the populations; self.stats has steps, MLUPS and wall time."""
        f = self.initial() if f is None else f
        n, t0, res = 0, time.perf_counter(), float("inf")
        limit = steps if steps is not None else max_steps
        _, ux0, uy0 = self.macroscopic(f)
        while n < limit:
            f = self.step(f)
            n += 1
            if tol is not None and n % check_every == 0:
                _, ux, uy = self.macroscopic(f)
                res = max(float((ux - ux0).abs().max().item()), float((uy - uy0).abs().max().item())) / check_every
                ux0, uy0 = ux, uy
                if res < tol:
                    break
        wall = time.perf_counter() - t0
        fluid_nodes = int((~self.solid_np).sum())
        self.stats = dict(steps=n, wall_time=wall, residual=res, time_per_step=wall / max(n, 1),
                          mlups=fluid_nodes * n / max(wall, 1e-12) / 1e6)
        return f

    def to_flow(self, f, box=None, length=1.0, velocity_scale=1.0, t=0.0, periodic=(False, False)):
        """Flow2D of the fluid nodes inside box = (j0, j1, i0, i1) (default: everything), node
        spacing length / (i1 - i0), velocities divided by velocity_scale, pressure c_s^2 (rho - 1)
        in the same scale."""
        rho, ux, uy = self.macroscopic(f)
        j0, j1, i0, i1 = box if box is not None else (0, self.ny, 0, self.nx)
        h = length / (i1 - i0)
        x = (np.arange(i1 - i0) + 0.5) * h
        y = (np.arange(j1 - j0) + 0.5) * h
        sub = lambda a: a[j0:j1, i0:i1]  # noqa: E731
        return Flow2D(x, y, sub(ux) / velocity_scale, sub(uy) / velocity_scale,
                      sub(rho - 1.0) / 3.0 / velocity_scale ** 2, t, lx=length, ly=h * (j1 - j0),
                      periodic=periodic, stats=dict(self.stats))


def lbm_cavity(re, n=129, lid_velocity=0.1, tol=1e-9, max_steps=200_000, lid="bounce-back", **kw):
    """Lid-driven cavity on n x n fluid nodes (walls halfway outside them); returns a Flow2D on the
    unit square with velocities in units of the lid speed."""
    nu = lid_velocity * n / re
    tau = 3 * nu + 0.5
    ny, nx = n + 2, n + 2
    solid = np.zeros((ny, nx), bool)
    solid[0], solid[:, 0], solid[:, -1] = True, True, True
    if lid == "bounce-back":
        solid[-1] = True
        uwx = np.zeros((ny, nx))
        uwx[-1] = lid_velocity
        sim = LBM2D((ny, nx), tau, solid=solid, wall_velocity=(uwx, np.zeros((ny, nx))), **kw)
        box = (1, n + 1, 1, n + 1)
    elif lid == "zou-he":
        # The extra top row of nodes carries the lid velocity (wet nodes): the lid sits on a node,
        # the other walls halfway between nodes, so the cavity is n wide and n + 1/2 high in lattice
        # units; nu is set from the width and the flow rescaled to the unit square below.
        sim = LBM2D((ny, nx), tau, solid=solid, zou_he_top=(lid_velocity, 0.0), **kw)
        box = (1, n + 1, 1, n + 1)
    else:
        raise ValueError(f"lid must be 'bounce-back' or 'zou-he', got {lid!r}")
    with rtx.no_grad():
        f = sim.run(tol=tol * lid_velocity, max_steps=max_steps)
        flow = sim.to_flow(f, box=box, velocity_scale=lid_velocity)
        if lid == "zou-he":
            y = (np.arange(n) + 0.5) / (n + 0.5)
            flow = Flow2D(flow.x, y, flow.u, flow.v, flow.p, lx=1.0, ly=1.0, stats=flow.stats)
        flow.set_wall_values(u=(0.0, 0.0, 0.0, 1.0))
    flow.stats.update(re=re, tau=tau, lid=lid)
    return flow
