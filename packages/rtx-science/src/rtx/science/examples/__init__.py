"""Worked problems with their reference solutions; each returns its error figure.

    python -m rtx.science.examples {poisson,heat,burgers,fno_burgers,spiral,pendulum} [--full] [--png PATH]
"""
from rtx.science.examples.burgers import burgers, burgers_reference, burgers_residual
from rtx.science.examples.fno_burgers import fno_burgers
from rtx.science.examples.heat import heat, heat_reference, heat_residual
from rtx.science.examples.pendulum import pendulum
from rtx.science.examples.poisson import poisson
from rtx.science.examples.spiral import spiral

__all__ = ["burgers", "burgers_reference", "burgers_residual", "fno_burgers", "heat", "heat_reference",
           "heat_residual", "pendulum", "poisson", "spiral"]
