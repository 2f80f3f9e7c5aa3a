"""Elementwise fusion: chains of elementwise ops whose intermediate results are read by nothing
else form a group that runs as one kernel.

A group is compiled to an expression over its external inputs. A group that is a bias add
followed by an activation runs as rtx.kernel.bias_act (one fused kernel on CPU and CUDA).
Any other group runs, on CUDA, as one CuPy ElementwiseKernel generated from the expression;
on the CPU, as the expression evaluated with NumPy ufuncs (the reference the CUDA source is
generated from; NumPy has no fused path, so there it saves only the Tensor bookkeeping).
While a gradient is being recorded the group's nodes run one by one instead, so autograd
sees every Primitive."""
from __future__ import annotations

import math

import numpy as np

from rtx.extend import grad_mode, raw, wrap
from rtx.graph.symbolic import SymInt

# op name -> (number of tensor-or-scalar operands, NumPy function, C expression template)
_SIG = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731


def _gelu(a, approximate):
    from rtx import kernel
    return kernel.gelu(a, approximate=approximate)


OPS = {
    "add": (2, np.add, "({0} + {1})"),
    "sub": (2, np.subtract, "({0} - {1})"),
    "mul": (2, np.multiply, "({0} * {1})"),
    "div": (2, np.true_divide, "({0} / {1})"),
    "maximum": (2, np.maximum, "max({0}, {1})"),
    "minimum": (2, np.minimum, "min({0}, {1})"),
    "neg": (1, np.negative, "(-{0})"),
    "exp": (1, np.exp, "exp({0})"),
    "log": (1, np.log, "log({0})"),
    "sqrt": (1, np.sqrt, "sqrt({0})"),
    "rsqrt": (1, lambda a: 1 / np.sqrt(a), "rsqrt({0})"),
    "abs": (1, np.abs, "abs({0})"),
    "tanh": (1, np.tanh, "tanh({0})"),
    "sigmoid": (1, _SIG, "(1 / (1 + exp(-{0})))"),
    "relu": (1, lambda a: np.maximum(a, 0), "max({0}, (T)0)"),
    "silu": (1, lambda a: a * _SIG(a), "({0} / (1 + exp(-{0})))"),
}
# bias_act's activations, by the op that follows the bias add
_ACTS = {"relu": "relu", "silu": "silu", "tanh": "tanh", "sigmoid": "sigmoid"}


def is_elementwise(node):
    if node.kind != "primitive":
        return False
    if node.op == "gelu":
        return True
    return node.op in OPS and not node.attrs


def fuse_elementwise(graph):
    """Mark groups of at least two connected elementwise nodes (node.group = id) where every
    intermediate output is read only inside the group and is not a graph output; record them
    in graph.fusion_groups. Returns the number of groups."""
    for n in graph.nodes:
        n.group = None
    users = graph.users()
    outputs = {id(v) for v in graph.output_values()}
    members = {}
    next_id = 0
    for n in graph.nodes:
        if not is_elementwise(n):
            continue
        joined = None
        for v in n.inputs:
            p = v.node if v.kind == "node" else None
            if p is None or not is_elementwise(p) or id(v) in outputs:
                continue
            if len({id(u) for u in users.get(id(v), [])}) != 1 or p.group == n.group is not None:
                continue
            if p.group is None:
                p.group = next_id
                members[next_id] = [p]
                next_id += 1
            if joined is None:
                joined = p.group
                n.group = joined
                members[joined].append(n)
            elif p.group != joined:
                # n joins two chains: merge the later group into the first
                old = p.group
                for m in members.pop(old):
                    m.group = joined
                    members[joined].append(m)
    order = {id(n): i for i, n in enumerate(graph.nodes)}
    graph.fusion_groups = {}
    for gid, nodes in members.items():
        nodes.sort(key=lambda m: order[id(m)])
        graph.fusion_groups[gid] = FusedGroup(gid, nodes)
    # a group runs where its last node stands: move its nodes together there
    _cluster(graph)
    return len(graph.fusion_groups)


def _cluster(graph):
    """Reorder so each group's nodes are contiguous at its last member's place (legal: a
    member's external inputs are all computed before the first member in topological order,
    and its intermediates are read only inside the group)."""
    out, pending = [], {}
    last = {g.id: g.nodes[-1] for g in graph.fusion_groups.values()}
    for n in graph.nodes:
        if n.group is None:
            out.append(n)
        elif n is last[n.group]:
            out.extend(pending.pop(n.group, []))
            out.append(n)
        else:
            pending.setdefault(n.group, []).append(n)
    graph.nodes = out


