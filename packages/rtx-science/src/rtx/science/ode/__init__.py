"""ODE solvers with torchdiffeq's API: odeint, odeint_adjoint, odeint_event."""
from rtx.science.ode.adjoint import odeint_adjoint
from rtx.science.ode.odeint import SOLVERS, odeint, odeint_event

__all__ = ["SOLVERS", "odeint", "odeint_adjoint", "odeint_event"]
