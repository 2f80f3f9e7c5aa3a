"""rtx Primitive -> ONNX ops. Each handler takes the export context and a graph node and
returns the ONNX name(s) of the node's output(s). Keyed by the Primitive's op name
(`node.op`, rtx.extend.op_name), so one table entry stands for one op whatever its class is
called; leaf modules recorded whole are keyed "module:<class name>"."""
from __future__ import annotations

import math

import numpy as np

from onnx import helper
from rtx.graph import SymInt, Value
from rtx.graph.symbolic import SymArange, SymSlice
from rtx.onnx.export import ExportError

HANDLERS = {}


def handles(*names):
    def register(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return register


def _in(ctx, node, i=0):
    return ctx.value(node.args[i])


def _dtype_of(x):
    return np.dtype(x.dtype.np) if isinstance(x, Value) else None


def _operand(ctx, x, dtype):
    """A Value's name, or a Python number as a 0-d constant of `dtype`."""
    if isinstance(x, Value):
        return ctx.value(x)
    if x is None:
        raise ExportError("a None operand cannot be exported")
    return ctx.const(np.array(x, dtype=dtype), "scalar")


def _binary_operands(ctx, node):
    a, b = node.args[:2]
    dt = _dtype_of(a) if isinstance(a, Value) else _dtype_of(b)
    return _operand(ctx, a, dt), _operand(ctx, b, dt)


def _out_dtype(node, i=0):
    return np.dtype(node.outputs[i].dtype.np)


def _static(v, what):
    if isinstance(v, (SymInt, SymSlice)):
        raise ExportError(f"{what} depends on a dynamic axis ({v}); this is not exportable")
    return v


# ---- elementwise ---------------------------------------------------------------------------------

_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
           "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


def _binary(onnx_op):
    def handler(ctx, node):
        a, b = _binary_operands(ctx, node)
        return ctx.add(onnx_op, [a, b], name=node.name)
    return handler


for _k, _v in _BINARY.items():
    HANDLERS[_k] = _binary(_v)


@handles("ne")
def _ne(ctx, node):
    a, b = _binary_operands(ctx, node)
    return ctx.add("Not", [ctx.add("Equal", [a, b])], name=node.name)


@handles("remainder")
def _remainder(ctx, node):
    a, b = _binary_operands(ctx, node)
    fmod = 0 if np.issubdtype(_out_dtype(node), np.integer) else 1
    if fmod:
        # Python's modulus: fmod, then shift results whose sign differs from the divisor's
        r = ctx.add("Mod", [a, b], fmod=1)
        zero = ctx.const(np.array(0, dtype=_out_dtype(node)))
        fix = ctx.add("And", [ctx.add("Not", [ctx.add("Equal", [r, zero])]),
                              ctx.add("Not", [ctx.add("Equal", [ctx.add("Less", [r, zero]),
                                                                ctx.add("Less", [b, zero])])])])
        return ctx.add("Where", [fix, ctx.add("Add", [r, b]), r], name=node.name)
    return ctx.add("Mod", [a, b], name=node.name, fmod=0)


@handles("fmod")
def _fmod(ctx, node):
    a, b = _binary_operands(ctx, node)
    return ctx.add("Mod", [a, b], name=node.name, fmod=1)


@handles("div_rounded")
def _div_rounded(ctx, node):
    a, b = _binary_operands(ctx, node)
    if np.issubdtype(_out_dtype(node), np.integer):
        raise ExportError("integer division with rounding is not exported")
    q = ctx.add("Div", [a, b])
    if node.attrs["mode"] == "floor":
        return ctx.add("Floor", [q], name=node.name)
    negative = ctx.add("Less", [q, _c(ctx, node, 0)])
    return ctx.add("Where", [negative, ctx.add("Ceil", [q]), ctx.add("Floor", [q])], name=node.name)


@handles("where")
def _where(ctx, node):
    cond, a, b = node.args
    dt = _out_dtype(node)
    return ctx.add("Where", [ctx.value(cond), _operand(ctx, a, dt), _operand(ctx, b, dt)], name=node.name)


_UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "abs": "Abs", "tanh": "Tanh", "sigmoid": "Sigmoid", "sin": "Sin",
          "cos": "Cos", "tan": "Tan", "atan": "Atan", "sinh": "Sinh",
          "cosh": "Cosh", "erf": "Erf", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "sign": "Sign", "round": "Round",
          "relu": "Relu", "logical_not": "Not", "isnan": "IsNaN", "isinf": "IsInf",
          "clone": "Identity"}


