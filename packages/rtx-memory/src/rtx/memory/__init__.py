"""rtx memory: CuPy memory pool, pinned host memory, memory statistics."""
__version__ = "0.1.0"
