"""The two array namespaces a MAC step runs on.

A step is ~130 small array operations; as rtx ops each pays the autograd dispatch (graph node,
Tensor wrapper) even under no_grad, which on a 64x64 grid costs 4x the arithmetic. So the solver
writes its step once, against a "kit": slicing, arithmetic and @ are the same on rtx tensors and
on NumPy/CuPy arrays, and the kit supplies the few calls that differ (cat, where, abs, detach) and
the solver's constant fields in the matching form. TensorKit is the differentiable path;
ArrayKit runs the same formulas on the raw arrays when no gradient can be asked for."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.extend import xp_of
from rtx.runtime.threads import keep_freed_memory


def raw(t):
    """The array under a tensor, without a copy (anything else is returned as it is)."""
    if not isinstance(t, rtx.Tensor):
        return t
    t = t.detach()
    return t.numpy() if t.is_cpu else xp_of(t).from_dlpack(t)


def wrap(a):
    """A tensor sharing memory with a NumPy or CuPy array (anything else is returned as it is)."""
    if isinstance(a, np.ndarray):
        return rtx.as_tensor(a)
    if hasattr(a, "__dlpack__"):
        return rtx.from_dlpack(a)
    return a


class TensorKit:
    """rtx ops: every result carries its gradient history."""
    raw = False

    def __init__(self, consts, dtype, device):
        self.__dict__.update(consts)
        self._dtype, self._device = dtype, device

    @staticmethod
    def cat(xs, dim):
        return rtx.cat(xs, dim=dim)

    @staticmethod
    def ghosts(a, dim, inner, outer):
        """a with one ghost layer on every side: inner(a) gives the (low, high) layers along dim,
        outer(a with those) the layers along the other dim (they may read the first ones)."""
        lo, hi = inner(a)
        a = rtx.cat([lo, a, hi], dim=dim)
        lo, hi = outer(a)
        return rtx.cat([lo, a, hi], dim=1 - dim)

    @staticmethod
    def where(cond, a, b):
        return rtx.where(cond, a, b)

    @staticmethod
    def abs(a):
        return a.abs()

    @staticmethod
    def detach(a):
        return a.detach()

    @staticmethod
    def scalar(x):
        """A solver parameter (viscosity, force, boundary value) as this kit uses it."""
        return x

    def array(self, a):
        return rtx.tensor(np.asarray(a, dtype=np.float64), dtype=self._dtype, device=self._device)

    @staticmethod
    def put(values, idx, shape):
        """Zeros of `shape` with `values` at the flat indices `idx` (distinct)."""
        n = int(np.prod(shape))
        return rtx.zeros(n, dtype=values.dtype, device=values.device).index_add(0, idx, values).reshape(shape)


def settle_heap():
    """Keep glibc from handing the step's temporaries back to the OS between steps, through rtx's one
    malloc policy (rtx.runtime.threads.keep_freed_memory: opt-out RTX_KEEP_FREED_MEMORY=0, and it
    leaves alone a process whose user set malloc tunables).

    A raw step makes ~60 arrays of the field size and frees most of them when its functions
    return. With glibc's default thresholds (128 KiB to start; trim at twice the largest block
    freed so far) a 129x129 field (132 KiB) is a fresh mapping each time and the heap top goes back
    to the OS: ~400 page faults per step, half the step's time (a plain NumPy loop, whose
    temporaries live on until the next iteration overwrites them, took ~80)."""
    keep_freed_memory()


class ArrayKit:
    """The same calls on the raw NumPy/CuPy arrays of the tensors in `consts`."""
    raw = True

    def __init__(self, consts, dtype, device):
        settle_heap()
        arrays = {k: raw(v) for k, v in consts.items()}
        self.__dict__.update(arrays)
        self.xp = xp_of(next(v for v in consts.values() if isinstance(v, rtx.Tensor)))
        self._np_dtype = raw(rtx.zeros((), dtype=dtype)).dtype

    def cat(self, xs, dim):
        return self.xp.concatenate(xs, axis=dim)

    def ghosts(self, a, dim, inner, outer):
        """TensorKit.ghosts written into one new array (two concatenations copied the field twice)."""
        out = self.xp.empty((a.shape[0] + 2, a.shape[1] + 2), dtype=a.dtype)
        out[1:-1, 1:-1] = a
        lo, hi = inner(a)
        if dim == 1:
            out[1:-1, :1], out[1:-1, -1:] = lo, hi
            lo, hi = outer(out[1:-1])
            out[:1], out[-1:] = lo, hi
        else:
            out[:1, 1:-1], out[-1:, 1:-1] = lo, hi
            lo, hi = outer(out[:, 1:-1])
            out[:, :1], out[:, -1:] = lo, hi
        return out

    def where(self, cond, a, b):
        return self.xp.where(cond, a, b)

    def abs(self, a):
        return self.xp.abs(a)

    @staticmethod
    def detach(a):
        return a

    @staticmethod
    def scalar(x):
        return raw(x)

    def array(self, a):
        return self.xp.asarray(np.asarray(a, dtype=self._np_dtype))

    def put(self, values, idx, shape):
        out = self.xp.zeros(int(np.prod(shape)), dtype=values.dtype)
        out[idx] = values
        return out.reshape(shape)
