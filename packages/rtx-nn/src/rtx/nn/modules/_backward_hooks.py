"""Full backward hooks: identity Functions around a module's inputs and outputs capture
grad_output (when backward reaches the outputs) and grad_input (when it reaches the inputs),
then call hook(module, grad_input, grad_output), as PyTorch's BackwardHook does."""
from __future__ import annotations

from rtx.autograd import Function
from rtx.extend import Tensor


class _Identity(Function):
    @staticmethod
    def forward(ctx, state, kind, *tensors):
        ctx.state, ctx.kind = state, kind
        out = tuple(t.view_as(t) for t in tensors)
        return out if len(out) > 1 else out[0]

    @staticmethod
    def backward(ctx, *grads):
        grads = ctx.state.on_grads(ctx.kind, grads)
        return (None, None, *grads)


class BackwardHookState:
    """One call's worth of hook state. grad_input has one entry per positional argument of the
    call (None where the argument is not a tensor that requires grad), as PyTorch's."""

    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_args = 0
        self.grad_slots = []  # positions of the arguments whose gradients flow back

    def _wrap(self, values, kind):
        positions = [i for i, v in enumerate(values) if type(v) is Tensor and v.requires_grad]
        if kind == "input":
            self.grad_slots = positions
        if not positions:
            return values
        wrapped = _Identity.apply(self, kind, *[values[i] for i in positions])
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        out = list(values)
        for i, w in zip(positions, wrapped):
            out[i] = w
        return tuple(out)

    def wrap_inputs(self, args):
        self.n_args = len(args)
        return self._wrap(args, "input")

    def wrap_outputs(self, out):
        if type(out) is Tensor:
            res = self._wrap((out,), "output")
            return res[0]
        if isinstance(out, tuple):
            return self._wrap(out, "output")
        return out

    def on_grads(self, kind, grads):
        module = self.module
        if kind == "output":
            for hook in module._backward_pre_hooks.values():
                result = hook(module, grads)
                if result is not None:
                    grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            self.grad_output = grads
            if not self.grad_slots:  # no input needs grad: the hooks fire now, grad_input all None
                for hook in module._backward_hooks.values():
                    result = hook(module, (None,) * max(self.n_args, 1), grads)
                    if result is not None and not all(r is None for r in result):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
            return grads
        grad_input = [None] * self.n_args
        for slot, g in zip(self.grad_slots, grads):
            grad_input[slot] = g
        grad_input = tuple(grad_input)
        for hook in module._backward_hooks.values():
            result = hook(module, grad_input, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(result)}, "
                                       f"but expected {len(grad_input)}")
                grad_input = result
        return tuple(grad_input[slot] for slot in self.grad_slots)
