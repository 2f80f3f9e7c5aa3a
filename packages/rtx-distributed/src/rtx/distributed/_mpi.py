"""The MPI backend: collectives on arrays through mpi4py's nonblocking calls (Iallreduce, Ibcast, ...).
Every call returns a Work; the blocking API waits on it at once (for large buffers MPICH's
nonblocking and blocking algorithms run at the same speed here, see the README's benchmark).

Buffers are the arrays themselves, in place (the tensor's NumPy array is handed to MPI, no copy),
except where MPI has no matching type: float16 and bfloat16 are reduced in float32 and written
back; bool is reduced as uint8 (SUM is a logical or, PRODUCT a logical and). Data that is only
moved (broadcast, gathers, send/recv) travels as bytes, whatever its dtype. CUDA arrays are
staged through host memory: the MPICH wheel is not CUDA-aware (use the 'nccl' backend on GPUs).
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI

from rtx.distributed.process_group import ReduceOp, Work
from rtx.runtime.dtypes import is_bfloat16

_MPI_OPS = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
            ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}
_BOOL_OPS = {ReduceOp.SUM: MPI.MAX, ReduceOp.PRODUCT: MPI.MIN, ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX,
             ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}


def check_op(op, dtype, name) -> None:
    """The combinations no backend can reduce, with the reason."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp (e.g. ReduceOp.SUM), got {op!r}")
    kind = np.dtype(dtype).kind if not is_bfloat16(dtype) else "f"
    if op is ReduceOp.AVG and kind not in "fc":
        raise ValueError(f"{name}: ReduceOp.AVG needs a floating point tensor, got {dtype}; reduce with SUM and "
                         "divide")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and kind == "c":
        raise ValueError(f"{name}: ReduceOp.{op.name} is not defined for complex tensors")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "iub":
        raise ValueError(f"{name}: ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")


def _flat(a):
    return a.reshape(-1)


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


class _Host:
    """The NumPy array MPI works on: the array itself on the CPU, a host copy of a CUDA array
    (copied back by `back()`)."""

    def __init__(self, array, fetch=True):
        self.dev = None if isinstance(array, np.ndarray) else array
        if self.dev is None:
            self.a = array
        else:
            self.a = array.get() if fetch else np.empty(array.shape, array.dtype)

    def back(self):
        if self.dev is not None:
            self.dev.set(self.a)


def _typed(a, op):
    """(buffer MPI can reduce, MPI op, write-back or None) for host array `a`."""
    if a.dtype == np.bool_:
        return _flat(a).view(np.uint8), _BOOL_OPS[op], None
    if is_bfloat16(a.dtype) or a.dtype == np.float16:
        tmp = _flat(a).astype(np.float32)

        def back():
            _flat(a)[...] = tmp
        return tmp, _MPI_OPS[op], back
    return _flat(a), _MPI_OPS[op], None


class MPIBackend:
    def __init__(self, pg):
        self.pg = pg
        self.comm = pg.comm

    def _size(self):
        return self.pg.size()

    def allreduce(self, array, op, name="all_reduce") -> Work:
        check_op(op, array.dtype, name)
        h = _Host(array)
        buf, mop, back = _typed(h.a, op)
        req = self.comm.Iallreduce(MPI.IN_PLACE, buf, mop)

        def finish(_):
            if op is ReduceOp.AVG:
                buf[...] /= self._size()
            if back is not None:
                back()
            h.back()
        return Work(name, self.pg, [req], finish, keep=(h, buf))

    def broadcast(self, array, root, name="broadcast") -> Work:
        h = _Host(array)
        req = self.comm.Ibcast(_bytes(h.a), root=root)
        return Work(name, self.pg, [req], lambda _: h.back(), keep=h)

    def allgather(self, out, inp, name="all_gather") -> Work:
        hi, ho = _Host(inp), _Host(out, fetch=False)
        req = self.comm.Iallgather(_bytes(hi.a), _bytes(ho.a))
        return Work(name, self.pg, [req], lambda _: ho.back(), keep=(hi, ho))

    def gather(self, out, inp, root, name="gather") -> Work:
        hi = _Host(inp)
        ho = _Host(out, fetch=False) if out is not None else None
        req = self.comm.Igather(_bytes(hi.a), _bytes(ho.a) if ho is not None else None, root=root)
        return Work(name, self.pg, [req], lambda _: ho is not None and ho.back(), keep=(hi, ho))

    def scatter(self, out, inp, root, name="scatter") -> Work:
        ho = _Host(out, fetch=False)
        hi = _Host(inp) if inp is not None else None
        req = self.comm.Iscatter(_bytes(hi.a) if hi is not None else None, _bytes(ho.a), root=root)
        return Work(name, self.pg, [req], lambda _: ho.back(), keep=(hi, ho))

    def reduce(self, array, root, op, name="reduce") -> Work:
        check_op(op, array.dtype, name)
        h = _Host(array)
        buf, mop, back = _typed(h.a, op)
        is_root = self.pg.rank() == root
        if is_root:
            req = self.comm.Ireduce(MPI.IN_PLACE, buf, mop, root=root)
        else:
            req = self.comm.Ireduce(buf, None, mop, root=root)

        def finish(_):
            if is_root:
                if op is ReduceOp.AVG:
                    buf[...] /= self._size()
                if back is not None:
                    back()
                h.back()
        return Work(name, self.pg, [req], finish, keep=(h, buf))

    def reduce_scatter(self, out, inp, op, name="reduce_scatter") -> Work:
        check_op(op, out.dtype, name)
        hi, ho = _Host(inp), _Host(out, fetch=False)
        ibuf, mop, _ = _typed(hi.a, op)
        obuf, _, back = _typed(ho.a, op)
        req = self.comm.Ireduce_scatter_block(ibuf, obuf, mop)

        def finish(_):
            if op is ReduceOp.AVG:
                obuf[...] /= self._size()
            if back is not None:
                back()
            ho.back()
        return Work(name, self.pg, [req], finish, keep=(hi, ho, ibuf, obuf))

    def alltoall(self, out, inp, out_counts=None, in_counts=None, name="all_to_all") -> Work:
        """Equal blocks, or `*_counts` bytes per rank (displacements follow)."""
        hi, ho = _Host(inp), _Host(out, fetch=False)
        if out_counts is None:
            req = self.comm.Ialltoall(_bytes(hi.a), _bytes(ho.a))
        else:
            req = self.comm.Ialltoallv([_bytes(hi.a), (list(in_counts), _displs(in_counts)), MPI.BYTE],
                                       [_bytes(ho.a), (list(out_counts), _displs(out_counts)), MPI.BYTE])
        return Work(name, self.pg, [req], lambda _: ho.back(), keep=(hi, ho))

    def send(self, array, dst, tag=0, name="send") -> Work:
        h = _Host(array)
        req = self.comm.Isend(_bytes(h.a), dest=dst, tag=tag)
        return Work(name, self.pg, [req], keep=h)

    def recv(self, array, src, tag=0, name="recv") -> Work:
        h = _Host(array, fetch=False)
        req = self.comm.Irecv(_bytes(h.a), source=MPI.ANY_SOURCE if src is None else src,
                              tag=MPI.ANY_TAG if tag is None else tag)
        return Work(name, self.pg, [req], lambda _: h.back(), keep=h)

    def barrier(self, name="barrier") -> Work:
        return Work(name, self.pg, [self.comm.Ibarrier()])


def _displs(counts):
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return out
