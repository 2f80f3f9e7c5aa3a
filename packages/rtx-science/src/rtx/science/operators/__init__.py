"""Neural operators: Fourier neural operators, DeepONet, and data generators for them."""
from rtx.science.operators.data import burgers_1d, darcy_2d, grf_1d
from rtx.science.operators.deeponet import DeepONet
from rtx.science.operators.fno import FNO1d, FNO2d, SpectralConv1d, SpectralConv2d, relative_l2

__all__ = ["DeepONet", "FNO1d", "FNO2d", "SpectralConv1d", "SpectralConv2d", "burgers_1d", "darcy_2d", "grf_1d",
           "relative_l2"]
