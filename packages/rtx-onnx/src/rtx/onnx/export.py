"""rtx.onnx.export: an rtx model to an ONNX file, with torch.onnx.export's signature.

The model is traced by rtx.graph (every Primitive it applies; nn.LSTM/GRU/RNN as whole
modules), the graph is simplified (constant folding precomputes weight transforms such as an
eval-mode BatchNorm's scale and shift; dead code goes), and each node is mapped to ONNX ops by
the handlers in _export_ops.py and _export_rnn.py. Parameters become initializers. Sizes that
follow a dynamic axis are symbolic in the trace, so reshape targets, slice bounds and constant
shapes that depend on them are computed in the ONNX graph from the inputs' shapes.
"""
from __future__ import annotations

import io
import os

import numpy as np

from rtx.graph import SymInt, trace
from rtx.graph._pytree import leaves
from rtx.graph.symbolic import SymArange

__all__ = ["export", "EXPORTED_OPS", "ExportError"]

# Every ONNX op type the exporter can emit (the import side's backend covers them all).
EXPORTED_OPS = sorted({
    "Abs", "Add", "And", "Atan", "AveragePool", "Cast", "Ceil", "Celu", "Clip", "Concat", "ConstantOfShape", "Conv",
    "Cos", "Cosh", "Div", "Elu", "Equal", "Erf", "Exp", "Expand", "Floor", "GRU", "Gather", "Gelu", "Gemm",
    "GlobalAveragePool", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN",
    "LSTM", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool",
    "Min", "Mod", "Mul", "Neg", "Not", "Or", "Pad", "Pow", "RNN", "Range", "Reciprocal", "ReduceMean", "ReduceProd",
    "ReduceSum", "Relu", "Reshape", "Round", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Sinh", "Slice", "Softmax",
    "Softplus", "Split", "Sqrt", "Squeeze", "Sub", "Tan", "Tanh", "Transpose", "Trilu", "Unsqueeze", "Where", "Xor",
})

MIN_OPSET, MAX_OPSET, DEFAULT_OPSET = 13, 20, 17


class ExportError(RuntimeError):
    """The model uses something the exporter cannot express in ONNX (the message says what)."""


