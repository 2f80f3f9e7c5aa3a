"""to_toml / dump: write a config dataclass back as TOML that load_config reads to an equal one."""
from __future__ import annotations

import dataclasses
import enum
import math
import os
import re
from pathlib import PurePath

from rtx.config.files import write_atomic

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_CONTROL = re.compile(r'[\x00-\x1f\x7f"\\]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def to_toml(cfg, *, section: str | None = None) -> str:
    """The TOML text of the dataclass instance `cfg` (under the table `section` if given).

    None values are left out (TOML has no null) with a comment saying so; load_config then
    gives the field its default, which round-trips when that default is None."""
    if not dataclasses.is_dataclass(cfg) or isinstance(cfg, type):
        raise TypeError(f"to_toml: expected a dataclass instance, got {cfg!r}")
    lines: list[str] = []
    _table(cfg, [section] if section else [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def dump(cfg, path: str | os.PathLike, *, section: str | None = None) -> None:
    """Write to_toml(cfg) to `path` atomically (rtx.config.files.write_atomic)."""
    write_atomic(path, to_toml(cfg, section=section))


def _table(obj, path: list[str], lines: list[str]) -> None:
    scalars, tables = [], []
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            tables.append((f.name, v))
        elif v is None:
            scalars.append(f"# {_key(f.name)} is None (unset)")
        else:
            scalars.append(f"{_key(f.name)} = {_value(v)}")
    if path and (scalars or not tables):
        lines += ["", "[" + ".".join(_key(p) for p in path) + "]"]
    lines += scalars
    for name, v in tables:
        _table(v, [*path, name], lines)


def _key(k: str) -> str:
    return k if _BARE.match(k) else _string(k)


def _string(s: str) -> str:
    # A TOML basic string: escape the quote, the backslash and every control character, DEL
    # included (JSON leaves DEL raw, which TOML forbids).
    return '"' + _CONTROL.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), s) + '"'


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, enum.Enum):
        return _value(v.value)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, (str, PurePath)):
        return _string(str(v))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items()) + "}"
    if dataclasses.is_dataclass(v):
        return _value({f.name: getattr(v, f.name) for f in dataclasses.fields(v)})
    raise TypeError(f"to_toml: cannot write a {type(v).__name__} value ({v!r}) as TOML")
