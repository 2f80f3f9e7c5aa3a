"""Run a command in a subprocess with a timeout, never leaving MPI ranks behind (the style of
rtx-distributed's tests)."""
import os
import signal
import subprocess
import sys
import time

import pytest


def run_job(cmd, timeout=120, env=None):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    t0 = time.monotonic()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, start_new_session=True)
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
    return p.returncode, out, time.monotonic() - t0


@pytest.fixture(scope="session")
def rtx_cli():
    def run(*args, **kw):
        return run_job([sys.executable, "-m", "rtx.runtime.cli", *args], **kw)
    return run
