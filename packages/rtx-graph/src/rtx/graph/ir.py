"""The graph IR: Values (graph inputs, constants, node outputs) and Nodes (one Primitive
application, or one call of a leaf module), in topological order. Calling a Graph runs the
same Primitives again, so its result equals the eager one, at any size its symbols allow."""
from __future__ import annotations

import numpy as np

from rtx.extend import Tensor, raw
from rtx.graph._pytree import leaves, map_structure
from rtx.graph.symbolic import SymArange, SymInt, has_symbols, resolve


class Value:
    """One tensor in the graph. kind: 'input', 'const' or 'node' (the output `index` of `node`).
    shape holds ints and SymInts; dtype is an rtx dtype. A const holds `tensor` (a parameter,
    a buffer or a constant made during the trace) or, when its shape is symbolic, `fill`
    (a uniform value, or a SymArange: the tensor is made at run time)."""

    __slots__ = ("name", "kind", "shape", "dtype", "node", "index", "tensor", "fill", "device", "__weakref__")

    def __init__(self, name, kind, shape, dtype, node=None, index=0, tensor=None, fill=None, device=None):
        self.name, self.kind, self.shape, self.dtype = name, kind, tuple(shape), dtype
        self.node, self.index, self.tensor, self.fill, self.device = node, index, tensor, fill, device

    @property
    def is_parameter(self):
        """A named module parameter or buffer (the others are constants made in forward)."""
        return self.kind == "const" and not self.name.startswith("_const")

    @property
    def symbolic(self):
        return any(isinstance(d, SymInt) for d in self.shape)

    def __repr__(self):
        return f"%{self.name}: {self.dtype.name}{list(self.shape)}"


