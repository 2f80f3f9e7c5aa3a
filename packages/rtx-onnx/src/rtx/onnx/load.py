"""Import an ONNX model as a runnable rtx Module.

`rtx.onnx.load(path)` parses the file with onnx (clear errors for malformed or truncated files),
checks it with onnx.checker and returns a `ModelModule`: an `nn.Module` whose forward evaluates
the graph node by node, in topological order, with the op table in rtx.onnx._ops. Float
initializers become `nn.Parameter`s and integer ones buffers, so an imported model can be
fine-tuned: gradients flow through the rtx ops the table is written in.

An op with no native kernel but an ONNX function body (schema functions, context-dependent
functions and the model's own local functions) runs as that body, as onnxruntime does.
Anything else raises `UnsupportedOpError` naming the op, its domain and the opset.
"""
from __future__ import annotations

import collections
import inspect
import os
import re
import sys
import types

import numpy as np

import rtx
from rtx import nn
from rtx.extend import Tensor, raw, wrap
from rtx.onnx._ops import OPS, arr, const, domain_of, is_grad_float, load_all

__all__ = ["load", "ModelModule", "ONNXLoadError", "UnsupportedOpError", "read_model", "supported_ops"]


class ONNXLoadError(ValueError):
    """The file (or bytes) is not a valid ONNX model: unreadable, truncated, or rejected by onnx.checker."""


class UnsupportedOpError(NotImplementedError):
    """An op the importer has no kernel and no function body for."""

    def __init__(self, op_type, domain, opset, why=""):
        self.op_type, self.domain, self.opset = op_type, domain, opset
        msg = f"ONNX op {op_type!r} (domain {domain!r}, opset {opset}) is not supported by rtx.onnx"
        super().__init__(msg + (f": {why}" if why else ""))


# ---- reading ------------------------------------------------------------------------------------
def read_model(f, *, check: bool = True, full_check: bool = False):
    """Parse a path, bytes, file object or ModelProto into a checked onnx.ModelProto."""
    from google.protobuf.message import DecodeError

    import onnx

    where = "<model>"
    if isinstance(f, onnx.ModelProto):
        model = f
    else:
        if isinstance(f, (str, os.PathLike)):
            where = os.fspath(f)
            if not os.path.exists(where):
                raise FileNotFoundError(f"rtx.onnx.load: no such file: {where!r}")
            if os.path.isdir(where):
                raise ONNXLoadError(f"{where}: is a folder, expected an .onnx file")
            with open(where, "rb") as fh:
                data = fh.read()
        elif isinstance(f, (bytes, bytearray, memoryview)):
            where, data = "<bytes>", bytes(f)
        elif hasattr(f, "read"):
            where, data = getattr(f, "name", "<file>"), f.read()
        else:
            raise TypeError(f"rtx.onnx.load expects a path, bytes, a file object or an onnx.ModelProto, "
                            f"got {type(f).__name__}")
        if not data:
            raise ONNXLoadError(f"{where}: the file is empty (0 bytes), expected a serialized ONNX ModelProto")
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as e:
            raise ONNXLoadError(
                f"{where}: not a valid ONNX model ({len(data)} bytes): protobuf parsing failed ({e}); "
                "the file is truncated, corrupted, or not an .onnx file") from None
        if not model.HasField("graph") or model.ir_version == 0:
            raise ONNXLoadError(
                f"{where}: parsed as protobuf but holds no ONNX model (ir_version={model.ir_version}, "
                f"graph {'present' if model.HasField('graph') else 'missing'}); the file is truncated or "
                "not an .onnx file")
        if where not in ("<bytes>", "<file>") and _has_external_data(model):
            try:
                from onnx.external_data_helper import load_external_data_for_model
                load_external_data_for_model(model, os.path.dirname(os.path.abspath(where)))
            except (OSError, ValueError, onnx.checker.ValidationError) as e:
                raise ONNXLoadError(f"{where}: cannot read the model's external data: {e}") from None
    if check:
        try:
            if model.ByteSize() > 2_000_000_000 and isinstance(f, (str, os.PathLike)):
                onnx.checker.check_model(os.fspath(f), full_check=full_check)
            else:
                onnx.checker.check_model(model, full_check=full_check)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
            msg = str(e).strip().splitlines()
            raise ONNXLoadError(f"{where}: onnx.checker rejected the model: {' '.join(msg[:6])}") from None
        except UnicodeDecodeError:  # the checker's message quotes a name that is not UTF-8
            raise ONNXLoadError(f"{where}: onnx.checker rejected the model, which holds a name or string that is "
                                "not valid UTF-8 (a corrupted file)") from None
    return model


