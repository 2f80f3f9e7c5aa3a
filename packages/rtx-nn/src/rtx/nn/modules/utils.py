"""PyTorch's torch.nn.modules.utils helpers for layer arguments: _ntuple(n) and _single, _pair,
_triple, _quadruple turn `3` into (3, 3) for a 2-d layer. The one copy in rtx: rtx-nn's layers,
rtx.compress's quantized layers and rtx.vision's transforms use it.

Functional calls validate their arguments instead (rtx.nn._functional.conv.expand_param: ints
only, with PyTorch's error messages); layers store what they were given, as PyTorch's do."""
from __future__ import annotations

import collections.abc
import itertools

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple"]


def _ntuple(n, name="parse"):
    """A function turning a scalar into an n-tuple of it; an iterable becomes a tuple as is, except
    that one of length 1 is repeated n times (rtx accepts kernel_size=(3,) for Conv2d)."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            t = tuple(x)
            return t * n if len(t) == 1 else t
        return tuple(itertools.repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
