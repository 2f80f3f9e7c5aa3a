"""odeint and odeint_event with torchdiffeq 0.2.5's signature, methods and defaults."""
from __future__ import annotations

import functools

import rtx
from rtx.autograd import Function
from rtx.science.ode import fixed_grid, rk
from rtx.science.ode._misc import check_inputs, flat_to_shape

SOLVERS = {
    "dopri8": functools.partial(rk.RKAdaptive, rk.DOPRI8),
    "dopri5": functools.partial(rk.RKAdaptive, rk.DOPRI5),
    "bosh3": functools.partial(rk.RKAdaptive, rk.BOSH3),
    "fehlberg2": functools.partial(rk.RKAdaptive, rk.FEHLBERG2),
    "adaptive_heun": functools.partial(rk.RKAdaptive, rk.ADAPTIVE_HEUN),
    "euler": fixed_grid.Euler,
    "midpoint": fixed_grid.Midpoint,
    "rk4": fixed_grid.RK4,
    "explicit_adams": fixed_grid.AdamsBashforth,
    "implicit_adams": fixed_grid.AdamsBashforthMoulton,
    "fixed_adams": fixed_grid.AdamsBashforthMoulton,  # torchdiffeq's old name
}


def odeint(func, y0, t, *, rtol=1e-7, atol=1e-9, method=None, options=None, event_fn=None):
    """Solve dy/dt = func(t, y), y(t[0]) = y0, returning y at every time in `t` (stacked on dim 0).

    `y0` is a Tensor or a tuple of Tensors (then a tuple of solutions comes back); `t` is a 1-D
    strictly increasing or decreasing Tensor. Gradients flow by backpropagating through the
    solver's operations (use `odeint_adjoint` for memory that does not grow with the steps).
    With `event_fn(t, y)`, integrates from t[0] until event_fn crosses zero and returns
    `(event_t, solution)` where solution holds y0 and y(event_t).
    """
    shapes, f, y, ts, rtol, atol, method, options, is_reversed = check_inputs(func, y0, t, rtol, atol, method,
                                                                             options, SOLVERS)
    solver = SOLVERS[method](func=f, y0=y, rtol=rtol, atol=atol, shapes=shapes, **options)
    if event_fn is None:
        solution = solver.integrate(ts)
    else:
        if not hasattr(solver, "integrate_until_event"):
            raise ValueError(f"odeint: event_fn needs an adaptive method, not {method!r}")
        ev = event_fn if not is_reversed else (lambda s, z: event_fn(-s, z))
        if shapes is not None:
            base = ev
            ev = lambda s, z: base(s, flat_to_shape(z, (), shapes))  # noqa: E731
        t_event, solution = solver.integrate_until_event(ts[0], ev)
        t_event = rtx.full((), -t_event if is_reversed else t_event, dtype=t.dtype, device=t.device)
    if shapes is not None:
        solution = flat_to_shape(solution, (solution.shape[0],), shapes)
    return solution if event_fn is None else (t_event, solution)


def _params(*objs):
    out = []
    for o in objs:
        if hasattr(o, "parameters"):
            out.extend(p for p in o.parameters() if p.requires_grad)
    return out


class _ImplicitFnGradientRerouting(Function):
    """The event time solves c(t*, y(t*)) = 0; by the implicit function theorem
    dt*/dtheta = -(dc/dy . dy/dtheta + dc/dtheta) / (dc/dt + dc/dy . f), so a loss's gradient on
    t* is sent to the state (and to event_fn's parameters) along that direction."""

    @staticmethod
    def forward(ctx, func, event_fn, event_t, state_t, *params):
        ctx.func, ctx.event_fn = func, event_fn
        ctx.save_for_backward(event_t, state_t, *params)
        return event_t.detach(), state_t.detach()

    @staticmethod
    def backward(ctx, grad_t, grad_state):
        event_t, state_t, *params = ctx.saved_tensors
        event_t = event_t.detach().requires_grad_(True)
        state_t = state_t.detach().requires_grad_(True)
        with rtx.enable_grad():
            f_val = ctx.func(event_t, state_t)
            c = ctx.event_fn(event_t, state_t)
            par_dt, dstate = rtx.autograd.grad(c, (event_t, state_t), allow_unused=True, retain_graph=True)
        par_dt = rtx.zeros_like(event_t) if par_dt is None else par_dt
        dstate = rtx.zeros_like(state_t) if dstate is None else dstate
        f_val = f_val.detach()
        if grad_t is None:
            grad_t = rtx.zeros_like(event_t)
        if grad_state is None:
            grad_state = rtx.zeros_like(state_t)
        dcdt = par_dt + (dstate * f_val).sum()
        total_t = grad_t + (grad_state * f_val).sum()  # a loss on y(t*) also moves with t*
        scale = -total_t / (dcdt + 1e-12)
        grad_state = grad_state + dstate * scale
        grad_params = (None,) * len(params)
        if params:
            grad_params = rtx.autograd.grad(c, params, scale.reshape(c.shape), allow_unused=True)
        return (None, None, None, grad_state) + tuple(grad_params)


def odeint_event(func, y0, t0, *, event_fn, reverse_time=False, odeint_interface=odeint, **kwargs):
    """Integrate from t0 until event_fn(t, y) == 0; returns (event_t, y(event_t)), both differentiable
    (torchdiffeq.odeint_event). `odeint_interface` may be `odeint_adjoint`."""
    t0 = t0 if isinstance(t0, rtx.Tensor) else rtx.full((), float(t0), dtype=rtx.float64)
    t0 = t0.reshape(-1)
    t = rtx.cat([t0, t0.detach() + (-1.0 if reverse_time else 1.0)])
    event_t, solution = odeint_interface(func, y0, t, event_fn=event_fn, **kwargs)
    tupled = isinstance(y0, (tuple, list))
    if tupled:
        shapes = [tuple(y.shape) for y in y0]
        state_t = rtx.cat([s[-1].reshape(-1) for s in solution])

        def f(tt, z):
            return rtx.cat([v.reshape(-1) for v in func(tt, flat_to_shape(z, (), shapes))])

        def c(tt, z):
            return event_fn(tt, flat_to_shape(z, (), shapes))
    else:
        state_t, f, c = solution[-1], func, event_fn
    event_t = event_t.to(state_t.dtype)
    event_t, state_t = _ImplicitFnGradientRerouting.apply(f, c, event_t, state_t, *_params(func, event_fn))
    if tupled:
        state_t = flat_to_shape(state_t, (), shapes)
    return event_t, state_t
