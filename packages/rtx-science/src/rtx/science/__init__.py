"""Scientific machine learning: ODE solvers with adjoints, PINNs, neural operators."""
__version__ = "0.1.0"

from rtx.science.ode import SOLVERS, odeint, odeint_adjoint, odeint_event

__all__ = ["SOLVERS", "odeint", "odeint_adjoint", "odeint_event"]
