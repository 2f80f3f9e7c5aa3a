"""DistributedDataParallel: every rank holds a replica of the model, runs its share of the batch,
and the gradients are averaged across ranks during backward, so every replica takes the same
optimizer step (torch.nn.parallel.DistributedDataParallel).

How the averaging overlaps with backward, as PyTorch's Reducer does:
- Parameters are packed into buckets (`bucket_cap_mb`, 25 MB by default; the first bucket 1 MB so
  that communication starts early, or bucket_cap_mb if smaller) in reverse order of
  `module.parameters()`, the order in which backward produces their gradients.
- A post-accumulate-grad hook on each parameter copies its fresh gradient into its bucket; when a
  bucket is full its all-reduce starts (nonblocking: MPI Iallreduce, or NCCL on the stream) while
  backward goes on computing earlier layers. Buckets start strictly in order, so every rank issues
  the same collectives in the same order even when its gradients arrive in another order.
- The end of backward: rtx's engine has no queue_callback, so the reduction is finished by the hook
  that fills the last bucket, i.e. as soon as every expected gradient has arrived. It waits for all
  buckets, divides by the world size and writes the averages into `.grad`. Nothing is left for the
  optimizer step to check; a backward that never produced some gradient is reported at the next
  forward, with PyTorch's message (use find_unused_parameters=True for such models).

find_unused_parameters=True walks the autograd graph from the forward's outputs (as PyTorch does)
and marks the parameters it does not reach as ready at once, with zero gradient; a small extra
all-reduce of the per-rank "used" flags then tells which parameters no rank used: their `.grad`
is left untouched (None stays None), as in PyTorch.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from rtx.distributed.process_group import ReduceOp, _resolve
from rtx.extend import Tensor, grad_mode, increment_version, raw, wrap
from rtx.nn.modules.module import Module
from rtx.runtime import array_module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES
_DEFAULT_BUCKET_CAP_MB = 25


def _flatten_tensors(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _flatten_tensors(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _flatten_tensors(x, out)
    return out


def broadcast_coalesced(pg, tensors, src_group_rank=0) -> None:
    """Broadcast `tensors` from a rank in one message per (dtype, device), in place."""
    groups: dict = {}
    for t in tensors:
        groups.setdefault((raw(t).dtype, str(t.device)), []).append(t)
    for ts in groups.values():
        xp = array_module(raw(ts[0]))
        flat = xp.concatenate([raw(t).reshape(-1) for t in ts])
        pg.for_array(flat).broadcast(flat, src_group_rank, name="DDP parameter broadcast").wait()
        o = 0
        for t in ts:
            n = raw(t).size
            raw(t)[...] = flat[o:o + n].reshape(raw(t).shape)  # not reshape(-1)[...]: a copy if t is strided
            increment_version(t)
            o += n


class _Bucket:
    __slots__ = ("members", "buffer", "pending", "work")

    def __init__(self, members, buffer):
        self.members = members  # [(param index, offset, numel, shape)]
        self.buffer = buffer
        self.pending = 0
        self.work = None


class _Reducer:
    def __init__(self, params, names, pg, bucket_bytes, find_unused, as_view):
        self.params, self.names, self.pg = params, names, pg
        self.find_unused, self.as_view = find_unused, as_view
        self.buckets = self._assign(bucket_bytes)
        self.where = {}
        for b in self.buckets:
            for m in b.members:
                self.where[m[0]] = (b, m[1], m[2])
        self.expect = self.started = False
        self.finished = True
        self.ready = [False] * len(params)
        self.local_used = np.ones(len(params), np.uint8)
        self.launch_log: list[int] = []  # gradients seen when each bucket was launched (tests check overlap)
        self.hooks_fired = 0
        self.handles = [p.register_post_accumulate_grad_hook(self._hook) for p in params]
        self.index = {id(p): i for i, p in enumerate(params)}

    def _assign(self, cap):
        """Reverse parameter order, one bucket list per (dtype, device); PyTorch's size limits."""
        done, open_ = [], {}
        for i in reversed(range(len(self.params))):
            p = self.params[i]
            key = (raw(p).dtype, str(p.device))
            cur = open_.setdefault(key, {"members": [], "bytes": 0, "first": not any(k == key for k, _ in done)})
            cur["members"].append(i)
            cur["bytes"] += raw(p).nbytes
            limit = min(_FIRST_BUCKET_BYTES, cap) if cur["first"] else cap
            if cur["bytes"] >= limit:
                done.append((key, open_.pop(key)["members"]))
        done += [(k, v["members"]) for k, v in open_.items()]
        buckets = []
        for _, members in done:
            xp = array_module(raw(self.params[members[0]]))
            dtype = raw(self.params[members[0]]).dtype
            layout, o = [], 0
            for i in members:
                n = raw(self.params[i]).size
                layout.append((i, o, n, raw(self.params[i]).shape))
                o += n
            buckets.append(_Bucket(layout, xp.zeros(o, dtype)))
        return buckets

    # ---- one iteration -----------------------------------------------------------------------------
    def prepare(self, outputs):
        self.ready = [False] * len(self.params)
        for b in self.buckets:
            b.pending, b.work = len(b.members), None
        self.next_bucket = 0
        self.works = []
        self.launch_log = []
        self.hooks_fired = 0
        self.started, self.finished, self.expect = False, False, True
        if self.find_unused:
            used = self._reachable(outputs)
            self.local_used = np.array([id(p) in used for p in self.params], np.uint8)
            for i in np.flatnonzero(self.local_used == 0):
                self._mark_ready(int(i), None)

    def _reachable(self, outputs):
        used, seen = set(), set()
        stack = []
        for t in _flatten_tensors(outputs, []):
            if t.grad_fn is not None:
                stack.append(t.grad_fn)
            elif t.requires_grad:
                used.add(id(t))
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            var = getattr(node, "variable", None)
            if var is not None:
                used.add(id(var))
                continue
            for edge in node.next_edges:
                if edge is not None and id(edge[0]) not in seen:
                    stack.append(edge[0])
        return used

    def _hook(self, p):
        if not self.expect:
            return
        i = self.index[id(p)]
        if self.ready[i]:
            why = (" find_unused_parameters marked it unused (the autograd graph of the forward's outputs does not "
                   "reach it), yet it received a gradient: it was used outside the DDP forward"
                   if self.find_unused and not self.local_used[i] else " it received a gradient twice in one backward")
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter {self.names[i]} (index {i}):"
                               f"{why}. Call the DDP-wrapped module once per backward, or use no_sync().")
        self.started = True
        self.hooks_fired += 1
        self._mark_ready(i, raw(p.grad))

    def _mark_ready(self, i, grad):
        b, off, n = self.where[i]
        if grad is None:
            b.buffer[off:off + n] = 0
        else:
            b.buffer[off:off + n] = grad.reshape(-1)
        self.ready[i] = True
        b.pending -= 1
        if b.pending == 0:
            self._launch()
        elif self.works:
            self.works[-1].is_completed()  # drive MPI's progress engine while backward runs

    def _launch(self):
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            b = self.buckets[self.next_bucket]
            b.work = self.pg.for_array(b.buffer).allreduce(b.buffer, ReduceOp.SUM, name="DDP gradient all_reduce")
            self.works.append(b.work)
            self.launch_log.append(self.hooks_fired)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self._finalize()

    def _finalize(self):
        for w in self.works:
            w.wait()
        used = None
        if self.find_unused:
            used = self.local_used.copy()
            self.pg.mpi.allreduce(used, ReduceOp.MAX, name="DDP unused-parameter map").wait()
        size = self.pg.size()
        for b in self.buckets:
            b.buffer /= size
            for i, off, n, shape in b.members:
                if used is not None and not used[i]:
                    continue  # no rank used it: its .grad stays as it was
                p = self.params[i]
                view = b.buffer[off:off + n].reshape(shape)
                if self.as_view:
                    if p.grad is None or raw(p.grad).base is not b.buffer:
                        p.grad = wrap(view)
                    increment_version(p.grad)
                elif p.grad is None:
                    p.grad = wrap(view.copy())
                else:
                    raw(p.grad)[...] = view
                    increment_version(p.grad)
        self.finished, self.expect = True, False

    def unfinished_message(self) -> str:
        missing = [i for i, r in enumerate(self.ready) if not r]
        rank = self.pg.rank()
        return ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`rtx.distributed.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.\n"
                f"Parameter indices which did not receive grad for rank {rank}: {' '.join(map(str, missing))}\n"
                f"Parameters which did not receive grad for rank {rank}: "
                f"{', '.join(self.names[i] for i in missing)}")


class DistributedDataParallel(Module):
    """Data parallelism at the module level (torch.nn.parallel.DistributedDataParallel).

    Wrap the model after init_process_group (and after moving it to its device): rank 0's
    parameters and buffers are broadcast to every rank, then each backward averages the gradients
    across ranks, overlapped with backward (see the module docstring). The wrapped model is
    `.module`; state_dict keys carry the "module." prefix, as in PyTorch.

    Arguments as PyTorch: broadcast_buffers (rank 0's buffers, e.g. BatchNorm statistics, are
    broadcast before every forward), bucket_cap_mb, find_unused_parameters,
    gradient_as_bucket_view (each .grad becomes a view into its bucket: no copy back, less memory),
    process_group. device_ids/output_device are checked and otherwise unused: one rank drives one
    device, the module's. static_graph and check_reduction are accepted and ignored. Not
    supported: comm hooks (register_comm_hook), join(), mixed_precision.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        if kwargs:
            raise TypeError(f"DistributedDataParallel: unsupported arguments {sorted(kwargs)} (comm hooks, "
                            "mixed_precision and device meshes are not implemented in rtx)")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel expects an nn.Module to wrap, got {type(module).__name__}")
        pg = _resolve(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        devices = {str(p.device) for _, p in named}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel: the module's parameters are on several devices "
                             f"({sorted(devices)}); one rank drives one device")
        if device_ids is not None:
            if len(device_ids) != 1:
                raise ValueError(f"device_ids can only be None or contain a single element, got {device_ids}")
            want = device_ids[0] if isinstance(device_ids[0], int) else getattr(device_ids[0], "index", None)
            dev = named[0][1].device
            if dev.type != "cuda" or (want is not None and dev.index != want):
                raise ValueError(f"DistributedDataParallel: device_ids={device_ids} but the module's parameters are "
                                 f"on {dev}; move the module first (module.to(device))")
        if bucket_cap_mb is None:
            bucket_cap_mb = _DEFAULT_BUCKET_CAP_MB
        if not bucket_cap_mb > 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.process_group = pg
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        if init_sync and pg.size() > 1:
            broadcast_coalesced(pg, [p for p in module.parameters()] + [b for b in module.buffers()])
        self.reducer = _Reducer([p for _, p in named], [n for n, _ in named], pg, self.bucket_bytes_cap,
                                find_unused_parameters, gradient_as_bucket_view)

    def forward(self, *inputs, **kwargs):
        r = self.reducer
        if r.started and not r.finished:
            raise RuntimeError(r.unfinished_message())
        if self.require_forward_param_sync and self.broadcast_buffers and self.process_group.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                broadcast_coalesced(self.process_group, buffers)
        out = self.module(*inputs, **kwargs)
        if grad_mode.enabled and self.require_backward_grad_sync:
            r.prepare(out)
        else:
            r.expect = False
        return out

    @contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without communicating; the first backward
        after it averages the accumulated gradients (torch's no_sync)."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def extra_repr(self) -> str:
        return f"world_size={self.process_group.size()}, buckets={len(self.reducer.buckets)}"
