"""Graph passes, each in place, each returning how many nodes it changed: dead-code
elimination, constant folding, common-subexpression elimination. (Elementwise fusion is in
fusion.py.) Primitives are pure functions of their inputs and attributes, which is what makes
these rewrites safe; leaf-module nodes are left alone except by dead-code elimination."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.extend import raw
from rtx.graph._pytree import map_structure
from rtx.graph.ir import ArrayOf, Value
from rtx.graph.symbolic import SymArange, SymInt, SymSlice, has_symbols


def _unfuse(graph):
    """Passes that rewrite nodes drop the fusion marks (run fuse_elementwise again after)."""
    for n in graph.nodes:
        n.group = None
    graph.fusion_groups = {}


def replace_all_uses(graph, old, new):
    """Every read of Value `old` (by nodes and the graph's outputs) now reads `new`."""
    for n in graph.nodes:
        if any(v is old for v in n.inputs):
            n.replace_input(old, new)
    graph.outputs = map_structure(graph.outputs, lambda v: new if v is old else v, lambda x: isinstance(x, Value))


def eliminate_dead_code(graph):
    """Drop nodes whose outputs nothing reads (transitively from the graph's outputs), and
    constants nothing reads. Returns the number of nodes removed."""
    live = {id(v) for v in graph.output_values()}
    kept = []
    for n in reversed(graph.nodes):
        if any(id(o) in live for o in n.outputs):
            kept.append(n)
            live.update(id(v) for v in n.inputs)
    removed = len(graph.nodes) - len(kept)
    graph.nodes = kept[::-1]
    graph.consts = [c for c in graph.consts if id(c) in live]
    if removed:
        _unfuse(graph)
    return removed


def fold_constants(graph, *, fold_parameters=True):
    """Run every node whose inputs are all constants now, and make its outputs constants.
    fold_parameters=False keeps nodes that read a module parameter or buffer (so the graph
    still sees later changes to the weights). Nodes with symbolic attributes, leaf modules and
    symbolic-shape constants are kept. Returns the number of nodes folded."""
    folded = 0
    kept = []
    for n in graph.nodes:
        ins = n.inputs
        foldable = (n.kind == "primitive" and all(v.kind == "const" and v.fill is None for v in ins)
                    and (fold_parameters or not any(v.is_parameter for v in ins))
                    and not has_symbols(n.args) and not has_symbols(n.attrs)
                    and not getattr(n.target, "random", False))
        if not foldable:
            kept.append(n)
            continue
        args = map_structure(n.args, lambda v: v.tensor, lambda x: isinstance(x, Value))
        attrs = map_structure(n.attrs, lambda a: raw(a.value.tensor), lambda x: isinstance(x, ArrayOf))
        with rtx.no_grad():
            outs = n.run(args, attrs)
        for v, t in zip(n.outputs, outs):
            c = Value(f"_const_{v.name}", "const", tuple(t.shape), t.dtype, tensor=t, device=t.device)
            graph.consts.append(c)
            replace_all_uses(graph, v, c)
        folded += 1
    graph.nodes = kept
    if folded:
        graph.consts = [c for c in graph.consts if _read(graph, c)]
        _unfuse(graph)
    return folded


def _read(graph, c):
    return any(v is c for n in graph.nodes for v in n.inputs) or any(v is c for v in graph.output_values())


def _key(obj, depth=0):
    """A hashable stand-in for an argument or attribute (TypeError where there is none)."""
    if isinstance(obj, Value):
        return ("v", id(obj))
    if isinstance(obj, ArrayOf):
        return ("a", id(obj.value))
    if isinstance(obj, np.ndarray):
        return ("nd", obj.shape, obj.dtype.str, obj.tobytes())
    if isinstance(obj, (SymInt, SymSlice, SymArange)):
        return ("s", repr(obj))
    if isinstance(obj, float) and obj != obj:
        return ("nan",)
    if isinstance(obj, (int, float, complex, str, bytes, bool, type(None), np.generic, np.dtype, type)):
        return (type(obj).__name__, obj)
    if isinstance(obj, slice):
        return ("sl", _key(obj.start), _key(obj.stop), _key(obj.step))
    if depth > 8:
        raise TypeError("too deep")
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__,) + tuple(_key(o, depth + 1) for o in obj)
    if isinstance(obj, dict):
        return ("d",) + tuple(sorted((k, _key(v, depth + 1)) for k, v in obj.items()))
    fields = list(vars(obj)) if hasattr(obj, "__dict__") else \
        [s for k in type(obj).__mro__ for s in getattr(k, "__slots__", ()) if hasattr(obj, s)]
    if not fields:
        raise TypeError(f"no key for {type(obj).__name__}")
    return (type(obj).__name__,) + tuple((f, _key(getattr(obj, f), depth + 1)) for f in fields)


def eliminate_common_subexpressions(graph):
    """Merge nodes that apply the same Primitive to the same inputs with equal attributes.
    Returns the number of nodes merged away."""
    seen = {}
    kept = []
    merged = 0
    for n in graph.nodes:
        key = None
        if n.kind == "primitive" and not getattr(n.target, "random", False):
            try:
                key = (id(n.target), _key(n.args), _key(n.attrs))
            except TypeError:
                key = None
        first = seen.get(key) if key is not None else None
        if first is None:
            if key is not None:
                seen[key] = n
            kept.append(n)
            continue
        for old, new in zip(n.outputs, first.outputs):
            replace_all_uses(graph, old, new)
        merged += 1
    graph.nodes = kept
    if merged:
        _unfuse(graph)
    return merged
