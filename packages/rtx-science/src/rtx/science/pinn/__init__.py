"""Physics-informed neural networks: differential operators, collocation samplers, a trainer."""
from rtx.science.pinn.operators import divergence, grad, hessian, jacobian, laplacian
from rtx.science.pinn.samplers import latin_hypercube, sobol, uniform
from rtx.science.pinn.trainer import PINN, Condition

__all__ = ["PINN", "Condition", "divergence", "grad", "hessian", "jacobian", "laplacian", "latin_hypercube",
           "sobol", "uniform"]
