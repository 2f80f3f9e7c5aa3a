"""LBFGS: minimises the Rosenbrock function with the strong-Wolfe line search, keeps its history
across step() calls, needs a closure, and survives a state_dict round trip."""
from __future__ import annotations

import numpy as np
import pytest

import rtx
from rtx.optim import LBFGS


def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _closure(opt, x, f=_rosenbrock):
    def closure():
        opt.zero_grad()
        loss = f(x)
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("history_size", [100, 3])
def test_strong_wolfe_minimises_rosenbrock(history_size):
    x = rtx.tensor([-1.5, 2.0], dtype=rtx.float64, requires_grad=True)
    opt = LBFGS([x], lr=1, max_iter=100, history_size=history_size, line_search_fn="strong_wolfe",
                tolerance_grad=1e-12, tolerance_change=1e-14)
    closure = _closure(opt, x)
    for _ in range(3):
        opt.step(closure)
    assert _rosenbrock(x).item() < 1e-6
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-3)
    state = opt.state[x]
    assert state["n_iter"] > 10 and state["func_evals"] >= state["n_iter"]
    assert len(state["old_dirs"]) <= history_size


def test_fixed_step_without_line_search_descends_a_quadratic():
    # f = 1/2 x^T A x - b^T x with A positive definite: L-BFGS with unit steps converges
    a = rtx.tensor([[3.0, 0.5, 0.0], [0.5, 2.0, 0.2], [0.0, 0.2, 1.0]], dtype=rtx.float64)
    b = rtx.tensor([1.0, -2.0, 0.5], dtype=rtx.float64)
    x = rtx.zeros(3, dtype=rtx.float64, requires_grad=True)
    opt = LBFGS([x], lr=1, max_iter=50, tolerance_grad=1e-12, tolerance_change=1e-14)
    opt.step(_closure(opt, x, lambda x: 0.5 * (x @ (a @ x)) - b @ x))
    expected = np.linalg.solve(a.numpy(), b.numpy())
    np.testing.assert_allclose(x.detach().numpy(), expected, atol=1e-6)


def test_returns_the_first_loss_and_stops_at_an_optimum():
    x = rtx.tensor([1.0, 1.0], dtype=rtx.float64, requires_grad=True)
    opt = LBFGS([x])
    loss = opt.step(_closure(opt, x))
    assert loss.item() == 0.0 and opt.state[x]["n_iter"] == 0


def test_several_parameters_are_one_flat_vector():
    u = rtx.tensor([[-1.5]], dtype=rtx.float64, requires_grad=True)
    v = rtx.tensor(2.0, dtype=rtx.float64, requires_grad=True)
    opt = LBFGS([u, v], max_iter=200, line_search_fn="strong_wolfe", tolerance_grad=1e-12, tolerance_change=1e-14)
    opt.step(_closure(opt, None, lambda _: (1 - u[0, 0]) ** 2 + 100 * (v - u[0, 0] ** 2) ** 2))
    assert abs(u.item() - 1) < 1e-3 and abs(v.item() - 1) < 1e-3


def test_needs_a_closure_and_one_group():
    x = rtx.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires a closure"):
        LBFGS([x]).step(None)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        LBFGS([{"params": [x]}, {"params": [rtx.zeros(1, requires_grad=True)]}])
    opt = LBFGS([x], line_search_fn="backtracking")
    x.data = rtx.tensor([0.5, 0.5])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(_closure(opt, x))


def test_state_dict_round_trip_continues_identically():
    def run(opt, x, steps):
        closure = _closure(opt, x)
        for _ in range(steps):
            opt.step(closure)

    def make(x):
        return LBFGS([x], max_iter=4, history_size=5, line_search_fn="strong_wolfe")
    x = rtx.tensor([-1.5, 2.0], dtype=rtx.float64, requires_grad=True)
    run(make(x), x, 4)
    y = rtx.tensor([-1.5, 2.0], dtype=rtx.float64, requires_grad=True)
    first = make(y)
    run(first, y, 2)
    z = rtx.tensor(y.detach().numpy().copy(), requires_grad=True)
    second = make(z)
    second.load_state_dict(first.state_dict())
    run(second, z, 2)
    np.testing.assert_array_equal(z.detach().numpy(), x.detach().numpy())
