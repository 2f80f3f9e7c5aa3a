"""backward() and grad(): the user entry points to the engine in graph.py."""
from __future__ import annotations

from rtx.autograd import graph
from rtx.autograd.function import is_tensor


def _as_list(x):
    if x is None:
        return None
    if is_tensor(x):
        return [x]
    return list(x)


def _root_grads(outputs, grad_outputs, fn_name):
    grads = _as_list(grad_outputs)
    if grads is None:
        grads = [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"{fn_name}: got {len(outputs)} outputs but {len(grads)} grad_outputs")
    out = []
    for o, g in zip(outputs, grads):
        if g is None:
            if not o.requires_grad:
                out.append(None)
                continue
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs "
                                   f"(got an output of shape {tuple(o.shape)}); pass grad_outputs/gradient")
            g = o.new_ones(o.shape)
        elif not is_tensor(g):
            g = o.new_tensor(g)
        elif g.shape != o.shape:
            raise RuntimeError(f"{fn_name}: Mismatch in shape: grad_output has a shape of {tuple(g.shape)} "
                               f"and output has a shape of {tuple(o.shape)}")
        if g.dtype != o.dtype:
            # As PyTorch's engine: a gradient comes in its output's dtype (cast), except between complex and real
            if g.is_complex() != o.is_complex():
                raise RuntimeError("For complex Tensors, both grad_output and output are required to have the same "
                                   f"dtype. Mismatch in dtype: grad_output[{len(out)}] has a dtype of {g.dtype} and "
                                   f"output[{len(out)}] has a dtype of {o.dtype}.")
            g = g.to(o.dtype)
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into every leaf's .grad (only into `inputs` if given)."""
    tensors = _as_list(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    grads = _root_grads(tensors, grad_tensors, "backward")
    input_edges = None
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("backward: 'inputs' argument should not be empty")
        input_edges = [graph.edge_of(t) for t in inputs]
        if any(e is None for e in input_edges):
            raise RuntimeError("backward: one of the inputs does not require grad")
    graph.run_backward([graph.edge_of(t) for t in tensors], grads, retain_graph, create_graph,
                       inputs=input_edges, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching any .grad (torch.autograd.grad)."""
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    edges = []
    for i, t in enumerate(inputs):
        if not is_tensor(t):
            raise TypeError(f"grad: inputs must be tensors, got {type(t).__name__} at position {i}")
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
        edges.append(graph.edge_of(t))
    grads = _root_grads(outputs, grad_outputs, "grad")
    result = graph.run_backward([graph.edge_of(o) for o in outputs], grads, retain_graph, create_graph,
                                inputs=edges, accumulate=False)
    for i, (g, t) in enumerate(zip(result, inputs)):
        if g is None:
            if materialize_grads:
                result[i] = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(result)
