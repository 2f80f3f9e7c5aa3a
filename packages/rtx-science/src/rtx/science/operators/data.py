"""Training data for neural operators: 1D viscous Burgers (pseudo-spectral, on rtx.fft) and 2D
Darcy flow (finite differences), with random inputs drawn as in Li et al. 2021."""
from __future__ import annotations

import numpy as np

import rtx


def grf_1d(n_samples, n, alpha=2.5, tau=7.0, sigma=None, seed=0):
    """Periodic Gaussian random fields on [0, 1) with covariance sigma^2 (-Laplacian + tau^2)^-alpha."""
    rng = np.random.default_rng(seed)
    sigma = tau ** (0.5 * (2 * alpha - 1)) if sigma is None else sigma
    k = np.fft.rfftfreq(n, d=1.0 / n)
    coef = sigma * (4 * np.pi ** 2 * k ** 2 + tau ** 2) ** (-alpha / 2)
    coef[0] = 0.0
    xi = rng.normal(size=(n_samples, len(k))) + 1j * rng.normal(size=(n_samples, len(k)))
    return np.fft.irfft(xi * coef / np.sqrt(2), n=n, norm="forward")


def burgers_1d(u0, nu=0.1, t_final=1.0, dt=1e-4):
    """Solve u_t + (u^2/2)_x = nu u_xx on the periodic [0, 1) from u0 (B, N) to t_final.

    Pseudo-spectral in space (2/3-rule dealiasing) with an integrating factor for the viscous term
    and classical RK4 for the nonlinear one, all on rtx tensors and rtx.fft."""
    u0 = rtx.as_tensor(np.asarray(u0), dtype=rtx.float64)
    n = u0.shape[-1]
    k = rtx.tensor(2 * np.pi * np.fft.rfftfreq(n, d=1.0 / n), dtype=rtx.float64)
    dealias = rtx.tensor((np.arange(n // 2 + 1) < n / 3).astype(np.float64))
    steps = int(round(t_final / dt))
    dt = t_final / steps
    e_half = rtx.exp(-nu * k ** 2 * dt / 2).to(rtx.complex128)
    e_full = e_half * e_half
    ik = (k * dealias).to(rtx.complex128) * 1j

    def nonlinear(v_hat):
        u = rtx.fft.irfft(v_hat, n=n)
        return -0.5 * ik * rtx.fft.rfft(u * u)

    v = rtx.fft.rfft(u0)
    with rtx.no_grad():
        for _ in range(steps):
            a = nonlinear(v)
            b = nonlinear(e_half * (v + dt / 2 * a))
            c = nonlinear(e_half * v + dt / 2 * b)
            d = nonlinear(e_full * v + dt * e_half * c)
            v = e_full * v + dt / 6 * (e_full * a + 2 * e_half * (b + c) + d)
    return rtx.fft.irfft(v, n=n).numpy()


def darcy_2d(a):
    """Solve -div(a grad u) = 1 on the unit square, u = 0 on the boundary, for coefficient fields
    a (B, s, s) given at cell centres; returns u (B, s, s) at the same points (5-point scheme,
    harmonic means on faces, sparse direct solve via SciPy)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla
    a = np.asarray(a, dtype=np.float64)
    b, s, _ = a.shape
    h = 1.0 / (s + 1)
    out = np.zeros_like(a)
    idx = np.arange(s * s).reshape(s, s)
    for m in range(b):
        c = np.pad(a[m], 1, mode="edge")
        rows, cols, vals = [], [], []
        diag = np.zeros((s, s))
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nb = c[1 + di:s + 1 + di, 1 + dj:s + 1 + dj]
            face = 2 * a[m] * nb / (a[m] + nb)
            diag += face
            ii, jj = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
            ni, nj = ii + di, jj + dj
            ok = (ni >= 0) & (ni < s) & (nj >= 0) & (nj < s)
            rows.append(idx[ii[ok], jj[ok]])
            cols.append(idx[ni[ok], nj[ok]])
            vals.append(-face[ok])
        rows.append(idx.ravel())
        cols.append(idx.ravel())
        vals.append(diag.ravel())
        A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(s * s,) * 2)
        out[m] = spla.spsolve(A / h ** 2, np.ones(s * s)).reshape(s, s)
    return out
