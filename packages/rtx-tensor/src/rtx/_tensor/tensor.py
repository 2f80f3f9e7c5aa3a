"""The Tensor: one NumPy or CuPy array plus autograd metadata. Ops live in ops/*.py and are
attached as methods in methods.py; this file holds what is intrinsic to the object."""
from __future__ import annotations

import numpy as np

from rtx.autograd import graph
from rtx.autograd.grad_mode import _state
from rtx.runtime import devices as _device
from rtx.runtime import dtypes as _dt

_new = object.__new__


class Tensor:
    # The fields every tensor sets are slots; the rare ones are class-level defaults, written into
    # the instance's __dict__ only where they differ (a leaf's gradient accumulator, an output
    # other than the first of a multi-output op, an inference tensor). _make runs for every op
    # result, so each field it need not set is time saved on every op.
    __slots__ = ("_data", "requires_grad", "grad_fn", "grad", "_vc", "_base", "__dict__", "__weakref__")
    _output_nr = 0
    _accumulator = None
    _inference = False
    _is_rtx_tensor = True
    __array_priority__ = 1000  # numpy_scalar * tensor goes to Tensor.__rmul__

    def __init__(self, data=None, *args, **kwargs):
        raise TypeError("build tensors with rtx.tensor(data), rtx.as_tensor, rtx.from_numpy or rtx.zeros/ones/...")

    @staticmethod
    def _make(data, grad_fn=None, output_nr=0):
        if type(data) is not np.ndarray and isinstance(data, np.generic):
            data = np.asarray(data)  # NumPy turns 0-d results into scalars; a Tensor keeps an array
        t = _new(Tensor)
        t._data = data
        t.grad_fn = grad_fn
        t.requires_grad = grad_fn is not None
        t.grad = None
        t._vc = [0]
        t._base = None
        if output_nr:
            t._output_nr = output_nr
        if _state.inference:
            t._inference = True
        return t

    # ---- metadata -----------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self):
        return _dt.from_numpy(self._data.dtype)

    @property
    def device(self):
        d = self._data
        if type(d) is np.ndarray:
            return _device.CPU
        return _device.device_of(d)

    @property
    def is_cuda(self):
        return type(self._data) is not np.ndarray

    @property
    def is_cpu(self):
        return type(self._data) is np.ndarray

    # PyTorch's other device and layout queries: an rtx tensor is dense, strided, unquantized and
    # on the CPU or a CUDA GPU, so each of these is False (scripts branch on them).
    is_xpu = is_mps = is_meta = is_quantized = is_sparse = is_sparse_csr = is_mkldnn = is_vulkan = is_ipu = \
        is_hpu = is_mtia = is_maia = is_nested = property(lambda self: False)

    def get_device(self):
        """The CUDA device index, or -1 on the CPU (torch.Tensor.get_device)."""
        return -1 if type(self._data) is np.ndarray else self.device.index

    def share_memory_(self):
        """Move the data into shared memory (a memfd / shared file), so processes this tensor is sent
        to through rtx.multiprocessing (or forked after this call) read and write the same numbers.
        Views taken before the call keep the old memory; take views after it."""
        from rtx.multiprocessing.shared import share_array
        if type(self._data) is np.ndarray:  # CUDA tensors are shared through CUDA IPC in PyTorch: a no-op there
            self._data = share_array(self._data)
        return self

    def is_shared(self):
        """True when the data is in shared memory (CUDA tensors: False, rtx has no CUDA IPC sharing)."""
        from rtx.multiprocessing.shared import segment_of
        return type(self._data) is np.ndarray and segment_of(self._data) is not None

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def stride(self, dim=None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[_wrap_dim(dim, self._data.ndim, "stride")]

    def is_contiguous(self, memory_format=None):
        return bool(self._data.flags.c_contiguous)

    def data_ptr(self):
        d = self._data
        return d.ctypes.data if type(d) is np.ndarray else d.data.ptr

    def is_floating_point(self):
        d = self._data.dtype
        return d.kind == "f" or _dt.is_bfloat16(d)

    def is_complex(self):
        return self._data.dtype.kind == "c"

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _version(self):
        return self._vc[0]

    @property
    def data(self):
        """The same storage, detached from the graph (as torch's .data)."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data

    @property
    def is_inference(self):
        return self._inference

    def _type_str(self):
        return f"rtx.{self.dtype.name} tensor of shape {list(self._data.shape)}"

    # ---- autograd ------------------------------------------------------------------------
    def requires_grad_(self, requires_grad=True):
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to use "
                               "a computed variable in a subgraph that doesn't require differentiation use "
                               "var_no_grad = var.detach().")
        if requires_grad and not (self.is_floating_point() or self.is_complex()):
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require gradients "
                               f"(got {self.dtype})")
        self.requires_grad = bool(requires_grad) or self.grad_fn is not None
        return self

    def detach(self):
        t = Tensor._make(self._data)
        t._vc = self._vc
        t._base = self if self._base is None else self._base
        return t

    def detach_(self):
        if self._base is not None and self._base.requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self.requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from rtx.autograd.engine import backward
        backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """hook(grad) -> new grad or None, called when this tensor's gradient is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            self.grad_fn._add_tensor_hook(self._output_nr, hook)
            hooks = self.grad_fn._tensor_hooks[self._output_nr]
        else:
            acc = graph.grad_accumulator(self)
            self.__dict__["_grad_acc_ref"] = acc  # keep the hooks' holder alive with the tensor
            acc.hooks.append(hook)
            hooks = acc.hooks
        return _RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        acc = graph.grad_accumulator(self)
        self.__dict__["_grad_acc_ref"] = acc
        acc.post_hooks.append(hook)
        return _RemovableHandle(acc.post_hooks, hook)

    def retain_grad(self):
        if self.grad_fn is None:
            if not self.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        import weakref
        fn = self.grad_fn
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self):
        fn = self.grad_fn
        return fn is not None and fn._retain is not None and self._output_nr in fn._retain

    def _check_inplace(self):
        """In-place writes must not corrupt the graph: refuse them where PyTorch does."""
        if _state.enabled:
            if self.grad_fn is None and self.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            base = self._base
            if base is not None and (base.requires_grad or self.requires_grad) and self.grad_fn is not None:
                raise RuntimeError("in-place operation on a view of a tensor that is part of an autograd graph "
                                   "is not supported in rtx (PyTorch rebases the view's history); do the "
                                   "operation out of place, e.g. x = x.clone() first or torch.where(...)")
        if self._inference and not _state.inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.")

    def _bump(self):
        self._vc[0] += 1

    # ---- conversions ---------------------------------------------------------------------
    def numpy(self, *, force=False):
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        if type(self._data) is not np.ndarray:
            if not force:
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                                "to copy the tensor to host memory first.")
            return self._data.get()
        return self._data

    def __array__(self, dtype=None, copy=None):
        a = self._data if type(self._data) is np.ndarray else self._data.get()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return np.array(a, copy=True) if copy else a

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item() if not _dt.is_bfloat16(self._data.dtype) \
            else float(self._data.reshape(()))

    def tolist(self):
        d = self._data if type(self._data) is np.ndarray else self._data.get()
        if _dt.is_bfloat16(d.dtype):
            d = d.astype(np.float32)
        return d.tolist()

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                               f"(the tensor has {self._data.size} elements); use .any() or .all()")
        return bool(self._data.reshape(()))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, protocol):
        from rtx._tensor.serialization import _rebuild_tensor
        # nn.Parameter is this class with a flag in __dict__: the flag travels with copies and pickles.
        state = {k: v for k, v in self.__dict__.items() if k in ("_is_param", "_param_kind")}
        return (_rebuild_tensor, (self.__array__(), str(self.device), self.requires_grad)) + ((state,) if state else ())

    def __repr__(self):
        from rtx._tensor.printing import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __dlpack__(self, stream=None, **kwargs):
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        # max_version / dl_device / copy go through: without max_version NumPy imports read-only
        if stream is not None:
            kwargs["stream"] = stream
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()


class Size(tuple):
    """torch.Size: a tuple of ints with numel()."""

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"rtx.Size({list(self)})"

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out


class _RemovableHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _wrap_dim(dim, ndim, op="op"):
    if not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim
