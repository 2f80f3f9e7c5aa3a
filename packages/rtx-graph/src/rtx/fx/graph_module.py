"""GraphModule: an nn.Module whose forward is Python generated from an fx Graph."""
from __future__ import annotations

import rtx.nn as nn
from rtx.fx.graph import Graph


def _get(root, path):
    for atom in path.split("."):
        root = getattr(root, atom)
    return root


def _copy_attr(src, dst, path):
    *parents, last = path.split(".")
    for atom in parents:
        s = getattr(src, atom)
        if not hasattr(dst, atom) or getattr(dst, atom) is None:
            setattr(dst, atom, nn.Module())
        src, dst = s, getattr(dst, atom)
    setattr(dst, last, getattr(src, last))


class GraphModule(nn.Module):
    """GraphModule(root, graph): the submodules and attributes the graph's call_module and
    get_attr nodes name are taken from root (a Module, or a dict {path: module or tensor});
    forward is the graph's generated code (`.code`). After editing `.graph`, call recompile()."""

    def __new__(cls, *args, **kwargs):
        # Each instance gets its own class, so its generated forward is its own.
        sub = type(cls.__name__, (cls,), {})
        return super().__new__(sub)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        for node in graph.nodes:
            if node.op in ("call_module", "get_attr"):
                if isinstance(root, dict):
                    value = root[node.target]
                    *parents, last = node.target.split(".")
                    dst = self
                    for atom in parents:
                        if not hasattr(dst, atom):
                            setattr(dst, atom, nn.Module())
                        dst = getattr(dst, atom)
                    setattr(dst, last, value)
                else:
                    _copy_attr(root, self, node.target)
        self._graph = graph
        graph.owning_module = self
        self.recompile()

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        self._graph = g
        g.owning_module = self
        self.recompile()

    def recompile(self):
        """Generate forward from the graph again (after the graph was edited)."""
        code = self._graph.python_code("self")
        namespace = dict(code.globals)
        exec(compile(code.src, f"<rtx.fx generated {type(self).__name__}>", "exec"), namespace)  # our own source
        type(self).forward = namespace["forward"]
        self._code = code.src
        return code

    @property
    def code(self):
        return self._code

    def print_readable(self, print_output=True):
        if print_output:
            print(self._code)
        return self._code

    def __str__(self):
        return super().__str__() + "\n\n" + self._code


def _module_of(gm, target):
    return _get(gm, target)


__all__ = ["GraphModule", "Graph"]
