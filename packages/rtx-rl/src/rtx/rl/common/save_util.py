"""The model archive: a zip holding data.json (hyper-parameters, spaces, counters) and
parameters.safetensors (policy weights, optimizer states, extra tensors). No pickle anywhere, so
loading an archive runs no code named by it."""
from __future__ import annotations

import json
import os
import zipfile

import gymnasium as gym
import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

import rtx

FORMAT = "rtx-rl/1"


def space_to_json(space: gym.Space) -> dict:
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(), "shape": list(space.shape),
                "dtype": str(space.dtype)}
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    raise NotImplementedError(f"cannot save space {space} (Box and Discrete are supported)")


def space_from_json(d: dict) -> gym.Space:
    if d["type"] == "Box":
        return gym.spaces.Box(np.array(d["low"], dtype=d["dtype"]), np.array(d["high"], dtype=d["dtype"]),
                              tuple(d["shape"]), dtype=d["dtype"])
    if d["type"] == "Discrete":
        return gym.spaces.Discrete(d["n"], start=d["start"])
    raise ValueError(f"unknown space type {d['type']!r} in the archive")


def flatten_state(prefix: str, state: dict, tensors: dict) -> None:
    """Tensors of a (nested) state dict into tensors[prefix/key...]; returns nothing."""
    for key, value in state.items():
        name = f"{prefix}/{key}"
        if isinstance(value, dict):
            flatten_state(name, value, tensors)
        elif isinstance(value, rtx.Tensor):
            tensors[name] = np.array(value.detach().cpu().numpy(), order="C")  # ascontiguousarray makes 0-d 1-d
        else:
            tensors[name] = np.asarray(value)


def unflatten_state(prefix: str, tensors: dict) -> dict:
    out: dict = {}
    for name, arr in tensors.items():
        if not name.startswith(prefix + "/"):
            continue
        keys = name[len(prefix) + 1:].split("/")
        d = out
        for k in keys[:-1]:
            d = d.setdefault(k, {})
        d[keys[-1]] = arr
    return out


def optimizer_to_tensors(name: str, optimizer, tensors: dict) -> list:
    """Optimizer state tensors into `tensors`; returns the JSON-ready param_groups."""
    sd = optimizer.state_dict()
    for idx, st in sd["state"].items():
        flatten_state(f"{name}/state/{idx}", st, tensors)
    return [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in sd["param_groups"]]


def optimizer_from_tensors(name: str, optimizer, tensors: dict, param_groups: list, device) -> None:
    raw = unflatten_state(f"{name}/state", tensors)
    state = {int(idx): {k: rtx.as_tensor(v, device=device) for k, v in st.items()} for idx, st in raw.items()}
    groups = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in param_groups]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def save_to_zip(path, data: dict, tensors: dict) -> str:
    path = os.fspath(path)
    if not path.endswith(".zip"):
        path += ".zip"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data.json", json.dumps(data, indent=2))
        zf.writestr("parameters.safetensors", st_save(tensors) if tensors else st_save({}))
    return path


def load_from_zip(path) -> tuple[dict, dict]:
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + ".zip"):
        path += ".zip"
    if not os.path.exists(path):
        raise FileNotFoundError(f"no model archive at {path!r} (nor {path}.zip)")
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        if "data.json" not in names or "parameters.safetensors" not in names:
            raise ValueError(f"{path} is not an rtx.rl model archive (expected data.json and "
                             f"parameters.safetensors, found {sorted(names)})")
        data = json.loads(zf.read("data.json"))
        tensors = st_load(zf.read("parameters.safetensors"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: unknown archive format {data.get('format')!r}, expected {FORMAT!r}")
    return data, tensors