def _has_external_data(model):
    from onnx import TensorProto
    return any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer)


# ---- graph compilation --------------------------------------------------------------------------
class Node:
    __slots__ = ("fn", "inputs", "outputs", "attrs", "opset", "op_type", "domain", "name", "has_graph")

    def __init__(self, fn, proto, attrs, opset, domain):
        self.fn = fn
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attrs = attrs
        self.opset = opset
        self.op_type = proto.op_type
        self.domain = domain
        self.name = proto.name or f"{proto.op_type}->{','.join(proto.output)}"
        self.has_graph = any(type(v) is Graph or (type(v) is list and v and type(v[0]) is Graph)
                             for v in attrs.values())


class Scope:
    """What a graph needs to compile its nodes: opset versions, the model's local functions, and
    whether ops without an rtx kernel may run as their ONNX function body."""

    def __init__(self, opsets, functions, expand_functions=True):
        self.opsets = opsets
        self.functions = functions
        self.expand_functions = expand_functions

    def version(self, domain, op_type):
        if domain in self.opsets:
            return self.opsets[domain]
        if (domain, op_type) in self.functions:
            return 1
        raise ONNXLoadError(f"node {op_type!r} uses domain {domain!r}, which the model's opset_import does not "
                            f"declare (declared: {sorted(self.opsets)})")


class Graph:
    """A compiled GraphProto: initializers as arrays, nodes in topological order."""

    def __init__(self, proto, scope, *, ref_attrs=None):
        from onnx import numpy_helper
        self.name = proto.name
        self.input_names = [i.name for i in proto.input]
        self.output_names = [o.name for o in proto.output]
        self.output_types = [o.type for o in proto.output]
        self.input_types = {i.name: i.type for i in proto.input}
        self.initializers = {}
        try:
            for t in proto.initializer:
                self.initializers[t.name] = numpy_helper.to_array(t)
            for sp in proto.sparse_initializer:
                self.initializers[sp.values.name] = _dense_from_sparse(sp)
        except (ValueError, TypeError, KeyError, OSError) as e:
            bad = (proto.initializer[len(self.initializers)].name if len(self.initializers) < len(proto.initializer)
                   else "a sparse initializer")
            raise ONNXLoadError(f"graph {proto.name!r}: initializer {bad!r} is corrupted: {e}") from None
        self.nodes = [compile_node(n, scope, ref_attrs) for n in _toposort(proto.node)]
        self._consts = {k: const(v) for k, v in self.initializers.items()}

    def run(self, inputs, outer=None):
        """Evaluate with `inputs` (positional, matching input_names) over the outer scope `outer`
        (read through, never written: a subgraph's values stay local)."""
        local = dict(self._consts)
        local.update(zip(self.input_names, inputs))
        env = collections.ChainMap(local, outer) if outer else local
        execute(self.nodes, env)
        return [_fetch(env, name, self.name) for name in self.output_names]

    def __repr__(self):
        return f"Graph({self.name!r}, {len(self.nodes)} nodes)"


def _fetch(env, name, where):
    try:
        return env[name]
    except KeyError:
        raise RuntimeError(f"graph {where!r}: output {name!r} was never computed") from None


def execute(nodes, env):
    for node in nodes:
        try:
            ins = [env[n] if n else None for n in node.inputs]
        except KeyError:
            missing = [n for n in node.inputs if n and n not in env]
            raise RuntimeError(f"node {node.name!r} ({node.op_type}): input {missing[0]!r} is not a graph "
                               "input, an initializer, or the output of an earlier node") from None
        attrs = node.attrs
        if node.has_graph:
            attrs = dict(attrs)
            attrs["_env"] = env
        try:
            out = node.fn(ins, attrs, node.opset)
        except UnsupportedOpError:
            raise
        except Exception as e:
            e.add_note(f"while running ONNX node {node.name!r} ({node.domain}::{node.op_type}, opset {node.opset})")
            raise
        if type(out) is not tuple:
            out = (out,)
        for name, v in zip(node.outputs, out):
            if name:
                env[name] = v


