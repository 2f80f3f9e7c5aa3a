"""Model weights as plain NumPy arrays: what travels between server and clients."""
from __future__ import annotations

import numpy as np

import rtx

__all__ = ["get_weights", "set_weights", "flatten", "unflatten"]


def get_weights(model) -> list[np.ndarray]:
    """Copies of the model's state_dict entries (parameters and buffers), in state_dict order."""
    return [np.array(t.detach().cpu().numpy(), copy=True) for t in model.state_dict().values()]


def set_weights(model, weights) -> None:
    """Load arrays (in state_dict order) into the model."""
    keys = list(model.state_dict().keys())
    if len(weights) != len(keys):
        raise ValueError(f"set_weights: the model has {len(keys)} state entries, got {len(weights)} arrays")
    model.load_state_dict({k: rtx.from_numpy(np.ascontiguousarray(w)) for k, w in zip(keys, weights)})


def flatten(weights) -> np.ndarray:
    """One float64 vector holding every array (for masking, norms, and the server optimiser)."""
    return np.concatenate([np.asarray(w, dtype=np.float64).ravel() for w in weights]) if weights else np.zeros(0)


def unflatten(vector: np.ndarray, like) -> list[np.ndarray]:
    """Split a vector back into arrays with the shapes and dtypes of `like`."""
    sizes = [np.size(w) for w in like]
    if vector.size != sum(sizes):
        raise ValueError(f"unflatten: expected a vector of {sum(sizes)} entries, got {vector.size}")
    out, start = [], 0
    for w, n in zip(like, sizes):
        out.append(vector[start:start + n].reshape(np.shape(w)).astype(np.asarray(w).dtype))
        start += n
    return out
