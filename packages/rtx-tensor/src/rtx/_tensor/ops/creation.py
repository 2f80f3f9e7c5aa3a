"""Creation: tensor, as_tensor, from_numpy, zeros/ones/full/empty (+ _like), arange,
linspace, logspace, eye, random sampling, tril/triu indices."""
from __future__ import annotations

import math

import numpy as np

from rtx._tensor.tensor import Tensor
from rtx.runtime import dtypes as _dt
from rtx.runtime.devices import CPU, as_device, cupy, get_default_device, module_for, to_device
from rtx.runtime.random import generator_for


def _as_np_dtype(dtype):
    return None if dtype is None else _dt.as_dtype(dtype).np


def _infer_dtype(data):
    """PyTorch's inference for Python data: floats -> default dtype, ints -> int64, bools -> bool."""
    if isinstance(data, np.generic):
        return data.dtype  # a NumPy scalar keeps its dtype (np.float64(1) -> float64), as in PyTorch
    if isinstance(data, bool):
        return np.bool_
    if isinstance(data, int):
        return np.int64
    if isinstance(data, float):
        return _dt.get_default_dtype().np
    if isinstance(data, complex):
        return _dt.default_complex().np
    return None


def _from_python(data):
    """A NumPy array for nested lists/tuples of Python numbers, in PyTorch's dtypes (floats in
    the default dtype, ints as int64, complex in the default complex dtype)."""
    arr = np.asarray(data)
    if arr.dtype.kind not in "biufc":
        raise ValueError("not numeric")  # the caller's walk names what is wrong, in PyTorch's words
    if arr.dtype.kind == "f":
        arr = arr.astype(_dt.get_default_dtype().np, copy=False)
    elif arr.dtype.kind == "c":
        arr = arr.astype(_dt.default_complex().np, copy=False)
    elif arr.dtype.kind in "iu" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    return arr


_NUMBERS = {int, float, bool, complex}
_LISTS = {list, tuple}


def _plain(data):
    """True for lists/tuples of Python numbers nested in lists/tuples (the fast path through
    np.asarray); anything else (deques, NumPy scalars, arrays, tensors, strings) takes the
    general walk. Checked along the first elements and at the top level, as a cheap filter."""
    probe = data
    while isinstance(probe, (list, tuple)):
        if not probe:
            return True
        kinds = set(map(type, probe))  # C speed: the fast path must stay fast for long lists
        if not (kinds <= _NUMBERS or kinds <= _LISTS):
            return False
        probe = probe[0]
    return type(probe) in (int, float, bool, complex)


def cuda_first_use():
    """On the first CUDA allocation, put rtx-memory's tracking allocator in front of CuPy's pool,
    so max_memory_allocated counts from the start (rtx-runtime cannot: it sits below rtx-memory)."""
    global _cuda_tracked
    if not _cuda_tracked:
        _cuda_tracked = True
        from rtx.memory import install_cuda_allocator
        install_cuda_allocator()


_cuda_tracked = False


def _place(arr, device):
    d = as_device(device)
    if d.type == "cpu":
        return to_device(arr, CPU) if not isinstance(arr, np.ndarray) else arr
    cuda_first_use()
    return to_device(arr, d)


def _is_sequence(obj):
    # Python's sequence protocol, as PyTorch's PySequence_Check: __getitem__ and __len__, not a mapping
    t = type(obj)
    return hasattr(t, "__getitem__") and hasattr(t, "__len__") and not isinstance(obj, (dict, str, bytes))


def _items(seq):
    if hasattr(type(seq), "__iter__"):
        return list(seq)
    return [seq[i] for i in range(len(seq))]  # a __len__ + __getitem__ sequence without __iter__


def _array_like(obj):
    return hasattr(obj, "__array__") or hasattr(obj, "__array_interface__")


class _CannotInferDtype(RuntimeError, TypeError):
    """PyTorch raises RuntimeError here; it is also a TypeError, which the operators that turn a
    Python operand into a tensor (t * None) have always raised."""


def _refuse(obj):
    if isinstance(obj, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(obj).__name__}'")
    raise _CannotInferDtype(f"Could not infer dtype of {type(obj).__name__}")


