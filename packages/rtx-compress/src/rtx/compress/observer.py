"""Observers: modules that watch the tensors passing through them and turn the range they saw
into quantization parameters, as torch.ao.quantization.observer (same names, arguments,
defaults and buffers: min_val / max_val)."""
from __future__ import annotations

import functools
import warnings

import numpy as np

import rtx
import rtx.nn as nn
from rtx.compress.functional import _EPS, calculate_qparams
from rtx.compress.qtypes import as_qdtype, qint8, qrange, quint8

__all__ = ["ObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "HistogramObserver", "PercentileObserver",
           "PlaceholderObserver", "default_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "default_histogram_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer", "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric"]

# PyTorch's qscheme objects (torch.per_tensor_affine, ...) are named by strings here.
per_tensor_affine = "per_tensor_affine"
per_tensor_symmetric = "per_tensor_symmetric"
per_channel_affine = "per_channel_affine"
per_channel_symmetric = "per_channel_symmetric"


class _PartialWrapper:
    """What Observer.with_args returns: a factory that remembers its arguments (and can take more)."""

    def __init__(self, p):
        self.p = p

    def __call__(self, *args, **kwargs):
        return self.p(*args, **kwargs)

    def with_args(self, **kwargs):
        return _PartialWrapper(functools.partial(self.p, **kwargs))

    def __repr__(self):
        return f"{self.p.func.__name__}.with_args({', '.join(f'{k}={v!r}' for k, v in self.p.keywords.items())})"


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _arr(t):
    return t.detach().cpu().numpy()


def _check_finite(observer, lo, hi):
    """A NaN or infinity would silently give NaN/inf scales: stop at the first one seen."""
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"{type(observer).__name__} observed non-finite values (min {lo}, max {hi}); "
                         "quantization parameters need finite data")


class ObserverBase(nn.Module):
    """Base of all observers: forward(x) records x and returns it unchanged; calculate_qparams()
    returns (scale, zero_point) tensors."""

    with_args = classmethod(_with_args)

    def __init__(self, dtype=quint8, is_dynamic=False):
        super().__init__()
        self.dtype = dtype if dtype is rtx.float16 or dtype is rtx.float32 or dtype is rtx.bfloat16 \
            else as_qdtype(dtype)
        self.is_dynamic = is_dynamic

    def calculate_qparams(self):
        raise NotImplementedError


