"""Full backward hooks: identity Functions around a module's inputs and outputs capture
grad_output (when backward reaches the outputs) and grad_input (when it reaches the inputs),
then call hook(module, grad_input, grad_output), as PyTorch's BackwardHook does."""
from __future__ import annotations

from rtx._tensor.tensor import Tensor
from rtx.autograd import Function


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
    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_inputs = 0

    def _wrap(self, values, kind):
        positions = [i for i, v in enumerate(values) if type(v) is Tensor and v.requires_grad]
        if not positions:
            return values
        wrapped = _Identity.apply(self, kind, *[values[i] for i in positions])
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        out = list(values)
        for i, w in zip(positions, wrapped):
            out[i] = w
        return tuple(out)

    def wrap_inputs(self, args):
        self.n_inputs = sum(1 for a in args if type(a) is Tensor and a.requires_grad)
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
            if self.n_inputs == 0:  # no input needs grad: the hooks fire now with grad_input None
                for hook in module._backward_hooks.values():
                    hook(module, (None,), grads)
            return grads
        for hook in module._backward_hooks.values():
            result = hook(module, grads, self.grad_output)
            if result is not None:
                grads = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        return grads
