"""Int8 kernels: integer matmul and convolution with exact int32 accumulation, quantize and
dequantize.

NumPy (and CuPy without cuBLASLt) has no integer GEMM, but a float GEMM over the integer
values is exact as long as every partial sum is an integer the float type represents: with
|a| <= A and |w| <= W over K products, every partial sum is at most K*A*W, so float32 (24-bit
mantissa) is exact while K*A*W < 2**24, float64 while K*A*W < 2**53. `acc_dtype` (the
workspace's one rule, rtx.kernel.gemm_dtype) picks the smaller one that is exact, from the
actual weights and the activation's integer range; the result is then the int32 accumulator,
bit for bit (tests/test_int8.py checks against np.int32 matmul).

Outputs: "int32" (MatMulInteger/ConvInteger), "float" (a QDQ pattern: acc * x_scale * w_scale
+ bias), "requant" (that float, quantized by the QuantizeLinear that followed it) or "quant"
(QLinearMatMul/QLinearConv/QGemm: round-half-even((acc + bias) * x_scale * w_scale / y_scale)
+ y_zero_point, saturated).
"""
from __future__ import annotations

import numpy as np

from rtx.inference.kernels import OWNING, ConvWorkspace, builder
from rtx.kernel.int_gemm import INT_RANGES as _INT_RANGES
from rtx.kernel.int_gemm import gemm_dtype

# the types the int8 kernels run (rtx.kernel's table also has the 4- and 2-bit ones, which they refuse)
INT_RANGES = {name: _INT_RANGES[name] for name in ("uint8", "int8", "uint16", "int16")}


def acc_dtype(k, a_max, w_max):
    """float32 when every partial sum of k products |a| <= a_max, |w| <= w_max is exact in it, else
    float64; ValueError past float64's exact integers. The rule lives in rtx.kernel.gemm_dtype,
    shared with rtx.compress's quantized layers."""
    return gemm_dtype(k, a_max, w_max)


def centered_max(dtype, zp):
    """The largest |q - zp| over the integer type's range."""
    lo, hi = INT_RANGES[np.dtype(dtype).name]
    return max(abs(lo - zp), abs(hi - zp))


def epilogue(xp, attrs):
    """fn(acc, shape_out, out) turning acc (float, exact integers) into the op's output, written
    into `out` when given (else a new array). Everything per-op is bound here, once."""
    kind = attrs["out"]
    bias, dt = attrs.get("bias"), np.dtype(attrs["dtype"]) if "dtype" in attrs else None
    lo, hi = INT_RANGES.get(dt.name, (None, None)) if dt is not None else (None, None)
    maximum, minimum, rint, multiply = xp.maximum, xp.minimum, xp.rint, xp.multiply

    def store(y, shape_out, out):
        if out is None:
            return y.astype(dt).reshape(shape_out)
        xp.copyto(out.reshape(y.shape), y, casting="unsafe")
        return out

    if kind == "int32":
        dt = np.dtype(np.int32)
        return store
    if kind == "float":
        scale = attrs["scale"]

        def fn(acc, shape_out, out):
            y = out.reshape(acc.shape) if out is not None else xp.empty(acc.shape, dt)
            multiply(acc, scale, out=y, casting="unsafe")
            if bias is not None:
                y += bias
            return y.reshape(shape_out)
        return fn
    if kind == "requant":   # the float output above, then QuantizeLinear, on the same float32 values
        scale, y_scale, zp = attrs["scale"], attrs["y_scale"], attrs["zp"]

        def fn(acc, shape_out, out):
            y = acc if acc.dtype == np.float32 else acc.astype(np.float32)
            multiply(y, scale, out=y)
            if bias is not None:
                y += bias
            y /= y_scale
            rint(y, out=y)
            y += zp
            maximum(y, lo, out=y)
            minimum(y, hi, out=y)
            return store(y, shape_out, out)
        return fn
    # quant: acc + bias (int32, exact in acc's float type), times x_scale*w_scale/y_scale, rounded
    mult, zp = attrs["mult"], attrs["zp"]

    def fn(acc, shape_out, out):
        if bias is not None:
            acc += bias
        acc *= mult
        rint(acc, out=acc)
        acc += zp
        maximum(acc, lo, out=acc)
        minimum(acc, hi, out=acc)
        return store(acc, shape_out, out)
    return fn