def _toposort(nodes):
    nodes = list(nodes)
    produced = {}
    for i, n in enumerate(nodes):
        for o in n.output:
            if o:
                produced[o] = i
    ordered = all(produced.get(x, -1) < i for i, n in enumerate(nodes) for x in _node_refs(n))
    if ordered:
        return nodes
    deps = [{produced[x] for x in _node_refs(n) if x in produced and produced[x] != i} for i, n in enumerate(nodes)]
    done, out = set(), []
    pending = list(range(len(nodes)))
    while pending:
        ready = [i for i in pending if deps[i] <= done]
        if not ready:
            names = [nodes[i].op_type for i in pending[:5]]
            raise ONNXLoadError(f"the graph has a cycle among nodes {names}")
        for i in ready:
            done.add(i)
            out.append(nodes[i])
        pending = [i for i in pending if i not in done]
    return out


def _node_refs(n):
    """Every name a node reads, including its subgraphs' references to the outer scope."""
    refs = [x for x in n.input if x]
    for a in n.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            local = {i.name for i in g.input} | {t.name for t in g.initializer}
            for sub in g.node:
                local.update(sub.output)
            for sub in g.node:
                refs.extend(x for x in _node_refs(sub) if x not in local)
    return refs


def _dense_from_sparse(sp):
    from onnx import numpy_helper
    values = numpy_helper.to_array(sp.values)
    idx = numpy_helper.to_array(sp.indices)
    dense = np.zeros(int(np.prod(sp.dims)), dtype=values.dtype)
    if idx.ndim == 2:
        idx = np.ravel_multi_index(tuple(idx.T), tuple(sp.dims))
    dense[idx.reshape(-1)] = values.reshape(-1)
    return dense.reshape(tuple(sp.dims))


def attr_value(a, scope, ref_attrs=None):
    from onnx import AttributeProto, numpy_helper
    t = a.type
    if t == AttributeProto.FLOAT:
        return float(a.f)
    if t == AttributeProto.INT:
        return int(a.i)
    if t == AttributeProto.STRING:
        return a.s.decode("utf-8")
    if t == AttributeProto.TENSOR:
        return numpy_helper.to_array(a.t)
    if t == AttributeProto.SPARSE_TENSOR:
        return _dense_from_sparse(a.sparse_tensor)
    if t == AttributeProto.GRAPH:
        return Graph(a.g, scope, ref_attrs=ref_attrs)
    if t == AttributeProto.FLOATS:
        return [float(v) for v in a.floats]
    if t == AttributeProto.INTS:
        return [int(v) for v in a.ints]
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in a.strings]
    if t == AttributeProto.TENSORS:
        return [numpy_helper.to_array(x) for x in a.tensors]
    if t == AttributeProto.GRAPHS:
        return [Graph(g, scope, ref_attrs=ref_attrs) for g in a.graphs]
    if t == AttributeProto.TYPE_PROTO:
        return a.tp
    raise ONNXLoadError(f"attribute {a.name!r} has an unknown type {t}")


def _resolve_refs(proto, ref_attrs):
    """A copy of a function-body node whose `ref_attr_name` attributes hold the caller's values."""
    import onnx
    node = onnx.NodeProto()
    node.CopyFrom(proto)
    del node.attribute[:]
    for a in proto.attribute:
        if not a.ref_attr_name:
            node.attribute.append(a)
        elif a.ref_attr_name in (ref_attrs or {}):
            b = onnx.AttributeProto()
            b.CopyFrom(ref_attrs[a.ref_attr_name])
            b.name = a.name
            node.attribute.append(b)
    return node


