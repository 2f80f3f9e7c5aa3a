"""field_doc: a dataclass field that carries its one-line documentation (shown by describe())."""
from __future__ import annotations

import copy
import dataclasses


def field_doc(default=dataclasses.MISSING, doc: str = "", *, default_factory=dataclasses.MISSING, **kwargs):
    """``dataclasses.field`` with a description: ``port: int = field_doc(8000, "TCP port to listen on")``.

    A mutable default (list, dict, set) is turned into a default_factory that copies it, so
    ``hosts: list[str] = field_doc(["a"], "...")`` is allowed. Other keyword arguments go to
    dataclasses.field; the text is stored in the field's metadata under "doc"."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["doc"] = doc
    if isinstance(default, (list, dict, set)):
        default, default_factory = dataclasses.MISSING, (lambda d=default: copy.deepcopy(d))
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata, **kwargs)
