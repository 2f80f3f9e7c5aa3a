"""Shared pieces of the ODE solvers: input normalisation (tuples, reversed time), error norms,
Hairer's first-step rule, step-size control and the quartic dense-output interpolant.

Time bookkeeping (t0, dt, error ratios) is done on Python floats in float64, as torchdiffeq does
with float64 scalar tensors: the step-size controller is not differentiated through.
"""
from __future__ import annotations

import math

import rtx


def rms_norm(x):
    return float((x * x).mean().sqrt().item()) if x.numel() else 0.0


def mixed_norm(sizes):
    """Max over tuple members of each member's RMS norm (torchdiffeq's default for tuple states)."""
    def norm(x):
        out, start = [], 0
        for n in sizes:
            out.append(rms_norm(x[start:start + n]))
            start += n
        return max(out)
    return norm


class WrapFunc:
    """Calls `base(t, y)` with t as a 0-d tensor of y's dtype; `perturb` nudges t by one ulp to
    sit on the right side of a discontinuity (torchdiffeq's perturb flag)."""

    def __init__(self, base):
        self.base = base
        self.nfe = 0

    def __call__(self, t, y, perturb=None):
        t = float(t)
        if perturb is True:
            t = math.nextafter(t, math.inf)
        elif perturb is False:
            t = math.nextafter(t, -math.inf)
        self.nfe += 1
        # rtx.full, not rtx.tensor: rtx.tensor(float, dtype=float64) rounds through float32 today.
        return self.base(rtx.full((), t, dtype=y.dtype, device=y.device), y)


class ReverseFunc:
    """d/ds y(-s) = -f(-s, y): integrating over decreasing t is integrating this over increasing -t."""

    def __init__(self, base):
        self.base = base

    def __call__(self, t, y):
        return -self.base(-t, y)


class TupleFunc:
    """Runs a function of a tuple state on one flat vector (so the solvers see a single tensor)."""

    def __init__(self, base, shapes):
        self.base = base
        self.shapes = shapes

    def __call__(self, t, y):
        f = self.base(t, flat_to_shape(y, (), self.shapes))
        return rtx.cat([f_.reshape(-1) for f_ in f])


def flat_to_shape(x, lead, shapes):
    out, start = [], 0
    for shape in shapes:
        n = math.prod(shape)
        out.append(x[..., start:start + n].reshape(*lead, *shape))
        start += n
    return tuple(out)


def _tuple_tol(name, tol, shapes, like):
    if isinstance(tol, (int, float)) or (isinstance(tol, rtx.Tensor) and tol.dim() == 0):
        return float(tol)
    tol = tuple(tol)
    if len(tol) != len(shapes):
        raise ValueError(f"odeint: a tuple {name} must have one entry per state tensor ({len(shapes)}), "
                         f"got {len(tol)}")
    return rtx.cat([rtx.full((math.prod(s),), float(v), dtype=like.dtype, device=like.device)
                    for v, s in zip(tol, shapes)])


