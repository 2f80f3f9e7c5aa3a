"""The NCCL backend: collectives on CuPy arrays through cupy.cuda.nccl, on the current CUDA stream.

The communicator is bootstrapped over MPI: rank 0 of the group draws NCCL's unique id and the
group's MPI communicator broadcasts it (no TCP store). Calls are enqueued on the current stream,
so they are ordered with the compute before and after them; Work.wait() synchronizes on an event
recorded after the call (stricter than PyTorch, whose wait only makes the current stream wait).

NCCL has no gather, scatter or all-to-all: they are grouped point-to-point sends and receives
(ncclGroupStart/End), as PyTorch's NCCL backend does. Complex tensors travel as pairs of reals
(SUM and AVG only); bool as uint8 (SUM is max, i.e. logical or; PRODUCT is min, i.e. logical and).
"""
from __future__ import annotations

import numpy as np

from rtx.distributed._mpi import check_op
from rtx.distributed.process_group import ReduceOp, Work
from rtx.runtime.dtypes import is_bfloat16

# ncclDataType_t and ncclRedOp_t values (nccl.h); cupy.cuda.nccl exports most of them by name.
_NCCL_TYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "float16": 6,
               "float32": 7, "float64": 8, "bfloat16": 9}
_NCCL_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3, ReduceOp.AVG: 4}
_NCCL_AVG_VERSION = 21000  # ncclAvg appeared in NCCL 2.10
_NCCL_BF16_VERSION = 21000


