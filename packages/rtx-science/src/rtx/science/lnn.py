"""Lagrangian neural networks (Cranmer et al. 2020): learn a scalar L(q, qdot) and move by the
Euler-Lagrange equations, which need no canonical momenta (HNN needs p; LNN works from velocities)."""
from __future__ import annotations

import rtx
import rtx.nn as nn


class LNN(nn.Module):
    """Input x = [q, qdot] of shape (B, 2n); forward returns dx/dt = [qdot, qddot] with

        qddot = (d2L/dqdot2)^-1 (dL/dq - d2L/(dqdot dq) qdot)

    (the Euler-Lagrange equations d/dt dL/dqdot = dL/dq solved for the acceleration), all by autograd:
    one gradient and n Hessian rows per call. `net` maps (B, 2n) to L (B,) or (B, 1); by default a
    softplus MLP (the activation must have a nonzero second derivative, so not ReLU). Per-sample
    Hessians come from gradients of batch sums: each sample's L depends on its own x only."""

    def __init__(self, dim, hidden=128, layers=2, net=None):
        super().__init__()
        self.dim = dim
        if net is None:
            sizes = [2 * dim] + [hidden] * layers
            mods = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                mods += [nn.Linear(a, b), nn.Softplus()]
            net = nn.Sequential(*mods, nn.Linear(hidden, 1))
        self.net = net

    def lagrangian(self, x):
        return self.net(x).reshape(-1)

    def forward(self, x, create_graph=True):
        if x.ndim != 2 or x.shape[1] != 2 * self.dim:
            raise ValueError(f"LNN expects x = [q, qdot] of shape (B, {2 * self.dim}), got {tuple(x.shape)}")
        n = self.dim
        x = x if x.requires_grad else x.detach().requires_grad_(True)
        with rtx.enable_grad():
            (g,) = rtx.autograd.grad(self.lagrangian(x).sum(), [x], create_graph=True)
            rows = [rtx.autograd.grad(g[:, n + i].sum(), [x], create_graph=create_graph)[0] for i in range(n)]
        h = rtx.stack(rows, dim=1)                      # (B, n, 2n): d2L / dqdot_i dx_j
        qdot = x[:, n:]
        rhs = g[:, :n] - (h[:, :, :n] @ qdot.unsqueeze(-1)).squeeze(-1)
        qddot = rtx.linalg.solve(h[:, :, n:], rhs.unsqueeze(-1)).squeeze(-1)
        return rtx.cat([qdot, qddot], dim=1)
