"""Statically quantized layers (torch.ao.nn.quantized): int8 weights with per-channel scales,
quint8 activations with scales fixed by calibration, integer products accumulated in int32.

rtx has no quantized tensor type, so activations travel between layers as float32 values that
lie exactly on their 8-bit grid ((q - zero_point) * scale). Each layer quantizes its input with the
input qparams observed during calibration (exact when the producer used the same grid), runs
(x_q - x_zp) @ (w_q - w_zp)^T + bias_q in int32, requantizes to its output qparams (clamping at
the zero point when a ReLU is fused) and hands the dequantized values on.
"""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn as nn
from rtx.compress import intrinsic as nni
from rtx.compress._weights import GemmWeight, as_numpy, dequantized_weight, quantize_weight
from rtx.compress.functional import quantize_array
from rtx.compress.qtypes import quint8
from rtx.kernel import windows as _win
from rtx.kernel.int_gemm import exact_matmul
from rtx.nn.modules.utils import _pair

__all__ = ["Quantize", "DeQuantize", "Linear", "LinearReLU", "Conv2d", "ConvReLU2d"]


def _qparams_of(observer):
    if observer.dtype is not quint8:
        raise ValueError(f"quantized layers take quint8 activations; the activation observer has dtype "
                         f"{observer.dtype!r}")
    scale, zp = observer.calculate_qparams()
    return float(as_numpy(scale).reshape(-1)[0]), int(as_numpy(zp).reshape(-1)[0])


def _check_activation_dtype(dtype, who):
    if dtype is not quint8:
        raise ValueError(f"{who}: activations are quint8 (0..255) only, got dtype={dtype!r}")


def _check_input(x, who):
    if not getattr(type(x), "_is_rtx_tensor", False):
        raise TypeError(f"{who} expects an rtx Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{who} expects float activations (on their 8-bit grid), got {x.dtype}")
    return as_numpy(x)


class Quantize(nn.Module):
    """What a QuantStub becomes: rounds float input onto the (scale, zero_point) quint8 grid."""

    def __init__(self, scale, zero_point, dtype=quint8):
        super().__init__()
        _check_activation_dtype(dtype, "quantized.Quantize")
        self.dtype = dtype
        self.register_buffer("scale", rtx.tensor(float(scale)))
        self.register_buffer("zero_point", rtx.tensor(int(zero_point)))

    def forward(self, X):
        x = _check_input(X, "Quantize")
        s, z = float(self.scale), int(self.zero_point)
        q = quantize_array(x, s, z, 0, 255, np.uint8)
        return rtx.from_numpy(((q.astype(np.float32) - z) * s).astype(np.float32))

    @classmethod
    def from_float(cls, mod):
        return cls(*_qparams_of(mod.activation_post_process))

    def extra_repr(self):
        return f"scale={float(self.scale):.6g}, zero_point={int(self.zero_point)}, dtype={self.dtype!r}"


class DeQuantize(nn.Module):
    """What a DeQuantStub becomes: the float carrier already holds the dequantized values."""

    def forward(self, Xq):
        return Xq

    @classmethod
    def from_float(cls, mod):
        return cls()


