"""In-place ops and __setitem__. An in-place op computes its result out of place and writes it
into the tensor's memory (so views see it), bumping the version counter; when a graph is
recorded the tensor takes over the result's history, as in PyTorch. Writes that PyTorch would
refuse (a leaf that requires grad, a view inside a graph) raise its error."""
from __future__ import annotations

import numpy as np

from rtx._tensor import function as _function
from rtx._tensor.function import Primitive
from rtx._tensor.ops._util import cast, data, sum_to
from rtx._tensor.tensor import Tensor
from rtx.autograd.grad_mode import _state
from rtx.runtime import dtypes as _dt


def _recording(self, other=None):
    """Whether the in-place op must go out of place (old value copied, result written back):
    a graph is recorded, or a recording hook (rtx.graph's tracer) follows this thread's ops."""
    if _function._active[0] and _function._local.hook is not None:
        return True
    return _state.enabled and (self.requires_grad or (type(other) is Tensor and other.requires_grad))


def _old_self(self):
    """The tensor's value before the write, with its history: the op may save it for backward."""
    old = Tensor._make(self._data.copy(), self.grad_fn, self._output_nr)
    old.requires_grad = self.requires_grad
    if self.grad_fn is None and self.requires_grad:
        old.grad_fn = None
    hook = _function.current_hook()
    if hook is not None:
        hook.old_value(self, old)   # the copy stands for the same recorded value
    return old


def write_result(self, result):
    """Make `self` hold `result`: its values (cast to self's dtype) and, if any, its history."""
    hook = _function.current_hook()
    if hook is not None:
        return hook.write_result(self, result, _write_result)
    return _write_result(self, result)


def _write_result(self, result):
    self._check_inplace()
    rd, sd = result._data.dtype, self._data.dtype
    if rd != sd and not _dt.can_cast(_dt.from_numpy(rd), _dt.from_numpy(sd)):
        raise RuntimeError(f"result type {_dt.from_numpy(rd).name.capitalize()} can't be cast to the desired output "
                           f"type {_dt.from_numpy(sd).name.capitalize()}")
    if result._data.shape != self._data.shape:
        try:
            np.broadcast_shapes(result._data.shape, self._data.shape)
            if np.broadcast_shapes(result._data.shape, self._data.shape) != self._data.shape:
                raise ValueError
        except ValueError:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                               f"{list(result._data.shape)}") from None
    if result.requires_grad and _state.enabled:
        if self._base is not None:
            raise RuntimeError("in-place operation that records a gradient into a view is not supported in rtx "
                               "(PyTorch rebases the base tensor's history); work on a clone instead")
        if rd != sd:
            result = cast(result, sd)
        if result._data.shape != self._data.shape:
            result = result.expand(self._data.shape)
        _assign(self._data, Ellipsis, result._data)
        self.grad_fn = result.grad_fn
        self._output_nr = result._output_nr
        self.requires_grad = True
    else:
        _assign(self._data, Ellipsis, result._data)
    self._vc[0] += 1
    return self


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")


def _assign(arr, index, value):
    """arr[index] = value, with PyTorch's errors for what NumPy refuses."""
    try:
        arr[index] = value
    except ValueError as e:
        msg = str(e)
        if "read-only" in msg:
            raise RuntimeError(_OVERLAP) from None
        if "broadcast" in msg:
            vs = list(getattr(value, "shape", ()))
            raise RuntimeError(f"shape mismatch: value tensor of shape {vs} cannot be broadcast to indexing result "
                               f"({msg})") from None
        raise
    except IndexError as e:
        raise IndexError(f"{str(e).replace('axis', 'dimension')} (assigning into a tensor of shape "
                         f"{list(arr.shape)})") from None


