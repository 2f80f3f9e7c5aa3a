"""rtx losses: PyTorch's loss functions and modules, numerically stable."""
__version__ = "0.1.0"
