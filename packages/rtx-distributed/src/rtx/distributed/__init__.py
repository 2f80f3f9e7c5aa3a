"""rtx distributed: data-parallel training over MPI (processes, CPUs) and NCCL (GPUs), with
torch.distributed's names.

    import rtx.distributed as dist
    dist.init_process_group("mpi")          # ranks come from rtx launch / mpiexec / srun
    model = dist.DistributedDataParallel(model)
    sampler = dist.DistributedSampler(dataset)

Process groups and collectives (init_process_group, all_reduce, broadcast, all_gather,
reduce_scatter, barrier, send/recv, ...), DistributedDataParallel, DistributedSampler,
ZeroRedundancyOptimizer (ZeRO-1), save_checkpoint/load_checkpoint, and `rtx launch -n N`.

`import rtx.distributed` initializes nothing (MPI starts in init_process_group) and loads the
model-side classes on first use.
"""
__version__ = "0.1.0"

import importlib as _importlib

from rtx.distributed.process_group import (
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    new_group,
)

_LAZY = {
    "collectives": ("all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
                    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather", "gather_object",
                    "irecv", "isend", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
                    "scatter_object_list", "send"),
    "ddp": ("DistributedDataParallel",),
    "sampler": ("DistributedSampler",),
    "zero": ("ZeroRedundancyOptimizer",),
    "checkpoint": ("load_checkpoint", "save_checkpoint"),
}
_WHERE = {name: mod for mod, names in _LAZY.items() for name in names}

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "destroy_process_group", "get_backend",
           "get_global_rank", "get_group_rank", "get_node_local_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "is_available", "is_gloo_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "new_group", *sorted(_WHERE)]


def __getattr__(name):
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'rtx.distributed' has no attribute '{name}'")
    value = getattr(_importlib.import_module(f"rtx.distributed.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
