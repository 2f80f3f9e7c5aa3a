"""gradcheck and gradgradcheck: analytical gradients against central finite differences,
one input element at a time, in the inputs' own precision (use float64)."""
from __future__ import annotations

import numpy as np

from rtx.autograd.engine import grad as _grad
from rtx.autograd.function import is_tensor
from rtx.autograd.grad_mode import enable_grad, no_grad


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return (x,) if is_tensor(x) else tuple(x)


def _numerical_jacobian(fn, inputs, j, eps):
    """d outputs / d inputs[j], as a list (per output) of arrays of shape (in.numel, out.numel)."""
    x = inputs[j]
    flat = x._data.reshape(-1)  # a view: perturbing it perturbs x
    cols = []
    for k in range(flat.size):
        orig = flat[k].copy()
        flat[k] = orig + eps
        with no_grad():
            plus = [o._data.astype(np.complex128 if o.is_complex() else np.float64).ravel().copy()
                    for o in _as_tuple(fn(*inputs))]
        flat[k] = orig - eps
        with no_grad():
            minus = [o._data.astype(np.complex128 if o.is_complex() else np.float64).ravel().copy()
                     for o in _as_tuple(fn(*inputs))]
        flat[k] = orig
        cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    n_out = len(cols[0]) if cols else 0
    return [np.stack([c[o] for c in cols]) if cols else None for o in range(n_out)]


def _analytical_jacobian(outputs, inputs, j):
    x = inputs[j]
    res = []
    for o in outputs:
        jac = np.zeros((x.numel(), o.numel()))
        if o.requires_grad:
            flat = o.reshape(-1)
            for k in range(o.numel()):
                (g,) = _grad([flat[k]], [x], retain_graph=True, allow_unused=True)
                if g is not None:
                    jac[:, k] = g._data.astype(np.float64).ravel()
        res.append(jac)
    return res


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_undefined_grad=True, nondet_tol=0.0, fast_mode=False, **kwargs):
    """True if the analytical Jacobian of `func` matches finite differences for every input
    that requires grad; else raises GradcheckError (or returns False) naming the entry."""
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if is_tensor(t) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True")
    for i in diff:
        if inputs[i].dtype.itemsize < 8 and not inputs[i].is_complex():
            import warnings
            warnings.warn(f"gradcheck: input {i} is {inputs[i].dtype}, not float64: the check may fail "
                          "from rounding alone", stacklevel=2)
    with enable_grad():
        outputs = _as_tuple(func(*inputs))
    for j in diff:
        analytical = _analytical_jacobian(outputs, inputs, j)
        numerical = _numerical_jacobian(func, inputs, j, eps)
        for o, (a, n) in enumerate(zip(analytical, numerical)):
            if n is None:
                continue
            if not np.allclose(a, n.real if not np.iscomplexobj(a) else n, rtol=rtol, atol=atol):
                idx = np.unravel_index(np.argmax(np.abs(a - n)), a.shape)
                msg = (f"Jacobian mismatch for output {o} with respect to input {j}:\n"
                       f"numerical:{n}\nanalytical:{a}\n"
                       f"largest difference at (input element {idx[0]}, output element {idx[1]}): "
                       f"numerical {n[idx]} vs analytical {a[idx]}")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **kwargs):
    """gradcheck of the map (inputs, grad_outputs) -> vjp: checks second derivatives."""
    inputs = _as_tuple(inputs)
    with enable_grad():
        outputs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outputs:
            g = o.new_tensor(rng.standard_normal(tuple(o.shape)).astype(o._data.dtype))
            g.requires_grad_(True)
            grad_outputs.append(g)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, t in enumerate(inputs) if is_tensor(t) and t.requires_grad]

    def vjp_fn(*args):
        xs, gs = args[:n_in], args[n_in:]
        # gradcheck evaluates this under no_grad for the finite differences: the vjp itself
        # still needs a graph, or it is empty and nothing gets compared.
        with enable_grad():
            outs = _as_tuple(func(*xs))
            pairs = [(o, g) for o, g in zip(outs, gs) if o.requires_grad]
            grads = _grad([o for o, _ in pairs], [xs[i] for i in diff], [g for _, g in pairs],
                          create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(vjp_fn, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
