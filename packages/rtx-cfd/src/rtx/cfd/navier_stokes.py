"""Incompressible Navier-Stokes in 2D on a staggered (MAC) grid by the projection method.

One step (Chorin's projection; `time_scheme="euler"` is explicit Euler as in Griebel, Dornseifer &
Neunhoeffer's "Numerical Simulation in Fluid Dynamics"):

    u* = u + dt (nu lap u - div(u u) + f)       advection: central, donor-cell (blend gamma), QUICK, SOU
    lap p = div(u*) / dt                          fast diagonalisation, or PCG around an obstacle
    u = u* - dt grad p                            divergence-free to rounding

`time_scheme="ab2cn"` is the semi-implicit scheme of Kim & Moin (1985): Adams-Bashforth 2 for
advection and forces, Crank-Nicolson for diffusion, in increment form with an incremental pressure

    (I - dt nu/2 L) du = dt (3/2 N^n - 1/2 N^{n-1} - grad p^n) + dt nu L u^n,    u* = u^n + du
    lap phi = div(u*) / dt,   u = u* - dt grad phi,   p^{n+1} = p^n + phi

with du's boundary values homogeneous, so the Helmholtz solve is the same fast diagonalisation, and
a steady state is the steady discrete Navier-Stokes solution whatever dt.
Its time step is limited by advection alone (no diffusion or 2 nu / |u|^2 limit), and it is second
order in time on periodic domains.

Every operation is an rtx op, so gradients reach nu, wall and inflow velocities, the initial field,
body forces and a closure network. When no gradient can be asked for (under no_grad, or nothing
requires grad), step and run apply the same formulas to the raw NumPy/CuPy arrays (arrays.py): the
results are the same to rounding and the per-op autograd dispatch is gone."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

import rtx

from .arrays import ArrayKit, TensorKit, raw, wrap
from .flow import Flow2D
from .grid import Grid, check_boundaries
from .poisson import FastPoisson, Helmholtz, cg

# name -> (donor-cell blend gamma, upwind-curvature coefficient kappa). The face value is
# (a + b) / 2 - kappa * curvature at the upwind point: kappa = 1/8 is QUICK (Leonard 1979),
# 1/2 is second-order (linear) upwind; both fall back to central next to the domain boundary.
ADVECTION = {"central": (0.0, 0.0), "upwind": (1.0, 0.0), "donor-cell": (1.0, 0.0), "quick": (0.0, 0.125),
             "sou": (0.0, 0.5), "second-order-upwind": (0.0, 0.5)}
TIME_SCHEMES = ("euler", "ab2cn")


@dataclass
class State:
    """Staggered fields: u (ny, nx + 1), v (ny + 1, nx), p (ny, nx), time t."""
    u: rtx.Tensor
    v: rtx.Tensor
    p: rtx.Tensor
    t: float = 0.0
    prev: tuple = None      # ab2cn: the explicit terms (Nu, Nv) of the previous step, and its dt
    dt_prev: float = None


def _max_abs(a):
    """max |a| as a Python float, for a tensor or a raw array."""
    return float(abs(a).max())


class NavierStokes2D:
    """Projection solver for incompressible flow on a Grid.

    nu: kinematic viscosity (number or scalar tensor). boundaries: {side: Wall/Inflow/Outflow/Periodic}
    (missing sides are no-slip walls). advection: 'central', 'upwind' (donor cell) or a blending
    factor gamma in [0, 1], 'quick' or 'sou' (second-order upwind). time_scheme: 'euler' (explicit) or
    'ab2cn' (Adams-Bashforth 2 advection, Crank-Nicolson diffusion). obstacle: (ny, nx) boolean mask of solid
    cells; its pressure solve is direct (obstacle_solver='capacitance', when the box Laplacian is
    invertible, i.e. some side has an outflow) or by FastPoisson-preconditioned CG ('pcg'). force: (fx, fy) body
    force (numbers or tensors broadcastable to u and v). closure: callable (u, v) -> (fu, fv) added to
    the momentum right-hand side (e.g. a learned sub-grid model)."""

    def __init__(self, grid, nu, boundaries=None, *, advection="central", obstacle=None, force=None,
                 closure=None, dtype=rtx.float64, device=None, pcg_tol=1e-9, pcg_maxiter=2000,
                 time_scheme="euler", obstacle_solver="capacitance"):
        if not isinstance(grid, Grid):
            raise TypeError(f"NavierStokes2D expects a Grid, got {type(grid).__name__}")
        self.grid, self.nu, self.closure = grid, nu, closure
        # The grid's spacings and the boundary coordinates, computed once: a step on a small grid is
        # short enough that recomputing them (Grid properties, aranges) shows in its time.
        self._dx, self._dy = grid.dx, grid.dy
        self._xs_ext = (np.arange(grid.nx + 3) - 1) * grid.dx
        self._ys_ext = ((np.arange(grid.ny + 3) - 1) * grid.dy)[:, None]
        self._xs_c, self._ys_c = grid.x[None, :], grid.y[:, None]
        self.bcs = check_boundaries(boundaries)
        self.kappa = 0.0
        if isinstance(advection, str):
            if advection not in ADVECTION:
                raise ValueError(f"advection must be one of {sorted(ADVECTION)} or a number in [0, 1], "
                                 f"got {advection!r}")
            advection, self.kappa = ADVECTION[advection]
        if not 0.0 <= float(advection) <= 1.0:
            raise ValueError(f"advection blending factor must be in [0, 1], got {advection}")
        self.gamma = float(advection)
        if time_scheme not in TIME_SCHEMES:
            raise ValueError(f"time_scheme must be one of {TIME_SCHEMES}, got {time_scheme!r}")
        self.time_scheme = time_scheme
        self.dtype, self.device = dtype, device
        self.force = force
        self.pcg_tol, self.pcg_maxiter = pcg_tol, pcg_maxiter
        if obstacle_solver not in ("capacitance", "pcg"):
            raise ValueError(f"obstacle_solver must be 'capacitance' or 'pcg', got {obstacle_solver!r}")
        g, b = grid, self.bcs
        px = self._p_kind(b["left"]), self._p_kind(b["right"])
        py = self._p_kind(b["bottom"]), self._p_kind(b["top"])
        self.poisson = FastPoisson(g.nx, g.ny, self._dx, self._dy, px, py, dtype=dtype, device=device)
        # Faces the projection may correct: interior ones, and boundary faces that are periodic or outflow.
        mu = np.ones((g.ny, g.nx + 1))
        mv = np.ones((g.ny + 1, g.nx))
        for side, sl_u, sl_v in (("left", (slice(None), 0), None), ("right", (slice(None), -1), None),
                                 ("bottom", None, (0, slice(None))), ("top", None, (-1, slice(None)))):
            if b[side].kind in ("wall", "inflow"):
                if sl_u is not None:
                    mu[sl_u] = 0.0
                else:
                    mv[sl_v] = 0.0
        self.obstacle = None if obstacle is None else np.asarray(obstacle, dtype=bool)
        if self.obstacle is not None:
            if self.obstacle.shape != (g.ny, g.nx):
                raise ValueError(f"obstacle mask must have shape (ny, nx) = ({g.ny}, {g.nx}), "
                                 f"got {self.obstacle.shape}")
            s = np.pad(self.obstacle, ((0, 0), (1, 1)), mode="edge" if b["left"].kind != "periodic" else "wrap")
            solid_u = s[:, :-1] | s[:, 1:]
            s = np.pad(self.obstacle, ((1, 1), (0, 0)), mode="edge" if b["bottom"].kind != "periodic" else "wrap")
            solid_v = s[:-1] | s[1:]
            box_u, box_v = mu, mv
            mu = mu * ~solid_u
            mv = mv * ~solid_v
            self.fluid_u = self._tensor(~solid_u * 1.0)
            self.fluid_v = self._tensor(~solid_v * 1.0)
            self.fluid_p = self._tensor(~self.obstacle * 1.0)
        self.corr_u, self.corr_v = self._tensor(mu), self._tensor(mv)
        self.stats, self._kits = {}, {}
        self.cap_w = None
        if self.obstacle is not None and obstacle_solver == "capacitance" and not self.poisson.singular:
            self._setup_capacitance(box_u, box_v)
        if time_scheme == "ab2cn":
            self._setup_helmholtz()

    def _setup_helmholtz(self):
        """Per velocity component: which entries are unknowns of the implicit solve, and the 1D
        boundary kinds of the homogeneous increment there (the ghost rules of ext_u / ext_v)."""
        g, b = self.grid, self.bcs

        def normal(lo, hi, n):  # the component normal to these sides lives on their nodes
            if lo.kind == "periodic":
                return slice(0, n), ("periodic", "periodic")
            kind = lambda bc: "neumann" if bc.kind == "outflow" else "node"  # noqa: E731
            return slice(1, n), (kind(lo), kind(hi))

        def tangential(bc):
            if bc.kind == "periodic":
                return "periodic"
            return "dirichlet" if (bc.kind == "inflow" or (bc.kind == "wall" and not bc.slip)) else "neumann"

        ux, kx = normal(b["left"], b["right"], g.nx)
        vy, ky = normal(b["bottom"], b["top"], g.ny)
        ty = (tangential(b["bottom"]), tangential(b["top"]))
        tx = (tangential(b["left"]), tangential(b["right"]))
        mk = lambda nx, ny, x, y: Helmholtz(nx, ny, self._dx, self._dy, x, y, dtype=self.dtype, device=self.device)  # noqa: E731
        self._hu = (ux, mk(ux.stop - ux.start, g.ny, kx, ty))
        self._hv = (vy, mk(g.nx, vy.stop - vy.start, tx, ky))

    # ---- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _p_kind(bc):
        return {"wall": "neumann", "inflow": "neumann", "outflow": "dirichlet", "periodic": "periodic"}[bc.kind]

    def _tensor(self, a):
        return rtx.tensor(np.asarray(a, dtype=np.float64), dtype=self.dtype, device=self.device)

    def _kit(self, a):
        """TensorKit when `a` is an rtx tensor (the differentiable path), ArrayKit for a raw array."""
        is_raw = not isinstance(a, rtx.Tensor)
        kit = self._kits.get(is_raw)
        if kit is None:
            names = ("corr_u", "corr_v") + (("fluid_u", "fluid_v", "fluid_p") if self.obstacle is not None else ())
            names += ("cap_w", "cap_idx") if self.cap_w is not None else ()
            kit = (ArrayKit if is_raw else TensorKit)({n: getattr(self, n) for n in names}, self.dtype, self.device)
            self._kits[is_raw] = kit
        return kit

    def _value(self, val, coords, k=None):
        """A boundary value along a side at `coords`: number, callable, array or tensor (as kit k wants it)."""
        k = k or self._kit(self.corr_u)
        if isinstance(val, rtx.Tensor):
            if val.ndim == 0:
                return k.scalar(val)
            if val.numel() != coords.size:
                raise ValueError(f"boundary profile must have {coords.size} values here, got shape {tuple(val.shape)}")
            return k.scalar(val).reshape(coords.shape)
        if callable(val):
            val = val(coords)
        a = np.asarray(val, dtype=np.float64)
        if a.ndim == 0:
            return float(a)
        if a.size != coords.size:
            raise ValueError(f"boundary profile must have {coords.size} values here (one per boundary cell for "
                             f"inflow; use a callable of the coordinate for a wall), got shape {a.shape}")
        return k.array(a.reshape(coords.shape))

    def _tangential_ghost(self, bc, edge, coords, k):
        """Ghost values across a side for the tangential velocity component."""
        if bc.kind == "wall" and not bc.slip:
            return 2 * self._value(bc.velocity, coords, k) - edge
        if bc.kind == "inflow":
            return -edge
        return edge  # slip wall, outflow: zero gradient

    def ext_u(self, u):
        """u with one ghost layer on every side: (ny + 2, nx + 3)."""
        b, k = self.bcs, self._kit(u)
        if b["left"].kind == "periodic":
            cols = lambda a: (a[:, -2:-1], a[:, 1:2])  # noqa: E731
        else:
            cols = lambda a: (a[:, :1], a[:, -1:])  # noqa: E731
        if b["bottom"].kind == "periodic":
            rows = lambda a: (a[-1:], a[:1])  # noqa: E731
        else:
            xs = self._xs_ext
            rows = lambda a: (self._tangential_ghost(b["bottom"], a[:1], xs, k),  # noqa: E731
                              self._tangential_ghost(b["top"], a[-1:], xs, k))
        return k.ghosts(u, 1, cols, rows)

    def ext_v(self, v):
        """v with one ghost layer on every side: (ny + 3, nx + 2)."""
        b, k = self.bcs, self._kit(v)
        if b["bottom"].kind == "periodic":
            rows = lambda a: (a[-2:-1], a[1:2])  # noqa: E731
        else:
            rows = lambda a: (a[:1], a[-1:])  # noqa: E731
        if b["left"].kind == "periodic":
            cols = lambda a: (a[:, -1:], a[:, :1])  # noqa: E731
        else:
            ys = self._ys_ext
            cols = lambda a: (self._tangential_ghost(b["left"], a[:, :1], ys, k),  # noqa: E731
                              self._tangential_ghost(b["right"], a[:, -1:], ys, k))
        return k.ghosts(v, 0, rows, cols)

    def ext_p(self, p):
        b, k = self.bcs, self._kit(p)
        def ghost(bc, edge, other):
            return other if bc.kind == "periodic" else (-edge if bc.kind == "outflow" else edge)
        cols = lambda a: (ghost(b["left"], a[:, :1], a[:, -1:]), ghost(b["right"], a[:, -1:], a[:, :1]))  # noqa: E731
        rows = lambda a: (ghost(b["bottom"], a[:1], a[-1:]), ghost(b["top"], a[-1:], a[:1]))  # noqa: E731
        return k.ghosts(p, 1, cols, rows)

    def apply_normal_bc(self, u, v):
        """Set the boundary-normal face values: walls 0, inflow the profile, outflow a copy of the
        neighbour, periodic the opposite face."""
        b, k = self.bcs, self._kit(u)

        def side(bc, own, neighbour, opposite, coords):
            if bc.kind == "wall":
                return own * 0.0
            if bc.kind == "inflow":
                return own * 0.0 + self._value(bc.velocity, coords, k)
            if bc.kind == "outflow":
                return neighbour
            return opposite

        ys = self._ys_c
        if b["left"].kind == "periodic":
            u = k.cat([u[:, :-1], u[:, :1]], 1)
        else:
            u = k.cat([side(b["left"], u[:, :1], u[:, 1:2], None, ys), u[:, 1:-1],
                       side(b["right"], u[:, -1:], u[:, -2:-1], None, ys)], 1)
        xs = self._xs_c
        if b["bottom"].kind == "periodic":
            v = k.cat([v[:-1], v[:1]], 0)
        else:
            v = k.cat([side(b["bottom"], v[:1], v[1:2], None, xs), v[1:-1],
                       side(b["top"], v[-1:], v[-2:-1], None, xs)], 0)
        return u, v

    def divergence(self, u, v):
        return (u[:, 1:] - u[:, :-1]) / self._dx + (v[1:] - v[:-1]) / self._dy

    # ---- the step --------------------------------------------------------------------------------

    def _flux(self, vel, lo, hi, curv, dim, k, face):
        """vel times the face value of a quantity between its samples lo and hi: central (face, the
        mean of lo and hi, which the caller already has), plus the donor-cell blend, minus kappa
        times the curvature at the upwind sample (QUICK, SOU)."""
        if self.kappa:
            c = curv[:, :-1] if dim == 1 else curv[:-1]
            d = curv[:, 1:] if dim == 1 else curv[1:]
            face = face - self.kappa * k.where(vel > 0, c, d)
        flux = vel * face
        if self.gamma:
            flux = flux + self.gamma * k.abs(vel) * (lo - hi) * 0.5
        return flux

    @staticmethod
    def _curvature(a, dim, k):
        """Second difference along dim at the interior samples, zero at the two ghost ends."""
        if dim == 1:
            c = a[:, 2:] - 2 * a[:, 1:-1] + a[:, :-2]
            z = c[:, :1] * 0.0
            return k.cat([z, c, z], 1)
        c = a[2:] - 2 * a[1:-1] + a[:-2]
        z = c[:1] * 0.0
        return k.cat([z, c, z], 0)

    def terms(self, u, v):
        """The pieces of the momentum right-hand side: (Nu, Nv) = -div(u u) + f + closure and the
        Laplacians (lap u, lap v), with the boundary conditions in the ghost cells."""
        kappa, k = self.kappa, self._kit(u)
        U, V = self.ext_u(u), self.ext_v(v)
        a, b = U[1:-1, :-1], U[1:-1, 1:]
        du_lo, du_hi = U[:-1, 1:-1], U[1:, 1:-1]
        dv_l, dv_r = V[1:-1, :-1], V[1:-1, 1:]
        c, d = V[:-1, 1:-1], V[1:, 1:-1]
        ucor, vcor = (du_lo + du_hi) * 0.5, (dv_l + dv_r) * 0.5
        cux = self._curvature(U, 1, k)[1:-1] if kappa else None
        cuy = self._curvature(U, 0, k)[:, 1:-1] if kappa else None
        cvx = self._curvature(V, 1, k)[1:-1] if kappa else None
        cvy = self._curvature(V, 0, k)[:, 1:-1] if kappa else None
        ucen, vcen = (a + b) * 0.5, (c + d) * 0.5
        fuu = self._flux(ucen, a, b, cux, 1, k, ucen)
        fuv_y = self._flux(vcor, du_lo, du_hi, cuy, 0, k, ucor)  # u momentum through horizontal edges (corners)
        if self.gamma or self.kappa:
            fuv_x = self._flux(ucor, dv_l, dv_r, cvx, 1, k, vcor)  # v momentum through vertical edges
        else:  # central: both corner fluxes are ucor * vcor (the product commutes exactly)
            fuv_x = fuv_y
        fvv = self._flux(vcen, c, d, cvy, 0, k, vcen)
        idx2, idy2 = 1.0 / self._dx ** 2, 1.0 / self._dy ** 2
        Uc2, Vc2 = 2 * U[1:-1, 1:-1], 2 * V[1:-1, 1:-1]
        lap_u = (U[1:-1, 2:] + U[1:-1, :-2] - Uc2) * idx2 + (U[2:, 1:-1] + U[:-2, 1:-1] - Uc2) * idy2
        lap_v = (V[1:-1, 2:] + V[1:-1, :-2] - Vc2) * idx2 + (V[2:, 1:-1] + V[:-2, 1:-1] - Vc2) * idy2
        nu_ = (fuu[:, :-1] - fuu[:, 1:]) / self._dx + (fuv_y[:-1] - fuv_y[1:]) / self._dy
        nv_ = (fuv_x[:, :-1] - fuv_x[:, 1:]) / self._dx + (fvv[:-1] - fvv[1:]) / self._dy
        if self.force is not None:
            nu_, nv_ = nu_ + k.scalar(self.force[0]), nv_ + k.scalar(self.force[1])
        if self.closure is not None:  # a closure (e.g. an nn.Module) takes and gives tensors
            cu, cv = self.closure(wrap(u), wrap(v)) if k.raw else self.closure(u, v)
            nu_, nv_ = nu_ + k.scalar(cu), nv_ + k.scalar(cv)
        return nu_, nv_, lap_u, lap_v

    def tendency(self, u, v):
        """nu lap u - div(u u) + f for both components (before projection)."""
        nu_, nv_, lap_u, lap_v = self.terms(u, v)
        nu = self._kit(u).scalar(self.nu)
        return nu * lap_u + nu_, nu * lap_v + nv_

    def project(self, u, v, dt, p0=None):
        """Make (u, v) discretely divergence-free; returns (u, v, p)."""
        rhs = self.divergence(u, v) / dt
        if self.obstacle is None:
            p = self.poisson(rhs)
        else:
            p = self._masked_solve(rhs, p0)
        P, k = self.ext_p(p), self._kit(p)
        u = u - (dt / self._dx) * k.corr_u * (P[1:-1, 1:] - P[1:-1, :-1])
        v = v - (dt / self._dy) * k.corr_v * (P[1:, 1:-1] - P[:-1, 1:-1])
        return u, v, p

    def _laplacian(self, p, corr_u, corr_v):
        """div(corr grad p): the Laplacian of the projection, with faces where corr is 0 closed."""
        P = self.ext_p(p)
        gx = corr_u * (P[1:-1, 1:] - P[1:-1, :-1]) / self._dx
        gy = corr_v * (P[1:, 1:-1] - P[:-1, 1:-1]) / self._dy
        return self.divergence(gx, gy)

    def _masked_laplacian(self, p):
        k = self._kit(p)
        return self._laplacian(p, k.corr_u, k.corr_v) * k.fluid_p + p * (1 - k.fluid_p)

    def _setup_capacitance(self, box_u, box_v):
        """Direct solve around an obstacle by the capacitance-matrix method (Buzbee, Dorr, George &
        Golub 1971). The masked operator A (closed faces at the solid, p = 0 inside) differs from
        the box Laplacian A0, which FastPoisson inverts, only on the set S of cells within one cell
        of the solid: A = A0 + E D E^T with D = (A - A0)[S, S] (k x k, E the columns of I in S). By
        Woodbury, A^-1 b = y - A0^-1 E W y[S] with y = A0^-1 b and W = D (I + A0^-1[S, S] D)^-1:
        two fast solves per projection, exact to rounding, and differentiable like the rest.
        Setup: k operator applications and k fast solves (k is a few hundred for a cylinder)."""
        g, solid = self.grid, self.obstacle
        near = solid.copy()  # S: the solid and its 4 neighbours (wrapping only adds cells: harmless)
        for shift, axis in ((1, 0), (-1, 0), (1, 1), (-1, 1)):
            near |= np.roll(solid, shift, axis=axis)
        idx = np.flatnonzero(near)
        n, kk = g.nx * g.ny, idx.size
        self.cap_idx = rtx.tensor(idx, device=self.device)
        k = self._kit(raw(self.corr_u))  # setup on the raw arrays
        xp = k.xp
        host = getattr(xp, "asnumpy", np.asarray)
        bu, bv = k.array(box_u), k.array(box_v)
        d = np.empty((kk, kk))
        zs = np.empty((kk, kk))
        for start in range(0, kk, 64):
            cols = idx[start:start + 64]
            e = xp.zeros((len(cols), n), dtype=k.corr_u.dtype)
            e[xp.arange(len(cols)), xp.asarray(cols)] = 1.0
            e = e.reshape(len(cols), g.ny, g.nx)
            for c in range(len(cols)):
                col = self._masked_laplacian(e[c]) - self._laplacian(e[c], bu, bv)
                d[:, start + c] = host(col.reshape(-1)[xp.asarray(idx)])
            zs[:, start:start + len(cols)] = host(self.poisson(e).reshape(len(cols), n)[:, xp.asarray(idx)]).T
        w = d @ np.linalg.inv(np.eye(kk) + zs @ d)
        self.cap_w = self._tensor(w)
        self._kits.clear()

    def _masked_solve(self, rhs, p0):
        if self.cap_w is not None:
            k = self._kit(rhs)
            y = self.poisson(rhs * k.fluid_p)
            c = k.cap_w @ y.reshape(-1)[k.cap_idx]
            return y - self.poisson(k.put(c, k.cap_idx, y.shape))
        # -L is symmetric positive (semi-)definite on the fluid cells; solid cells carry p = 0.
        p, it, rel = cg(lambda x: -self._masked_laplacian(x), -rhs * self._kit(rhs).fluid_p, x0=p0,
                        precond=lambda r: -self.poisson(r), tol=self.pcg_tol, maxiter=self.pcg_maxiter)
        self.stats["pcg_iterations"] = it
        return p

    def step(self, state, dt):
        """One projection step of size dt; returns the new State. When no gradient can be asked for,
        the step runs on the raw arrays (same formulas, no autograd dispatch)."""
        if not self.needs_grad(state):
            return self._wrap(self._step(self._unwrap(state), dt))
        return self._step(state, dt)

    def needs_grad(self, state):
        """Whether a step from `state` must record a graph: grad mode is on and the fields, the
        viscosity, boundary values, forces or closure parameters require grad. A closure without
        parameters() may hold any tensor, so it counts as needing one whenever grad mode is on."""
        if not rtx.is_grad_enabled():
            return False
        if self.closure is not None and not hasattr(self.closure, "parameters"):
            return True
        fields = [state.u, state.v, state.p, *(state.prev or ())]
        return bool(self._grad_tensors()) or any(isinstance(t, rtx.Tensor) and t.requires_grad for t in fields)

    @staticmethod
    def _unwrap(state):
        prev = tuple(raw(a) for a in state.prev) if state.prev is not None else None
        return State(raw(state.u), raw(state.v), raw(state.p), state.t, prev, state.dt_prev)

    @staticmethod
    def _wrap(state):
        prev = tuple(wrap(a) for a in state.prev) if state.prev is not None else None
        return State(wrap(state.u), wrap(state.v), wrap(state.p), state.t, prev, state.dt_prev)

    def _step(self, state, dt):
        """One step on whatever state holds: rtx tensors (differentiable) or raw arrays."""
        if self.time_scheme == "ab2cn":
            return self._step_ab2cn(state, dt)
        fu, fv = self.tendency(state.u, state.v)
        u, v = self.apply_normal_bc(state.u + dt * fu, state.v + dt * fv)
        return self._finish(state, u, v, dt)

    def _finish(self, state, u, v, dt, prev=None):
        k = self._kit(u)
        if self.obstacle is not None:
            u, v = u * k.fluid_u, v * k.fluid_v
        if prev is None:
            u, v, p = self.project(u, v, dt, p0=None if self.obstacle is None else k.detach(state.p))
            return State(u, v, p, state.t + dt)
        # incremental projection: the predictor carried grad p^n, the projection adds the increment
        u, v, phi = self.project(u, v, dt, p0=None if self.obstacle is None else k.detach(state.p) * 0.0)
        return State(u, v, state.p + phi, state.t + dt, prev, dt)

    def _step_ab2cn(self, state, dt):
        nu_, nv_, lap_u, lap_v = self.terms(state.u, state.v)
        if state.prev is None:  # first step: Euler for the explicit part
            eu, ev = nu_, nv_
        else:  # variable-step AB2: (1 + r/2) N^n - r/2 N^{n-1}, r = dt / dt_prev
            r = dt / state.dt_prev
            eu = (1 + 0.5 * r) * nu_ - (0.5 * r) * state.prev[0]
            ev = (1 + 0.5 * r) * nv_ - (0.5 * r) * state.prev[1]
        # The old pressure gradient goes into the predictor (incremental projection, Van Kan 1986):
        # without it the steady state would carry an O(dt nu) error from the Crank-Nicolson half.
        P, k = self.ext_p(state.p), self._kit(state.u)
        eu = eu - k.corr_u * (P[1:-1, 1:] - P[1:-1, :-1]) / self._dx
        ev = ev - k.corr_v * (P[1:, 1:-1] - P[:-1, 1:-1]) / self._dy
        nu = k.scalar(self.nu)
        a = 0.5 * dt * nu
        (su, hu), (sv, hv) = self._hu, self._hv
        ru, rv = dt * (eu + nu * lap_u), dt * (ev + nu * lap_v)
        if self.obstacle is not None:
            # The Helmholtz solve runs on the whole box. With a zero right-hand side on the solid
            # faces a steady state is exactly the masked one (du = 0 on the fluid faces gives du = 0
            # on the solid faces too); in a transient the solid faces feed back only at O((dt nu /
            # h^2)^2 du), the order of the Crank-Nicolson error. Without it the steady state would
            # carry an O(dt nu / h^2) error next to the obstacle (test_time_schemes checks this).
            ru, rv = ru * k.fluid_u, rv * k.fluid_v
        du = hu(ru[:, su], a)
        dv = hv(rv[sv], a)
        u, v = state.u, state.v
        if su.start == 0:  # periodic: the last face is the first one
            u = u + k.cat([du, du[:, :1]], 1)
        else:
            u = k.cat([u[:, :1], u[:, su] + du, u[:, -1:]], 1)
        if sv.start == 0:
            v = v + k.cat([dv, dv[:1]], 0)
        else:
            v = k.cat([v[:1], v[sv] + dv, v[-1:]], 0)
        u, v = self.apply_normal_bc(u, v)
        return self._finish(state, u, v, dt, prev=(nu_, nv_))

    # ---- driving ---------------------------------------------------------------------------------

    def initial_state(self, u=None, v=None):
        """Fields at rest (or the given staggered u (ny, nx + 1), v (ny + 1, nx)), with the boundary
        values applied and projected to be divergence-free."""
        g = self.grid
        u = rtx.zeros((g.ny, g.nx + 1), dtype=self.dtype, device=self.device) if u is None else u
        v = rtx.zeros((g.ny + 1, g.nx), dtype=self.dtype, device=self.device) if v is None else v
        if tuple(u.shape) != (g.ny, g.nx + 1) or tuple(v.shape) != (g.ny + 1, g.nx):
            raise ValueError(f"initial u must be (ny, nx + 1) = ({g.ny}, {g.nx + 1}) and v (ny + 1, nx) = "
                             f"({g.ny + 1}, {g.nx}); got {tuple(u.shape)} and {tuple(v.shape)}")
        u, v = self.apply_normal_bc(u, v)
        if self.obstacle is not None:
            u, v = u * self.fluid_u, v * self.fluid_v
        p = rtx.zeros((g.ny, g.nx), dtype=self.dtype, device=self.device)
        u, v, p = self.project(u, v, 1.0, p0=p)
        return State(u, v, p * 0.0, 0.0)

    def stable_dt(self, state, cfl=0.5):
        """Largest stable explicit step times cfl: advective CFL, diffusion, and for central
        advection the advection-diffusion limit 2 nu / |u|^2 of forward Euler. With ab2cn diffusion
        is implicit: only the advective limit 1 / (|u|/dx + |v|/dy) remains."""
        nu = float(self.nu.detach().item() if isinstance(self.nu, rtx.Tensor) else self.nu)
        # The boundary speeds count too: a cavity at rest has |u| = 0 inside but a moving lid.
        wall = self._boundary_speed()
        umax = max(_max_abs(state.u), wall, 1e-12)
        vmax = max(_max_abs(state.v), wall, 1e-12)
        if self.time_scheme == "ab2cn":
            return cfl / (umax / self._dx + vmax / self._dy)
        limits = [self._dx / umax, self._dy / vmax]
        if nu > 0:
            limits.append(0.5 / (nu * (1 / self._dx ** 2 + 1 / self._dy ** 2)))
            if self.gamma < 1.0:
                limits.append(2 * nu / (umax ** 2 + vmax ** 2))
        return cfl * min(limits)

    def _boundary_speed(self):
        g, speed = self.grid, 0.0
        for side, bc in self.bcs.items():
            val = getattr(bc, "velocity", None)
            if val is None:
                continue
            coords = g.y if side in ("left", "right") else g.x
            val = self._value(val, coords)
            speed = max(speed, float(val.detach().abs().max().item()) if isinstance(val, rtx.Tensor) else abs(val))
        return speed

    def run(self, state=None, *, t_end=None, steps=None, tol=None, dt=None, cfl=0.5, check_every=50,
            checkpoint_every=0, max_steps=10 ** 7, callback=None):
        """Advance until t_end, or for `steps` steps, or until the steady residual
        max |u^{n+1} - u^n| / dt falls below tol (checked every `check_every` steps). dt=None picks
        stable_dt(cfl) at every check. checkpoint_every=k wraps blocks of k steps in
        rtx.utils.checkpoint, so backward through a long run keeps k steps of activations.
        When no gradient can be asked for (see needs_grad) the steps run on the raw arrays; the
        callback still gets a State of tensors (sharing memory with those arrays).
        Returns the final State; self.stats has steps, residual, wall time and time per step."""
        if t_end is None and steps is None and tol is None:
            raise ValueError("run needs t_end, steps or tol")
        state = self.initial_state() if state is None else state
        fast = not self.needs_grad(state)
        if fast:
            state = self._unwrap(state)
        t0, n, residual, history = time.perf_counter(), 0, float("inf"), []
        limit = min(max_steps, steps if steps is not None else max_steps)
        cur_dt = dt
        while n < limit:
            if dt is None and (n % check_every == 0):
                cur_dt = self.stable_dt(state, cfl)
            this_dt = cur_dt
            if t_end is not None:
                left = t_end - state.t
                if left <= 1e-12 * max(1.0, abs(t_end)):
                    break
                this_dt = min(this_dt, left)
            block = 1
            if checkpoint_every and checkpoint_every > 1 and not fast:
                block = min(checkpoint_every, limit - n)
                if t_end is not None:
                    block = max(1, min(block, int((t_end - state.t) / this_dt + 1e-9)))
            if block > 1:
                state = self._checkpointed(state, this_dt, block)
                n += block
            else:
                check = tol is not None and ((n + 1) % check_every == 0)
                new = self._step(state, this_dt) if fast else self.step(state, this_dt)
                if check:
                    residual = max(_max_abs(new.u - state.u), _max_abs(new.v - state.v)) / this_dt
                    history.append((n + 1, new.t, residual))
                    if not np.isfinite(residual):
                        raise FloatingPointError(f"the solution diverged at step {n + 1} (t = {new.t:.4g}); "
                                                 f"lower cfl (now {cfl}) or pass a smaller dt")
                state = new
                n += 1
                if check and residual < tol:
                    break
            if callback is not None:
                callback(n, self._wrap(state) if fast else state)
        if fast:
            state = self._wrap(state)
        wall = time.perf_counter() - t0
        self.stats.update(steps=n, t=state.t, residual=residual, wall_time=wall,
                          time_per_step=wall / max(n, 1), residual_history=history)
        return state

    def _checkpointed(self, state, dt, k):
        from rtx.utils.checkpoint import checkpoint

        history = tuple(state.prev) if state.prev is not None else ()

        def block(u, v, p, *rest):
            s = State(u, v, p, state.t, tuple(rest[:2]) if history else None, state.dt_prev)
            for _ in range(k):
                s = self.step(s, dt)
            return (s.u, s.v, s.p) + (tuple(s.prev) if s.prev is not None else ())

        # The solver's own tensors (viscosity, wall/inflow values, forces, closure parameters) are
        # used by closure; passing them too makes the block's outputs require grad when they do.
        # Reentrant checkpointing accumulates their gradients during the recomputation. The AB2
        # history (previous explicit terms) goes in and out of the block with the fields.
        out = checkpoint(block, state.u, state.v, state.p, *history, *self._grad_tensors())
        prev = tuple(out[3:5]) if len(out) > 3 else None
        return State(out[0], out[1], out[2], state.t + k * dt, prev, dt if prev is not None else None)

    def _grad_tensors(self):
        found = [self.nu] + [getattr(bc, "velocity", None) for bc in self.bcs.values()] + list(self.force or ())
        if self.closure is not None and hasattr(self.closure, "parameters"):
            found += list(self.closure.parameters())
        return [t for t in found if isinstance(t, rtx.Tensor) and t.requires_grad]

    # ---- output ----------------------------------------------------------------------------------

    def to_flow(self, state):
        """The State as a Flow2D (cell-centred fields; sampling uses the staggered faces and walls)."""
        g = self.grid
        uc = (state.u[:, :-1] + state.u[:, 1:]) * 0.5
        vc = (state.v[:-1] + state.v[1:]) * 0.5
        U, V = self.ext_u(state.u)[:, 1:-1], self.ext_v(state.v)[1:-1]
        ug = rtx.cat([(U[:1] + U[1:2]) * 0.5, U[1:-1], (U[-2:-1] + U[-1:]) * 0.5], dim=0)
        vg = rtx.cat([(V[:, :1] + V[:, 1:2]) * 0.5, V[:, 1:-1], (V[:, -2:-1] + V[:, -1:]) * 0.5], dim=1)
        ys = np.concatenate([[0.0], g.y, [g.ly]])
        xs = np.concatenate([[0.0], g.x, [g.lx]])
        periodic = (self.bcs["left"].kind == "periodic", self.bcs["bottom"].kind == "periodic")
        return Flow2D(g.x, g.y, uc, vc, state.p, state.t, lx=g.lx, ly=g.ly, periodic=periodic,
                      ugrid=(g.xf, ys, ug), vgrid=(xs, g.yf, vg), mask=self.obstacle, stats=dict(self.stats))