def _finish_buffered(finish, acc, shape_out, B, out_k):
    """finish(acc, shape_out, out) into the step's output buffer B[out_k] (None: a fresh array each
    call); the first call's result becomes that buffer, reused by the calls after it."""
    if out_k is None:
        return finish(acc, shape_out, None)
    out = B[out_k]
    res = finish(acc, shape_out, out)
    if out is None:
        B[out_k] = res
    return res


@builder("IntLinear")
def build_int_linear(op, ctx):
    """x (..., K) integer -> (x - x_zp) @ w, w (K, N) the centered weights as float."""
    xp = ctx.xp
    x, o = op.inputs[0], op.outputs[0]
    a = op.attrs
    w, zp0 = a["w"], a["x_zp"]
    K, N = w.shape
    ws_k = ctx.slot()
    out_k = ctx.slot() if ctx.buffered else None
    zp_in = op.inputs[1] if len(op.inputs) > 1 else None   # a zero point computed at run time
    finish = epilogue(xp, a)

    def step(v, B):
        q = v[x]
        zp = int(v[zp_in]) if zp_in is not None else zp0
        lead = q.shape[:-1]
        q2 = q.reshape(-1, K)
        ws = B[ws_k]
        if ws is None:
            ws = B[ws_k] = (xp.empty(q2.shape, w.dtype), xp.empty((q2.shape[0], N), w.dtype))
        xf, acc = ws
        xf[...] = q2
        if zp:
            xf -= zp
        xp.matmul(xf, w, out=acc)
        v[o] = _finish_buffered(finish, acc, lead + (N,), B, out_k)
    return step


@builder("IntConv")
def build_int_conv(op, ctx):
    """Integer convolution: (x - x_zp) into a float im2col buffer (the padding is a real zero),
    one batched GEMM with the centered weights."""
    xp = ctx.xp
    x, o = op.inputs[0], op.outputs[0]
    a = op.attrs
    w, zp0, g = a["w"], a["x_zp"], a["groups"]
    zp_in = op.inputs[1] if len(op.inputs) > 1 else None   # a zero point computed at run time
    O, kern = w.shape[0], w.shape[2:]
    w3 = xp.ascontiguousarray(w.reshape(g, O // g, -1))
    bias = a.get("bias")
    attrs = dict(a, bias=None if bias is None else bias.reshape(O, 1))
    ws_k = ctx.slot()
    out_k = ctx.slot() if ctx.buffered else None
    finish = epilogue(xp, attrs)

    def step(v, B):
        q = v[x]
        zp = int(v[zp_in]) if zp_in is not None else zp0
        ws = B[ws_k]
        if ws is None:
            cw = ConvWorkspace(xp, q.shape, w.dtype, kern, a["stride"], a["pads"], a["dilation"], g, O)
            ws = B[ws_k] = (cw, xp.empty((q.shape[0], O) + cw.out_sp, w.dtype))
        cw, acc = ws
        N = q.shape[0]
        acc3 = cw.product(xp, w3, q, acc.reshape(N, O, cw.P), zp)
        v[o] = _finish_buffered(finish, acc3, acc.shape, B, out_k)
    return step


@builder("Quantize")
def build_quantize(op, ctx):
    """ONNX QuantizeLinear, per tensor: saturate(round_half_even(x / scale) + zp)."""
    xp = ctx.xp
    scale, zp, dt = op.attrs["scale"], op.attrs["zp"], np.dtype(op.attrs["dtype"])
    lo, hi = INT_RANGES[dt.name]

    def f(a, out=None):
        y = a / scale
        xp.rint(y, out=y)
        y += zp
        xp.maximum(y, lo, out=y)
        xp.minimum(y, hi, out=y)
        if out is None:
            return y.astype(dt)
        xp.copyto(out, y, casting="unsafe")
        return out
    from rtx.inference.kernels import _elementwise
    return _elementwise(f, op.inputs, op.outputs[0], ctx)


@builder("Dequantize")
def build_dequantize(op, ctx):
    """ONNX DequantizeLinear, per tensor: (q - zp) * scale."""
    xp = ctx.xp
    scale, zp, dt = op.attrs["scale"], op.attrs["zp"], np.dtype(op.attrs["dtype"])

    def f(a, out=None):
        if out is None:
            out = xp.empty(a.shape, dt)
        out[...] = a
        if zp:
            out -= zp
        out *= scale
        return out
    from rtx.inference.kernels import _elementwise
    return _elementwise(f, op.inputs, op.outputs[0], ctx)


OWNING.update({"IntLinear", "IntConv", "Quantize", "Dequantize"})
