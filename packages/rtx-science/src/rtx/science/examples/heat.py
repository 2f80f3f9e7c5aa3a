"""PINN for the 1D heat equation

    u_t = alpha u_xx on x in [0, 1], t in [0, 1], u(0, t) = u(1, t) = 0,
    u(x, 0) = sin(pi x) + 0.5 sin(3 pi x),

whose exact solution is the decaying Fourier series u = exp(-alpha pi^2 t) sin(pi x)
+ 0.5 exp(-9 alpha pi^2 t) sin(3 pi x) (`heat_reference`)."""
import numpy as np

import rtx
import rtx.nn as nn
from rtx.science.pinn import PINN, jacobian, latin_hypercube


def heat_reference(x, t, alpha=0.1):
    x, t = np.asarray(x, dtype=np.float64), np.asarray(t, dtype=np.float64)
    return (np.exp(-alpha * np.pi ** 2 * t) * np.sin(np.pi * x)
            + 0.5 * np.exp(-9 * alpha * np.pi ** 2 * t) * np.sin(3 * np.pi * x))


def heat_residual(net, xt, alpha=0.1):
    """u_t - alpha u_xx at the points xt = (x, t) (N, 2)."""
    d = jacobian(net(xt), xt)[:, 0]                # (N, 2): u_x, u_t
    u_xx = jacobian(d[:, :1], xt)[:, 0, 0]
    return d[:, 1] - alpha * u_xx


def heat(adam_steps=1000, lbfgs_steps=2000, n_interior=1000, n_boundary=100, n_initial=100, width=32, alpha=0.1,
         seed=0, log=None, return_model=False):
    """Returns the relative L2 error against heat_reference on a 101 x 101 grid (and the network)."""
    rtx.manual_seed(seed)
    f64 = rtx.float64
    net = nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                        nn.Linear(width, 1)).to(f64)

    rng = np.random.default_rng(seed)
    xb = np.stack([rng.choice([0.0, 1.0], n_boundary), rng.random(n_boundary)], 1)
    x0 = np.stack([np.linspace(0, 1, n_initial), np.zeros(n_initial)], 1)
    pinn = PINN(net, lambda net, xt: heat_residual(net, xt, alpha),
                latin_hypercube(n_interior, [(0, 1), (0, 1)], seed=seed, dtype=f64),
                boundary=[(rtx.tensor(xb, dtype=f64), rtx.zeros(n_boundary, 1, dtype=f64))],
                initial=[(rtx.tensor(x0, dtype=f64), rtx.tensor(heat_reference(x0[:, :1], 0.0, alpha), dtype=f64))])
    pinn.fit(adam_steps=adam_steps, lr=3e-3, lbfgs_steps=lbfgs_steps, callback=log)
    X, T = np.meshgrid(np.linspace(0, 1, 101), np.linspace(0, 1, 101))
    with rtx.no_grad():
        u = net(rtx.tensor(np.stack([X.ravel(), T.ravel()], 1), dtype=f64)).numpy().ravel()
    ref = heat_reference(X.ravel(), T.ravel(), alpha)
    err = float(np.linalg.norm(u - ref) / np.linalg.norm(ref))
    return (err, net) if return_model else err
