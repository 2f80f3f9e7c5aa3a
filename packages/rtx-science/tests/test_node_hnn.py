"""ODEBlock, trace estimators, a CNF's log-density against the change-of-variables formula, a
neural ODE fitting a spiral, and HNN/leapfrog energy conservation on the pendulum."""

import numpy as np

import rtx
import rtx.nn as nn
import rtx.optim as optim
from rtx.science import HNN, CNFDynamics, ODEBlock, exact_trace, hutchinson_trace, leapfrog, odeint

F64 = rtx.float64


def test_trace_estimators_match_the_exact_jacobian_trace():
    rtx.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 4)).to(F64)
    z = rtx.randn(3, 4, dtype=F64, requires_grad=True)
    f = net(z)
    exact = exact_trace(f, z).detach().numpy()
    J = np.stack([rtx.autograd.functional.jacobian(lambda v: net(v.reshape(1, 4)).reshape(4), z[i].detach())
                  .numpy() for i in range(3)])
    np.testing.assert_allclose(exact, np.trace(J, axis1=1, axis2=2), atol=1e-12)
    est = np.mean([hutchinson_trace(f, z).detach().numpy() for _ in range(4000)], axis=0)
    assert np.abs(est - exact).max() < 0.1 * np.abs(J).sum(axis=(1, 2)).max() / 4  # unbiased: mean converges


def test_cnf_log_density_of_a_linear_flow():
    # dz/dt = A z: z(1) = e^A z0 and log p1(z1) = log p0(z0) - tr(A) exactly
    A = rtx.tensor([[0.3, 0.5], [-0.2, -0.1]], dtype=F64)
    t = rtx.tensor([0.0, 1.0], dtype=F64)
    z0 = rtx.randn(5, 2, dtype=F64)
    zs, dlogp = odeint(CNFDynamics(lambda t, z: z @ A.T, exact=True), (z0, rtx.zeros(5, dtype=F64)), t)
    np.testing.assert_allclose(dlogp[-1].detach().numpy(), -0.2 * np.ones(5), atol=1e-6)
    np.testing.assert_allclose(zs[-1].detach().numpy(), z0.numpy() @ _expm(A.numpy()).T, atol=1e-6)
    # Hutchinson: one Rademacher probe per row is unbiased, so the mean over many rows converges
    z0 = rtx.randn(4000, 2, dtype=F64)
    _, dlogp = odeint(CNFDynamics(lambda t, z: z @ A.T), (z0, rtx.zeros(4000, dtype=F64)), t)
    assert abs(float(dlogp[-1].mean()) + 0.2) < 0.03


def test_neural_ode_fits_a_spiral():
    t = np.linspace(0, 2, 21)
    true_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
    y0 = np.array([2.0, 0.0])
    ys = np.stack([_expm(true_A * s) @ y0 for s in t])  # the spiral, closed form
    rtx.manual_seed(0)
    func = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2)).to(F64)
    f = lambda s, y: func(y)  # noqa: E731
    opt = optim.Adam(func.parameters(), lr=1e-2)
    tt, target = rtx.tensor(t, dtype=F64), rtx.tensor(ys, dtype=F64)
    y0t = rtx.tensor(y0, dtype=F64)
    first = None
    for _ in range(150):
        pred = odeint(f, y0t, tt, method="rk4", options={"step_size": 0.1})
        loss = ((pred - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = float(loss) if first is None else first
    assert float(loss) < 0.02 * first and float(loss) < 0.05, (first, float(loss))
    block = ODEBlock(f, 0.0, 2.0, method="rk4", options={"step_size": 0.1})
    pred = odeint(f, y0t, tt[[0, -1]], method="rk4", options={"step_size": 0.1})
    np.testing.assert_allclose(block(y0t).detach().numpy(), pred[-1].detach().numpy(), atol=1e-12)


def _expm(M):
    w, V = np.linalg.eig(M)
    return np.real(V @ np.diag(np.exp(w)) @ np.linalg.inv(V))


def test_leapfrog_conserves_pendulum_energy():
    def grad_h(q, p):  # H = p^2/2 + (1 - cos q)
        return rtx.sin(q), p
    q, p = leapfrog(grad_h, rtx.tensor([[1.0]], dtype=F64), rtx.tensor([[0.0]], dtype=F64), 0.1, 1000)
    E = (p ** 2 / 2 + 1 - rtx.cos(q)).numpy().ravel()
    assert np.abs(E - E[0]).max() / E[0] < 0.01


def test_hnn_learns_the_pendulum_and_conserves_energy():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.5, 1.5, size=(256, 2))
    dx = np.stack([x[:, 1], -np.sin(x[:, 0])], 1)
    X, DX = rtx.tensor(x, dtype=F64), rtx.tensor(dx, dtype=F64)
    rtx.manual_seed(0)
    hnn = HNN(1, hidden=32, separable=True).to(F64)
    opt = optim.Adam(hnn.parameters(), lr=1e-2)
    sched = optim.lr_scheduler.StepLR(opt, 200, 0.3)
    for _ in range(600):
        loss = ((hnn(X) - DX) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    assert float(loss) < 1e-4, float(loss)
    q, p = leapfrog(hnn.dH, rtx.tensor([[1.0]], dtype=F64), rtx.tensor([[0.0]], dtype=F64), 0.1, 1000)
    E = (p ** 2 / 2 + 1 - rtx.cos(q)).detach().numpy().ravel()  # the TRUE energy along the learned flow
    assert np.abs(E - E[0]).max() / E[0] < 0.01, np.abs(E - E[0]).max() / E[0]
