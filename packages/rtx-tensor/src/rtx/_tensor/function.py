"""Primitive: the base of every built-in op. forward(ctx, *inputs, **attrs) computes on the
inputs' arrays and returns an array (or a tuple of arrays); backward(ctx, *grads) returns one
gradient per input, written in Tensor ops so that double backward works.

Fast path: when no input needs a gradient (or grad mode is off) no node is built and the
ctx handed to forward is a shared object that drops whatever is saved on it.
"""
from __future__ import annotations

import traceback

from rtx.autograd import graph
from rtx.autograd.grad_mode import _state


class _NoGraph:
    """The ctx when no graph is recorded: saving is free and keeps nothing alive."""

    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        pass

    def __setattr__(self, name, value):
        pass


NO_GRAPH = _NoGraph()

# Set by rtx.graph while it traces: called as _tracer(cls, inputs, attrs) instead of the op.
_tracer = None


class Primitive(graph.Node):
    # Output positions that never carry a gradient (indices, masks).
    non_differentiable_outputs = ()
    # Ops whose backward needs their own (first) output set this; backward calls ctx.output().
    saves_output = False
    _out = None
    # View ops: the output shares the input's memory, version counter and base.
    is_view = False

    def name(self) -> str:
        # PyTorch's spelling: MulBackward0, SumBackward0, ...
        return type(self).__name__.removesuffix("Backward") + "Backward0"

    @staticmethod
    def forward(ctx, *inputs, **attrs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs, **attrs):
        """Run the op on Tensors (or Python scalars, treated as constants)."""
        if _tracer is not None:
            return _tracer(cls, inputs, attrs)
        if _state.enabled:
            for t in inputs:
                if type(t) is Tensor and t.requires_grad:
                    return cls._apply_with_graph(inputs, attrs)
        out = cls.forward(NO_GRAPH, *inputs, **attrs)
        if type(out) is tuple:
            return tuple(Tensor._make(o) for o in out)
        result = Tensor._make(out)
        if cls.is_view:
            _share(result, inputs[0])
        return result

    @classmethod
    def _apply_with_graph(cls, inputs, attrs):
        ctx = cls.__new__(cls)
        needs = []
        edges = []
        for t in inputs:
            if type(t) is Tensor and t.requires_grad:
                needs.append(True)
                fn = t.grad_fn
                edges.append((fn, t._output_nr) if fn is not None else graph.edge_of(t))
            else:
                needs.append(False)
                edges.append(None)
        ctx.needs_input_grad = tuple(needs)
        ctx.next_edges = tuple(edges)
        if graph._anomaly[0]:
            ctx._anomaly_trace = traceback.format_stack()[:-2]
        out = cls.forward(ctx, *inputs, **attrs)
        if type(out) is tuple:
            nd = cls.non_differentiable_outputs
            results = tuple(Tensor._make(o) if i in nd else Tensor._make(o, ctx, i) for i, o in enumerate(out))
            ctx._out_meta = [(r.shape, r.dtype, r.device, Tensor) for r in results]
            return results
        result = Tensor._make(out, ctx, 0)
        if cls.is_view:
            _share(result, inputs[0])
        if cls.saves_output:
            # Keep the array and the version counter, not the Tensor: the output holds this
            # node as its grad_fn, and a node holding its output would be a reference cycle.
            ctx._out = (out, result._vc, result._vc[0])
        return result

    def output(self):
        """The op's output as seen by backward: rebuilt on the same data and, when backward
        itself is recorded (create_graph), attached to this node so double backward flows."""
        if self._out is None:
            _ = self.saved_tensors  # raises the freed-graph error if released
            raise RuntimeError(f"{self.name()} did not save its output")
        data, vc, version = self._out
        if vc[0] != version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: the output 0 of {self.name()} is at version {vc[0]}; expected version "
                f"{version} instead. Hint: do the in-place operation on a clone.")
        t = Tensor._make(data, self, 0) if _state.enabled else Tensor._make(data)
        t._vc = vc
        return t

    def _release(self):
        self._saved = None
        self._out = None
        self._released = True


def _share(view, base):
    # Only when the array really is a view (reshape may have had to copy).
    if view._data.base is not None:
        view._vc = base._vc
        view._base = base if base._base is None else base._base


from rtx._tensor.tensor import Tensor  # noqa: E402  (Tensor imports this module's names lazily)
