"""Process groups: init_process_group, ranks and world size, subgroups, the Work handle of an
asynchronous collective, the collective watchdog, and the abort that takes a failed job down.

MPI is the engine (mpi4py over the MPICH wheel): the ranks are started by `rtx launch`,
`mpiexec` or `srun`, and MPI already knows who is who, so there is no rendezvous store, no
MASTER_ADDR/PORT handshake, nothing home-made. NCCL (through CuPy) carries CUDA tensors; its
communicator is bootstrapped by broadcasting NCCL's unique id over MPI.

No hang, ever: a rank that dies makes `mpiexec` kill the others; a rank that raises calls
MPI_Abort from the excepthook installed here (otherwise it would sit in MPI_Finalize while the
others wait for it in a collective); a rank stuck for longer than the group's timeout inside a
collective aborts the job from a watchdog thread with a message that says so.

mpi4py is imported (and MPI initialized) by init_process_group only: `import rtx.distributed`
starts nothing, and the `rtx launch` process never initializes MPI itself.
"""
from __future__ import annotations

import datetime
import enum
import os
import sys
import threading
import time
import warnings

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "destroy_process_group", "get_backend",
           "get_global_rank", "get_group_rank", "get_node_local_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "is_available", "is_gloo_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "new_group"]

DEFAULT_TIMEOUT = 1800.0  # seconds, PyTorch's default_pg_timeout (30 minutes)
TIMEOUT_ENV = "RTX_DIST_TIMEOUT"  # seconds; `rtx launch --timeout` sets it


