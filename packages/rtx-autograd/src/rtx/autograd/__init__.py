"""rtx autograd: Function, backward engine, grad modes, functional derivatives, checkpoint."""
__version__ = "0.1.0"