def _leaf_dtype(x):
    """PyTorch's scalar type of one leaf (infer_scalar_type), or None if x is not a number."""
    if isinstance(x, (bool, np.bool_)):
        return _dt.from_numpy(np.dtype(np.bool_))
    if isinstance(x, np.generic):
        return _dt.from_numpy(x.dtype) if x.dtype.kind in "biufc" else None
    if isinstance(x, int):
        return _dt.from_numpy(np.dtype(np.int64))
    if isinstance(x, float):
        return _dt.get_default_dtype()
    if isinstance(x, complex):
        return _dt.default_complex()
    return None


def _from_sequence(data, dtype):
    """A NumPy array from any nested sequence PyTorch accepts (deque, range, array.array, custom
    __len__/__getitem__ classes, lists mixing NumPy arrays, scalars and tensors), with PyTorch's
    shape checks and dtype inference (the promotion of every leaf's type)."""
    sizes = []
    probe = data
    while True:  # the shape follows the first elements down, as PyTorch's compute_sizes
        if type(probe) is Tensor or isinstance(probe, np.ndarray) or (_array_like(probe) and not _is_sequence(probe)):
            shape = tuple(probe.shape) if hasattr(probe, "shape") else np.asarray(probe).shape
            sizes.extend(shape)
            break
        if isinstance(probe, str):
            raise ValueError("too many dimensions 'str'")
        if not _is_sequence(probe):
            break
        n = len(probe)
        sizes.append(n)
        if n == 0:
            break
        probe = _items(probe)[0] if not isinstance(probe, (list, tuple)) else probe[0]
    found = []

    def walk(obj, dim):
        if dim == len(sizes):
            if type(obj) is Tensor:
                if obj.numel() != 1 or obj.ndim:
                    raise ValueError("only one element tensors can be converted to Python scalars")
                obj = obj.__array__()[()]
            if isinstance(obj, np.ndarray) and obj.ndim == 0:
                obj = obj[()]
            kind = _leaf_dtype(obj)
            if kind is None:
                if _is_sequence(obj) or isinstance(obj, np.ndarray):
                    raise ValueError(f"expected a number at dim {dim} (got {type(obj).__name__} of length "
                                     f"{len(obj)}): the nested sequence is ragged")
                _refuse(obj)
            found.append(kind)
            return obj
        if type(obj) is Tensor or isinstance(obj, np.ndarray) or (_array_like(obj) and not _is_sequence(obj)):
            arr = obj.__array__() if type(obj) is Tensor else np.asarray(obj)
            if arr.dtype.kind not in "biufc":
                raise TypeError(f"can't convert np.ndarray of type {arr.dtype.type.__module__}."
                                f"{arr.dtype.type.__name__}: only numeric and bool arrays can be converted")
            if arr.shape != tuple(sizes[dim:]):
                raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got "
                                 f"{arr.shape[0] if arr.ndim else 'a 0-d array'})")
            found.append(obj.dtype if type(obj) is Tensor else _dt.from_numpy(arr.dtype))
            return arr
        if isinstance(obj, str):
            raise TypeError("new(): invalid data type 'str'")
        if not _is_sequence(obj):
            if _leaf_dtype(obj) is not None:
                raise TypeError("not a sequence")
            _refuse(obj)
        items = obj if isinstance(obj, (list, tuple)) else _items(obj)
        if len(items) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(items)})")
        return [walk(x, dim + 1) for x in items]

    nested = walk(data, 0)
    if dtype is None:
        dtype = _dt.get_default_dtype()
        if found:
            dtype = found[0]
            for d in found[1:]:
                if d is not dtype:
                    dtype = _dt.promote_types(dtype, d)
    np_dtype = _dt.as_dtype(dtype).np
    if not sizes or 0 in sizes:
        return np.asarray(nested, dtype=np_dtype).reshape(sizes)
    return np.array(nested, dtype=np_dtype)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor that owns a copy of `data`: a number, a Tensor, a NumPy array (or anything
    with __array__ / __array_interface__), or any nested sequence of these (lists, tuples, deques,
    ranges, ...). Strings, dicts and sets are refused as PyTorch refuses them."""
    if type(data) is Tensor:
        arr = data._data.copy()
        if device is None:
            device = data.device
    elif isinstance(data, np.ndarray):
        if data.dtype.kind not in "biufc":
            raise TypeError(f"can't convert np.ndarray of type {data.dtype.type.__module__}."
                            f"{data.dtype.type.__name__}. The only supported types are: float64, float32, "
                            "float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, "
                            "uint8, and bool.")
        arr = np.array(data, copy=True)
    elif hasattr(data, "__cuda_array_interface__"):
        arr = cupy().array(data, copy=True)
    elif isinstance(data, (list, tuple)) and _plain(data):
        # Python numbers only: NumPy parses them; a ragged list gets PyTorch's message from the walk.
        # With an explicit dtype, convert straight to it (no detour through the default float dtype).
        try:
            arr = _from_python(data) if dtype is None else np.asarray(data, dtype=_as_np_dtype(dtype))
        except ValueError:
            arr = _from_sequence(data, dtype)
    elif isinstance(data, (bool, int, float, complex, np.generic)):
        # An explicit dtype converts the exact Python value once: inferring the default float32
        # first would round 0.7 or 1 - 2**-53 before the float64 cast.
        arr = np.asarray(data, dtype=_infer_dtype(data) if dtype is None else _as_np_dtype(dtype))
    elif _array_like(data) and not isinstance(data, (str, bytes)):
        arr = np.array(data, copy=True)
        if arr.dtype.kind not in "biufc":
            _refuse(data)
    elif _is_sequence(data) or isinstance(data, (list, tuple)):
        arr = _from_sequence(data, dtype)
    else:
        _refuse(data)
    if dtype is not None:
        arr = arr.astype(_as_np_dtype(dtype), copy=False)
    if device is None and isinstance(arr, np.ndarray):
        device = get_default_device()
    arr = _place(arr, device) if device is not None else arr
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Share memory with `data` when its dtype and device already match."""
    if type(data) is Tensor:
        out = data
        if dtype is not None:
            out = out.to(dtype=dtype)
        if device is not None:
            out = out.to(device)
        return out
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        arr = data if dtype is None else data.astype(_as_np_dtype(dtype), copy=False)
        return Tensor._make(arr)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(array):
    """Zero copy: the tensor and the array share memory."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dt.from_numpy(array.dtype)  # raises a clear TypeError for unsupported dtypes
    return Tensor._make(array)


def from_dlpack(ext):
    if hasattr(ext, "__dlpack_device__") and ext.__dlpack_device__()[0] == 2:  # kDLCUDA
        return Tensor._make(cupy().from_dlpack(ext))
    return Tensor._make(np.from_dlpack(ext))


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__} in {size}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _filled(fill, size, dtype, device, requires_grad, default=None):
    d = as_device(device)
    xp = module_for(d)
    np_dtype = _as_np_dtype(dtype) or default or _dt.get_default_dtype().np
    if d.type == "cpu":
        arr = np.empty(size, np_dtype) if fill is None else np.full(size, fill, np_dtype)
    else:
        cuda_first_use()
        with xp.cuda.Device(d.index):
            arr = xp.empty(size, np_dtype) if fill is None else xp.full(size, fill, np_dtype)
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    return _filled(0, _size(size), dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    return _filled(1, _size(size), dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False,
          memory_format=None):
    return _filled(None, _size(size), dtype, device, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    if dtype is None:
        dtype = _dt.scalar_dtype(fill_value)
    return _filled(fill_value, _size((size,) if isinstance(size, int) else tuple(size)), dtype, device,
                   requires_grad)


def _like(fill, input, dtype, device, requires_grad):
    return _filled(fill, tuple(input.shape), dtype or input.dtype, device or input.device, requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None):
    return _like(0, input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None):
    return _like(1, input, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None):
    return _like(None, input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
              memory_format=None):
    return _like(fill_value, input, dtype, device, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    vals = [v.item() if type(v) is Tensor else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype is None:
        dtype = _dt.get_default_dtype() if any(isinstance(v, float) for v in vals) else _dt.int64
    np_dtype = _as_np_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    arr = (start + step * np.arange(n, dtype=np.float64 if np.dtype(np_dtype).kind == "f" else np.int64)
           ).astype(np_dtype)
    return _finish(arr, device, requires_grad)


def _finish(arr, device, requires_grad):
    t = Tensor._make(_place(arr, device if device is not None else get_default_device()))
    if requires_grad:
        t.requires_grad_(True)
    return t


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    arr = np.linspace(float(start), float(end), int(steps)).astype(_as_np_dtype(dtype) or _dt.get_default_dtype().np)
    return _finish(arr, device, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None):
    arr = np.logspace(float(start), float(end), int(steps), base=base)
    return _finish(arr.astype(_as_np_dtype(dtype) or _dt.get_default_dtype().np), device, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    arr = np.eye(n, m if m is not None else n, dtype=_as_np_dtype(dtype) or _dt.get_default_dtype().np)
    return _finish(arr, device, requires_grad)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    r, c = np.tril_indices(row, offset, col)
    return _finish(np.stack([r, c]).astype(_as_np_dtype(dtype) or np.int64), device, False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    r, c = np.triu_indices(row, offset, col)
    return _finish(np.stack([r, c]).astype(_as_np_dtype(dtype) or np.int64), device, False)


# ---- random ------------------------------------------------------------------------------


def _gen(generator, device):
    if generator is not None:
        return generator
    return generator_for(as_device(device))


def _random(sample, size, dtype, device, requires_grad, generator, default=None):
    d = as_device(device)
    g = _gen(generator, d)
    np_dtype = _as_np_dtype(dtype) or default or _dt.get_default_dtype().np
    arr = sample(g.np, size, np_dtype)
    if d.type == "cpu" and g.device.type != "cpu":
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found '{g.device}'")
    t = Tensor._make(arr if d.type == "cpu" else to_device(arr, d))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float_sample(method):
    def sample(rng, size, np_dtype):
        work = np_dtype if np_dtype in (np.float32, np.float64) else np.float32
        return getattr(rng, method)(size=size, dtype=work).astype(np_dtype, copy=False)
    return sample


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    return _random(_float_sample("random"), _size(size), dtype, device, requires_grad, generator)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    return _random(_float_sample("standard_normal"), _size(size), dtype, device, requires_grad, generator)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    return rand(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad, generator=generator)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    return randn(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad, generator=generator)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _random(lambda rng, s, dt: rng.integers(low, high, size=s).astype(dt), _size((tuple(size),)), dtype,
                   device, requires_grad, generator, default=np.int64)


def randint_like(input, low, high=None, *, dtype=None, device=None, generator=None):
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                   generator=generator)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    return _random(lambda rng, s, dt: rng.permutation(n).astype(dt), (n,), dtype, device, False, generator,
                   default=np.int64)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if type(mean) is Tensor or type(std) is Tensor:
        m = mean if type(mean) is Tensor else None
        s = std if type(std) is Tensor else None
        ref = m if m is not None else s
        noise = randn(tuple(np.broadcast_shapes(tuple(ref.shape), tuple((s if s is not None else ref).shape))),
                      dtype=ref.dtype, device=ref.device, generator=generator)
        return (noise * std + mean).detach()
    if size is None:
        raise TypeError("normal(): with float mean and std a size is required")
    return randn(tuple(size), generator=generator, dtype=dtype, device=device, requires_grad=False) * std + mean


def bernoulli(input, p=None, *, generator=None):
    probs = input if p is None else full_like(input, p)
    d = probs.device
    g = _gen(generator, d)
    u = g.np.random(size=tuple(probs.shape))
    arr = (to_device(u, d) < probs._data).astype(probs._data.dtype)
    return Tensor._make(arr)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Sample indices from each row of non-negative weights (1-D or 2-D input)."""
    probs = input.detach().__array__().astype(np.float64)
    if probs.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {probs.ndim}")
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0, inf or nan)")
    rows = probs.reshape(-1, probs.shape[-1])
    g = _gen(generator, CPU)
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for i, row in enumerate(rows):
        total = row.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(row):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        out[i] = g.np.choice(row.size, size=num_samples, replace=replacement, p=row / total)
    out = out.reshape(probs.shape[:-1] + (num_samples,))
    return Tensor._make(to_device(out, input.device))
