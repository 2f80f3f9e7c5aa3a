"""Hooks that connect an rtx training loop to a search's pruner."""
from __future__ import annotations

import math

import optuna

__all__ = ["PruningCallback"]


class PruningCallback:
    """Report an epoch metric to the trial's pruner and stop the trial when it says so.

        cb = PruningCallback(trial, monitor="val_accuracy")
        for epoch in range(epochs):
            ...train...
            cb(epoch, {"val_accuracy": acc})     # raises optuna.TrialPruned when pruned

    `trial` is an rtx.auto Trial or an optuna Trial. Also usable as `on_epoch_end(epoch, logs)`
    for loops that call Keras-style callbacks. A NaN metric prunes at once."""

    def __init__(self, trial, monitor="val_loss"):
        self.trial, self.monitor = trial, monitor

    def __call__(self, epoch, metrics):
        if self.monitor not in metrics:
            raise KeyError(f"PruningCallback monitors {self.monitor!r}, but the epoch metrics hold {sorted(metrics)}")
        value = float(metrics[self.monitor])
        if math.isnan(value):
            raise optuna.TrialPruned(f"{self.monitor} is NaN at epoch {epoch}")
        self.trial.report(value, epoch)
        if self.trial.should_prune():
            raise optuna.TrialPruned(f"pruned at epoch {epoch} ({self.monitor}={value:.6g})")

    on_epoch_end = __call__
