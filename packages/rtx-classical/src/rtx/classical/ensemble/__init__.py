"""Ensembles, mirroring sklearn.ensemble."""
from rtx.classical.ensemble._forest import RandomForestClassifier, RandomForestRegressor

__all__ = ["RandomForestClassifier", "RandomForestRegressor"]
