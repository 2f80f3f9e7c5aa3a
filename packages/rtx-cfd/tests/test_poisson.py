"""Poisson solvers against manufactured solutions; second-order convergence on three grids."""
import numpy as np
import pytest

import rtx
from rtx.cfd import FastPoisson, Grid, cg, poisson_fft


def _order(errors):
    return np.log2(np.asarray(errors[:-1]) / np.asarray(errors[1:]))


@pytest.mark.parametrize("kinds", [
    (("neumann", "neumann"), ("neumann", "neumann")),
    (("neumann", "dirichlet"), ("dirichlet", "dirichlet")),
    (("periodic", "periodic"), ("neumann", "neumann")),
])
def test_fast_poisson_second_order(kinds):
    # Exact solutions with the right boundary behaviour on [0, 1]^2 for each (left, right) kind.
    def mode(kind, s):
        return {("neumann", "neumann"): np.cos(np.pi * s), ("neumann", "dirichlet"): np.cos(np.pi * s / 2),
                ("dirichlet", "dirichlet"): np.sin(np.pi * s), ("periodic", "periodic"): np.sin(2 * np.pi * s)}[kind]
    k = {("neumann", "neumann"): np.pi, ("neumann", "dirichlet"): np.pi / 2, ("dirichlet", "dirichlet"): np.pi,
         ("periodic", "periodic"): 2 * np.pi}
    errors = []
    for n in (16, 32, 64):
        g = Grid(n, n)
        exact = mode(kinds[1], g.y)[:, None] * mode(kinds[0], g.x)[None, :]
        rhs = -(k[kinds[0]] ** 2 + k[kinds[1]] ** 2) * exact
        solve = FastPoisson(n, n, g.dx, g.dy, kinds[0], kinds[1])
        p = solve(rtx.tensor(rhs, dtype=rtx.float64)).numpy()
        if solve.singular:
            p = p - p.mean() + exact.mean()
        errors.append(np.abs(p - exact).max())
    order = _order(errors)
    assert np.all(order > 1.9), (errors, order)


def test_fast_poisson_is_the_discrete_inverse():
    # The solve inverts exactly the 5-point operator it is built from (checked with a dense matrix).
    from rtx.cfd import laplacian_1d
    nx, ny, dx, dy = 7, 5, 0.3, 0.2
    lx, ly = laplacian_1d(nx, dx, "neumann", "dirichlet"), laplacian_1d(ny, dy, "periodic", "periodic")
    big = np.kron(ly, np.eye(nx)) + np.kron(np.eye(ny), lx)
    b = np.random.default_rng(0).normal(size=(ny, nx))
    p = FastPoisson(nx, ny, dx, dy, ("neumann", "dirichlet"), ("periodic", "periodic"))(rtx.tensor(b)).numpy()
    np.testing.assert_allclose(p.ravel(), np.linalg.solve(big, b.ravel()), rtol=1e-10, atol=1e-12)


def test_poisson_fft_spectral():
    n = 32
    x = np.arange(n) * 2 * np.pi / n
    exact = np.sin(3 * x)[None, :] * np.cos(2 * x)[:, None] + 0.5 * np.cos(x)[:, None]
    rhs = -13 * np.sin(3 * x)[None, :] * np.cos(2 * x)[:, None] - 0.5 * np.cos(x)[:, None]
    p = poisson_fft(rtx.tensor(rhs, dtype=rtx.float64)).numpy()
    np.testing.assert_allclose(p, exact, atol=1e-12)


def test_cg_with_fast_preconditioner_matches_direct():
    n = 24
    g = Grid(n, n)
    solve = FastPoisson(n, n, g.dx, g.dy, ("dirichlet", "dirichlet"), ("dirichlet", "dirichlet"))
    from rtx.cfd import laplacian_1d
    big = np.kron(laplacian_1d(n, g.dy, "dirichlet", "dirichlet"), np.eye(n)) + \
        np.kron(np.eye(n), laplacian_1d(n, g.dx, "dirichlet", "dirichlet"))
    # A variable-coefficient SPD operator: -L + c(x) (no longer separable).
    c = 50 * np.random.default_rng(1).random((n, n))
    b = np.random.default_rng(2).normal(size=(n, n))
    ct = rtx.tensor(c)

    def apply(x):
        return -(rtx.tensor(big) @ x.reshape(-1)).reshape(n, n) + ct * x

    x, it, rel = cg(apply, rtx.tensor(b), precond=lambda r: -solve(r), tol=1e-11)
    ref = np.linalg.solve(-big + np.diag(c.ravel()), b.ravel()).reshape(n, n)
    np.testing.assert_allclose(x.numpy(), ref, rtol=1e-8, atol=1e-12)
    _, it_plain, _ = cg(apply, rtx.tensor(b), tol=1e-11, maxiter=5000)
    assert it < it_plain / 3, (it, it_plain)