def compile_node(proto, scope, ref_attrs=None):
    """ref_attrs: inside a function body, the caller's attributes (name -> AttributeProto)."""
    if any(a.ref_attr_name for a in proto.attribute):
        proto = _resolve_refs(proto, ref_attrs)
    domain = domain_of(proto.domain)
    opset = scope.version(domain, proto.op_type)
    attrs = {a.name: attr_value(a, scope, ref_attrs) for a in proto.attribute}
    attrs["_n_outputs"] = len(proto.output)
    key = (domain, proto.op_type)
    if key in scope.functions:
        fn = _LocalFunction(scope.functions[key], scope, proto)
    elif key in OPS:
        fn = OPS[key]
    elif scope.expand_functions:
        fn = _schema_function(proto, domain, opset, scope)
    else:
        raise UnsupportedOpError(proto.op_type, domain, opset, "no rtx kernel (expand_functions=False)")
    return Node(fn, proto, attrs, opset, domain)


# ---- functions ----------------------------------------------------------------------------------
class _FunctionBody:
    """Runs a FunctionProto's body for one call site (its attributes are fixed there)."""

    def __init__(self, fproto, scope, call_attrs):
        opsets = dict(scope.opsets)
        opsets.update({domain_of(o.domain): o.version for o in fproto.opset_import})
        inner = Scope(opsets, scope.functions, scope.expand_functions)
        self.inputs = list(fproto.input)
        self.outputs = list(fproto.output)
        self.nodes = [compile_node(n, inner, call_attrs) for n in _toposort(fproto.node)]

    def __call__(self, inputs):
        env = {name: v for name, v in zip(self.inputs, inputs) if v is not None}
        execute(self.nodes, env)
        return tuple(env.get(name) for name in self.outputs)


class _LocalFunction:
    """A call of one of the model's own functions (ModelProto.functions)."""

    def __init__(self, fproto, scope, proto):
        ref = {a.name: a for a in fproto.attribute_proto}
        ref.update({a.name: a for a in proto.attribute})
        self.body = _FunctionBody(fproto, scope, ref)

    def __call__(self, inputs, attrs, opset):
        return self.body(inputs)


def _schema_attrs(schema, proto):
    """The attributes a schema function body sees: the node's, else the schema's defaults."""
    ref = {name: a.default_value for name, a in schema.attributes.items()
           if a.default_value is not None and a.default_value.type != 0}
    ref.update({a.name: a for a in proto.attribute})
    return ref


def _schema_function(proto, domain, opset, scope):
    import onnx
    from onnx import defs
    sdomain = "" if domain == "ai.onnx" else domain
    try:
        schema = defs.get_schema(proto.op_type, opset, sdomain)
    except defs.SchemaError:
        schema = None
    if schema is None:
        raise UnsupportedOpError(proto.op_type, domain, opset)
    if schema.has_function or any(v <= opset for v in schema.function_opset_versions):
        versions = [v for v in schema.function_opset_versions if v <= opset]
        body = onnx.FunctionProto()
        body.ParseFromString(schema.get_function_with_opset_version(max(versions)) if versions
                             else schema.function_body.SerializeToString())
        fn = _FunctionBody(body, scope, _schema_attrs(schema, proto))
        return lambda inputs, attrs, opset_: fn(inputs)
    versions = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if versions:
        return _ContextFunction(schema, max(versions), proto, scope)
    raise UnsupportedOpError(proto.op_type, domain, opset, "no rtx kernel and no ONNX function body")