class NCCLBackend:
    def __init__(self, pg, device):
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise RuntimeError("init_process_group('nccl') needs CuPy with NCCL: pip install 'rtx-distributed[cuda12]' "
                               f"(or [cuda13]); importing it failed: {e}") from None
        if not cupy.cuda.is_available():
            raise RuntimeError("init_process_group('nccl'): CuPy finds no usable CUDA device or driver on this rank; "
                               "use backend='mpi' on CPUs")
        if not getattr(nccl, "available", False):
            raise RuntimeError("init_process_group('nccl'): this CuPy build has no NCCL support; install a CuPy "
                               "wheel with NCCL (pip install cupy-cuda12x) or use backend='mpi'")
        self.cp, self.nccl_mod = cupy, nccl
        count = cupy.cuda.runtime.getDeviceCount()
        if count == 0:
            raise RuntimeError("init_process_group('nccl'): no CUDA device is visible to this rank")
        self.device = int(device if device is not None else 0) % count
        cupy.cuda.Device(self.device).use()
        self.pg = pg
        self.version = nccl.get_version()
        uid = nccl.get_unique_id() if pg.rank() == 0 else None
        with pg.watch("NCCL communicator setup"):
            uid = pg.comm.bcast(uid, root=0)
            self.comm = nccl.NcclCommunicator(pg.size(), uid, pg.rank())

    def destroy(self):
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None

    # ---- helpers -------------------------------------------------------------------------------------
    def _stream(self):
        return self.cp.cuda.get_current_stream()

    def _work(self, name, finish=None, keep=None) -> Work:
        event = self.cp.cuda.Event(disable_timing=True)
        event.record(self._stream())
        return Work(name, self.pg, event=event, finish=finish, keep=keep)

    def _check(self, array, name):
        dev = array.device.id
        if dev != self.device:
            raise ValueError(f"{name}: the tensor is on cuda:{dev} but this rank's NCCL communicator uses "
                             f"cuda:{self.device}; move it with .to('cuda:{self.device}')")

    def _reducible(self, array, op, name):
        """(flat array, NCCL dtype, NCCL op, AVG done by hand)."""
        check_op(op, array.dtype, name)
        if op not in _NCCL_OPS:
            raise ValueError(f"{name}: NCCL has no ReduceOp.{op.name}; use the 'mpi' backend for bitwise reductions")
        flat = array.reshape(-1)
        nop = _NCCL_OPS[op]
        manual_avg = op is ReduceOp.AVG and self.version < _NCCL_AVG_VERSION
        if manual_avg:
            nop = _NCCL_OPS[ReduceOp.SUM]
        dt = array.dtype
        if dt == np.bool_:
            nop = {ReduceOp.SUM: 2, ReduceOp.PRODUCT: 3}.get(op, nop)
            return flat.view(np.uint8), _NCCL_TYPES["uint8"], nop, False
        if dt.kind == "c":
            if op not in (ReduceOp.SUM, ReduceOp.AVG):
                raise ValueError(f"{name}: NCCL reduces complex tensors with SUM or AVG only, got {op.name}")
            real = np.float32 if dt == np.complex64 else np.float64
            return flat.view(real), _NCCL_TYPES[np.dtype(real).name], nop, manual_avg
        if is_bfloat16(dt):
            if self.version < _NCCL_BF16_VERSION:
                raise ValueError(f"{name}: bfloat16 needs NCCL >= 2.10 (found {self.version})")
            return flat, _NCCL_TYPES["bfloat16"], nop, manual_avg
        key = np.dtype(dt).name
        if key not in _NCCL_TYPES:
            raise ValueError(f"{name}: NCCL cannot reduce {dt} tensors")
        return flat, _NCCL_TYPES[key], nop, manual_avg

    @staticmethod
    def _bytes(array):
        return array.reshape(-1).view(np.uint8)

    # ---- collectives ---------------------------------------------------------------------------------
    def allreduce(self, array, op, name="all_reduce") -> Work:
        self._check(array, name)
        flat, dt, nop, manual = self._reducible(array, op, name)
        s = self._stream()
        self.comm.allReduce(flat.data.ptr, flat.data.ptr, flat.size, dt, nop, s.ptr)
        if manual:
            flat /= self.pg.size()
        return self._work(name, keep=flat)

    def broadcast(self, array, root, name="broadcast") -> Work:
        self._check(array, name)
        b = self._bytes(array)
        self.comm.bcast(b.data.ptr, b.size, _NCCL_TYPES["uint8"], root, self._stream().ptr)
        return self._work(name, keep=b)

    def allgather(self, out, inp, name="all_gather") -> Work:
        self._check(inp, name)
        bi, bo = self._bytes(inp), self._bytes(out)
        self.comm.allGather(bi.data.ptr, bo.data.ptr, bi.size, _NCCL_TYPES["uint8"], self._stream().ptr)
        return self._work(name, keep=(bi, bo))

    def reduce(self, array, root, op, name="reduce") -> Work:
        self._check(array, name)
        flat, dt, nop, manual = self._reducible(array, op, name)
        self.comm.reduce(flat.data.ptr, flat.data.ptr, flat.size, dt, nop, root, self._stream().ptr)
        if manual and self.pg.rank() == root:
            flat /= self.pg.size()
        return self._work(name, keep=flat)

    def reduce_scatter(self, out, inp, op, name="reduce_scatter") -> Work:
        self._check(out, name)
        fi, dt, nop, manual = self._reducible(inp, op, name)
        fo = self._reducible(out, op, name)[0]
        self.comm.reduceScatter(fi.data.ptr, fo.data.ptr, fo.size, dt, nop, self._stream().ptr)
        if manual:
            fo /= self.pg.size()
        return self._work(name, keep=(fi, fo))

    def _p2p_group(self, sends, recvs):
        """Grouped point-to-point: sends/recvs are lists of (byte array, peer)."""
        s = self._stream().ptr
        u8 = _NCCL_TYPES["uint8"]
        self.nccl_mod.groupStart()
        try:
            for b, peer in sends:
                self.comm.send(b.data.ptr, b.size, u8, peer, s)
            for b, peer in recvs:
                self.comm.recv(b.data.ptr, b.size, u8, peer, s)
        finally:
            self.nccl_mod.groupEnd()

    def gather(self, out, inp, root, name="gather") -> Work:
        self._check(inp, name)
        bi = self._bytes(inp)
        n = bi.size
        if self.pg.rank() == root:
            bo = self._bytes(out)
            bo[root * n:(root + 1) * n] = bi
            self._p2p_group([], [(bo[r * n:(r + 1) * n], r) for r in range(self.pg.size()) if r != root])
            return self._work(name, keep=(bi, bo))
        self._p2p_group([(bi, root)], [])
        return self._work(name, keep=bi)

    def scatter(self, out, inp, root, name="scatter") -> Work:
        self._check(out, name)
        bo = self._bytes(out)
        n = bo.size
        if self.pg.rank() == root:
            bi = self._bytes(inp)
            bo[...] = bi[root * n:(root + 1) * n]
            self._p2p_group([(bi[r * n:(r + 1) * n], r) for r in range(self.pg.size()) if r != root], [])
            return self._work(name, keep=(bi, bo))
        self._p2p_group([], [(bo, root)])
        return self._work(name, keep=bo)

    def alltoall(self, out, inp, out_counts=None, in_counts=None, name="all_to_all") -> Work:
        self._check(inp, name)
        bi, bo = self._bytes(inp), self._bytes(out)
        size = self.pg.size()
        if out_counts is None:
            out_counts = [bo.size // size] * size
            in_counts = [bi.size // size] * size
        sends, recvs, i0, o0 = [], [], 0, 0
        for r in range(size):
            sends.append((bi[i0:i0 + in_counts[r]], r))
            recvs.append((bo[o0:o0 + out_counts[r]], r))
            i0 += in_counts[r]
            o0 += out_counts[r]
        self._p2p_group(sends, recvs)
        return self._work(name, keep=(bi, bo))

    def send(self, array, dst, tag=0, name="send") -> Work:
        self._check(array, name)
        b = self._bytes(array)
        self._p2p_group([(b, dst)], [])
        return self._work(name, keep=b)

    def recv(self, array, src, tag=0, name="recv") -> Work:
        self._check(array, name)
        if src is None:
            raise ValueError(f"{name}: NCCL cannot receive from any source; give src")
        b = self._bytes(array)
        self._p2p_group([], [(b, src)])
        return self._work(name, keep=b)

    def barrier(self, name="barrier") -> Work:
        one = self.cp.ones(1, dtype=self.cp.float32)
        self.comm.allReduce(one.data.ptr, one.data.ptr, 1, _NCCL_TYPES["float32"], 0, self._stream().ptr)
        return self._work(name, keep=one)
