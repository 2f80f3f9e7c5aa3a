"""Helpers for the multi-process tests: run a worker under `rtx launch` or plain mpiexec, never
longer than a timeout, and never leave ranks behind."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKERS = Path(__file__).resolve().parent / "workers"


class Job:
    def __init__(self, returncode, output, seconds):
        self.returncode, self.output, self.seconds = returncode, output, seconds

    def __repr__(self):
        return f"<Job rc={self.returncode} {self.seconds:.1f}s>\n{self.output[-4000:]}"


def run_job(cmd, timeout=60, env=None, cwd=None) -> Job:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    t0 = time.monotonic()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd=cwd, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)  # rtx launch forwards it to mpiexec, which stops the ranks
        try:
            out, _ = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        pytest.fail(f"{cmd} did not finish within {timeout} s (a hang):\n{out[-4000:]}")
    return Job(p.returncode, out, time.monotonic() - t0)


def rtx_launch(*args, **kw) -> Job:
    return run_job([sys.executable, "-m", "rtx.runtime.cli", "launch", *args], **kw)


def mpiexec(n, *args, **kw) -> Job:
    from rtx.distributed.launch import find_mpiexec
    return run_job([find_mpiexec(), "-n", str(n), sys.executable, *args], **kw)


@pytest.fixture(scope="session")
def launch():
    return rtx_launch


@pytest.fixture(scope="session")
def plain_mpiexec():
    return mpiexec


@pytest.fixture(scope="session")
def workers():
    return WORKERS
