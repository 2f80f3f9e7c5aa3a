"""Pressure Poisson solvers.

- FastPoisson: the 5-point Laplacian on a rectangle with Neumann, Dirichlet or periodic sides is the
  sum of two 1D operators (L = Lx (x) I + I (x) Ly), so it is diagonalised by the tensor product of their
  eigenbases (Lynch, Rice & Thomas's fast diagonalisation: the bases are the DCT, DST and DFT matrices).
  A solve is four dense matmuls and one division, all rtx ops: exact to rounding, differentiable, and
  on the GPU it is four GEMMs.
- poisson_fft: doubly periodic spectral solve on rtx.fft.
- cg: preconditioned conjugate gradients for operators that are not separable (masked obstacles);
  FastPoisson of the unmasked box is the preconditioner.
"""
from __future__ import annotations

import numpy as np

import rtx

from .arrays import raw


def laplacian_1d(n, h, left, right):
    """The 1D second-difference matrix on n points. left/right: 'neumann' (ghost = p),
    'dirichlet' (value 0 on the face half a cell out: ghost = -p), 'node' (value 0 one full spacing
    out: the unknowns are the interior nodes, as for the normal velocity between two walls) or
    'periodic' (both)."""
    a = np.zeros((n, n))
    i = np.arange(n)
    a[i, i] = -2.0
    a[i[:-1], i[:-1] + 1] = 1.0
    a[i[1:], i[1:] - 1] = 1.0
    if left == "periodic" or right == "periodic":
        if left != right:
            raise ValueError("periodic must be given on both ends")
        a[0, -1] += 1.0
        a[-1, 0] += 1.0
    else:
        for end, kind in ((0, left), (n - 1, right)):
            if kind == "neumann":
                a[end, end] += 1.0
            elif kind == "dirichlet":
                a[end, end] -= 1.0
            elif kind != "node":
                raise ValueError(f"1D boundary kind must be 'neumann', 'dirichlet', 'node' or 'periodic', got {kind!r}")
    return a / h ** 2


class FastPoisson:
    """Solve (Lx (x) I + I (x) Ly + shift) p = b on an (ny, nx) cell-centred grid.

    `x` and `y` are (left, right) kinds for laplacian_1d. With a zero eigenvalue (all Neumann or
    periodic) the solution has zero mean and the mean of b is ignored, as the projection needs.
    `scale` and `shift` give the Helmholtz form (shift + scale * L) used by implicit diffusion."""

    def __init__(self, nx, ny, dx, dy, x=("neumann", "neumann"), y=("neumann", "neumann"),
                 dtype=rtx.float64, device=None, shift=0.0, scale=1.0):
        lam_x, qx = np.linalg.eigh(laplacian_1d(nx, dx, *x))
        lam_y, qy = np.linalg.eigh(laplacian_1d(ny, dy, *y))
        lam = shift + scale * (lam_y[:, None] + lam_x[None, :])
        tiny = 1e-10 * np.abs(lam).max()
        inv = np.where(np.abs(lam) > tiny, 1.0 / np.where(np.abs(lam) > tiny, lam, 1.0), 0.0)
        self.singular = bool((np.abs(lam) <= tiny).any())
        t = lambda a: rtx.tensor(a, dtype=dtype, device=device)  # noqa: E731
        self.qx, self.qxt, self.qy, self.qyt, self.inv = t(qx), t(qx.T.copy()), t(qy), t(qy.T.copy()), t(inv)
        self.shape = (ny, nx)
        self._raw = None

    def __call__(self, b):
        """The solution for a tensor b (differentiable), or for a raw NumPy/CuPy array b (no autograd)."""
        if tuple(b.shape[-2:]) != self.shape:
            raise ValueError(f"FastPoisson expects a right-hand side of shape (..., {self.shape[0]}, {self.shape[1]}), "
                             f"got {tuple(b.shape)}")
        qx, qxt, qy, qyt, inv = self.qx, self.qxt, self.qy, self.qyt, self.inv
        if not isinstance(b, rtx.Tensor):
            if self._raw is None:
                self._raw = tuple(raw(m) for m in (qx, qxt, qy, qyt, inv))
            qx, qxt, qy, qyt, inv = self._raw
        return qy @ ((qyt @ b @ qx) * inv) @ qxt