class _Ctx:
    """What the handlers build into: nodes, initializers, and names for the graph's Values."""

    def __init__(self, graph, opset):
        self.graph, self.opset = graph, opset
        self.nodes, self.initializers = [], []
        self.names = {}          # id(Value) -> ONNX name
        self.taken = set()
        self.emitted = set()     # ONNX op types used
        self._consts = {}        # (dtype, shape, bytes) -> initializer name (small constants)
        self._sym_cache = {}
        self.sources = {}        # symbol -> (input ONNX name, dim)

    # ---- names ----------------------------------------------------------------------------
    def fresh(self, base):
        base = "".join(ch if ch.isalnum() or ch in "._/-" else "_" for ch in base) or "t"
        name, i = base, 1
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name

    def value(self, v):
        """The ONNX name of Value v (a constant's initializer is made on first use)."""
        from onnx import numpy_helper
        name = self.names.get(id(v))
        if name is not None:
            return name
        if v.kind != "const":
            raise ExportError(f"value {v.name} is used before it is computed")
        if isinstance(v.fill, SymArange):
            name = self.arange(v.fill, v.name)
        elif v.fill is not None:
            shape = self.shape_tensor(v.shape)
            fill = numpy_helper.from_array(np.array([v.fill], dtype=v.dtype.np), "value")
            name = self.add("ConstantOfShape", [shape], value=fill, name=v.name)
        else:
            name = self.fresh(v.name.lstrip("_"))
            self.initializers.append(numpy_helper.from_array(np.array(_np(v.tensor), order="C"), name))
        self.names[id(v)] = name
        return name

    def const(self, array, name="const"):
        """An initializer holding `array` (small ones are shared)."""
        from onnx import numpy_helper
        a = np.array(array, order="C")
        key = (a.dtype.str, a.shape, a.tobytes()) if a.size <= 64 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        n = self.fresh(name)
        self.initializers.append(numpy_helper.from_array(a, n))
        if key is not None:
            self._consts[key] = n
        return n

    def arange(self, sym, name="arange"):
        """0, 1, ..., n-1 for a SymArange (n symbolic): ONNX Range."""
        n = self.add("Squeeze", [self.sym_scalar(sym.n), self.ints([0], "axes")])
        r = self.add("Range", [self.const(np.array(0, np.int64)), n, self.const(np.array(1, np.int64))])
        if sym.dtype != np.int64:
            from onnx import helper
            r = self.add("Cast", [r], to=helper.np_dtype_to_tensor_dtype(sym.dtype))
        return self.add("Identity", [r], name=name)

    def ints(self, values, name="ints"):
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1), name)

    def add(self, op_type, inputs, n_out=1, name=None, **attrs):
        """Append one ONNX node; returns its output name (or the list, when n_out > 1)."""
        from onnx import helper
        outs = [self.fresh(name or op_type.lower()) for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, [i if i is not None else "" for i in inputs], outs,
                                           name=self.fresh("n_" + (name or op_type.lower())), **attrs))
        self.emitted.add(op_type)
        return outs[0] if n_out == 1 else outs

    # ---- symbolic sizes ----------------------------------------------------------------------
    def sym_scalar(self, expr):
        """A 1-element int64 tensor holding the size expr (an int or a SymInt) at run time."""
        if not isinstance(expr, SymInt):
            return self.ints([expr])
        key = repr(expr)
        if key in self._sym_cache:
            return self._sym_cache[key]
        total = None
        for mono, coeff in sorted(expr.terms.items(), key=lambda kv: sorted(kv[0])):
            term = None
            for sym in sorted(mono):
                if sym not in self.sources:
                    raise ExportError(f"the size {expr} uses the symbol {sym!r}, which no input carries")
                src, dim = self.sources[sym]
                piece = self._sym_cache.get(("dim", sym))
                if piece is None:
                    shape = self.add("Shape", [src], name=f"shape_{sym}")
                    piece = self.add("Gather", [shape, self.ints([dim])], name=sym, axis=0)
                    self._sym_cache[("dim", sym)] = piece
                term = piece if term is None else self.add("Mul", [term, piece])
            if term is None:
                term = self.ints([coeff])
            elif coeff != 1:
                term = self.add("Mul", [term, self.ints([coeff])])
            total = term if total is None else self.add("Add", [total, term])
        self._sym_cache[key] = total
        return total

    def shape_tensor(self, shape):
        """A 1-D int64 tensor holding `shape` (ints and SymInts)."""
        if not any(isinstance(d, SymInt) for d in shape):
            return self.ints(list(shape), "shape")
        parts, run = [], []
        for d in shape:
            if isinstance(d, SymInt):
                if run:
                    parts.append(self.ints(run, "shape"))
                    run = []
                parts.append(self.sym_scalar(d))
            else:
                run.append(d)
        if run:
            parts.append(self.ints(run, "shape"))
        return parts[0] if len(parts) == 1 else self.add("Concat", parts, name="shape", axis=0)


def _np(t):
    return t.detach().numpy() if t.requires_grad else t.numpy(force=True)


def _elem_type(dtype):
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype.np))


def _dims(shape, names=None):
    out = []
    for i, d in enumerate(shape):
        if names and i in names:
            out.append(names[i])
        elif isinstance(d, SymInt):
            out.append(str(d).replace(" ", ""))
        else:
            out.append(int(d))
    return out