class UniformQuantizationObserverBase(ObserverBase):
    """The integer range and scheme shared by the min/max and histogram observers."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False, quant_min=None, quant_max=None,
                 factory_kwargs=None, eps=_EPS, is_dynamic=False):
        super().__init__(dtype, is_dynamic)
        if self.dtype not in (qint8, quint8):
            raise ValueError(f"observers quantize to rtx.qint8 or rtx.quint8, got dtype={dtype!r}")
        schemes = (per_tensor_affine, per_tensor_symmetric, per_channel_affine, per_channel_symmetric)
        if qscheme not in schemes:
            raise ValueError(f"qscheme must be one of {schemes}, got {qscheme!r}")
        self.qscheme = qscheme
        self.reduce_range = reduce_range
        self.eps = eps
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise ValueError(f"the quantization range must include 0, got [{quant_min}, {quant_max}]")
            qmin, qmax = qrange(self.dtype)
            if not qmin <= quant_min < quant_max <= qmax:
                raise ValueError(f"quant_min and quant_max must lie in {self.dtype.name}'s range "
                                 f"[{qmin}, {qmax}], got [{quant_min}, {quant_max}]")
            self.quant_min, self.quant_max = int(quant_min), int(quant_max)
            if reduce_range:
                self.quant_min, self.quant_max = self.quant_min // 2, self.quant_max // 2
        else:
            # reduce_range drops one bit, as fbgemm needs to keep its 16-bit intermediate sums from saturating
            self.quant_min, self.quant_max = qrange(self.dtype)
            if reduce_range:
                self.quant_min, self.quant_max = self.quant_min // 2, self.quant_max // 2

    def has_observed(self):
        """Whether forward has seen any data (convert refuses layers whose observers saw none)."""
        lo = _arr(self.min_val)
        return lo.size > 0 and bool(np.all(lo != np.inf))

    def _default_qparams(self):
        # PyTorch's behaviour for an observer that saw nothing: warn, return scale 1, zero point 0
        warnings.warn(f"{type(self).__name__}: must run observer before calling calculate_qparams; returning "
                      "default values (scale 1, zero point 0)", stacklevel=3)
        return rtx.tensor([1.0]), rtx.tensor([0])

    def _qparams(self, min_val, max_val):
        # a quint8 symmetric zero point sits mid-range, as PyTorch's (128 on the full range)
        mid = (self.quant_min + self.quant_max) // 2 if self.has_customized_qrange else 128
        zero = mid if self.dtype is quint8 else 0
        scale, zp = calculate_qparams(min_val, max_val, self.quant_min, self.quant_max, self.qscheme, zero, self.eps)
        return rtx.from_numpy(np.atleast_1d(scale)), rtx.from_numpy(np.atleast_1d(zp))

    def extra_repr(self):
        return (f"dtype={self.dtype!r}, qscheme={self.qscheme}, quant_min={self.quant_min}, "
                f"quant_max={self.quant_max}")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Running minimum and maximum of everything seen."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False, quant_min=None, quant_max=None,
                 factory_kwargs=None, eps=_EPS, is_dynamic=False):
        if qscheme in (per_channel_affine, per_channel_symmetric) and type(self) in (MinMaxObserver,
                                                                                   MovingAverageMinMaxObserver):
            raise ValueError(f"{type(self).__name__} is per tensor; use PerChannelMinMaxObserver for {qscheme}")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        self.register_buffer("min_val", rtx.tensor(float("inf")))
        self.register_buffer("max_val", rtx.tensor(float("-inf")))

    def _update(self, lo, hi):
        self.min_val = rtx.tensor(min(float(self.min_val), lo))
        self.max_val = rtx.tensor(max(float(self.max_val), hi))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = _arr(x_orig)
        lo, hi = float(x.min()), float(x.max())
        _check_finite(self, lo, hi)
        self._update(lo, hi)
        return x_orig

    def calculate_qparams(self):
        if not self.has_observed():
            return self._default_qparams()
        return self._qparams(float(self.min_val), float(self.max_val))

    def reset_min_max_vals(self):
        self.min_val = rtx.tensor(float("inf"))
        self.max_val = rtx.tensor(float("-inf"))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Exponential moving averages of each batch's min and max:
    min <- min + c * (batch_min - min); the first batch sets them."""

    def __init__(self, averaging_constant=0.01, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        if not 0 < averaging_constant <= 1:
            raise ValueError(f"averaging_constant must be in (0, 1], got {averaging_constant}")
        self.averaging_constant = averaging_constant
        # unknown keywords reach MinMaxObserver's signature and fail there, not silently vanish
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)

    def _update(self, lo, hi):
        c = self.averaging_constant
        old_lo, old_hi = float(self.min_val), float(self.max_val)
        if old_lo == float("inf"):
            self.min_val, self.max_val = rtx.tensor(lo), rtx.tensor(hi)
        else:
            self.min_val = rtx.tensor(old_lo + c * (lo - old_lo))
            self.max_val = rtx.tensor(old_hi + c * (hi - old_hi))


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Running min and max per index along ch_axis (for weights: per output channel)."""

    def __init__(self, ch_axis=0, dtype=quint8, qscheme=per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False):
        if qscheme not in (per_channel_affine, per_channel_symmetric):
            raise ValueError(f"{type(self).__name__} needs a per-channel qscheme, got {qscheme!r}")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", rtx.tensor([]))
        self.register_buffer("max_val", rtx.tensor([]))

    def _channel_minmax(self, x):
        if not -x.ndim <= self.ch_axis < x.ndim:
            raise ValueError(f"ch_axis {self.ch_axis} is out of range for a {x.ndim}-d input")
        y = np.moveaxis(x, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        return y.min(axis=1).astype(np.float32), y.max(axis=1).astype(np.float32)

    def _combine(self, lo, hi):
        old_lo, old_hi = _arr(self.min_val), _arr(self.max_val)
        if old_lo.size == 0:
            return lo, hi
        if old_lo.shape != lo.shape:
            raise ValueError(f"{type(self).__name__} saw {old_lo.size} channels before and {lo.size} now")
        return np.minimum(old_lo, lo), np.maximum(old_hi, hi)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        lo, hi = self._channel_minmax(_arr(x_orig))
        _check_finite(self, lo, hi)
        lo, hi = self._combine(lo, hi)
        self.min_val, self.max_val = rtx.from_numpy(lo), rtx.from_numpy(hi)
        return x_orig

    def calculate_qparams(self):
        if not self.has_observed():
            return self._default_qparams()
        return self._qparams(_arr(self.min_val), _arr(self.max_val))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # the per-channel buffers start empty: take the saved ones' size
        for name in ("min_val", "max_val"):
            if prefix + name in state_dict:
                setattr(self, name, rtx.empty(tuple(state_dict[prefix + name].shape)))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel moving averages of min and max (the QAT weight observer's moving form)."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=quint8, qscheme=per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        self.averaging_constant = averaging_constant
        super().__init__(ch_axis, dtype, qscheme, reduce_range, quant_min, quant_max, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)

    def _combine(self, lo, hi):
        old_lo, old_hi = _arr(self.min_val), _arr(self.max_val)
        if old_lo.size == 0:
            return lo, hi
        c = self.averaging_constant
        return old_lo + c * (lo - old_lo), old_hi + c * (hi - old_hi)


class HistogramObserver(UniformQuantizationObserverBase):
    """A histogram of everything seen (`bins` bins over the running [min, max]); calculate_qparams
    picks the clipping range [a, b] that minimises the squared quantization error of the
    histogram's values (rounding inside, clipping outside), so a few outliers no longer stretch
    the scale for everyone. Candidate ends are the histogram's quantiles (0 to 2% cut on either
    side), min-max included; PyTorch searches bin by bin instead, to the same end."""

    _CUTS = np.array([0, 1e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2])

    def __init__(self, bins=2048, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False, upsample_rate=None):
        if qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise ValueError(f"{type(self).__name__} is per tensor, got qscheme={qscheme!r}")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps, is_dynamic)
        if bins < 2:
            raise ValueError(f"bins must be at least 2, got {bins}")
        self.bins = bins
        self.register_buffer("histogram", rtx.zeros(bins))
        self.register_buffer("min_val", rtx.tensor(float("inf")))
        self.register_buffer("max_val", rtx.tensor(float("-inf")))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = _arr(x_orig).astype(np.float64).ravel()
        lo, hi = float(x.min()), float(x.max())
        _check_finite(self, lo, hi)
        old_lo, old_hi = float(self.min_val), float(self.max_val)
        hist = _arr(self.histogram).astype(np.float64)
        if old_lo != float("inf"):
            new_lo, new_hi = min(lo, old_lo), max(hi, old_hi)
            if (new_lo, new_hi) != (old_lo, old_hi):
                # re-bin the old counts into the wider range at their bin centres
                centres = old_lo + (np.arange(self.bins) + 0.5) * (old_hi - old_lo) / self.bins
                hist = np.histogram(centres, bins=self.bins, range=(new_lo, new_hi), weights=hist)[0]
            lo, hi = new_lo, new_hi
        if hi == lo:
            hi = lo + 1e-8  # one value: give the histogram a width
        hist = hist + np.histogram(x, bins=self.bins, range=(lo, hi))[0]
        self.histogram = rtx.from_numpy(hist.astype(np.float32))
        self.min_val, self.max_val = rtx.tensor(lo), rtx.tensor(hi)
        return x_orig

    def _centres(self):
        lo, hi = float(self.min_val), float(self.max_val)
        return lo + (np.arange(self.bins) + 0.5) * (hi - lo) / self.bins, _arr(self.histogram).astype(np.float64)

    def quantization_error(self, a, b):
        """The squared error, summed over the histogram, of quantizing to the range [a, b]."""
        centres, counts = self._centres()
        scale, zp = calculate_qparams(a, b, self.quant_min, self.quant_max, self.qscheme,
                                      128 if self.dtype is quint8 else 0, self.eps)
        s, z = float(scale), int(zp)
        q = np.clip(np.rint(centres / s) + z, self.quant_min, self.quant_max)
        return float(np.sum(counts * ((q - z) * s - centres) ** 2))

    def _search(self):
        centres, counts = self._centres()
        cdf = np.cumsum(counts) / counts.sum()
        left = np.unique(centres[np.searchsorted(cdf, self._CUTS, side="right").clip(0, self.bins - 1)])
        right = np.unique(centres[np.searchsorted(cdf, 1 - self._CUTS, side="left").clip(0, self.bins - 1)])
        best = (float(self.min_val), float(self.max_val))
        best_err = self.quantization_error(*best)
        for a in left:
            for b in right:
                if a < b:
                    err = self.quantization_error(a, b)
                    if err < best_err:
                        best, best_err = (float(a), float(b)), err
        return best

    def calculate_qparams(self):
        if not self.has_observed():
            return self._default_qparams()
        return self._qparams(*self._search())


class PercentileObserver(HistogramObserver):
    """A histogram, clipped at two percentiles of what was seen (default the 0.01% and 99.99% points)."""

    def __init__(self, percentile=99.99, bins=2048, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, eps=_EPS, is_dynamic=False):
        if not 50 < percentile <= 100:
            raise ValueError(f"percentile must be in (50, 100], got {percentile}")
        self.percentile = percentile
        super().__init__(bins, dtype, qscheme, reduce_range, quant_min, quant_max, eps=eps, is_dynamic=is_dynamic)

    def _search(self):
        """The percentiles, read off the histogram by linear interpolation within a bin."""
        lo, hi = float(self.min_val), float(self.max_val)
        counts = _arr(self.histogram).astype(np.float64)
        edges = np.linspace(lo, hi, self.bins + 1)
        cdf = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
        p = self.percentile / 100
        return float(np.interp(1 - p, cdf, edges)), float(np.interp(p, cdf, edges))


class PlaceholderObserver(ObserverBase):
    """Observes nothing; names a dtype (float16 for fp16 dynamic quantization, quint8 for dynamic
    activations whose range is taken per batch)."""

    def __init__(self, dtype=rtx.float32, custom_op_name="", compute_dtype=None, quant_min=None, quant_max=None,
                 qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype, is_dynamic)
        self.qscheme = qscheme

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise RuntimeError("PlaceholderObserver has no quantization parameters: it only names a dtype")


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=qint8, qscheme=per_channel_symmetric)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=quint8, is_dynamic=True)
default_placeholder_observer = PlaceholderObserver