def inplace_binary(fn, ufunc=None):
    """Make `x.op_(other)` from the out-of-place `op`."""
    def method(self, other, **kwargs):
        if not _recording(self, other) and ufunc is not None and not kwargs:
            self._check_inplace()
            o = data(other)
            if isinstance(o, np.generic):
                o = o.item()
            try:
                ufunc(self._data, o, out=self._data, casting="same_kind")
            except (TypeError, ValueError):
                # PyTorch's error for the same situation, or a promotion NumPy refused
                return write_result(self, fn(self, other))
            self._vc[0] += 1
            return self
        source = _old_self(self) if _recording(self, other) else self
        return write_result(self, fn(source, other, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


def apply_inplace(self, fn, *args, **kwargs):
    """self <- fn(self, *args, **kwargs): the out-of-place fn's result written into self's memory,
    taking over fn's history when a graph is recorded (how F.relu(x, inplace=True) is built)."""
    source = _old_self(self) if _recording(self) else self
    return write_result(self, fn(source, *args, **kwargs))


def inplace_unary(fn):
    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    return method


def copy_(self, src, non_blocking=False):
    """Copy src's values into self (broadcasting, casting, across devices)."""
    if type(src) is not Tensor:
        from rtx._tensor.ops.creation import tensor
        src = tensor(src)
    if src.device != self.device:
        src = src.to(self.device)
    if _recording(self, src):
        from rtx._tensor.ops.shape import expand
        moved = expand(cast(src, self._data.dtype), tuple(self.shape)) * 1
        return write_result(self, moved)
    self._check_inplace()
    _assign(self._data, Ellipsis, src._data)
    self._vc[0] += 1
    return self


def fill_(self, value):
    if type(value) is Tensor:
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        value = value.item()
    self._check_inplace()
    _assign(self._data, Ellipsis, value)
    self._vc[0] += 1
    return self


def zero_(self):
    return fill_(self, 0)


def set_(self, source):
    self._data = source._data
    self._vc[0] += 1
    return self


# ---- __setitem__ -------------------------------------------------------------------------


class SetItem(Primitive):
    """out = a with out[index] = v (out of place; __setitem__ writes it back in place)."""

    op = "setitem"

    @staticmethod
    def forward(ctx, a, v, *, index):
        ctx.index = index
        ctx.v_shape = v._data.shape if type(v) is Tensor else ()
        out = a._data.copy()
        _assign(out, index, data(v))
        return out

    @staticmethod
    def backward(ctx, grad):
        ga, gv = ctx.needs_input_grad
        ra = ZeroAt.apply(grad, index=ctx.index) if ga else None
        rv = None
        if gv:
            g = grad[ctx.index]
            shape = tuple(ctx.v_shape)
            if tuple(g.shape) != shape:
                # The value broadcast to the indexed region (leading 1s of the value are dropped).
                lead = len(shape) - g.ndim
                g = sum_to(g, shape[lead:]).reshape(shape) if lead > 0 else sum_to(g, shape)
            rv = g
        return ra, rv


class ZeroAt(Primitive):
    @staticmethod
    def forward(ctx, g, *, index):
        ctx.index = index
        out = g._data.copy()
        out[index] = 0
        return out

    @staticmethod
    def backward(ctx, grad):
        return ZeroAt.apply(grad, index=ctx.index)


def setitem(self, index, value):
    from rtx._tensor.ops.shape import _index_arg, _index_on
    idx = _index_on(_index_arg(index), self._data)
    if type(value) is Tensor:
        if value.device != self.device:
            if value._data.ndim == 0 and value.is_cpu and not _recording(self, value):
                value = value.item()  # a CPU scalar tensor into a CUDA tensor, as PyTorch allows
                return setitem(self, index, value)
            raise RuntimeError(f"setitem: value is on {value.device} but the tensor is on {self.device}")
        if value._data.dtype != self._data.dtype:
            value = cast(value, self._data.dtype)
    elif not isinstance(value, (bool, int, float, complex, np.generic)):
        from rtx._tensor.ops.creation import tensor
        value = tensor(value, dtype=self.dtype, device=self.device)
    if _recording(self, value):
        write_result(self, SetItem.apply(_old_self(self), value, index=idx))
        return
    self._check_inplace()
    _assign(self._data, idx, data(value))
    self._vc[0] += 1