class ArrayOf:
    """In a node's attributes: the array of a Value (ops such as embedding take their indices as
    an array attribute; the tracer recognises the array of a traced tensor)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"ArrayOf(%{self.value.name})"


class Node:
    """One op application. kind 'primitive': target is the Primitive class, op its stable op
    name ("linear", "relu", "add"; rtx.extend.op_name); kind 'module': target is a leaf module
    called as a whole, op its class name.
    args: the positional inputs (Values, nested in tuples/lists as given, or Python values);
    attrs: the keyword attributes (may hold SymInts and ArrayOf); outputs: Values;
    out_spec: how the outputs nest (an int index, or tuples/lists/dicts of them);
    group: the elementwise fusion group it belongs to, or None."""

    __slots__ = ("name", "kind", "op", "target", "args", "attrs", "outputs", "out_spec", "group", "meta",
                 "__weakref__")

    def __init__(self, name, kind, target, args, attrs, out_spec):
        self.name, self.kind, self.target = name, kind, target
        self.op = target.op if kind == "primitive" else type(target).__name__
        self.args, self.attrs, self.out_spec = args, attrs, out_spec
        self.outputs = []
        self.group = None
        self.meta = {}

    @property
    def inputs(self):
        """Every Value this node reads, in order (positional args, then those in attrs)."""
        vals = leaves(self.args, _is_value)
        vals += [a.value for a in leaves(self.attrs, lambda x: isinstance(x, ArrayOf))]
        return vals

    def replace_input(self, old, new):
        self.args = map_structure(self.args, lambda v: new if v is old else v, _is_value)
        self.attrs = map_structure(self.attrs, lambda a: ArrayOf(new) if a.value is old else a,
                                   lambda x: isinstance(x, ArrayOf))

    def run(self, args, attrs):
        if self.kind == "primitive":
            out = self.target.apply(*args, **attrs)
            return out if type(out) is tuple else (out,)
        return tuple(leaves(self.target(*args, **attrs)))

    def __repr__(self):
        outs = ", ".join(map(repr, self.outputs))
        ins = ", ".join(_arg(a) for a in self.args)
        attrs = ", ".join(f"{k}={_arg(v)}" for k, v in self.attrs.items())
        return f"{outs} = {self.op}({ins}{', ' if ins and attrs else ''}{attrs})"


def _arg(a):
    if isinstance(a, Value):
        return "%" + a.name
    if isinstance(a, ArrayOf):
        return "%" + a.value.name
    if isinstance(a, (tuple, list)) and any(isinstance(x, (Value, ArrayOf)) for x in a):
        inner = ", ".join(_arg(x) for x in a)
        return f"({inner})" if isinstance(a, tuple) else f"[{inner}]"
    return _short(a)


def _short(v):
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}"
    s = repr(v)
    if " object at 0x" in s:  # no repr of its own: show its fields
        from rtx.graph.symbolic import _fields
        s = f"{type(v).__name__}(" + ", ".join(f"{f}={getattr(v, f)!r}" for f in _fields(v)) + ")"
    return s if len(s) < 80 else s[:77] + "..."


def _is_value(x):
    return isinstance(x, Value)


class Graph:
    """A traced computation. inputs: the Values bound to the call's tensors (in the order the
    tensors appear in the arguments); nodes: in topological order; outputs: the traced
    function's output structure with Values at the tensors' places. symbols: each symbolic
    size's value in the example; dims: per input, {dim: symbol}. dynamic is False when the
    trace could not be generalised (static_reason says why): then only the example's sizes run."""

    def __init__(self, inputs, nodes, outputs, consts, symbols, dims, arg_spec, dynamic=True, static_reason=None):
        self.inputs, self.nodes, self.outputs, self.consts = list(inputs), list(nodes), outputs, list(consts)
        self.symbols, self.dims, self.arg_spec = dict(symbols), list(dims), arg_spec
        self.dynamic, self.static_reason = dynamic, static_reason
        self.fusion_groups = {}

    # ---- running ------------------------------------------------------------------------------
    def __call__(self, *args):
        tensors = leaves(args)
        if len(tensors) != len(self.inputs):
            raise TypeError(f"the graph takes {len(self.inputs)} tensor input(s) "
                            f"({', '.join(v.name for v in self.inputs)}), got {len(tensors)}")
        env = self.bind_symbols(tensors)
        vals = dict(zip(map(id, self.inputs), tensors))
        for c in self.consts:
            vals[id(c)] = c.tensor if c.fill is None else _full(c, env)
        from rtx.graph.fusion import run_group
        done = set()
        for node in self.nodes:
            if node.group is not None and node.group in self.fusion_groups:
                if node.group in done:
                    continue
                done.add(node.group)
                run_group(self.fusion_groups[node.group], vals, env)
                continue
            outs = node.run(*self._resolve(node, vals, env))
            for v, t in zip(node.outputs, outs):
                vals[id(v)] = t
        return map_structure(self.outputs, lambda v: vals[id(v)], _is_value)

    def _resolve(self, node, vals, env):
        args = map_structure(node.args, lambda v: vals[id(v)], _is_value)
        attrs = map_structure(node.attrs, lambda a: raw(vals[id(a.value)]), lambda x: isinstance(x, ArrayOf))
        if env and has_symbols(args):
            args = resolve(args, env)
        if env and has_symbols(attrs):
            attrs = resolve(attrs, env)
        return args, attrs

    def bind_symbols(self, tensors):
        """{symbol: size} read from the inputs, after checking every fixed size."""
        env = {}
        for v, t, dims in zip(self.inputs, tensors, self.dims):
            if type(t) is not Tensor:
                raise TypeError(f"graph input {v.name!r} must be a Tensor, got {type(t).__name__}")
            if t.ndim != len(v.shape):
                raise RuntimeError(f"graph input {v.name!r} expects {len(v.shape)} dims {list(v.shape)}, got shape "
                                   f"{list(t.shape)}")
            if t.dtype != v.dtype:
                raise RuntimeError(f"graph input {v.name!r} expects dtype {v.dtype}, got {t.dtype}")
            for d, (want, got) in enumerate(zip(v.shape, t.shape)):
                if isinstance(want, SymInt):
                    name = dims[d]
                    if env.setdefault(name, got) != got:
                        raise RuntimeError(f"graph input {v.name!r} dim {d} is the symbolic size {name!r}, which is "
                                           f"{env[name]} in an earlier input; got {got}")
                elif want != got:
                    why = f" (the graph is static: {self.static_reason})" if self.static_reason else ""
                    raise RuntimeError(f"graph input {v.name!r} expects size {want} at dim {d}, got shape "
                                       f"{list(t.shape)}{why}")
        return env

    # ---- views --------------------------------------------------------------------------------
    def values(self):
        """Every Value: inputs, constants, node outputs."""
        return self.inputs + self.consts + [o for n in self.nodes for o in n.outputs]

    def output_values(self):
        return leaves(self.outputs, _is_value)

    def users(self):
        """{id(Value): [Node, ...]} reading each Value."""
        out = {}
        for n in self.nodes:
            for v in n.inputs:
                out.setdefault(id(v), []).append(n)
        return out

    def to_networkx(self):
        """A networkx.DiGraph: one vertex per input, constant and node (keyed by name, with
        kind, op, shape(s), dtype(s) and the Node or Value as data), one edge per Value read."""
        try:
            import networkx as nx
        except ModuleNotFoundError:
            raise ModuleNotFoundError("Graph.to_networkx() needs networkx: pip install 'rtx-graph[networkx]'",
                                      name="networkx") from None
        g = nx.DiGraph()
        for v in self.inputs + self.consts:
            g.add_node(v.name, kind=v.kind, op=v.kind, shape=v.shape, dtype=v.dtype.name, value=v)
        for n in self.nodes:
            g.add_node(n.name, kind=n.kind, op=n.op, shape=[o.shape for o in n.outputs],
                       dtype=[o.dtype.name for o in n.outputs], attrs=n.attrs, group=n.group, node=n)
            for v in n.inputs:
                src = v.node.name if v.kind == "node" else v.name
                g.add_edge(src, n.name, value=v.name, shape=v.shape)
        for i, v in enumerate(self.output_values()):
            name = f"output_{i}"
            g.add_node(name, kind="output", op="output", shape=v.shape, dtype=v.dtype.name, value=v)
            g.add_edge(v.node.name if v.kind == "node" else v.name, name, value=v.name, shape=v.shape)
        return g

    def draw(self, path, *, fmt=None):
        """Write the graph as Graphviz DOT (always) and, for a .svg/.png path, render it with
        Graphviz's `dot` when installed, else with matplotlib over networkx. Returns the paths."""
        from rtx.graph.draw import draw
        return draw(self, path, fmt=fmt)

    # ---- passes (in place; each returns how much it changed) -----------------------------------
    def eliminate_dead_code(self):
        from rtx.graph.passes import eliminate_dead_code
        return eliminate_dead_code(self)

    def fold_constants(self, *, fold_parameters=True):
        from rtx.graph.passes import fold_constants
        return fold_constants(self, fold_parameters=fold_parameters)

    def eliminate_common_subexpressions(self):
        from rtx.graph.passes import eliminate_common_subexpressions
        return eliminate_common_subexpressions(self)

    def fuse_elementwise(self):
        from rtx.graph.fusion import fuse_elementwise
        return fuse_elementwise(self)

    def optimize(self):
        """DCE, constant folding, CSE, DCE again, then elementwise fusion. Returns self."""
        self.eliminate_dead_code()
        self.fold_constants()
        self.eliminate_common_subexpressions()
        self.eliminate_dead_code()
        self.fuse_elementwise()
        return self

    # ---- text -----------------------------------------------------------------------------------
    def __repr__(self):
        lines = ["graph(" + ", ".join(map(repr, self.inputs)) + "):"]
        lines += [f"  {n!r}" + (f"  # group {n.group}" if n.group is not None else "") for n in self.nodes]
        lines.append("  return " + repr(map_structure(self.outputs, lambda v: "%" + v.name, _is_value)))
        return "\n".join(lines)

    def op_counts(self):
        out = {}
        for n in self.nodes:
            out[n.op] = out.get(n.op, 0) + 1
        return out


def _full(c, env):
    import rtx
    if isinstance(c.fill, SymArange):
        return rtx.from_numpy(c.fill.array(env)).to(c.device)
    shape = tuple(d.evaluate(env) if isinstance(d, SymInt) else d for d in c.shape)
    return rtx.full(shape, c.fill, dtype=c.dtype, device=c.device)
