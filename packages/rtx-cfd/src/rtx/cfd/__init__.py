"""Differentiable incompressible-flow solvers (MAC projection, pseudo-spectral, lattice Boltzmann,
1D Burgers) validated against Ghia et al. and closed forms."""
__version__ = "0.1.0"

from . import ghia
from .burgers import (
                      advection_diffusion_fv,
                      advection_diffusion_spectral,
                      burgers_cole_hopf,
                      burgers_fv,
                      burgers_spectral,
)
from .cases import cavity, channel, cylinder, cylinder_mask, poiseuille_profile, strouhal, taylor_green
from .flow import Flow2D
from .grid import BC, Grid, Inflow, Outflow, Periodic, Wall
from .lbm import LBM2D, lbm_cavity
from .navier_stokes import NavierStokes2D, State
from .poisson import FastPoisson, cg, laplacian_1d, poisson_fft
from .spectral import Spectral2D, Spectral3D, decaying_turbulence_vorticity, taylor_green_3d, taylor_green_vorticity

__all__ = [
    "BC", "FastPoisson", "Flow2D", "Grid", "Inflow", "LBM2D", "NavierStokes2D", "Outflow", "Periodic",
    "Spectral2D", "Spectral3D", "State", "Wall", "advection_diffusion_fv", "advection_diffusion_spectral",
    "burgers_cole_hopf", "burgers_fv", "burgers_spectral", "cavity", "cg", "channel", "cylinder", "cylinder_mask",
    "decaying_turbulence_vorticity", "ghia", "laplacian_1d", "lbm_cavity", "poiseuille_profile", "poisson_fft",
    "strouhal", "taylor_green", "taylor_green_3d", "taylor_green_vorticity",
]
