"""ZeroRedundancyOptimizer: ZeRO stage 1, the optimizer state sharded across ranks
(torch.distributed.optim.ZeroRedundancyOptimizer).

Each parameter is owned by one rank (PyTorch's partition: per param group, largest parameters
first, each to the rank holding the fewest elements so far). A rank's local optimizer (any rtx
optimizer class) holds state for its own parameters only, so Adam's two moments cost 2/N of the
model per rank. step() runs the local optimizer, then every owner broadcasts its updated
parameters (one message per owner and dtype), so all replicas stay identical. Gradients must
already be averaged across ranks (use it with DistributedDataParallel).

state_dict() needs consolidate_state_dict(to) first (a collective), then returns on rank `to`
the state dict a plain optimizer over the same parameters would have: it loads into
ZeroRedundancyOptimizer on any number of ranks, or into the plain optimizer.
"""
from __future__ import annotations

from rtx.distributed.ddp import broadcast_coalesced
from rtx.distributed.process_group import _resolve
from rtx.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported in rtx; "
                                      "step after backward")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(f"optimizer_class must be an rtx optimizer class (e.g. rtx.optim.Adam), got "
                            f"{optimizer_class!r}")
        pg = _resolve(process_group)
        if pg is None:
            raise ValueError("ZeroRedundancyOptimizer: this rank is not a member of process_group")
        self.process_group = pg
        self.world_size, self.rank = pg.size(), pg.rank()
        self.global_rank = pg.ranks[self.rank]
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._sizes = [0] * self.world_size
        self._owner: dict[int, int] = {}
        self._consolidated = None
        self.optim = None
        super().__init__(params, defaults)  # calls add_param_group for each group
        self._build_local_optimizer()

    # ---- partition ----------------------------------------------------------------------------------
    def _partition(self, group):
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
            r = min(range(self.world_size), key=lambda k: self._sizes[k])
            self._owner[id(p)] = r
            self._sizes[r] += p.numel()

    def _local_group(self, group):
        local = {k: v for k, v in group.items() if k not in ("params", "param_names")}
        local["params"] = [p for p in group["params"] if self._owner[id(p)] == self.rank]
        return local

    def _build_local_optimizer(self):
        self.optim = self._optim_constructor([self._local_group(g) for g in self.param_groups],
                                             **self._optim_defaults)
        self.state = self.optim.state  # this rank's shard

    def add_param_group(self, param_group) -> None:
        super().add_param_group(param_group)
        self._partition(self.param_groups[-1])
        if self.optim is not None:
            self.optim.add_param_group(self._local_group(self.param_groups[-1]))

    @property
    def _partition_parameters_cache(self):
        """[rank][group] -> that rank's parameters of the group (PyTorch's partition_parameters())."""
        return [[[p for p in g["params"] if self._owner[id(p)] == r] for g in self.param_groups]
                for r in range(self.world_size)]

    def _partition_parameters(self):
        return self._partition_parameters_cache

    # ---- step ---------------------------------------------------------------------------------------------
    def _sync_param_groups(self):
        """Options changed on this wrapper (an LR scheduler sets group['lr']) reach the local optimizer."""
        for g, lg in zip(self.param_groups, self.optim.param_groups):
            for k, v in g.items():
                if k not in ("params", "param_names"):
                    lg[k] = v

    def step(self, closure=None, **kwargs):
        self._sync_param_groups()
        loss = self.optim.step(closure, **kwargs) if kwargs else self.optim.step(closure)
        self._broadcast_params()
        return loss

    def _broadcast_params(self):
        if self.world_size == 1:
            return
        for r in range(self.world_size):
            owned = [p for g in self.param_groups for p in g["params"] if self._owner[id(p)] == r]
            if owned:
                broadcast_coalesced(self.process_group, owned, r)

    # ---- state dict ----------------------------------------------------------------------------------------
    def _global_index(self):
        index, k = {}, 0
        for g in self.param_groups:
            for p in g["params"]:
                if id(p) not in index:
                    index[id(p)] = k
                    k += 1
        return index

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard of the state on global rank `to` (a collective: all ranks call it)."""
        from rtx.distributed.collectives import gather_object
        index = self._global_index()
        local_params = [p for g in self.optim.param_groups for p in g["params"]]
        shard = {index[id(local_params[i])]: s for i, s in self.optim.state_dict()["state"].items()}
        got = [None] * self.world_size if self.global_rank == to else None
        gather_object(shard, got, dst=to, group=self.process_group)
        if self.global_rank == to:
            state = {}
            for part in got:
                state.update(part)
            self._consolidated = {k: state[k] for k in sorted(state)}
        else:
            self._consolidated = None

    def state_dict(self):
        if self._consolidated is None:
            raise RuntimeError(f"Optimizer state has not been consolidated on this rank ({self.global_rank}). "
                               "Please call `consolidate_state_dict(to=...)` on all ranks beforehand if you meant "
                               "to save the global state.")
        index = self._global_index()
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        return {"state": dict(self._consolidated), "param_groups": groups}

    def load_state_dict(self, state_dict) -> None:
        """Load a full state dict (from state_dict() or a plain optimizer's): each rank keeps its shard."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, s in zip(self.param_groups, groups):
            if len(g["params"]) != len(s["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            for k, v in s.items():
                if k not in ("params", "param_names"):
                    g[k] = v
        saved_to_param = {}
        for g, s in zip(self.param_groups, groups):
            saved_to_param.update(zip(s["params"], g["params"]))
        local_params = [p for g in self.optim.param_groups for p in g["params"]]
        local_index = {id(p): i for i, p in enumerate(local_params)}
        local_state = {local_index[id(saved_to_param[k])]: v for k, v in state_dict["state"].items()
                       if k in saved_to_param and id(saved_to_param[k]) in local_index}
        self._sync_param_groups()
        local_groups = []
        for lg in self.optim.param_groups:
            packed = {k: v for k, v in lg.items() if k != "params"}
            packed["params"] = [local_index[id(p)] for p in lg["params"]]
            local_groups.append(packed)
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        self.state = self.optim.state

    def __repr__(self):
        return f"ZeroRedundancyOptimizer(rank={self.rank}, world_size={self.world_size}, optim={self.optim!r})"
