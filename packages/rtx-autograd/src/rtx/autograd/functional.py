"""rtx.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp with PyTorch's signatures,
all built on autograd.grad(create_graph=True)."""
from __future__ import annotations

from rtx.autograd.engine import grad as _grad
from rtx.autograd.function import is_tensor
from rtx.autograd.grad_mode import enable_grad


def _tuple(x, name):
    if is_tensor(x):
        return (x,), True
    if isinstance(x, (tuple, list)) and all(is_tensor(t) for t in x):
        return tuple(x), False
    raise TypeError(f"{name} must be a Tensor or a tuple of Tensors, got {type(x).__name__}")


def _grad_inputs(inputs, create_graph):
    return tuple(t.detach().requires_grad_(True) if not create_graph or not t.requires_grad
                 else t.view_as(t) for t in inputs)


def _grads(outputs, inputs, grad_outputs, create_graph, strict=False, name="vjp"):
    needed = [o for o in outputs if o.requires_grad]
    gouts = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not needed:
        if strict:
            raise RuntimeError(f"{name}: the output of the function does not require grad (strict=True)")
        return tuple(t.new_zeros(t.shape) for t in inputs)
    gs = _grad(needed, inputs, gouts, create_graph=True, retain_graph=True, allow_unused=True)
    out = []
    for t, g in zip(inputs, gs):
        if g is None:
            if strict:
                raise RuntimeError(f"{name}: an input does not contribute to the output (strict=True)")
            g = t.new_zeros(t.shape)
        out.append(g if create_graph else g.detach())
    return tuple(out)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    inputs, single_in = _tuple(inputs, "inputs")
    with enable_grad():
        x = _grad_inputs(inputs, create_graph)
        out = func(*x)
        outs, single_out = _tuple(out, "the output of func")
        if v is None:
            if any(o.numel() != 1 for o in outs):
                raise RuntimeError("vjp: v can only be None if the output of func is a single-element tensor")
            v = tuple(o.new_ones(o.shape) for o in outs)
        vs, _ = _tuple(v, "v")
        gs = _grads(outs, x, vs, create_graph, strict, "vjp")
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs[0] if single_out else outs), (gs[0] if single_in else gs)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), by the double-vjp trick: J v = d/du (u^T J)^T v."""
    inputs, single_in = _tuple(inputs, "inputs")
    if v is None:
        if any(t.numel() != 1 for t in inputs):
            raise RuntimeError("jvp: v can only be None if the input to func is a single-element tensor")
        v = tuple(t.new_ones(t.shape) for t in inputs)
    vs, _ = _tuple(v, "v")
    for t, w in zip(inputs, vs):
        if t.shape != w.shape:
            raise RuntimeError(f"jvp: v has shape {tuple(w.shape)} but the input has shape {tuple(t.shape)}")
    with enable_grad():
        x = _grad_inputs(inputs, create_graph)
        outs, single_out = _tuple(func(*x), "the output of func")
        us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
        gx = _grads(outs, x, us, True, strict, "jvp")
        used = [(g, w) for g, w in zip(gx, vs) if g.requires_grad]
        if not used:
            jv = tuple(o.new_zeros(o.shape) for o in outs)
        else:
            jv = _grad([g for g, _ in used], us, [w for _, w in used], create_graph=create_graph,
                       retain_graph=True, allow_unused=True)
            jv = tuple(o.new_zeros(o.shape) if j is None else (j if create_graph else j.detach())
                       for o, j in zip(outs, jv))
    outs = tuple(o if create_graph else o.detach() for o in outs)
    return (outs[0] if single_out else outs), (jv[0] if single_out else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian d func / d inputs; for tensor in and out its shape is out.shape + in.shape."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    inputs, single_in = _tuple(inputs, "inputs")
    with enable_grad():
        x = _grad_inputs(inputs, create_graph)
        outs, single_out = _tuple(func(*x), "the output of func")
        result = []
        for o in outs:
            flat = o.reshape(-1)
            rows = [[] for _ in x]
            for k in range(flat.numel()):
                if o.requires_grad:
                    gs = _grad([flat[k]], x, None, create_graph=create_graph, retain_graph=True,
                               allow_unused=True)
                else:
                    gs = (None,) * len(x)
                for j, (t, g) in enumerate(zip(x, gs)):
                    if g is None:
                        if strict:
                            raise RuntimeError("jacobian: an output does not depend on an input (strict=True)")
                        g = t.new_zeros(t.shape)
                    rows[j].append(g if create_graph else g.detach())
            blocks = []
            for t, r in zip(x, rows):
                stacked = type(t)._stack(r) if r else t.new_zeros((0,) + tuple(t.shape))
                blocks.append(stacked.reshape(tuple(o.shape) + tuple(t.shape)))
            result.append(blocks)
    if single_out and single_in:
        return result[0][0]
    if single_out:
        return tuple(result[0])
    if single_in:
        return tuple(r[0] for r in result)
    return tuple(tuple(r) for r in result)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: jacobian of its gradient."""
    inputs_t, single_in = _tuple(inputs, "inputs")

    def grad_fn(*x):
        out = func(*x)
        if not is_tensor(out) or out.numel() != 1:
            raise RuntimeError("hessian: the function given must return a single-element Tensor")
        gs = _grad([out], x, None, create_graph=True, retain_graph=True, allow_unused=True)
        gs = tuple(t.new_zeros(t.shape) if g is None else g for t, g in zip(x, gs))
        return gs[0] if single_in else gs

    return jacobian(grad_fn, inputs_t[0] if single_in else inputs_t, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    inputs, single_in = _tuple(inputs, "inputs")
    vs = _check_v(inputs, v, "vhp")
    with enable_grad():
        x = _grad_inputs(inputs, create_graph)
        out = func(*x)
        if not is_tensor(out) or out.numel() != 1:
            raise RuntimeError("vhp: the function given must return a single-element Tensor")
        gs = _grads([out], x, [out.new_ones(out.shape)], True, strict, "vhp")
        used = [(g, w) for g, w in zip(gs, vs) if g.requires_grad]
        if used:
            hv = _grad([g for g, _ in used], x, [w for _, w in used], create_graph=create_graph,
                       retain_graph=True, allow_unused=True)
        else:
            hv = (None,) * len(x)
        hv = tuple(t.new_zeros(t.shape) if h is None else (h if create_graph else h.detach())
                   for t, h in zip(x, hv))
    out = out if create_graph else out.detach()
    return out, (hv[0] if single_in else hv)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); the Hessian is symmetric for twice-differentiable functions."""
    return vhp(func, inputs, v, create_graph, strict)


def _check_v(inputs, v, name):
    if v is None:
        if any(t.numel() != 1 for t in inputs):
            raise RuntimeError(f"{name}: v can only be None if the input is a single-element tensor")
        return tuple(t.new_ones(t.shape) for t in inputs)
    vs, _ = _tuple(v, "v")
    if len(vs) != len(inputs):
        raise RuntimeError(f"{name}: v has {len(vs)} tensors but there are {len(inputs)} inputs")
    for t, w in zip(inputs, vs):
        if t.shape != w.shape:
            raise RuntimeError(f"{name}: v has shape {tuple(w.shape)} but the input has shape {tuple(t.shape)}")
    return vs
