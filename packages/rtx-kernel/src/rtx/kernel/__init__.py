"""rtx kernels: fused CuPy kernels with NumPy references."""
__version__ = "0.1.0"
