"""Pseudo-spectral solvers for periodic flows on rtx.fft.

Spectral2D: vorticity form, w_t + u . grad w = nu lap w, on [0, L)^2.
Spectral3D: rotational velocity form, u_t = P(u x w) + nu lap u, on [0, L)^3 (P: Leray projection).
Both: products in physical space with the 2/3 rule, classical RK4 with an integrating factor for
the viscous term (exact for it), so a linear decay such as Taylor-Green's is exact to rounding."""
from __future__ import annotations

import time

import numpy as np

import rtx

from .flow import Flow2D


def _rk4_if(v, nonlinear, e_half, e_full, dt):
    a = nonlinear(v)
    b = nonlinear(e_half * (v + dt / 2 * a))
    c = nonlinear(e_half * v + dt / 2 * b)
    d = nonlinear(e_full * v + dt * e_half * c)
    return e_full * v + dt / 6 * (e_full * a + 2 * e_half * (b + c) + d)


class Spectral2D:
    """2D periodic incompressible flow in vorticity form on an n x n grid of [0, length)^2."""

    def __init__(self, n, nu, length=2 * np.pi, dtype=rtx.float64, device=None, dealias=True):
        self.n, self.nu, self.length, self.dtype, self.device = n, nu, length, dtype, device
        kx = 2 * np.pi * np.fft.rfftfreq(n, d=length / n)
        ky = 2 * np.pi * np.fft.fftfreq(n, d=length / n)
        self.kx_np, self.ky_np = kx[None, :], ky[:, None]
        k2 = self.kx_np ** 2 + self.ky_np ** 2
        self.k2_np = k2
        keep = (np.abs(self.kx_np) < (2 / 3) * (n / 2) * 2 * np.pi / length) & \
               (np.abs(self.ky_np) < (2 / 3) * (n / 2) * 2 * np.pi / length) if dealias else np.ones_like(k2, bool)
        inv = np.where(k2 > 0, 1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
        c = lambda a: rtx.tensor(a, dtype=rtx.complex128 if dtype == rtx.float64 else rtx.complex64, device=device)  # noqa: E731
        self.ikx, self.iky = c(1j * self.kx_np * keep), c(1j * self.ky_np * keep)
        self.inv_k2 = c(inv * keep)
        self.keep = c(keep * 1.0)
        self.x = np.arange(n) * length / n
        self.stats = {}

    def velocity(self, w_hat):
        psi = w_hat * self.inv_k2
        n = self.n
        return rtx.fft.irfft2(self.iky * psi, s=(n, n)), rtx.fft.irfft2(-self.ikx * psi, s=(n, n))

    def _nonlinear(self, w_hat):
        n = self.n
        u, v = self.velocity(w_hat)
        wx = rtx.fft.irfft2(self.ikx * w_hat, s=(n, n))
        wy = rtx.fft.irfft2(self.iky * w_hat, s=(n, n))
        return -rtx.fft.rfft2(u * wx + v * wy) * self.keep

    def run(self, w0, t_end, dt=None, cfl=0.5):
        """Advance vorticity w0 (n, n) (array or tensor) to t_end; returns the final vorticity tensor.
        dt=None picks cfl * dx / max|u| from the initial field (at most t_end / 10)."""
        w0 = rtx.as_tensor(w0, dtype=self.dtype).to(self.device) if not isinstance(w0, rtx.Tensor) else w0
        w_hat = rtx.fft.rfft2(w0)
        if dt is None:
            u, v = self.velocity(w_hat)
            umax = max(float(u.detach().abs().max().item()), float(v.detach().abs().max().item()), 1e-12)
            dt = min(cfl * self.length / self.n / umax, t_end / 10 if t_end > 0 else 1.0)
        steps = max(1, int(np.ceil(t_end / dt - 1e-9))) if t_end > 0 else 0
        dt = t_end / steps if steps else 0.0
        lin = -self.nu * rtx.tensor(self.k2_np, dtype=self.dtype, device=self.device)
        e_half = rtx.exp(lin * (dt / 2)).to(w_hat.dtype)
        e_full = e_half * e_half
        t0 = time.perf_counter()
        for _ in range(steps):
            w_hat = _rk4_if(w_hat, self._nonlinear, e_half, e_full, dt)
        wall = time.perf_counter() - t0
        self.stats = dict(steps=steps, dt=dt, wall_time=wall, time_per_step=wall / max(steps, 1), t=t_end)
        return rtx.fft.irfft2(w_hat, s=(self.n, self.n))

    def to_flow(self, w, t=0.0):
        """Flow2D of a vorticity field (pressure from the Poisson equation lap p = -div(u . grad u))."""
        n = self.n
        w_hat = rtx.fft.rfft2(w)
        u, v = self.velocity(w_hat)
        c = lambda f: rtx.fft.rfft2(f)  # noqa: E731
        ux, uy = rtx.fft.irfft2(self.ikx * c(u), s=(n, n)), rtx.fft.irfft2(self.iky * c(u), s=(n, n))
        vx, vy = rtx.fft.irfft2(self.ikx * c(v), s=(n, n)), rtx.fft.irfft2(self.iky * c(v), s=(n, n))
        src = -(ux * ux + 2 * uy * vx + vy * vy)
        p = rtx.fft.irfft2(-rtx.fft.rfft2(src) * self.inv_k2, s=(n, n))
        return Flow2D(self.x, self.x, u, v, p, t, lx=self.length, ly=self.length, periodic=(True, True),
                      stats=dict(self.stats))


class Spectral3D:
    """3D periodic incompressible flow (velocity form) on an n^3 grid of [0, length)^3.
    Velocity arrays are (3, n, n, n) indexed [component, z, y, x]."""

    def __init__(self, n, nu, length=2 * np.pi, dtype=rtx.float64, device=None):
        self.n, self.nu, self.length, self.dtype, self.device = n, nu, length, dtype, device
        k = 2 * np.pi * np.fft.fftfreq(n, d=length / n)
        kr = 2 * np.pi * np.fft.rfftfreq(n, d=length / n)
        kz, ky, kx = np.meshgrid(k, k, kr, indexing="ij")
        self.k_np = (kx, ky, kz)
        k2 = kx ** 2 + ky ** 2 + kz ** 2
        self.k2_np = k2
        cut = (2 / 3) * (n / 2) * 2 * np.pi / length
        keep = (np.abs(kx) < cut) & (np.abs(ky) < cut) & (np.abs(kz) < cut)
        inv = np.where(k2 > 0, 1.0 / np.where(k2 > 0, k2, 1.0), 0.0)
        ct = rtx.complex128 if dtype == rtx.float64 else rtx.complex64
        c = lambda a: rtx.tensor(a, dtype=ct, device=device)  # noqa: E731
        self.ik = [c(1j * a * keep) for a in (kx, ky, kz)]
        self.kk = [[rtx.tensor(a * b * inv, dtype=dtype, device=device).to(ct) for b in (kx, ky, kz)]
                   for a in (kx, ky, kz)]
        self.keep = c(keep * 1.0)
        self.stats = {}

    def _fft(self, f):
        return rtx.fft.rfftn(f, dim=(-3, -2, -1))

    def _ifft(self, f):
        n = self.n
        return rtx.fft.irfftn(f, s=(n, n, n), dim=(-3, -2, -1))

    def project(self, uh):
        """Leray projection of a list of three spectral components: u - k (k . u) / k^2."""
        return [uh[i] - sum(self.kk[i][j] * uh[j] for j in range(3)) for i in range(3)]

    def vorticity(self, uh):
        ik = self.ik
        return [ik[1] * uh[2] - ik[2] * uh[1], ik[2] * uh[0] - ik[0] * uh[2], ik[0] * uh[1] - ik[1] * uh[0]]

    def _nonlinear(self, uh):
        u = [self._ifft(a) for a in uh]
        w = [self._ifft(a) for a in self.vorticity(uh)]
        cross = [u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]]
        return self.project([self._fft(c) * self.keep for c in cross])

    def run(self, u0, t_end, dt):
        """Advance velocity u0 (3, n, n, n) to t_end with steps of about dt; returns (3, n, n, n)."""
        u0 = rtx.as_tensor(u0, dtype=self.dtype).to(self.device) if not isinstance(u0, rtx.Tensor) else u0
        uh = self.project([self._fft(u0[i]) for i in range(3)])
        steps = max(1, int(np.ceil(t_end / dt - 1e-9)))
        dt = t_end / steps
        lin = -self.nu * rtx.tensor(self.k2_np, dtype=self.dtype, device=self.device)
        e_half = rtx.exp(lin * (dt / 2)).to(uh[0].dtype)
        e_full = e_half * e_half
        t0 = time.perf_counter()
        for _ in range(steps):
            a = self._nonlinear(uh)
            b = self._nonlinear([e_half * (x + dt / 2 * y) for x, y in zip(uh, a)])
            c = self._nonlinear([e_half * x + dt / 2 * y for x, y in zip(uh, b)])
            d = self._nonlinear([e_full * x + dt * e_half * y for x, y in zip(uh, c)])
            uh = [e_full * x + dt / 6 * (e_full * p + 2 * e_half * (q + r) + s)
                  for x, p, q, r, s in zip(uh, a, b, c, d)]
        wall = time.perf_counter() - t0
        self.stats = dict(steps=steps, dt=dt, wall_time=wall, time_per_step=wall / steps, t=t_end)
        return rtx.stack([self._ifft(a) for a in uh])


