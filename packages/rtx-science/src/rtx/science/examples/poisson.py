"""PINN for -lap u = 2 pi^2 sin(pi x) sin(pi y) on the unit square, u = 0 on its boundary.
Exact solution u = sin(pi x) sin(pi y)."""
import math

import numpy as np

import rtx
import rtx.nn as nn
from rtx.science.pinn import PINN, laplacian, latin_hypercube


def poisson(adam_steps=1000, lbfgs_steps=3000, n_interior=1000, width=32, seed=0, log=None, return_model=False):
    rtx.manual_seed(seed)
    f64 = rtx.float64
    net = nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                        nn.Linear(width, 1)).to(f64)
    pi = math.pi

    def residual(net, x):
        return laplacian(net(x), x) + 2 * pi ** 2 * rtx.sin(pi * x[:, 0]) * rtx.sin(pi * x[:, 1])

    s = np.linspace(0, 1, 41)
    z, o = np.zeros_like(s), np.ones_like(s)
    edges = np.concatenate([np.stack(p, 1) for p in ((s, z), (s, o), (z, s), (o, s))])
    pinn = PINN(net, residual, latin_hypercube(n_interior, [(0, 1), (0, 1)], seed=seed, dtype=f64),
                boundary=[(rtx.tensor(edges, dtype=f64), rtx.zeros(len(edges), 1, dtype=f64), 10.0)])
    pinn.fit(adam_steps=adam_steps, lr=3e-3, lbfgs_steps=lbfgs_steps, callback=log)
    g = np.linspace(0, 1, 101)
    X, Y = np.meshgrid(g, g)
    with rtx.no_grad():
        u = net(rtx.tensor(np.stack([X.ravel(), Y.ravel()], 1), dtype=f64)).numpy().ravel()
    exact = np.sin(pi * X.ravel()) * np.sin(pi * Y.ravel())
    err = float(np.linalg.norm(u - exact) / np.linalg.norm(exact))
    return (err, (X, Y, u.reshape(X.shape), exact.reshape(X.shape))) if return_model else err
