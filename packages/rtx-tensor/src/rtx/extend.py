"""rtx.extend: the supported API for packages that build new ops on rtx-tensor.

Everything a layer, loss, kernel wrapper or graph tool needs beyond the PyTorch-shaped public API
(`rtx.Tensor`, `rtx.cat`, `rtx.where`, ...) is published here, so no package above rtx-tensor
imports the private `rtx._tensor.*` modules (their layout may change; this module's names do not):

- `Primitive`: the base of every op. Subclass it with `forward(ctx, *inputs, **attrs)` on arrays
  and `backward(ctx, *grads)` in Tensor ops (so double backward works); call `Op.apply(...)`.
  `NO_GRAPH` is the ctx forward receives when no graph is recorded.
- Arrays: `raw(t)` is a Tensor's own NumPy/CuPy array (zero-copy, outside autograd: writing into it
  bypasses version counters, as `t.data` writes do in PyTorch); `wrap(array, grad_fn=None,
  output_nr=0)` makes a Tensor that holds `array` itself (no copy; a Primitive's backward returns
  these). Use them instead of the private `t._data` / `Tensor._make`.
- Versions: `increment_version(t)` records an in-place write made on `raw(t)` (PyTorch's
  `torch.autograd.graph.increment_version`): a graph that saved `t` then refuses to backward through
  the overwritten values instead of using them silently. Call it once per write, as the core's
  in-place ops do. `set_raw(t, array)` makes `t` hold `array` itself (no copy; shape, dtype and
  device become the array's) and increments its version: the same object, now with new storage
  (how nn.Module.to / .double() convert parameters that optimizers hold). `t._version` reads it.
- Operand helpers: `cast(t, np_dtype)` (a differentiable dtype cast), `xp_of(t)` (NumPy or CuPy),
  `dims(dim, ndim, op)` (normalised tuple of dims), `wrap_dim(dim, ndim)`, `sum_to(grad, shape)`
  (undo broadcasting in a backward), `check_same_device(a, b, op)`, `add_at(out, index, values)`
  (scatter-add on either array module), `parse_to(args, kwargs)` (Tensor.to's argument parsing).
- In-place ops: `apply_inplace(x, fn, *args)` writes fn(x, *args) into x (F.relu(x, inplace=True));
  `write_result(self, result)` makes `self` hold `result` (values, version bump and
  history, as PyTorch's in-place ops do); `inplace_binary` / `inplace_unary` build `x.op_` methods.
- `autocast`: the thread-local autocast state ops consult (`lower`, `fp32`, `is_autocast_enabled`,
  `get_autocast_dtype`, ...); rtx.amp is its user-facing front.
- Functions PyTorch has only in torch.nn.functional that layers below rtx-nn (the losses) need:
  `softplus(x, beta, threshold)` and `logsigmoid(x)`; rtx.nn.functional re-exports these same ones.
- Grad mode: `grad_mode` is rtx.autograd's thread-local grad-mode state. Hot paths read
  `grad_mode.enabled` / `grad_mode.inference` (a plain attribute read; `rtx.is_grad_enabled()` is
  the same value through a call); change it only through `rtx.no_grad` / `enable_grad` /
  `set_grad_enabled` / `inference_mode`.
- Dtype tables live in `rtx.runtime.dtypes` (a public module of rtx-runtime).
- Op identity: every Primitive subclass has a stable `op` name ("add", "matmul", "softmax", ...;
  derived from the class name, or set with `op = "..."` in the class body), unique in the
  process. `op_name(cls)`, `primitive(name)` and `registered_ops()` read the registry; graph
  passes, compilers and exporters key on these names, never on class names.
- Recording: `recording(hook)` (a context manager, thread-local) hands this thread's Primitive
  applications to `hook.primitive(cls, inputs, attrs)` (the hook runs the op, usually inside
  `recording(None)`), sends the operators' fast paths through Primitives, and reports in-place
  writes to `hook.old_value(tensor, copy)` / `hook.write_result(tensor, result, write)`;
  `current_hook()` is this thread's hook. rtx.graph's tracer is built on it.
"""
from operator import attrgetter

import numpy as np

from rtx._tensor import autocast_state as autocast
from rtx._tensor.function import NO_GRAPH, Primitive, current_hook, op_name, primitive, recording, registered_ops
from rtx._tensor.ops._util import cast, check_same_device, dev_of, dims, sum_to, wrap_dim, xp_of
from rtx._tensor.ops.activation import logsigmoid, softplus
from rtx._tensor.ops.convert import _parse_to as parse_to
from rtx._tensor.ops.inplace import apply_inplace, inplace_binary, inplace_unary, write_result
from rtx._tensor.ops.shape import add_at
from rtx._tensor.tensor import Size, Tensor
from rtx.autograd.grad_mode import _state as grad_mode

# A C-level attribute getter: as fast as `t._data` in a hot path, without naming the slot.
raw = attrgetter("_data")
wrap = Tensor._make
# The method the core's in-place ops use: a plain function, no wrapper in optimizers' hot loops.
increment_version = Tensor._bump


def set_raw(t, array):
    """t now holds `array` (no copy) and its version is incremented, as after an in-place op.

    The tensor object stays the same (optimizers, hooks and modules that hold it see the new
    values); its grad, requires_grad and grad_fn are left alone. Tensors that shared the old
    storage (views, `.data`, `detach()`) keep the old array, as after PyTorch's `param.data = new`.
    """
    if type(t) is not Tensor:
        raise TypeError(f"set_raw expects a Tensor as its first argument, got {type(t).__name__}")
    if not isinstance(array, np.ndarray) and not hasattr(type(array), "__cuda_array_interface__"):
        raise TypeError(f"set_raw expects a NumPy or CuPy array (use raw(tensor) for a Tensor's own), "
                        f"got {type(array).__name__}")
    t._data = array
    t._vc[0] += 1


__all__ = [
    "NO_GRAPH", "Primitive", "Size", "Tensor", "add_at", "apply_inplace", "autocast", "cast", "check_same_device",
    "dev_of", "dims", "grad_mode", "increment_version", "inplace_binary", "inplace_unary", "logsigmoid", "parse_to",
    "raw", "set_raw", "softplus", "sum_to", "wrap", "wrap_dim", "write_result", "xp_of",
    "current_hook", "op_name", "primitive", "recording", "registered_ops",
]
