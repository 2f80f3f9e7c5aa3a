"""A neural ODE dy/dt = f_theta(y) fits a damped spiral y(t) = exp(A t) y0 (the torchdiffeq demo)."""
import numpy as np

import rtx
import rtx.nn as nn
import rtx.optim as optim
from rtx.science import odeint

A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = np.array([2.0, 0.0])


def spiral_truth(t):
    """exp(A t) y0 in closed form: A = -0.1 I + 2 J with J a rotation generator."""
    t = np.asarray(t, dtype=np.float64)[:, None]
    c, s = np.cos(2 * t), np.sin(2 * t)
    return np.exp(-0.1 * t) * np.concatenate([c * Y0[0] + s * Y0[1], -s * Y0[0] + c * Y0[1]], 1)


def spiral(iters=150, n_points=21, t_final=2.0, hidden=32, lr=1e-2, seed=0, log=None, return_model=False):
    """Returns the relative L2 error of the fitted trajectory on a 10x finer time grid than the data."""
    t = np.linspace(0, t_final, n_points)
    rtx.manual_seed(seed)
    func = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 2)).to(rtx.float64)
    f = lambda s, y: func(y)  # noqa: E731
    opt = optim.Adam(func.parameters(), lr=lr)
    tt, target = rtx.tensor(t, dtype=rtx.float64), rtx.tensor(spiral_truth(t), dtype=rtx.float64)
    y0 = rtx.tensor(Y0, dtype=rtx.float64)
    for it in range(iters):
        pred = odeint(f, y0, tt, method="rk4", options={"step_size": 0.1})
        loss = ((pred - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log is not None and it % 50 == 0:
            log({"iter": it, "loss": float(loss)})
    fine = np.linspace(0, t_final, 10 * n_points)
    with rtx.no_grad():
        pred = odeint(f, y0, rtx.tensor(fine, dtype=rtx.float64), method="dopri5", rtol=1e-8, atol=1e-10).numpy()
    ref = spiral_truth(fine)
    err = float(np.linalg.norm(pred - ref) / np.linalg.norm(ref))
    return (err, (fine, pred, ref, t, spiral_truth(t))) if return_model else err
