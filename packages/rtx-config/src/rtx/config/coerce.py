"""Checking and converting one value against a type annotation.

Two kinds of input reach a field: structured values (TOML, or Python values in ``overrides``),
which must already have the right shape (TOML tells 1 from 1.0 from "1" from true), and text
(environment variables), which is parsed by the field's type. The set of supported annotations
is deliberately small: str, int, float, bool, Path, Optional[X], X | Y, list[X], tuple[X, ...],
dict[str, X], Literal[...], enum.Enum subclasses, nested dataclasses and Any.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from pathlib import Path, PurePath

from rtx.config.errors import ConfigError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_NONE = ("", "none", "null")


class _Mismatch(Exception):
    """Internal: the value does not fit; `why` adds detail. Turned into ConfigError at the top."""

    def __init__(self, key: str, tp: object, value: object, why: str = ""):
        super().__init__(why)
        self.key, self.tp, self.value, self.why = key, tp, value, why


def type_name(tp: object) -> str:
    """A readable name for an annotation: int, list[int], Path or None, one of 'a', 'b'."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None):
        return "None"
    if tp is typing.Any:
        return "any value"
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if origin in (list, tuple, dict):
        inner = ", ".join("..." if a is Ellipsis else type_name(a) for a in args)
        return f"{origin.__name__}[{inner}]" if args else origin.__name__
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return f"one of {', '.join(repr(m.value) for m in tp)} ({tp.__name__})"
    if dataclasses.is_dataclass(tp):
        return f"a table ({tp.__name__})"
    return getattr(tp, "__name__", str(tp))


def convert(value: object, tp: object, key: str, source: str, *, text: bool) -> object:
    """Return `value` as an instance of `tp`, or raise ConfigError naming key, type, value, source.

    text=True: `value` is a string from an environment variable, parsed by the type
    (bools from 1/0/true/false/yes/no/on/off, lists from JSON or comma-separated items,
    dicts and tables from JSON, None from ''/none/null)."""
    try:
        return _convert(value, tp, key, text, source)
    except _Mismatch as m:
        # Name the innermost key and its type (a list item: "hosts[2]: expected int, found 'x'"),
        # which points at the offending item rather than at the whole list.
        if m.key != key:
            raise ConfigError.bad_value(m.key, type_name(m.tp), m.value, source, m.why) from None
        raise ConfigError.bad_value(key, type_name(tp), value, source, m.why) from None


def _convert(v: object, tp: object, key: str, text: bool, source: str) -> object:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is typing.Any:
        return v
    if tp is type(None):
        if v is None or (text and isinstance(v, str) and v.strip().lower() in _NONE):
            return None
        raise _Mismatch(key, tp, v)
    if origin in (typing.Union, types.UnionType):
        return _union(v, tp, args, key, text, source)
    if origin is typing.Literal:
        return _literal(v, tp, args, key, text)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum(v, tp, key)
    if dataclasses.is_dataclass(tp):
        if text:
            v = _json(v, tp, key, dict)
        if isinstance(v, tp):
            return v
        if not isinstance(v, dict):
            raise _Mismatch(key, tp, v)
        from rtx.config.loader import build  # the loader builds nested tables (it imports this module)

        return build(tp, v, key, source)
    if origin in (list, tuple) or tp in (list, tuple):
        return _sequence(v, tp, origin or tp, args, key, text, source)
    if origin is dict or tp is dict:
        return _mapping(v, tp, args, key, text, source)
    if tp is bool:
        if isinstance(v, bool):
            return v
        if text and isinstance(v, str):
            t = v.strip().lower()
            if t in _TRUE or t in _FALSE:
                return t in _TRUE
            raise _Mismatch(key, tp, v, "use 1/0, true/false, yes/no or on/off")
        raise _Mismatch(key, tp, v)
    if tp is int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if text and isinstance(v, str):
            return _parse_int(v, tp, key)
        raise _Mismatch(key, tp, v)
    if tp is float:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                return float(v)
            except OverflowError:  # an int beyond 1.8e308
                raise _Mismatch(key, tp, v, "too large for a float") from None
        if text and isinstance(v, str):
            if not v.isascii():  # float() also takes Arabic-Indic and other Unicode digits
                raise _Mismatch(key, tp, v)
            try:
                return float(v.strip())
            except ValueError:
                raise _Mismatch(key, tp, v) from None
        raise _Mismatch(key, tp, v)
    if tp is str:
        if isinstance(v, str):
            return v
        raise _Mismatch(key, tp, v)
    if isinstance(tp, type) and issubclass(tp, PurePath):
        if isinstance(v, (str, PurePath)):
            return tp(v).expanduser() if issubclass(tp, Path) else tp(v)
        raise _Mismatch(key, tp, v)
    raise TypeError(f"rtx.config: field {key!r} has an unsupported type {tp!r}; supported: str, int, float, "
                    "bool, Path, Optional[X], list[X], tuple[X, ...], dict[str, X], Literal[...], Enum, dataclass")


