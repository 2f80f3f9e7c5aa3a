"""Collectives on rtx tensors, with torch.distributed's names, signatures and in-place semantics:
all_reduce writes the result into its tensor, all_gather into the tensors of its list, and so on.
Every function takes group=None (the default group) or a group from new_group(), src/dst as
global ranks (or group_src/group_dst as ranks within the group), and async_op: False waits and
returns None, True returns a Work whose wait() finishes the operation.

Tensors must be contiguous (MPI and NCCL work on the tensor's own memory). A rank outside
`group` gets None back and takes no part, as in PyTorch.
"""
from __future__ import annotations

from rtx.distributed.process_group import ReduceOp, Work, _resolve
from rtx.extend import Tensor, increment_version, raw
from rtx.runtime import array_module

__all__ = ["all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
           "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather", "gather_object", "irecv",
           "isend", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list",
           "send"]


def _arr(t, name, what="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: {what} must be an rtx Tensor, got {type(t).__name__}")
    if not raw(t).flags.c_contiguous:
        raise ValueError(f"{name}: Tensors must be contiguous; {what} is a non-contiguous {t._type_str()} "
                         "(call .contiguous() first)")
    return raw(t)


def _same(t, ref, name, what):
    if t.dtype != ref.dtype or t.device != ref.device:
        raise ValueError(f"{name}: {what} must have the input's dtype and device ({ref.dtype}, {ref.device}); got "
                         f"{t.dtype}, {t.device}")


def _written(*tensors):
    def finish(work):
        for t in tensors:
            increment_version(t)  # an in-place write: autograd's saved-tensor checks must see it
    return finish


def _run(work: Work, async_op: bool, after=None):
    if after is not None:
        inner = work._finish

        def finish(w):
            if inner is not None:
                inner(w)
            after(w)
        work._finish = finish
    if async_op:
        return work
    work.wait()
    return None


def _root(pg, rank, group_rank, name, what):
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{name}: give {what} or group_{what}, not both")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{name}: group_{what}={group_rank} is not a rank of the group (size {pg.size()})")
        return group_rank
    if rank is None:
        raise ValueError(f"{name}: {what} (a global rank) or group_{what} is required")
    return pg.group_rank(rank, f"{name}: {what}")


# ---- reductions -------------------------------------------------------------------------------------------


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group; every rank gets the result, in place."""
    a = _arr(tensor, "all_reduce")
    pg = _resolve(group)
    if pg is None:
        return None
    return _run(pg.for_array(a).allreduce(a, op), async_op, _written(tensor))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` across the group into rank `dst`'s tensor (the others' are left as they were)."""
    a = _arr(tensor, "reduce")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce", "dst")
    return _run(pg.for_array(a).reduce(a, root, op), async_op, _written(tensor))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce input_list[i] across the group into rank i's `output`."""
    out = _arr(output, "reduce_scatter", "output")
    pg = _resolve(group)
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list must hold one tensor per rank ({pg.size()}), got "
                         f"{len(input_list)}")
    for i, t in enumerate(input_list):
        _arr(t, "reduce_scatter", f"input_list[{i}]")
        _same(t, output, "reduce_scatter", f"input_list[{i}]")
        if t.shape != output.shape:
            raise ValueError(f"reduce_scatter: input_list[{i}] has shape {list(t.shape)}, output has "
                             f"{list(output.shape)}; they must match")
    xp = array_module(out)
    flat = xp.concatenate([raw(t).reshape(-1) for t in input_list])
    return _run(pg.for_array(out).reduce_scatter(out, flat, op), async_op, _written(output))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (group size x output's numel elements) across the group; rank i gets block i."""
    out = _arr(output, "reduce_scatter_tensor", "output")
    inp = _arr(input, "reduce_scatter_tensor", "input")
    pg = _resolve(group)
    if pg is None:
        return None
    _same(input, output, "reduce_scatter_tensor", "output")
    if inp.size != out.size * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input must have world_size x output's elements "
                         f"({pg.size()} x {out.size}), got {inp.size}")
    return _run(pg.for_array(out).reduce_scatter(out, inp, op), async_op, _written(output))


