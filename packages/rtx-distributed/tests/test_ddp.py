"""DistributedDataParallel, ZeroRedundancyOptimizer and checkpoint/resume on 2 ranks, each checked
against a single-process computation done here with plain rtx (no distributed code), and
DistributedSampler's arithmetic."""
import json

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.distributed import DistributedSampler

N = 2


def mlp():
    # the worker's model for rank 0 (tests/workers/ddp_grads.py: manual_seed(rank))
    rtx.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 32), nn.Tanh(),
                         nn.Linear(32, 4))


def flat_grads(model):
    return np.concatenate([p.grad.numpy().ravel() for p in model.parameters()])


@pytest.fixture(scope="module")
def ddp_job(launch, workers, tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    rng = np.random.default_rng(0)
    np.savez(out / "data.npz", x=rng.standard_normal((32, 8)), y=rng.integers(0, 4, 32))
    job = launch("-n", str(N), workers / "ddp_grads.py", out)
    assert job.returncode == 0, job
    data = np.load(out / "data.npz")
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(N)], data["x"], data["y"]


@pytest.fixture(scope="module")
def reference(ddp_job):
    """Single process, float64, the full batch of 32."""
    _, x, y = ddp_job
    with _float64():
        model = mlp()
        F.cross_entropy(model(rtx.from_numpy(x)), rtx.from_numpy(y)).backward()
        init = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        return init, flat_grads(model), model


class _float64:
    def __enter__(self):
        self.old = rtx.get_default_dtype()
        rtx.set_default_dtype(rtx.float64)

    def __exit__(self, *exc):
        rtx.set_default_dtype(self.old)


def test_parameters_broadcast_from_rank_0(ddp_job, reference):
    ranks, _, _ = ddp_job
    for r in range(N):
        np.testing.assert_array_equal(ranks[r]["init"], reference[0])  # rank 1 was seeded differently


def test_gradients_equal_single_process_full_batch(ddp_job, reference):
    ranks, _, _ = ddp_job
    for r in range(N):
        err = np.max(np.abs(ranks[r]["plain"] - reference[1]))
        assert err < 1e-6, f"rank {r}: max |DDP - full batch| = {err}"
        assert err < 1e-12  # in float64 they agree to rounding
    np.testing.assert_array_equal(ranks[0]["plain"], ranks[1]["plain"])


def test_buckets_are_reduced_during_backward(ddp_job):
    ranks, _, _ = ddp_job
    log, n_params = ranks[0]["launch_log"], int(ranks[0]["n_params"])
    assert int(ranks[0]["buckets"]) == 3  # 4 KB buckets over this MLP's 8 parameters (float64)
    assert list(log) == sorted(log) and log[-1] == n_params
    assert log[0] < n_params  # the first all-reduce started while backward still had gradients to compute


def test_no_sync_accumulates_then_averages(ddp_job, reference):
    ranks, x, y = ddp_job
    with _float64():
        model = mlp()
        per, half = 16, 8
        for r in range(N):  # sum over micro-batches of the per-micro-batch mean losses, averaged over ranks
            for part in (slice(r * per, r * per + half), slice(r * per + half, (r + 1) * per)):
                (F.cross_entropy(model(rtx.from_numpy(x[part])), rtx.from_numpy(y[part])) / N).backward()
    want = flat_grads(model)
    for r in range(N):
        np.testing.assert_allclose(ranks[r]["no_sync"], want, atol=1e-12)
    assert not np.allclose(ranks[0]["no_sync_local"], ranks[1]["no_sync_local"])  # no_sync did not communicate


def test_gradient_as_bucket_view(ddp_job, reference):
    ranks, _, _ = ddp_job
    for r in range(N):
        np.testing.assert_allclose(ranks[r]["as_view"], reference[1], atol=1e-12)
        assert ranks[r]["as_view_is_view"]


def test_find_unused_parameters(ddp_job):
    ranks, _, _ = ddp_job
    for r in range(N):
        got = ranks[r]
        for name in ("body.weight", "body.bias", "a.weight", "a.bias"):  # used by both ranks: the mean
            want = (ranks[0][f"local/{name}"] + ranks[1][f"local/{name}"]) / 2
            np.testing.assert_allclose(got[f"unused/{name}"], want, atol=1e-12)
        for name in ("b.weight", "b.bias"):  # used by rank 1 only: rank 0 counts as zero
            np.testing.assert_allclose(got[f"unused/{name}"], ranks[1][f"local/{name}"] / 2, atol=1e-12)
        for name in ("c.weight", "c.bias"):  # used by no rank: .grad stays None
            assert np.isnan(got[f"unused/{name}"]).all()


def test_unused_parameter_without_detection_is_reported(ddp_job):
    ranks, _, _ = ddp_job
    msg = str(ranks[0]["unfinished_error"])
    assert msg.startswith("Expected to have finished reduction in the prior iteration")
    assert "find_unused_parameters=True" in msg
    assert "Parameter indices which did not receive grad for rank 0: 4 5 6 7" in msg
    assert "b.weight, b.bias, c.weight, c.bias" in msg
    assert "did not receive grad for rank 1: 6 7" in str(ranks[1]["unfinished_error"])


