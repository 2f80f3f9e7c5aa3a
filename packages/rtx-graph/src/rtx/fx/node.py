"""fx.Node: one operation of an fx Graph, with torch.fx's fields (op, target, args, kwargs,
users) and editing API."""
from __future__ import annotations

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def map_arg(a, fn):
    """a with fn applied to every Node inside its tuples, lists, dicts and slices."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple) and hasattr(a, "_fields"):  # a namedtuple
        return type(a)(*(map_arg(x, fn) for x in a))
    if isinstance(a, (tuple, list)):
        return type(a)(map_arg(x, fn) for x in a)
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_arg(a.start, fn), map_arg(a.stop, fn), map_arg(a.step, fn))
    return a


def _target_str(target):
    """A function's public spelling: operator.add, rtx.relu, rtx.nn.functional.relu, ..."""
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", repr(target))
    import sys
    for mod in ("operator", "builtins", "math", "rtx", "rtx.nn.functional"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, name, None) is target:
            return f"{mod}.{name}"
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', name)}"


class Node:
    """op: one of placeholder, get_attr, call_function, call_method, call_module, output.
    target: the argument name, attribute path, function, method name or submodule path."""

    def __init__(self, graph, name, op, target, args, kwargs):
        if op not in OPS:
            raise ValueError(f"unknown node op {op!r}; expected one of {', '.join(OPS)}")
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.users = {}   # Node -> None, in insertion order (torch.fx's dict-as-ordered-set)
        self.meta = {}
        self._args, self._kwargs = (), {}
        self._update(tuple(args), dict(kwargs))

    # ---- arguments and users -------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, value):
        self._update(tuple(value), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._update(self._args, dict(value))

    def _update(self, args, kwargs):
        for n in self.all_input_nodes:
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        for n in self.all_input_nodes:
            n.users[self] = None

    @property
    def all_input_nodes(self):
        """The Nodes this node reads, each once, in order of appearance."""
        seen = {}
        map_arg((self._args, self._kwargs), lambda n: seen.setdefault(n, None))
        return list(seen)

    def update_arg(self, i, value):
        args = list(self._args)
        args[i] = value
        self.args = args

    def replace_input_with(self, old, new):
        """Read `new` wherever this node read `old`."""
        self._update(map_arg(self._args, lambda n: new if n is old else n),
                     map_arg(self._kwargs, lambda n: new if n is old else n))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True):
        """Make every user (for which delete_user_cb is true) read `replace_with` instead of
        this node; returns the users changed."""
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for u in changed:
            u.replace_input_with(self, replace_with)
        return changed

    # ---- position ------------------------------------------------------------------------
    @property
    def next(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i + 1] if i + 1 < len(nodes) else None

    @property
    def prev(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i - 1] if i else None

    def prepend(self, x):
        """Move node x to just before this node."""
        nodes = self.graph._nodes
        nodes.remove(x)
        nodes.insert(nodes.index(self), x)

    def append(self, x):
        """Move node x to just after this node."""
        nodes = self.graph._nodes
        nodes.remove(x)
        nodes.insert(nodes.index(self) + 1, x)

    # ---- text ----------------------------------------------------------------------------
    def format_node(self):
        """torch.fx's one-line form, e.g.
        `%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})`."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self._args[0])}"
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={_target_str(self.target)}]"
                f"(args = {_fmt(self._args)}, kwargs = {_fmt(self._kwargs)})")

    def __repr__(self):
        return self.name


def _fmt(a):
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, tuple):
        inner = ", ".join(_fmt(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in a.items()) + "}"
    return repr(a)
