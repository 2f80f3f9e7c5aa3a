"""QuantStub / DeQuantStub / QuantWrapper: mark where a float model turns quantized and back.
Before convert they are identities (QuantStub observes its input once prepared)."""
from __future__ import annotations

import rtx.nn as nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Identity until convert, which swaps it for a quantized.Quantize holding the observed qparams."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(nn.Module):
    """Identity until convert, which swaps it for a quantized.DeQuantize."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """module between a QuantStub and a DeQuantStub (attributes quant, dequant, module), for models
    written without stubs."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
