"""The autograd graph: Node (one per op application that needs a gradient), its context API
(save_for_backward, needs_input_grad, mark_dirty, mark_non_differentiable), and the backward
engine. The engine never imports the tensor: it adds gradients with the tensors' own `+`.

An edge is a pair (node, output_nr). Leaf tensors that require grad get an AccumulateGrad
node, cached on the tensor, whose `variable` is the tensor itself.
"""
from __future__ import annotations

import weakref

from rtx.autograd.grad_mode import _state, set_grad_enabled

_anomaly = [False]


class Node:
    """A backward node; also the `ctx` handed to forward and backward."""

    next_edges = ()
    needs_input_grad = ()
    _saved = None
    _saved_versions = ()
    _released = False
    _out_meta = None          # [(shape, dtype, device, tensor type)] for multi-output nodes
    _tensor_hooks = None      # {output_nr: [hook]} registered on non-leaf outputs
    _retain = None            # {output_nr: weakref(tensor)} for retain_grad
    _non_differentiable = ()
    _dirty = ()
    _anomaly_trace = None
    materialize_grads = True

    def name(self) -> str:
        return type(self).__name__

    # ---- the ctx API --------------------------------------------------------------------
    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._saved_versions = [None if t is None else t._vc[0] for t in tensors]

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors "
                "after they have already been freed). Saved intermediate values of the graph are freed "
                "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
                "backward through the graph a second time or if you need to access saved tensors after "
                "calling backward.")
        saved = self._saved or ()
        for i, (t, v) in enumerate(zip(saved, self._saved_versions)):
            if t is not None and t._vc[0] != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{t._type_str()}], which is saved tensor {i} of {self.name()}, is at version "
                    f"{t._vc[0]}; expected version {v} instead. Hint: the operation that modified it in "
                    "place must come after backward, or work on a clone.")
        return saved

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = value

    # ---- hooks ----------------------------------------------------------------------------
    def _add_tensor_hook(self, output_nr, hook):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        self._tensor_hooks.setdefault(output_nr, []).append(hook)

    def _release(self):
        self._saved = None
        self._released = True

    @property
    def next_functions(self):
        return tuple((None, 0) if e is None else e for e in self.next_edges)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into `variable.grad`."""

    def __init__(self, variable):
        self.variable = variable
        self.hooks = []
        self.post_hooks = []

    def name(self):
        return "AccumulateGrad"


def grad_accumulator(tensor) -> AccumulateGrad:
    ref = tensor._accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(tensor)
        tensor._accumulator = weakref.ref(acc)
    return acc


def edge_of(tensor):
    """The edge a tensor's gradient flows into, or None if it needs no gradient."""
    fn = tensor.grad_fn
    if fn is not None:
        return (fn, tensor._output_nr)
    if tensor.requires_grad:
        return (grad_accumulator(tensor), 0)
    return None


# ---- the engine ------------------------------------------------------------------------------


def _dependencies(roots):
    """{node: number of edges into it} over the graph below `roots` (the roots themselves only
    when another node points at them)."""
    deps = {}
    stack = list(roots)
    is_root = set(stack)
    pop, push = stack.pop, stack.append
    while stack:
        for edge in pop().next_edges:
            if edge is None:
                continue
            child = edge[0]
            n = deps.get(child)
            if n is None:
                deps[child] = 1
                if child not in is_root:
                    push(child)
            else:
                deps[child] = n + 1
    return deps


