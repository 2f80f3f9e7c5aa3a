"""A minimal ONNX runtime for devices: NumPy for the math, onnx for parsing, nothing else.

This file imports only numpy and onnx (never rtx), so it can be copied to a device alone:

    python runtime.py model.onnx input.npy [-o outputs.npz]

    from runtime import Session
    sess = Session("model.onnx")                       # a path, bytes or an onnx.ModelProto
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})

`Session` has onnxruntime's calling convention. It runs the operators that rtx.edge exports contain
(float, fp16-storage and int8 QDQ models of CNNs and MLPs) plus the quantized QLinear ops; any other op
is refused when the model is loaded, with the list of supported ones. Convolution and pooling gather
their windows with NumPy stride tricks (im2col) and convolution is one BLAS GEMM per group.

Nodes whose inputs are all constants (the DequantizeLinear of an int8 weight, a Cast of an fp16
weight) run once at load: an int8 model is 4x smaller on disk and on the wire, but the weights sit
dequantized (float32) in memory and the math runs in float32, which gives the same numbers as
onnxruntime's integer kernels up to rounding ties (NumPy has no fast int8 GEMM to gain from).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


class UnsupportedOpError(NotImplementedError):
    """The model contains an operator (or an operator variant) this runtime does not implement."""


class NodeArg:
    """An input or output description, as onnxruntime's NodeArg: .name, .shape, .type."""

    def __init__(self, name, shape, type):
        self.name, self.shape, self.type = name, shape, type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


# ---------------------------------------------------------------------------------------------
# The op table: op type -> fn(inputs: list[np.ndarray | None], attrs: dict, opset: int) -> list
# ---------------------------------------------------------------------------------------------
OPS = {}


def _op(*names):
    def register(fn):
        for name in names:
            OPS[name] = fn
        return fn
    return register


def supported_ops():
    """The op types (default ONNX domain) this runtime implements, sorted."""
    return sorted(OPS)


def _np_dtype(onnx_type):
    return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))


# --- elementwise ---------------------------------------------------------------------------------
def _integer_div(a, b):
    q = np.trunc(a.astype(np.float64) / b)  # ONNX integer Div truncates toward zero, like C
    return q.astype(np.result_type(a, b))


_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


@_op("Add", "Sub", "Mul", "Div")
def _binary(x, attrs, opset, op_type):
    a, b = x
    if op_type == "Div" and np.issubdtype(np.result_type(a, b), np.integer):
        return [_integer_div(a, b)]
    with np.errstate(all="ignore"):  # integer wrap-around and inf/nan follow IEEE/C as in ONNX
        return [_BINARY[op_type](a, b).astype(np.result_type(a, b), copy=False)]


@_op("Relu")
def _relu(x, attrs, opset, op_type):
    return [np.maximum(x[0], np.zeros((), x[0].dtype))]


@_op("Sigmoid")
def _sigmoid(x, attrs, opset, op_type):
    with np.errstate(over="ignore"):
        return [(1 / (1 + np.exp(-x[0]))).astype(x[0].dtype, copy=False)]


@_op("Tanh")
def _tanh(x, attrs, opset, op_type):
    return [np.tanh(x[0])]


@_op("Softmax")
def _softmax(x, attrs, opset, op_type):
    x = x[0]
    if opset < 13:  # opsets 1-12 flatten to 2-D at `axis` (default 1) and normalise each row
        axis = attrs.get("axis", 1) % max(x.ndim, 1)
        flat = x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))  # not -1: 0 rows
        return [_softmax([flat], {"axis": 1}, 13, op_type)[0].reshape(x.shape)]
    axis = attrs.get("axis", -1)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [e / e.sum(axis=axis, keepdims=True)]


@_op("Identity")
def _identity(x, attrs, opset, op_type):
    return [x[0]]


@_op("Cast")
def _cast(x, attrs, opset, op_type):
    return [x[0].astype(_np_dtype(attrs["to"]))]