def test_digits_reach_the_single_process_accuracy(launch, workers, tmp_path):
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    np.savez(tmp_path / "digits.npz", x=(x[order] / 16.0).astype(np.float32), y=y[order])
    ddp = launch("-n", str(N), workers / "digits.py", tmp_path, "ddp", timeout=60)
    assert ddp.returncode == 0, ddp
    single = launch("-n", "1", workers / "digits.py", tmp_path, "single", timeout=60)  # no DDP, batches of 64
    assert single.returncode == 0, single
    a = json.loads((tmp_path / "ddp.json").read_text())
    b = json.loads((tmp_path / "single.json").read_text())
    assert a["steps"] == b["steps"] == 8 * 1280 // 64
    assert b["accuracy"] >= 0.93
    assert abs(a["accuracy"] - b["accuracy"]) <= 2 / 517, (a["accuracy"], b["accuracy"])  # 517 test images


@pytest.fixture(scope="module")
def zero_jobs(launch, workers, tmp_path_factory):
    out = tmp_path_factory.mktemp("zero")
    rng = np.random.default_rng(1)
    np.savez(out / "data.npz", x=rng.standard_normal((192, 8)), y=rng.integers(0, 4, 192))
    full = launch("-n", str(N), workers / "zero_ckpt.py", out, "full")
    assert full.returncode == 0, full
    resume = launch("-n", str(N), workers / "zero_ckpt.py", out, "resume")
    assert resume.returncode == 0, resume
    data = np.load(out / "data.npz")
    load = lambda name: [dict(np.load(out / f"{name}_rank{r}.npz")) for r in range(N)]  # noqa: E731
    return load("full"), load("resume"), data["x"], data["y"]


def test_zero_matches_plain_adam(zero_jobs):
    full, _, x, y = zero_jobs
    with _float64():
        rtx.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
        opt = rtx.optim.Adam(model.parameters(), lr=0.01)
        for step in range(3):
            rows = slice(step * 32, (step + 1) * 32)
            opt.zero_grad()
            F.cross_entropy(model(rtx.from_numpy(x[rows])), rtx.from_numpy(y[rows])).backward()
            opt.step()
    want = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    for r in range(N):
        np.testing.assert_allclose(full[r]["params_after_3"], want, atol=1e-10)
    # the consolidated state dict is plain Adam's: same parameter indices, same moments
    sd = opt.state_dict()["state"]
    for i, s in sd.items():
        np.testing.assert_allclose(full[0][f"adam/{i}/exp_avg"], s["exp_avg"].numpy(), atol=1e-10)
        np.testing.assert_allclose(full[0][f"adam/{i}/exp_avg_sq"], s["exp_avg_sq"].numpy(), atol=1e-12)
        assert float(full[0][f"adam/{i}/step"]) == 3


def test_zero_shards_the_state(zero_jobs):
    full, _, _, _ = zero_jobs
    sizes = [int(full[r]["owned_numel"][0]) for r in range(N)]
    total = 8 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4
    assert sum(sizes) == total and max(sizes) < total  # each rank holds Adam moments for its part only
    assert sizes == [1024, 452]  # PyTorch's partition: largest first, to the least loaded rank
    assert len(full[0]["state_keys"]) + len(full[1]["state_keys"]) == 6


def test_resume_continues_the_loss_curve(zero_jobs):
    full, resume, _, _ = zero_jobs
    for r in range(N):
        assert len(resume[r]["losses"]) == 3
        np.testing.assert_array_equal(resume[r]["losses"], full[r]["losses"][3:])  # exactly, bit for bit
        np.testing.assert_array_equal(resume[r]["final_params"], full[r]["final_params"])
    np.testing.assert_array_equal(full[0]["final_params"], full[1]["final_params"])


# ---- DistributedSampler (no processes needed) ---------------------------------------------------------


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (9, 3, False), (2, 4, False),
                                                     (1437, 2, False)])
def test_sampler_partitions_the_data(n, replicas, drop_last):
    data = list(range(n))
    parts = [list(DistributedSampler(data, replicas, r, shuffle=True, seed=5, drop_last=drop_last))
             for r in range(replicas)]
    sizes = {len(p) for p in parts}
    assert len(sizes) == 1  # every rank the same number of steps
    flat = sum(parts, [])
    if drop_last:
        assert len(flat) == (n // replicas) * replicas and len(set(flat)) == len(flat)
    else:
        assert set(flat) == set(data) and len(flat) == -(-n // replicas) * replicas  # padded by repetition
    assert len(DistributedSampler(data, replicas, 0, drop_last=drop_last)) == len(parts[0])


def test_sampler_order_per_epoch():
    data = list(range(50))
    s0, s1 = DistributedSampler(data, 2, 0, seed=3), DistributedSampler(data, 2, 1, seed=3)
    e0 = list(s0)
    assert list(s0) == e0  # the same epoch gives the same order
    s0.set_epoch(1)
    s1.set_epoch(1)
    e1 = list(s0)
    assert e1 != e0 and sorted(e1 + list(s1)) == data  # a new order, still a partition
    assert list(DistributedSampler(data, 2, 0, shuffle=False)) == list(range(0, 50, 2))
    assert list(DistributedSampler(data, 2, 1, shuffle=False)) == list(range(1, 50, 2))


def test_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(list(range(4)), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(list(range(4)))


def test_buffers_come_from_rank_0(ddp_job):
    ranks, _, _ = ddp_job
    np.testing.assert_array_equal(ranks[1]["bn_var_after_init"], ranks[0]["bn_var_after_init"])
    assert not np.allclose(ranks[0]["bn_mean_after_train"], ranks[1]["bn_mean_after_train"])  # own data
    for r in range(N):
        np.testing.assert_array_equal(ranks[r]["bn_mean_after_eval"], ranks[0]["bn_mean_after_train"])
