"""Collectives on 2 ranks under `rtx launch`, each result checked against NumPy; the launcher's
environment; errors. One job runs every collective (tests/workers/collectives.py)."""
import json
import subprocess
import sys

import numpy as np
import pytest

N = 2


def base(r):
    return np.arange(6.0).reshape(2, 3) + 10 * r + 1


@pytest.fixture(scope="module")
def ranks(launch, workers, tmp_path_factory):
    out = tmp_path_factory.mktemp("collectives")
    job = launch("-n", str(N), workers / "collectives.py", out)
    assert job.returncode == 0, job
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(N)]


def test_all_reduce_ops(ranks):
    b = [base(r) for r in range(N)]
    expected = {"SUM": b[0] + b[1], "AVG": (b[0] + b[1]) / 2, "PRODUCT": b[0] * b[1], "MIN": np.minimum(*b),
                "MAX": np.maximum(*b)}
    for r in range(N):
        for op, want in expected.items():
            np.testing.assert_allclose(ranks[r][f"all_reduce/{op}"], want, rtol=1e-6, err_msg=op)
        np.testing.assert_allclose(ranks[r]["async_avg"], expected["AVG"], rtol=1e-6)
        assert ranks[r]["async_is_work"] and ranks[r]["async_done"]


@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "bfloat16", "float16", "complex64"])
def test_all_reduce_dtypes(ranks, dtype):
    for r in range(N):
        np.testing.assert_array_equal(ranks[r][f"all_reduce_dtype/{dtype}"], base(0) + base(1))


def test_all_reduce_bool_and_bitwise(ranks):
    for r in range(N):
        np.testing.assert_array_equal(ranks[r]["all_reduce_bool_sum"], [True, False, True])  # logical or
        np.testing.assert_array_equal(ranks[r]["all_reduce_bool_prod"], [False, False, True])  # logical and
        np.testing.assert_array_equal(ranks[r]["all_reduce_bxor"], [12 ^ 13, 10 ^ 11])


def test_data_movement(ranks):
    b = [base(r) for r in range(N)]
    for r in range(N):
        got = ranks[r]
        np.testing.assert_array_equal(got["broadcast"], b[1])
        np.testing.assert_array_equal(got["all_gather"], np.stack(b))
        np.testing.assert_array_equal(got["all_gather_into_tensor"], np.concatenate(b))
        np.testing.assert_array_equal(got["reduce_scatter"], (b[0] + b[1]) * (r + 1))
        flat = [x.ravel() for x in b]
        np.testing.assert_array_equal(got["reduce_scatter_tensor"], np.maximum(*flat)[3 * r:3 * r + 3])
        np.testing.assert_array_equal(got["reduce"], b[0] + b[1] if r == 0 else b[1])
        np.testing.assert_array_equal(got["scatter"], b[0] * (r + 1))
        inputs = [(np.arange(12.0) + 100 * j).reshape(4, 3) for j in range(N)]
        np.testing.assert_array_equal(got["all_to_all_single"], np.concatenate([x[2 * r:2 * r + 2] for x in inputs]))
        np.testing.assert_array_equal(got["all_to_all"], np.concatenate([np.full(r + 1, 10.0 * j + r)
                                                                         for j in range(N)]))
    np.testing.assert_array_equal(ranks[1]["gather"], np.stack(b))


def test_point_to_point(ranks):
    np.testing.assert_array_equal(ranks[1]["recv"], [1.0, 2.0])
    assert int(ranks[1]["recv_src"]) == 0
    np.testing.assert_array_equal(ranks[0]["recv"], [10.0, 20.0])
    assert int(ranks[0]["recv_src"]) == 1  # recv without src reports the sender


def test_object_collectives(ranks):
    for r in range(N):
        assert json.loads(str(ranks[r]["all_gather_object"])) == [{"rank": 0, "name": "r0"}, {"rank": 1, "name": "r1"}]
        assert json.loads(str(ranks[r]["broadcast_object_list"])) == ["from-0", {"k": [1, 2]}]


def test_subgroup(ranks):
    # new_group([1]): rank 0 is outside (None back, tensor untouched), rank 1 alone sums itself
    assert str(ranks[0]["subgroup_result"]) == "None" and int(ranks[0]["subgroup_rank"]) == -1
    np.testing.assert_array_equal(ranks[0]["subgroup_tensor"], base(0))
    assert int(ranks[1]["subgroup_rank"]) == 0
    np.testing.assert_array_equal(ranks[1]["subgroup_tensor"], base(1))


def test_launch_environment(ranks):
    for r in range(N):
        env = json.loads(str(ranks[r]["env"]))
        assert env["RANK"] == str(r) and env["LOCAL_RANK"] == str(r)
        assert env["WORLD_SIZE"] == str(N) and env["LOCAL_WORLD_SIZE"] == str(N)
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert str(ranks[r]["backend"]) == "mpi"


def test_errors_name_what_was_expected(ranks):
    errors = json.loads(str(ranks[0]["errors"]))
    assert errors[0].startswith("ValueError: all_reduce: Tensors must be contiguous")
    assert "ReduceOp.AVG needs a floating point tensor, got int64" in errors[1]
    assert "tensor_list must be a list of 2 tensors (one per rank), got a list of 1" in errors[2]
    assert "broadcast: src 5 is not part of this process group" in errors[3]
    assert errors[4] == "RuntimeError: trying to initialize the default process group twice!"
    assert errors[5] == "TypeError: all_reduce: tensor must be an rtx Tensor, got list"


def test_import_starts_nothing_and_errors_before_init():
    code = ("import sys, rtx, rtx.distributed as dist\n"
            "assert 'mpi4py.MPI' not in sys.modules\n"
            "assert not dist.is_initialized() and dist.is_available() and dist.is_mpi_available()\n"
            "assert not dist.is_nccl_available()\n"
            "try:\n    dist.all_reduce(rtx.ones(1))\nexcept ValueError as e:\n    print(e)\n"
            "try:\n    dist.init_process_group('tcp')\nexcept ValueError as e:\n    print(e)\n"
            "assert 'mpi4py.MPI' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Default process group has not been initialized" in r.stdout
    assert "Invalid backend: 'tcp'" in r.stdout


def test_single_process_without_launcher():
    # python script.py (no mpiexec): MPI starts as a singleton, world size 1; DDP works unchanged
    code = ("import rtx, rtx.distributed as dist\n"
            "dist.init_process_group()\n"
            "assert (dist.get_rank(), dist.get_world_size()) == (0, 1)\n"
            "m = rtx.nn.Linear(3, 2); ddp = dist.DistributedDataParallel(m)\n"
            "ddp(rtx.ones(4, 3)).sum().backward()\n"
            "assert rtx.allclose(m.weight.grad, rtx.full((2, 3), 4.0))\n"
            "t = rtx.ones(2); dist.all_reduce(t, op=dist.ReduceOp.AVG); assert t.tolist() == [1.0, 1.0]\n"
            "dist.destroy_process_group(); print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
