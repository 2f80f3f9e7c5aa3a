"""Scientific machine learning: ODE solvers with adjoints, PINNs, neural operators."""
__version__ = "0.1.0"
