"""The digits benchmark behind `rtx federated simulate`: non-IID clients, an rtx MLP, evaluation."""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F

from .client import Client, DPConfig
from .params import set_weights
from .partition import dirichlet_partition

__all__ = ["load_digits_split", "make_mlp", "make_evaluator", "make_digits_clients", "plot_history"]


def load_digits_split(test_fraction: float = 0.2, seed: int = 0):
    """scikit-learn's 8x8 digits (1,797 images), pixels scaled to [0, 1], a stratified test split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    return train_test_split(x, y.astype(np.int64), test_size=test_fraction, random_state=seed, stratify=y)


def make_mlp(in_features: int = 64, hidden: int = 128, classes: int = 10, seed: int = 0):
    rtx.manual_seed(seed)
    return nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


def make_evaluator(model, x, y, batch_size: int = 1024):
    """evaluate(weights) -> (mean cross-entropy, accuracy) of `model` carrying `weights` on (x, y)."""
    x = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.int64)

    def evaluate(weights):
        set_weights(model, weights)
        model.eval()
        loss = correct = 0.0
        with rtx.no_grad():
            for i in range(0, len(x), batch_size):
                out = model(rtx.from_numpy(x[i:i + batch_size]))
                yb = rtx.from_numpy(y[i:i + batch_size])
                loss += F.cross_entropy(out, yb, reduction="sum").item()
                correct += (out.argmax(1) == yb).sum().item()
        return loss / len(x), correct / len(x)
    return evaluate


def make_digits_clients(model, x, y, num_clients: int, alpha: float, seed: int = 0, dp: DPConfig | None = None,
                        **client_kwargs) -> list[Client]:
    parts = dirichlet_partition(y, num_clients, alpha, seed=seed)
    return [Client(cid, x[idx], y[idx], model, dp=dp, seed=seed, **client_kwargs) for cid, idx in enumerate(parts)]


def plot_history(history, path, title: str = "") -> None:
    """Accuracy per round as a PNG (matplotlib's Agg backend: no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rounds = [r.round for r in history.rounds]
    acc = [100 * (r.accuracy or 0.0) for r in history.rounds]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    ax.plot(rounds, acc, marker=".", lw=1.5)
    ax.axhline(95, color="grey", ls="--", lw=1, label="95%")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
