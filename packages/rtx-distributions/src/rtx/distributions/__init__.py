"""Probability distributions with PyTorch's torch.distributions API."""
__version__ = "0.1.0"
