"""Differentiable incompressible-flow solvers (MAC projection, pseudo-spectral, lattice Boltzmann, 1D Burgers) validated against Ghia et al. and closed forms."""
__version__ = "0.1.0"
