"""odeint_adjoint: gradients by the adjoint sensitivity method (Chen et al. 2018, torchdiffeq).

The forward solve keeps only y at the requested times. The backward pass integrates the
augmented system [y, a = dL/dy, dL/dtheta] from t[-1] back to t[0]:
    dy/dt = f(t, y),  da/dt = -a . df/dy,  d(dL/dtheta)/dt = -a . df/dtheta,
one vector-Jacobian product per evaluation, so memory does not grow with the number of steps.
"""
from __future__ import annotations

import rtx
from rtx.autograd import Function
from rtx.science.ode._misc import TupleFunc, flat_to_shape
from rtx.science.ode.odeint import SOLVERS, odeint


class _OdeintAdjoint(Function):
    @staticmethod
    def forward(ctx, func, y0, t, cfg, *params):
        ans = odeint(func, y0, t, rtol=cfg["rtol"], atol=cfg["atol"], method=cfg["method"],
                     options=cfg["options"], event_fn=cfg["event_fn"])
        if cfg["event_fn"] is not None:
            event_t, y = ans
            ctx.event_mode = True
            t = rtx.cat([t[:1], event_t.reshape(1).to(t.dtype)])
        else:
            y, event_t = ans, None
            ctx.event_mode = False
        ctx.func, ctx.cfg = func, cfg
        ctx.save_for_backward(t, y, *params)
        return (event_t.detach(), y.detach()) if event_t is not None else y.detach()

    @staticmethod
    def backward(ctx, *grads):
        grad_y = grads[-1]
        t, y, *params = ctx.saved_tensors
        func, cfg = ctx.func, ctx.cfg
        params = tuple(params)

        def aug_dynamics(tt, state):
            yy, adj_y = state[0], state[1]
            with rtx.enable_grad():
                yy = yy.detach().requires_grad_(True)
                f = func(tt, yy)
                vjps = rtx.autograd.grad(f, (yy,) + params, -adj_y, allow_unused=True)
            vjps = [rtx.zeros_like(p) if g is None else g for g, p in zip(vjps, (yy,) + params)]
            return (f.detach(), *vjps)

        with rtx.no_grad():
            if grad_y is None:
                grad_y = rtx.zeros_like(y)
            adj_y = grad_y[-1]
            adj_p = [rtx.zeros_like(p) for p in params]
            ts = t.detach()
            for i in range(len(ts) - 1, 0, -1):
                state = (y[i], adj_y, *adj_p)
                out = odeint(aug_dynamics, state, ts[i - 1:i + 1].flip(0), rtol=cfg["adjoint_rtol"],
                             atol=cfg["adjoint_atol"], method=cfg["adjoint_method"], options=cfg["adjoint_options"])
                adj_y = out[1][1]
                adj_p = [o[1] for o in out[2:]]
                if not ctx.event_mode:
                    adj_y = adj_y + grad_y[i - 1]
        return (None, adj_y, None, None, *adj_p)


def odeint_adjoint(func, y0, t, *, rtol=1e-7, atol=1e-9, method=None, options=None, event_fn=None,
                   adjoint_rtol=None, adjoint_atol=None, adjoint_method=None, adjoint_options=None,
                   adjoint_params=None):
    """torchdiffeq.odeint_adjoint: same results as `odeint`; gradients w.r.t. y0 and `adjoint_params`
    (default: `func.parameters()` when func is an nn.Module) by solving the adjoint ODE backwards.
    Gradients w.r.t. `t` are not computed (t gets None)."""
    if adjoint_params is None:
        if not hasattr(func, "parameters"):
            raise ValueError("odeint_adjoint: func is not an nn.Module, so pass adjoint_params=(tensors...) "
                             "explicitly (an empty tuple if there are none)")
        adjoint_params = tuple(func.parameters())
    adjoint_params = tuple(p for p in adjoint_params if p.requires_grad)
    method = "dopri5" if method is None else method
    if method not in SOLVERS:
        raise ValueError(f'Invalid method "{method}". Must be one of {{"' + '", "'.join(SOLVERS) + '"}.')
    cfg = dict(rtol=rtol, atol=atol, method=method, options=options, event_fn=event_fn,
               adjoint_rtol=rtol if adjoint_rtol is None else adjoint_rtol,
               adjoint_atol=atol if adjoint_atol is None else adjoint_atol,
               adjoint_method=method if adjoint_method is None else adjoint_method,
               adjoint_options=_adjoint_options(options, adjoint_options, method, adjoint_method))
    shapes = None
    if isinstance(y0, (tuple, list)):
        shapes = [tuple(v.shape) for v in y0]
        func = TupleFunc(func, shapes)
        y0 = rtx.cat([v.reshape(-1) for v in y0])
        if event_fn is not None:
            base_event = event_fn
            cfg["event_fn"] = lambda s, z: base_event(s, flat_to_shape(z, (), shapes))
    out = _OdeintAdjoint.apply(func, y0, t, cfg, *adjoint_params)
    if event_fn is not None:
        event_t, sol = out
    else:
        sol = out
    if shapes is not None:
        sol = flat_to_shape(sol, (sol.shape[0],), shapes)
    return sol if event_fn is None else (event_t, sol)


def _adjoint_options(options, adjoint_options, method, adjoint_method):
    if adjoint_options is not None:
        return dict(adjoint_options)
    if adjoint_method is not None and adjoint_method != method:
        return {}
    opts = dict(options or {})
    # step/jump locations apply on the way back too; the backward solve runs over decreasing t,
    # and odeint's own reversal handles the sign.
    return opts
