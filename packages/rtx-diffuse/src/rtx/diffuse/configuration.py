"""diffusers' ConfigMixin: a model or scheduler remembers its constructor arguments (`.config`), writes
them as JSON (`save_config`, the `scheduler_config.json` / `config.json` of diffusers' folders) and is
rebuilt from them (`from_config`, `load_config`)."""
from __future__ import annotations

import functools
import inspect
import json
import os

# The checkpoint layout we read and write is diffusers 0.42's; files carry that version as diffusers' do,
# so that diffusers itself loads them without complaint.
DIFFUSERS_LAYOUT_VERSION = "0.42.1"


class FrozenDict(dict):
    """A dict whose keys also read as attributes (`scheduler.config.num_train_timesteps`), like diffusers'."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"the config is frozen: build a new object with from_config(config, {name}=...)")


def register_to_config(init):
    """Decorator for `__init__`: records every argument (defaults included) in `self.config`."""
    sig = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        config = {k: v for k, v in bound.arguments.items() if k != "self" and sig.parameters[k].kind
                  not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}
        self.register_to_config(**config)
        init(self, *args, **kwargs)

    return wrapper


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


class ConfigMixin:
    config_name: str = "config.json"

    def register_to_config(self, **kwargs):
        current = dict(getattr(self, "_internal_dict", {}))
        current.update(kwargs)
        object.__setattr__(self, "_internal_dict", FrozenDict(current))

    @property
    def config(self) -> FrozenDict:
        return self._internal_dict

    @classmethod
    def _init_parameters(cls):
        return {k: p for k, p in inspect.signature(cls.__init__).parameters.items() if k != "self"}

    @classmethod
    def extract_init_dict(cls, config: dict, **kwargs):
        """(arguments for __init__, keys of `config` the class does not take)."""
        params = cls._init_parameters()
        config = {**{k: v for k, v in config.items() if not k.startswith("_")}, **kwargs}
        init = {k: v for k, v in config.items() if k in params}
        unused = {k: v for k, v in config.items() if k not in params}
        return init, unused

    @classmethod
    def from_config(cls, config=None, return_unused_kwargs=False, **kwargs):
        """Build from a config dict (or another object's `.config`); keyword arguments override it.
        Keys this class does not know (another scheduler's options) are ignored, as diffusers does."""
        if config is None:
            config = {}
        if isinstance(config, (str, os.PathLike)):
            config = cls.load_config(config)
        if not isinstance(config, dict):
            raise TypeError(f"from_config expects a dict, a config object's .config or a folder, got "
                            f"{type(config).__name__}")
        init, unused = cls.extract_init_dict(config, **kwargs)
        obj = cls(**init)
        if return_unused_kwargs:
            return obj, unused
        return obj

    @classmethod
    def load_config(cls, path) -> dict:
        """The JSON dict in `path` (a file, or a folder holding `config_name`)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, cls.config_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no {cls.config_name} found at {path}")
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
        return config

    def to_json_string(self) -> str:
        config = {k: _jsonable(v) for k, v in self.config.items()}
        config["_class_name"] = type(self).__name__
        config["_diffusers_version"] = DIFFUSERS_LAYOUT_VERSION
        return json.dumps(config, indent=2, sort_keys=True) + "\n"

    def save_config(self, save_directory, **kwargs):
        """Write `config_name` (JSON, sorted keys, diffusers' format) in `save_directory`."""
        if os.path.isfile(save_directory):
            raise AssertionError(f"Provided path ({save_directory}) should be a directory, not a file")
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, self.config_name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json_string())
        return path
