"""FakeQuantize: an observer plus quantize-dequantize in the forward pass, with a straight-through
gradient, for quantization-aware training (torch.ao.quantization.fake_quantize)."""
from __future__ import annotations

import rtx
import rtx.nn as nn
from rtx.compress import functional as QF
from rtx.compress.observer import (
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _with_args,
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_symmetric,
)
from rtx.compress.qtypes import qint8, quint8

__all__ = ["FakeQuantize", "default_fake_quant", "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
           "disable_fake_quant", "enable_fake_quant", "disable_observer", "enable_observer"]


class FakeQuantize(nn.Module):
    """x -> (clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale, the
    scale and zero point coming from `observer`, which watches x while observer_enabled.

    Gradient: straight through inside the integer range, zero where x was clipped."""

    with_args = classmethod(_with_args)

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min >= quant_max:
                raise ValueError(f"quant_min must be less than quant_max, got {quant_min} and {quant_max}")
            observer_kwargs["quant_min"], observer_kwargs["quant_max"] = quant_min, quant_max
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        self.is_per_channel = self.qscheme in (per_channel_affine, per_channel_symmetric)
        self.register_buffer("fake_quant_enabled", rtx.tensor([1], dtype=rtx.uint8))
        self.register_buffer("observer_enabled", rtx.tensor([1], dtype=rtx.uint8))
        self.register_buffer("scale", rtx.tensor([1.0]))
        self.register_buffer("zero_point", rtx.tensor([0], dtype=rtx.int64))

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def has_observed(self):
        """Whether the observer inside has seen data (convert refuses QAT layers that never ran)."""
        return self.activation_post_process.has_observed()

    def forward(self, X):
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            self.scale, self.zero_point = scale.to(rtx.float32), zero_point.to(rtx.int64)
        if int(self.fake_quant_enabled[0]) == 1:
            if self.is_per_channel:
                X = QF.fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                        self.quant_min, self.quant_max)
            else:
                X = QF.fake_quantize_per_tensor_affine(X, float(self.scale.reshape(-1)[0]),
                                                       int(self.zero_point.reshape(-1)[0]),
                                                       self.quant_min, self.quant_max)
        return X

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled = rtx.tensor([1 if enabled else 0], dtype=rtx.uint8)
        return self

    def disable_fake_quant(self):
        return self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled = rtx.tensor([1 if enabled else 0], dtype=rtx.uint8)
        return self

    def disable_observer(self):
        return self.enable_observer(False)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # scale / zero_point take the saved size (per channel: one per channel)
        for name in ("scale", "zero_point"):
            if prefix + name in state_dict:
                setattr(self, name, rtx.zeros(tuple(state_dict[prefix + name].shape), dtype=getattr(self, name).dtype))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self):
        return (f"fake_quant_enabled={int(self.fake_quant_enabled[0])}, observer_enabled="
                f"{int(self.observer_enabled[0])}, quant_min={self.quant_min}, quant_max={self.quant_max}, "
                f"dtype={self.dtype!r}, qscheme={self.qscheme}, ch_axis={self.ch_axis}")


def _each_fake_quant(model, fn):
    for m in model.modules():
        if isinstance(m, FakeQuantize):
            fn(m)


def disable_fake_quant(mod):
    """Use as model.apply(disable_fake_quant)."""
    if isinstance(mod, FakeQuantize):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    if isinstance(mod, FakeQuantize):
        mod.enable_fake_quant()


def disable_observer(mod):
    """Use as model.apply(disable_observer): freezes the QAT ranges (PyTorch's recipe, late in training)."""
    if isinstance(mod, FakeQuantize):
        mod.disable_observer()


def enable_observer(mod):
    if isinstance(mod, FakeQuantize):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                            dtype=quint8, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                   quant_max=127, dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(observer=MovingAveragePerChannelMinMaxObserver,
                                                               quant_min=-128, quant_max=127, dtype=qint8,
                                                               qscheme=per_channel_symmetric, ch_axis=0)
