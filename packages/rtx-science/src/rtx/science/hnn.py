"""Hamiltonian neural networks (Greydanus et al. 2019) and symplectic integrators."""
from __future__ import annotations

import rtx
import rtx.nn as nn


class HNN(nn.Module):
    """Learns a scalar H(q, p); its vector field is (dq/dt, dp/dt) = (dH/dp, -dH/dq), which
    conserves the learned H exactly in continuous time. Input x = [q, p] of shape (B, 2n).

    separable=True learns H = T(p) + V(q) with two networks (as symplectic RNNs do): then the
    explicit leapfrog below is exactly symplectic for the learned H, so energy stays bounded
    over long rollouts; a general H(q, p) would need an implicit symplectic scheme."""

    def __init__(self, dim, hidden=200, layers=2, separable=False):
        super().__init__()

        def mlp(n_in):
            sizes = [n_in] + [hidden] * layers
            mods = []
            for a, b in zip(sizes[:-1], sizes[1:]):
                mods += [nn.Linear(a, b), nn.Tanh()]
            return nn.Sequential(*mods, nn.Linear(hidden, 1))

        self.dim, self.separable = dim, separable
        if separable:
            self.kinetic, self.potential = mlp(dim), mlp(dim)
        else:
            self.net = mlp(2 * dim)

    def hamiltonian(self, x):
        if self.separable:
            return (self.kinetic(x[:, self.dim:]) + self.potential(x[:, :self.dim])).reshape(-1)
        return self.net(x).reshape(-1)

    def forward(self, x, create_graph=True):
        """The time derivative (B, 2n) of x = [q, p]."""
        x = x if x.requires_grad else x.detach().requires_grad_(True)
        with rtx.enable_grad():
            (g,) = rtx.autograd.grad(self.hamiltonian(x).sum(), [x], create_graph=create_graph)
        return rtx.cat([g[:, self.dim:], -g[:, :self.dim]], dim=1)

    def dH(self, q, p):
        d = self(rtx.cat([q, p], dim=1), create_graph=False)
        return -d[:, self.dim:], d[:, :self.dim]  # (dH/dq, dH/dp)


def leapfrog(grad_h, q, p, dt, steps):
    """Stormer-Verlet / leapfrog (kick-drift-kick) for H = T(p) + V(q): symplectic, second order.
    grad_h(q, p) -> (dH/dq, dH/dp). Returns the trajectories (steps + 1, *q.shape) of q and p."""
    qs, ps = [q], [p]
    dq, _ = grad_h(q, p)
    for _ in range(steps):
        p = p - 0.5 * dt * dq
        _, dp = grad_h(q, p)
        q = q + dt * dp
        dq, _ = grad_h(q, p)
        p = p - 0.5 * dt * dq
        qs.append(q)
        ps.append(p)
    return rtx.stack(qs), rtx.stack(ps)


verlet = leapfrog  # velocity Verlet is the same kick-drift-kick scheme
