"""fx.Graph: an ordered list of Nodes with torch.fx's building, editing and printing API, and
the Python source a GraphModule runs (generated from the graph, exec'd by recompile())."""
from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
from contextlib import contextmanager
from dataclasses import dataclass

from rtx.fx.node import Node, _target_str, map_arg

# operator functions written infix in the generated code
_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>",
           operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">",
           operator.ge: ">="}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


@dataclass
class PythonCode:
    src: str
    globals: dict


class Graph:
    def __init__(self):
        self._nodes = []
        self._names = set()
        self._insert = None     # None: append; else a callable giving the insertion index
        self.owning_module = None

    @property
    def nodes(self):
        """The nodes in order (a copy: editing the graph while iterating it is safe)."""
        return list(self._nodes)

    # ---- building ------------------------------------------------------------------------
    def _unique(self, candidate):
        base = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate).strip("_") or "node"
        if base[0].isdigit():
            base = "_" + base
        name, i = base, 1
        while name in self._names or keyword.iskeyword(name) or hasattr(builtins, name) or name == "self":
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        if name is None:
            name = target if isinstance(target, str) else getattr(target, "__name__", "node")
            name = name.replace(".", "_")
        node = Node(self, self._unique(name), op, target, args or (), kwargs or {})
        i = len(self._nodes) if self._insert is None else self._insert()
        self._nodes.insert(i, node)
        return node

    def placeholder(self, name, type_expr=None, default_value=None):
        n = self.create_node("placeholder", name, name=name)
        if default_value is not None:
            n.args = (default_value,)
        return n

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), name="output")

    def node_copy(self, node, arg_transform=lambda n: n):
        """A copy of `node` (from another graph) in this one, its inputs mapped by arg_transform."""
        return self.create_node(node.op, node.target, map_arg(node.args, arg_transform),
                                map_arg(node.kwargs, arg_transform), name=node.name)

    # ---- editing -------------------------------------------------------------------------
    @contextmanager
    def inserting_before(self, node=None):
        """New nodes go just before `node` (None: at the start), in creation order."""
        prev = self._insert
        self._insert = (lambda: self._nodes.index(node)) if node is not None else (lambda: 0)
        try:
            yield
        finally:
            self._insert = prev

    @contextmanager
    def inserting_after(self, node=None):
        """New nodes go just after `node` (None: at the end), each after the one made before."""
        prev = self._insert
        last = [node]

        def where():
            if last[0] is None:
                return len(self._nodes)
            return self._nodes.index(last[0]) + 1
        self._insert = where
        made = self.create_node

        def create_node(*a, **k):
            n = made(*a, **k)
            last[0] = n
            return n
        self.create_node = create_node
        try:
            yield
        finally:
            self._insert = prev
            del self.create_node

    def erase_node(self, node):
        if node.users:
            raise RuntimeError(f"tried to erase node {node.name} but it still has {len(node.users)} user(s): "
                               f"{list(node.users)}; replace its uses first (node.replace_all_uses_with)")
        node._update((), {})
        self._nodes.remove(node)
        self._names.discard(node.name)

    def eliminate_dead_code(self):
        """Erase nodes whose result nobody uses (not placeholders, the output, or in-place
        method calls such as `x.add_(y)`). Returns whether anything changed."""
        changed = False
        for node in reversed(self._nodes):
            if node.op in ("placeholder", "output") or node.users:
                continue
            if node.op == "call_method" and node.target.endswith("_") and not node.target.endswith("__"):
                continue
            self.erase_node(node)
            changed = True
        return changed

    def lint(self):
        """Check the invariants: every input is defined earlier in this graph, names are unique,
        users match the arguments, one output node at the end."""
        seen = set()
        names = set()
        for n in self._nodes:
            if n.graph is not self:
                raise RuntimeError(f"node {n.name} belongs to another graph")
            if n.name in names:
                raise RuntimeError(f"node name {n.name} is used twice")
            names.add(n.name)
            for a in n.all_input_nodes:
                if a not in seen:
                    raise RuntimeError(f"node {n.name} reads {a.name}, which is not defined before it in the graph")
                if n not in a.users:
                    raise RuntimeError(f"node {a.name}'s users miss {n.name}")
            for u in n.users:
                if n not in u.all_input_nodes:
                    raise RuntimeError(f"node {u.name} is listed as a user of {n.name} but does not read it")
            seen.add(n)
        outputs = [n for n in self._nodes if n.op == "output"]
        if len(outputs) > 1 or (outputs and outputs[0] is not self._nodes[-1]):
            raise RuntimeError("a graph has at most one output node, and it is last")

    # ---- code ----------------------------------------------------------------------------
    def python_code(self, root_module="self"):
        """The `forward` this graph stands for, as Python source and the globals it needs."""
        globs = {"operator": operator, "math": math}
        names = {}

        def glob(obj, hint):
            for k, v in globs.items():
                if v is obj:
                    return k
            base = re.sub(r"\W", "_", hint) or "obj"
            name, i = base, 0
            while name in globs or name in self._names:
                i += 1
                name = f"{base}_{i}"
            globs[name] = obj
            return name

        def fmt(a):
            if isinstance(a, Node):
                return a.name
            if type(a) in (int, str, bool) or a is None:
                return repr(a)
            if type(a) is float:
                return repr(a) if math.isfinite(a) else f"float({str(a)!r})"
            if a is Ellipsis:
                return "..."
            if isinstance(a, tuple) and not hasattr(a, "_fields"):
                inner = ", ".join(fmt(x) for x in a)
                return f"({inner},)" if len(a) == 1 else f"({inner})"
            if isinstance(a, list):
                return "[" + ", ".join(fmt(x) for x in a) + "]"
            if isinstance(a, dict) and all(type(k) is str for k in a):
                return "{" + ", ".join(f"{k!r}: {fmt(v)}" for k, v in a.items()) + "}"
            if isinstance(a, slice):
                return f"slice({fmt(a.start)}, {fmt(a.stop)}, {fmt(a.step)})"
            return glob(a, type(a).__name__.lower())

        def call_args(args, kwargs):
            parts = [fmt(a) for a in args] + [f"{k}={fmt(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        params, body = [], []
        for n in self._nodes:
            names[n] = n.name
            if n.op == "placeholder":
                params.append(n.name if not n.args else f"{n.name}={fmt(n.args[0])}")
                continue
            if n.op == "output":
                body.append(f"return {fmt(n.args[0])}")
                continue
            if n.op == "get_attr":
                rhs = _path(root_module, n.target)
            elif n.op == "call_module":
                rhs = f"{_path(root_module, n.target)}({call_args(n.args, n.kwargs)})"
            elif n.op == "call_method":
                obj, *rest = n.args
                rhs = f"{fmt(obj)}.{n.target}({call_args(rest, n.kwargs)})"
            elif n.target in _BINARY and len(n.args) == 2 and not n.kwargs:
                rhs = f"{fmt(n.args[0])} {_BINARY[n.target]} {fmt(n.args[1])}"
            elif n.target in _UNARY and len(n.args) == 1 and not n.kwargs:
                rhs = f"{_UNARY[n.target]}{fmt(n.args[0])}"
            elif n.target is operator.getitem and len(n.args) == 2 and not n.kwargs:
                rhs = f"{fmt(n.args[0])}[{fmt(n.args[1])}]"
            elif n.target is builtins.getattr and len(n.args) == 2 and isinstance(n.args[1], str) \
                    and n.args[1].isidentifier():
                rhs = f"{fmt(n.args[0])}.{n.args[1]}"
            else:
                fn = n.target
                rhs = f"{glob(fn, getattr(fn, '__name__', 'fn'))}({call_args(n.args, n.kwargs)})"
            body.append(f"{n.name} = {rhs}")
        if not body or not body[-1].startswith("return"):
            body.append("return None")
        src = f"def forward({', '.join([root_module] + params)}):\n" + "".join(f"    {line}\n" for line in body)
        return PythonCode(src, globs)

    # ---- printing ------------------------------------------------------------------------
    def print_tabular(self):
        """Print the nodes as a table (opcode, name, target, args, kwargs), as torch.fx does."""
        rows = [[n.op, n.name, _target_str(n.target), _short(n.args), _short(n.kwargs)] for n in self._nodes]
        head = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
        line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
        print("\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]))

    def __str__(self):
        params = ", ".join(n.name for n in self._nodes if n.op == "placeholder")
        return f"graph({params}):\n" + "\n".join("    " + n.format_node() for n in self._nodes)

    __repr__ = __str__


def _path(root, target):
    out = root
    for atom in target.split("."):
        out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) else f"getattr({out}, {atom!r})"
    return out


def _short(a):
    from rtx.fx.node import _fmt
    return _fmt(a)
