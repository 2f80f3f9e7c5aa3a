"""`rtx launch` and failure handling: a rank that raises, exits or hangs never leaves the others
waiting; the job's status is non-zero; signals reach the ranks. Each job has a timeout."""
import os
import signal
import subprocess
import sys
import time

import pytest

from rtx.distributed import _bootstrap
from rtx.distributed import launch as launch_mod

FAST = 30  # seconds: far more than a clean abort takes here (about 2 s), far less than a hang


def test_launch_success_and_module_mode(launch, workers):
    job = launch("-n", "2", "-m", "fail", "ok", env={"PYTHONPATH": str(workers)}, timeout=60)
    assert job.returncode == 0, job
    assert "rank 0 finished all_reduce" in job.output and "rank 1 finished all_reduce" in job.output


@pytest.mark.parametrize("python", ["python", "python3", sys.executable])
def test_a_leading_python_is_accepted(launch, workers, python):
    """`rtx launch -n 2 python train.py`, as with mpiexec; `python -m module` too."""
    job = launch("-n", "2", python, workers / "fail.py", "ok", timeout=60)
    assert job.returncode == 0, job
    assert "rank 0 finished all_reduce" in job.output and "rank 1 finished all_reduce" in job.output
    if python == "python":
        job = launch("-n", "2", python, "-m", "fail", "ok", env={"PYTHONPATH": str(workers)}, timeout=60)
        assert job.returncode == 0 and "rank 1 finished all_reduce" in job.output, job


def test_python_detection():
    assert all(launch_mod._is_python(w) for w in ("python", "python3", "python3.11", "/usr/bin/python3",
                                                  sys.executable))
    assert not any(launch_mod._is_python(w) for w in ("train.py", "python_script.py", "pythonista"))


def test_rank_exception_aborts_the_job(launch, workers):
    job = launch("-n", "2", workers / "fail.py", "raise", timeout=60)
    assert job.returncode != 0, job
    assert job.seconds < FAST, job
    assert "ValueError: rank 1 lost its data" in job.output  # the user's traceback
    assert 'File "' in job.output and "fail.py" in job.output
    assert "rank 1 of 2 failed with ValueError: rank 1 lost its data; aborting the job" in job.output
    assert "rank 0 finished" not in job.output
    assert "the job failed with exit status" in job.output


def test_rank_that_dies_takes_the_job_down(launch, workers):
    job = launch("-n", "2", workers / "fail.py", "exit", timeout=60)
    assert job.returncode == 3, job
    assert job.seconds < FAST, job


def test_exception_under_plain_mpiexec_does_not_hang(plain_mpiexec, workers):
    # no launcher: the excepthook installed by init_process_group aborts the job
    job = plain_mpiexec(2, workers / "fail.py", "raise", timeout=60)
    assert job.returncode != 0, job
    assert job.seconds < FAST, job
    assert "rank 1 of 2 failed with ValueError; aborting the job" in job.output


def test_stuck_rank_times_out_with_a_clear_error(launch, workers):
    job = launch("-n", "2", "--timeout", "3", workers / "fail.py", "hang", timeout=60)
    assert job.returncode != 0, job
    assert 3 <= job.seconds < FAST, job
    assert "rank 0 of 2: all_reduce did not finish within 3 s" in job.output


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_are_forwarded_to_the_ranks(workers, tmp_path, sig):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    p = subprocess.Popen([sys.executable, "-m", "rtx.runtime.cli", "launch", "-n", "2", str(workers / "fail.py"),
                          "sleep", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"pid{r}").exists() for r in range(2)):
            assert time.monotonic() < deadline and p.poll() is None, "the ranks did not start"
            time.sleep(0.1)
        pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(2)]
        p.send_signal(sig)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode != 0, out
    assert f"rtx launch: stopped by {sig.name}" in out
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"ranks {pids} survived {sig.name}"
        time.sleep(0.1)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "zombie" not in f.read()
    except FileNotFoundError:
        return False


def test_launch_usage_errors(launch, tmp_path):
    job = launch("-n", "2", tmp_path / "missing.py", timeout=60)
    assert job.returncode == 2 and "does not exist" in job.output
    job = launch("-n", "0", tmp_path / "missing.py", timeout=60)
    assert job.returncode == 2 and "-n must be at least 1" in job.output
    job = launch("--mpiexec", "no-such-mpiexec", "-m", "json", timeout=60)
    assert job.returncode == 127 and "not an executable" in job.output


def test_launch_listed_in_rtx_help():
    r = subprocess.run([sys.executable, "-m", "rtx.runtime.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("launch"))
    assert "data-parallel job" in line


def test_command_and_environment():
    cmd = launch_mod.build_command(4, "train.py", ["--lr", "0.1"], mpiexec_args="-bind-to core")
    assert cmd[0] == str(os.path.join(os.path.dirname(sys.executable), "mpiexec"))  # the venv's MPICH
    assert cmd[1:5] == ["-n", "4", "-bind-to", "core"]
    assert cmd[5:] == [sys.executable, "-m", "rtx.distributed._bootstrap", "train.py", "--lr", "0.1"]
    env = launch_mod.build_env(4, timeout=7, base={"PATH": "/bin"})
    assert env["WORLD_SIZE"] == "4" and env["RTX_DIST_TIMEOUT"] == "7"
    assert env["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0
    cores = len(os.sched_getaffinity(0))
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == str(max(1, cores // 4))
    assert launch_mod.build_env(2, base={"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"  # the user's wins


@pytest.mark.parametrize("launcher_env, expected", [
    ({"PMI_RANK": "3", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
     {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}),
    ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6", "OMPI_COMM_WORLD_LOCAL_RANK": "2"},
     {"RANK": "5", "WORLD_SIZE": "6", "LOCAL_RANK": "2"}),
    ({"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1"},
     {"RANK": "9", "WORLD_SIZE": "16", "LOCAL_RANK": "1"}),
    ({"HOME": "/root"}, {}),
])
def test_rank_environment_from_each_launcher(launcher_env, expected):
    assert _bootstrap.rank_environment(launcher_env) == expected


def test_readme_example_runs_on_two_ranks(launch, tmp_path):
    # The README's script, unchanged, under rtx launch (tests/test_readmes.py runs it as one process)
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
    import workspace
    script = tmp_path / "train.py"
    script.write_text(workspace.readme_example(Path(__file__).resolve().parents[1] / "README.md"))
    job = launch("-n", "2", script, timeout=60, cwd=tmp_path)
    assert job.returncode == 0, job
    assert "2 rank(s): accuracy" in job.output and (tmp_path / "ckpt.rtx").exists()
