"""Uniform grids and boundary conditions for the staggered (MAC) solvers.

Layout (Harlow & Welch's marker-and-cell grid): nx x ny cells of size dx x dy on [0, lx] x [0, ly];
pressure at cell centres, shape (ny, nx); u on the vertical faces x = i dx, shape (ny, nx + 1);
v on the horizontal faces y = j dy, shape (ny + 1, nx). Arrays are indexed [row = y, column = x]
so that they plot as images."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SIDES = ("left", "right", "bottom", "top")


@dataclass(frozen=True)
class Grid:
    """A uniform 2D grid of nx x ny cells on [0, lx] x [0, ly]."""
    nx: int
    ny: int
    lx: float = 1.0
    ly: float = 1.0

    def __post_init__(self):
        if int(self.nx) < 2 or int(self.ny) < 2:
            raise ValueError(f"Grid needs at least 2 cells per direction, got nx={self.nx}, ny={self.ny}")
        if self.lx <= 0 or self.ly <= 0:
            raise ValueError(f"Grid lengths must be positive, got lx={self.lx}, ly={self.ly}")

    @property
    def dx(self):
        return self.lx / self.nx

    @property
    def dy(self):
        return self.ly / self.ny

    @property
    def x(self):
        """Cell-centre x coordinates, shape (nx,)."""
        return (np.arange(self.nx) + 0.5) * self.dx

    @property
    def y(self):
        """Cell-centre y coordinates, shape (ny,)."""
        return (np.arange(self.ny) + 0.5) * self.dy

    @property
    def xf(self):
        """Vertical face x coordinates (where u lives), shape (nx + 1,)."""
        return np.arange(self.nx + 1) * self.dx

    @property
    def yf(self):
        """Horizontal face y coordinates (where v lives), shape (ny + 1,)."""
        return np.arange(self.ny + 1) * self.dy


class BC:
    """Base class of the boundary conditions of one side of a MAC grid."""
    kind = "?"

    def __repr__(self):
        return f"{type(self).__name__}()"


class Wall(BC):
    """Impermeable wall. `velocity` is the tangential wall speed (a number, a tensor for gradients,
    or an array along the side): 0 is the no-slip wall, the cavity lid moves with 1. slip=True is a
    free-slip wall (zero tangential stress) and ignores `velocity`."""
    kind = "wall"

    def __init__(self, velocity=0.0, slip=False):
        self.velocity = velocity
        self.slip = bool(slip)

    def __repr__(self):
        return f"Wall(velocity={self.velocity!r}, slip={self.slip})"


class Inflow(BC):
    """Dirichlet velocity: the normal component is `velocity` (a number, an array or a tensor of one
    value per boundary cell, or a callable of the coordinate along the side), the tangential one is 0.
    The value is the velocity component itself (positive is +x / +y)."""
    kind = "inflow"

    def __init__(self, velocity):
        self.velocity = velocity

    def __repr__(self):
        return f"Inflow(velocity={self.velocity!r})"


class Outflow(BC):
    """Zero-gradient velocity with the pressure held at 0 on the boundary."""
    kind = "outflow"


class Periodic(BC):
    """Periodic: must be given on both opposite sides."""
    kind = "periodic"


def check_boundaries(bcs):
    """Validate a {side: BC} dict (missing sides are no-slip walls) and return it complete."""
    if bcs is None:
        bcs = {}
    unknown = set(bcs) - set(SIDES)
    if unknown:
        raise ValueError(f"boundary sides must be among {SIDES}, got {sorted(unknown)}")
    out = {s: bcs.get(s, Wall()) for s in SIDES}
    for s, bc in out.items():
        if not isinstance(bc, BC):
            raise TypeError(f"boundary {s!r} must be Wall, Inflow, Outflow or Periodic, got {type(bc).__name__}")
    for a, b in (("left", "right"), ("bottom", "top")):
        if (out[a].kind == "periodic") != (out[b].kind == "periodic"):
            raise ValueError(f"Periodic must be set on both {a} and {b}, got {out[a]!r} and {out[b]!r}")
    return out