def taylor_green_vorticity(n, length=2 * np.pi):
    """w = 2 sin x sin y on the n x n grid of [0, 2 pi)^2: u = sin x cos y, v = -cos x sin y."""
    x = np.arange(n) * length / n
    return 2 * np.sin(x)[None, :] * np.sin(x)[:, None]


def taylor_green_3d(n, length=2 * np.pi):
    """u = sin x cos y cos z, v = -cos x sin y cos z, w = 0 on the n^3 grid of [0, 2 pi)^3."""
    x = np.arange(n) * length / n
    z, y, xx = np.meshgrid(x, x, x, indexing="ij")
    return np.stack([np.sin(xx) * np.cos(y) * np.cos(z), -np.cos(xx) * np.sin(y) * np.cos(z), np.zeros_like(xx)])


def decaying_turbulence_vorticity(n, k_peak=4.0, energy=0.5, seed=0, length=2 * np.pi):
    """A random isotropic vorticity field with energy spectrum ~ k^4 exp(-2 (k / k_peak)^2)
    (the classic initial condition of 2D decaying turbulence), scaled to mean kinetic energy `energy`."""
    rng = np.random.default_rng(seed)
    k = 2 * np.pi * np.fft.fftfreq(n, d=length / n)
    kx, ky = np.meshgrid(k, k)
    kk = np.hypot(kx, ky)
    amp = np.where(kk > 0, kk ** 2 * np.exp(-(kk / k_peak) ** 2) / np.sqrt(np.maximum(kk, 1e-12)), 0.0) * kk
    w = np.real(np.fft.ifft2(amp * np.exp(2j * np.pi * rng.random((n, n)))))
    w_hat = np.fft.fft2(w)
    inv = np.where(kk > 0, 1.0 / np.maximum(kk, 1e-12) ** 2, 0.0)
    u = np.real(np.fft.ifft2(1j * ky * w_hat * inv))
    v = np.real(np.fft.ifft2(-1j * kx * w_hat * inv))
    e = 0.5 * np.mean(u ** 2 + v ** 2)
    return w * np.sqrt(energy / e)
