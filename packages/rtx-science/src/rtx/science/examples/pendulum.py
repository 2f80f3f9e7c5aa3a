"""An HNN learns the pendulum H = p^2/2 + (1 - cos q) from vector-field samples; leapfrog rolls the
learned flow out for 1000 steps and the TRUE energy along it must stay within 1%."""
import numpy as np

import rtx
import rtx.optim as optim
from rtx.science import HNN, leapfrog


def pendulum_energy(q, p):
    return p ** 2 / 2 + 1 - np.cos(q)


def pendulum(iters=600, n_samples=256, hidden=32, steps=1000, dt=0.1, q0=1.0, seed=0, log=None,
             return_model=False):
    """Returns max_t |E(t) - E(0)| / E(0) of the true energy along the learned leapfrog rollout."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, size=(n_samples, 2))
    X = rtx.tensor(x, dtype=rtx.float64)
    DX = rtx.tensor(np.stack([x[:, 1], -np.sin(x[:, 0])], 1), dtype=rtx.float64)
    rtx.manual_seed(seed)
    hnn = HNN(1, hidden=hidden, separable=True).to(rtx.float64)
    opt = optim.Adam(hnn.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.StepLR(opt, max(1, iters // 3), 0.3)
    for it in range(iters):
        loss = ((hnn(X) - DX) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if log is not None and it % 100 == 0:
            log({"iter": it, "loss": float(loss)})
    q, p = leapfrog(hnn.dH, rtx.tensor([[q0]], dtype=rtx.float64), rtx.tensor([[0.0]], dtype=rtx.float64), dt, steps)
    q, p = q.detach().numpy().ravel(), p.detach().numpy().ravel()
    E = pendulum_energy(q, p)
    drift = float(np.abs(E - E[0]).max() / E[0])
    return (drift, (dt * np.arange(steps + 1), q, p, E)) if return_model else drift
