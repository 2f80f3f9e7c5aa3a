"""rtx preprocessing: transforms, scalers, encoders, splits."""
__version__ = "0.1.0"
