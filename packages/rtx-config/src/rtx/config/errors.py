"""ConfigError: one bad value, named by its key path, expected type, found value and source."""
from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value that cannot be used.

    Attributes (None where they do not apply): ``key`` (dotted path, e.g. ``limits.max_body_bytes``),
    ``expected`` (the type, in words), ``found`` (the value as given), ``source`` (``serve.toml``,
    ``env RTX_SERVE_PORT``, ``overrides``, ``defaults``)."""

    def __init__(self, message: str, *, key: str | None = None, expected: str | None = None,
                 found: object = None, source: str | None = None):
        super().__init__(message)
        self.key, self.expected, self.found, self.source = key, expected, found, source

    @classmethod
    def bad_value(cls, key: str, expected: str, found: object, source: str, why: str = "") -> ConfigError:
        """The standard message: `key` (from source): expected X, found V (type)."""
        # An env var is always text: its type says nothing, its repr shows stray spaces and quotes.
        shown = _clip(repr(found)) if source.startswith("env ") and isinstance(found, str) else _show(found)
        msg = f"config key {key!r} (from {source}): expected {expected}, found {shown}"
        if why:
            msg += f" ({why})"
        return cls(msg, key=key, expected=expected, found=found, source=source)


def _clip(text: str) -> str:
    # A huge value (a 5000-digit number, a pasted file) would drown the message.
    return text if len(text) <= 80 else text[:77] + "..."


def _show(value: object) -> str:
    return f"{_clip(repr(value))} ({type(value).__name__})"