def _unary(onnx_op):
    def handler(ctx, node):
        return ctx.add(onnx_op, [_in(ctx, node)], name=node.name)
    return handler


for _k, _v in _UNARY.items():
    HANDLERS[_k] = _unary(_v)


def _c(ctx, node, value):
    return ctx.const(np.array(value, dtype=_out_dtype(node)))


@handles("rsqrt")
def _rsqrt(ctx, node):
    return ctx.add("Reciprocal", [ctx.add("Sqrt", [_in(ctx, node)])], name=node.name)


@handles("square")
def _square(ctx, node):
    x = _in(ctx, node)
    return ctx.add("Mul", [x, x], name=node.name)


@handles("log1p")
def _log1p(ctx, node):
    return ctx.add("Log", [ctx.add("Add", [_in(ctx, node), _c(ctx, node, 1)])], name=node.name)


@handles("expm1")
def _expm1(ctx, node):
    return ctx.add("Sub", [ctx.add("Exp", [_in(ctx, node)]), _c(ctx, node, 1)], name=node.name)


@handles("clamp")
def _clamp(ctx, node):
    lo, hi = node.attrs.get("lo"), node.attrs.get("hi")
    dt = _out_dtype(node)
    return ctx.add("Clip", [_in(ctx, node), _operand(ctx, lo, dt) if lo is not None else None,
                            _operand(ctx, hi, dt) if hi is not None else None], name=node.name)


@handles("cast")
def _cast(ctx, node):
    to = helper.np_dtype_to_tensor_dtype(np.dtype(node.attrs["np_dtype"]))
    return ctx.add("Cast", [_in(ctx, node)], name=node.name, to=to)


# ---- activations -----------------------------------------------------------------------------------

@handles("leaky_relu")
def _leaky(ctx, node):
    return ctx.add("LeakyRelu", [_in(ctx, node)], name=node.name, alpha=float(node.attrs["slope"]))


@handles("elu")
def _elu(ctx, node):
    alpha, scale, input_scale = (float(node.attrs[k]) for k in ("alpha", "scale", "input_scale"))
    x = _in(ctx, node)
    if scale == 1 and input_scale == 1:
        return ctx.add("Elu", [x], name=node.name, alpha=alpha)
    if input_scale == 1:
        return ctx.add("Selu", [x], name=node.name, alpha=alpha, gamma=scale)
    if scale == 1 and math.isclose(input_scale * alpha, 1.0, rel_tol=1e-12):
        return ctx.add("Celu", [x], name=node.name, alpha=alpha)
    raise ExportError(f"ELU with scale {scale} and input_scale {input_scale} has no ONNX op")


@handles("hardtanh")
def _hardtanh(ctx, node):
    return ctx.add("Clip", [_in(ctx, node), _c(ctx, node, node.attrs["lo"]), _c(ctx, node, node.attrs["hi"])],
                   name=node.name)


@handles("silu")
def _silu(ctx, node):
    x = _in(ctx, node)
    return ctx.add("Mul", [x, ctx.add("Sigmoid", [x])], name=node.name)


def _softplus(ctx, node, x, beta, threshold):
    # PyTorch: x where beta*x > threshold, else log1p(exp(beta*x)) / beta
    bx = x if beta == 1 else ctx.add("Mul", [x, _c(ctx, node, beta)])
    sp = ctx.add("Softplus", [bx])
    if beta != 1:
        sp = ctx.add("Div", [sp, _c(ctx, node, beta)])
    return ctx.add("Where", [ctx.add("Greater", [bx, _c(ctx, node, threshold)]), x, sp], name=node.name)


@handles("softplus")
def _softplus_h(ctx, node):
    return _softplus(ctx, node, _in(ctx, node), float(node.attrs["beta"]), float(node.attrs["threshold"]))


