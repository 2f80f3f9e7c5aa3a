"""symbolic_trace: run a module's forward on Proxy objects, as torch.fx does, recording one Node
per leaf-module call (call_module), rtx function (call_function), tensor method (call_method)
and Python operator (call_function on operator.*); parameters read directly become get_attr.

Leaf modules (the layers of rtx.nn, not containers) are recorded whole; other modules are
traced through. Submodule calls are routed by a wrapper on each module instance's `forward`,
and the functions of `rtx` and `rtx.nn.functional` by wrappers in those namespaces; both act
only on calls that receive a Proxy, so other threads calling the same code meanwhile are
unaffected. A name bound before tracing (`from rtx import relu`) is not seen: call it through
its module (`rtx.relu`, `F.relu`), as torch.fx needs `torch.relu` or a wrap() declaration."""
from __future__ import annotations

import inspect
import operator
import threading
import types

import rtx
from rtx.fx.graph import Graph
from rtx.fx.node import Node, map_arg


class TraceError(RuntimeError):
    pass


class Proxy:
    """Stands for a Node's value while tracing; operations on it record Nodes."""

    def __init__(self, node, tracer):
        self.node, self.tracer = node, tracer

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __getitem__(self, key):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, key), {})

    def __iter__(self):
        raise TraceError(f"Proxy {self.node.name} cannot be iterated while tracing (its length is not known "
                         "symbolically); index it instead, or make the module a leaf")

    def __bool__(self):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow "
                         f"({self.node.name} was tested for truth)")

    def __len__(self):
        raise TraceError(f"len() of Proxy {self.node.name} is not known while tracing; use .size()")


class _Attribute(Proxy):
    """`proxy.name`: a call_method when called, else a getattr node (made on first use)."""

    def __init__(self, root, attr):
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _magic(op):
    def forward(self, *others):
        return self.tracer.create_proxy("call_function", op, (self,) + others, {})
    return forward


def _reflected(op):
    def backward(self, other):
        return self.tracer.create_proxy("call_function", op, (other, self), {})
    return backward


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(Proxy, f"__{_name}__", _magic(_op))
    setattr(Proxy, f"__r{_name}__", _reflected(_op))
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _magic(getattr(operator, _name) if _name != "abs" else abs))


def _has_proxy(args, kwargs):
    found = []

    def see(x):
        if isinstance(x, Proxy):
            found.append(x)
        elif isinstance(x, (tuple, list)):
            for y in x:
                see(y)
        elif isinstance(x, dict):
            for y in x.values():
                see(y)
    see(args)
    see(kwargs)
    return found[0] if found else None


# ---- function wrappers in rtx's namespaces (installed while any thread traces) -----------------

_patch_lock = threading.Lock()
_patch_count = [0]
_patched = []   # (module, name, original)


def _namespaces():
    import rtx.nn.functional as F
    return (rtx, F)


def _wrap(fn):
    def wrapper(*args, **kwargs):
        p = _has_proxy(args, kwargs)
        if p is None:
            return fn(*args, **kwargs)
        return p.tracer.create_proxy("call_function", fn, args, kwargs)
    wrapper.__wrapped__ = fn
    wrapper.__name__ = getattr(fn, "__name__", "fn")
    return wrapper


def _install():
    with _patch_lock:
        _patch_count[0] += 1
        if _patch_count[0] > 1:
            return
        for mod in _namespaces():
            for name, fn in list(vars(mod).items()):
                if name.startswith("_") or not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
                    continue
                _patched.append((mod, name, fn))
                setattr(mod, name, _wrap(fn))


def _uninstall():
    with _patch_lock:
        _patch_count[0] -= 1
        if _patch_count[0]:
            return
        for mod, name, fn in reversed(_patched):
            setattr(mod, name, fn)
        _patched.clear()


class Tracer:
    """Records a function or module into a Graph. Override is_leaf_module to choose which
    submodules become call_module nodes."""

    def __init__(self):
        self.graph = None
        self.root = None

    def is_leaf_module(self, m, module_qualified_name):
        import rtx.nn as nn
        return type(m).__module__.startswith("rtx.nn") and not isinstance(m, (nn.Sequential, nn.ModuleList,
                                                                                nn.ModuleDict))

    def create_proxy(self, kind, target, args, kwargs, name=None):
        node = self.graph.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name=name)
        return Proxy(node, self)

    def create_arg(self, a):
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and not hasattr(a, "_fields"):
            return tuple(self.create_arg(x) for x in a)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, rtx.Tensor):
            return self._tensor_attr(a)
        return a

    def _tensor_attr(self, t):
        """A parameter or buffer of the root read directly: get_attr; another tensor: a constant
        attribute `_tensor_constant<k>` on the root."""
        for name, p in list(self.root.named_parameters()) + list(self.root.named_buffers()):
            if p is t:
                return self.graph.get_attr(name)
        k = len(self._constants)
        name = f"_tensor_constant{k}"
        self._constants[name] = t
        return self.graph.get_attr(name)

    def trace(self, root, concrete_args=None):
        import rtx.nn as nn
        if isinstance(root, nn.Module):
            self.root, fn = root, type(root).forward
        else:
            self.root, fn = nn.Module(), root
        self.graph = Graph()
        self._constants = {}
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if isinstance(root, nn.Module):
            params = params[1:]
        args = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace cannot trace *args/**kwargs ({p.name}); give named parameters")
            if concrete_args and p.name in concrete_args:
                args.append(concrete_args[p.name])
            else:
                default = () if p.default is p.empty else (p.default,)
                node = self.graph.placeholder(p.name, default_value=default[0] if default else None)
                args.append(Proxy(node, self))
        wrapped = self._route_modules(root) if isinstance(root, nn.Module) else []
        _install()
        try:
            out = fn(root, *args) if isinstance(root, nn.Module) else fn(*args)
        finally:
            _uninstall()
            for d in wrapped:
                d.pop("forward", None)
        self.graph.output(self.create_arg(out))
        for name, t in self._constants.items():
            setattr(self.root, name, t)
        return self.graph

    def _route_modules(self, root):
        """Wrap each submodule's forward (instance attribute): a call receiving a Proxy becomes a
        call_module node (leaf) or is traced through; any other call runs as usual."""
        names = {id(m): n for n, m in root.named_modules()}
        wrapped = []
        for m in root.modules():
            if m is root:
                continue
            name = names[id(m)]
            forward = m.forward
            leaf = self.is_leaf_module(m, name)

            def routed(*args, _f=forward, _name=name, _leaf=leaf, **kwargs):
                p = _has_proxy(args, kwargs)
                if p is None or not _leaf:
                    return _f(*args, **kwargs)
                return p.tracer.create_proxy("call_module", _name, args, kwargs)
            m.__dict__["forward"] = routed
            wrapped.append(m.__dict__)
        return wrapped


def symbolic_trace(root, concrete_args=None):
    """A GraphModule recording `root` (an nn.Module or a function of tensors)."""
    from rtx.fx.graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if hasattr(root, "forward") else getattr(root, "__name__", "GraphModule")
    return GraphModule(tracer.root, graph, name)


__all__ = ["Proxy", "Tracer", "TraceError", "symbolic_trace", "Node", "map_arg"]
