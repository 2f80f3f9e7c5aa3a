"""Neural ODE building blocks: ODEBlock (a layer whose output is the ODE's end state) and the
Hutchinson trace estimator for FFJORD-style continuous normalizing flows."""
from __future__ import annotations

import rtx
import rtx.nn as nn
from rtx.science.ode import odeint, odeint_adjoint


class ODEBlock(nn.Module):
    """y(t1) for dy/dt = func(t, y), y(t0) = x (Chen et al. 2018). `adjoint=True` trains with the
    adjoint method (memory flat in the number of solver steps)."""

    def __init__(self, func, t0=0.0, t1=1.0, rtol=1e-3, atol=1e-4, method="dopri5", options=None, adjoint=False):
        super().__init__()
        self.func, self.t = func, (float(t0), float(t1))
        self.rtol, self.atol, self.method, self.options, self.adjoint = rtol, atol, method, options, adjoint

    def forward(self, x):
        t = rtx.tensor(list(self.t), dtype=x.dtype)
        solve = odeint_adjoint if self.adjoint else odeint
        return solve(self.func, x, t, rtol=self.rtol, atol=self.atol, method=self.method, options=self.options)[-1]


def hutchinson_trace(f, z, noise=None, create_graph=True):
    """Unbiased estimate of tr(df/dz) per batch row: E[e^T (df/dz) e] with e Rademacher (or the
    given noise), one vector-Jacobian product (Grathwohl et al. 2019). f = func(z), z (B, d)."""
    if noise is None:
        noise = (rtx.randint(0, 2, tuple(z.shape)) * 2 - 1).to(z.dtype)
    (vjp,) = rtx.autograd.grad(f, [z], noise, create_graph=create_graph, retain_graph=True)
    return (vjp * noise).sum(dim=1)


def exact_trace(f, z, create_graph=True):
    """tr(df/dz) per row by d backward passes (for small d and for testing the estimator)."""
    out = 0
    for i in range(z.shape[1]):
        (g,) = rtx.autograd.grad(f[:, i].sum(), [z], create_graph=create_graph, retain_graph=True)
        out = out + g[:, i]
    return out


class CNFDynamics(nn.Module):
    """Augmented dynamics (z, log p) of a continuous normalizing flow: dz/dt = f(t, z),
    d log p/dt = -tr(df/dz). Integrate with odeint over a tuple state (z, logp)."""

    def __init__(self, net, exact=False):
        super().__init__()
        self.net, self.exact = net, exact
        self.noise = None  # fixed during one solve, as FFJORD does

    def forward(self, t, state):
        z, _ = state
        with rtx.enable_grad():
            z = z if z.requires_grad else z.detach().requires_grad_(True)
            f = self.net(t, z)
            if self.exact:
                tr = exact_trace(f, z)
            else:
                if self.noise is None or tuple(self.noise.shape) != tuple(z.shape):
                    self.noise = (rtx.randint(0, 2, tuple(z.shape)) * 2 - 1).to(z.dtype)
                tr = hutchinson_trace(f, z, self.noise)
        return f, -tr
