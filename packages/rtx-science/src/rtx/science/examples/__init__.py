"""Worked problems with their reference solutions; each returns the relative L2 error.

    python -m rtx.science.examples poisson --full
"""
from rtx.science.examples.fno_burgers import fno_burgers
from rtx.science.examples.poisson import poisson

__all__ = ["fno_burgers", "poisson"]