def check_timelike(name, t):
    if not isinstance(t, rtx.Tensor):
        raise TypeError(f"odeint: {name} must be a 1-D floating point rtx.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"odeint: {name} must be a floating point Tensor, got {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"odeint: {name} must be one dimensional, got shape {tuple(t.shape)}")
    ts = [float(v) for v in t.detach().tolist()]
    reversed_ = len(ts) > 1 and all(b < a for a, b in zip(ts, ts[1:]))
    if reversed_:
        ts = [-v for v in ts]
    if not all(b > a for a, b in zip(ts, ts[1:])):
        raise ValueError(f"odeint: {name} must be strictly increasing or decreasing, got {ts}")
    return ts, reversed_


def check_inputs(func, y0, t, rtol, atol, method, options, solvers):
    """Normalise to one tensor state and increasing time. Returns what the solvers need."""
    shapes = None
    if isinstance(y0, (tuple, list)):
        y0 = tuple(y0)
        if not y0 or not all(isinstance(y, rtx.Tensor) for y in y0):
            raise TypeError("odeint: y0 must be a Tensor or a non-empty tuple of Tensors")
        shapes = [tuple(y.shape) for y in y0]
        rtol = _tuple_tol("rtol", rtol, shapes, y0[0])
        atol = _tuple_tol("atol", atol, shapes, y0[0])
        y0 = rtx.cat([y.reshape(-1) for y in y0])
        func = TupleFunc(func, shapes)
    elif not isinstance(y0, rtx.Tensor):
        raise TypeError(f"odeint: y0 must be a Tensor or a tuple of Tensors, got {type(y0).__name__}")
    if not y0.is_floating_point():
        raise TypeError(f"odeint: y0 must be a floating point Tensor, got {y0.dtype}")
    options = {} if options is None else dict(options)
    method = "dopri5" if method is None else method
    if method not in solvers:
        raise ValueError(f'Invalid method "{method}". Must be one of {{"' + '", "'.join(solvers) + '"}.')
    ts, is_reversed = check_timelike("t", t)
    if is_reversed:
        func = ReverseFunc(func)
        for key in ("step_t", "jump_t", "grid_points", "step_locations", "jump_locations"):
            if key in options and options[key] is not None:
                options[key] = [-float(v) for v in _floats(options[key])]
    if isinstance(rtol, rtx.Tensor) and rtol.requires_grad or isinstance(atol, rtx.Tensor) and atol.requires_grad:
        raise ValueError("odeint: rtol and atol cannot require gradient")
    return shapes, WrapFunc(func), y0, ts, rtol, atol, method, options, is_reversed


def _floats(v):
    if isinstance(v, rtx.Tensor):
        return v.detach().reshape(-1).tolist()
    return list(v)


def select_initial_step(func, t0, y0, f0, order, rtol, atol, norm):
    """Hairer, Norsett & Wanner, Solving ODEs I, sec. II.4: a first step from two evaluations."""
    with rtx.no_grad():
        scale = atol + y0.abs() * rtol
        d0 = norm(y0 / scale)
        d1 = norm(f0 / scale)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        f1 = func(t0 + h0, y0 + h0 * f0)
        d2 = norm((f1 - f0) / scale) / h0
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = max(1e-6, h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
        return min(100 * h0, h1)


def error_ratio(err, rtol, atol, y0, y1, norm):
    with rtx.no_grad():
        tol = atol + rtol * rtx.maximum(y0.abs(), y1.abs())
        return norm(err / tol)


def optimal_step_size(dt, ratio, safety, ifactor, dfactor, order):
    if ratio == 0:
        return dt * ifactor
    if ratio < 1:
        dfactor = 1.0
    return dt * min(ifactor, max(safety / ratio ** (1.0 / order), dfactor))


def interp_fit(y0, y1, y_mid, f0, f1, dt):
    """Quartic p(x) = a x^4 + b x^3 + c x^2 + d x + e on x in [0, 1] matching y0, y1, y_mid, f0, f1."""
    a = 2 * dt * (f1 - f0) - 8 * (y1 + y0) + 16 * y_mid
    b = dt * (5 * f0 - 3 * f1) + 18 * y0 + 14 * y1 - 32 * y_mid
    c = dt * (f1 - 4 * f0) - 11 * y0 - 5 * y1 + 16 * y_mid
    return [a, b, c, dt * f0, y0]


def interp_evaluate(coeffs, t0, t1, t):
    if not (t0 <= t <= t1):
        raise RuntimeError(f"invalid interpolation, fails t0 <= t <= t1: {t0}, {t}, {t1}")
    x = (t - t0) / (t1 - t0)
    a, b, c, d, e = coeffs
    return (((a * x + b) * x + c) * x + d) * x + e


def lincomb(coeffs, ks, scale):
    """scale * sum(c_i k_i), skipping zero coefficients (most tableaux are sparse)."""
    out = None
    for c, k in zip(coeffs, ks):
        if c != 0:
            term = (scale * c) * k
            out = term if out is None else out + term
    return out if out is not None else ks[0] * 0.0
