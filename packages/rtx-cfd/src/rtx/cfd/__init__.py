"""Differentiable incompressible-flow solvers (MAC projection, pseudo-spectral, lattice Boltzmann,
1D Burgers) validated against Ghia et al. and closed forms."""
__version__ = "0.1.0"

from . import ghia
from .flow import Flow2D
from .grid import BC, Grid, Inflow, Outflow, Periodic, Wall
from .navier_stokes import NavierStokes2D, State
from .poisson import FastPoisson, cg, laplacian_1d, poisson_fft
