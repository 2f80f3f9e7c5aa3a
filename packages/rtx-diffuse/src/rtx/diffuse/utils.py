"""Small helpers shared by schedulers and pipelines (diffusers' `randn_tensor`, `BaseOutput`)."""
from __future__ import annotations

import rtx


def randn_tensor(shape, generator=None, device=None, dtype=None):
    """Standard normal noise of `shape` drawn from `generator` (an `rtx.Generator`), or the global one.
    A list of generators draws one batch element from each, as diffusers does."""
    if isinstance(generator, (list, tuple)):
        if len(generator) != shape[0]:
            raise ValueError(f"got a list of {len(generator)} generators for a batch of {shape[0]}: "
                             "give one generator per batch element")
        return rtx.cat([rtx.randn((1, *shape[1:]), generator=g, device=device, dtype=dtype) for g in generator])
    return rtx.randn(tuple(shape), generator=generator, device=device, dtype=dtype)


class BaseOutput(dict):
    """diffusers' output dataclass: fields read as attributes, by key, and in order as a tuple."""

    def __init__(self, **fields):
        super().__init__(**fields)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'{type(self).__name__}' has no field '{name}'") from None

    def __getitem__(self, key):
        if isinstance(key, int):
            return self.to_tuple()[key]
        return super().__getitem__(key)

    def to_tuple(self):
        return tuple(v for v in self.values() if v is not None)
