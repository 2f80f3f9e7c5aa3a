"""Front end: an ONNX model to a Program.

Common float ops map to plan kernels (Gemm/MatMul with a constant weight -> Linear, Conv,
MaxPool, GlobalAveragePool, elementwise, Softmax, Reshape/Flatten/Transpose); quantized
patterns map to the int8 kernels of quant.py:
  - DequantizeLinear(int8 weight) feeding MatMul/Gemm/Conv whose other input is
    DequantizeLinear(x_q) (a QDQ model, as onnxruntime's quantize_static writes it): the
    integer matmul runs on x_q and the weights, the result is scaled back to float;
  - MatMulInteger / ConvInteger (int32 out), QLinearMatMul / QLinearConv (quantized out);
  - per-tensor QuantizeLinear / DequantizeLinear.
Every other node runs through rtx.onnx's own op table (the kernels `rtx.onnx.load` uses), so
any model rtx.onnx can import runs. Nodes whose inputs are all constants are evaluated while
lowering, so later patterns see their values (a Reshape's shape, a folded weight).
"""
from __future__ import annotations

import math

import numpy as np

from rtx.inference.program import Port, Program
from rtx.inference.quant import INT_RANGES, acc_dtype, centered_max

_RANDOM = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial",
           "Dropout"}
_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Neg": "negative", "Abs": "absolute", "Erf": "erf", "Reciprocal": "reciprocal", "Floor": "floor",
          "Ceil": "ceil"}
_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power"}
_FLOAT = {1, 10, 11}   # TensorProto FLOAT, FLOAT16, DOUBLE


def from_onnx(src, xp, optimize=True):
    import onnx
    from onnx import numpy_helper

    from rtx.onnx._ops import load_all
    from rtx.onnx.load import Scope, _toposort, domain_of, read_model
    model = src if isinstance(src, onnx.ModelProto) else read_model(src)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001  (shape inference is a hint here; the ops decide)
        inferred = model
    load_all()
    opsets = {domain_of(o.domain): o.version for o in model.opset_import}
    functions = {(domain_of(f.domain), f.name): f for f in model.functions}
    lw = _Lowering(xp, Scope(opsets, functions, True), opsets.get("ai.onnx", 1), optimize)
    g = model.graph
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if vi.type.HasField("tensor_type"):
            tt = vi.type.tensor_type
            rank = len(tt.shape.dim) if tt.HasField("shape") else None
            lw.types[vi.name] = (tt.elem_type, rank)
    for t in g.initializer:
        lw.names[t.name] = lw.p.const(_to(xp, numpy_helper.to_array(t)))
    for sp in g.sparse_initializer:
        from rtx.onnx.load import _dense_from_sparse
        lw.names[sp.values.name] = lw.p.const(_to(xp, _dense_from_sparse(sp)))
    for i in g.input:
        if i.name in lw.names:
            continue
        v = lw.p.value()
        lw.names[i.name] = v
        lw.p.inputs.append(_port(i, v))
    nodes = _toposort(g.node)
    for n in nodes:
        for o in n.output:
            lw.producer[o] = n
    for n in nodes:
        lw.lower(n)
    for o in g.output:
        if o.name not in lw.names:
            raise ValueError(f"graph output {o.name!r} is never computed")
        lw.p.outputs.append(_port(o, lw.names[o.name]))
    return lw.p


def _to(xp, a):
    return a if xp is np else xp.asarray(a)


def _port(vi, value):
    from onnx import helper
    tt = vi.type.tensor_type
    shape = []
    for d in tt.shape.dim:
        shape.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or None))
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)) if tt.elem_type else np.dtype(np.float32)
    return Port(vi.name, shape, dtype, value)


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


