"""How the server reaches its clients. A transport runs a named Client method on a set of client
ids and returns {cid: result}: in this process (InProcessTransport) or on MPI ranks
(MPITransport, through rtx.distributed's object collectives)."""
from __future__ import annotations

__all__ = ["InProcessTransport", "MPITransport"]


class InProcessTransport:
    """Every client lives in this process: the simulation of many clients on one machine."""

    is_server = True

    def __init__(self, clients):
        self.clients = {c.cid: c for c in clients}
        if len(self.clients) != len(clients):
            raise ValueError("InProcessTransport: client ids must be unique")

    @property
    def client_ids(self) -> list[int]:
        return sorted(self.clients)

    def call(self, cids, method: str, *args) -> dict:
        missing = [c for c in cids if c not in self.clients]
        if missing:
            raise KeyError(f"no clients with ids {missing}; known ids are 0..{max(self.clients)}")
        return {cid: getattr(self.clients[cid], method)(*args) for cid in cids}

    def close(self) -> None:
        pass


class MPITransport:
    """Clients spread over MPI ranks: client `cid` lives on rank `cid % world_size`; rank 0 is also
    the server. Every rank builds the same list of client ids (and may build only the clients it
    owns, see `owns`). Rank 0 runs the server loop; the other ranks call `serve()`, which answers
    calls until rank 0's `close()`. Messages are pickled objects through rtx.distributed's
    broadcast_object_list / gather_object, so the job runs under `rtx launch -n N`, mpiexec or Slurm."""

    def __init__(self, clients, client_ids=None, group=None):
        import rtx.distributed as dist
        if not dist.is_initialized():
            dist.init_process_group("mpi")
        self._dist, self.group = dist, group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.clients = {c.cid: c for c in clients if self.owns(c.cid)}
        ids = client_ids if client_ids is not None else [c.cid for c in clients]
        self._ids = sorted(ids)
        self.is_server = self.rank == 0

    def owns(self, cid: int) -> bool:
        return cid % self.world == self.rank

    @property
    def client_ids(self) -> list[int]:
        return self._ids

    def _local(self, cids, method, args):
        return {cid: getattr(self.clients[cid], method)(*args) for cid in cids if self.owns(cid)}

    def _exchange(self, message):
        box = [message]
        self._dist.broadcast_object_list(box, src=0, group=self.group)
        return box[0]

    def call(self, cids, method: str, *args) -> dict:
        if not self.is_server:
            raise RuntimeError(f"MPITransport.call runs on rank 0 (the server); rank {self.rank} should call serve()")
        cids = list(cids)
        self._exchange(("call", cids, method, args))
        mine = self._local(cids, method, args)
        parts = [None] * self.world
        self._dist.gather_object(mine, parts, dst=0, group=self.group)
        out = {}
        for part in parts:
            out.update(part)
        return {cid: out[cid] for cid in cids}

    def serve(self) -> None:
        """On ranks other than 0: answer the server's calls until it closes the transport."""
        while True:
            kind, *rest = self._exchange(None)
            if kind == "stop":
                return
            cids, method, args = rest
            self._dist.gather_object(self._local(cids, method, args), None, dst=0, group=self.group)

    def close(self) -> None:
        if self.is_server:
            self._exchange(("stop",))
