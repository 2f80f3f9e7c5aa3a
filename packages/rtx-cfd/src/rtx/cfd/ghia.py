"""Centre-line velocities of the lid-driven cavity from

    U. Ghia, K. N. Ghia and C. T. Shin, "High-Re solutions for incompressible flow using the
    Navier-Stokes equations and a multigrid method", J. Comput. Phys. 48 (1982) 387-411,
    doi:10.1016/0021-9991(82)90058-4.

Table I: u along the vertical line through the cavity centre (x = 0.5), at the tabulated y.
Table II: v along the horizontal line through the centre (y = 0.5), at the tabulated x.
Unit square, lid (top, y = 1) moving with u = 1 to the right. Typed in from the paper's tables for
Re = 100 and Re = 1000 and checked against several independent transcriptions."""
from __future__ import annotations

import numpy as np

Y = np.array([1.0000, 0.9766, 0.9688, 0.9609, 0.9531, 0.8516, 0.7344, 0.6172, 0.5000,
              0.4531, 0.2813, 0.1719, 0.1016, 0.0703, 0.0625, 0.0547, 0.0000])
X = np.array([1.0000, 0.9688, 0.9609, 0.9531, 0.9453, 0.9063, 0.8594, 0.8047, 0.5000,
              0.2344, 0.2266, 0.1563, 0.0938, 0.0781, 0.0703, 0.0625, 0.0000])

U = {
    100: np.array([1.00000, 0.84123, 0.78871, 0.73722, 0.68717, 0.23151, 0.00332, -0.13641, -0.20581,
                   -0.21090, -0.15662, -0.10150, -0.06434, -0.04775, -0.04192, -0.03717, 0.00000]),
    1000: np.array([1.00000, 0.65928, 0.57492, 0.51117, 0.46604, 0.33304, 0.18719, 0.05702, -0.06080,
                    -0.10648, -0.27805, -0.38289, -0.29730, -0.22220, -0.20196, -0.18109, 0.00000]),
}
V = {
    100: np.array([0.00000, -0.05906, -0.07391, -0.08864, -0.10313, -0.16914, -0.22445, -0.24533, 0.05454,
                   0.17527, 0.17507, 0.16077, 0.12317, 0.10890, 0.10091, 0.09233, 0.00000]),
    1000: np.array([0.00000, -0.21388, -0.27669, -0.33714, -0.39188, -0.51550, -0.42665, -0.31966, 0.02526,
                    0.32235, 0.33075, 0.37095, 0.32627, 0.30353, 0.29012, 0.27485, 0.00000]),
}


def table(re):
    """(y, u, x, v) for Re = 100 or 1000: Ghia et al.'s centre-line values (lid velocity 1)."""
    re = int(re)
    if re not in U:
        raise ValueError(f"Ghia et al. tables are stored for Re in {sorted(U)}; got {re}")
    return Y, U[re], X, V[re]


def compare(flow, re, lid_velocity=1.0):
    """Sample `flow` (a unit-square cavity) where Ghia et al. tabulate and return a dict with the
    points, our values, theirs (scaled by the lid velocity) and the largest deviation divided by the
    lid velocity (the figure the issue bounds)."""
    y, u_ref, x, v_ref = table(re)
    pu = np.stack([np.full_like(y, 0.5), y], axis=1)
    pv = np.stack([x, np.full_like(x, 0.5)], axis=1)
    u = flow.sample(pu)[:, 0].detach().cpu().numpy() / lid_velocity
    v = flow.sample(pv)[:, 1].detach().cpu().numpy() / lid_velocity
    return {"y": y, "u": u, "u_ghia": u_ref, "x": x, "v": v, "v_ghia": v_ref,
            "max_dev_u": float(np.max(np.abs(u - u_ref))), "max_dev_v": float(np.max(np.abs(v - v_ref))),
            "max_dev": float(max(np.max(np.abs(u - u_ref)), np.max(np.abs(v - v_ref))))}