def _parse_int(v: str, tp, key):
    s = v.strip()
    # int() also takes Unicode digits ('٣' -> 3); a config value is ASCII or a mistake.
    if not s.isascii():
        raise _Mismatch(key, tp, v)
    body = s.lstrip("+-").lower()
    try:
        # base 0 reads 0x/0o/0b prefixes (with a sign too) but refuses "010", so only use it for those.
        return int(s, 0) if body.startswith(("0x", "0o", "0b")) else int(s)
    except ValueError as e:
        too_long = str(e).startswith("Exceeds the limit")  # Python's 4300-digit limit on int("...")
        raise _Mismatch(key, tp, v, f"{len(s)} characters, more digits than Python parses" if too_long
                        else "") from None


def _union(v, tp, args, key, text, source):
    # None first, so that an empty env var means None for Optional[str] rather than "".
    if type(None) in args and (v is None or (text and isinstance(v, str) and v.strip().lower() in _NONE)):
        return None
    inner = None
    for a in args:
        if a is type(None):
            continue
        try:
            return _convert(v, a, key, text, source)
        except _Mismatch as m:
            inner = inner or (m if m.key != key else None)
    if inner is not None and len([a for a in args if a is not type(None)]) == 1:
        raise inner
    raise _Mismatch(key, tp, v)


def _literal(v, tp, args, key, text):
    for a in args:
        if v == a and type(v) is type(a):
            return a
    if text and isinstance(v, str):
        for a in args:
            if str(a).lower() == v.strip().lower() or (isinstance(a, bool) and v.strip().lower() in
                                                        (_TRUE if a else _FALSE)):
                return a
    raise _Mismatch(key, tp, v)


def _enum(v, tp, key):
    if isinstance(v, tp):
        return v
    for m in tp:  # by value first (what a config file usually holds), then by name
        if m.value == v and type(m.value) is type(v):
            return m
    if isinstance(v, str):
        for m in tp:
            if str(m.value).lower() == v.strip().lower() or m.name.lower() == v.strip().lower():
                return m
    raise _Mismatch(key, tp, v)


def _json(v, tp, key, want):
    if not isinstance(v, str):
        return v
    try:
        parsed = json.loads(v)
    except ValueError as e:
        raise _Mismatch(key, tp, v, f"not valid JSON: {e}") from None
    if not isinstance(parsed, want):
        raise _Mismatch(key, tp, v, f"the JSON is a {type(parsed).__name__}, not a {want.__name__}")
    return parsed


def _sequence(v, tp, origin, args, key, text, source):
    if text and isinstance(v, str):
        s = v.strip()
        if s.startswith("["):
            v = _json(s, tp, key, list)
            text = False  # JSON items are already typed
        else:  # "a, b, c": the simple form in a shell
            v = [item.strip() for item in s.split(",")] if s else []
    if not isinstance(v, (list, tuple)):
        raise _Mismatch(key, tp, v)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(v) != len(args):
            raise _Mismatch(key, tp, v, f"{len(v)} items instead of {len(args)}")
        return tuple(_convert(x, a, f"{key}[{i}]", text, source) for i, (x, a) in enumerate(zip(v, args)))
    item = args[0] if args else typing.Any
    out = [_convert(x, item, f"{key}[{i}]", text, source) for i, x in enumerate(v)]
    return tuple(out) if origin is tuple else out


def _mapping(v, tp, args, key, text, source):
    if text and isinstance(v, str):
        v = _json(v, tp, key, dict)
        text = False
    if not isinstance(v, dict):
        raise _Mismatch(key, tp, v)
    kt, vt = args if args else (str, typing.Any)
    if kt is not str:
        raise TypeError(f"rtx.config: field {key!r}: dict keys must be str (TOML table keys are), got {kt!r}")
    return {k: _convert(x, vt, f"{key}.{k}", text, source) for k, x in v.items()}
