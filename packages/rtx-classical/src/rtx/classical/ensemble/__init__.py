"""Ensembles, mirroring sklearn.ensemble."""
from rtx.classical.ensemble._forest import RandomForestClassifier, RandomForestRegressor
from rtx.classical.ensemble._hist_gradient_boosting import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)

__all__ = ["HistGradientBoostingClassifier", "HistGradientBoostingRegressor", "RandomForestClassifier",
           "RandomForestRegressor"]
