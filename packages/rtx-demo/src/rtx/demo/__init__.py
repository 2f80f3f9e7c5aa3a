"""rtx demo: the digits training demo behind `rtx demo` (DigitsCNN, train, evaluate)."""
__version__ = "0.1.0"

from rtx.demo.model import DigitsCNN  # noqa: F401
