"""Shared-memory storage for CPU tensors and the pickling rules that send it by handle.

A shared tensor's array lives in a `Segment`: an mmap of a memfd (or, under the "file_system"
strategy, of a named file in /dev/shm). Every view of it finds the segment through NumPy's
`.base` chain, so `is_shared()` and the reducer work on views too. Sending a tensor through a
multiprocessing queue, pipe, Pool or Process argument pickles (fd or file name, offset, shape,
strides, dtype); the receiver maps the same pages, so writes on either side are seen by both.
"""
import mmap
import os
import tempfile
import weakref
from multiprocessing import reduction

import numpy as np

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def get_sharing_strategy():
    return _strategy


def set_sharing_strategy(new_strategy):
    """file_descriptor (default): segments are anonymous memfds passed between processes as file
    descriptors. file_system: segments are files in /dev/shm passed by name (fewer open fds); a
    file is removed when the creating process frees the tensor, so keep the sender's tensor alive
    until the receiver has it, and a killed creator can leave a file behind in /dev/shm."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"sharing strategy must be one of {sorted(_STRATEGIES)}, got {new_strategy!r}")
    _strategy = new_strategy


class Segment(mmap.mmap):
    """One shared mapping. It is the buffer the arrays are built on, so it lives as long as any
    array (or view) of it does; `fd` (file_descriptor) or `path` (file_system) names it to others."""

    def __new__(cls, fd, size, path=None, owner=False):
        self = super().__new__(cls, fd, size)
        self.size, self.path = size, path
        self.address = np.ndarray((size,), np.uint8, buffer=self).ctypes.data
        if path is None:
            self.fd = fd  # kept open: another process gets a duplicate of it when the tensor is sent
            weakref.finalize(self, os.close, fd)
        else:
            self.fd = None
            os.close(fd)  # the mapping keeps the pages; the name lets others open it
            if owner:
                weakref.finalize(self, _unlink, path)
        return self


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _new_segment(nbytes):
    size = max(int(nbytes), 1)  # mmap refuses length 0
    if _strategy == "file_system":
        shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix=f"rtx_{os.getpid()}_", dir=shm_dir)
        os.ftruncate(fd, size)
        return Segment(fd, size, path=path, owner=True)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("rtx_shared", os.MFD_CLOEXEC)
    else:  # no memfd (macOS): an unlinked temporary file is shared the same way
        f = tempfile.TemporaryFile()
        fd = os.dup(f.fileno())
        f.close()
    os.ftruncate(fd, size)
    return Segment(fd, size)


def segment_of(array):
    """The Segment an array's memory lives in, or None."""
    b = array
    while isinstance(b, np.ndarray):
        b = b.base
    if isinstance(b, memoryview):
        b = b.obj
    return b if isinstance(b, Segment) else None


def share_array(array):
    """`array` if it is already in shared memory, else a copy of it in a new segment."""
    if segment_of(array) is not None:
        return array
    seg = _new_segment(array.nbytes)
    out = np.ndarray(array.shape, array.dtype, buffer=seg)
    out[...] = array
    return out


def _array_in(seg, offset, shape, strides, dtype):
    return np.ndarray(shape, dtype, buffer=seg, offset=offset, strides=strides)


# ---- pickling: what a queue, pipe, Pool or spawned Process sends -----------------------------
def reduce_tensor(t):
    from rtx._tensor.tensor import Tensor  # noqa: F401  (rtx-tensor's own class)
    if type(t._data) is not np.ndarray:
        raise RuntimeError("rtx.multiprocessing shares CPU tensors only (rtx has no CUDA IPC): "
                           "send tensor.cpu() and move it to the GPU in the receiving process")
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the "
                           "data, call detach() on the tensor before serializing (e.g., putting it on the queue).")
    a = t._data
    if segment_of(a) is None:  # as PyTorch: sending a tensor moves it to shared memory first
        t.share_memory_()
        a = t._data
    seg = segment_of(a)
    if seg.path is not None:
        handle = ("path", seg.path)
    else:
        handle = ("fd", reduction.DupFd(seg.fd))
    state = {k: v for k, v in t.__dict__.items() if k in ("_is_param", "_param_kind")}
    layout = (a.ctypes.data - seg.address, a.shape, a.strides, a.dtype)
    return rebuild_tensor, (handle, seg.size, layout, t.requires_grad, state)


def rebuild_tensor(handle, size, layout, requires_grad, state):
    from rtx._tensor.tensor import Tensor
    kind, h = handle
    if kind == "fd":
        seg = Segment(h.detach(), size)
    else:
        try:
            fd = os.open(h, os.O_RDWR)
        except FileNotFoundError:
            raise RuntimeError(f"shared tensor file {h} is gone: under the file_system sharing strategy the "
                               "sending process must keep the tensor alive until it is received") from None
        seg = Segment(fd, size, path=h)
    t = Tensor._make(_array_in(seg, *layout))
    t.requires_grad = requires_grad
    t.__dict__.update(state)
    return t


def init_reductions():
    from rtx._tensor.tensor import Tensor
    reduction.ForkingPickler.register(Tensor, reduce_tensor)


init_reductions()  # a process that received a shared tensor sends tensors the same way
