"""`rtx launch -n N script.py [args]`: start N ranks of a job through mpiexec.

It is a thin layer over the MPI launcher, so that what runs here runs unchanged under `mpiexec`
or Slurm on a cluster (init_process_group takes the ranks from MPI either way). It:
- runs `mpiexec -n N python -m rtx.distributed._bootstrap script.py args` with the mpiexec next
  to this Python (the MPICH wheel's), falling back to PATH;
- sets the environment torchrun sets (WORLD_SIZE, MASTER_ADDR, MASTER_PORT; each rank's
  RANK/LOCAL_RANK/LOCAL_WORLD_SIZE come from MPI's variables in the bootstrap), and one BLAS/OpenMP
  thread count per rank so that N ranks do not oversubscribe the cores;
- forwards SIGINT/SIGTERM to mpiexec (which passes them to the ranks); a second signal, or a
  job that has not stopped 10 s after the first, is killed;
- returns mpiexec's exit status: non-zero when any rank failed. A failing rank aborts the whole
  job (see rtx.distributed._bootstrap), so the others never wait for it.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

GRACE_SECONDS = 10.0


def find_mpiexec(explicit: str | None = None) -> str:
    if explicit:
        if shutil.which(explicit) is None:
            raise FileNotFoundError(f"rtx launch: --mpiexec {explicit!r} is not an executable")
        return shutil.which(explicit)
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise FileNotFoundError("rtx launch: no mpiexec next to this Python (" + str(here.parent) + ") nor on PATH; "
                                "install one with `pip install mpich` (or load your cluster's MPI module)")
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_command(n, script, args, module=False, mpiexec=None, mpiexec_args="") -> list[str]:
    cmd = [find_mpiexec(mpiexec), "-n", str(n), *shlex.split(mpiexec_args), sys.executable, "-m",
           "rtx.distributed._bootstrap"]
    if module:
        cmd.append("-m")
    return cmd + [script, *args]


def build_env(n, timeout=None, threads=None, base=None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["WORLD_SIZE"] = str(n)
    env["RTX_LAUNCH"] = "1"
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", str(_free_port()))
    if timeout is not None:
        env["RTX_DIST_TIMEOUT"] = str(timeout)
    if threads is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        threads = max(1, cores // n)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, str(threads))
    return env


def launch_command(argv: list[str]) -> int:
    """start a data-parallel job: N ranks through mpiexec (MPI/NCCL)"""
    p = argparse.ArgumentParser(
        prog="rtx launch", description="Start N ranks of script.py through mpiexec. The script calls "
        "rtx.distributed.init_process_group(); the same script runs unchanged under mpiexec or srun.")
    p.add_argument("-n", "--nproc-per-node", "--nproc_per_node", dest="n", type=int, default=1, metavar="N",
                   help="number of ranks (default 1)")
    p.add_argument("-m", dest="module", action="store_true", help="run a module (like python -m) instead of a file")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="how long a collective may wait for the other ranks before the job is aborted "
                        "(default 1800; sets RTX_DIST_TIMEOUT)")
    p.add_argument("--threads", type=int, default=None,
                   help="OpenMP/BLAS threads per rank (default: usable cores // N, at least 1)")
    p.add_argument("--mpiexec", default=None, help="the MPI launcher (default: the mpiexec next to this Python, "
                                                   "then PATH)")
    p.add_argument("--mpiexec-args", default="", metavar="ARGS",
                   help="more mpiexec arguments, one string, e.g. \"-hosts node1,node2\" or \"-bind-to core\"")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    a = p.parse_args(argv)
    if _is_python(a.script):  # `rtx launch -n 2 python train.py`, the mpiexec habit: drop the interpreter
        rest = list(a.args)
        if rest[:1] == ["-m"]:
            a.module, rest = True, rest[1:]
        if not rest:
            p.error(f"{a.script} needs a script to run: rtx launch -n N [python] script.py [args]")
        a.script, a.args = rest[0], rest[1:]
    if a.n < 1:
        p.error(f"-n must be at least 1, got {a.n}")
    if not a.module and not os.path.exists(a.script):
        p.error(f"script {a.script!r} does not exist")
    try:
        cmd = build_command(a.n, a.script, a.args, a.module, a.mpiexec, a.mpiexec_args)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 127
    return run(cmd, build_env(a.n, a.timeout, a.threads))


def _is_python(word) -> bool:
    """python, python3, python3.11, a path to one of them, or this interpreter: the ranks run this
    Python (sys.executable) whichever was named, as the bootstrap needs rtx importable."""
    name = os.path.basename(word)
    return word == sys.executable or (name.startswith("python") and name[6:].replace(".", "").isdigit()) \
        or name == "python"


def run(cmd, env) -> int:
    """Run mpiexec, forwarding SIGINT/SIGTERM; return its exit status (128 + signal if killed)."""
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)  # signals reach it through us, once
    received: list[int] = []
    first_at = [0.0]

    def forward(signum, frame):
        if not received:
            first_at[0] = time.monotonic()
        received.append(signum)
        if proc.poll() is not None:
            return
        try:
            if len(received) == 1:
                proc.send_signal(signum)
            else:
                os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            if received and time.monotonic() - first_at[0] > GRACE_SECONDS:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if rc < 0:
        rc = 128 - rc
    if received:
        sig = signal.Signals(received[0]).name
        print(f"rtx launch: stopped by {sig}; the job exited with status {rc}", file=sys.stderr)
        return rc if rc != 0 else 128 + received[0]
    if rc != 0:
        print(f"rtx launch: the job failed with exit status {rc} (a rank failed; its error is above)",
              file=sys.stderr)
    return rc


def main() -> int:
    return launch_command(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
