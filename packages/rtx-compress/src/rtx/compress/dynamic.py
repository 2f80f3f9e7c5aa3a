"""Dynamically quantized layers (torch.ao.nn.quantized.dynamic): int8 weights with per-channel
scales, stored once; activations quantized on the fly, per call, from their own min/max (quint8,
7-bit range as fbgemm); the product accumulates in int32 and the output is float. The same
classes hold float16 / bfloat16 weights when quantize_dynamic is given those dtypes."""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn as nn
from rtx.compress._weights import GemmWeight, as_numpy, dequantized_weight, quantize_weight
from rtx.compress.functional import calculate_qparams
from rtx.compress.observer import PerChannelMinMaxObserver, per_channel_symmetric
from rtx.compress.qtypes import qint8
from rtx.kernel.int_gemm import exact_matmul

__all__ = ["Linear", "LSTM", "MultiheadAttention", "dynamic_linear"]

_ACT_MIN, _ACT_MAX = 0, 127   # quint8 with reduce_range, PyTorch's dynamic default on x86


def _store_dtype(dtype):
    if dtype is qint8 or dtype is rtx.float16 or dtype is rtx.bfloat16:
        return dtype
    raise ValueError(f"dynamic quantization stores weights as rtx.qint8, rtx.float16 or rtx.bfloat16, "
                     f"got {dtype!r}")


def quantize_activation(x):
    """(x_q - zero_point) as integer-valued float32 and the scale, from x's own range (which always
    includes 0): clamp(round(x / s) + zp, 0, 127) - zp."""
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    scale, zp = calculate_qparams(lo, hi, _ACT_MIN, _ACT_MAX)
    s, z = float(scale), int(zp)
    q = np.divide(x, np.float32(s), dtype=np.float32)
    np.rint(q, out=q)
    q += z
    np.clip(q, _ACT_MIN, _ACT_MAX, out=q)
    q -= z
    return q, s


def dynamic_linear(x, weight, weight_scale, bias, columns=slice(None)):
    """x (..., K) float32 @ dequant(W)^T + bias with an exact int8 x int8 -> int32 product.
    weight: a (matrix (1, K, out), max |w_q - w_zp|) pair from GemmWeight; columns: the
    output features to compute (a slice of a packed projection)."""
    matrix, w_max = weight
    w = matrix[0][:, columns]
    xq, s = quantize_activation(x.reshape(-1, x.shape[-1]))
    acc = exact_matmul(xq, w, w.shape[0] * _ACT_MAX * w_max)
    out = acc * (s * as_numpy(weight_scale)[columns].astype(np.float32))
    if bias is not None:
        out = out + as_numpy(bias)[columns]
    return out.astype(np.float32).reshape(*x.shape[:-1], -1)


def _gemm_weight(module, name):
    """The cached GEMM form of module.<name> (int8) with its <name>_zero_point."""
    caches = module.__dict__.setdefault("_gemm_caches", {})
    cache = caches.setdefault(name, GemmWeight())
    return cache.get(getattr(module, name), getattr(module, name + "_zero_point"))


def _float_weight(w, dtype):
    return w.detach().to(dtype).clone()


