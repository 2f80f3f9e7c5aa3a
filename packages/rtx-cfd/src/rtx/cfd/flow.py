"""Flow2D: the one result type of every 2D solver."""
from __future__ import annotations

import numpy as np

import rtx

from .poisson import FastPoisson


def _t(a, like):
    return rtx.as_tensor(np.asarray(a), dtype=like.dtype).to(like.device)


class Flow2D:
    """A 2D velocity/pressure field at time t.

    x (nx,), y (ny,): cell-centre coordinates; u, v, p: rtx tensors of shape (ny, nx) at the cell
    centres (row = y). They carry the solver's autograd graph, so `loss(flow).backward()` reaches
    viscosity, boundary values, initial fields or closure parameters.

    ugrid/vgrid (optional): (xs, ys, values) node grids that `sample` interpolates bilinearly, e.g.
    the staggered faces plus their wall values; by default the cell centres (wrapped where periodic,
    held constant beyond the outer centres otherwise)."""

    def __init__(self, x, y, u, v, p, t=0.0, *, lx=None, ly=None, periodic=(False, False),
                 ugrid=None, vgrid=None, mask=None, stats=None):
        self.x, self.y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        self.u, self.v, self.p = u, v, p
        if tuple(u.shape) != (len(self.y), len(self.x)) or tuple(v.shape) != tuple(u.shape):
            raise ValueError(f"Flow2D: u and v must be (ny, nx) = ({len(self.y)}, {len(self.x)}), "
                             f"got {tuple(u.shape)} and {tuple(v.shape)}")
        self.t = float(t)
        self.dx, self.dy = float(self.x[1] - self.x[0]), float(self.y[1] - self.y[0])
        self.lx = self.dx * len(self.x) if lx is None else float(lx)
        self.ly = self.dy * len(self.y) if ly is None else float(ly)
        self.periodic = tuple(bool(b) for b in periodic)
        self.ugrid = ugrid if ugrid is not None else self._centre_grid(u)
        self.vgrid = vgrid if vgrid is not None else self._centre_grid(v)
        self.mask = mask
        self.stats = dict(stats or {})

    def __repr__(self):
        return f"Flow2D(nx={len(self.x)}, ny={len(self.y)}, t={self.t:g}, lx={self.lx:g}, ly={self.ly:g})"

    def _centre_grid(self, f):
        xs, ys = self.x, self.y
        if self.periodic[0]:
            f = rtx.cat([f[:, -1:], f, f[:, :1]], dim=1)
            xs = np.concatenate([[xs[0] - self.dx], xs, [xs[-1] + self.dx]])
        if self.periodic[1]:
            f = rtx.cat([f[-1:], f, f[:1]], dim=0)
            ys = np.concatenate([[ys[0] - self.dy], ys, [ys[-1] + self.dy]])
        return xs, ys, f

    def set_wall_values(self, u=(0.0, 0.0, 0.0, 0.0), v=(0.0, 0.0, 0.0, 0.0)):
        """Let `sample` interpolate up to the domain edges: u and v hold the (left, right, bottom,
        top) wall values (numbers). Use it for collocated fields on walled domains (LBM)."""
        for name, vals in (("ugrid", u), ("vgrid", v)):
            f = self.u if name == "ugrid" else self.v
            ny, nx = f.shape
            lo, hi, bo, to = (float(a) for a in vals)
            col = lambda val: f[:, :1] * 0.0 + val  # noqa: E731,B023  (used at once, with this f)
            f = rtx.cat([col(lo), f, col(hi)], dim=1)
            row = lambda val: f[:1] * 0.0 + val  # noqa: E731,B023  (used at once, with this f)
            f = rtx.cat([row(bo), f, row(to)], dim=0)
            xs = np.concatenate([[0.0], self.x, [self.lx]])
            ys = np.concatenate([[0.0], self.y, [self.ly]])
            setattr(self, name, (xs, ys, f))
        return self

    # ---- sampling -------------------------------------------------------------------------------

    def _interp(self, grid, px, py):
        xs, ys, f = grid
        i = np.clip(np.searchsorted(xs, px, side="right") - 1, 0, len(xs) - 2)
        j = np.clip(np.searchsorted(ys, py, side="right") - 1, 0, len(ys) - 2)
        sx = np.clip((px - xs[i]) / (xs[i + 1] - xs[i]), 0.0, 1.0)
        sy = np.clip((py - ys[j]) / (ys[j + 1] - ys[j]), 0.0, 1.0)
        w = [_t(a, f) for a in ((1 - sx) * (1 - sy), sx * (1 - sy), (1 - sx) * sy, sx * sy)]
        return f[j, i] * w[0] + f[j, i + 1] * w[1] + f[j + 1, i] * w[2] + f[j + 1, i + 1] * w[3]

    def sample(self, points):
        """Bilinear velocity at an (N, 2) array of (x, y) points, returned as an (N, 2) tensor
        (differentiable with respect to the fields). Periodic directions wrap."""
        pts = np.asarray(points.detach().cpu().numpy() if isinstance(points, rtx.Tensor) else points,
                         dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 2:
            raise ValueError(f"sample expects points of shape (N, 2), got {pts.shape}")
        px, py = pts[:, 0].copy(), pts[:, 1].copy()
        if self.periodic[0]:
            px = np.mod(px, self.lx)
        if self.periodic[1]:
            py = np.mod(py, self.ly)
        return rtx.stack([self._interp(self.ugrid, px, py), self._interp(self.vgrid, px, py)], dim=1)

    # ---- derived fields -------------------------------------------------------------------------

    def _d(self, f, axis):
        h = self.dx if axis == 1 else self.dy
        if self.periodic[axis == 0]:
            return (rtx.roll(f, -1, dims=axis) - rtx.roll(f, 1, dims=axis)) / (2 * h)
        n = f.shape[axis]
        sl = lambda a, b: f[:, a:b] if axis == 1 else f[a:b]  # noqa: E731
        mid = (sl(2, n) - sl(0, n - 2)) / (2 * h)
        first = (sl(1, 2) - sl(0, 1)) / h
        last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        return rtx.cat([first, mid, last], dim=axis)

    def vorticity(self):
        """dv/dx - du/dy at the cell centres (central differences; one-sided at non-periodic edges)."""
        return self._d(self.v, 1) - self._d(self.u, 0)

    def streamfunction(self):
        """psi with lap psi = -vorticity, u = dpsi/dy, v = -dpsi/dx; psi = 0 on non-periodic sides
        (closed domains such as the cavity), zero mean in periodic directions."""
        ny, nx = self.u.shape
        kind = lambda per: ("periodic", "periodic") if per else ("dirichlet", "dirichlet")  # noqa: E731
        solve = FastPoisson(nx, ny, self.dx, self.dy, kind(self.periodic[0]), kind(self.periodic[1]),
                            dtype=self.u.dtype, device=self.u.device)
        return solve(-self.vorticity())

    def kinetic_energy(self):
        """Mean of (u^2 + v^2) / 2 over the cells."""
        return 0.5 * (self.u * self.u + self.v * self.v).mean()

    # ---- output ---------------------------------------------------------------------------------

    def numpy(self):
        """(u, v, p) as NumPy arrays."""
        return tuple(a.detach().cpu().numpy() for a in (self.u, self.v, self.p))

    def plot(self, path, title=None, streamlines=True):
        """Write a PNG: speed as a colour map with streamlines on top."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        u, v, _ = self.numpy()
        speed = np.hypot(u, v)
        aspect = self.ly / self.lx
        fig, ax = plt.subplots(figsize=(7, max(2.5, 7 * aspect)))
        im = ax.imshow(speed, origin="lower", extent=(0, self.lx, 0, self.ly), cmap="viridis")
        if self.mask is not None:
            ax.contourf(self.x, self.y, np.asarray(self.mask, dtype=float), levels=[0.5, 1.5], colors="white")
        if streamlines:
            ax.streamplot(self.x, self.y, u, v, color="white", linewidth=0.6, density=1.4, arrowsize=0.6)
        ax.set_xlim(0, self.lx)
        ax.set_ylim(0, self.ly)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title(title or f"speed, t = {self.t:.3g}")
        fig.colorbar(im, ax=ax, label="|u|", shrink=0.8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path

    def to_vtk(self, path):
        """Write a legacy ASCII VTK file (STRUCTURED_POINTS at the cell centres): velocity vectors,
        pressure and vorticity as point data; ParaView and VisIt read it."""
        u, v, p = self.numpy()
        w = self.vorticity().detach().cpu().numpy()
        ny, nx = u.shape
        with open(path, "w") as f:
            f.write("# vtk DataFile Version 3.0\nrtx.cfd Flow2D t=%r\nASCII\nDATASET STRUCTURED_POINTS\n" % self.t)
            f.write(f"DIMENSIONS {nx} {ny} 1\nORIGIN {self.x[0]!r} {self.y[0]!r} 0\n"
                    f"SPACING {self.dx!r} {self.dy!r} 1\n")
            f.write(f"POINT_DATA {nx * ny}\nVECTORS velocity double\n")
            np.savetxt(f, np.stack([u.ravel(), v.ravel(), np.zeros(u.size)], axis=1), fmt="%.17g")
            for name, a in (("pressure", p), ("vorticity", w)):
                f.write(f"SCALARS {name} double 1\nLOOKUP_TABLE default\n")
                np.savetxt(f, a.ravel(), fmt="%.17g")
        return path