def _call_backward(node, grads):
    if node._released:
        _ = node.saved_tensors  # raises the "backward a second time" error
    out = type(node).backward(node, *grads)
    if type(out) is not tuple:
        out = (out,)
    n = len(node.next_edges)
    if len(out) != n:
        if len(out) > n and all(g is None for g in out[n:]):
            out = out[:n]
        else:
            raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(out)})")
    return out


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, inputs=None,
                 accumulate=True):
    """Propagate `root_grads` from the edges `roots` through the graph.

    accumulate=True: add into the leaves' .grad (Tensor.backward); with `inputs`, only those.
    accumulate=False: return the gradients of `inputs` (a list of edges), as autograd.grad.

    The loop runs once per node of every backward pass (tens of thousands per second for
    small networks), so its common case (one output, no hooks, nothing captured) is kept to a
    few attribute reads; every rarer feature is behind one test.
    """
    buffers = {}
    for edge, g in zip(roots, root_grads):
        if edge is None:
            continue
        node, nr = edge
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * _num_outputs(node)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    root_nodes = list(buffers)
    deps = _dependencies(root_nodes)
    capture = {}
    if inputs is not None:
        for i, edge in enumerate(inputs):
            capture.setdefault(edge, []).append(i)
    results = [None] * (len(inputs) if inputs is not None else 0)
    accumulate_only = None
    if accumulate and inputs is not None:
        accumulate_only = {edge[0] for edge in inputs}
    # arrays that must not become a .grad as they are: the caller's own gradients (a leaf root's
    # .grad would alias them, and the next backward would add into the caller's tensor)
    assigned = {id(g._data) for g in root_grads if g is not None}
    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    pop_ready, push_ready, pop_buffer, get_buffer = ready.pop, ready.append, buffers.pop, buffers.get
    anomaly = _anomaly[0]
    prev_mode = _state.enabled
    _state.enabled = create_graph
    try:
        while ready:
            node = pop_ready()
            grads = pop_buffer(node)
            if node._tensor_hooks:
                for nr, hooks in node._tensor_hooks.items():
                    for hook in hooks:
                        if grads[nr] is not None:
                            new = hook(grads[nr])
                            if new is not None:
                                grads[nr] = new
            if node._retain:
                for nr, ref in node._retain.items():
                    t = ref()
                    if t is not None and grads[nr] is not None:
                        t.grad = grads[nr] if create_graph else grads[nr].detach()
            if capture:
                for nr in range(len(grads)):
                    for i in capture.get((node, nr), ()):
                        results[i] = grads[nr]
            if type(node) is AccumulateGrad:
                if accumulate and (accumulate_only is None or node in accumulate_only):
                    _accumulate(node, grads[0], create_graph, assigned)
                continue
            meta = node._out_meta
            if meta is not None and node.materialize_grads:
                for nr, g in enumerate(grads):
                    if g is None:
                        shape, dtype, device, ttype = meta[nr]
                        grads[nr] = ttype._zeros(shape, dtype, device)
            if anomaly:
                out = _call_with_anomaly(node, grads)
            else:
                # _call_backward, inlined: the per-node cost of the common case
                if node._released:
                    _ = node.saved_tensors  # raises the "backward a second time" error
                out = type(node).backward(node, *grads)
                if type(out) is not tuple:
                    out = (out,)
                if len(out) != len(node.next_edges):
                    out = _check_count(node, out)
            if not retain_graph:
                node._release()
            for edge, g in zip(node.next_edges, out):
                if edge is None:
                    continue
                child, nr = edge
                if g is not None:
                    buf = get_buffer(child)
                    if buf is None:
                        meta = child._out_meta
                        if meta is None:
                            buffers[child] = [g]
                        else:
                            buf = buffers[child] = [None] * len(meta)
                            buf[nr] = g
                    else:
                        buf[nr] = g if buf[nr] is None else buf[nr] + g
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    if child in buffers:
                        push_ready(child)
                    else:
                        _skip(child, deps, buffers, ready)
    finally:
        _state.enabled = prev_mode
    return results


def _check_count(node, out):
    """Backward returned more or fewer gradients than the node has inputs: trailing Nones are
    dropped (a user Function may return one per forward argument, constants included)."""
    n = len(node.next_edges)
    if len(out) > n and all(g is None for g in out[n:]):
        return out[:n]
    raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                       f"(expected {n}, got {len(out)})")


def _skip(node, deps, buffers, ready):
    # A node that received no gradient at all still releases its children's dependency.
    stack = [node]
    while stack:
        n = stack.pop()
        for edge in n.next_edges:
            if edge is None:
                continue
            child = edge[0]
            deps[child] -= 1
            if deps[child] == 0:
                if child in buffers:
                    ready.append(child)
                else:
                    stack.append(child)


def _num_outputs(node):
    return 1 if node._out_meta is None else len(node._out_meta)


def _accumulate(acc, grad, create_graph, assigned):
    if grad is None:
        return
    var = acc.variable
    for hook in acc.hooks:
        new = hook(grad)
        if new is not None:
            grad = new
    gd = grad._data
    if gd.shape != var._data.shape:
        raise RuntimeError(f"gradient for a leaf of shape {tuple(var.shape)} has shape {tuple(grad.shape)}")
    if not create_graph and grad.requires_grad:
        grad = grad.detach()
    if var.grad is None:
        # The same gradient object may reach two leaves (a + b): each leaf gets its own copy,
        # so an in-place update of one .grad never changes another. A gradient computed without
        # a graph is stored as it is: it is already detached. (CuPy's flags have no `writeable`:
        # its arrays always are.)
        if id(gd) in assigned or gd.base is not None or not getattr(gd.flags, "writeable", True):
            grad = grad.clone() if create_graph else grad.detach().clone()
        assigned.add(id(grad._data))
        var.grad = grad
    elif create_graph:
        var.grad = var.grad + grad
    else:
        vd = var.grad._data
        vd += gd if vd.dtype == gd.dtype else gd.astype(vd.dtype)
    for hook in acc.post_hooks:
        hook(var)


# ---- anomaly detection ------------------------------------------------------------------------


def _call_with_anomaly(node, grads):
    out = _call_backward(node, grads)
    for i, g in enumerate(out):
        if g is not None and g.is_floating_point() and bool((g._data != g._data).any()):  # NaN != NaN
            trace = "".join(node._anomaly_trace or ["(no forward trace recorded)\n"])
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.\n"
                               f"The forward call that created it:\n{trace}")
    return out


class detect_anomaly:
    """Record a forward traceback on each node and check every backward output for NaN; a NaN
    names the op that produced it. Slow: for debugging only."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = _anomaly[0]
        _anomaly[0] = self.check_nan

    def __exit__(self, *exc):
        _anomaly[0] = self._prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)
        return wrapper


def set_detect_anomaly(mode: bool):
    _anomaly[0] = bool(mode)


def is_anomaly_enabled() -> bool:
    return _anomaly[0]


__all__ = ["Node", "AccumulateGrad", "run_backward", "edge_of", "grad_accumulator", "detect_anomaly",
           "set_grad_enabled"]