class FusedGroup:
    """nodes (topological) -> one expression over the group's external inputs."""

    def __init__(self, gid, nodes):
        self.id, self.nodes = gid, nodes
        inside = {id(o) for n in nodes for o in n.outputs}
        self.inputs = []
        for n in nodes:
            for v in n.inputs:
                if id(v) not in inside and all(v is not w for w in self.inputs):
                    self.inputs.append(v)
        self.output = nodes[-1].outputs[0]
        self.bias_act = self._match_bias_act()
        self._cuda = None

    def _match_bias_act(self):
        if len(self.nodes) != 2:
            return None
        add, act = self.nodes
        if add.op != "add" or not (act.op in _ACTS or act.op == "gelu"):
            return None
        x, b = add.args
        if not all(getattr(v, "kind", None) in ("input", "node", "const") for v in (x, b)):
            return None
        if len(b.shape) != 1 or not x.shape or b.shape[0] != x.shape[-1] or isinstance(b.shape[0], SymInt):
            return None
        if act.op == "gelu":
            name = "gelu" if act.attrs.get("approximate", "none") == "none" else "gelu_tanh"
        else:
            name = _ACTS[act.op]
        return x, b, name

    def expression(self):
        """The group as C source over in0, in1, ... (for the CUDA kernel), and the reference."""
        names = {id(v): f"in{i}" for i, v in enumerate(self.inputs)}
        for n in self.nodes:
            if n.op == "gelu":
                a = _operand(n.args[0], names)
                if n.attrs.get("approximate", "none") == "none":
                    src = f"(0.5 * {a} * (1 + erf({a} * 0.7071067811865476)))"
                else:
                    src = (f"(0.5 * {a} * (1 + tanh(0.7978845608028654 * ({a} + 0.044715 * {a} * {a} * {a}))))")
            else:
                arity, _, tmpl = OPS[n.op]
                src = tmpl.format(*[_operand(x, names) for x in n.args[:arity]])
            names[id(n.outputs[0])] = src
        return names[id(self.output)]

    def evaluate(self, arrays):
        """The NumPy (or CuPy, through NumPy's dispatch) evaluation of the expression."""
        env = {id(v): a for v, a in zip(self.inputs, arrays)}
        for n in self.nodes:
            args = [env[id(x)] if id(x) in env else x for x in n.args]
            if n.op == "gelu":
                out = _gelu(args[0], n.attrs.get("approximate", "none"))
            else:
                arity, fn, _ = OPS[n.op]
                out = fn(*args[:arity])
            dt = n.outputs[0].dtype
            env[id(n.outputs[0])] = np.asarray(out).astype(_np_dtype(dt), copy=False) \
                if isinstance(out, (np.ndarray, np.generic)) else out.astype(_np_dtype(dt), copy=False)
        return env[id(self.output)]

    def run(self, arrays):
        if self.bias_act is not None:
            from rtx import kernel
            x, b, act = self.bias_act
            ia = {id(v): a for v, a in zip(self.inputs, arrays)}
            if id(x) in ia and id(b) in ia and ia[id(x)].dtype == ia[id(b)].dtype:
                return kernel.bias_act(ia[id(x)], ia[id(b)], act)
        if arrays and type(arrays[0]).__module__.startswith("cupy"):
            return self._run_cuda(arrays)
        return self.evaluate(arrays)

    def _run_cuda(self, arrays):  # pragma: no cover - needs a GPU
        import cupy
        if self._cuda is None:
            params = ", ".join(f"T in{i}" for i in range(len(self.inputs)))
            self._cuda = cupy.ElementwiseKernel(params, "T out", f"out = {self.expression()}",
                                                f"rtx_graph_fused_{self.id}")
        dt = arrays[0].dtype
        arrays = [a if a.dtype == dt else a.astype(dt) for a in arrays]
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        return self._cuda(*[cupy.broadcast_to(a, shape) for a in arrays])


def _operand(x, names):
    if id(x) in names:
        return names[id(x)]
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, (int, float)):
        return repr(float(x)) if math.isfinite(x) else ("INFINITY" if x > 0 else "-INFINITY")
    raise TypeError(f"cannot fuse an operand of type {type(x).__name__}")


def _np_dtype(dt):
    return dt.np


def run_group(group, vals, env):
    """Run a fused group inside Graph.__call__: one kernel, or node by node while recording grads."""
    tensors = [vals[id(v)] for v in group.inputs]
    if grad_mode.enabled and any(t.requires_grad for t in tensors):
        for n in group.nodes:
            args = [vals[id(x)] if id(x) in vals else x for x in n.args]
            out = n.run(args, n.attrs)
            vals[id(n.outputs[0])] = out[0]
        return
    vals[id(group.output)] = wrap(group.run([raw(t) for t in tensors]))
