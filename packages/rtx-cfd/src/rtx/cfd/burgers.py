"""1D periodic solvers on [0, length): viscous Burgers u_t + (u^2/2)_x = nu u_xx and linear
advection-diffusion u_t + c u_x = nu u_xx, by finite volumes (MUSCL reconstruction, Rusanov flux,
central diffusion, SSP-RK2) and pseudo-spectrally (rtx.fft). Inputs are (..., N) arrays or tensors
(a batch of initial conditions at once); everything is rtx ops, so gradients flow to u0 and nu.
Each solver takes `stats=`, a dict it fills with steps, dt, wall_time and time_per_step (a function
returns the field itself, so the report goes to the caller's dict, as the 2D solvers' .stats)."""
from __future__ import annotations

import time

import numpy as np

import rtx


def _tensor(u0, dtype=rtx.float64):
    return u0 if isinstance(u0, rtx.Tensor) else rtx.as_tensor(np.asarray(u0, dtype=np.float64), dtype=dtype)


def _minmod(a, b):
    return 0.5 * (a.sign() + b.sign()) * rtx.minimum(a.abs(), b.abs())


def _fv_rhs(u, h, flux, speed, nu, limiter):
    up, um = rtx.roll(u, -1, dims=-1), rtx.roll(u, 1, dims=-1)
    if limiter == "minmod":
        slope = _minmod(up - u, u - um)
    elif limiter is None:
        slope = 0.5 * (up - um)  # unlimited (Fromm): second order for smooth data
    elif limiter == "none-first-order":
        slope = u * 0.0
    else:
        raise ValueError(f"limiter must be 'minmod', None or 'none-first-order', got {limiter!r}")
    left = u + 0.5 * slope                      # state just left of face i+1/2
    right = rtx.roll(u - 0.5 * slope, -1, dims=-1)  # state just right of it
    a = rtx.maximum(speed(left).abs(), speed(right).abs())
    f = 0.5 * (flux(left) + flux(right)) - 0.5 * a * (right - left)
    div = (f - rtx.roll(f, 1, dims=-1)) / h
    return -div + nu * (up - 2 * u + um) / h ** 2


def _report(stats, steps, dt, t0):
    if stats is not None:
        wall = time.perf_counter() - t0
        stats.update(steps=steps, dt=dt, wall_time=wall, time_per_step=wall / steps)


def _fv(u0, nu, t_end, dt, length, limiter, flux, speed, cfl, stats):
    u = _tensor(u0)
    n = u.shape[-1]
    h = length / n
    if dt is None:
        vmax = max(float(speed(u).detach().abs().max().item()), 1e-12)
        nu_f = float(nu.detach().item()) if isinstance(nu, rtx.Tensor) else float(nu)
        dt = cfl * min(h / vmax, 0.5 * h * h / nu_f if nu_f > 0 else np.inf)
    steps = max(1, int(np.ceil(t_end / dt - 1e-9)))
    dt = t_end / steps
    t0 = time.perf_counter()
    for _ in range(steps):  # SSP-RK2 (Heun): TVD with the minmod slopes
        u1 = u + dt * _fv_rhs(u, h, flux, speed, nu, limiter)
        u = 0.5 * (u + u1 + dt * _fv_rhs(u1, h, flux, speed, nu, limiter))
    _report(stats, steps, dt, t0)
    return u


def burgers_fv(u0, nu, t_end, dt=None, length=1.0, limiter="minmod", cfl=0.4, *, stats=None):
    """Finite-volume viscous Burgers from cell averages u0 (..., N) to t_end."""
    return _fv(u0, nu, t_end, dt, length, limiter, lambda u: 0.5 * u * u, lambda u: u, cfl, stats)


def advection_diffusion_fv(u0, c, nu, t_end, dt=None, length=1.0, limiter="minmod", cfl=0.4, *, stats=None):
    """Finite-volume u_t + c u_x = nu u_xx (constant c) from cell averages u0 (..., N) to t_end."""
    return _fv(u0, nu, t_end, dt, length, limiter, lambda u: c * u, lambda u: u * 0.0 + c, cfl, stats)


def burgers_spectral(u0, nu, t_end, dt=1e-4, length=1.0, *, stats=None):
    """Pseudo-spectral viscous Burgers (2/3 dealiasing, integrating factor + RK4) at the N grid
    points x_j = j length / N, from u0 (..., N) to t_end."""
    u0 = _tensor(u0)
    n = u0.shape[-1]
    k = rtx.tensor(2 * np.pi * np.fft.rfftfreq(n, d=length / n), dtype=rtx.float64)
    dealias = rtx.tensor((np.arange(n // 2 + 1) < n / 3).astype(np.float64))
    steps = max(1, int(round(t_end / dt)))
    dt = t_end / steps
    e_half = rtx.exp(-nu * k ** 2 * (dt / 2)).to(rtx.complex128)
    e_full = e_half * e_half
    ik = (k * dealias).to(rtx.complex128) * 1j

    def nonlinear(v_hat):
        u = rtx.fft.irfft(v_hat, n=n)
        return -0.5 * ik * rtx.fft.rfft(u * u)

    t0 = time.perf_counter()
    v = rtx.fft.rfft(u0)
    for _ in range(steps):
        a = nonlinear(v)
        b = nonlinear(e_half * (v + dt / 2 * a))
        c = nonlinear(e_half * v + dt / 2 * b)
        d = nonlinear(e_full * v + dt * e_half * c)
        v = e_full * v + dt / 6 * (e_full * a + 2 * e_half * (b + c) + d)
    out = rtx.fft.irfft(v, n=n)
    _report(stats, steps, dt, t0)
    return out


def advection_diffusion_spectral(u0, c, nu, t_end, length=1.0, *, stats=None):
    """Exact-in-time spectral solution of u_t + c u_x = nu u_xx at the grid points: each Fourier
    mode is multiplied by exp((-i c k - nu k^2) t) (one step of size t_end)."""
    t0 = time.perf_counter()
    u0 = _tensor(u0)
    n = u0.shape[-1]
    k = 2 * np.pi * np.fft.rfftfreq(n, d=length / n)
    g = rtx.tensor(np.exp(-1j * c * k * t_end), dtype=rtx.complex128)
    decay = rtx.exp(-nu * rtx.tensor(k ** 2, dtype=rtx.float64) * t_end).to(rtx.complex128)
    out = rtx.fft.irfft(rtx.fft.rfft(u0) * g * decay, n=n)
    _report(stats, 1, t_end, t0)
    return out


def burgers_cole_hopf(x, t, nu, u0_potential, length=1.0, quad=4096):
    """Reference solution of viscous Burgers on the periodic [0, length) by the Cole-Hopf transform,
    for an initial condition given by its periodic potential Phi (u0 = dPhi/dx):
    u(x, t) = -2 nu d/dx log(theta), theta = integral of exp(-(x-s)^2 / (4 nu t) - Phi(s) / (2 nu)) ds
    over the periodic images (NumPy, float64)."""
    s = (np.arange(quad) + 0.5) * length / quad
    phi = u0_potential(s) / (2 * nu)
    phi = phi - phi.min()
    x = np.asarray(x, dtype=np.float64)[:, None]
    num = np.zeros(x.shape[0])
    den = np.zeros(x.shape[0])
    for m in range(-3, 4):
        d = x - (s[None, :] + m * length)
        g = np.exp(-d ** 2 / (4 * nu * t) - phi[None, :])
        num += (d / t * g).sum(axis=1)
        den += g.sum(axis=1)
    return num / den