class Linear(nn.Module):
    """Dynamic quantized Linear. dtype qint8: buffers weight (int8), weight_scale, weight_zero_point
    (one per output feature); dtype float16/bfloat16: weight in that dtype, computed in float32."""

    def __init__(self, in_features, out_features, bias_=True, dtype=qint8):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.dtype = _store_dtype(dtype)
        if dtype is qint8:
            self.register_buffer("weight", rtx.zeros((out_features, in_features), dtype=rtx.int8))
            self.register_buffer("weight_scale", rtx.ones(out_features))
            self.register_buffer("weight_zero_point", rtx.zeros(out_features, dtype=rtx.int8))
        else:
            self.register_buffer("weight", rtx.zeros((out_features, in_features), dtype=dtype))
        self.register_buffer("bias", rtx.zeros(out_features) if bias_ else None)

    def forward(self, x):
        if not getattr(type(x), "_is_rtx_tensor", False) or not x.is_floating_point():
            raise TypeError(f"dynamic Linear expects a float rtx Tensor, got {getattr(x, 'dtype', type(x).__name__)}")
        if x.shape[-1] != self.in_features:
            raise ValueError(f"dynamic Linear: expected input with last dimension {self.in_features}, got shape "
                             f"{tuple(x.shape)}")
        xa = as_numpy(x).astype(np.float32)
        bias = self.bias
        if self.dtype is qint8:
            out = dynamic_linear(xa, _gemm_weight(self, "weight"), self.weight_scale, bias)
        else:
            out = xa @ as_numpy(self.weight).astype(np.float32).T
            out = (out if bias is None else out + as_numpy(bias)).astype(np.float32)
        return rtx.from_numpy(out)

    def weight_float(self):
        if self.dtype is qint8:
            return rtx.from_numpy(dequantized_weight(self.weight, self.weight_scale, self.weight_zero_point))
        return self.weight.to(rtx.float32)

    @classmethod
    def from_float(cls, mod, dtype=qint8, weight_observer=None):
        """From a float nn.Linear; weight_observer (a factory) defaults to per-channel symmetric int8."""
        q = cls(mod.in_features, mod.out_features, mod.bias is not None, dtype)
        if dtype is qint8:
            obs = (weight_observer or PerChannelMinMaxObserver.with_args(dtype=qint8, qscheme=per_channel_symmetric))()
            q.weight, q.weight_scale, q.weight_zero_point = quantize_weight(mod.weight, obs)
        else:
            q.weight = _float_weight(mod.weight, dtype)
        if mod.bias is not None:
            q.bias = mod.bias.detach().to(rtx.float32).clone()
        return q

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self.dtype!r}"


def _sigmoid(x):
    return 0.5 * (np.tanh(0.5 * x) + 1.0)   # no overflow for large |x|


