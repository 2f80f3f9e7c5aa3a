"""rtx auto: hyper-parameter search over Optuna (samplers, pruners, RDB studies shared by worker
processes) and tabular AutoML (AutoClassifier, AutoRegressor) with Caruana ensemble selection."""
__version__ = "0.1.0"

from rtx.auto import callbacks
from rtx.auto.search import Trial, parse_space, tune

__all__ = ["AutoClassifier", "AutoRegressor", "Trial", "callbacks", "parse_space", "tune"]


def __getattr__(name):   # the AutoML estimators import rtx-classical: only when asked for
    if name in ("AutoClassifier", "AutoRegressor"):
        from rtx.auto import automl
        return getattr(automl, name)
    raise AttributeError(f"module 'rtx.auto' has no attribute {name!r}")
