"""describe(cls): every key with its type, default, environment variable and doc, as a table."""
from __future__ import annotations

import dataclasses
import enum

from rtx.config.coerce import type_name
from rtx.config.loader import field_types


def keys(cls, env_prefix: str | None = "RTX_") -> list[dict]:
    """One dict per leaf key of the dataclass `cls` (nested dataclasses flattened): key, type,
    default (repr, or "(required)"), env (the variable load_config reads), doc."""
    out = []
    _walk(cls, "", env_prefix, out)
    return out


def describe(cls, env_prefix: str | None = "RTX_") -> str:
    """A plain-text table of `keys(cls, env_prefix)`, for `--help` texts and READMEs."""
    rows = [("key", "type", "default", "env", "doc")]
    rows += [(k["key"], k["type"], k["default"], k["env"] or "", k["doc"]) for k in keys(cls, env_prefix)]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + ("  " + r[4] if r[4] else "") for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  ---")
    return "\n".join(line.rstrip() for line in lines)


def _walk(cls, prefix: str, env_prefix: str | None, out: list) -> None:
    hints = field_types(cls)
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp, key = hints[f.name], prefix + f.name
        env = None if env_prefix is None else env_prefix + key.replace(".", "__").upper()
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            _walk(tp, key + ".", env_prefix, out)
            continue
        if f.default is not dataclasses.MISSING:
            default = _show(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = _show(f.default_factory())
        else:
            default = "(required)"
        out.append({"key": key, "type": type_name(tp), "default": default, "env": env,
                    "doc": f.metadata.get("doc", "") or f.metadata.get("help", "")})


def _show(v) -> str:
    if isinstance(v, enum.Enum):
        return repr(v.value)
    return repr(str(v)) if hasattr(v, "__fspath__") else repr(v)
