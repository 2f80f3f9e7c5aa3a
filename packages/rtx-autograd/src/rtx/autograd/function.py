"""torch.autograd.Function for users: forward and backward side by side, with a ctx.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

forward runs with grad disabled and returns tensors; backward returns one gradient (or None)
per forward argument, written in tensor ops so that double backward works.
"""
from __future__ import annotations

from rtx.autograd import graph
from rtx.autograd.grad_mode import _state, no_grad


def is_tensor(obj) -> bool:
    return getattr(type(obj), "_is_rtx_tensor", False)


class Function(graph.Node):
    """Subclass and write static `forward(ctx, *args)` and `backward(ctx, *grads)`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("subclasses of Function must implement forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(f"{type(ctx).__name__} does not implement backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        needs = _state.enabled and any(is_tensor(a) and a.requires_grad for a in args)
        ctx = cls()
        ctx.needs_input_grad = tuple(is_tensor(a) and a.requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not needs:
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        ctx.next_edges = tuple(graph.edge_of(a) if is_tensor(a) else None for a in args)
        if graph._anomaly[0]:
            import traceback  # anomaly mode only: kept out of `import rtx`

            ctx._anomaly_trace = traceback.format_stack()[:-1]
        non_diff = {id(t) for t in ctx._non_differentiable}
        dirty = {id(t) for t in ctx._dirty}
        inputs = {id(a) for a in args if is_tensor(a)}
        wrapped = []
        metas = []
        for i, o in enumerate(outs):
            if is_tensor(o):
                if id(o) in inputs and id(o) not in dirty:
                    o = o.view_as(o)  # an input returned as-is becomes a new node's output
                metas.append((o.shape, o.dtype, o.device, type(o)))
                if id(o) not in non_diff:
                    if id(o) in dirty:
                        o._check_inplace()
                        o._vc[0] += 1
                    o.grad_fn = ctx
                    o._output_nr = i
                    o.requires_grad = True
            else:
                metas.append(None)
            wrapped.append(o)
        if len(outs) > 1:
            ctx._out_meta = metas
        return wrapped[0] if single else tuple(wrapped)


class once_differentiable:
    """Decorator for backward methods that cannot be differentiated again."""

    def __new__(cls, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(ctx, *grads):
            with no_grad():
                return fn(ctx, *grads)
        return wrapper
