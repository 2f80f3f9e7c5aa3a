"""Front end: an rtx.graph Graph (a traced module) to a Program.

The hot Primitives map to plan kernels (Linear, Conv, MaxPool, elementwise, softmax, reshape,
permute, matmul); every other node runs as a Generic op that calls the Primitive's own
forward on the arrays (wrapped as Tensors, no graph recorded), so any traceable model runs.
Symbolic sizes (reshape targets that follow the batch) are resolved once per input-size key.
"""
from __future__ import annotations

import numpy as np

from rtx.extend import NO_GRAPH, Tensor, raw, wrap
from rtx.graph._pytree import leaves, map_structure
from rtx.graph.ir import ArrayOf, Value
from rtx.graph.symbolic import SymArange, SymInt, has_symbols, resolve
from rtx.inference.program import Port, Program

_UNARY = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "silu": "silu",
          "exp": "exp", "log": "log", "sqrt": "sqrt", "neg": "negative",
          "abs": "absolute"}
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "maximum": "maximum",
           "minimum": "minimum"}


def _is_value(x):
    return isinstance(x, Value)


def from_graph(graph, xp, output_names=None):
    """Lower `graph` (not modified) to a Program whose constants live on xp's device."""
    p = Program()
    slot = {}       # id(Value) -> program value
    for v, dims in zip(graph.inputs, graph.dims):
        s = p.value()
        slot[id(v)] = s
        shape = [dims.get(d, str(d_)) if isinstance(d_, SymInt) else int(d_) for d, d_ in enumerate(v.shape)]
        p.inputs.append(Port(v.name, shape, np.dtype(v.dtype.np), s))
    for c in graph.consts:
        if c.fill is None:
            slot[id(c)] = p.const(_device(xp, raw(c.tensor)))
        else:
            slot[id(c)] = p.add("Generic", [], name=c.name, foldable=False, op="fill", fn=_filler(c))
    for node in graph.nodes:
        _lower(p, node, slot, xp)
    outs = leaves(graph.outputs, _is_value)
    names = output_names or (["output"] if len(outs) == 1 else [f"output_{i}" for i in range(len(outs))])
    if len(names) != len(outs):
        raise ValueError(f"output_names has {len(names)} names, the graph has {len(outs)} outputs")
    for name, v in zip(names, outs):
        dims = [str(d) if isinstance(d, SymInt) else int(d) for d in v.shape]
        p.outputs.append(Port(name, dims, np.dtype(v.dtype.np), slot[id(v)]))
    input_dims = [dict(d) for d in graph.dims]

    def env_of(arrays):
        return {sym: a.shape[d] for a, dims in zip(arrays, input_dims) for d, sym in dims.items()}
    p.env_of = env_of
    p.static_reason = None if graph.dynamic else graph.static_reason
    return p


def _device(xp, a):
    return a if xp is np else xp.asarray(a)


def _filler(c):
    def fn(arrays, env):
        if isinstance(c.fill, SymArange):
            return (c.fill.array(env),)
        shape = tuple(d.evaluate(env) if isinstance(d, SymInt) else d for d in c.shape)
        return (np.full(shape, c.fill, dtype=c.dtype.np),)
    return fn


def _const(p, slot, v):
    """The constant array behind a Value, or None."""
    if not isinstance(v, Value) or v.kind != "const":
        return None
    return p.consts.get(slot[id(v)])


def _lower(p, node, slot, xp):
    op, args, attrs = node.op, node.args, node.attrs
    outs = node.outputs
    symbolic = has_symbols(attrs) or has_symbols(map_structure(args, lambda v: None, _is_value))
    native = None
    if node.kind == "primitive" and len(outs) == 1 and not any(isinstance(a, ArrayOf) for a in leaves(attrs)):
        native = _native(p, node, slot, xp, symbolic)
    if native is not None:
        kind, inputs, kw = native
        slot[id(outs[0])] = p.add(kind, inputs, name=node.name, **kw)
        return
    vals = [v for v in node.inputs]
    res = p.add("Generic", [slot[id(v)] for v in vals], n_out=len(outs), name=node.name,
                foldable=not symbolic and not getattr(node.target, "random", False) and node.kind == "primitive",
                op=op, fn=_generic(node, vals, symbolic))
    res = res if isinstance(res, list) else [res]
    for v, r in zip(outs, res):
        slot[id(v)] = r