class _ContextFunction:
    """An op whose ONNX function body depends on its input types: expanded on first run, per type."""

    def __init__(self, schema, version, proto, scope):
        self.schema, self.version, self.proto, self.scope = schema, version, proto, scope
        self.cache = {}

    def __call__(self, inputs, attrs, opset):
        import onnx
        from onnx import helper
        key = tuple(None if v is None else (arr(v).dtype.str, arr(v).ndim) for v in inputs
                    if type(v) is not list)
        body = self.cache.get(key)
        if body is None:
            types = []
            for v in inputs:
                if v is None:
                    types.append(onnx.TypeProto())
                else:
                    a = arr(v)
                    elem = helper.np_dtype_to_tensor_dtype(a.dtype)
                    types.append(helper.make_tensor_type_proto(elem, list(a.shape)))
            node = onnx.NodeProto()
            node.CopyFrom(self.proto)
            for name, a in self.schema.attributes.items():
                if a.default_value is not None and a.default_value.type != 0 and \
                        name not in [x.name for x in node.attribute]:
                    node.attribute.append(a.default_value)
            fb = self.schema.get_context_dependent_function_with_opset_version(
                self.version, node.SerializeToString(), [t.SerializeToString() for t in types])
            if not fb:
                raise UnsupportedOpError(self.proto.op_type, domain_of(self.proto.domain), opset,
                                         "its context-dependent function body could not be built")
            fproto = onnx.FunctionProto()
            fproto.ParseFromString(fb)
            body = _FunctionBody(fproto, self.scope, _schema_attrs(self.schema, self.proto))
            self.cache[key] = body
        return body(inputs)


# ---- the module ---------------------------------------------------------------------------------
class _Holder(nn.Module):
    """A container that only holds parameters and buffers (the dotted initializer names)."""

    def forward(self, *args):
        raise RuntimeError("this module only holds an imported model's initializers")

    def extra_repr(self):
        items = list(self._parameters.items()) + list(self._buffers.items())
        return ", ".join(f"{k}: {list(v.shape)}" for k, v in items)


class ModelModule(nn.Module):
    """An ONNX model as an rtx Module.

    forward(*inputs, **named_inputs) takes the graph's inputs (Tensors, NumPy arrays or lists) in
    order or by name and returns its output (a tuple when the graph has several). Float
    initializers are Parameters, integer ones buffers; their state_dict keys are the initializer
    names (dotted names become submodules, other characters become '_'; see `initializer_keys`).
    """

    def __init__(self, model, *, check: bool = True, expand_functions: bool = True):
        super().__init__()
        import onnx
        if not isinstance(model, onnx.ModelProto):
            model = read_model(model, check=check)
        load_all()
        try:
            opsets = {domain_of(o.domain): o.version for o in model.opset_import}
            functions = {(domain_of(f.domain), f.name): f for f in model.functions}
            graph = Graph(model.graph, Scope(opsets, functions, expand_functions))
            object.__setattr__(self, "_graph", graph)
            object.__setattr__(self, "opset_import", opsets)
            self.initializer_keys = {}
            for name, a in graph.initializers.items():
                self._register_initializer(name, a)
        except (UnsupportedOpError, ONNXLoadError):
            raise
        except (TypeError, ValueError, KeyError, IndexError) as e:
            # what onnx.checker (skipped with check=False) would have rejected: names that are not
            # text, attributes of the wrong kind, ...
            raise ONNXLoadError(f"malformed model ({type(e).__name__}: {e}); onnx.checker.check_model "
                                "tells more") from e
        graph._consts = {}
        self.input_names = [n for n in graph.input_names if n not in graph.initializers]
        self.optional_input_names = [n for n in graph.input_names if n in graph.initializers]
        self.output_names = list(graph.output_names)
        self.producer = f"{model.producer_name} {model.producer_version}".strip()

    def _register_initializer(self, name, a):
        t = wrap(np.array(a, copy=True))
        is_param = is_grad_float(a)
        value = nn.Parameter(t) if is_param else t
        # The state_dict key is the ONNX name: dotted names become submodules (as PyTorch's
        # exporters wrote them), anything else stays one key; collisions fall back to '_' names.
        owner, key = self, name
        parts = name.split(".")
        if all(parts):
            for p in parts[:-1]:
                sub = owner._modules.get(p)
                if sub is None:
                    if hasattr(owner, p):
                        owner = None
                        break
                    sub = _Holder()
                    owner.add_module(p, sub)
                owner = sub
            key = parts[-1]
            if owner is not None and (hasattr(owner, key) or key in owner._modules):
                owner = None
        else:
            owner = None
        if owner is None:
            owner = self
            key = re.sub(r"\W", "_", name) or "_"
            base, i = key, 1
            while hasattr(self, key) or key in self._modules:
                key, i = f"{base}_{i}", i + 1
        if is_param:
            owner.register_parameter(key, value)
        else:
            owner.register_buffer(key, value)
        self.initializer_keys[name] = (owner, key)

    def _initializer(self, name):
        owner, key = self.initializer_keys[name]
        return owner._parameters[key] if key in owner._parameters else owner._buffers[key]

    def forward(self, *args, **kwargs):
        g = self._graph
        names = self.input_names
        if len(args) > len(names) + len(self.optional_input_names):
            raise TypeError(f"the model takes {len(names)} inputs {names}, got {len(args)}")
        feeds = dict(zip(names + self.optional_input_names, args))
        for k, v in kwargs.items():
            if k not in g.input_names:
                raise TypeError(f"the model has no input {k!r}; its inputs are {names}")
            if k in feeds:
                raise TypeError(f"input {k!r} given twice")
            feeds[k] = v
        missing = [n for n in names if n not in feeds]
        if missing:
            raise TypeError(f"missing model input(s) {missing}; the model takes {names}")
        env = {name: self._initializer(name) for name in self.initializer_keys}
        for name, v in feeds.items():
            env[name] = _as_value(v, g.input_types.get(name), name)
        execute(g.nodes, env)
        outs = tuple(_fetch(env, name, g.name) for name in g.output_names)
        return outs[0] if len(outs) == 1 else outs

    def extra_repr(self):
        return (f"inputs={self.input_names}, outputs={self.output_names}, nodes={len(self._graph.nodes)}, "
                f"opset={self.opset_import.get('ai.onnx')}")


