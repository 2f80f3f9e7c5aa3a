"""Helpers for the multi-process tests: run a worker under `rtx launch` or plain mpiexec, never
longer than a timeout, and never leave ranks behind."""
import sys
from pathlib import Path

import pytest

from rtx.distributed.testing import Job, run_job

WORKERS = Path(__file__).resolve().parent / "workers"


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