def _generic(node, vals, symbolic):
    """Run the node's Primitive (or leaf module) on arrays; attributes resolved per size key."""
    index = {id(v): i for i, v in enumerate(vals)}
    args_t, attrs_t = node.args, node.attrs

    def fn(arrays, env):
        ts = [wrap(a) for a in arrays]
        args = map_structure(args_t, lambda v: ts[index[id(v)]], _is_value)
        attrs = map_structure(attrs_t, lambda a: arrays[index[id(a.value)]], lambda x: isinstance(x, ArrayOf))
        if symbolic:
            args, attrs = resolve(args, env), resolve(attrs, env)
        if node.kind == "primitive":
            out = node.target.forward(NO_GRAPH, *args, **attrs)
            out = out if type(out) is tuple else (out,)
            return tuple(raw(o) if type(o) is Tensor else o for o in out)
        return tuple(raw(t) for t in leaves(node.target(*args, **attrs)))
    return fn


def _float(v):
    return isinstance(v, Value) and np.dtype(v.dtype.np).kind == "f"


def _native(p, node, slot, xp, symbolic):
    """(kind, inputs, attrs) of a plan kernel for this node, or None (run it generically)."""
    op, args, attrs = node.op, node.args, node.attrs
    out = node.outputs[0]
    dt = np.dtype(out.dtype.np)
    if dt.kind != "f":
        return None
    if op == "linear" and len(args) in (2, 3) and all(_float(a) or a is None for a in args):
        w = _const(p, slot, args[1])
        b = _const(p, slot, args[2]) if len(args) > 2 and args[2] is not None else None
        if w is None or w.ndim != 2 or (len(args) > 2 and args[2] is not None and b is None):
            return None
        return "Linear", [slot[id(args[0])]], {"wt": xp.ascontiguousarray(w.T), "b": b, "act": None}
    if op == "convolution" and len(args) == 3 and not symbolic:
        w = _const(p, slot, args[1])
        b = _const(p, slot, args[2]) if args[2] is not None else None
        if w is None or (args[2] is not None and b is None) or not _float(args[0]):
            return None
        g = attrs["geom"]
        return "Conv", [slot[id(args[0])]], {"w": w, "b": b, "stride": tuple(g.stride), "pads": tuple(g.pads),
                                             "dilation": tuple(g.dilation), "groups": g.groups, "act": None}
    if op in _UNARY and not attrs and _float(args[0]) and args[0].dtype == out.dtype:
        return "Unary", [slot[id(args[0])]], {"act": _UNARY[op]}
    if op == "gelu" and _float(args[0]):
        return "Unary", [slot[id(args[0])]], {"act": "gelu" if attrs.get("approximate", "none") == "none"
                                              else "gelu_tanh"}
    if op in _BINARY and len(args) == 2 and not attrs:
        ins = []
        for a in args:
            if isinstance(a, Value):
                if a.dtype != out.dtype:
                    return None
                ins.append(slot[id(a)])
            elif isinstance(a, (int, float)) and not isinstance(a, bool):
                ins.append(p.const(xp.asarray(a, dtype=dt)))   # Python numbers take the tensor's dtype
            else:
                return None
        return "Binary", ins, {"fn": _BINARY[op]}
    if op == "matmul" and len(args) == 2 and all(_float(a) and a.dtype == out.dtype for a in args):
        w = _const(p, slot, args[1])
        if w is not None and w.ndim == 2 and len(args[0].shape) >= 2:
            return "Linear", [slot[id(args[0])]], {"wt": xp.ascontiguousarray(w), "b": None, "act": None}
        return "MatMul", [slot[id(a)] for a in args], {}
    if op == "max_pool" and not attrs.get("return_indices") and not symbolic and _float(args[0]):
        geo = attrs["geo"]
        if any(isinstance(d, SymInt) for d in args[0].shape[2:]):
            return None
        return "MaxPool", [slot[id(args[0])]], {"kernel": tuple(geo.kernel), "stride": tuple(geo.stride),
                                                "pads": tuple(geo.pads), "dilation": tuple(geo.dilation)}
    if op == "avg_pool" and not symbolic and _float(args[0]):
        geo = attrs["geo"]
        spatial = tuple(args[0].shape[2:])
        if tuple(geo.kernel) == spatial and not any(lo or hi for lo, hi in geo.pads) \
                and float(attrs.get("div", 0)) == float(np.prod(spatial)):   # a global average pool
            return "Mean", [slot[id(args[0])]], {"axes": tuple(range(2, 2 + len(spatial))), "keepdims": True}
        return None
    if op in ("softmax", "log_softmax") and set(attrs) == {"axis"} and args[0].dtype == out.dtype:
        return "Softmax", [slot[id(args[0])]], {"axis": attrs["axis"], "log": op == "log_softmax"}
    if op == "reshape" and set(attrs) == {"shape"}:
        shape = attrs["shape"]
        return "Reshape", [slot[id(args[0])]], {"target": lambda s, env, shape=shape: resolve(shape, env)}
    if op == "permute" and set(attrs) == {"axes"}:
        return "Permute", [slot[id(args[0])]], {"axes": attrs["axes"]}
    return None
