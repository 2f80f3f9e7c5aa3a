"""Scientific machine learning: ODE solvers with adjoints, PINNs, neural operators."""
__version__ = "0.1.0"

from rtx.science import operators, pinn
from rtx.science.hnn import HNN, leapfrog, verlet
from rtx.science.lnn import LNN
from rtx.science.node import CNFDynamics, ODEBlock, exact_trace, hutchinson_trace
from rtx.science.ode import SOLVERS, odeint, odeint_adjoint, odeint_event

__all__ = ["HNN", "LNN", "SOLVERS", "CNFDynamics", "ODEBlock", "exact_trace", "hutchinson_trace", "leapfrog", "odeint",
           "odeint_adjoint", "odeint_event", "operators", "pinn", "verlet"]