class _QuantizedLayer(nn.Module):
    """int8 weight + per-channel scale/zero point, float bias, input and output qparams."""

    _relu = False

    def _init_buffers(self, weight_shape, out_channels, bias):
        self.register_buffer("weight", rtx.zeros(weight_shape, dtype=rtx.int8))
        self.register_buffer("weight_scale", rtx.ones(out_channels))
        self.register_buffer("weight_zero_point", rtx.zeros(out_channels, dtype=rtx.int8))
        self.register_buffer("bias", rtx.zeros(out_channels) if bias else None)
        self.register_buffer("scale", rtx.tensor(1.0))
        self.register_buffer("zero_point", rtx.tensor(0))
        self.register_buffer("input_scale", rtx.tensor(1.0))
        self.register_buffer("input_zero_point", rtx.tensor(0))

    def _set_from(self, mod):
        """Weights and qparams from a prepared float, fused or QAT module (which carries its observers)."""
        float_mod = mod[0] if isinstance(mod, nni._FusedModule) else mod
        if hasattr(mod, "folded"):               # QAT conv + BN: fold the BN's running statistics in
            float_mod = mod.folded()
        if hasattr(mod, "weight_fake_quant"):    # QAT: the fake quantizer saw the trained weights
            wq = quantize_weight(float_mod.weight, mod.weight_fake_quant, observe=False)
        else:
            wq = quantize_weight(float_mod.weight, mod.qconfig.weight())
        self.weight, self.weight_scale, self.weight_zero_point = wq
        if float_mod.bias is not None:
            self.bias = float_mod.bias.detach().to(rtx.float32).clone()
        s, z = _qparams_of(mod.activation_post_process)
        self.scale, self.zero_point = rtx.tensor(s), rtx.tensor(z)
        s, z = _qparams_of(mod.input_observer)
        self.input_scale, self.input_zero_point = rtx.tensor(s), rtx.tensor(z)
        return self

    def _quantize_input(self, x):
        """(x_q - x_zp) and the input scale. The integers are carried in float32 (exact: |x| <= 255),
        which is what the GEMM takes: clamp(round(x / s) + zp, 0, 255) - zp, computed in place."""
        s, z = float(self.input_scale), int(self.input_zero_point)
        q = np.divide(x, np.float32(s), dtype=np.float32)
        np.rint(q, out=q)
        q += z
        np.clip(q, 0, 255, out=q)
        q -= z
        return q, s

    def _gemm_weights(self, groups=1):
        """((groups, K, out / groups) centred weight matrices, max |w_q - w_zp|), cached."""
        if "_gemm_cache" not in self.__dict__:
            self._gemm_cache = GemmWeight()
        return self._gemm_cache.get(self.weight, self.weight_zero_point, groups)

    def _requantize(self, acc, in_scale, channel_axis):
        """int32 accumulators (as integer-valued floats; bias already added) -> the output grid, as
        dequantized float32."""
        shape = [1] * acc.ndim
        shape[channel_axis] = -1
        w_scale = as_numpy(self.weight_scale).astype(np.float64).reshape(shape)
        s, z = float(self.scale), int(self.zero_point)
        y = acc if acc.dtype == np.float64 else acc.astype(np.float64)
        y *= in_scale * w_scale / s           # in place: these arrays are the layer's largest
        np.rint(y, out=y)
        y += z
        np.clip(y, z if self._relu else 0, 255, out=y)
        y -= z
        y *= s
        return y.astype(np.float32)

    def _bias_q(self, in_scale):
        """The bias in the accumulator's units (in_scale * w_scale), rounded to an integer, as fbgemm adds it."""
        if self.bias is None:
            return 0.0
        w_scale = as_numpy(self.weight_scale).astype(np.float64)
        return np.rint(as_numpy(self.bias) / (in_scale * w_scale))

    def weight_float(self):
        """The float32 weight the int8 one stands for (PyTorch: mod.weight().dequantize())."""
        return rtx.from_numpy(dequantized_weight(self.weight, self.weight_scale, self.weight_zero_point))


class Linear(_QuantizedLayer):
    """Quantized Linear(in_features, out_features): y = requant((x_q - x_zp) @ (w_q - w_zp)^T + b_q)."""

    _FLOAT = nn.Linear

    def __init__(self, in_features, out_features, bias_=True, dtype=quint8):
        super().__init__()
        _check_activation_dtype(dtype, f"quantized.{type(self).__name__}")
        self.in_features, self.out_features = in_features, out_features
        self._init_buffers((out_features, in_features), out_features, bias_)

    def forward(self, x):
        xa = _check_input(x, type(self).__name__)
        if xa.shape[-1] != self.in_features:
            raise ValueError(f"{type(self).__name__}: expected input with last dimension {self.in_features}, "
                             f"got shape {tuple(xa.shape)}")
        xq, in_scale = self._quantize_input(xa.reshape(-1, self.in_features))
        w, w_max = self._gemm_weights()
        acc = exact_matmul(xq, w[0], self.in_features * 255 * w_max).astype(np.float64) + self._bias_q(in_scale)
        out = self._requantize(acc, in_scale, 1)
        return rtx.from_numpy(out.reshape(*xa.shape[:-1], self.out_features))

    @classmethod
    def from_float(cls, mod):
        """From a prepared float Linear, LinearReLU or QAT Linear carrying its observers."""
        float_mod = mod[0] if isinstance(mod, nni._FusedModule) else mod
        q = cls(float_mod.in_features, float_mod.out_features, float_mod.bias is not None)
        return q._set_from(mod)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={float(self.scale):.6g}, "
                f"zero_point={int(self.zero_point)}")