def _as_value(v, type_proto, name):
    if v is None or type(v) is Tensor:
        return v
    while type_proto is not None and type_proto.HasField("optional_type"):
        type_proto = type_proto.optional_type.elem_type
    if isinstance(v, (list, tuple)) and type_proto is not None and type_proto.HasField("sequence_type"):
        return [_as_value(x, type_proto.sequence_type.elem_type, name) for x in v]
    a = v if isinstance(v, np.ndarray) else None
    if a is None:
        dtype = None
        if type_proto is not None and type_proto.HasField("tensor_type") and type_proto.tensor_type.elem_type:
            from rtx.onnx._ops import np_dtype
            dtype = np_dtype(type_proto.tensor_type.elem_type)
        if hasattr(v, "__cuda_array_interface__"):
            return wrap(v)
        a = np.asarray(v, dtype=dtype)
    return wrap(a)


def supported_ops():
    """Every (domain, op_type) with a native rtx kernel."""
    load_all()
    return sorted(OPS)


def load(f, *, check: bool = True, expand_functions: bool = True) -> ModelModule:
    """Load an ONNX model (path, bytes, file object or ModelProto) as a runnable rtx Module.

    check: run onnx.checker.check_model first. expand_functions: ops without an rtx kernel run as
    their ONNX function body (as onnxruntime does); False allows rtx kernels only.
    Raises ONNXLoadError for files that are not valid ONNX (empty, truncated, corrupted, rejected
    by onnx.checker) and UnsupportedOpError for ops with neither an rtx kernel nor a function body.
    """
    return ModelModule(read_model(f, check=check), check=False, expand_functions=expand_functions)


def _to_numpy(v):
    if v is None:
        return None
    if type(v) is list:
        return [_to_numpy(x) for x in v]
    a = raw(v) if type(v) is Tensor else v
    get = getattr(a, "get", None)
    return a.get() if get is not None and not isinstance(a, np.ndarray) else a


def run_numpy(module, inputs):
    """Run a ModelModule without gradients and return NumPy outputs (lists for sequences)."""
    with rtx.no_grad():
        out = module(*inputs)
    if len(module.output_names) == 1:
        out = (out,)
    return [_to_numpy(o) for o in out]


class _CallableModule(types.ModuleType):
    """`import rtx.onnx.load` rebinds the package attribute `rtx.onnx.load` from the function to
    this module (Python sets a package attribute for every imported submodule), so the module
    itself forwards calls: `rtx.onnx.load(path)` works whichever of the two the name holds."""

    def __call__(self, *args, **kwargs):
        return load(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
__signature__ = inspect.signature(load)  # inspect.signature(rtx.onnx.load) shows load()'s
