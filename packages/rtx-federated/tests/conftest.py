"""Run a command in a subprocess with a timeout, never leaving MPI ranks behind (the style of
rtx-distributed's tests)."""
import sys

import pytest

from rtx.distributed.testing import run_job


@pytest.fixture(scope="session")
def rtx_cli():
    def run(*args, **kw):
        kw.setdefault("timeout", 120)
        job = run_job([sys.executable, "-m", "rtx.runtime.cli", *args], **kw)
        return job.returncode, job.output, job.seconds
    return run
