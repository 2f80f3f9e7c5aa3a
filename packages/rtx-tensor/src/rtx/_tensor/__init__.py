"""rtx tensor: the Tensor, its ops and their derivatives; provides import rtx."""
__version__ = "0.1.0"
