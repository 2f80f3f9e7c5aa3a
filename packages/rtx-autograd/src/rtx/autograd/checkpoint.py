"""Gradient checkpointing: run a segment without keeping its activations, and recompute them
during backward. Memory falls from O(activations of the segment) to O(its inputs)."""
from __future__ import annotations

from rtx.autograd.engine import backward as _backward
from rtx.autograd.function import Function, is_tensor
from rtx.autograd.grad_mode import enable_grad
from rtx.runtime import random as _random


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_state = _random.default_generator.get_state()
        ctx.tensor_index = [i for i, a in enumerate(args) if is_tensor(a)]
        ctx.args = [None if is_tensor(a) else a for a in args]
        ctx.save_for_backward(*(a for a in args if is_tensor(a)))
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        args = list(ctx.args)
        detached = []
        for i, t in zip(ctx.tensor_index, saved):
            d = t.detach()
            d.requires_grad = t.requires_grad
            args[i] = d
            detached.append(d)
        if ctx.preserve:
            current = _random.default_generator.get_state()
            _random.default_generator.set_state(ctx.rng_state)
        try:
            with enable_grad():
                out = ctx.run_function(*args)
        finally:
            if ctx.preserve:
                _random.default_generator.set_state(current)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if is_tensor(o) and o.requires_grad and g is not None]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = [None] * len(args)
        for i, d in zip(ctx.tensor_index, detached):
            input_grads[i] = d.grad
        return (None, None, *input_grads)


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    """rtx.utils.checkpoint.checkpoint: outputs equal function(*args); backward recomputes.

    Only the reentrant variant exists; parameters used inside `function` get their gradients
    during the recomputation, as in PyTorch's reentrant checkpoint."""
    if kwargs:
        raise ValueError(f"checkpoint: unexpected keyword arguments {sorted(kwargs)}")
    return _Checkpoint.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, preserve_rng_state=True):
    """Split a Sequential (or list of modules) into `segments` checkpointed chunks."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    size = max(1, (len(functions) + segments - 1) // segments)

    def run(chunk):
        def f(x):
            for m in chunk:
                x = m(x)
            return x
        return f

    chunks = [functions[i:i + size] for i in range(0, len(functions), size)]
    for chunk in chunks[:-1]:
        input = checkpoint(run(chunk), input, preserve_rng_state=preserve_rng_state)
    return run(chunks[-1])(input)
