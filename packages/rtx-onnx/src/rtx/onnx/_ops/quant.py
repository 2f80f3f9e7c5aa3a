"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
QLinearConv, MatMulInteger, ConvInteger. Integer arithmetic in NumPy (no gradients: quantized
tensors are not trained through)."""
from __future__ import annotations

import numpy as np

from rtx.kernel.int_gemm import INT_RANGES
from rtx.kernel.quant import choose_qparams
from rtx.onnx._ops import arr, cast_array, const, np_dtype, op, wrap_axis


def _expand(p, shape, axis, block):
    """Broadcast a scale/zero-point (scalar, per-axis or per-block) to the data's shape."""
    p = np.asarray(p)
    if p.size == 1 and (p.ndim <= 1):
        return p.reshape(())
    axis = wrap_axis(axis, len(shape), "QuantizeLinear")
    if block:
        out = np.repeat(p, block, axis=axis)
        return np.take(out, np.arange(shape[axis]), axis=axis)
    if p.ndim == 1:
        return p.reshape([-1 if d == axis else 1 for d in range(len(shape))])
    return p


def quantize(x, scale, zp, out_dtype, axis=1, block=0, saturate=True, precision=None):
    s = _expand(scale, x.shape, axis, block)
    if precision is not None:
        q = x.astype(precision) / s.astype(precision)
    else:
        q = (x.astype(np.float32) / s.astype(np.float32)) if x.dtype.kind == "V" or s.dtype.kind == "V" \
            else x / s
    name = out_dtype.name
    z = None if zp is None else _expand(zp, x.shape, axis, block)
    if name in INT_RANGES:
        qi = np.rint(q).astype(np.int64)
        if z is not None:
            qi = qi + z.astype(np.int64)
        lo, hi = INT_RANGES[name]
        return np.clip(qi, lo, hi).astype(out_dtype)
    if name.startswith("float8"):
        return cast_array(q.astype(np.float32), out_dtype, saturate)
    if z is not None:
        q = q + z.astype(np.float32)
    return q.astype(np.float32).astype(out_dtype)


@op("QuantizeLinear")
def quantize_linear(inputs, attrs, opset):
    x, scale = arr(inputs[0]), arr(inputs[1])
    zp = arr(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else None
    if zp is not None:
        out_dtype = zp.dtype
    elif attrs.get("output_dtype"):
        out_dtype = np_dtype(attrs["output_dtype"])
    else:
        out_dtype = np.dtype(np.uint8)
    precision = np_dtype(attrs["precision"]) if attrs.get("precision") else None
    return const(quantize(x, scale, zp, out_dtype, attrs.get("axis", 1), attrs.get("block_size", 0),
                          bool(attrs.get("saturate", 1)), precision))


@op("DequantizeLinear")
def dequantize_linear(inputs, attrs, opset):
    x, scale = arr(inputs[0]), arr(inputs[1])
    zp = arr(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else None
    axis, block = attrs.get("axis", 1), attrs.get("block_size", 0)
    s = _expand(scale, x.shape, axis, block)
    xf = x.astype(np.float32)
    if zp is not None:
        xf = xf - _expand(zp, x.shape, axis, block).astype(np.float32)
    out_dtype = np_dtype(attrs["output_dtype"]) if attrs.get("output_dtype") else scale.dtype
    y = xf * s.astype(np.float32) if s.dtype.kind == "V" or s.dtype == np.float16 else xf * s
    return const(np.asarray(y).astype(out_dtype))


@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(inputs, attrs, opset):
    x = arr(inputs[0]).astype(np.float32)
    # The spec's formula: rint(0 - min / scale) in float32, saturated; the float32 scale is kept even
    # when tiny (onnxruntime's too), and an all-zero x gets scale 0 and zero point 0.
    scale, zp = choose_qparams(float(x.min(initial=0.0)), float(x.max(initial=0.0)), 0, 255, tiny_scale="keep",
                               zero_point_rounding="shift_then_round", scale_dtype=np.float32,
                               zero_point_dtype=np.float32)
    scale, zp = scale[()], np.uint8(zp)
    y = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8) if scale != 0 else np.zeros(x.shape, np.uint8)
    return const(y), const(np.array(scale, np.float32)), const(np.array(zp, np.uint8))


def _centered(a, zp, axis=None):
    a = a.astype(np.int32)
    if zp is None:
        return a
    zp = np.asarray(zp).astype(np.int32)
    if zp.ndim == 1 and zp.size > 1 and axis is not None:
        zp = zp.reshape([-1 if d == axis else 1 for d in range(a.ndim)])
    return a - zp


@op("MatMulInteger")
def matmul_integer(inputs, attrs, opset):
    a, b = arr(inputs[0]), arr(inputs[1])
    za = arr(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else None
    zb = arr(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    ac = _centered(a, za if za is None or np.asarray(za).size == 1 else np.asarray(za).reshape(-1, 1))
    bc = _centered(b, zb)
    return const(np.matmul(ac, bc).astype(np.int32))


@op("QLinearMatMul")
def qlinear_matmul(inputs, attrs, opset):
    a, sa, za, b, sb, zb, sy, zy = (arr(v) for v in inputs)
    af = (a.astype(np.float32) - za.astype(np.float32).reshape(-1, 1) if za.size > 1
          else a.astype(np.float32) - za.astype(np.float32))
    bf = b.astype(np.float32) - zb.astype(np.float32)
    sa32 = sa.astype(np.float32).reshape(-1, 1) if sa.size > 1 else sa.astype(np.float32)
    y = np.matmul(af * sa32, bf * sb.astype(np.float32))
    return const(quantize(y, sy.astype(np.float32), zy, zy.dtype))


def _conv_int(x, w, attrs):
    """Integer convolution through the float conv (exact: int32 products fit float64's mantissa)."""
    from rtx.onnx._ops.nn import conv
    y = conv([const(x.astype(np.float64)), const(w.astype(np.float64))], attrs, 22)
    return np.rint(arr(y)).astype(np.int64)


@op("ConvInteger")
def conv_integer(inputs, attrs, opset):
    x, w = arr(inputs[0]), arr(inputs[1])
    zx = arr(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else None
    zw = arr(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    xc = _centered(x, zx)
    wc = _centered(w, zw, axis=0)
    return const(_conv_int(xc, wc, attrs).astype(np.int32))


@op("QLinearConv")
def qlinear_conv(inputs, attrs, opset):
    x, sx, zx, w, sw, zw, sy, zy = (arr(v) for v in inputs[:8])
    bias = arr(inputs[8]) if len(inputs) > 8 and inputs[8] is not None else None
    acc = _conv_int(_centered(x, zx), _centered(w, zw, axis=0), attrs)
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape([1, -1] + [1] * (acc.ndim - 2))
    scale = sx.astype(np.float64) * sw.astype(np.float64)
    if scale.size > 1:
        scale = scale.reshape([1, -1] + [1] * (acc.ndim - 2))
    y = acc * scale
    return const(quantize(y, sy.astype(np.float64), zy, zy.dtype))