class Helmholtz:
    """Solve (I - a L) x = b for the 5-point Laplacian L of laplacian_1d kinds, by the same fast
    diagonalisation; `a` (a number, or a scalar tensor such as dt * nu / 2 with nu requiring grad)
    may change from call to call: only the diagonal 1 / (1 - a lambda) is recomputed (cached for numbers).
    Used for the Crank-Nicolson half of the semi-implicit time step."""

    def __init__(self, nx, ny, dx, dy, x, y, dtype=rtx.float64, device=None):
        lam_x, qx = np.linalg.eigh(laplacian_1d(nx, dx, *x))
        lam_y, qy = np.linalg.eigh(laplacian_1d(ny, dy, *y))
        self.lam_np = lam_y[:, None] + lam_x[None, :]
        t = lambda a: rtx.tensor(a, dtype=dtype, device=device)  # noqa: E731
        self.qx, self.qxt, self.qy, self.qyt = t(qx), t(qx.T.copy()), t(qy), t(qy.T.copy())
        self.lam, self._t, self._cache = t(self.lam_np), t, {}
        self.shape = (ny, nx)
        self._raw = None

    def __call__(self, b, a):
        """b a tensor (differentiable; a a number or a tensor) or a raw NumPy/CuPy array (a a number)."""
        qx, qxt, qy, qyt = self.qx, self.qxt, self.qy, self.qyt
        is_raw = not isinstance(b, rtx.Tensor)
        if is_raw:
            if self._raw is None:
                self._raw = tuple(raw(m) for m in (qx, qxt, qy, qyt))
            qx, qxt, qy, qyt = self._raw
            a = float(a)
        if isinstance(a, rtx.Tensor):
            inv = 1.0 / (1.0 - a * self.lam)
        else:
            inv = self._cache.get((a, is_raw))
            if inv is None:
                self._cache.clear()  # one step size at a time (adaptive dt changes it rarely)
                inv = self._t(1.0 / (1.0 - a * self.lam_np))
                inv = self._cache[(a, is_raw)] = raw(inv) if is_raw else inv
        return qy @ ((qyt @ b @ qx) * inv) @ qxt


def poisson_fft(b, lx=2 * np.pi, ly=2 * np.pi):
    """Spectral solve of lap p = b on the doubly periodic box (zero-mean solution), via rtx.fft."""
    ny, nx = b.shape[-2:]
    kx = 2 * np.pi * np.fft.rfftfreq(nx, d=lx / nx)
    ky = 2 * np.pi * np.fft.fftfreq(ny, d=ly / ny)
    k2 = ky[:, None] ** 2 + kx[None, :] ** 2
    inv = np.where(k2 > 0, -1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
    inv = rtx.tensor(inv, dtype=b.dtype, device=b.device)
    return rtx.fft.irfft2(rtx.fft.rfft2(b) * inv, s=(ny, nx))


def cg(apply_a, b, x0=None, precond=None, tol=1e-8, maxiter=500):
    """Preconditioned conjugate gradients for a symmetric positive (semi-)definite operator.

    apply_a and precond map tensors to tensors of b's shape (or raw arrays to raw arrays). Stops when
    ||r|| <= tol * ||b||. Returns (x, iterations, relative residual). On tensors every step is rtx ops,
    so gradients flow through the unrolled iterations."""
    x = b * 0.0 if x0 is None else x0
    r = b - apply_a(x)
    bnorm = float((b * b).sum()) ** 0.5 or 1.0
    z = precond(r) if precond is not None else r
    d = z
    rz = (r * z).sum()
    it, rel = 0, float((r * r).sum()) ** 0.5 / bnorm
    while rel > tol and it < maxiter:
        ad = apply_a(d)
        dad = (d * ad).sum()
        if float(dad) == 0.0 or float(rz) == 0.0:  # the preconditioner sees nothing left to reduce
            break
        alpha = rz / dad
        x = x + alpha * d
        r = r - alpha * ad
        z = precond(r) if precond is not None else r
        rz_new = (r * z).sum()
        d = z + (rz_new / rz) * d
        rz = rz_new
        it += 1
        rel = float((r * r).sum()) ** 0.5 / bnorm
    return x, it, rel