@handles("mish")
def _mish(ctx, node):
    x = _in(ctx, node)
    sp = ctx.add("Softplus", [x])
    return ctx.add("Mul", [x, ctx.add("Tanh", [sp])], name=node.name)


@handles("log_sigmoid")
def _logsigmoid(ctx, node):
    return ctx.add("Neg", [ctx.add("Softplus", [ctx.add("Neg", [_in(ctx, node)])])], name=node.name)


@handles("hardsigmoid")
def _hardsigmoid(ctx, node):
    return ctx.add("HardSigmoid", [_in(ctx, node)], name=node.name, alpha=1.0 / 6, beta=0.5)


@handles("hardswish")
def _hardswish(ctx, node):
    x = _in(ctx, node)
    if ctx.opset >= 14:
        return ctx.add("HardSwish", [x], name=node.name)
    return ctx.add("Mul", [x, ctx.add("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)], name=node.name)


@handles("gelu")
def _gelu(ctx, node):
    x = _in(ctx, node)
    approx = node.attrs.get("approximate", "none")
    if ctx.opset >= 20:
        return ctx.add("Gelu", [x], name=node.name, approximate=approx)
    half = ctx.add("Mul", [x, _c(ctx, node, 0.5)])
    if approx == "tanh":
        cube = ctx.add("Mul", [ctx.add("Mul", [x, x]), x])
        inner = ctx.add("Add", [x, ctx.add("Mul", [cube, _c(ctx, node, 0.044715)])])
        t = ctx.add("Tanh", [ctx.add("Mul", [inner, _c(ctx, node, math.sqrt(2 / math.pi))])])
    else:
        t = ctx.add("Erf", [ctx.add("Mul", [x, _c(ctx, node, 1 / math.sqrt(2))])])
    return ctx.add("Mul", [half, ctx.add("Add", [t, _c(ctx, node, 1.0)])], name=node.name)


@handles("softmax", "safe_softmax")
def _softmax(ctx, node):
    axis = node.attrs.get("axis", -1)  # attention's Softmax works on the last axis
    return ctx.add("Softmax", [_in(ctx, node)], name=node.name, axis=int(axis))


@handles("log_softmax")
def _log_softmax(ctx, node):
    return ctx.add("LogSoftmax", [_in(ctx, node)], name=node.name, axis=int(node.attrs.get("axis", -1)))


# ---- linear algebra ----------------------------------------------------------------------------------

@handles("matmul")
def _matmul(ctx, node):
    return ctx.add("MatMul", [_in(ctx, node, 0), _in(ctx, node, 1)], name=node.name)


@handles("linear")
def _linear(ctx, node):
    x, w, b = (list(node.args) + [None])[:3]
    if w.kind == "const" and w.fill is None and x.shape and len(x.shape) == 2:
        ins = [ctx.value(x), ctx.value(w)] + ([ctx.value(b)] if b is not None else [])
        return ctx.add("Gemm", ins, name=node.name, transB=1)
    if w.kind == "const" and w.fill is None:
        wt = ctx.const(np.ascontiguousarray(w.tensor.detach().numpy().T), w.name.lstrip("_") + ".T")
    else:
        wt = ctx.add("Transpose", [ctx.value(w)], perm=[1, 0])
    if b is None:
        return ctx.add("MatMul", [ctx.value(x), wt], name=node.name)
    return ctx.add("Add", [ctx.add("MatMul", [ctx.value(x), wt]), ctx.value(b)], name=node.name)


# ---- convolution, pooling, normalization ------------------------------------------------------------

def _pads(pairs):
    pairs = [(int(_static(lo, "padding")), int(_static(hi, "padding"))) for lo, hi in pairs]
    return [lo for lo, _ in pairs] + [hi for _, hi in pairs]


@handles("convolution")
def _conv(ctx, node):
    x, w, b = node.args[:3]
    g = node.attrs["geom"]
    ins = [ctx.value(x), ctx.value(w)] + ([ctx.value(b)] if b is not None else [])
    return ctx.add("Conv", ins, name=node.name, kernel_shape=list(w.shape[2:]), pads=_pads(g.pads),
                   strides=list(g.stride), dilations=list(g.dilation), group=int(g.groups))


@handles("max_pool")
def _maxpool(ctx, node):
    if node.attrs.get("return_indices"):
        raise ExportError("max pooling with return_indices=True is not exported")
    geo = node.attrs["geo"]
    return ctx.add("MaxPool", [_in(ctx, node)], name=node.name, kernel_shape=list(geo.kernel),
                   strides=list(geo.stride), pads=_pads(geo.pads), dilations=list(geo.dilation))


@handles("avg_pool")
def _avgpool(ctx, node):
    geo, div = node.attrs["geo"], node.attrs["div"]
    x = _in(ctx, node)
    k = int(np.prod(geo.kernel))
    no_pad = all(lo == 0 and hi == 0 for lo, hi in geo.pads)
    if no_pad and tuple(geo.kernel) == tuple(geo.in_shape) and np.all(np.asarray(div) == k):
        return ctx.add("GlobalAveragePool", [x], name=node.name)
    avg = ctx.add("AveragePool", [x], kernel_shape=list(geo.kernel), strides=list(geo.stride),
                  pads=_pads(geo.pads), count_include_pad=1)
    if np.all(np.asarray(div) == k):
        return ctx.add("Identity", [avg], name=node.name)
    # the sum over each window divided by PyTorch's divisor (which excludes padding or is overridden)
    scale = (k / np.asarray(div, dtype=np.float64)).astype(_out_dtype(node))
    return ctx.add("Mul", [avg, ctx.const(scale, "avg_scale")], name=node.name)


@handles("native_layer_norm")
def _layer_norm(ctx, node):
    x, w, b = node.args[:3]
    nd, eps = int(node.attrs["nd"]), float(node.attrs["eps"])
    shape = x.shape[-nd:]
    dt = _dtype_of(x)
    if ctx.opset >= 17:
        scale = ctx.value(w) if w is not None else ctx.const(np.ones([_static(s, "layer_norm") for s in shape], dt))
        ins = [ctx.value(x), scale] + ([ctx.value(b)] if b is not None else [])
        return ctx.add("LayerNormalization", ins, name=node.name, axis=-nd, epsilon=eps)
    axes = list(range(-nd, 0))
    xv = ctx.value(x)
    mean = _reduce(ctx, "ReduceMean", xv, axes, True)
    d = ctx.add("Sub", [xv, mean])
    var = _reduce(ctx, "ReduceMean", ctx.add("Mul", [d, d]), axes, True)
    y = ctx.add("Div", [d, ctx.add("Sqrt", [ctx.add("Add", [var, ctx.const(np.array(eps, dt))])])])
    if w is not None:
        y = ctx.add("Mul", [y, ctx.value(w)])
    if b is not None:
        y = ctx.add("Add", [y, ctx.value(b)])
    return ctx.add("Identity", [y], name=node.name)


@handles("fused_rms_norm")
def _rms_norm(ctx, node):
    x, w = node.args[:2]
    nd, eps = int(node.attrs["nd"]), node.attrs["eps"]
    dt = _dtype_of(x)
    if eps is None:
        eps = float(np.finfo(dt).eps)
    xv = ctx.value(x)
    ms = _reduce(ctx, "ReduceMean", ctx.add("Mul", [xv, xv]), list(range(-nd, 0)), True)
    y = ctx.add("Div", [xv, ctx.add("Sqrt", [ctx.add("Add", [ms, ctx.const(np.array(eps, dt))])])])
    if w is not None:
        y = ctx.add("Mul", [y, ctx.value(w)])
    return ctx.add("Identity", [y], name=node.name)


# ---- reductions -------------------------------------------------------------------------------------

def _reduce(ctx, op, x, axes, keepdim, name=None):
    axes = [int(a) for a in axes]
    if op == "ReduceSum" or ctx.opset >= 18:
        return ctx.add(op, [x, ctx.ints(axes, "axes")], name=name, keepdims=int(bool(keepdim)))
    return ctx.add(op, [x], name=name, axes=axes, keepdims=int(bool(keepdim)))


@handles("mean", "sum", "prod")
def _reduction(ctx, node):
    op = {"mean": "ReduceMean", "sum": "ReduceSum", "prod": "ReduceProd"}[node.op]
    x = _in(ctx, node)
    want = node.attrs.get("np_dtype")
    if want is not None and np.dtype(want) != _dtype_of(node.args[0]):
        x = ctx.add("Cast", [x], to=helper.np_dtype_to_tensor_dtype(np.dtype(want)))
    axes = node.attrs["axes"]
    if axes is None:
        axes = range(len(node.args[0].shape))
    return _reduce(ctx, op, x, axes, node.attrs["keepdim"], name=node.name)


# ---- shapes ------------------------------------------------------------------------------------------

@handles("reshape")
def _reshape(ctx, node):
    x = node.args[0]
    target = tuple(node.attrs["shape"])
    if not any(isinstance(d, SymInt) for d in target):
        return ctx.add("Reshape", [ctx.value(x), ctx.ints(target, "shape")], name=node.name)
    # 0 copies the input's size at the same place; one remaining symbolic size can be -1
    dims, unknown = [], 0
    for i, d in enumerate(target):
        if isinstance(d, SymInt) and i < len(x.shape) and x.shape[i] == d:
            dims.append(0)
        elif isinstance(d, SymInt):
            dims.append(-1)
            unknown += 1
        else:
            dims.append(int(d))
    if unknown <= 1 and 0 not in [d for d in target if not isinstance(d, SymInt)]:
        return ctx.add("Reshape", [ctx.value(x), ctx.ints(dims, "shape")], name=node.name)
    return ctx.add("Reshape", [ctx.value(x), ctx.shape_tensor(target)], name=node.name)


@handles("permute")
def _permute(ctx, node):
    return ctx.add("Transpose", [_in(ctx, node)], name=node.name, perm=[int(a) for a in node.attrs["axes"]])


@handles("expand")
def _expand(ctx, node):
    return ctx.add("Expand", [_in(ctx, node), ctx.shape_tensor(node.attrs["shape"])], name=node.name)


@handles("cat")
def _cat(ctx, node):
    return ctx.add("Concat", [ctx.value(a) for a in node.args], name=node.name, axis=int(node.attrs["axis"]))


def _slice(ctx, x, axis, start, stop, step=1, name=None):
    return ctx.add("Slice", [x, ctx.sym_scalar(start), ctx.sym_scalar(stop), ctx.ints([axis]),
                             ctx.ints([step])], name=name)


@handles("split")
def _split(ctx, node):
    x = _in(ctx, node)
    axis, bounds = int(node.attrs["axis"]), node.attrs["bounds"]
    contiguous = all(bounds[i][1] == bounds[i + 1][0] for i in range(len(bounds) - 1)) and bounds[0][0] == 0 \
        and bounds[-1][1] == node.args[0].shape[axis]
    static = not any(isinstance(b, SymInt) for pair in bounds for b in pair)
    if contiguous and static and len(bounds) > 1:
        sizes = [e - s for s, e in bounds]
        return ctx.add("Split", [x, ctx.ints(sizes, "split")], n_out=len(bounds), name=node.name, axis=axis)
    return [_slice(ctx, x, axis, s, e, name=node.name) for s, e in bounds]


@handles("unbind")
def _unbind(ctx, node):
    x = _in(ctx, node)
    axis = int(node.attrs["axis"])
    n = _static(node.args[0].shape[axis], "unbind over a dynamic axis")
    parts = ctx.add("Split", [x, ctx.ints([1] * n, "split")], n_out=n, axis=axis) if n > 1 else [x]
    parts = [parts] if isinstance(parts, str) else parts
    return [ctx.add("Squeeze", [p, ctx.ints([axis], "axes")], name=node.name) for p in parts]


@handles("tri")
def _tri(ctx, node):
    if ctx.opset < 14:
        raise ExportError("tril/triu of a computed tensor needs opset 14 or later (ONNX Trilu)")
    k = ctx.const(np.array(int(node.attrs["k"]), dtype=np.int64), "k")
    return ctx.add("Trilu", [_in(ctx, node), k], name=node.name,
                   upper=int(bool(node.attrs["upper"])))


@handles("getitem")
def _getitem(ctx, node):
    x = node.args[0]
    index = node.attrs["index"]
    items = index if isinstance(index, tuple) else (index,)
    if not node.attrs.get("basic", True):
        return _advanced_index(ctx, node, x, items)
    n_real = sum(1 for i in items if i is not None and i is not Ellipsis)
    full = []
    for it in items:
        if it is Ellipsis:
            full += [slice(None)] * (len(x.shape) - n_real)
        else:
            full.append(it)
    full += [slice(None)] * (len(x.shape) - sum(1 for i in full if i is not None))
    cur = ctx.value(x)
    axis, squeeze, unsq, out_pos = 0, [], [], 0
    starts, stops, axes, steps = [], [], [], []
    for it in full:
        if it is None:
            unsq.append(out_pos)
            out_pos += 1
            continue
        size = x.shape[axis]
        if isinstance(it, (slice, SymSlice)):
            if not (it.start in (None, 0) and it.stop is None and it.step in (None, 1)):
                step = 1 if it.step is None else int(_static(it.step, "a slice step"))
                start = it.start if it.start is not None else (0 if step > 0 else -1)
                stop = it.stop if it.stop is not None else (np.iinfo(np.int64).max if step > 0
                                                            else np.iinfo(np.int64).min)
                starts.append(start)
                stops.append(stop)
                axes.append(axis)
                steps.append(step)
            out_pos += 1
        else:
            i = int(_static(it, "an index"))
            if not isinstance(size, SymInt) and i < 0:
                i += size
            starts.append(i)
            stops.append(i + 1 if i != -1 else np.iinfo(np.int64).max)
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
        axis += 1
    if axes:
        begin = _concat_ints(ctx, starts)
        end = _concat_ints(ctx, stops)
        cur = ctx.add("Slice", [cur, begin, end, ctx.ints(axes, "axes"), ctx.ints(steps, "steps")])
    if squeeze:
        cur = ctx.add("Squeeze", [cur, ctx.ints(squeeze, "axes")])
    if unsq:
        cur = ctx.add("Unsqueeze", [cur, ctx.ints(unsq, "axes")])
    return ctx.add("Identity", [cur], name=node.name)


def _concat_ints(ctx, values):
    if not any(isinstance(v, SymInt) for v in values):
        return ctx.ints(values)
    return ctx.add("Concat", [ctx.sym_scalar(v) for v in values], axis=0)


def _advanced_index(ctx, node, x, items):
    """One integer-array index on one axis, full slices elsewhere: Gather."""
    arrays = [(i, it) for i, it in enumerate(items) if not isinstance(it, (slice, SymSlice)) and it is not None
              and it is not Ellipsis]
    if len(arrays) != 1 or any(it is None or it is Ellipsis for it in items) or \
            any(isinstance(it, slice) and it != slice(None) for it in items):
        raise ExportError("only one integer-array index (others full slices) is exported for x[...]")
    axis, idx = arrays[0]
    idx_name = ctx.value(idx.value) if hasattr(idx, "value") else ctx.const(np.asarray(idx, dtype=np.int64), "index")
    return ctx.add("Gather", [ctx.value(x), idx_name], name=node.name, axis=axis)


@handles("embedding")
def _embedding(ctx, node):
    w = node.args[0]
    idx = node.attrs["idx"]
    if node.attrs.get("fscale") is not None:
        raise ExportError("embedding with max_norm scaling is not exported")
    if isinstance(idx, SymArange):
        idx_name = ctx.arange(idx, "positions")
    elif hasattr(idx, "value"):
        idx_name = ctx.value(idx.value)
    else:
        idx_name = ctx.const(np.asarray(idx), "indices")
    return ctx.add("Gather", [ctx.value(w), idx_name], name=node.name, axis=0)


@handles("pad_constant")
def _pad(ctx, node):
    pads = node.attrs["pads"]
    value = node.attrs["value"] or 0
    return ctx.add("Pad", [_in(ctx, node), ctx.ints(_pads(pads), "pads"),
                           ctx.const(np.array(value, dtype=_out_dtype(node)))], name=node.name, mode="constant")