def _axes_spec(spec, rank, what):
    """dynamic_axes entry -> {dim: name} (a list of dims gets torch's generated names)."""
    if isinstance(spec, dict):
        return {int(k) % max(rank, 1): str(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return {int(k) % max(rank, 1): f"{what}_dynamic_axes_{i + 1}" for i, k in enumerate(spec)}
    raise TypeError(f"dynamic_axes[{what!r}] must be a dict {{dim: name}} or a list of dims, got {type(spec).__name__}")


def export(model, args, f=None, export_params=True, verbose=False, training=None, input_names=None,
           output_names=None, operator_export_type=None, opset_version=None, do_constant_folding=True,
           dynamic_axes=None, keep_initializers_as_inputs=None, custom_opsets=None,
           export_modules_as_functions=False, *, kwargs=None, dynamo=False):
    """Export `model` run on `args` to ONNX, as torch.onnx.export does.

    args: a Tensor or a tuple of positional arguments (a trailing dict is taken as keyword
    arguments, as in torch). f: a path or a binary file object (None: only return the model).
    input_names / output_names name the graph's inputs and outputs (in the order the tensors
    appear); dynamic_axes maps those names to {dim: symbolic name} (or a list of dims); other
    dims are fixed. opset_version: 13 to 20 (default 17). Returns the onnx.ModelProto (torch
    returns None or an ONNXProgram). The model runs in eval mode during export."""
    from onnx import helper
    from rtx.onnx._export_ops import HANDLERS
    from rtx.onnx._export_rnn import RNN_CLASSES
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"opset_version must be between {MIN_OPSET} and {MAX_OPSET}, got {opset_version}")
    if not export_params:
        raise NotImplementedError("export_params=False is not supported: parameters are always initializers")
    if operator_export_type is not None or custom_opsets or export_modules_as_functions:
        raise NotImplementedError("operator_export_type, custom_opsets and export_modules_as_functions are not "
                                  "supported (only the default ONNX export)")
    if dynamo:
        raise NotImplementedError("dynamo=True has no rtx counterpart: rtx exports by tracing rtx.graph")
    args = args if isinstance(args, tuple) else (args,)
    kw = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kw.update(args[-1])
        args = args[:-1]
    fn = (lambda *a: model(*a, **kw)) if kw else model
    tensors = leaves(args)
    in_names = list(input_names) if input_names is not None else [f"input_{i}" if len(tensors) > 1 else "input"
                                                                  for i in range(len(tensors))]
    if input_names is None and hasattr(model, "forward"):
        from rtx.graph.tracer import _param_names
        pn = _param_names(model)
        if len(pn) == len(tensors):
            in_names = pn
    if len(in_names) < len(tensors):
        in_names += [f"input_{i}" for i in range(len(in_names), len(tensors))]
    if len(in_names) > len(tensors):
        raise ValueError(f"input_names has {len(in_names)} names for {len(tensors)} input tensor(s)")
    dynamic_axes = dict(dynamic_axes or {})
    dims = []
    for name, t in zip(in_names, tensors):
        dims.append(_axes_spec(dynamic_axes[name], t.ndim, name) if name in dynamic_axes else {})
    unknown = set(dynamic_axes) - set(in_names) - set(output_names or [])
    if unknown:
        raise ValueError(f"dynamic_axes names {sorted(unknown)}, which are neither input_names {in_names} nor "
                         f"output_names {list(output_names or [])}")
    was_training = getattr(model, "training", None)
    if hasattr(model, "eval") and not (training is True or str(training).upper().endswith("TRAINING")):
        model.eval()
    try:
        graph = _trace_for_export(fn, args, dims, in_names, RNN_CLASSES)
    finally:
        if was_training and hasattr(model, "train"):
            model.train(True)
    if do_constant_folding:
        graph.fold_constants()
    graph.eliminate_common_subexpressions()
    graph.eliminate_dead_code()
    proto = _to_onnx(graph, opset, in_names, output_names, dynamic_axes, HANDLERS, dims)
    if verbose:
        print(helper.printable_graph(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(data)
        elif isinstance(f, io.IOBase) or hasattr(f, "write"):
            f.write(data)
        else:
            raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    return proto


def _trace_for_export(fn, args, dims, in_names, rnn_classes):
    import warnings

    from rtx.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.MATH]), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = trace(fn, args, dynamic_dims=dims, leaf_modules=rnn_classes, input_names=in_names)
    if any(dims) and not graph.dynamic:
        raise ExportError(f"the model cannot be exported with dynamic axes: {graph.static_reason}")
    for w in caught:
        if not str(w.message).startswith("rtx.graph.trace"):
            warnings.warn(w.message, w.category, stacklevel=3)
    return graph


def _to_onnx(graph, opset, in_names, output_names, dynamic_axes, handlers, dims):
    from onnx import helper
    ctx = _Ctx(graph, opset)
    out_values = graph.output_values()
    names = list(output_names) if output_names is not None else \
        (["output"] if len(out_values) == 1 else [f"output_{i}" for i in range(len(out_values))])
    if len(names) < len(out_values):
        names += [f"output_{i}" for i in range(len(names), len(out_values))]
    clash = set(names) & set(in_names)
    if clash:
        raise ValueError(f"names {sorted(clash)} are given both to inputs and outputs")
    ctx.taken.update(names)  # reserved: no intermediate takes an output's name
    inputs = []
    for v, name, d in zip(graph.inputs, in_names, dims):
        ctx.taken.add(name)
        ctx.names[id(v)] = name
        for k, sym in d.items():
            ctx.sources.setdefault(sym, (name, k))
        inputs.append(helper.make_tensor_value_info(name, _elem_type(v.dtype), _dims(v.shape)))
    for node in graph.nodes:
        handler = handlers.get(node.op) if node.kind == "primitive" else handlers.get("module:" + node.op)
        if handler is None:
            ops = ", ".join(sorted(k for k in handlers if not k.startswith("module:")))
            mods = ", ".join(sorted(k[7:] for k in handlers if k.startswith("module:")))
            raise ExportError(f"no ONNX export for the rtx op {node.op} ({node.kind} node {node.name}); "
                              f"exportable ops: {ops}; modules: {mods}")
        outs = handler(ctx, node)
        outs = [outs] if isinstance(outs, str) else list(outs)
        if len(outs) != len(node.outputs):
            raise ExportError(f"the {node.op} handler made {len(outs)} outputs for {len(node.outputs)}")
        for v, o in zip(node.outputs, outs):
            ctx.names[id(v)] = o
    outputs = []
    renamed = {}
    for v, name in zip(out_values, names):
        src = ctx.value(v)
        _rename_output(ctx, src, name, renamed)
        axes = _axes_spec(dynamic_axes[name], len(v.shape), name) if name in dynamic_axes else None
        outputs.append(helper.make_tensor_value_info(name, _elem_type(v.dtype), _dims(v.shape, axes)))
    g = helper.make_graph(ctx.nodes, "rtx_graph", inputs, outputs, initializer=ctx.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(g, opset_imports=opsets, producer_name="rtx", producer_version=_version())
    model.ir_version = helper.find_min_ir_version_for(opsets)
    return model


def _rename_output(ctx, src, name, renamed):
    """Make the graph output called `name`: rename the producing node's output, or add an
    Identity when the value is an input, an initializer or already another output."""
    from onnx import helper
    if src == name:
        return
    producer = next((n for n in ctx.nodes if src in n.output), None)
    if producer is None or src in renamed.values():
        ctx.nodes.append(helper.make_node("Identity", [src], [name], name=ctx.fresh("n_output")))
        ctx.emitted.add("Identity")
        return
    for n in ctx.nodes:
        n.output[:] = [name if o == src else o for o in n.output]
        n.input[:] = [name if x == src else x for x in n.input]
    for k, v in list(ctx.names.items()):
        if v == src:
            ctx.names[k] = name
    renamed[name] = src


def _version():
    from rtx.onnx import __version__
    return __version__