class ReduceOp(enum.Enum):
    """How all_reduce / reduce / reduce_scatter combine the ranks' tensors (torch.distributed.ReduceOp).
    AVG is SUM followed by a division by the group size (MPI has no average); it needs a floating
    point tensor. On bool tensors SUM is a logical or and PRODUCT a logical and, as in PyTorch."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self):
        return f"<ReduceOp.{self.name}>"


class Backend:
    """Backend names, as torch.distributed.Backend. MPI carries CPU tensors (and CUDA tensors,
    staged through host memory); NCCL carries CUDA tensors between GPUs."""
    UNDEFINED = "undefined"
    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"  # accepted and mapped to MPI (rtx has no gloo)

    def __new__(cls, name: str):
        name = str(name).lower()
        if name not in (cls.MPI, cls.NCCL, cls.GLOO):
            raise ValueError(f"Invalid backend: '{name}'; rtx.distributed has 'mpi' (CPU, and CUDA through host "
                             "memory) and 'nccl' (CUDA tensors, through CuPy)")
        return name


def _timeout_seconds(timeout) -> float:
    if timeout is None:
        env = os.environ.get(TIMEOUT_ENV)
        if env:
            try:
                return float(env)
            except ValueError:
                raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, got {env!r}") from None
        return DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta or a positive number of seconds, got {timeout!r}")


# ---- aborting a failed job --------------------------------------------------------------------------


def _mpi_alive():
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized()


_ABORT_DRAIN_SECONDS = 0.5


def abort_job(code: int = 1, message: str | None = None) -> None:
    """Print `message`, flush, and end every rank of the job (MPI_Abort on COMM_WORLD). Does not
    return. Without MPI it ends this process with `code`."""
    if message:
        print(message, file=sys.stderr, flush=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        if _mpi_alive():
            # mpiexec forwards a rank's output asynchronously, and MPI_Abort travels on another
            # channel: without a pause it can kill the job before the last lines (the traceback
            # and the message above) have been read from this rank's pipe, and they are lost.
            time.sleep(_ABORT_DRAIN_SECONDS)
            sys.modules["mpi4py.MPI"].COMM_WORLD.Abort(code)
    finally:
        os._exit(code)


def _who() -> str:
    pg = _world.default
    return f"rank {pg.rank()} of {pg.size()}" if pg is not None else f"pid {os.getpid()}"


_original_excepthook = None


def _excepthook(exc_type, exc, tb):
    (_original_excepthook or sys.__excepthook__)(exc_type, exc, tb)
    pg = _world.default
    if pg is not None and _world.world_size > 1 and _mpi_alive():
        abort_job(1, f"rtx.distributed: {_who()} failed with {exc_type.__name__}; aborting the job so the other "
                     "ranks do not wait for it forever")


def _install_excepthook():
    global _original_excepthook
    if sys.excepthook is not _excepthook:
        _original_excepthook = sys.excepthook
        sys.excepthook = _excepthook


# ---- the watchdog ---------------------------------------------------------------------------------


class _Watchdog:
    """One daemon thread per process; a collective registers (deadline, name) while it waits.
    mpi4py releases the GIL inside MPI calls, so the thread runs while the main thread blocks;
    MPI_Abort from another thread is allowed at MPI_THREAD_MULTIPLE (mpi4py's default)."""

    def __init__(self):
        self._active: dict[int, tuple[float, str, float]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None
        self._next = 0

    def watch(self, what: str, timeout: float):
        return _Watch(self, what, timeout)

    def _add(self, what, timeout):
        with self._lock:
            self._next += 1
            token = self._next
            self._active[token] = (time.monotonic() + timeout, what, timeout)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rtx-distributed-watchdog", daemon=True)
                self._thread.start()
        if timeout < 2.0:
            self._wake.set()  # the thread may be sleeping a whole second
        return token

    def _remove(self, token):
        with self._lock:
            self._active.pop(token, None)

    def _run(self):
        while True:
            with self._lock:
                items = list(self._active.values())
            now = time.monotonic()
            for deadline, what, timeout in items:
                if now > deadline:
                    abort_job(1, f"rtx.distributed: {_who()}: {what} did not finish within {timeout:g} s; another "
                                 "rank has probably died, hung, or entered a different collective. Aborting the "
                                 f"job (the limit is init_process_group(timeout=...) or ${TIMEOUT_ENV}).")
            wait = min([1.0] + [max(0.01, d - now) for d, _, _ in items])
            self._wake.wait(wait)
            self._wake.clear()


class _Watch:
    __slots__ = ("dog", "what", "timeout", "token")

    def __init__(self, dog, what, timeout):
        self.dog, self.what, self.timeout = dog, what, timeout

    def __enter__(self):
        self.token = self.dog._add(self.what, self.timeout)

    def __exit__(self, *exc):
        self.dog._remove(self.token)


_watchdog = _Watchdog()


# ---- Work --------------------------------------------------------------------------------------------


class Work:
    """The handle of a collective started with async_op=True (torch.distributed.Work): wait() blocks
    until it is done and the result is in place; is_completed() asks without blocking.

    wait() without a timeout is guarded by the group's timeout (the job is aborted past it, as
    for blocking collectives); wait(timeout) raises RuntimeError instead, leaving it pending."""

    def __init__(self, name, pg, requests=(), finish=None, event=None, result=None, keep=None):
        self._name = name
        self._pg = pg
        self._requests = list(requests)
        self._finish = finish
        self._event = event
        self._result = result
        self._keep = keep  # buffers MPI reads or writes until the request completes
        self._done = False
        self._statuses = None

    def _complete(self):
        self._done = True
        finish, self._finish, self._keep = self._finish, None, None
        if finish is not None:
            finish(self)

    def _test(self) -> bool:
        if self._requests:
            from mpi4py import MPI
            if not MPI.Request.Testall(self._requests, self._statuses):
                return False
        if self._event is not None and not self._event.done:
            return False
        return True

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        if self._requests:
            from mpi4py import MPI
            self._statuses = [MPI.Status() for _ in self._requests]
        if timeout is not None:
            limit = time.monotonic() + _timeout_seconds(timeout)
            while not self._test():
                if time.monotonic() > limit:
                    raise RuntimeError(f"rtx.distributed: {self._name} did not finish within "
                                       f"{_timeout_seconds(timeout):g} s (Work.wait timeout); it is still pending")
                time.sleep(1e-4)
        else:
            with _watchdog.watch(self._name, self._pg.timeout):
                if self._requests:
                    from mpi4py import MPI
                    MPI.Request.Waitall(self._requests, self._statuses)
                if self._event is not None:
                    self._event.synchronize()
        self._complete()
        return True

    def is_completed(self) -> bool:
        if self._done:
            return True
        if self._statuses is None and self._requests:
            from mpi4py import MPI
            self._statuses = [MPI.Status() for _ in self._requests]
        if self._test():
            self._complete()
            return True
        return False

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def result(self):
        """The tensors the collective wrote (a list), as torch's Work.result()."""
        self.wait()
        return self._result

    def _source(self) -> int:
        """For a recv: the sender's group rank."""
        self.wait()
        return self._statuses[0].Get_source()

    def __repr__(self):
        return f"<rtx.distributed.Work {self._name} {'done' if self._done else 'pending'}>"


def _done_work(name, pg, result=None) -> Work:
    w = Work(name, pg, result=result)
    w._done = True
    return w


# ---- groups -------------------------------------------------------------------------------------------


class ProcessGroup:
    """A set of ranks that run collectives together: an MPI communicator (always: it carries CPU
    tensors, Python objects and the barrier) plus, for backend 'nccl', an NCCL communicator for
    CUDA tensors. Its rank()/size() are ranks within the group; `ranks` are global ranks."""

    def __init__(self, comm, backend: str, timeout: float, ranks: list[int], device=None):
        from rtx.distributed._mpi import MPIBackend
        self.comm = comm
        self.backend = backend
        self.timeout = timeout
        self.ranks = list(ranks)
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._global_to_group = {g: i for i, g in enumerate(self.ranks)}
        self.mpi = MPIBackend(self)
        self.nccl = None
        if backend == Backend.NCCL:
            from rtx.distributed._nccl import NCCLBackend
            self.nccl = NCCLBackend(self, device)

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def name(self) -> str:
        return self.backend

    def group_rank(self, global_rank: int, what: str = "rank") -> int:
        try:
            return self._global_to_group[int(global_rank)]
        except KeyError:
            raise ValueError(f"{what} {global_rank} is not part of this process group (its global ranks are "
                             f"{self.ranks})") from None

    def for_array(self, array):
        """The backend that moves `array`: NCCL for CUDA arrays in an NCCL group, else MPI."""
        if self.nccl is not None and not _is_numpy(array):
            return self.nccl
        return self.mpi

    def watch(self, what: str):
        return _watchdog.watch(what, self.timeout)

    def __repr__(self):
        return f"<rtx.distributed.ProcessGroup backend={self.backend} rank={self._rank} size={self._size}>"


def _is_numpy(array) -> bool:
    import numpy as np
    return isinstance(array, np.ndarray)


class _WorldMeta(type):
    @property
    def WORLD(cls):
        return _world.default


class GroupMember(metaclass=_WorldMeta):
    """GroupMember.WORLD is the default group; NON_GROUP_MEMBER is what new_group returns on ranks
    outside the new group (collectives on it return None there, as in PyTorch)."""
    NON_GROUP_MEMBER = object()


group = GroupMember  # torch.distributed.group.WORLD


class _World:
    default: ProcessGroup | None = None
    world_size = 1
    local_rank = 0
    local_size = 1
    groups: list = []


_world = _World()

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call init_process_group "
                    "(and start the ranks with `rtx launch -n N`, mpiexec or srun).")


def _default() -> ProcessGroup:
    if _world.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _world.default


def _resolve(group_) -> ProcessGroup | None:
    """The group a collective runs on; None where this rank is not a member."""
    if group_ is None:
        return _default()
    if group_ is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group_, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group() or None, got {type(group_).__name__}")
    return group_


# ---- init / destroy ---------------------------------------------------------------------------------------


def is_available() -> bool:
    """True when mpi4py can be imported (without initializing MPI)."""
    return is_mpi_available()


def is_mpi_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    from rtx.runtime import cuda
    if not cuda.is_available():
        return False
    try:
        from cupy.cuda import nccl
    except ImportError:
        return False
    return bool(getattr(nccl, "available", False))


def is_gloo_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


def is_initialized() -> bool:
    return _world.default is not None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None) -> None:
    """Join the job's default process group (torch.distributed.init_process_group).

    backend: 'mpi' (the default; CPU tensors, and CUDA tensors through host memory) or 'nccl'
    (CUDA tensors through NCCL, CPU tensors and objects through MPI). 'gloo' is accepted as 'mpi'.
    The ranks come from MPI (start them with `rtx launch -n N`, mpiexec or srun); world_size and
    rank, if given, must agree with it. init_method 'env://' or None; other methods and `store` are
    PyTorch's rendezvous, which MPI replaces. timeout (timedelta or seconds, default 30 min or
    $RTX_DIST_TIMEOUT): how long a collective may wait before the job is aborted.
    device_id (nccl): the GPU of this rank; default LOCAL_RANK % device count."""
    if _world.default is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    if backend is None:
        backend = Backend.MPI
    if isinstance(backend, str) and ":" in backend:  # "cpu:gloo,cuda:nccl": PyTorch's per-device syntax
        names = {part.split(":", 1)[1].strip().lower() for part in backend.split(",") if ":" in part}
        backend = Backend.NCCL if "nccl" in names else Backend.MPI
    backend = Backend(backend)
    if backend == Backend.GLOO:
        warnings.warn("rtx.distributed has no gloo backend; using 'mpi', which carries the same CPU collectives",
                      stacklevel=2)
        backend = Backend.MPI
    if init_method not in (None, "env://"):
        warnings.warn(f"init_method={init_method!r} is ignored: rtx.distributed bootstraps through MPI (the ranks "
                      "are started by rtx launch, mpiexec or srun)", stacklevel=2)
    if store is not None:
        raise ValueError("store= is PyTorch's rendezvous; rtx.distributed bootstraps through MPI and takes no store")
    seconds = _timeout_seconds(timeout)
    import mpi4py
    mpi4py.rc.thread_level = "multiple"  # the watchdog may abort from its thread
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    n, r = world.Get_size(), world.Get_rank()
    if world_size not in (-1, None) and int(world_size) != n:
        raise ValueError(f"init_process_group: world_size={world_size} was given, but MPI started {n} process(es); "
                         f"start the job with `rtx launch -n {world_size}` (or mpiexec -n {world_size})")
    if rank not in (-1, None) and int(rank) != r:
        raise ValueError(f"init_process_group: rank={rank} was given, but MPI says this process is rank {r}")
    comm = world.Dup()  # a private communicator: the user's own MPI traffic never mixes with ours
    local = world.Split_type(MPI.COMM_TYPE_SHARED, key=r)
    _world.local_rank, _world.local_size = local.Get_rank(), local.Get_size()
    local.Free()
    _world.world_size = n
    os.environ.setdefault("RANK", str(r))
    os.environ.setdefault("WORLD_SIZE", str(n))
    os.environ.setdefault("LOCAL_RANK", str(_world.local_rank))
    os.environ.setdefault("LOCAL_WORLD_SIZE", str(_world.local_size))
    if backend == Backend.NCCL and device_id is None:
        device_id = _world.local_rank
    _install_excepthook()
    _world.default = ProcessGroup(comm, backend, seconds, list(range(n)), device=device_id)
    _world.groups = [_world.default]