@_op("Constant")
def _constant(x, attrs, opset, op_type):
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in attrs:
            return [np.array(attrs[key], dtype)]
    if "value" in attrs:
        return [numpy_helper.to_array(attrs["value"])]
    raise UnsupportedOpError(f"Constant with attribute(s) {sorted(attrs)} is not supported "
                             "(supported: value, value_float(s), value_int(s))")


# --- shape ---------------------------------------------------------------------------------------
@_op("Flatten")
def _flatten(x, attrs, opset, op_type):
    x = x[0]
    axis = attrs.get("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))]  # not -1: an empty batch


@_op("Reshape")
def _reshape(x, attrs, opset, op_type):
    data, shape = x
    shape = [int(s) for s in shape]
    if not attrs.get("allowzero", 0):  # 0 means "keep this dim" unless allowzero is set
        shape = [data.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [data.reshape(shape)]


@_op("Transpose")
def _transpose(x, attrs, opset, op_type):
    perm = attrs.get("perm")
    return [np.transpose(x[0], perm if perm else None)]


# --- linear algebra ------------------------------------------------------------------------------
@_op("MatMul")
def _matmul(x, attrs, opset, op_type):
    return [np.matmul(x[0], x[1])]


@_op("Gemm")
def _gemm(x, attrs, opset, op_type):
    a, b = x[0], x[1]
    c = x[2] if len(x) > 2 else None
    a = a.T if attrs.get("transA", 0) else a
    b = b.T if attrs.get("transB", 0) else b
    y = a @ b
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    if c is not None:
        y = y + (c if beta == 1.0 else c * np.asarray(beta, y.dtype))
    return [y.astype(x[0].dtype, copy=False)]


# --- convolution and pooling ---------------------------------------------------------------------
def _pads(attrs, in_shape, kernel, strides, dilations, ceil_mode=False):
    """(begin, end) paddings per spatial dim and the output sizes, as the ONNX spec computes them."""
    nd = len(kernel)
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-n // s) for n, s in zip(in_shape, strides)]
        total = [max(0, (o - 1) * s + e - n) for o, s, e, n in zip(out, strides, extent, in_shape)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        begin, end = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        return begin, end, out
    if auto_pad == "VALID":
        begin = end = [0] * nd
    elif auto_pad == "NOTSET":
        pads = list(attrs.get("pads", [0] * 2 * nd))
        begin, end = pads[:nd], pads[nd:]
    else:
        raise ValueError(f"auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got {auto_pad!r}")
    out = []
    for n, b, e_, ext, s in zip(in_shape, begin, end, extent, strides):
        span = n + b + e_ - ext
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= n + b:  # the last window would start inside the end padding
            o -= 1
        out.append(o)
    return list(begin), list(end), out


def _windows(x, kernel, strides, dilations, out):
    """A read-only view (N, C, *out, *kernel) of every window of the padded x: im2col without copying.
    rtx.kernel.windows.sliding_windows is the shared version (rtx.nn, rtx.inference, rtx.compress and
    rtx.onnx use it); this file keeps its own few lines because it must run with NumPy and onnx alone."""
    nd = len(kernel)
    s = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(kernel)
    step = s[:2] + tuple(s[2 + i] * strides[i] for i in range(nd)) + tuple(s[2 + i] * dilations[i] for i in range(nd))
    return np.lib.stride_tricks.as_strided(x, shape, step, writeable=False)


def _pad_to(x, begin, end, out, kernel, strides, dilations, value):
    """Pad the spatial dims by (begin, end), plus whatever the last (ceil-mode) window reaches past them."""
    widths = [(0, 0), (0, 0)]
    for i, (b, e) in enumerate(zip(begin, end)):
        need = (out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - (x.shape[2 + i] + b)
        widths.append((b, max(e, need, 0)))
    if all(w == (0, 0) for w in widths):
        return x
    return np.pad(x, widths, constant_values=value)


def _geometry(x, attrs, kernel, ceil_mode=False):
    nd = len(kernel)
    strides = list(attrs.get("strides", [1] * nd))
    dilations = list(attrs.get("dilations", [1] * nd))
    begin, end, out = _pads(attrs, x.shape[2:], kernel, strides, dilations, ceil_mode)
    return strides, dilations, begin, end, out


def _conv(x, w, b, attrs):
    """N-d convolution: im2col windows, then one GEMM per group."""
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    group = attrs.get("group", 1)
    strides, dilations, begin, end, out = _geometry(x, attrs, kernel)
    xp = _pad_to(x, begin, end, out, kernel, strides, dilations, 0)
    win = _windows(xp, kernel, strides, dilations, out)
    n, c, nd = x.shape[0], x.shape[1], len(kernel)
    m, cg = w.shape[0], c // group
    mg = m // group
    if c != cg * group or w.shape[1] != cg:
        raise ValueError(f"Conv: input has {c} channels, weight {tuple(w.shape)} with group={group} expects "
                         f"{w.shape[1] * group}")
    spatial = int(np.prod(out))
    ys = []
    for g in range(group):
        # (N, *out, Cg, *k): every output position's receptive field as one row of the im2col matrix
        cols = np.moveaxis(win[:, g * cg:(g + 1) * cg], 1, 1 + nd).reshape(n * spatial, cg * int(np.prod(kernel)))
        ys.append(cols @ w[g * mg:(g + 1) * mg].reshape(mg, -1).T)
    y = ys[0] if group == 1 else np.concatenate(ys, axis=1)
    y = np.moveaxis(y.reshape(n, *out, m), -1, 1)
    if b is not None:
        y = y + b.reshape((1, m) + (1,) * nd)
    return np.ascontiguousarray(y)


@_op("Conv")
def _conv_op(x, attrs, opset, op_type):
    b = x[2] if len(x) > 2 else None
    return [_conv(x[0], x[1], b, attrs).astype(x[0].dtype, copy=False)]


@_op("MaxPool")
def _maxpool(x, attrs, opset, op_type):
    x = x[0]
    if attrs.get("storage_order", 0):
        raise UnsupportedOpError("MaxPool with storage_order=1 is not supported")
    kernel = list(attrs["kernel_shape"])
    strides, dilations, begin, end, out = _geometry(x, attrs, kernel, attrs.get("ceil_mode", 0))
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    win = _windows(_pad_to(x, begin, end, out, kernel, strides, dilations, lowest), kernel, strides, dilations, out)
    return [_reduce_windows(win, len(kernel), np.maximum)]


def _reduce_windows(win, nd, ufunc):
    """Reduce the kernel axes of a window view by looping over the few kernel offsets: each step is one
    vectorised ufunc over the whole output, much faster than a reduction over tiny strided axes."""
    offsets = np.ndindex(*win.shape[-nd:])
    acc = np.array(win[(...,) + next(offsets)])
    for k in offsets:
        ufunc(acc, win[(...,) + k], out=acc)
    return acc


@_op("AveragePool")
def _avgpool(x, attrs, opset, op_type):
    x = x[0]
    kernel = list(attrs["kernel_shape"])
    nd = len(kernel)
    strides, dilations, begin, end, out = _geometry(x, attrs, kernel, attrs.get("ceil_mode", 0))
    sums = _windows(_pad_to(x, begin, end, out, kernel, strides, dilations, 0), kernel, strides, dilations, out)
    # The divisor counts the window's cells inside the input, or inside input + explicit pads when
    # count_include_pad is set; cells that only the ceil-mode overhang reaches never count.
    ones = np.ones((1, 1) + x.shape[2:], x.dtype)
    if attrs.get("count_include_pad", 0):
        ones = np.pad(ones, [(0, 0), (0, 0)] + list(zip(begin, end)), constant_values=1)
        begin_, end_ = [0] * nd, [0] * nd
    else:
        begin_, end_ = begin, end
    count = _windows(_pad_to(ones, begin_, end_, out, kernel, strides, dilations, 0), kernel, strides, dilations,
                     out)
    return [(_reduce_windows(sums, nd, np.add) / _reduce_windows(count, nd, np.add)).astype(x.dtype, copy=False)]


@_op("GlobalAveragePool")
def _global_avgpool(x, attrs, opset, op_type):
    return [x[0].mean(axis=tuple(range(2, x[0].ndim)), keepdims=True)]


@_op("GlobalMaxPool")
def _global_maxpool(x, attrs, opset, op_type):
    return [x[0].max(axis=tuple(range(2, x[0].ndim)), keepdims=True)]


# --- quantization --------------------------------------------------------------------------------
_QUANT_TYPES = (np.uint8, np.int8, np.uint16, np.int16, np.int32)


def _broadcast_param(p, x, axis, block_size):
    """A scale or zero point shaped to broadcast against x: per tensor, per axis, or per block."""
    if p.ndim == 0 or p.size == 1 and block_size == 0:
        return p.reshape(())
    axis = axis % x.ndim
    if block_size:  # blocked: p has x's rank, each entry covers block_size elements along axis
        return np.repeat(p, block_size, axis=axis).take(np.arange(x.shape[axis]), axis=axis)
    if p.ndim != 1 or p.shape[0] != x.shape[axis]:
        raise ValueError(f"per-axis scale/zero point of shape {p.shape} does not match axis {axis} of an "
                         f"input of shape {x.shape}")
    return p.reshape([-1 if i == axis else 1 for i in range(x.ndim)])


def _check_quant_dtype(dtype):
    if np.dtype(dtype) not in [np.dtype(t) for t in _QUANT_TYPES]:
        raise UnsupportedOpError(f"quantized type {dtype} is not supported (supported: "
                                 f"{', '.join(np.dtype(t).name for t in _QUANT_TYPES)})")
    return np.dtype(dtype)


def _quant_dtype(zero_point, attrs):
    """QuantizeLinear's output type: the zero point's, else the output_dtype attribute, else uint8."""
    if zero_point is not None:
        return _check_quant_dtype(zero_point.dtype)
    if attrs.get("output_dtype", 0):
        return _check_quant_dtype(_np_dtype(attrs["output_dtype"]))
    return np.dtype(np.uint8)


def _quantize(x, scale, zero_point, dtype):
    """saturate(round_half_even(x / scale) + zero_point), ONNX's QuantizeLinear."""
    info = np.iinfo(dtype)
    q = np.rint(x / scale)
    if zero_point is not None:
        q = q + zero_point.astype(q.dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


@_op("QuantizeLinear")
def _quantize_linear_op(x, attrs, opset, op_type):
    data, scale = x[0], x[1]
    zp = x[2] if len(x) > 2 else None
    dtype = _quant_dtype(zp, attrs)
    axis, block = attrs.get("axis", 1), attrs.get("block_size", 0)
    scale = _broadcast_param(scale, data, axis, block)
    zp = None if zp is None else _broadcast_param(zp, data, axis, block)
    return [_quantize(data.astype(scale.dtype, copy=False), scale, zp, dtype)]


@_op("DequantizeLinear")
def _dequantize_linear(x, attrs, opset, op_type):
    data, scale = x[0], x[1]
    zp = x[2] if len(x) > 2 else None
    _check_quant_dtype(data.dtype)
    axis, block = attrs.get("axis", 1), attrs.get("block_size", 0)
    out = data.astype(scale.dtype)
    if zp is not None:
        out = out - _broadcast_param(zp, data, axis, block).astype(scale.dtype)
    return [out * _broadcast_param(scale, data, axis, block)]


def _requantize(values, zp):
    """Rescaled integer accumulators to the output's quantized type (round half to even, saturate)."""
    zp = np.asarray(zp)
    return _quantize(values, np.float64(1), zp, zp.dtype)


@_op("QLinearConv")
def _qlinear_conv(x, attrs, opset, op_type):
    xq, xs, xz, wq, ws, wz, ys, yz = x[:8]
    b = x[8] if len(x) > 8 else None
    m, nd = wq.shape[0], wq.ndim - 2
    per_channel = (1, m) + (1,) * nd
    # float64 holds every int8/uint8 product sum exactly, so this is integer arithmetic through BLAS
    xi = xq.astype(np.float64) - xz.astype(np.float64)
    wi = wq.astype(np.float64) - np.asarray(wz, np.float64).reshape((-1,) + (1,) * (nd + 1))
    acc = _conv(xi, wi, None if b is None else b.astype(np.float64), attrs)
    scale = (np.float64(xs) * np.asarray(ws, np.float64).reshape(per_channel if ws.size > 1 else ())) / np.float64(ys)
    return [_requantize(acc * scale, yz)]


@_op("QLinearMatMul")
def _qlinear_matmul(x, attrs, opset, op_type):
    aq, as_, az, bq, bs, bz, ys, yz = x
    a = aq.astype(np.float64) - np.asarray(az, np.float64)
    b = bq.astype(np.float64) - np.asarray(bz, np.float64)  # per-column zero points broadcast on the last axis
    acc = np.matmul(a, b)
    scale = np.asarray(as_, np.float64) * np.asarray(bs, np.float64) / np.asarray(ys, np.float64)
    return [_requantize(acc * scale, yz)]


# ---------------------------------------------------------------------------------------------
# The session
# ---------------------------------------------------------------------------------------------
def _load(model):
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_model_from_string(bytes(model))
        except Exception as e:  # protobuf raises its own DecodeError
            raise ValueError(f"could not parse the ONNX model bytes: {e}") from e
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"no ONNX model at {str(path)!r}")
        try:
            return onnx.load(str(path))
        except Exception as e:
            raise ValueError(f"could not parse the ONNX model {str(path)!r}: {e}") from e
    raise TypeError(f"Session expects a path, bytes or an onnx.ModelProto, got {type(model).__name__}")


def check_supported(model):
    """Raise UnsupportedOpError naming every op of `model` (an onnx.ModelProto) this runtime cannot run."""
    graph = model.graph
    unsupported = sorted({f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
                          for n in graph.node if n.domain not in ("", "ai.onnx") or n.op_type not in OPS})
    if unsupported:
        raise UnsupportedOpError(f"the rtx edge runtime does not support op(s) {', '.join(unsupported)}; "
                                 f"supported (default ONNX domain): {', '.join(supported_ops())}")
    for n in graph.node:
        if n.op_type == "MaxPool" and len(n.output) > 1 and n.output[1]:
            raise UnsupportedOpError(f"MaxPool node {n.name!r} asks for its optional Indices output, "
                                     "which the rtx edge runtime does not compute")


def _value_info(vi):
    t = vi.type.tensor_type
    shape = None
    if t.HasField("shape"):
        shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
    dtype = _np_dtype(t.elem_type) if t.elem_type else None
    type_name = f"tensor({onnx.TensorProto.DataType.Name(t.elem_type).lower()})" if t.elem_type else "tensor(?)"
    return NodeArg(vi.name, shape, type_name), dtype


class Session:
    """Runs an ONNX model with NumPy: `Session(path_or_bytes).run(output_names, feed) -> list[np.ndarray]`."""

    def __init__(self, path_or_bytes, fold_constants=True):
        model = _load(path_or_bytes)
        graph = model.graph
        self.opset = 0
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = imp.version
        check_supported(model)
        self._consts = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
        self._inputs = [_value_info(vi) for vi in graph.input if vi.name not in self._consts]
        self._outputs = [_value_info(vi)[0] for vi in graph.output]
        self._nodes = [(n.op_type, list(n.input), list(n.output), {a.name: helper.get_attribute_value(a)
                        for a in n.attribute}, n.name) for n in graph.node]
        if fold_constants:
            self._fold()
        # free each intermediate after its last reader: peak memory stays at a few activations
        last = {}
        for i, (_, ins, _, _, _) in enumerate(self._nodes):
            for name in ins:
                last[name] = i
        keep = {o.name for o in self._outputs}
        self._release = [[n for n in ins if last.get(n) == i and n not in keep and n not in self._consts]
                         for i, (_, ins, _, _, _) in enumerate(self._nodes)]

    def _fold(self):
        """Run every node whose inputs are all constants once, now (weights' DequantizeLinear, Cast)."""
        nodes = []
        for op_type, ins, outs, attrs, name in self._nodes:
            if all(i == "" or i in self._consts for i in ins):
                values = self._run_node(op_type, [self._consts[i] if i else None for i in ins], attrs, name)
                self._consts.update(zip(outs, values))
            else:
                nodes.append((op_type, ins, outs, attrs, name))
        self._nodes = nodes

    def get_inputs(self):
        """The graph inputs (initializers excluded): NodeArg objects with .name, .shape, .type."""
        return [arg for arg, _ in self._inputs]

    def get_outputs(self):
        """The graph outputs: NodeArg objects with .name, .shape, .type."""
        return list(self._outputs)

    def _run_node(self, op_type, inputs, attrs, name):
        while inputs and inputs[-1] is None:  # trailing optional inputs left out
            inputs.pop()
        try:
            return OPS[op_type](inputs, attrs, self.opset, op_type)
        except (UnsupportedOpError, MemoryError):
            raise
        except Exception as e:
            shapes = [None if v is None else (tuple(v.shape), str(v.dtype)) for v in inputs]
            raise RuntimeError(f"{op_type} node {name!r} failed on inputs {shapes}: {e}") from e

    def _check_feed(self, feed):
        if not isinstance(feed, dict):
            raise TypeError(f"feed must be a dict of input name -> array, got {type(feed).__name__}")
        expected = [arg.name for arg, _ in self._inputs]
        unknown = sorted(set(feed) - set(expected))
        missing = [n for n in expected if n not in feed]
        if unknown or missing:
            raise ValueError(f"feed has unknown input(s) {unknown} and lacks {missing}; the model's inputs are "
                             f"{expected}")
        values = {}
        for arg, dtype in self._inputs:
            value = np.asarray(feed[arg.name])
            if dtype is not None and value.dtype != dtype:
                raise ValueError(f"input {arg.name!r} must have dtype {dtype} ({arg.type}), got {value.dtype}")
            if arg.shape is not None:
                dims_ok = len(arg.shape) == value.ndim and all(
                    not isinstance(d, int) or d == 0 or d == n for d, n in zip(arg.shape, value.shape))
                if not dims_ok:
                    raise ValueError(f"input {arg.name!r} must have shape {arg.shape} (str/None: any size), "
                                     f"got {list(value.shape)}")
            values[arg.name] = value
        return values

    def run(self, output_names, feed, run_options=None):
        """Evaluate the graph: output_names (None: all) -> list of NumPy arrays, in that order."""
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        valid = {o.name for o in self._outputs}
        bad = [n for n in names if n not in valid]
        if bad:
            raise ValueError(f"unknown output name(s) {bad}; the model's outputs are {sorted(valid)}")
        env = dict(self._consts)
        env.update(self._check_feed(feed))
        for (op_type, ins, outs, attrs, name), release in zip(self._nodes, self._release):
            values = self._run_node(op_type, [env[i] if i else None for i in ins], attrs, name)
            for out, value in zip(outs, values):
                if out:
                    env[out] = value
            for r in release:
                env.pop(r, None)
        return [np.asarray(env[n]) for n in names]


def main(argv=None):
    """Command line: run a model on .npy inputs and print (or save) its outputs."""
    p = argparse.ArgumentParser(description="Run an ONNX model with the NumPy-only rtx edge runtime.")
    p.add_argument("model", help="path to an .onnx file")
    p.add_argument("inputs", nargs="+", help="one .npy file per graph input, in the graph's order")
    p.add_argument("-o", "--output", help="write every output to this .npz file")
    args = p.parse_args(argv)
    sess = Session(args.model)
    names = [i.name for i in sess.get_inputs()]
    if len(args.inputs) != len(names):
        p.error(f"the model has {len(names)} input(s) {names}; got {len(args.inputs)} .npy file(s)")
    outputs = sess.run(None, {n: np.load(f) for n, f in zip(names, args.inputs)})
    for arg, value in zip(sess.get_outputs(), outputs):
        print(f"{arg.name}: shape {list(value.shape)} dtype {value.dtype}")
        if value.ndim == 2 and value.shape[1] > 1:
            print(f"  argmax: {value.argmax(axis=1).tolist()}")
    if args.output:
        np.savez(args.output, **{a.name: v for a, v in zip(sess.get_outputs(), outputs)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