class _Lowering:
    def __init__(self, xp, scope, opset, optimize):
        self.xp, self.scope, self.opset, self.optimize = xp, scope, opset, optimize
        self.p = Program()
        self.names = {}      # ONNX name -> program value
        self.types = {}      # ONNX name -> (elem_type, rank or None)
        self.producer = {}   # ONNX name -> NodeProto

    # ---- helpers --------------------------------------------------------------------------------
    def const(self, name):
        """The constant array named `name` (host copy), or None."""
        if not name or name not in self.names:
            return None
        a = self.p.consts.get(self.names[name])
        return None if a is None else _host(a)

    def is_float(self, name):
        t = self.types.get(name)
        if t is not None:
            return t[0] in _FLOAT
        c = self.const(name)
        return c is not None and c.dtype.kind == "f"

    def int_dtype(self, name):
        """The integer dtype of `name`: from shape inference, else from the quantizer that made it
        (shape inference gives up on graphs with contrib ops)."""
        from onnx import helper
        t = self.types.get(name)
        if t and t[0]:
            return np.dtype(helper.tensor_dtype_to_np_dtype(t[0]))
        c = self.const(name)
        if c is not None:
            return c.dtype
        n = self.producer.get(name)
        if n is not None and n.op_type == "DynamicQuantizeLinear" and name == n.output[0]:
            return np.dtype(np.uint8)
        zp_at = {"QuantizeLinear": 2, "QLinearMatMul": 7, "QLinearConv": 7, "QGemm": 8}
        if n is not None and n.op_type in zp_at:
            i = zp_at[n.op_type]
            zp = self.const(n.input[i]) if len(n.input) > i and n.input[i] else None
            return zp.dtype if zp is not None else np.dtype(np.uint8)
        if n is not None and n.op_type in ("MaxPool", "Reshape", "Flatten", "Transpose", "Identity"):
            return self.int_dtype(n.input[0])
        return None

    def rank(self, name):
        t = self.types.get(name)
        return None if t is None else t[1]

    def bind(self, node, values):
        for name, v in zip(node.output, values if isinstance(values, list) else [values]):
            if name:
                self.names[name] = v

    def emit(self, node, kind, inputs, **attrs):
        self.bind(node, self.p.add(kind, [self.names[i] for i in inputs], name=node.name or node.op_type, **attrs))

    # ---- lowering ---------------------------------------------------------------------------------
    def lower(self, node):
        from onnx import helper
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        fn = getattr(self, "_" + node.op_type, None) if domain == "" and self.optimize else None
        if domain == "com.microsoft" and node.op_type == "QGemm" and self.optimize:
            fn = self._QGemm
        if fn is not None and fn(node, attrs):
            return
        self.generic(node)

    def generic(self, node):
        from rtx.onnx.load import _node_refs, compile_node
        rnode = compile_node(node, self.scope)
        ins = list(node.input)
        extra = [r for r in dict.fromkeys(_node_refs(node)) if r not in ins]
        for r in ins + extra:
            if r and r not in self.names:
                raise ValueError(f"node {node.name or node.op_type!r} reads {r!r}, which is no graph input, "
                                 "initializer or earlier output")
        refs = [self.names[r] if r else None for r in ins + extra]
        outs = self.p.add("Generic", refs, n_out=len(node.output), name=node.name or node.op_type,
                          foldable=node.op_type not in _RANDOM, op=node.op_type,
                          fn=_onnx_fn(rnode, ins + extra, len(ins)))
        self.bind(node, outs)
        if node.op_type not in _RANDOM and not rnode.has_graph and all(r is None or r in self.p.consts
                                                                          for r in refs):
            self._fold_last()

    def _fold_last(self):
        """Evaluate the op just added (all its inputs are constants)."""
        from rtx.inference.optimize import fold_constants
        op = self.p.ops.pop()
        rest, self.p.ops = self.p.ops, [op]
        fold_constants(self.p, self.xp)
        self.p.ops = rest + self.p.ops

    # float ops ------------------------------------------------------------------------------------
    def _Relu(self, node, attrs):
        return self._unary(node, _UNARY[node.op_type])

    _Sigmoid = _Tanh = _Exp = _Log = _Sqrt = _Neg = _Abs = _Erf = _Reciprocal = _Floor = _Ceil = _Relu

    def _Gelu(self, node, attrs):
        return self._unary(node, "gelu_tanh" if attrs.get("approximate", b"none") in (b"tanh", "tanh") else "gelu")

    def _unary(self, node, act):
        if not self.is_float(node.input[0]) or node.input[0] in self.names and self.const(node.input[0]) is not None:
            return False
        self.emit(node, "Unary", [node.input[0]], act=act)
        return True

    def _Add(self, node, attrs):
        if not all(self.is_float(i) for i in node.input) or all(self.const(i) is not None for i in node.input):
            return False
        self.emit(node, "Binary", list(node.input), fn=_BINARY[node.op_type])
        return True

    _Sub = _Mul = _Div = _Pow = _Add

    def _Max(self, node, attrs):
        if len(node.input) != 2 or not all(self.is_float(i) for i in node.input):
            return False
        self.emit(node, "Binary", list(node.input), fn="maximum" if node.op_type == "Max" else "minimum")
        return True

    _Min = _Max

    def _Identity(self, node, attrs):
        self.emit(node, "Identity", [node.input[0]])
        return True

    def _MatMul(self, node, attrs):
        if self._qdq_linear(node, node.input[0], node.input[1], trans_b=False, alpha=1.0, bias=None):
            return True
        if not all(self.is_float(i) for i in node.input):
            return False
        w = self.const(node.input[1])
        if w is not None and w.ndim == 2 and self.const(node.input[0]) is None:
            self.emit(node, "Linear", [node.input[0]], wt=_to(self.xp, np.ascontiguousarray(w)), b=None, act=None)
        else:
            self.emit(node, "MatMul", list(node.input))
        return True

    def _Gemm(self, node, attrs):
        if attrs.get("transA", 0):
            return False
        trans_b, alpha, beta = attrs.get("transB", 0), attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
        c = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if len(node.input) > 2 and node.input[2] and c is None:
            return False
        bias = None if c is None else c * np.asarray(beta, c.dtype)
        if self._qdq_linear(node, node.input[0], node.input[1], trans_b, alpha, bias):
            return True
        w = self.const(node.input[1])
        if w is None or not self.is_float(node.input[0]):
            return False
        w = w.T if trans_b else w
        n = w.shape[1]
        if bias is not None:
            if bias.size == 1:
                bias = np.full(n, bias.reshape(()), dtype=bias.dtype)
            elif bias.size == n and (bias.ndim == 1 or bias.shape[0] == 1):
                bias = bias.reshape(n)
            else:
                return False
        wt = np.ascontiguousarray(w * np.asarray(alpha, w.dtype) if alpha != 1 else w)
        self.emit(node, "Linear", [node.input[0]], wt=_to(self.xp, wt), b=None if bias is None else _to(self.xp, bias),
                  act=None)
        return True

    def _conv_geom(self, attrs, kern):
        if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
            return None
        nd = len(kern)
        if list(attrs.get("kernel_shape", kern)) != list(kern):
            return None
        pads = attrs.get("pads", [0] * 2 * nd)
        return {"stride": tuple(attrs.get("strides", [1] * nd)), "dilation": tuple(attrs.get("dilations", [1] * nd)),
                "pads": tuple((pads[i], pads[i + nd]) for i in range(nd)), "groups": attrs.get("group", 1)}

    def _Conv(self, node, attrs):
        if self._qdq_conv(node, attrs):
            return True
        w = self.const(node.input[1])
        b = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if w is None or (len(node.input) > 2 and node.input[2] and b is None) or not self.is_float(node.input[0]):
            return False
        geom = self._conv_geom(attrs, w.shape[2:])
        if geom is None:
            return False
        self.emit(node, "Conv", [node.input[0]], w=_to(self.xp, w), b=None if b is None else _to(self.xp, b), act=None,
                  **geom)
        return True

    def _MaxPool(self, node, attrs):
        if len([o for o in node.output if o]) != 1 or attrs.get("ceil_mode", 0) or attrs.get("storage_order", 0) \
                or attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            return False
        int8 = getattr(self.int_dtype(node.input[0]), "name", "") in ("int8", "uint8")
        if not self.is_float(node.input[0]) and not int8:
            return False
        kern = list(attrs["kernel_shape"])
        nd = len(kern)
        pads = attrs.get("pads", [0] * 2 * nd)
        self.emit(node, "MaxPool", [node.input[0]], kernel=tuple(kern), stride=tuple(attrs.get("strides", [1] * nd)),
                  pads=tuple((pads[i], pads[i + nd]) for i in range(nd)),
                  dilation=tuple(attrs.get("dilations", [1] * nd)))
        return True

    def _GlobalAveragePool(self, node, attrs):
        r = self.rank(node.input[0])
        if r is None or r < 3 or not self.is_float(node.input[0]):
            return False
        self.emit(node, "Mean", [node.input[0]], axes=tuple(range(2, r)), keepdims=True)
        return True

    def _Softmax(self, node, attrs):
        if not self.is_float(node.input[0]):
            return False
        if self.opset < 13:   # before opset 13: over the input flattened to 2-D at `axis` (default 1)
            r, axis = self.rank(node.input[0]), attrs.get("axis", 1)
            if r is None:
                return False
            axis = tuple(range(axis + r if axis < 0 else axis, r))
        else:
            axis = attrs.get("axis", -1)
        self.emit(node, "Softmax", [node.input[0]], axis=axis, log=node.op_type == "LogSoftmax")
        return True

    _LogSoftmax = _Softmax

    def _Flatten(self, node, attrs):
        axis = attrs.get("axis", 1)

        def target(s, env):
            ax = axis + len(s) if axis < 0 else axis
            return (math.prod(s[:ax]), math.prod(s[ax:]))
        self.emit(node, "Reshape", [node.input[0]], target=target)
        return True

    def _Reshape(self, node, attrs):
        shape = self.const(node.input[1])
        if shape is None:
            return False
        shape = [int(d) for d in shape]
        allowzero = attrs.get("allowzero", 0)

        def target(s, env):
            out = [s[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
            return out
        self.emit(node, "Reshape", [node.input[0]], target=target)
        return True

    def _Transpose(self, node, attrs):
        perm = attrs.get("perm")
        if perm is None:
            r = self.rank(node.input[0])
            if r is None:
                return False
            perm = list(range(r))[::-1]
        self.emit(node, "Permute", [node.input[0]], axes=tuple(perm))
        return True

    # int8 ------------------------------------------------------------------------------------------------
    def _dq(self, name):
        """(q name, scale array, zp array or None, axis) when `name` is a DequantizeLinear output with
        constant scale/zero point (and no block quantization), else None."""
        n = self.producer.get(name)
        if n is None or n.op_type != "DequantizeLinear" or n.domain not in ("", "ai.onnx"):
            return None
        from onnx import helper
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if attrs.get("block_size", 0) or attrs.get("output_dtype", 0):
            return None
        s = self.const(n.input[1])
        zp = self.const(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if s is None or (len(n.input) > 2 and n.input[2] and zp is None):
            return None
        return n.input[0], s, zp, attrs.get("axis", 1)

    def _int_input(self, name):
        """(q name, x_scale float, x_zp int, q dtype) for a per-tensor DequantizeLinear of an
        8-bit integer activation."""
        d = self._dq(name)
        if d is None:
            return None
        q, s, zp, _ = d
        dt = self.int_dtype(q)
        if dt is None or dt.name not in ("int8", "uint8") or s.size != 1 or (zp is not None and zp.size != 1):
            return None
        return q, float(s.reshape(())), int(zp.reshape(())) if zp is not None else 0, dt

    def _int_weight(self, name, axis_out):
        """(centered weights as int64, per-output scale (n,) or scalar) for DequantizeLinear of a
        constant 8-bit weight; axis_out: the weight's output-channel axis."""
        d = self._dq(name)
        if d is None:
            return None
        q, s, zp, axis = d
        w = self.const(q)
        if w is None or w.dtype.name not in ("int8", "uint8"):
            return None
        axis = axis + w.ndim if axis < 0 else axis
        if s.size > 1 and (s.ndim != 1 or axis != axis_out or s.size != w.shape[axis]):
            return None
        wc = w.astype(np.int64)
        if zp is not None:
            z = zp.astype(np.int64)
            wc = wc - (z.reshape([-1 if i == axis else 1 for i in range(w.ndim)]) if z.size > 1 else z.reshape(()))
        return wc, s.astype(np.float32)

    def _qdq_linear(self, node, a_name, b_name, trans_b, alpha, bias):
        x = self._int_input(a_name)
        if x is None:
            return False
        got = self._int_weight(b_name, 0 if trans_b else 1)
        if got is None:
            return False
        q, xs, xzp, xdt = x
        wc, ws = got
        wc = wc.T if trans_b else wc
        if wc.ndim != 2:
            return False
        n = wc.shape[1]
        if bias is not None:
            if bias.size not in (1, n):
                return False
            bias = np.broadcast_to(bias.reshape(-1), (n,)).astype(np.float32)
        acc = acc_dtype(wc.shape[0], centered_max(xdt, xzp), int(np.abs(wc).max(initial=0)))
        self.emit(node, "IntLinear", [q], w=_to(self.xp, np.ascontiguousarray(wc.astype(acc))), x_zp=xzp, out="float",
                  dtype=np.dtype(np.float32), scale=_to(self.xp, (np.float32(xs) * ws * np.float32(alpha))),
                  bias=None if bias is None else _to(self.xp, bias))
        return True

    def _qdq_conv(self, node, attrs):
        x = self._int_input(node.input[0])
        if x is None:
            return False
        got = self._int_weight(node.input[1], 0)
        b = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if got is None or (len(node.input) > 2 and node.input[2] and b is None):
            return False
        q, xs, xzp, xdt = x
        wc, ws = got
        geom = self._conv_geom(attrs, wc.shape[2:])
        if geom is None:
            return False
        k = wc[0].size
        acc = acc_dtype(k, centered_max(xdt, xzp), int(np.abs(wc).max(initial=0)))
        scale = (np.float32(xs) * ws).reshape(-1, 1) if ws.size > 1 else np.float32(xs) * ws.reshape(())
        bias = None if b is None else _to(self.xp, b.astype(np.float32).reshape(-1, 1))
        self.emit(node, "IntConv", [q], w=_to(self.xp, wc.astype(acc)), x_zp=xzp, out="float",
                  dtype=np.dtype(np.float32), scale=_to(self.xp, scale), bias=bias,
                  **geom)
        return True

    def _int_args(self, a_name, zp_name):
        """(x dtype, x_zp, inputs, centered bound) for an 8-bit integer activation; x_zp is an int
        when constant (per tensor), else the zero point is an extra run-time input (as after
        DynamicQuantizeLinear) and the bound covers any zero point of the type."""
        dt = self.int_dtype(a_name)
        if dt is None or dt.name not in ("int8", "uint8"):
            return None
        zp = self.const(zp_name) if zp_name else np.zeros((), dt)
        if zp is None:
            n = self.producer.get(zp_name)
            scalar = self.rank(zp_name) in (0, 1) or (n is not None and n.op_type == "DynamicQuantizeLinear")
            if not scalar or zp_name not in self.names:   # a scalar zero point (rank 1: one element)
                return None
            lo, hi = INT_RANGES[dt.name]
            return dt, 0, [a_name, zp_name], hi - lo
        if zp.size != 1:
            return None
        z = int(zp.reshape(()))
        return dt, z, [a_name], centered_max(dt, z)

    def _centered_const(self, w_name, zp_name, axis):
        w = self.const(w_name)
        if w is None or w.dtype.name not in ("int8", "uint8"):
            return None
        wc = w.astype(np.int64)
        if zp_name:
            z = self.const(zp_name)
            if z is None:
                return None
            z = z.astype(np.int64)
            wc = wc - (z.reshape([-1 if i == axis else 1 for i in range(w.ndim)]) if z.size > 1 else z.reshape(()))
        return wc

    def _MatMulInteger(self, node, attrs):
        ins = list(node.input) + [""] * (4 - len(node.input))
        x = self._int_args(ins[0], ins[2])
        wc = self._centered_const(ins[1], ins[3], 1)
        if x is None or wc is None or wc.ndim != 2:
            return False
        acc = acc_dtype(wc.shape[0], x[3], int(np.abs(wc).max(initial=0)))
        self.emit(node, "IntLinear", x[2], w=_to(self.xp, wc.astype(acc)), x_zp=x[1], out="int32")
        return True

    def _QLinearMatMul(self, node, attrs):
        a, sa, za, b, sb, zb, sy, zy = node.input
        x = self._int_args(a, za)
        wc = self._centered_const(b, zb, 1)
        scales = [self.const(n) for n in (sa, sb, sy)]
        zyc = self.const(zy)
        if x is None or wc is None or wc.ndim != 2 or any(s is None for s in scales) or zyc is None \
                or scales[0].size != 1 or scales[2].size != 1 or zyc.size != 1:
            return False
        mult = (scales[0].astype(np.float32) * scales[1].astype(np.float32) / scales[2].astype(np.float32))
        acc = acc_dtype(wc.shape[0], x[3], int(np.abs(wc).max(initial=0)))
        self.emit(node, "IntLinear", x[2], w=_to(self.xp, wc.astype(acc)), x_zp=x[1], out="quant",
                  mult=_to(self.xp, mult.reshape(-1) if mult.size > 1 else mult.reshape(())), zp=int(zyc.reshape(())),
                  dtype=zyc.dtype)
        return True

    def _QGemm(self, node, attrs):
        """onnxruntime's contrib QGemm (its QOperator format for Gemm): A, a_scale, a_zp, B, b_scale,
        b_zp, C (int32 bias), y_scale, y_zp; float output without y_scale."""
        ins = list(node.input) + [""] * (9 - len(node.input))
        a, sa, za, b, sb, zb, c, sy, zy = ins
        if attrs.get("transA", 0):
            return False
        trans_b, alpha = attrs.get("transB", 0), attrs.get("alpha", 1.0)
        x = self._int_args(a, za)
        wc = self._centered_const(b, zb, 0 if trans_b else 1)
        s_a, s_b = self.const(sa), self.const(sb)
        bias = self.const(c) if c else None
        if x is None or len(x[2]) != 1 or wc is None or wc.ndim != 2 or s_a is None or s_b is None \
                or s_a.size != 1 or (c and bias is None):
            return False
        wc = wc.T if trans_b else wc
        n = wc.shape[1]
        acc = acc_dtype(wc.shape[0], x[3], int(np.abs(wc).max(initial=0)))
        scale = (s_a.astype(np.float32) * s_b.astype(np.float32) * np.float32(alpha)).reshape(-1)
        w = _to(self.xp, np.ascontiguousarray(wc.astype(acc)))
        if sy:
            s_y, z_y = self.const(sy), self.const(zy) if zy else np.zeros((), np.uint8)
            if s_y is None or z_y is None or s_y.size != 1 or z_y.size != 1:
                return False
            mult = scale / s_y.astype(np.float32).reshape(())
            self.emit(node, "IntLinear", x[2], w=w, x_zp=x[1], out="quant", zp=int(z_y.reshape(())), dtype=z_y.dtype,
                      mult=_to(self.xp, mult if mult.size > 1 else mult.reshape(())),
                      bias=None if bias is None else _to(self.xp, np.broadcast_to(bias.reshape(-1), (n,)).astype(acc)))
        else:
            fb = None if bias is None else np.broadcast_to(bias.reshape(-1), (n,)).astype(np.float32) * scale
            self.emit(node, "IntLinear", x[2], w=w, x_zp=x[1], out="float", dtype=np.dtype(np.float32),
                      scale=_to(self.xp, scale if scale.size > 1 else scale.reshape(())),
                      bias=None if fb is None else _to(self.xp, fb))
        return True

    def _ConvInteger(self, node, attrs):
        ins = list(node.input) + [""] * (4 - len(node.input))
        x = self._int_args(ins[0], ins[2])
        wc = self._centered_const(ins[1], ins[3], 0)
        if x is None or wc is None:
            return False
        geom = self._conv_geom(attrs, wc.shape[2:])
        if geom is None:
            return False
        acc = acc_dtype(wc[0].size, x[3], int(np.abs(wc).max(initial=0)))
        self.emit(node, "IntConv", x[2], w=_to(self.xp, wc.astype(acc)), x_zp=x[1], out="int32", **geom)
        return True

    def _QLinearConv(self, node, attrs):
        ins = list(node.input) + [""] * (9 - len(node.input))
        x_, sx, zx, w_, sw, zw, sy, zy, b_ = ins
        x = self._int_args(x_, zx)
        wc = self._centered_const(w_, zw, 0)
        scales = [self.const(n) for n in (sx, sw, sy)]
        zyc = self.const(zy)
        bias = self.const(b_) if b_ else None
        if x is None or wc is None or any(s is None for s in scales) or zyc is None or (b_ and bias is None) \
                or scales[0].size != 1 or scales[2].size != 1 or zyc.size != 1:
            return False
        geom = self._conv_geom(attrs, wc.shape[2:])
        if geom is None:
            return False
        acc = acc_dtype(wc[0].size, x[3], int(np.abs(wc).max(initial=0)))
        mult = scales[0].astype(np.float32) * scales[1].astype(np.float32) / scales[2].astype(np.float32)
        mult = mult.reshape(-1, 1) if mult.size > 1 else mult.reshape(())
        self.emit(node, "IntConv", x[2], w=_to(self.xp, wc.astype(acc)), x_zp=x[1], out="quant",
                  mult=_to(self.xp, mult), zp=int(zyc.reshape(())), dtype=zyc.dtype,
                  bias=None if bias is None else _to(self.xp, bias.astype(acc)), **geom)
        return True

    def _QuantizeLinear(self, node, attrs):
        s = self.const(node.input[1])
        zp = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if s is None or s.size != 1 or (len(node.input) > 2 and node.input[2] and zp is None) \
                or attrs.get("block_size", 0) or attrs.get("output_dtype", 0) or attrs.get("precision", 0) \
                or not self.is_float(node.input[0]) or self.const(node.input[0]) is not None:
            return False
        dt = zp.dtype if zp is not None else np.dtype(np.uint8)
        if dt.name not in INT_RANGES or zp is not None and zp.size != 1:
            return False
        self.emit(node, "Quantize", [node.input[0]], scale=s.reshape(()).copy(),
                  zp=int(zp.reshape(())) if zp is not None else 0, dtype=dt)
        return True

    def _DequantizeLinear(self, node, attrs):
        s = self.const(node.input[1])
        zp = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if s is None or s.size != 1 or (len(node.input) > 2 and node.input[2] and zp is None) \
                or attrs.get("block_size", 0) or attrs.get("output_dtype", 0) or self.const(node.input[0]) is not None:
            return False
        dt = self.int_dtype(node.input[0])
        if dt is None or dt.name not in INT_RANGES:
            return False
        self.emit(node, "Dequantize", [node.input[0]], scale=s.reshape(()).copy(),
                  zp=int(zp.reshape(())) if zp is not None else 0, dtype=s.dtype)
        return True


def _onnx_fn(rnode, names, n_inputs):
    """Run an rtx.onnx op-table node on arrays (as constant Tensors; no graph is recorded)."""
    from rtx.extend import Tensor, raw, wrap
    from rtx.onnx.load import UnsupportedOpError

    def wrap_all(a):
        if a is None:
            return None
        if type(a) is list:
            return [wrap_all(x) for x in a]
        return wrap(a) if hasattr(a, "shape") or isinstance(a, np.generic) else a

    def unwrap(t):
        if type(t) is list:
            return [unwrap(x) for x in t]
        return raw(t) if type(t) is Tensor else t

    def fn(arrays, env):
        ts = [wrap_all(a) for a in arrays]
        attrs = rnode.attrs
        if rnode.has_graph:
            attrs = dict(attrs)
            attrs["_env"] = {n: t for n, t in zip(names, ts) if n}
        try:
            out = rnode.fn(ts[:n_inputs], attrs, rnode.opset)
        except UnsupportedOpError:
            raise
        if type(out) is not tuple:
            out = (out,)
        return tuple(unwrap(o) for o in out)
    return fn
