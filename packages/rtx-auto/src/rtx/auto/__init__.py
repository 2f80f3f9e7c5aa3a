"""rtx auto: hyper-parameter search over Optuna (samplers, pruners, shared RDB studies) and tabular AutoML (AutoClassifier, AutoRegressor) with ensemble selection."""
__version__ = "0.1.0"
