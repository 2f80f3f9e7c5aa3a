"""QConfig: which observer (or fake quantizer) watches activations and which watches weights,
with PyTorch's ready-made configurations (torch.ao.quantization.qconfig)."""
from __future__ import annotations

from collections import namedtuple

import rtx
from rtx.compress.fake_quantize import (
    FakeQuantize,
    default_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
)
from rtx.compress.observer import (
    HistogramObserver,
    MovingAverageMinMaxObserver,
    PlaceholderObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)

__all__ = ["QConfig", "QConfigDynamic", "default_qconfig", "default_per_channel_qconfig", "default_qat_qconfig",
           "default_dynamic_qconfig", "per_channel_dynamic_qconfig", "float16_dynamic_qconfig",
           "get_default_qconfig", "get_default_qat_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """QConfig(activation=..., weight=...): each a factory (a class or X.with_args(...)), called once
    per module so that every module gets its own observer."""

    def __new__(cls, activation, weight):
        for what, f in (("activation", activation), ("weight", weight)):
            if isinstance(f, rtx.nn.Module):
                raise ValueError(f"QConfig received an observer instance for {what}; pass the class or "
                                 f"{type(f).__name__}.with_args(...) so that each module gets its own")
            if not callable(f):
                raise TypeError(f"QConfig {what} must be an observer class or factory (e.g. MinMaxObserver or "
                                f"MinMaxObserver.with_args(...)), got {type(f).__name__}")
        return super().__new__(cls, activation, weight)


QConfigDynamic = QConfig  # PyTorch's deprecated name

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=rtx.float16, is_dynamic=True),
                                  weight=PlaceholderObserver.with_args(dtype=rtx.float16))
bfloat16_dynamic_qconfig = QConfig(activation=PlaceholderObserver.with_args(dtype=rtx.bfloat16, is_dynamic=True),
                                   weight=PlaceholderObserver.with_args(dtype=rtx.bfloat16))

_BACKENDS = ("x86", "fbgemm", "qnnpack", "onednn")


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")


def get_default_qconfig(backend="x86", version=0):
    """PyTorch's post-training static configuration for a backend: x86/fbgemm use a histogram
    observer with reduce_range (7-bit activations) and per-channel symmetric weights; qnnpack uses
    8-bit activations and per-tensor weights; onednn 8-bit activations and per-channel weights."""
    _check_backend(backend)
    if backend in ("x86", "fbgemm"):
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False), weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend="x86", version=1):
    """PyTorch's quantization-aware training configuration for a backend (moving-average observers)."""
    _check_backend(backend)
    act = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                 reduce_range=backend in ("x86", "fbgemm"))
    weight = default_per_channel_weight_fake_quant if backend != "qnnpack" else default_weight_fake_quant
    return QConfig(activation=act, weight=weight)