# ---- data movement ----------------------------------------------------------------------------------------


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank `src`'s tensor into every rank's `tensor`."""
    a = _arr(tensor, "broadcast")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast", "src")
    return _run(pg.for_array(a).broadcast(a, root), async_op, _written(tensor))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's tensor, on every rank."""
    a = _arr(tensor, "all_gather")
    pg = _resolve(group)
    if pg is None:
        return None
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list must be a list of {pg.size()} tensors (one per rank), got "
                         f"{_describe(tensor_list)}")
    for i, t in enumerate(tensor_list):
        _arr(t, "all_gather", f"tensor_list[{i}]")
        _same(t, tensor, "all_gather", f"tensor_list[{i}]")
        if t.numel() != tensor.numel():
            raise ValueError(f"all_gather: tensor_list[{i}] has {t.numel()} elements, the input {tensor.numel()}")
    xp = array_module(a)
    flat = xp.empty((pg.size(), a.size), a.dtype)

    def scatter_out(_):
        for t, row in zip(tensor_list, flat):
            raw(t).reshape(-1)[...] = row
            increment_version(t)
    return _run(pg.for_array(a).allgather(flat, a), async_op, scatter_out)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor = the ranks' input tensors concatenated (or stacked) along dim 0."""
    out = _arr(output_tensor, "all_gather_into_tensor", "output_tensor")
    inp = _arr(input_tensor, "all_gather_into_tensor", "input_tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    _same(output_tensor, input_tensor, "all_gather_into_tensor", "output_tensor")
    if out.size != inp.size * pg.size():
        raise ValueError(f"all_gather_into_tensor: output_tensor must have world_size x input's elements "
                         f"({pg.size()} x {inp.size}), got {out.size}")
    return _run(pg.for_array(inp).allgather(out, inp), async_op, _written(output_tensor))


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """On rank `dst`, gather_list[i] = rank i's tensor; the other ranks pass gather_list=None."""
    a = _arr(tensor, "gather")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, 0 if dst is None and group_dst is None else dst, group_dst, "gather", "dst")
    flat = None
    if pg.rank() == root:
        if not isinstance(gather_list, (list, tuple)) or len(gather_list) != pg.size():
            raise ValueError(f"gather: on the destination rank, gather_list must be a list of {pg.size()} tensors, "
                             f"got {_describe(gather_list)}")
        for i, t in enumerate(gather_list):
            _arr(t, "gather", f"gather_list[{i}]")
            _same(t, tensor, "gather", f"gather_list[{i}]")
            if t.numel() != tensor.numel():
                raise ValueError(f"gather: gather_list[{i}] has {t.numel()} elements, the input {tensor.numel()}")
        flat = array_module(a).empty((pg.size(), a.size), a.dtype)
    elif gather_list:
        raise ValueError("gather: gather_list must be None (or empty) on ranks other than dst")

    def scatter_out(_):
        if flat is not None:
            for t, row in zip(gather_list, flat):
                raw(t).reshape(-1)[...] = row
                increment_version(t)
    return _run(pg.for_array(a).gather(flat, a, root), async_op, scatter_out)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank i's `tensor` = scatter_list[i] of rank `src`; the other ranks pass scatter_list=None."""
    a = _arr(tensor, "scatter")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "scatter", "src")
    flat = None
    if pg.rank() == root:
        if not isinstance(scatter_list, (list, tuple)) or len(scatter_list) != pg.size():
            raise ValueError(f"scatter: on the source rank, scatter_list must be a list of {pg.size()} tensors, "
                             f"got {_describe(scatter_list)}")
        for i, t in enumerate(scatter_list):
            _arr(t, "scatter", f"scatter_list[{i}]")
            _same(t, tensor, "scatter", f"scatter_list[{i}]")
            if t.numel() != tensor.numel():
                raise ValueError(f"scatter: scatter_list[{i}] has {t.numel()} elements, the output {tensor.numel()}")
        flat = array_module(a).concatenate([raw(t).reshape(-1) for t in scatter_list])
    elif scatter_list:
        raise ValueError("scatter: scatter_list must be None (or empty) on ranks other than src")
    return _run(pg.for_array(a).scatter(a, flat, root), async_op, _written(tensor))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """Rank i sends its input's j-th block (along dim 0) to rank j, which stores it as its output's
    i-th block. Blocks are equal unless *_split_sizes (rows per rank) are given."""
    out = _arr(output, "all_to_all_single", "output")
    inp = _arr(input, "all_to_all_single", "input")
    pg = _resolve(group)
    if pg is None:
        return None
    _same(output, input, "all_to_all_single", "output")
    n = pg.size()
    if output_split_sizes is None and input_split_sizes is None:
        if inp.ndim == 0 or out.ndim == 0 or inp.shape[0] % n or out.shape[0] % n:
            raise ValueError(f"all_to_all_single: without split sizes, dim 0 of input and output must divide by the "
                             f"world size {n} (got {list(input.shape)} and {list(output.shape)})")
        return _run(pg.for_array(inp).alltoall(out, inp), async_op, _written(output))
    row_in = inp.nbytes // max(inp.shape[0], 1) if inp.ndim else inp.nbytes
    row_out = out.nbytes // max(out.shape[0], 1) if out.ndim else out.nbytes
    ins = _splits(input_split_sizes, inp.shape[0], n, "input_split_sizes")
    outs = _splits(output_split_sizes, out.shape[0], n, "output_split_sizes")
    return _run(pg.for_array(inp).alltoall(out, inp, [s * row_out for s in outs], [s * row_in for s in ins]),
                async_op, _written(output))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank i sends input_tensor_list[j] to rank j, which stores it in output_tensor_list[i]."""
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()
    for what, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != n:
            raise ValueError(f"all_to_all: {what} must be a list of {n} tensors, got {_describe(lst)}")
        for i, t in enumerate(lst):
            _arr(t, "all_to_all", f"{what}[{i}]")
            _same(t, input_tensor_list[0], "all_to_all", f"{what}[{i}]")
    ref = raw(input_tensor_list[0])
    xp = array_module(ref)
    inp = xp.concatenate([raw(t).reshape(-1) for t in input_tensor_list])
    out = xp.empty(sum(t.numel() for t in output_tensor_list), ref.dtype)
    item = ref.itemsize

    def scatter_out(_):
        o = 0
        for t in output_tensor_list:
            raw(t).reshape(-1)[...] = out[o:o + t.numel()]
            increment_version(t)
            o += t.numel()
    work = pg.for_array(ref).alltoall(out, inp, [t.numel() * item for t in output_tensor_list],
                                      [t.numel() * item for t in input_tensor_list])
    return _run(work, async_op, scatter_out)


def _splits(sizes, rows, n, what):
    if sizes is None:
        if rows % n:
            raise ValueError(f"all_to_all_single: {what} not given and dim 0 ({rows}) does not divide by {n}")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(f"all_to_all_single: {what} must have {n} entries summing to dim 0 ({rows}), got {sizes}")
    return sizes


# ---- point to point ---------------------------------------------------------------------------------------------


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending `tensor` to rank `dst`; returns a Work."""
    a = _arr(tensor, "isend")
    pg = _resolve(group)
    if pg is None:
        return None
    return pg.for_array(a).send(a, _root(pg, dst, group_dst, "isend", "dst"), tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into `tensor` from rank `src` (any rank if None); returns a Work."""
    a = _arr(tensor, "irecv")
    pg = _resolve(group)
    if pg is None:
        return None
    root = None if src is None and group_src is None else _root(pg, src, group_src, "irecv", "src")
    work = pg.for_array(a).recv(a, root, tag)
    return _run(work, True, _written(tensor))


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send `tensor` to rank `dst` and wait until its buffer may be reused."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into `tensor` from rank `src` (any rank if None); returns the sender's global rank."""
    pg = _resolve(group)
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    if src is not None:
        return src
    if group_src is not None:
        return pg.ranks[group_src]
    return pg.ranks[work._source()]


# ---- barrier and Python objects ----------------------------------------------------------------------------


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group has reached the barrier."""
    pg = _resolve(group)
    if pg is None:
        return None
    work = (pg.nccl or pg.mpi).barrier()
    return _run(work, async_op)


def all_gather_object(object_list, obj, group=None) -> None:
    """object_list[i] = rank i's `obj` (pickled), on every rank."""
    pg = _resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} entries (one per rank), got "
                         f"{len(object_list)}")
    with pg.watch("all_gather_object"):
        object_list[:] = pg.comm.allgather(obj)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Replace object_list's entries with rank `src`'s (pickled), on every rank."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "broadcast_object_list", "src")
    with pg.watch("broadcast_object_list"):
        got = pg.comm.bcast(list(object_list) if pg.rank() == root else None, root=root)
    if len(got) != len(object_list):
        raise ValueError(f"broadcast_object_list: the source sent {len(got)} objects, this rank's list holds "
                         f"{len(object_list)}; the lists must have the same length")
    object_list[:] = got


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """On rank `dst`, object_gather_list[i] = rank i's `obj`."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _root(pg, 0 if dst is None and group_dst is None else dst, group_dst, "gather_object", "dst")
    if pg.rank() == root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: on the destination rank, object_gather_list must have {pg.size()} entries")
    with pg.watch("gather_object"):
        got = pg.comm.gather(obj, root=root)
    if pg.rank() == root:
        object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None) -> None:
    """scatter_object_output_list[0] = rank `src`'s scatter_object_input_list[this rank]."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "scatter_object_list", "src")
    if pg.rank() == root and (scatter_object_input_list is None or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"scatter_object_list: on the source rank, scatter_object_input_list must have {pg.size()} "
                         "entries")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("scatter_object_list: scatter_object_output_list must be a list with at least one entry")
    with pg.watch("scatter_object_list"):
        scatter_object_output_list[0] = pg.comm.scatter(
            list(scatter_object_input_list) if pg.rank() == root else None, root=root)


def _describe(x):
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)}"
    return type(x).__name__

