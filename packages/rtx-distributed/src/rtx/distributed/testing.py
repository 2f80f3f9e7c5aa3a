"""For tests of multi-process jobs (rtx-distributed's and rtx-federated's own, or a user's): run a
command in its own session with a timeout, and never leave MPI ranks behind."""
from __future__ import annotations

import os
import signal
import subprocess
import time

__all__ = ["Job", "run_job"]


class Job:
    def __init__(self, returncode, output, seconds):
        self.returncode, self.output, self.seconds = returncode, output, seconds

    def __repr__(self):
        return f"<Job rc={self.returncode} {self.seconds:.1f}s>\n{self.output[-4000:]}"


def run_job(cmd, timeout=60, env=None, cwd=None) -> Job:
    """Run `cmd` (stdout and stderr together) with single-threaded BLAS; past `timeout` seconds
    send SIGTERM (rtx launch forwards it to mpiexec, which stops the ranks), then SIGKILL to the
    whole process group, and fail the calling test: a hang is a failure, never a stall."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    t0 = time.monotonic()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, cwd=cwd, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        import pytest  # only a test ever gets here
        pytest.fail(f"{cmd} did not finish within {timeout} s (a hang):\n{out[-4000:]}")
    return Job(p.returncode, out, time.monotonic() - t0)
