"""LNN: accelerations from the Euler-Lagrange equations against closed forms (pendulum; a coupled
quadratic Lagrangian with gyroscopic terms), gradients by finite differences in float64, and a short
fit to pendulum accelerations."""
import numpy as np

import rtx
import rtx.nn as nn
from rtx.science import LNN


class _Pendulum(nn.Module):      # L = 1/2 m l^2 qdot^2 + m g l cos q  ->  qddot = -(g / l) sin q
    def forward(self, x):
        m, g, l = 1.3, 9.81, 0.7
        return 0.5 * m * l * l * x[:, 1] ** 2 + m * g * l * x[:, 0].cos()


class _Quadratic(nn.Module):     # L = 1/2 qd^T M qd + qd^T C q - 1/2 q^T K q
    def __init__(self, M, C, K):
        super().__init__()
        self.M, self.C, self.K = (rtx.tensor(a) for a in (M, C, K))

    def forward(self, x):
        q, qd = x[:, :2], x[:, 2:]
        return (0.5 * (qd @ self.M * qd).sum(1) + (qd @ self.C * q).sum(1) - 0.5 * (q @ self.K * q).sum(1))


def test_pendulum_acceleration_closed_form():
    x = np.random.default_rng(0).uniform(-2, 2, (16, 2))
    out = LNN(1, net=_Pendulum())(rtx.tensor(x)).detach().numpy()
    np.testing.assert_allclose(out[:, 0], x[:, 1], atol=1e-12)
    np.testing.assert_allclose(out[:, 1], -9.81 / 0.7 * np.sin(x[:, 0]), rtol=1e-10, atol=1e-12)


def test_coupled_quadratic_lagrangian():
    # Euler-Lagrange: M qdd = (C^T - C) qd - K q (C not symmetric: a gyroscopic coupling)
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 2))
    M, C, K = a @ a.T + 2 * np.eye(2), rng.normal(size=(2, 2)), np.array([[3.0, 1.0], [1.0, 2.0]])
    x = rng.normal(size=(8, 4))
    out = LNN(2, net=_Quadratic(M, C, K))(rtx.tensor(x)).detach().numpy()
    q, qd = x[:, :2], x[:, 2:]
    ref = np.linalg.solve(M, ((C.T - C) @ qd.T - K @ q.T)).T
    np.testing.assert_allclose(out[:, 2:], ref, rtol=1e-10, atol=1e-12)


def test_gradients_against_finite_differences():
    rtx.manual_seed(0)
    lnn = LNN(1, hidden=5, layers=1).to(rtx.float64)
    x = rtx.tensor(np.random.default_rng(2).normal(size=(3, 2)), requires_grad=True)
    assert rtx.autograd.gradcheck(lambda v: lnn(v), (x,), eps=1e-6, atol=1e-6)
    w = lnn.net[0].weight
    assert rtx.autograd.gradcheck(lambda v: LNN(1, net=_WithWeight(lnn, v))(x.detach())[:, 1], (w.detach().clone()
                                  .requires_grad_(True),), eps=1e-6, atol=1e-6)


class _WithWeight(nn.Module):    # lnn.net with its first weight replaced by v (to check d qddot / d weight)
    def __init__(self, lnn, v):
        super().__init__()
        self.lnn, self.v = lnn, v

    def forward(self, x):
        net = self.lnn.net
        h = nn.functional.softplus(nn.functional.linear(x, self.v, net[0].bias))
        return net[2](h)


def test_fits_pendulum_accelerations():
    rng = np.random.default_rng(3)
    x = rng.uniform([-np.pi / 2, -2], [np.pi / 2, 2], (256, 2))
    target = rtx.tensor(-np.sin(x[:, :1]), dtype=rtx.float32)     # g / l = 1
    xt = rtx.tensor(x, dtype=rtx.float32)
    rtx.manual_seed(0)
    lnn = LNN(1, hidden=32, layers=2)
    opt = rtx.optim.Adam(lnn.parameters(), lr=1e-3)
    first = None
    for _ in range(150):
        loss = ((lnn(xt)[:, 1:] - target) ** 2).mean()
        first = float(loss) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss) < 0.05 * first, (first, float(loss))
