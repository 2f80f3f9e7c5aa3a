"""rtx demo: the digits training demo behind 'rtx demo'."""
__version__ = "0.1.0"
