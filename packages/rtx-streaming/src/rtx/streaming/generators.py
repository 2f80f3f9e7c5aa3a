"""TextGenerator, the interface a streamable text model offers, and load_text_generator, which builds
one from a checkpoint through the entry point group `rtx.text_generators`.

rtx-streaming sits below the model packages (layer production < models), so it cannot import
rtx.nlg; a model package registers a loader for its checkpoint format instead:

    [project.entry-points."rtx.text_generators"]
    "rtx-nlg-gpt/1" = "rtx.nlg.serving:load_gpt_checkpoint"

The entry point's name is the checkpoint's "format" field; its value is called as
`loader(path, checkpoint=<the loaded dict>, **options)` and returns a TextGenerator.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

__all__ = ["TextGenerator", "load_text_generator", "text_generator_formats", "collect_text", "finish_reason_of",
           "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "rtx.text_generators"


@runtime_checkable
class TextGenerator(Protocol):
    """A model that streams text.

    stream_text(prompt, *, max_new_tokens, temperature, top_k, top_p, seed, stop) returns a
    blocking iterator of str pieces whose concatenation is the continuation of `prompt`.
    Parameters are checked when it is called (ValueError/TypeError: a client mistake), before the
    first piece is computed. The iterator may report why it ended as its return value ("stop": an
    end-of-text token or a stop string, "length": max_new_tokens reached). It must tolerate being
    closed (GeneratorExit) between pieces: that is how a cancelled stream stops it."""

    def stream_text(self, prompt: str, **params) -> Iterator[str]: ...


def finish_reason_of(returned, iterator) -> str:
    """Why a text iterator ended: its return value (StopIteration.value), else its `finish_reason`
    attribute, else "stop". Anything but "stop" or "length" is a ValueError."""
    reason = returned if returned is not None else getattr(iterator, "finish_reason", None)
    if reason is None:
        return "stop"
    if reason not in ("stop", "length"):
        raise ValueError(f"the text iterator ended with finish_reason {reason!r}; expected 'stop' or 'length'")
    return reason


def collect_text(pieces) -> tuple[str, str]:
    """Run a text iterator (what TextGenerator.stream_text returns) to its end, for a non-streaming
    answer: (the whole text, finish reason "stop" or "length")."""
    iterator = iter(pieces)
    out = []
    while True:
        try:
            piece = next(iterator)
        except StopIteration as end:
            return "".join(out), finish_reason_of(end.value, iterator)
        if not isinstance(piece, str):
            raise TypeError(f"the text iterator yielded {type(piece).__name__}, expected str pieces")
        out.append(piece)


def text_generator_formats() -> dict[str, str]:
    """{checkpoint format: "module:loader"} of the installed text generator loaders."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_text_generator(path, **options) -> TextGenerator:
    """Load the checkpoint at `path` (rtx.load) and build a TextGenerator for it with the loader its
    "format" field names (entry point group rtx.text_generators). options go to the loader
    (e.g. device="cuda")."""
    import rtx  # rtx.load: a foundation package (rtx-tensor), imported when first needed

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_text_generator: path must be a str or os.PathLike, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_text_generator: no checkpoint file at {os.fspath(path)!r}")
    ckpt = rtx.load(path, map_location="cpu")
    fmt = ckpt.get("format") if isinstance(ckpt, dict) else None
    installed = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    names = ", ".join(sorted(installed)) or "none"
    if not isinstance(fmt, str):
        raise ValueError(f"load_text_generator: {os.fspath(path)!r} has no \"format\" field naming a text "
                         f"generator (it holds a {type(ckpt).__name__}); installed formats: {names}")
    if fmt not in installed:
        raise ValueError(f"load_text_generator: no loader for checkpoint format {fmt!r} of {os.fspath(path)!r}; "
                         f"installed formats: {names} (entry point group {ENTRY_POINT_GROUP!r}: "
                         f"install the package that wrote the checkpoint, e.g. pip install rtx-nlg)")
    generator = installed[fmt].load()(path, checkpoint=ckpt, **options)
    if not isinstance(generator, TextGenerator):
        raise TypeError(f"load_text_generator: the loader {installed[fmt].value} for {fmt!r} returned "
                        f"{type(generator).__name__}, which has no stream_text method")
    return generator
