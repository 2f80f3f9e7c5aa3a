"""load_config: a dataclass filled from defaults < TOML file < environment < overrides."""
from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path

from rtx.config.coerce import convert, type_name
from rtx.config.errors import ConfigError


class _Table(dict):
    """Values given for some fields of a nested dataclass; the rest keep their defaults."""


def load_config(cls, path: str | os.PathLike | None = None, *, section: str | None = None,
                env_prefix: str | None = "RTX_", env: Mapping[str, str] | None = None,
                overrides: Mapping[str, object] | None = None):
    """Build an instance of the dataclass `cls` from, lowest priority first: its defaults, the TOML
    file `path` (only its table `section`, dotted for nested tables: ``"tool.rtx.server"``), the
    environment (``{env_prefix}{FIELD}``, nested fields joined by ``__``:
    ``RTX_SERVE_LIMITS__MAX_BODY_BYTES``, or a whole nested table as JSON in ``RTX_SERVE_LIMITS``;
    env_prefix=None reads no environment), and `overrides`
    (a nested dict, or dotted keys ``{"limits.max_body_bytes": 1024}``; strings are parsed like
    environment values, so command-line flags can be passed through as they come).

    Raises ConfigError (a ValueError) naming the key path, the expected type, the value found and
    where it came from; unknown keys are errors that list the valid ones."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"load_config: cls must be a dataclass type, got {cls!r}")
    values = _Table()
    if path is not None:
        table, source = read_toml(path, section)
        _merge(cls, values, table, "", source)
    if env_prefix is not None:
        _merge_env(cls, values, os.environ if env is None else env, env_prefix, "")
    if overrides:
        _merge(cls, values, _undot(overrides), "", "overrides")
    return _construct(cls, values, "", None)


def build(cls, table: object, key: str, source: str):
    """A nested dataclass from one table (used for dataclasses inside Optional, lists, dicts)."""
    values = _Table()
    _merge(cls, values, table, f"{key}.", source)
    return _construct(cls, values, f"{key}.", None)


def read_toml(path: str | os.PathLike, section: str | None = None) -> tuple[dict, str]:
    """The table `section` of a TOML file (all of it when None) and a source label for errors."""
    p = Path(path)
    source = f"{p}" + (f" [{section}]" if section else "")
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {str(p)!r} not found", source=str(p)) from None
    except IsADirectoryError:
        raise ConfigError(f"config file {str(p)!r} is a directory, expected a TOML file", source=str(p)) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {str(p)!r} is not valid TOML: {e}", source=str(p)) from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {str(p)!r} is not UTF-8 text: {e}", source=str(p)) from None
    except ValueError as e:  # tomllib's int("...") past Python's 4300-digit limit
        raise ConfigError(f"config file {str(p)!r} cannot be read: {e}", source=str(p)) from None
    for part in section.split(".") if section else []:
        if part not in data:
            # A missing section is an empty one (the file may serve other tools), unless it looks
            # like a typo of a table that is there: "[sever]" silently ignored would be worse.
            close = difflib.get_close_matches(part, [k for k, v in data.items() if isinstance(v, dict)], n=1)
            if close:
                raise ConfigError(f"config file {str(p)!r} has no [{section}] table (did you mean "
                                  f"[{close[0]}]?)", key=section, expected="a table", found=close[0],
                                  source=source)
        data = data.get(part, {})
        if not isinstance(data, dict):
            raise ConfigError(f"config file {str(p)!r}: [{section}] must be a table, found {data!r}",
                              key=section, expected="a table", found=data, source=source)
    return data, source


def field_types(cls) -> dict:
    """The resolved type annotations of a dataclass (string annotations evaluated)."""
    try:
        return typing.get_type_hints(cls)
    except NameError as e:  # a string annotation naming a class local to a function
        raise TypeError(f"rtx.config: cannot resolve the annotations of {cls.__qualname__}: {e}; define the "
                        "classes it refers to at module level (or do not use `from __future__ import "
                        "annotations` in the function that defines them)") from e


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def _is_table(tp) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _merge(cls, values: _Table, table: object, prefix: str, source: str) -> None:
    if not isinstance(table, Mapping):
        where = f"{prefix[:-1]!r}" if prefix else "the configuration"
        raise ConfigError(f"{where} (from {source}): expected a table ({cls.__name__}), found {table!r}",
                          key=prefix[:-1] or None, expected=f"a table ({cls.__name__})", found=table, source=source)
    fields, hints = _fields(cls), field_types(cls)
    for name, v in table.items():
        key = prefix + name
        if name not in fields:
            raise _unknown(key, prefix, list(fields), source)
        tp = hints[name]
        if _is_table(tp) and isinstance(v, Mapping):
            sub = values.get(name)
            if not isinstance(sub, _Table):
                sub = values[name] = _Table()
            _merge(tp, sub, v, key + ".", source)
        elif source == "overrides" and isinstance(v, str) and tp is not str:
            values[name] = _convert_override(v, tp, key)
        else:
            values[name] = convert(v, tp, key, source, text=False)


def _convert_override(v: str, tp, key: str):
    # An override string is first taken as it is (a Literal or Optional[str] may want the string),
    # then parsed like an env var (flags from argparse arrive as strings).
    try:
        return convert(v, tp, key, "overrides", text=False)
    except ConfigError:
        return convert(v, tp, key, "overrides", text=True)


def _merge_env(cls, values: _Table, env: Mapping[str, str], prefix: str, keyprefix: str) -> None:
    hints = field_types(cls)
    for name in _fields(cls):
        var, key, tp = prefix + name.upper(), keyprefix + name, hints[name]
        if _is_table(tp):
            sub = values.get(name)
            if not isinstance(sub, _Table):
                sub = _Table()
            if var in env:  # the whole table as JSON (RTX_SERVE_LIMITS='{"timeout_s": 2}')
                table = convert(env[var], dict, key, f"env {var}", text=True)
                _merge(tp, sub, table, key + ".", f"env {var}")
            _merge_env(tp, sub, env, var + "__", key + ".")  # single fields, which win
            if sub:
                values[name] = sub
        elif var in env:
            values[name] = convert(env[var], tp, key, f"env {var}", text=True)


def _undot(overrides: Mapping[str, object]) -> dict:
    out: dict = {}
    for k, v in overrides.items():
        *parents, last = str(k).split(".")
        d = out
        for p in parents:
            d = d.setdefault(p, {})
            if not isinstance(d, dict):
                raise ConfigError(f"overrides: {k!r} goes inside {p!r}, which is also given a value",
                                  key=str(k), source="overrides")
        if isinstance(v, Mapping) and isinstance(d.get(last), dict):
            d[last].update(v)
        else:
            d[last] = v
    return out


def _unknown(key: str, prefix: str, valid: list[str], source: str) -> ConfigError:
    name = key[len(prefix):]
    where = f"of {prefix[:-1]!r}" if prefix else "at the top level"
    hint = difflib.get_close_matches(name, valid, n=1)
    msg = (f"unknown config key {key!r} (from {source}); valid keys {where}: {', '.join(valid) or '(none)'}"
           + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    return ConfigError(msg, key=key, expected="one of " + ", ".join(valid), found=name, source=source)


def _construct(cls, values: _Table, prefix: str, base):
    """An instance of `cls`: `base` (an instance) or the field defaults, with `values` applied."""
    hints, kwargs = field_types(cls), {}
    for name, f in _fields(cls).items():
        key = prefix + name
        if name in values:
            v = values[name]
            if isinstance(v, _Table):  # only some fields of a nested dataclass were given
                inner = getattr(base, name) if base is not None else _default(f)
                v = _construct(hints[name], v, key + ".", None if inner is dataclasses.MISSING else inner)
            kwargs[name] = v
        elif base is not None:
            kwargs[name] = getattr(base, name)
        elif _default(f) is dataclasses.MISSING and _is_table(hints[name]):
            kwargs[name] = _construct(hints[name], _Table(), key + ".", None)  # names the missing inner key
        elif _default(f) is dataclasses.MISSING:
            raise ConfigError(f"config key {key!r} is required ({type_name(hints[name])}) and was not given "
                              "in the file, the environment or the overrides",
                              key=key, expected=type_name(hints[name]), source="defaults")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as e:  # a __post_init__ check
        if isinstance(e, ConfigError):
            raise
        where = f"{prefix[:-1]!r}" if prefix else cls.__name__
        raise ConfigError(f"invalid configuration {where}: {e}", key=prefix[:-1] or None) from e


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING
