"""Checkpoint and resume for a data-parallel job: one rank writes, every rank reads.

The replicas are identical after every DDP step, so rank 0's state is the job's state:

    state = {"model": ddp.module.state_dict(), "optimizer": opt.state_dict(), "step": step,
             "epoch": epoch}
    save_checkpoint(state, "ckpt.rtx")            # rank 0 writes; all ranks wait for the file
    ...
    state = load_checkpoint("ckpt.rtx")           # every rank reads it (a shared file system)
    model.load_state_dict(state["model"]); opt.load_state_dict(state["optimizer"])

With ZeroRedundancyOptimizer, call opt.consolidate_state_dict(to=0) on all ranks first (the state
is sharded); its load_state_dict takes the full dict on every rank and keeps the local shard.
The file is rtx's format (rtx.save: safetensors + JSON, no pickle), written by
rtx.config.files.write_atomic (a temporary file, fsync, rename), so a job killed while saving never
leaves a truncated checkpoint behind.
"""
from __future__ import annotations

import os

from rtx import load, save
from rtx.config.files import write_atomic
from rtx.distributed.collectives import barrier
from rtx.distributed.process_group import _resolve

__all__ = ["load_checkpoint", "save_checkpoint"]


def save_checkpoint(state, path, group=None, src: int = 0) -> None:
    """Rank `src` (a global rank) writes `state` with rtx.save; every rank returns once the file is
    complete (a collective: all ranks of `group` call it)."""
    pg = _resolve(group)
    if pg is None:
        return
    if pg.ranks[pg.rank()] == src:
        write_atomic(path, lambda f: save(state, f))
    barrier(group)


def load_checkpoint(path, map_location=None, group=None):
    """Every rank reads the checkpoint (rtx.load). In an NCCL group, tensors saved on some GPU come
    back on this rank's GPU unless map_location says otherwise."""
    pg = _resolve(group)
    if map_location is None and pg is not None and pg.nccl is not None:
        count = pg.nccl.cp.cuda.runtime.getDeviceCount()
        map_location = {f"cuda:{i}": f"cuda:{pg.nccl.device}" for i in range(count)}
    return load(os.fspath(path), map_location=map_location)