def destroy_process_group(group=None) -> None:
    """Free a group's communicators; without a group, every group and the default one (MPI itself is
    finalized at exit by mpi4py)."""
    if group is None or group is GroupMember.WORLD:
        for pg in _world.groups:
            _free(pg)
        _world.groups = []
        _world.default = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    _free(group)
    if group in _world.groups:
        _world.groups.remove(group)


def _free(pg: ProcessGroup):
    if pg.nccl is not None:
        pg.nccl.destroy()
        pg.nccl = None
    if _mpi_alive():
        pg.comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A subgroup of the default group's ranks (torch.distributed.new_group). Every rank of the
    default group must call it, with the same `ranks`; ranks outside it get
    GroupMember.NON_GROUP_MEMBER. Collectives on a subgroup take global ranks for src/dst."""
    pg = _default()
    n = pg.size()
    ranks = list(range(n)) if ranks is None else sorted(int(x) for x in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= x < n for x in ranks):
        raise ValueError(f"new_group: ranks must be distinct ranks of the default group (0..{n - 1}), got {ranks}")
    with pg.watch("new_group"):
        sub = pg.comm.Create(pg.comm.Get_group().Incl(ranks))
    from mpi4py import MPI
    if sub == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    backend = pg.backend if backend is None else Backend(backend)
    if backend == Backend.GLOO:
        backend = Backend.MPI
    device = pg.nccl.device if pg.nccl is not None else None
    new = ProcessGroup(sub, backend, _timeout_seconds(timeout) if timeout is not None else pg.timeout, ranks,
                       device=device)
    _world.groups.append(new)
    return new


# ---- queries ------------------------------------------------------------------------------------------------


def get_rank(group=None) -> int:
    """This process's rank in `group` (default: the job); -1 if it is not a member."""
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in `group` (default: the job); -1 if this rank is not a member."""
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_node_local_rank(fallback_rank=None) -> int:
    """This process's rank among the processes on its node (LOCAL_RANK)."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if _world.default is not None:
        return _world.local_rank
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment; start the job with `rtx launch` or call "
                       "init_process_group first")


def get_process_group_ranks(group) -> list[int]:
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg.ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = _resolve(group)
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.group_rank(global_rank, "Global rank")
