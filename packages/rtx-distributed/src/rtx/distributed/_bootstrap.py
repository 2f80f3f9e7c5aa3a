"""What each rank of `rtx launch` runs: `python -m rtx.distributed._bootstrap [-m] target [args]`.

It sets torchrun's per-rank variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE) from the
MPI launcher's (MPICH/hydra, Open MPI, Slurm), runs the script as __main__, and if the script
fails (an exception, or sys.exit with a non-zero status) prints the error and aborts the whole
job: without that, MPI_Finalize would keep the failed rank alive and the other ranks would wait
for it in their next collective. MPI is not initialized here; the script's init_process_group does.
"""
from __future__ import annotations

import os
import runpy
import sys
import traceback

# (rank, size, local rank, local size) as each launcher names them
_LAUNCHER_VARS = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH (hydra)
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),
)


def rank_environment(env=None) -> dict[str, str]:
    """RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE from the launcher's variables (empty if none)."""
    env = os.environ if env is None else env
    for rank, size, local, local_size in _LAUNCHER_VARS:
        if rank in env:
            out = {"RANK": env[rank]}
            for name, var in (("WORLD_SIZE", size), ("LOCAL_RANK", local), ("LOCAL_WORLD_SIZE", local_size)):
                if var in env:
                    out[name] = env[var]
            return out
    return {}


def _user_traceback(exc: BaseException):
    # Drop this file's and runpy's frames: the error should start in the user's script.
    tb = exc.__traceback__
    here = os.path.abspath(__file__)
    while tb is not None and (os.path.abspath(tb.tb_frame.f_code.co_filename) == here
                              or tb.tb_frame.f_globals.get("__name__") == "runpy"):
        tb = tb.tb_next
    return tb


def _fail(code: int, what: str):
    from rtx.distributed.process_group import abort_job
    rank = os.environ.get("RANK", "?")
    size = os.environ.get("WORLD_SIZE", "?")
    abort_job(code, f"rtx launch: rank {rank} of {size} {what}; aborting the job (the other ranks are stopped)")


def main(argv: list[str]) -> int:
    module = bool(argv) and argv[0] == "-m"
    if module:
        argv = argv[1:]
    if not argv:
        print("usage: python -m rtx.distributed._bootstrap [-m] script.py [args...]", file=sys.stderr)
        return 2
    os.environ.update(rank_environment())
    target, rest = argv[0], argv[1:]
    sys.argv = [target, *rest]
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        if e.code in (None, 0):
            return 0
        if not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        _fail(e.code if isinstance(e.code, int) else 1, f"exited with sys.exit({e.code!r})")
    except BaseException as e:
        traceback.print_exception(type(e), e, _user_traceback(e))
        _fail(1, f"failed with {type(e).__name__}" + (f": {e}" if str(e) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