class LSTM(nn.Module):
    """Dynamic quantized LSTM (num_layers, bidirectional, batch_first; gates i, f, g, o as PyTorch).
    Each step quantizes h on the fly and runs both products in int8; cell arithmetic is float32.
    Not supported: PackedSequence input, proj_size, dropout between layers (inference only)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, dtype=qint8):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, dropout, bidirectional
        self.dtype = _store_dtype(dtype)
        self._cells = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse") if bidirectional else ("",):
                in_size = input_size if layer == 0 else hidden_size * (2 if bidirectional else 1)
                cell = {}
                for kind, k in (("ih", in_size), ("hh", hidden_size)):
                    name = f"weight_{kind}_l{layer}{suffix}"
                    if dtype is qint8:
                        self.register_buffer(name, rtx.zeros((4 * hidden_size, k), dtype=rtx.int8))
                        self.register_buffer(name + "_scale", rtx.ones(4 * hidden_size))
                        self.register_buffer(name + "_zero_point", rtx.zeros(4 * hidden_size, dtype=rtx.int8))
                    else:
                        self.register_buffer(name, rtx.zeros((4 * hidden_size, k), dtype=dtype))
                    cell[kind] = name
                    bname = f"bias_{kind}_l{layer}{suffix}"
                    self.register_buffer(bname, rtx.zeros(4 * hidden_size) if bias else None)
                    cell["b" + kind] = bname
                self._cells.append(cell)

    def _matmul(self, x, name):
        if self.dtype is qint8:
            return dynamic_linear(x, _gemm_weight(self, name), getattr(self, name + "_scale"), None)
        return x @ as_numpy(getattr(self, name)).astype(np.float32).T

    def _bias(self, name):
        b = getattr(self, name)
        return 0.0 if b is None else as_numpy(b)

    def _direction(self, x, h, c, cell, reverse):
        """x (L, N, In) -> outputs (L, N, H), final h and c."""
        xw = self._matmul(x, cell["ih"]) + self._bias(cell["bih"]) + self._bias(cell["bhh"])
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        out = np.empty((x.shape[0], x.shape[1], self.hidden_size), np.float32)
        hs = self.hidden_size
        for t in steps:
            gates = xw[t] + self._matmul(h, cell["hh"])
            i, f = _sigmoid(gates[:, :hs]), _sigmoid(gates[:, hs:2 * hs])
            g, o = np.tanh(gates[:, 2 * hs:3 * hs]), _sigmoid(gates[:, 3 * hs:])
            c = f * c + i * g
            h = (o * np.tanh(c)).astype(np.float32)
            out[t] = h
        return out, h, c

    def forward(self, input, hx=None):
        if not getattr(type(input), "_is_rtx_tensor", False):
            raise TypeError(f"dynamic LSTM expects an rtx Tensor (PackedSequence is not supported), got "
                            f"{type(input).__name__}")
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        x = as_numpy(input).astype(np.float32)
        x = x if batched else x[:, None]
        if self.batch_first and batched:
            x = x.transpose(1, 0, 2)
        if x.shape[-1] != self.input_size:
            raise ValueError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                             f"{x.shape[-1]}")
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, x.shape[1], self.hidden_size)
        if hx is None:
            h0 = c0 = np.zeros(shape, np.float32)
        else:
            h0, c0 = (as_numpy(t).astype(np.float32) for t in hx)
            h0, c0 = (a if batched else a[:, None] for a in (h0, c0))
            if h0.shape != shape or c0.shape != shape:
                raise ValueError(f"LSTM: expected h_0 and c_0 of shape {shape}, got {h0.shape} and {c0.shape}")
        hn, cn = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, h, c = self._direction(x, h0[k], c0[k], self._cells[k], reverse=d == 1)
                outs.append(out)
                hn.append(h)
                cn.append(c)
            x = np.concatenate(outs, axis=2) if dirs == 2 else outs[0]
        out = x if batched else x[:, 0]
        if self.batch_first and batched:
            out = out.transpose(1, 0, 2)
        h, c = np.stack(hn).astype(np.float32), np.stack(cn).astype(np.float32)
        if not batched:
            h, c = h[:, 0], c[:, 0]
        return rtx.from_numpy(np.ascontiguousarray(out)), (rtx.from_numpy(h), rtx.from_numpy(c))

    @classmethod
    def from_float(cls, mod, dtype=qint8, weight_observer=None):
        if mod.proj_size:
            raise ValueError("dynamic quantized LSTM does not support proj_size")
        q = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first, mod.dropout,
                mod.bidirectional, dtype)
        for name, p in mod.named_parameters():
            if name.startswith("weight"):
                if dtype is qint8:
                    obs = (weight_observer or PerChannelMinMaxObserver.with_args(dtype=qint8,
                                                                                 qscheme=per_channel_symmetric))()
                    w, s, z = quantize_weight(p, obs)
                    setattr(q, name, w)
                    setattr(q, name + "_scale", s)
                    setattr(q, name + "_zero_point", z)
                else:
                    setattr(q, name, _float_weight(p, dtype))
            else:
                setattr(q, name, p.detach().to(rtx.float32).clone())
        return q

    def extra_repr(self):
        return (f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
                f"bidirectional={self.bidirectional}, dtype={self.dtype!r}")




def _additive(mask, what):
    """A bool (True = masked) or float (added) mask as a float array of 0 / -inf / values."""
    m = as_numpy(mask)
    if m.dtype == np.bool_:
        return np.where(m, -np.inf, 0.0).astype(np.float32)
    if m.dtype.kind != "f":
        raise TypeError(f"{what} must be a bool or float tensor, got {m.dtype}")
    return m.astype(np.float32)


class MultiheadAttention(nn.Module):
    """Dynamic quantized nn.MultiheadAttention: the packed q/k/v projection and out_proj hold int8
    weights (per output row) and run as dynamic_linear; softmax(Q K^T / sqrt(d) + mask) V stays
    float32. PyTorch leaves attention out of dynamic quantization (out_proj is a
    NonDynamicallyQuantizableLinear); rtx offers it when nn.MultiheadAttention is named in
    quantize_dynamic's set. Inference only: no dropout; no add_bias_kv / add_zero_attn / kdim / vdim."""

    def __init__(self, embed_dim, num_heads, bias=True, batch_first=False, dtype=qint8):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.batch_first, self._qkv_same_embed_dim = batch_first, True
        self.in_proj = Linear(embed_dim, 3 * embed_dim, bias, dtype)
        self.out_proj = Linear(embed_dim, embed_dim, bias, dtype)

    @property
    def in_proj_bias(self):
        return self.in_proj.bias

    def _project(self, x, rows, linear):
        """x @ W[rows]^T + b[rows] for a slice of the packed projection."""
        if linear.dtype is qint8:
            return dynamic_linear(x, _gemm_weight(linear, "weight"), linear.weight_scale, linear.bias, rows)
        out = x @ as_numpy(linear.weight)[rows].astype(np.float32).T
        return out if linear.bias is None else out + as_numpy(linear.bias)[rows]

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        q, k, v = (as_numpy(t).astype(np.float32) for t in (query, key, value))
        if not batched:
            q, k, v = q[:, None], k[:, None], v[:, None]
        elif self.batch_first:
            q, k, v = (a.transpose(1, 0, 2) for a in (q, k, v))
        if q.shape[-1] != self.embed_dim or k.shape[-1] != self.embed_dim or v.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention: expected embed_dim {self.embed_dim} in the last dimension, got "
                             f"{q.shape[-1]}, {k.shape[-1]}, {v.shape[-1]}")
        (L, N, E), S, H, d = q.shape, k.shape[0], self.num_heads, self.head_dim
        if query is key and key is value:      # self-attention: one matmul for q, k and v
            qkv = self._project(q, slice(0, 3 * E), self.in_proj)
            qp, kp, vp = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
        else:
            qp, kp, vp = (self._project(a, slice(i * E, (i + 1) * E), self.in_proj) for i, a in enumerate((q, k, v)))
        # (L, N, E) -> (N, H, L, d)
        qh, kh, vh = (a.reshape(a.shape[0], N, H, d).transpose(1, 2, 0, 3) for a in (qp, kp, vp))
        scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)                # (N, H, L, S)
        if attn_mask is None and is_causal:
            attn_mask = rtx.from_numpy(np.triu(np.ones((L, S), bool), 1))
        if attn_mask is not None:
            m = _additive(attn_mask, "attn_mask")
            scores = scores + (m.reshape(N, H, L, S) if m.ndim == 3 else m)
        if key_padding_mask is not None:
            m = _additive(key_padding_mask, "key_padding_mask")
            scores = scores + (m[None, None] if not batched else m[:, None, None, :])
        scores = scores - scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        ctx = (p @ vh).transpose(2, 0, 1, 3).reshape(L, N, E)            # (L, N, E)
        out = self._project(ctx, slice(0, E), self.out_proj)
        if not batched:
            out = out[:, 0]
        elif self.batch_first:
            out = out.transpose(1, 0, 2)
        weights = None
        if need_weights:
            weights = p.mean(axis=1) if average_attn_weights else p
            weights = rtx.from_numpy(np.ascontiguousarray(weights[0] if not batched else weights))
        return rtx.from_numpy(np.ascontiguousarray(out, dtype=np.float32)), weights

    @classmethod
    def from_float(cls, mod, dtype=qint8, weight_observer=None):
        if not mod._qkv_same_embed_dim or mod.bias_k is not None or mod.add_zero_attn:
            raise ValueError("dynamic MultiheadAttention supports the packed projection only (no kdim/vdim, "
                             "add_bias_kv or add_zero_attn)")
        q = cls(mod.embed_dim, mod.num_heads, mod.in_proj_bias is not None, mod.batch_first, dtype)
        packed = nn.Linear(mod.embed_dim, 3 * mod.embed_dim, mod.in_proj_bias is not None)
        packed.weight, packed.bias = mod.in_proj_weight, mod.in_proj_bias
        q.in_proj = Linear.from_float(packed, dtype, weight_observer)
        q.out_proj = Linear.from_float(mod.out_proj, dtype, weight_observer)
        return q

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"
