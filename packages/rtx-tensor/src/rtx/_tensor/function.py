"""Primitive: the base of every built-in op. forward(ctx, *inputs, **attrs) computes on the
inputs' arrays and returns an array (or a tuple of arrays); backward(ctx, *grads) returns one
gradient per input, written in Tensor ops so that double backward works.

Fast path: when no input needs a gradient (or grad mode is off) no node is built and the
ctx handed to forward is a shared object that drops whatever is saved on it.

Op identity: every subclass has a stable `op` name ("add", "matmul", "softmax", ...), unique
across the process, so graph passes, compilers and exporters key on it instead of class names.
It comes from the class name (AbsBackward -> "abs", NativeLayerNorm -> "native_layer_norm";
a leading underscore stays, marking a private helper op), or from an explicit `op = "..."` in
the class body, or from `class Op(Primitive, op="...")` for classes made by a factory.

Recording: `recording(hook)` makes this thread's Primitive applications go to the hook (see
rtx.extend). It is thread-local: another thread's ops run and are recorded as if no hook existed.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

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

# ---- op identity ---------------------------------------------------------------------------------

_OPS = {}   # op name -> Primitive subclass


def _derived_name(class_name):
    """AbsBackward -> abs, NativeLayerNorm -> native_layer_norm, FftC2C -> fft_c2c, _Pick -> _pick."""
    base = class_name.removesuffix("Backward")
    lead = "_" if base.startswith("_") else ""
    base = base.lstrip("_")
    out = []
    for i, ch in enumerate(base):
        if ch.isupper() and i and (base[i - 1].islower()
                                   or (base[i - 1].isupper() and i + 1 < len(base) and base[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return lead + "".join(out)


def _register(cls, name):
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__qualname__}: a Primitive's op name must be a non-empty str, got {name!r}")
    old = _OPS.get(name)
    # The same module-level class defined again (importlib.reload) takes its name back.
    if old is not None and not (old.__module__ == cls.__module__ and old.__qualname__ == cls.__qualname__
                                and "<locals>" not in cls.__qualname__):
        raise TypeError(f"op name {name!r} of {cls.__module__}.{cls.__qualname__} is already taken by "
                        f"{old.__module__}.{old.__qualname__}; give one of them a distinct name with an "
                        f"`op = \"...\"` class attribute (or `class X(Primitive, op=\"...\")`)")
    cls.op = name
    _OPS[name] = cls


def op_name(cls):
    """The stable op name of a Primitive subclass (or of a node/ctx of one)."""
    c = cls if isinstance(cls, type) else type(cls)
    if not issubclass(c, Primitive) or c is Primitive:
        raise TypeError(f"op_name() expects a Primitive subclass, got {cls!r}")
    return c.op


def primitive(name):
    """The Primitive subclass registered under op name `name`."""
    try:
        return _OPS[name]
    except KeyError:
        import difflib  # only for this message: not worth its import at `import rtx`

        close = difflib.get_close_matches(str(name), list(_OPS), n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise KeyError(f"no Primitive is registered under the op name {name!r}{hint} (the ops of a package "
                       "are registered when it is imported)") from None


def registered_ops():
    """{op name: Primitive subclass} for every op registered so far, sorted by name."""
    return dict(sorted(_OPS.items()))


# ---- thread-local recording ----------------------------------------------------------------------

class _Recording(threading.local):
    hook = None


_local = _Recording()
# How many threads have a hook installed right now: while 0 (almost always), the hot paths pay
# one global read and no thread-local lookup.
_active = [0]
_active_lock = threading.Lock()


def current_hook():
    """This thread's recording hook, or None."""
    return _local.hook if _active[0] else None


@contextmanager
def recording(hook):
    """Within the block, this thread's Primitive applications call `hook.primitive(cls, inputs,
    attrs)` instead of running (the hook runs them, typically inside `recording(None)`, which
    suspends recording), its fast operator paths take the general path, and its in-place ops
    report to `hook.old_value(tensor, copy)` and `hook.write_result(tensor, result, write)`.
    Other threads are unaffected. Nests: the previous hook is restored on exit."""
    prev = _local.hook
    with _active_lock:
        _active[0] += 1
    _local.hook = hook
    try:
        yield hook
    finally:
        _local.hook = prev
        with _active_lock:
            _active[0] -= 1


class Primitive(graph.Node):
    # The stable op name (set for every subclass at class creation; see the module docstring).
    op = None
    # Output positions that never carry a gradient (indices, masks).
    non_differentiable_outputs = ()
    # Ops whose backward needs their own (first) output set this; backward calls ctx.output().
    saves_output = False
    _out = None
    # View ops: the output shares the input's memory, version counter and base.
    is_view = False

    def __init_subclass__(cls, op=None, **kwargs):
        super().__init_subclass__(**kwargs)
        _register(cls, op or cls.__dict__.get("op") or _derived_name(cls.__name__))

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
        if _active[0]:
            hook = _local.hook
            if hook is not None:
                return hook.primitive(cls, inputs, attrs)
        if _state.enabled:
            for t in inputs:
                if type(t) is Tensor and t.requires_grad:
                    return cls._apply_with_graph(inputs, attrs)
        out = cls.forward(NO_GRAPH, *inputs, **attrs)
        if type(out) is tuple:
            return tuple(_make(o) for o in out)
        result = _make(out)
        if cls.is_view:
            _share(result, inputs[0])
        return result

    @classmethod
    def _apply_with_graph(cls, inputs, attrs):
        ctx = _new(cls)
        needs = []
        edges = []
        for t in inputs:
            if type(t) is Tensor and t.requires_grad:
                needs.append(True)
                fn = t.grad_fn
                edges.append((fn, t._output_nr) if fn is not None else (_accumulator(t), 0))
            else:
                needs.append(False)
                edges.append(None)
        ctx.needs_input_grad = tuple(needs)
        ctx.next_edges = tuple(edges)
        if _anomaly[0]:
            import traceback  # anomaly mode only: kept out of `import rtx`

            ctx._anomaly_trace = traceback.format_stack()[:-2]
        out = cls.forward(ctx, *inputs, **attrs)
        if type(out) is tuple:
            nd = cls.non_differentiable_outputs
            results = tuple(_make(o) if i in nd else _make(o, ctx, i) for i, o in enumerate(out))
            ctx._out_meta = [(r.shape, r.dtype, r.device, Tensor) for r in results]
            return results
        result = _make(out, ctx, 0)
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
        t = _make(data, self, 0) if _state.enabled else _make(data)
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

# Module-level names for the per-op hot path: one global lookup each instead of an attribute chain.
_make = Tensor._make
_new = object.__new__
_accumulator = graph.grad_accumulator
_anomaly = graph._anomaly