class LinearReLU(Linear):
    """Quantized Linear followed by ReLU, fused: the ReLU is the clamp at the output zero point."""

    _relu = True


def im2col(x, kernel_size, stride, dilation, pad_value, pads):
    """(N, C, H, W) integers -> (N * Ho * Wo, C * kh * kw) columns, padding with `pad_value` (the zero
    point: the quantized zero). pads are F.pad's (left, right, top, bottom). One row per window
    (rtx.kernel.windows's "NL,CK" layout): the GEMM is cols @ w.T."""
    left, right, top, bottom = pads
    cols = _win.im2col(x, kernel_size, stride, dilation, pads=((top, bottom), (left, right)), pad_value=pad_value,
                       layout="NL,CK")
    n = x.shape[0]
    ho, wo = _win.out_shape(x.shape[2:], kernel_size, stride, dilation, ((top, bottom), (left, right)))
    return cols, (n, ho, wo)


class Conv2d(_QuantizedLayer):
    """Quantized Conv2d (zeros padding): im2col of the int8 input, one integer GEMM per group."""

    _FLOAT = nn.Conv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", dtype=quint8):
        super().__init__()
        _check_activation_dtype(dtype, f"quantized.{type(self).__name__}")
        if padding_mode != "zeros":
            raise ValueError(f"quantized Conv2d supports padding_mode='zeros' only, got {padding_mode!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by "
                             f"groups ({groups})")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.dilation = _pair(kernel_size), _pair(stride), _pair(dilation)
        if isinstance(padding, str):
            if padding != "valid":
                raise ValueError(f"quantized Conv2d: padding={padding!r} is not supported; give the numbers")
            padding = 0
        self.padding = _pair(padding)
        ph, pw = self.padding
        self._pads = (pw, pw, ph, ph)
        self._init_buffers((out_channels, in_channels // groups, *self.kernel_size), out_channels, bias)

    def forward(self, x):
        xa = _check_input(x, type(self).__name__)
        if xa.ndim != 4 or xa.shape[1] != self.in_channels:
            raise ValueError(f"{type(self).__name__}: expected input of shape (N, {self.in_channels}, H, W), got "
                             f"{tuple(xa.shape)}")
        xq, in_scale = self._quantize_input(xa)
        g, cin = self.groups, self.in_channels // self.groups
        w, w_max = self._gemm_weights(g)
        outs = []
        for i in range(g):
            # xq is already centred, so the padding value is the centred zero: 0
            cols, (n, ho, wo) = im2col(xq[:, i * cin:(i + 1) * cin] if g > 1 else xq, self.kernel_size,
                                       self.stride, self.dilation, 0, self._pads)
            outs.append(exact_matmul(cols, w[i], cols.shape[1] * 255 * w_max))
        acc = (outs[0] if g == 1 else np.concatenate(outs, axis=1)).astype(np.float64)
        acc += self._bias_q(in_scale)                                  # (N*Ho*Wo, O)
        out = self._requantize(acc, in_scale, 1)
        return rtx.from_numpy(np.ascontiguousarray(out.reshape(n, ho, wo, self.out_channels).transpose(0, 3, 1, 2)))

    @classmethod
    def from_float(cls, mod):
        float_mod = mod[0] if isinstance(mod, nni._FusedModule) else mod
        if hasattr(mod, "folded"):
            float_mod = mod.folded()
        if float_mod.padding_mode != "zeros":
            raise ValueError(f"quantized Conv2d supports padding_mode='zeros' only, got {float_mod.padding_mode!r}")
        pads = float_mod._reversed_padding_repeated_twice     # resolves padding="same"
        q = cls(float_mod.in_channels, float_mod.out_channels, float_mod.kernel_size, float_mod.stride, 0,
                float_mod.dilation, float_mod.groups, float_mod.bias is not None)
        q._pads = tuple(pads)
        q.padding = (pads[2], pads[0])
        return q._set_from(mod)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, groups={self.groups}, scale={float(self.scale):.6g}, "
                f"zero_point={int(self.zero_point)}")


class ConvReLU2d(Conv2d):
    _relu = True
